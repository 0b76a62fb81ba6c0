// Facts about the run a log came from that the model needs: the MPI library, the transport between the
// ranks, the eager limit S it was configured with (read through MPI_T by the tracer) and the effective S.
#pragma once

#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "log_reader.hpp"
#include "loggps.hpp"
#include "replay.hpp"

namespace mpiadvise {

struct RunFacts {
  std::string library;        // "Open MPI", "MPICH", ... or the version string's first words
  std::string library_version;
  // Open MPI: "tcp", "vader" (shared memory), "ucx"; MPICH's ch4 over UCX: "ucx-tcp", "ucx-sm" (UCX's
  // shared-memory transports); ch3, ch4 over OFI: "ch3", "ofi"; else "unknown"
  std::string transport;
  std::string device;         // MPICH's device, e.g. "ch4:ucx"; "" for Open MPI
  // MPICH's ch4 built with its POSIX shared-memory module, whose collectives then run within each node
  // (analyzer/collectives_mpich.cpp). Its configure leaves the module out over UCX unless asked
  // (--with-ch4-shmmods; src/mpid/ch4/subconfigure.m4): not in Debian's ch4:ucx.
  bool mpich_shm_collectives = false;
  std::vector<std::string> hosts;
  std::string eager_setting;  // the setting that controls S, e.g. "btl_tcp_eager_limit"
  std::optional<uint64_t> configured_S;  // its value in the log
  std::string configured_text;           // the setting as given when it is no number of bytes ("auto")
  std::optional<uint64_t> effective_S;   // the size above which a send waits for its receiver
  std::string effective_S_note;          // how effective_S follows from configured_S
  // Bytes the setting counts beyond a message's data: a setting of effective_S + setting_overhead makes
  // messages up to effective_S eager (ob1 over TCP: 56 bytes of headers; UCX_RNDV_THRESH: 1, the threshold
  // is the smallest size sent by rendezvous)
  uint64_t setting_overhead = 0;
  // Why raising eager_setting would not stop sends waiting, where that was measured; empty elsewhere
  std::string eager_setting_futile;
  // The size above which the library's rendezvous moves the data by a second protocol
  // (LogGPSParams::large_from), and what sets it: Open MPI's vader sends up to btl_vader_eager_limit less
  // ob1's headers through the FIFO, and a larger message by a CMA copy. None elsewhere.
  std::optional<uint64_t> large_from;
  std::string large_from_note;
};

RunFacts run_facts(const JobLog& job);
// What a replay takes from the facts: the library whose collectives it follows, and how it was built.
void replay_library(const RunFacts& facts, ReplayOptions& o);
// The same from one rank's header (mpi_library, cvars, env) and the job's hosts: the calibration
// benchmark's facts line has the same keys.
RunFacts run_facts(const nlohmann::json& header, const std::vector<std::string>& hosts);

struct ChosenParams {
  LogGPSParams params;
  std::string why;  // one line: which set and why
};

// A parameter set for the log: the named one when given, else one for the same library and transport
// (a calibrated set first), else the one measured here on TCP. S follows the log's effective S.
ChosenParams choose_params(const RunFacts& facts, const std::string& requested, const std::filesystem::path& dir);

}  // namespace mpiadvise

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

namespace mpiadvise {

struct RunFacts {
  std::string library;        // "Open MPI", "MPICH", ... or the version string's first words
  std::string library_version;
  std::string transport;      // "tcp", "vader" (shared memory), "ucx", or "unknown"
  std::vector<std::string> hosts;
  std::string eager_setting;  // the setting that controls S, e.g. "btl_tcp_eager_limit"
  std::optional<uint64_t> configured_S;  // its value in the log
  std::optional<uint64_t> effective_S;   // the size above which a send waits for its receiver
  std::string effective_S_note;          // how effective_S follows from configured_S
  // Why raising eager_setting would not stop sends waiting, where that was measured; empty elsewhere
  std::string eager_setting_futile;
};

RunFacts run_facts(const JobLog& job);

struct ChosenParams {
  LogGPSParams params;
  std::string why;  // one line: which set and why
};

// A parameter set for the log: the named one when given, else one for the same library and transport
// (a calibrated set first), else the one measured here on TCP. S follows the log's effective S.
ChosenParams choose_params(const RunFacts& facts, const std::string& requested, const std::filesystem::path& dir);

}  // namespace mpiadvise

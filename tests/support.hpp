// What the tests share: running real MPI jobs (traced or not) and reading their logs.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "hang.hpp"
#include "log_reader.hpp"
#include "trace.hpp"

namespace mpa_test {

namespace fs = std::filesystem;

// The MPI a test binary runs its jobs under: MPA_TEST_MPI ("openmpi" or "mpich"; tests/run_tests.sh sets
// it), else the build's default. Its programs, tracing library and launcher are the ones built for it.
struct Mpi {
  std::string name;      // "openmpi" or "mpich"
  std::string mpirun;    // its launcher: mpirun.openmpi, or mpirun.mpich (Hydra)
  std::string mpicc;     // its C compiler wrapper
  bool openmpi() const { return name == "openmpi"; }
  bool mpich() const { return name == "mpich"; }
  std::string library() const { return openmpi() ? "Open MPI" : "MPICH"; }  // as run facts name it
};
const Mpi& mpi();

// How the ranks reach each other. Tcp: Open MPI's ob1 over its TCP BTL (--mca pml ob1 --mca btl self,tcp);
// MPICH's UCX over TCP (UCX_TLS=tcp,self). SharedMemory: ob1 over vader; UCX over its shared-memory transports.
// Default: what the MPI picks on one node.
enum class Transport { Default, Tcp, SharedMemory };

struct JobSpec {
  int np = 2;
  std::string program;                       // a name in build/tests/programs/MPI, or a path
  std::vector<std::string> args;
  std::map<std::string, std::string> env;    // forwarded to the ranks (-x, -genv)
  Transport transport = Transport::Default;
  // The MPI's own eager limit for the transport, in bytes as its setting takes them: Open MPI's
  // btl_tcp_eager_limit or btl_vader_eager_limit, UCX's UCX_RNDV_THRESH under MPICH
  std::optional<uint64_t> eager_limit;
  std::vector<std::string> mpirun_options;   // more launcher options (the MPI's own, e.g. Open MPI's --mca)
  bool traced = true;
  std::string log_dir;                       // MPIADVISE_DIR; default: a fresh directory
  int timeout_s = 120;
};

struct JobResult {
  int status = -1;    // exit status of mpirun
  std::string out, err;
  fs::path dir;       // the log directory
};

fs::path build_dir();
fs::path program_path(const std::string& name);  // a test program built for mpi()
fs::path example_path(const std::string& name);  // an example (examples/NAME.c) built for mpi()
fs::path tracer_path();                          // mpi()'s tracing library
// The launcher command line, up to the program, for np ranks of mpi() over transport with eager_limit
// (np, transport, eager limit and options as in JobSpec; env forwarded to the ranks). "" for no
// transport settings.
std::string launcher(const JobSpec& spec);
// The largest message mpi() sends eagerly over Transport::Tcp with JobSpec::eager_limit = limit: ob1
// counts 56 bytes of headers in btl_tcp_eager_limit; UCX sends from UCX_RNDV_THRESH bytes on by
// rendezvous (measured: analyzer/run_facts.cpp)
uint64_t effective_S_of_limit(uint64_t limit);
fs::path fresh_dir(const std::string& name);  // empty directory under build/tests/tmp
JobResult run_job(const JobSpec& spec);
// A job that never ends on its own, killed as a user or a scheduler kills one: once its output holds
// `ready` lines that end in "ready", after `after_s` more seconds, the launcher gets signal `sig` (it
// runs with the default disposition of every signal, as from a terminal or a batch script). status:
// the launcher's exit status, or 128 + the signal that ended it. A launcher still running 60 s after
// the signal is killed (SIGKILL); so is one whose job never gets ready in spec.timeout_s.
JobResult run_killed(const JobSpec& spec, int ready, int sig, double after_s = 0.5);
// run_killed for a traced job of spec.np ranks, run again (at most twice more) while a rank's log holds
// no event: on a loaded machine a rank's events now and then did not reach its log before the launcher
// ended it (seen once in about fifteen Open MPI jobs; a known defect of the signal path, not hidden:
// the WARN says so)
JobResult run_killed_logged(const JobSpec& spec, int ready, int sig);
JobResult run_command(const std::string& shell_command);  // status, stdout, stderr

// Events with their own storage (the reader reuses one Event).
struct Ev {
  std::string call;
  mpiadvise::Event e;
};
std::vector<Ev> events_of(const fs::path& dir, int rank);
std::vector<Ev> calls_named(const std::vector<Ev>& evs, const std::string& call);
std::string read_text(const fs::path& file);

std::string mpiadvise_cmd();  // the mpiadvise built here
// `mpiadvise report --format json [options] DIR`, parsed; fails the test when it does not succeed
nlohmann::json report_json(const fs::path& dir, const std::string& options = "");
// The number of the first line of a source file (a path in the source tree: tests/programs/chain.c,
// examples/halo.c) that holds needle: a test follows edits of the program.
int source_line(const std::string& file, const std::string& needle);

// This machine's parameter set for mpi() over loopback TCP (Transport::Tcp), made once per test program by
// mpiadvise calibrate --quick. The shipped set was measured on another host of this kind, and
// loopback TCP differs from host to host (a 128 KiB halo exchange ran 41% slower than it priced on one,
// within 2% on another): tests that compare a prediction with a run here price it with what TCP costs here.
// again: calibrate anew (a calibration made while another job loaded the machine misprices every run).
fs::path calibrated_tcp_params(bool again = false);

// build_trace of the job's logs, read on 1, 2 and 3 of the analysis's threads: every field of the three
// traces must be the same (the ranks are read side by side and join the trace in their order). Leaves
// the analysis's threads as the machine's CPUs.
void require_same_trace_on_any_threads(const mpiadvise::JobLog& job);
// The trace without its ops, their links, its messages, its receives together and its collective
// instances (its communicators, call sites and ranks' parts kept): a stage that reads the op streams
// alone gives the same from it.
mpiadvise::Trace bare_of(const mpiadvise::Trace& t);
// Where each rank was at the end read from the trace's op streams (packed in small frames, and not)
// is the trace's, field for field; the trace's, returned.
mpiadvise::HangState require_same_hang_state(const mpiadvise::Trace& t);

}  // namespace mpa_test

#include "spread.hpp"

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <regex>
#include <set>
#include <string>
#include <thread>

#include "commands.hpp"
#include "mpi_choice.hpp"
#include "replay_peers.hpp"

namespace mpiadvise::cli {
namespace {

// The processes an MPI launcher started, and its MPI: Open MPI's mpirun sets OMPI_COMM_WORLD_SIZE, MPICH's
// Hydra PMI_SIZE.
int launched(std::string* mpi) {
  auto size_of = [](const char* name) {
    const char* v = std::getenv(name);
    return v && *v ? std::atoi(v) : 0;
  };
  if (int n = size_of("OMPI_COMM_WORLD_SIZE")) return *mpi = "openmpi", n;
  if (int n = size_of("PMI_SIZE")) return *mpi = "mpich", n;
  return 0;
}

// Whether the parent process is an MPI launcher's: Open MPI's mpirun (orterun, whatever its name) or
// orted, PRRTE's prted, Hydra's proxy, Slurm's step daemon. An mpiadvise that a rank's script started
// inherits the launcher's variables but has the script for a parent.
bool started_by_launcher() {
  std::ifstream in("/proc/" + std::to_string(getppid()) + "/comm");
  std::string comm;
  std::getline(in, comm);
  static const std::regex launcher(R"((mpirun|mpiexec|orterun|orted|prterun|prted|hydra_pmi_proxy|slurmstepd)(\..*)?)");
  return std::regex_match(comm, launcher);
}

// The subcommand of a command line: its first argument that is not an option.
std::string subcommand_of(int argc, char** argv) {
  for (int i = 1; i < argc; i++)
    if (argv[i][0] != '-') return argv[i];
  return "";
}

void (*g_abort)(int) = nullptr;
int g_stderr = STDERR_FILENO;

}  // namespace

int spread_over_processes(int argc, char** argv) {
  std::string mpi;
  const int processes = launched(&mpi);
  if (processes < 2 || argc < 1 || !spreads(subcommand_of(argc, argv)) || !started_by_launcher()) return -1;
  std::string path;
  try {
    path = mpi_file(mpi, "mpiadvise-mpi").string();
  } catch (const std::exception& e) {
    std::fprintf(stderr,
                 "mpiadvise: started by %s's launcher as %d processes, but its spread analysis is missing: %s; run "
                 "mpiadvise without mpirun\n",
                 mpi_display_name(mpi).c_str(), processes, e.what());
    return kUsage;
  }
  // what the launcher said, for the MPI built command to check that MPI sees the same job
  setenv("MPIADVISE_SPREAD_PROCESSES", std::to_string(processes).c_str(), 1);
  execv(path.c_str(), argv);
  std::perror(("mpiadvise: " + path).c_str());
  return kUsage;
}

bool spreads(const std::string& subcommand) {
  static const std::set<std::string> spread{"replay", "whatif", "report", "gate"};
  return spread.count(subcommand) > 0;
}

bool output_process() {
  const ReplayPeers* peers = replay_peers();
  return !peers || peers->index() == 0;
}

void set_spread_abort(void (*abort)(int status), int stderr_fd) {
  g_abort = abort;
  g_stderr = stderr_fd;
}

int failed(const std::string& message, int status) {
  const ReplayPeers* peers = replay_peers();
  std::string line = "mpiadvise: " + message + "\n";
  if (peers && peers->index() != 0)
    line = "mpiadvise (process " + std::to_string(peers->index()) + " of " + std::to_string(peers->size()) + "): " +
           message + "\n";
  if (write(g_stderr, line.data(), line.size()) < 0) {
  }
  if (peers && g_abort) {
    // The launcher forwards each process's standard error through a pipe, and an abort ends every
    // process and that forwarding at once: a line written just before may never reach the user, nor
    // may process 0's, when another process aborts first (Hydra lost one in about six runs). Process 0,
    // whose message the user reads (a bad input fails every process alike), aborts once its line had
    // time to pass; the others give it the time to write its own first.
    std::this_thread::sleep_for(std::chrono::milliseconds(peers->index() == 0 ? 300 : 1500));
    g_abort(status);
  }
  return status;
}

}  // namespace mpiadvise::cli

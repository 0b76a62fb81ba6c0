#include "spread.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <set>

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

}  // namespace

int spread_over_processes(int argc, char** argv) {
  std::string mpi;
  const int processes = launched(&mpi);
  if (processes < 2 || argc < 1) return -1;
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

}  // namespace mpiadvise::cli

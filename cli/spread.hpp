// The analysis spread over MPI processes (analyzer/replay_peers.hpp): `mpirun -np K mpiadvise report|replay|
// whatif|gate ...`. The mpiadvise command links no MPI; started by an MPI launcher with more than one
// process it runs, in its own place, the same command built against that MPI (lib/mpiadvise/MPI/
// mpiadvise-mpi, cli/mpi_peers.cpp), whose processes each replay a share of the ranks.
#pragma once

#include <string>

namespace mpiadvise::cli {

// In the mpiadvise command: when an MPI launcher started more than one process of it, runs the command
// built against that MPI in its place with the same arguments (does not return), or says why it cannot
// (returns the exit status). Otherwise returns -1: run here, alone.
int spread_over_processes(int argc, char** argv);

// Whether the subcommand may run spread over processes (every process runs it alike; only process 0
// writes what it outputs).
bool spreads(const std::string& subcommand);

// Whether this process writes the command's output: the only process, or process 0 of a spread run.
bool output_process();

// In the command built against an MPI: MPI initialised for the command's lifetime, the replay's peers set
// when there is more than one process, and the standard output and error of processes other than 0 closed.
class SpreadSession {
 public:
  SpreadSession(int* argc, char*** argv);
  ~SpreadSession();
  SpreadSession(const SpreadSession&) = delete;
  SpreadSession& operator=(const SpreadSession&) = delete;
};

}  // namespace mpiadvise::cli

// The analysis spread over MPI processes (analyzer/replay_peers.hpp): `mpirun -np K mpiadvise report|replay|
// whatif|gate ...`. The mpiadvise command links no MPI; started by an MPI launcher as more than one process
// it runs, in its own place, the same command built against that MPI (lib/mpiadvise/MPI/mpiadvise-mpi,
// cli/mpi_peers.cpp), whose processes each replay a share of the ranks.
#pragma once

#include <string>

namespace mpiadvise::cli {

// In the mpiadvise command: when an MPI launcher started it (its parent is the launcher's process) as more
// than one process, for a subcommand that spreads, runs the command built against that MPI in its place
// with the same arguments (does not return), or says why it cannot (returns the exit status). Otherwise
// returns -1: run here, alone (also an mpiadvise that a rank's script or program started: it inherits the
// launcher's variables, not its place).
int spread_over_processes(int argc, char** argv);

// Whether the subcommand may run spread over processes (every process runs it alike; only process 0
// writes what it outputs).
bool spreads(const std::string& subcommand);

// Whether this process writes the command's output: the only process, or process 0 of a spread run.
bool output_process();

// A command's failure: "mpiadvise: MESSAGE" on standard error (from a process other than 0 of a spread
// run, with its number, on the standard error it was started with), and the exit status to return. Spread,
// the whole job is ended with that status, after a pause for the line to reach the user (0.3 s, 1.5 s on
// processes other than 0): the other processes may be waiting for this one.
int failed(const std::string& message, int status);

// In the command built against an MPI: MPI initialised for the command's lifetime; with more than one
// process the replay's peers set, and the standard output and error of processes other than 0 closed (a
// failure still reaches the user: failed()). A launcher whose processes MPI does not see as one job
// (another MPI's launcher: each process a job of its own) is an error.
class SpreadSession {
 public:
  SpreadSession(int* argc, char*** argv);
  ~SpreadSession();
  SpreadSession(const SpreadSession&) = delete;
  SpreadSession& operator=(const SpreadSession&) = delete;
};

// Set by SpreadSession: ends every process of a spread run with the status (MPI_Abort).
void set_spread_abort(void (*abort)(int status), int stderr_fd);

}  // namespace mpiadvise::cli

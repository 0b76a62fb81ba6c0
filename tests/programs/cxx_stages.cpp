// A C++ program whose MPI calls are in namespaced member functions: rank 0 sends two messages per step,
// each from its own call site in solver::comm::Exchange::send_both, to rank 1, which works before each
// receive (a late receiver: above the eager limit both sends wait). The tests build it with -g, with its
// debug information split into a separate file, and stripped down to its symbol tables, and expect the
// report to name the function (demangled) or its line.
//   cxx_stages [bytes] [steps] [late ms]      (defaults 262144 10 2)
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <vector>

#include "compute.h"  // examples/compute.h

namespace solver {
namespace comm {

class Exchange {
 public:
  Exchange(int bytes, double late_ms) : a_(static_cast<size_t>(bytes) + 1), b_(static_cast<size_t>(bytes) + 1),
                                        bytes_(bytes), late_ms_(late_ms) {}
  // Exported and kept out of line: the call sites stay in this function in every build of the program.
  __attribute__((noinline)) void send_both(int to);
  __attribute__((noinline)) void receive_both(int from);

 private:
  std::vector<char> a_, b_;
  int bytes_;
  double late_ms_;
};

void Exchange::send_both(int to) {
  MPI_Send(a_.data(), bytes_, MPI_BYTE, to, 1, MPI_COMM_WORLD);  // first send
  MPI_Send(b_.data(), bytes_, MPI_BYTE, to, 2, MPI_COMM_WORLD);  // second send
}

void Exchange::receive_both(int from) {
  compute_ms(late_ms_);
  MPI_Recv(a_.data(), bytes_, MPI_BYTE, from, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  compute_ms(late_ms_);
  MPI_Recv(b_.data(), bytes_, MPI_BYTE, from, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

}  // namespace comm
}  // namespace solver

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const int bytes = argc > 1 ? std::atoi(argv[1]) : 262144;
  const int steps = argc > 2 ? std::atoi(argv[2]) : 10;
  const double late_ms = argc > 3 ? std::atof(argv[3]) : 2;
  solver::comm::Exchange exchange(bytes, late_ms);
  for (int i = 0; i < steps; i++) {
    if (rank == 0) exchange.send_both(1);
    else if (rank == 1) exchange.receive_both(0);
  }
  if (rank == 0) std::printf("cxx_stages: %d steps of two %d-byte messages\n", steps, bytes);
  MPI_Finalize();
  return 0;
}

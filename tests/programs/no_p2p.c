/* A job without point-to-point messages.
 *   no_p2p               the ranks compute 20 ms and never communicate: nothing waits
 *   no_p2p collectives   an MPI_Barrier, then five rounds of (rank + 1) * 4 ms of computation and an
 *                        MPI_Allreduce: the faster ranks wait at the collective. The barrier lines the
 *                        ranks up first: MPICH 4.0's MPI_Init returns on each rank when its own part is
 *                        done (rank 0 left it 3.4 ms after rank 1 in 1 run of 20 here, and rank 1 then
 *                        waited at the first MPI_Allreduce) */
#include <mpi.h>
#include "compute.h" /* examples/compute.h */
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (argc > 1 && strcmp(argv[1], "collectives") == 0) {
    double sum = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    for (int i = 0; i < 5; i++) {
      compute_ms(4.0 * (rank + 1));
      double v = rank + i;
      MPI_Allreduce(&v, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    }
    if (rank == 0) printf("no_p2p: collectives, %g\n", sum);
  } else {
    compute_ms(20);
    if (rank == 0) printf("no_p2p: done\n");
  }
  MPI_Finalize();
  return 0;
}

/* A load imbalance known by construction: in each iteration rank r computes (1 + r % 2) * MS / 2
 * milliseconds, then every rank meets the others in MPI_Barrier. With two ranks (or any even number) the
 * mean computation is 3/4 of the largest: a load balance of exactly 75%.
 *   imbalance [iterations] [ms]      (defaults 10 20) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include "compute.h" /* examples/compute.h */

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int iterations = argc > 1 ? atoi(argv[1]) : 10;
  double ms = argc > 2 ? atof(argv[2]) : 20;
  for (int i = 0; i < iterations; i++) {
    compute_ms((1 + rank % 2) * ms / 2);
    MPI_Barrier(MPI_COMM_WORLD);
  }
  if (rank == 0) printf("imbalance: %d iterations\n", iterations);
  MPI_Finalize();
  return 0;
}

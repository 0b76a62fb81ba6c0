/* A job without point-to-point messages.
 *   no_p2p               the ranks compute 20 ms and never communicate: nothing waits
 *   no_p2p collectives   five rounds of (rank + 1) * 4 ms of computation and an MPI_Allreduce: the
 *                        faster ranks wait at the collective */
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static void compute_ms(double ms)
{
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  volatile double x = 0;
  do {
    for (int i = 0; i < 1000; i++) x += i * 1e-9;
    clock_gettime(CLOCK_MONOTONIC, &t);
  } while ((t.tv_sec - t0.tv_sec) * 1e3 + (t.tv_nsec - t0.tv_nsec) / 1e6 < ms);
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (argc > 1 && strcmp(argv[1], "collectives") == 0) {
    double sum = 0;
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

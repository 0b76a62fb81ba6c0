/* A ring exchange with a deterministic result, for the tests of what tracing must not change.
 *   ring [iterations] [exit_status] [pause]
 * Prints the result from rank 0 and exits with exit_status. With "pause", iterations in the middle third
 * run between MPI_Pcontrol(0) and MPI_Pcontrol(1). Sends go through one helper function called from two
 * places, so that deeper call sites tell them apart. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

__attribute__((noinline)) static void pass_on(double *v, int n, int to, int from, int tag)
{
  MPI_Sendrecv_replace(v, n, MPI_DOUBLE, to, tag, from, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

__attribute__((noinline)) static void forward(double *v, int n, int to, int from) { pass_on(v, n, to, from, 1); }
__attribute__((noinline)) static void backward(double *v, int n, int to, int from) { pass_on(v, n, to, from, 2); }

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int iterations = argc > 1 ? atoi(argv[1]) : 100;
  int status = argc > 2 ? atoi(argv[2]) : 0;
  int pause = argc > 3 && !strcmp(argv[3], "pause");
  double v[16];
  for (int i = 0; i < 16; i++) v[i] = rank + i * 0.5;
  int right = (rank + 1) % size, left = (rank + size - 1) % size;
  for (int it = 0; it < iterations; it++) {
    if (pause && it == iterations / 3) MPI_Pcontrol(0);
    if (pause && it == 2 * iterations / 3) MPI_Pcontrol(1);
    forward(v, 16, right, left);
    for (int i = 0; i < 16; i++) v[i] = v[i] * 0.5 + rank;
    backward(v, 16, left, right);
  }
  double local = 0, total = 0;
  for (int i = 0; i < 16; i++) local += v[i];
  MPI_Allreduce(&local, &total, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  if (rank == 0) printf("ring: %d ranks, %d iterations, result %.6f\n", size, iterations, total);
  MPI_Finalize();
  return status;
}

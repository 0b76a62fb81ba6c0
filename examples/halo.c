/* A 1-D halo exchange with blocking calls in the order that makes neighbours wait: every rank sends its
 * boundary to the right with MPI_Send, then receives from the left, then the same to the left. Above the
 * eager limit S each send waits for the neighbour's receive, so the exchange runs as a chain.
 *   halo [cells per rank] [iterations] [pack]   (defaults 16384 doubles = 128 KiB halos, 50)
 * With "pack", each message is copied into a send buffer just before its send, as codes whose halos are
 * not contiguous in memory do; without, both sends read the owned cells where the stencil left them (the
 * second send of an iteration then reads data the first one's receiver has already read: over shared
 * memory, where the receiver copies out of the sender's memory, that is cheaper than data just written).
 * Prints a checksum and the time from rank 0. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int n = argc > 1 ? atoi(argv[1]) : 16384, iterations = argc > 2 ? atoi(argv[2]) : 50;
  const int pack = argc > 3 && strcmp(argv[3], "pack") == 0;
  int left = (rank + size - 1) % size, right = (rank + 1) % size;
  /* cells[0..n-1] owned; halos of n values on each side, as a wide stencil would need; u is what a send
   * sends: the cells themselves, or the pack buffer */
  double *cells = malloc(sizeof(double) * (size_t)n), *from_left = malloc(sizeof(double) * (size_t)n),
         *from_right = malloc(sizeof(double) * (size_t)n), *next = malloc(sizeof(double) * (size_t)n),
         *packed = pack ? malloc(sizeof(double) * (size_t)n) : NULL;
  for (int i = 0; i < n; i++) cells[i] = rank * n + i;
  double *u = pack ? packed : cells;
  const size_t bytes = sizeof(double) * (size_t)n;
  double t0 = MPI_Wtime();
  for (int it = 0; it < iterations; it++) {
    if (rank % 2 == 0) { /* even ranks send first: with two ranks this is the only order that completes */
      if (pack) memcpy(u, cells, bytes);
      MPI_Send(u, n, MPI_DOUBLE, right, 1, MPI_COMM_WORLD);
      MPI_Recv(from_left, n, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      if (pack) memcpy(u, cells, bytes);
      MPI_Send(u, n, MPI_DOUBLE, left, 2, MPI_COMM_WORLD);
      MPI_Recv(from_right, n, MPI_DOUBLE, right, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
      MPI_Recv(from_left, n, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      if (pack) memcpy(u, cells, bytes);
      MPI_Send(u, n, MPI_DOUBLE, right, 1, MPI_COMM_WORLD);
      MPI_Recv(from_right, n, MPI_DOUBLE, right, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      if (pack) memcpy(u, cells, bytes);
      MPI_Send(u, n, MPI_DOUBLE, left, 2, MPI_COMM_WORLD);
    }
    for (int i = 0; i < n; i++) /* a stencil over the owned cells and both halos */
      next[i] = 0.5 * cells[i] + 0.25 * (from_left[n - 1 - i % n] + from_right[i % n]) * 1e-3;
    double *t = cells;
    cells = next;
    next = t;
    if (!pack) u = cells;
  }
  double local = 0, sum = 0;
  for (int i = 0; i < n; i++) local += cells[i];
  MPI_Reduce(&local, &sum, 1, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) printf("halo: %d ranks x %d cells, %d iterations%s, checksum %.6e, %.3f s\n", size, n, iterations,
                        pack ? " (packed)" : "", sum, MPI_Wtime() - t0);
  free(cells);
  free(from_left);
  free(from_right);
  free(next);
  free(packed);
  MPI_Finalize();
  return 0;
}

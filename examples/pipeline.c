/* A pipeline whose receivers run late: rank r computes a stage for each item, then sends it on to rank
 * r + 1 with a blocking MPI_Send; the next stage takes longer than this one, so each receive is posted
 * late and, above the eager limit S, every send waits for it instead of starting the next item.
 *   pipeline [bytes per item] [items] [stage ms]     (defaults 131072, 20, 2)
 * Prints the time from the last rank. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include "compute.h"

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  long bytes = argc > 1 ? atol(argv[1]) : 131072;
  int items = argc > 2 ? atoi(argv[2]) : 20;
  double ms = argc > 3 ? atof(argv[3]) : 2;
  char *item = calloc((size_t)bytes, 1);
  double t0 = MPI_Wtime();
  for (int i = 0; i < items; i++) {
    if (rank > 0) MPI_Recv(item, (int)bytes, MPI_BYTE, rank - 1, i, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    compute_ms(ms * (1 + 0.5 * rank)); /* later stages are slower: their receives come late */
    item[i % bytes] = (char)(item[i % bytes] + rank + 1);
    if (rank < size - 1) MPI_Send(item, (int)bytes, MPI_BYTE, rank + 1, i, MPI_COMM_WORLD);
  }
  if (rank == size - 1) printf("pipeline: %d stages, %d items of %ld bytes, %.3f s\n", size, items, bytes, MPI_Wtime() - t0);
  free(item);
  MPI_Finalize();
  return 0;
}

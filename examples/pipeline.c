/* A pipeline whose receivers run late: rank r receives each item from rank r - 1, works on it, and
 * passes it on to rank r + 1 with a blocking MPI_Send. The work per item varies, and neighbouring stages
 * have their heavy items out of step: while rank r + 1 is still on a heavy item, rank r has finished a
 * light one and sends. Below the eager limit S the send returns at once and rank r goes on; above S it
 * waits for rank r + 1 to post the receive, so every stage runs at the pace of the slower of itself and
 * its neighbour, item by item, instead of their averages.
 *   pipeline [bytes per item] [items] [stage ms] [isend | split:CHUNK]     (defaults 131072, 40, 2)
 * Two changes mpiadvise report advises besides a larger S, written: with "isend" each send is an
 * MPI_Isend from a second buffer, completed before the next one; with "split:CHUNK" each item goes as
 * messages of at most CHUNK bytes (at most S: each is sent eagerly).
 * Every stage takes 0.5 times the stage time on even items and 1.5 times on odd ones: a rank that has
 * finished light item i finds its successor still on heavy item i - 1. Prints the time from the last
 * rank. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "compute.h"

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  long bytes = argc > 1 ? atol(argv[1]) : 131072;
  int items = argc > 2 ? atoi(argv[2]) : 40;
  double ms = argc > 3 ? atof(argv[3]) : 2;
  int isend = argc > 4 && strcmp(argv[4], "isend") == 0;
  long chunk = argc > 4 && strncmp(argv[4], "split:", 6) == 0 ? atol(argv[4] + 6) : bytes;
  if (chunk <= 0) chunk = bytes;
  char *item = calloc((size_t)bytes, 1), *spare = calloc((size_t)bytes, 1);
  MPI_Request sent = MPI_REQUEST_NULL;
  double t0 = MPI_Wtime();
  for (int i = 0; i < items; i++) {
    for (long at = 0; rank > 0 && at < bytes; at += chunk)
      MPI_Recv(item + at, (int)(bytes - at < chunk ? bytes - at : chunk), MPI_BYTE, rank - 1, i, MPI_COMM_WORLD,
               MPI_STATUS_IGNORE);
    compute_ms(ms * (i % 2 ? 1.5 : 0.5)); /* heavy odd items: the successor is busy when a light one is done */
    item[i % bytes] = (char)(item[i % bytes] + rank + 1);
    for (long at = 0; rank < size - 1 && !isend && at < bytes; at += chunk) /* waits above S */
      MPI_Send(item + at, (int)(bytes - at < chunk ? bytes - at : chunk), MPI_BYTE, rank + 1, i, MPI_COMM_WORLD);
    if (rank < size - 1 && isend) {
      MPI_Wait(&sent, MPI_STATUS_IGNORE); /* the previous item is out: its buffer is free */
      MPI_Isend(item, (int)bytes, MPI_BYTE, rank + 1, i, MPI_COMM_WORLD, &sent);
      char *t = item;
      item = spare;
      spare = t;
    }
  }
  MPI_Wait(&sent, MPI_STATUS_IGNORE);
  if (rank == size - 1) printf("pipeline: %d stages, %d items of %ld bytes, %.6f s\n", size, items, bytes, MPI_Wtime() - t0);
  free(item);
  free(spare);
  MPI_Finalize();
  return 0;
}

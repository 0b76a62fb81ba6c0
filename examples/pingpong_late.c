/* A sender whose blocking MPI_Send meets a receiver that is late by a known computation: under a
 * rendezvous protocol (message above the eager limit S) the sender idles until the receive is posted.
 *   pingpong_late [bytes] [late_ms] [iterations]      (defaults: 65536 20 10)
 * Rank 0 sends, rank 1 computes late_ms then receives; then they swap roles for a small reply. */
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
  long bytes = argc > 1 ? atol(argv[1]) : 65536;
  double late_ms = argc > 2 ? atof(argv[2]) : 20;
  int iterations = argc > 3 ? atoi(argv[3]) : 10;
  if (size < 2) {
    if (rank == 0) fprintf(stderr, "pingpong_late: needs 2 ranks\n");
    MPI_Finalize();
    return 1;
  }
  char *buf = calloc((size_t)bytes, 1);
  int ack = 0;
  double t0 = MPI_Wtime();
  for (int it = 0; it < iterations; it++) {
    if (rank == 0) {
      MPI_Send(buf, (int)bytes, MPI_BYTE, 1, 1, MPI_COMM_WORLD); /* waits for the late receiver above S */
      MPI_Recv(&ack, 1, MPI_INT, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (rank == 1) {
      compute_ms(late_ms);
      MPI_Recv(buf, (int)bytes, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(&ack, 1, MPI_INT, 0, 2, MPI_COMM_WORLD);
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
  double elapsed = MPI_Wtime() - t0;
  if (rank == 0) printf("pingpong_late: %d x %ld bytes, receiver late by %.1f ms: %.3f s\n", iterations, bytes, late_ms, elapsed);
  free(buf);
  MPI_Finalize();
  return 0;
}

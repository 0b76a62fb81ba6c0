/* An exchange that works only because MPI buffers the sends: each rank sends BYTES to its partner
 * (rank ^ 1) with MPI_Send, then receives the partner's. Below the library's eager limit both sends
 * return at once; above it both wait for a receive that is never posted, and the job hangs. "sendrecv"
 * makes the same exchange with MPI_Sendrecv, which is safe at any size.
 *   buffered BYTES [iterations] [sendrecv]      (defaults 1024 10) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "compute.h" /* examples/compute.h */

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int bytes = argc > 1 ? atoi(argv[1]) : 1024;
  int iterations = argc > 2 ? atoi(argv[2]) : 10;
  int safe = argc > 3 && strcmp(argv[3], "sendrecv") == 0;
  char *out = calloc((size_t)bytes + 1, 1), *in = calloc((size_t)bytes + 1, 1);
  int partner = rank ^ 1;
  for (int i = 0; i < iterations && partner < size; i++) {
    compute_ms(1);
    if (safe) {
      MPI_Sendrecv(out, bytes, MPI_BYTE, partner, 1, in, bytes, MPI_BYTE, partner, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else {
      MPI_Send(out, bytes, MPI_BYTE, partner, 1, MPI_COMM_WORLD);
      MPI_Recv(in, bytes, MPI_BYTE, partner, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
  }
  if (rank == 0) printf("buffered: %d bytes, %d iterations%s\n", bytes, iterations, safe ? ", MPI_Sendrecv" : "");
  free(out);
  free(in);
  MPI_Finalize();
  return 0;
}

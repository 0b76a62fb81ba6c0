/* Two blocking sends from rank 0 to rank 1, each at its own call site, to a receiver that computes
 * before each receive: the gate's test grows one site's message past the eager limit S.
 *   two_sites A_BYTES B_BYTES [iterations] [late_ms]      (defaults 4096 4096 10 2) */
#include <mpi.h>
#include "compute.h" /* examples/compute.h */
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int a = argc > 1 ? atoi(argv[1]) : 4096, b = argc > 2 ? atoi(argv[2]) : 4096;
  int iterations = argc > 3 ? atoi(argv[3]) : 10;
  double late = argc > 4 ? atof(argv[4]) : 2;
  char *buf_a = calloc((size_t)a + 1, 1), *buf_b = calloc((size_t)b + 1, 1);
  for (int i = 0; i < iterations; i++) {
    if (rank == 0) {
      MPI_Send(buf_a, a, MPI_BYTE, 1, 1, MPI_COMM_WORLD); /* site A */
      MPI_Send(buf_b, b, MPI_BYTE, 1, 2, MPI_COMM_WORLD); /* site B */
    } else if (rank == 1) {
      compute_ms(late);
      MPI_Recv(buf_a, a, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      compute_ms(late);
      MPI_Recv(buf_b, b, MPI_BYTE, 0, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    }
  }
  if (rank == 0) printf("two_sites: %d and %d bytes, %d iterations\n", a, b, iterations);
  free(buf_a);
  free(buf_b);
  MPI_Finalize();
  return 0;
}

/* A chain of delays by construction, for the root causes of waiting and the critical path: three ranks
 * (or more) in a line; in each iteration every rank computes, receives from the rank after it and
 * sends to the rank before it. The last rank computes LONG ms, the others SHORT ms, all at the same
 * line but the last's. Rank P-2 waits for the last rank's computation (directly), rank P-3 waits for
 * rank P-2, which was late only because it waited (indirectly): every wait is caused by the last rank's
 * computation, which is the whole critical path. With "phases" the program marks two phases with
 * MPI_Pcontrol: the second with every rank computing SHORT ms (balanced). With "slow:K" iteration K
 * (from 1) of the only phase is slow: the last rank computes 3 x LONG ms in it.
 *   chain [iterations] [long ms] [short ms] [phases | slow:K]      (defaults 10 40 10) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "compute.h" /* examples/compute.h */

static void iteration(int rank, int size, double long_ms, double short_ms, int balanced)
{
  int token = rank;
  if (rank == size - 1 && !balanced)
    compute_ms(long_ms); /* the root cause */
  else
    compute_ms(short_ms); /* the others' computation */
  if (rank < size - 1) MPI_Recv(&token, 1, MPI_INT, rank + 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  if (rank > 0) MPI_Send(&token, 1, MPI_INT, rank - 1, 0, MPI_COMM_WORLD);
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int iterations = argc > 1 ? atoi(argv[1]) : 10;
  double long_ms = argc > 2 ? atof(argv[2]) : 40;
  double short_ms = argc > 3 ? atof(argv[3]) : 10;
  int phases = argc > 4 && strcmp(argv[4], "phases") == 0;
  int slow = argc > 4 && strncmp(argv[4], "slow:", 5) == 0 ? atoi(argv[4] + 5) : 0;
  if (phases) MPI_Pcontrol(1); /* the chained phase */
  for (int i = 0; i < iterations; i++) iteration(rank, size, i + 1 == slow ? 3 * long_ms : long_ms, short_ms, 0);
  if (phases) {
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Pcontrol(2); /* the balanced phase */
    for (int i = 0; i < iterations; i++) iteration(rank, size, long_ms, short_ms, 1);
  }
  if (rank == 0) printf("chain: %d iterations over %d ranks\n", iterations, size);
  MPI_Finalize();
  return 0;
}

/* Jobs that end badly, for the tests that the log of what happened before stays readable.
 *   crash kill   rank 1 sends rank 0 one message every 10 ms for 1.5 s, then SIGKILLs itself
 *   crash segv   the same, then a segmentation fault
 *   crash abort  the same, then rank 1 calls MPI_Abort(MPI_COMM_WORLD, 7)
 * Run with 2 ranks. Rank 0 receives until the job dies. */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const char *mode = argc > 1 ? argv[1] : "kill";
  int v = 0;
  if (rank == 0) {
    for (;;) MPI_Recv(&v, 1, MPI_INT, 1, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
  double start = MPI_Wtime();
  struct timespec ten_ms = {0, 10000000};
  while (MPI_Wtime() - start < 1.5) {
    MPI_Send(&v, 1, MPI_INT, 0, 5, MPI_COMM_WORLD);
    v++;
    nanosleep(&ten_ms, NULL);
  }
  printf("crash: rank 1 sent %d messages\n", v);
  fflush(stdout);
  if (!strcmp(mode, "abort")) MPI_Abort(MPI_COMM_WORLD, 7);
  if (!strcmp(mode, "segv")) {
    volatile int *nowhere = NULL;
    *nowhere = 1;
  }
  kill(getpid(), SIGKILL);
  return 0;
}

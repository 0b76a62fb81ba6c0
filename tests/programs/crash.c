/* Jobs that end badly, for the tests that the log of what happened before stays readable.
 *   crash kill   rank 1 sends rank 0 one message every 10 ms for 1.5 s, then SIGKILLs itself
 *   crash segv   the same, then a segmentation fault
 *   crash abort  the same, then rank 1 calls MPI_Abort(MPI_COMM_WORLD, 7)
 *   crash quiet  rank 1's main thread makes 5 calls and goes quiet while another thread calls MPI
 *                without pause; after 2.5 s the rank SIGKILLs itself
 *   crash survive  rank 1 gets a SIGINT that its own handler (installed before MPI_Init) survives, then
 *                makes 3 more calls and finalizes with everyone
 * Run with 2 ranks. Rank 0 receives until the job dies. */
#include <mpi.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t interrupted;
static void on_sigint(int sig) { (void)sig; interrupted = 1; }

static void *busy(void *arg)
{
  (void)arg;
  MPI_Request none = MPI_REQUEST_NULL;
  int flag;
  for (;;) MPI_Test(&none, &flag, MPI_STATUS_IGNORE);
  return NULL;
}

int main(int argc, char **argv)
{
  const char *mode = argc > 1 ? argv[1] : "kill";
  if (!strcmp(mode, "survive")) signal(SIGINT, on_sigint);
  int provided;
  MPI_Init_thread(&argc, &argv, !strcmp(mode, "quiet") ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE, &provided);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int v = 0;
  if (!strcmp(mode, "survive")) {
    if (rank == 1) {
      raise(SIGINT);
      printf("crash: rank 1 survived SIGINT: %d\n", (int)interrupted);
      fflush(stdout);
    }
    for (int i = 0; i < 3; i++) MPI_Barrier(MPI_COMM_WORLD);
    MPI_Finalize();
    return 0;
  }
  if (!strcmp(mode, "quiet")) {
    if (rank == 1) {
      pthread_t t;
      pthread_create(&t, NULL, busy, NULL);
      MPI_Request none = MPI_REQUEST_NULL;
      int flag;
      for (int i = 0; i < 5; i++) MPI_Wait(&none, MPI_STATUS_IGNORE);
      (void)flag;
      struct timespec quiet = {2, 500000000};
      nanosleep(&quiet, NULL);
      kill(getpid(), SIGKILL);
    }
    MPI_Recv(&v, 1, MPI_INT, 1, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
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

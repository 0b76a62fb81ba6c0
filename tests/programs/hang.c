/* Jobs that hang for good, for the tests that a job killed while hung leaves in each rank's log the MPI
 * call every thread was inside (an event flagged unfinished).
 *   hang recv     2 ranks: 5 exchanges (Send / Recv, tag 3) complete, then each calls MPI_Recv from the
 *                 other with tag 9 + its rank: a real deadlock
 *   hang wait     2 ranks: both make a communicator with MPI_Comm_dup; rank 0 posts MPI_Irecv from rank 1
 *                 (tag 11) and calls MPI_Wait on it, while rank 1 calls MPI_Barrier on the new
 *                 communicator
 *   hang threads  2 ranks, MPI_THREAD_MULTIPLE: a second thread of each rank calls MPI_Recv from the
 *                 other (tag 22), the main thread MPI_Recv from the other (tag 21); no one sends
 * Each rank prints "hang: rank R ready" (and "hang: rank R thread ready") just before the call it hangs
 * in; the test then sends SIGTERM to the launcher. Nothing ever returns on its own. */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static int rank;

static void ready(const char *who)
{
  printf("hang: rank %d %sready\n", rank, who);
  fflush(stdout);
}

static void *second_thread(void *arg)
{
  (void)arg;
  int v = 0;
  ready("thread ");
  MPI_Recv(&v, 1, MPI_INT, 1 - rank, 22, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  return NULL;
}

int main(int argc, char **argv)
{
  const char *mode = argc > 1 ? argv[1] : "recv";
  int threads = !strcmp(mode, "threads"), provided = 0;
  MPI_Init_thread(&argc, &argv, threads ? MPI_THREAD_MULTIPLE : MPI_THREAD_SINGLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  int peer = 1 - rank, v = rank;
  if (!strcmp(mode, "recv")) {
    for (int i = 0; i < 5; i++) {
      if (rank == 0) {
        MPI_Send(&v, 1, MPI_INT, peer, 3, MPI_COMM_WORLD);
        MPI_Recv(&v, 1, MPI_INT, peer, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      } else {
        MPI_Recv(&v, 1, MPI_INT, peer, 3, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        MPI_Send(&v, 1, MPI_INT, peer, 3, MPI_COMM_WORLD);
      }
    }
    ready("");
    MPI_Recv(&v, 1, MPI_INT, peer, 9 + rank, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  } else if (!strcmp(mode, "wait")) {
    MPI_Comm dup;
    MPI_Comm_dup(MPI_COMM_WORLD, &dup);
    if (rank == 0) {
      MPI_Request req;
      MPI_Irecv(&v, 1, MPI_INT, peer, 11, MPI_COMM_WORLD, &req);
      ready("");
      MPI_Wait(&req, MPI_STATUS_IGNORE);
    } else {
      ready("");
      MPI_Barrier(dup);
    }
  } else if (threads) {
    if (provided < MPI_THREAD_MULTIPLE) {
      printf("hang: MPI_THREAD_MULTIPLE not provided: rank %d thread ready\n", rank);
      fflush(stdout);
    } else {
      pthread_t t;
      pthread_create(&t, NULL, second_thread, NULL);
      /* the second thread first: its call is then the older of the two */
      struct timespec ms = {0, 100000000};
      nanosleep(&ms, NULL);
    }
    ready("");
    MPI_Recv(&v, 1, MPI_INT, peer, 21, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
  MPI_Finalize();
  return 0;
}

/* MPI_THREAD_MULTIPLE: 4 threads per rank exchange with the same thread of the partner rank at once,
 * each on its own duplicate of MPI_COMM_WORLD. Prints a checksum from rank 0. Run with 2 ranks. */
#include <mpi.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#define THREADS 4
#define ROUNDS 500

static int rank;
static MPI_Comm comms[THREADS];
static long sums[THREADS];

static void *work(void *arg)
{
  int t = (int)(long)arg, other = 1 - rank;
  long sum = 0;
  for (int i = 0; i < ROUNDS; i++) {
    int out = rank * 100000 + t * 1000 + i, in = -1;
    MPI_Request rq[2];
    MPI_Irecv(&in, 1, MPI_INT, other, t, comms[t], &rq[0]);
    MPI_Isend(&out, 1, MPI_INT, other, t, comms[t], &rq[1]);
    MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
    sum += in;
    int echo = -1;
    MPI_Sendrecv(&out, 1, MPI_INT, other, 100 + t, &echo, 1, MPI_INT, other, 100 + t, comms[t], MPI_STATUS_IGNORE);
    sum += echo;
  }
  sums[t] = sum;
  return NULL;
}

int main(int argc, char **argv)
{
  int provided;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (provided < MPI_THREAD_MULTIPLE) {
    if (rank == 0) printf("threads: MPI_THREAD_MULTIPLE not provided\n");
    MPI_Finalize();
    return 0;
  }
  for (int t = 0; t < THREADS; t++) MPI_Comm_dup(MPI_COMM_WORLD, &comms[t]);
  pthread_t th[THREADS];
  for (int t = 0; t < THREADS; t++) pthread_create(&th[t], NULL, work, (void *)(long)t);
  for (int t = 0; t < THREADS; t++) pthread_join(th[t], NULL);
  long local = 0, total = 0;
  for (int t = 0; t < THREADS; t++) local += sums[t];
  MPI_Reduce(&local, &total, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  for (int t = 0; t < THREADS; t++) MPI_Comm_free(&comms[t]);
  if (rank == 0) printf("threads: %d threads x %d rounds, checksum %ld\n", THREADS, ROUNDS, total);
  MPI_Finalize();
  return 0;
}

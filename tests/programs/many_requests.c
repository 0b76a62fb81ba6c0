/* One MPI_Waitall over thousands of requests, as codes that post a receive per neighbour element do.
 * Run with 2 ranks.
 *   many_requests [requests...]     (default 3000 254 255: a round for each)
 * Each round rank 0 sends <requests> messages of one int to rank 1 (MPI_Isend, tag i) and completes
 * them in one MPI_Waitall; rank 1 posts the matching MPI_Irecvs and one more that nothing matches
 * (tag <requests>), cancels that one, and completes all <requests> + 1 in one MPI_Waitall.
 * Rank 1 prints "many_requests: ok <rounds> <messages>" when every message carried its value and every
 * extra receive was cancelled. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  static const int defaults[] = {3000, 254, 255};
  int rounds = argc > 1 ? argc - 1 : 3, most = 0;
  for (int round = 0; round < rounds; round++) {
    int n = argc > 1 ? atoi(argv[round + 1]) : defaults[round];
    if (n < 1) size = 0;
    if (n > most) most = n;
  }
  if (size != 2) {
    if (rank == 0) fprintf(stderr, "many_requests: run with 2 ranks and counts of 1 or more requests\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  int *buf = malloc(sizeof(int) * (size_t)(most + 1));
  MPI_Request *rq = malloc(sizeof(MPI_Request) * (size_t)(most + 1));
  MPI_Status *st = malloc(sizeof(MPI_Status) * (size_t)(most + 1));
  if (!buf || !rq || !st) MPI_Abort(MPI_COMM_WORLD, 3);
  int errors = 0, messages = 0;
  for (int round = 0; round < rounds; round++) {
    const int n = argc > 1 ? atoi(argv[round + 1]) : defaults[round];
    if (rank == 0) {
      for (int i = 0; i < n; i++) {
        buf[i] = round * n + i;
        MPI_Isend(&buf[i], 1, MPI_INT, 1, i, MPI_COMM_WORLD, &rq[i]);
      }
      MPI_Waitall(n, rq, st);
    } else {
      for (int i = 0; i <= n; i++) MPI_Irecv(&buf[i], 1, MPI_INT, 0, i, MPI_COMM_WORLD, &rq[i]);
      MPI_Cancel(&rq[n]);
      MPI_Waitall(n + 1, rq, st);
      for (int i = 0; i < n; i++) {
        errors += buf[i] != round * n + i;
        messages++;
      }
      int flag = 0;
      MPI_Test_cancelled(&st[n], &flag);
      errors += !flag;
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
  if (rank == 1) {
    if (errors) printf("many_requests: %d errors\n", errors);
    else printf("many_requests: ok %d %d\n", rounds, messages);
  }
  free(buf);
  free(rq);
  free(st);
  MPI_Finalize();
  return errors != 0;
}

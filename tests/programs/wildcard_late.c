/* A receive from MPI_ANY_SOURCE completed long after the receives posted behind it, as a code that posts
 * its wildcard receives ahead and waits for them later does. Run with 2 ranks.
 *   wildcard_late
 * Rank 0: 3 rounds of two MPI_Sends of tag 1 to rank 1. Rank 1, each round: MPI_Irecv(MPI_ANY_SOURCE,
 * tag 1), MPI_Recv(0, tag 1), 100 ms of sleep, MPI_Wait on the first: by MPI's order the first send is
 * the wildcard's, the second the named receive's (rank 1 checks the values). A part of the run cut during
 * a sleep (--until) has the wildcard without its completion, so without the source its status resolves. */
#include <mpi.h>
#include <stdio.h>
#include <unistd.h>

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 2) {
    if (rank == 0) fprintf(stderr, "wildcard_late: run with 2 ranks\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  int bad = 0;
  for (int round = 0; round < 3; round++) {
    if (rank == 0) {
      int first = 2 * round, second = 2 * round + 1;
      MPI_Send(&first, 1, MPI_INT, 1, 1, MPI_COMM_WORLD);
      MPI_Send(&second, 1, MPI_INT, 1, 1, MPI_COMM_WORLD);
    } else {
      int any = -1, named = -1;
      MPI_Request rq;
      MPI_Irecv(&any, 1, MPI_INT, MPI_ANY_SOURCE, 1, MPI_COMM_WORLD, &rq);
      MPI_Recv(&named, 1, MPI_INT, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      usleep(100000);
      MPI_Wait(&rq, MPI_STATUS_IGNORE);
      bad += any != 2 * round || named != 2 * round + 1;
    }
    MPI_Barrier(MPI_COMM_WORLD);
  }
  if (rank == 1) printf("wildcard_late: %s\n", bad ? "wrong order" : "ok");
  MPI_Finalize();
  return bad != 0;
}

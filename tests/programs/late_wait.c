/* Receives posted long before they complete, for a part of the run (--from with --until) cut between a
 * receive's posting and its completion. Run with 2 ranks.
 *   late_wait named|any
 * After a barrier, rank 1 posts MPI_Irecv A (from rank 0, tag 1; with "any", from MPI_ANY_SOURCE), 40 ms
 * later MPI_Irecv B (from rank 0, tag 1), and 60 ms later waits for both; rank 0, 50 ms after the barrier,
 * sends two messages of tag 1 to rank 1, 5 ms apart. By MPI's order A takes the first, B the second
 * (rank 1 checks the values). */
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 2 || argc != 2 || (strcmp(argv[1], "named") && strcmp(argv[1], "any"))) {
    if (rank == 0) fprintf(stderr, "late_wait: run with 2 ranks: late_wait named|any\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const int any = !strcmp(argv[1], "any");
  int bad = 0;
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) {
    usleep(50000);
    for (int i = 0; i < 2; i++) {
      MPI_Send(&i, 1, MPI_INT, 1, 1, MPI_COMM_WORLD);
      usleep(5000);
    }
  } else {
    int a = -1, b = -1;
    MPI_Request rq[2];
    MPI_Status st[2];
    MPI_Irecv(&a, 1, MPI_INT, any ? MPI_ANY_SOURCE : 0, 1, MPI_COMM_WORLD, &rq[0]);
    usleep(40000);
    MPI_Irecv(&b, 1, MPI_INT, 0, 1, MPI_COMM_WORLD, &rq[1]);
    usleep(60000);
    MPI_Waitall(2, rq, st);
    bad = a != 0 || b != 1;
    printf("late_wait: %s\n", bad ? "wrong order" : "ok");
  }
  MPI_Finalize();
  return bad;
}

/* Cancelled receives, as benchmark suites post them (an MPI_Irecv from MPI_ANY_SOURCE that is then
 * cancelled), next to real traffic, and a cancel that comes too late. Run with 2 ranks.
 *   cancel [rounds]       (default 5)
 * Each round rank 0 posts receives that no message will match and cancels them: completed by MPI_Wait
 * with MPI_STATUS_IGNORE, by MPI_Wait with a status it checks with MPI_Test_cancelled, by MPI_Waitall
 * (two at once), by a polling MPI_Test, and a persistent receive (MPI_Recv_init, MPI_Start, MPI_Cancel,
 * MPI_Wait). Between them the ranks exchange one message each way (tag 1), and rank 0 receives a
 * message (tag 2) whose MPI_Cancel comes after it arrived: that cancel fails and the message is real.
 * Rank 0 prints "cancel: ok <rounds> <cancelled>" when every cancel did what MPI promises and every
 * message arrived: <cancelled> = 6 per round. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int rounds = argc > 1 ? atoi(argv[1]) : 5;
  if (size != 2 || rounds < 1) {
    if (rank == 0) fprintf(stderr, "cancel: run with 2 ranks and 1 or more rounds\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  int errors = 0, cancelled = 0, other = 1 - rank;
  int never[8], persistent_buf = 0;
  MPI_Request persistent;
  MPI_Recv_init(&persistent_buf, 1, MPI_INT, MPI_ANY_SOURCE, 98, MPI_COMM_WORLD, &persistent);
  for (int round = 0; round < rounds; round++) {
    int out = rank * 100 + round, in = -1;
    MPI_Sendrecv(&out, 1, MPI_INT, other, 1, &in, 1, MPI_INT, other, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    if (in != other * 100 + round) errors++;
    if (rank == 0) {
      MPI_Request rq[2];
      MPI_Status st[2];
      int flag = 0;
      /* Wait, MPI_STATUS_IGNORE: the program does not ask, the tracer does */
      MPI_Irecv(&never[0], 1, MPI_INT, MPI_ANY_SOURCE, 99, MPI_COMM_WORLD, &rq[0]);
      MPI_Cancel(&rq[0]);
      MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
      cancelled++;
      /* Wait with a status */
      MPI_Irecv(&never[1], 1, MPI_INT, MPI_ANY_SOURCE, 99, MPI_COMM_WORLD, &rq[0]);
      MPI_Cancel(&rq[0]);
      MPI_Wait(&rq[0], &st[0]);
      MPI_Test_cancelled(&st[0], &flag);
      if (!flag) errors++;
      cancelled += flag;
      /* Waitall of two cancelled receives, one from a named source */
      MPI_Irecv(&never[2], 1, MPI_INT, MPI_ANY_SOURCE, 99, MPI_COMM_WORLD, &rq[0]);
      MPI_Irecv(&never[3], 1, MPI_INT, 1, 97, MPI_COMM_WORLD, &rq[1]);
      MPI_Cancel(&rq[0]);
      MPI_Cancel(&rq[1]);
      MPI_Waitall(2, rq, st);
      for (int i = 0; i < 2; i++) {
        MPI_Test_cancelled(&st[i], &flag);
        if (!flag) errors++;
        cancelled += flag;
      }
      /* a polling Test */
      MPI_Irecv(&never[4], 1, MPI_INT, MPI_ANY_SOURCE, 99, MPI_COMM_WORLD, &rq[0]);
      MPI_Cancel(&rq[0]);
      flag = 0;
      while (!flag) MPI_Test(&rq[0], &flag, MPI_STATUS_IGNORE);
      cancelled++;
      /* a persistent receive, started and cancelled */
      MPI_Start(&persistent);
      MPI_Cancel(&persistent);
      MPI_Wait(&persistent, &st[0]);
      MPI_Test_cancelled(&st[0], &flag);
      if (!flag) errors++;
      cancelled += flag;
      /* too late: the message has arrived (MPI_Request_get_status does not complete the request) */
      int late = -1;
      MPI_Irecv(&late, 1, MPI_INT, 1, 2, MPI_COMM_WORLD, &rq[0]);
      flag = 0;
      while (!flag) MPI_Request_get_status(rq[0], &flag, MPI_STATUS_IGNORE);
      MPI_Cancel(&rq[0]);
      MPI_Wait(&rq[0], &st[0]);
      MPI_Test_cancelled(&st[0], &flag);
      if (flag || late != 1000 + round) errors++;
    } else {
      int late = 1000 + round;
      MPI_Send(&late, 1, MPI_INT, 0, 2, MPI_COMM_WORLD);
    }
  }
  MPI_Request_free(&persistent);
  int all = 0;
  MPI_Reduce(&errors, &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) printf("cancel: %s %d %d\n", all ? "FAILED" : "ok", rounds, cancelled);
  MPI_Finalize();
  return all ? 1 : 0;
}

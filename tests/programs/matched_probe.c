/* Messages received through matched probes, as mpi4py's comm.recv receives every pickled object.
 *   matched_probe [messages]       run with 3 or more ranks
 * Every rank but 0 sends `messages` messages of its own size to rank 0 in each of four phases; rank 0
 * receives phase 1 with MPI_Mprobe(ANY_SOURCE, ANY_TAG) + MPI_Mrecv, phase 2 with a polling
 * MPI_Improbe(ANY_SOURCE) + MPI_Imrecv + MPI_Wait, phase 3 with MPI_Mprobe from a named source +
 * MPI_Mrecv(MPI_STATUS_IGNORE), phase 4 with MPI_Improbe + MPI_Imrecv on a duplicated communicator,
 * completed together by MPI_Waitall. Prints "matched_probe: ok N" from rank 0 when every message
 * arrived intact. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int messages = argc > 1 ? atoi(argv[1]) : 5;
  if (size < 3 || messages < 1 || messages > 1000) {
    if (rank == 0) fprintf(stderr, "matched_probe: run with 3 or more ranks and 1 to 1000 messages\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  MPI_Comm dup;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  int errors = 0, received = 0;
  int buf[64];
  for (int phase = 1; phase <= 4; phase++) {
    MPI_Comm comm = phase == 4 ? dup : MPI_COMM_WORLD;
    if (rank != 0) {
      for (int i = 0; i < 64; i++) buf[i] = rank * 1000 + phase;
      for (int m = 0; m < messages; m++) MPI_Send(buf, rank, MPI_INT, 0, phase * 100 + m, comm);
    } else {
      int total = messages * (size - 1);
      MPI_Request *reqs = malloc(sizeof *reqs * (size_t)total);
      int(*bufs)[64] = malloc(sizeof *bufs * (size_t)total);
      for (int k = 0; k < total; k++) {
        MPI_Message msg;
        MPI_Status st;
        int count = 0, flag = 0;
        if (phase == 1) {
          MPI_Mprobe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &msg, &st);
        } else if (phase == 3) {
          MPI_Mprobe(1 + k / messages, MPI_ANY_TAG, comm, &msg, &st);
        } else {
          while (!flag) MPI_Improbe(MPI_ANY_SOURCE, MPI_ANY_TAG, comm, &flag, &msg, &st);
        }
        MPI_Get_count(&st, MPI_INT, &count);
        if (count != st.MPI_SOURCE) errors++;
        if (phase == 1 || phase == 3) {
          MPI_Mrecv(bufs[k], count, MPI_INT, &msg, phase == 3 ? MPI_STATUS_IGNORE : &st);
        } else {
          MPI_Imrecv(bufs[k], count, MPI_INT, &msg, &reqs[k]);
          if (phase == 2) MPI_Wait(&reqs[k], MPI_STATUS_IGNORE);
        }
        if (phase == 4 && k == total - 1) MPI_Waitall(total, reqs, MPI_STATUSES_IGNORE);
      }
      for (int k = 0; k < total; k++) {
        int src = bufs[k][0] / 1000;
        if (src < 1 || src >= size || bufs[k][0] != src * 1000 + phase) errors++;
        else received++;
      }
      free(reqs);
      free(bufs);
    }
    MPI_Barrier(MPI_COMM_WORLD); /* a wildcard probe of one phase must not take the next phase's messages */
  }
  MPI_Comm_free(&dup);
  if (rank == 0) printf("matched_probe: %s %d\n", errors ? "FAILED" : "ok", received);
  MPI_Finalize();
  return errors ? 1 : 0;
}

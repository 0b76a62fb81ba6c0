/* Every point-to-point and completion call mpiadvise intercepts, with arguments the tests know.
 * Run with 4 ranks. Prints "p2p_all: ok <checksum>" from rank 0 when every message arrived intact. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int errors;
#define EXPECT(cond)                                                                  \
  do {                                                                                \
    if (!(cond)) {                                                                    \
      fprintf(stderr, "p2p_all: rank %d line %d: %s failed\n", rank, __LINE__, #cond); \
      errors++;                                                                       \
    }                                                                                 \
  } while (0)

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 4) {
    if (rank == 0) fprintf(stderr, "p2p_all: run with 4 ranks\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  long checksum = 0;
  int other = rank ^ 1; /* 0 <-> 1, 2 <-> 3 */

  /* 1. a split communicator: even world ranks {0,2}, odd {1,3}; local 0 sends to local 1 (tag 11) */
  MPI_Comm half;
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
  int hrank;
  MPI_Comm_rank(half, &hrank);
  int ten[10];
  for (int i = 0; i < 10; i++) ten[i] = rank * 100 + i;
  if (hrank == 0) MPI_Send(ten, 10, MPI_INT, 1, 11, half);
  else {
    MPI_Recv(ten, 10, MPI_INT, 0, 11, half, MPI_STATUS_IGNORE);
    EXPECT(ten[3] == (rank - 2) * 100 + 3);
  }

  if (rank < 2) {
    /* 2. a derived datatype (4 blocks of 3 doubles, stride 5: 96 bytes), two of them (192 bytes), to a
     *    receive from MPI_ANY_SOURCE with MPI_ANY_TAG */
    MPI_Datatype vec;
    MPI_Type_vector(4, 3, 5, MPI_DOUBLE, &vec);
    MPI_Type_commit(&vec);
    double grid[2 * 20];
    for (int i = 0; i < 40; i++) grid[i] = rank == 0 ? i : -1;
    if (rank == 0) MPI_Send(grid, 2, vec, 1, 12, MPI_COMM_WORLD);
    else {
      MPI_Status st;
      MPI_Recv(grid, 2, vec, MPI_ANY_SOURCE, MPI_ANY_TAG, MPI_COMM_WORLD, &st);
      EXPECT(st.MPI_SOURCE == 0 && st.MPI_TAG == 12 && grid[5] == 5);
      checksum += (long)grid[5];
    }
    MPI_Type_free(&vec);

    /* 3. Irecv + Isend + Waitall (tag 13) */
    int mine = rank + 1, theirs = 0;
    MPI_Request rq[3];
    MPI_Irecv(&theirs, 1, MPI_INT, other, 13, MPI_COMM_WORLD, &rq[0]);
    MPI_Isend(&mine, 1, MPI_INT, other, 13, MPI_COMM_WORLD, &rq[1]);
    MPI_Waitall(2, rq, MPI_STATUSES_IGNORE);
    EXPECT(theirs == other + 1);

    /* 4. Waitany over two receives (tags 14, 15); the sender sends 15 first */
    if (rank == 0) {
      int a = 0, b = 0, idx;
      MPI_Status st;
      MPI_Irecv(&a, 1, MPI_INT, 1, 14, MPI_COMM_WORLD, &rq[0]);
      MPI_Irecv(&b, 1, MPI_INT, 1, 15, MPI_COMM_WORLD, &rq[1]);
      MPI_Barrier(MPI_COMM_WORLD); /* receives posted */
      MPI_Waitany(2, rq, &idx, &st);
      MPI_Waitany(2, rq, &idx, &st);
      EXPECT(a == 14 && b == 15);
    } else {
      int v15 = 15, v14 = 14;
      MPI_Barrier(MPI_COMM_WORLD);
      MPI_Send(&v15, 1, MPI_INT, 0, 15, MPI_COMM_WORLD);
      MPI_Send(&v14, 1, MPI_INT, 0, 14, MPI_COMM_WORLD);
    }

    /* 5. Testsome over three receives (tags 16, 17, 18): unsuccessful polls fold into runs */
    if (rank == 0) {
      int v[3] = {0, 0, 0}, done = 0, outcount, idx[3];
      for (int i = 0; i < 3; i++) MPI_Irecv(&v[i], 1, MPI_INT, 1, 16 + i, MPI_COMM_WORLD, &rq[i]);
      MPI_Barrier(MPI_COMM_WORLD);
      while (done < 3) {
        MPI_Testsome(3, rq, &outcount, idx, MPI_STATUSES_IGNORE);
        if (outcount != MPI_UNDEFINED) done += outcount;
      }
      EXPECT(v[0] == 16 && v[1] == 17 && v[2] == 18);
    } else {
      MPI_Barrier(MPI_COMM_WORLD);
      double t = MPI_Wtime();
      while (MPI_Wtime() - t < 0.05) { } /* make rank 0 poll */
      for (int i = 0; i < 3; i++) {
        int x = 16 + i;
        MPI_Send(&x, 1, MPI_INT, 0, 16 + i, MPI_COMM_WORLD);
      }
    }

    /* 6. persistent requests: Send_init / Recv_init, Start x3 + Wait, Startall x2 + Waitall, free */
    int pv = 0;
    MPI_Request pr;
    if (rank == 0) MPI_Send_init(&pv, 1, MPI_INT, 1, 19, MPI_COMM_WORLD, &pr);
    else MPI_Recv_init(&pv, 1, MPI_INT, 0, 19, MPI_COMM_WORLD, &pr);
    for (int i = 0; i < 3; i++) {
      if (rank == 0) pv = 100 + i;
      MPI_Start(&pr);
      MPI_Wait(&pr, MPI_STATUS_IGNORE);
      if (rank == 1) EXPECT(pv == 100 + i);
    }
    for (int i = 0; i < 2; i++) {
      MPI_Startall(1, &pr);
      MPI_Waitall(1, &pr, MPI_STATUSES_IGNORE);
    }
    MPI_Request_free(&pr);
    MPI_Request ps[4];
    int sv[4] = {1, 2, 3, 4};
    if (rank == 0) {
      MPI_Ssend_init(&sv[0], 1, MPI_INT, 1, 20, MPI_COMM_WORLD, &ps[0]);
      MPI_Rsend_init(&sv[1], 1, MPI_INT, 1, 21, MPI_COMM_WORLD, &ps[1]);
    } else {
      MPI_Recv_init(&sv[0], 1, MPI_INT, 0, 20, MPI_COMM_WORLD, &ps[0]);
      MPI_Recv_init(&sv[1], 1, MPI_INT, 0, 21, MPI_COMM_WORLD, &ps[1]);
    }
    if (rank == 1) MPI_Startall(2, ps);
    MPI_Barrier(MPI_COMM_WORLD); /* the ready send needs its receive posted */
    if (rank == 0) MPI_Startall(2, ps);
    MPI_Waitall(2, ps, MPI_STATUSES_IGNORE);
    MPI_Request_free(&ps[0]);
    MPI_Request_free(&ps[1]);

    /* 7. send modes: Ssend (22), Bsend (23), Rsend (24), Issend (25), Ibsend (26), Irsend (27) */
    int bufsize = 6 * (MPI_BSEND_OVERHEAD + 64);
    char *bsend_buf = malloc((size_t)bufsize);
    MPI_Buffer_attach(bsend_buf, bufsize);
    int m[6] = {22, 23, 24, 25, 26, 27}, r[6] = {0};
    if (rank == 0) {
      MPI_Barrier(MPI_COMM_WORLD); /* receiver has posted the ready-mode receives */
      MPI_Ssend(&m[0], 1, MPI_INT, 1, 22, MPI_COMM_WORLD);
      MPI_Bsend(&m[1], 1, MPI_INT, 1, 23, MPI_COMM_WORLD);
      MPI_Rsend(&m[2], 1, MPI_INT, 1, 24, MPI_COMM_WORLD);
      MPI_Issend(&m[3], 1, MPI_INT, 1, 25, MPI_COMM_WORLD, &rq[0]);
      MPI_Ibsend(&m[4], 1, MPI_INT, 1, 26, MPI_COMM_WORLD, &rq[1]);
      MPI_Irsend(&m[5], 1, MPI_INT, 1, 27, MPI_COMM_WORLD, &rq[2]);
      MPI_Waitall(3, rq, MPI_STATUSES_IGNORE);
    } else {
      MPI_Request rr[6];
      for (int i = 0; i < 6; i++) MPI_Irecv(&r[i], 1, MPI_INT, 0, 22 + i, MPI_COMM_WORLD, &rr[i]);
      MPI_Barrier(MPI_COMM_WORLD);
      MPI_Waitall(6, rr, MPI_STATUSES_IGNORE);
      for (int i = 0; i < 6; i++) EXPECT(r[i] == 22 + i);
    }
    MPI_Buffer_detach(&bsend_buf, &bufsize);
    free(bsend_buf);

    /* 8. Sendrecv (28 -> 29) and Sendrecv_replace (30) */
    int out = rank + 7, in = -1;
    MPI_Sendrecv(&out, 1, MPI_INT, other, 28, &in, 1, MPI_INT, other, 28, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    EXPECT(in == other + 7);
    long rep[2] = {rank, rank};
    MPI_Sendrecv_replace(rep, 2, MPI_LONG, other, 30, other, 30, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    EXPECT(rep[0] == other);

    /* 9. Probe + Recv (31), Iprobe loop (32), Mprobe + Mrecv (33), Improbe + Imrecv + Wait (34) */
    if (rank == 1) {
      int v[4] = {31, 32, 33, 34};
      for (int i = 0; i < 4; i++) MPI_Send(&v[i], 1, MPI_INT, 0, 31 + i, MPI_COMM_WORLD);
    } else {
      MPI_Status st;
      int v = 0, flag = 0, count;
      MPI_Probe(1, 31, MPI_COMM_WORLD, &st);
      MPI_Get_count(&st, MPI_INT, &count);
      MPI_Recv(&v, count, MPI_INT, st.MPI_SOURCE, st.MPI_TAG, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      EXPECT(v == 31);
      while (!flag) MPI_Iprobe(MPI_ANY_SOURCE, 32, MPI_COMM_WORLD, &flag, &st);
      MPI_Recv(&v, 1, MPI_INT, 1, 32, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      EXPECT(v == 32);
      MPI_Message msg;
      MPI_Mprobe(1, 33, MPI_COMM_WORLD, &msg, &st);
      MPI_Mrecv(&v, 1, MPI_INT, &msg, MPI_STATUS_IGNORE);
      EXPECT(v == 33);
      flag = 0;
      while (!flag) MPI_Improbe(1, 34, MPI_COMM_WORLD, &flag, &msg, &st);
      MPI_Imrecv(&v, 1, MPI_INT, &msg, &rq[0]);
      MPI_Wait(&rq[0], MPI_STATUS_IGNORE);
      EXPECT(v == 34);
      checksum += v;
    }

    /* 10. a cancelled receive (tag 99 is never sent); a Test that succeeds; a send to MPI_PROC_NULL */
    if (rank == 0) {
      int never, flag = 0;
      MPI_Status st;
      MPI_Irecv(&never, 1, MPI_INT, 1, 99, MPI_COMM_WORLD, &rq[0]);
      MPI_Cancel(&rq[0]);
      MPI_Wait(&rq[0], &st);
      MPI_Test_cancelled(&st, &flag);
      EXPECT(flag);
      int x = 5;
      MPI_Isend(&x, 1, MPI_INT, MPI_PROC_NULL, 35, MPI_COMM_WORLD, &rq[0]);
      flag = 0;
      while (!flag) MPI_Test(&rq[0], &flag, MPI_STATUS_IGNORE);
      MPI_Send(&x, 1, MPI_INT, MPI_PROC_NULL, 36, MPI_COMM_WORLD);
      /* 11. exactly 1000 polls at one call site that find nothing (tag 98 is never sent) */
      for (int i = 0; i < 1000; i++) {
        MPI_Iprobe(1, 98, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
        EXPECT(!flag);
      }
    }
  } else {
    /* ranks 2 and 3 take part in the barriers of ranks 0 and 1 (MPI_COMM_WORLD) */
    for (int i = 0; i < 4; i++) MPI_Barrier(MPI_COMM_WORLD);
  }
  MPI_Comm_free(&half);
  int all = 0;
  MPI_Reduce(&errors, &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  long sum = 0;
  MPI_Reduce(&checksum, &sum, 1, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) printf("p2p_all: %s %ld\n", all ? "FAILED" : "ok", sum);
  MPI_Finalize();
  return all ? 1 : 0;
}

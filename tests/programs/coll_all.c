/* Every collective and communicator call mpiadvise intercepts, through the C bindings, with arguments the
 * tests know (tests/mpi_collectives.cpp states what the log must say about each). Run with 4 ranks.
 * Prints "coll_all: ok <checksum>" from rank 0 when every result is right.
 *
 * Arguments that MPI ignores are passed as programs commonly pass them: the receive count of Gather and
 * the send count of Scatter are given on every rank (one line of code for all), the vectors of Gatherv and
 * Scatterv are NULL away from the root. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, errors;
static long checksum;
#define EXPECT(cond)                                                                  \
  do {                                                                                \
    if (!(cond)) {                                                                    \
      fprintf(stderr, "coll_all: rank %d line %d: %s failed\n", rank, __LINE__, #cond); \
      errors++;                                                                       \
    }                                                                                 \
  } while (0)

/* One collective, blocking or as its I- form completed at once by MPI_Wait, from one list of arguments:
 * both forms must be logged alike. */
#define COLL(blocking, immediate, ...)                     \
  do {                                                     \
    if (nonblocking) {                                     \
      MPI_Request coll_request;                            \
      immediate(__VA_ARGS__, &coll_request);               \
      MPI_Wait(&coll_request, MPI_STATUS_IGNORE);          \
    } else {                                               \
      blocking(__VA_ARGS__);                               \
    }                                                      \
  } while (0)

static const int kVecCounts[4] = {1, 2, 3, 4}, kVecDispls[4] = {0, 1, 3, 6}; /* 10 elements */

/* Every collective on MPI_COMM_WORLD; r is the world rank. */
static void collectives(int nonblocking)
{
  const MPI_Comm world = MPI_COMM_WORLD;
  const int r = rank;

  COLL(MPI_Barrier, MPI_Ibarrier, world);

  /* Bcast: 5 ints from root 2 (20 bytes) */
  int b[5] = {0};
  if (r == 2)
    for (int i = 0; i < 5; i++) b[i] = 10 + i;
  COLL(MPI_Bcast, MPI_Ibcast, b, 5, MPI_INT, 2, world);
  EXPECT(b[4] == 14);
  checksum += b[4];

  /* Reduce: 3 doubles to root 1 (24 bytes); then to root 3, which reduces in place */
  double s[3] = {r, r + 1, r + 2}, d[3] = {0, 0, 0};
  COLL(MPI_Reduce, MPI_Ireduce, s, d, 3, MPI_DOUBLE, MPI_SUM, 1, world);
  if (r == 1) EXPECT(d[0] == 6 && d[2] == 14);
  memcpy(d, s, sizeof d);
  COLL(MPI_Reduce, MPI_Ireduce, r == 3 ? MPI_IN_PLACE : s, d, 3, MPI_DOUBLE, MPI_SUM, 3, world);
  if (r == 3) {
    EXPECT(d[0] == 6 && d[2] == 14);
    checksum += (long)d[1];
  }

  /* Allreduce: 4 longs (32 bytes); then in place */
  long a[4] = {r, 2 * r, 3 * r, 4 * r}, sum[4];
  COLL(MPI_Allreduce, MPI_Iallreduce, a, sum, 4, MPI_LONG, MPI_SUM, world);
  EXPECT(sum[0] == 6 && sum[3] == 24);
  COLL(MPI_Allreduce, MPI_Iallreduce, MPI_IN_PLACE, a, 4, MPI_LONG, MPI_SUM, world);
  EXPECT(a[1] == 12);
  checksum += a[3];

  /* Gather: 2 ints from each rank to root 0 (8 bytes each way) */
  int g[2] = {r, 10 * r}, gathered[8] = {0};
  COLL(MPI_Gather, MPI_Igather, g, 2, MPI_INT, r == 0 ? gathered : NULL, 2, MPI_INT, 0, world);
  if (r == 0) {
    EXPECT(gathered[6] == 3 && gathered[7] == 30);
    checksum += gathered[7];
  }

  /* Gatherv: r + 1 ints from rank r to root 3, which receives 1 + 2 + 3 + 4 ints (40 bytes) */
  int gv[4] = {r, r, r, r}, gathered_v[10] = {0};
  if (r == 3)
    COLL(MPI_Gatherv, MPI_Igatherv, gv, r + 1, MPI_INT, gathered_v, kVecCounts, kVecDispls, MPI_INT, 3, world);
  else
    COLL(MPI_Gatherv, MPI_Igatherv, gv, r + 1, MPI_INT, NULL, NULL, NULL, MPI_INT, 3, world);
  if (r == 3) EXPECT(gathered_v[0] == 0 && gathered_v[2] == 1 && gathered_v[9] == 3);

  /* Scatter: 3 shorts to each rank from root 1 (6 bytes each way) */
  short scatter_src[12], scattered[3] = {0};
  for (int i = 0; i < 12; i++) scatter_src[i] = (short)i;
  COLL(MPI_Scatter, MPI_Iscatter, r == 1 ? scatter_src : NULL, 3, MPI_SHORT, scattered, 3, MPI_SHORT, 1, world);
  EXPECT(scattered[0] == 3 * r && scattered[2] == 3 * r + 2);
  checksum += scattered[2];

  /* Scatterv: 4, 3, 2, 1 floats from root 0 (40 bytes sent, 4 * (4 - r) received) */
  static const int scounts[4] = {4, 3, 2, 1}, sdispls[4] = {0, 4, 7, 9};
  float scatterv_src[10], scattered_v[4] = {0};
  for (int i = 0; i < 10; i++) scatterv_src[i] = (float)i;
  if (r == 0)
    COLL(MPI_Scatterv, MPI_Iscatterv, scatterv_src, scounts, sdispls, MPI_FLOAT, scattered_v, 4 - r, MPI_FLOAT, 0,
         world);
  else
    COLL(MPI_Scatterv, MPI_Iscatterv, NULL, NULL, NULL, MPI_FLOAT, scattered_v, 4 - r, MPI_FLOAT, 0, world);
  EXPECT(scattered_v[0] == (float)sdispls[r]);

  /* Allgather: one int each (4 bytes each way) */
  int one = r + 1, all[4] = {0};
  COLL(MPI_Allgather, MPI_Iallgather, &one, 1, MPI_INT, all, 1, MPI_INT, world);
  EXPECT(all[0] == 1 && all[3] == 4);

  /* Allgatherv: r + 1 ints from rank r, 10 ints (40 bytes) received by all */
  int allv[10] = {0};
  COLL(MPI_Allgatherv, MPI_Iallgatherv, gv, r + 1, MPI_INT, allv, kVecCounts, kVecDispls, MPI_INT, world);
  EXPECT(allv[1] == 1 && allv[9] == 3);

  /* Alltoall: 2 ints to and from every rank (8 bytes) */
  int to_all[8], from_all[8] = {0};
  for (int j = 0; j < 4; j++) to_all[2 * j] = to_all[2 * j + 1] = 100 * r + j;
  COLL(MPI_Alltoall, MPI_Ialltoall, to_all, 2, MPI_INT, from_all, 2, MPI_INT, world);
  for (int j = 0; j < 4; j++) EXPECT(from_all[2 * j] == 100 * j + r);
  checksum += from_all[7];

  /* Alltoallv: j + 1 ints to rank j (40 bytes sent), r + 1 ints from every rank (16 * (r + 1) bytes) */
  int to_v[10], from_v[16] = {0}, rcounts[4], rdispls[4];
  for (int j = 0; j < 4; j++) {
    for (int k = 0; k < kVecCounts[j]; k++) to_v[kVecDispls[j] + k] = 100 * r + j;
    rcounts[j] = r + 1;
    rdispls[j] = j * (r + 1);
  }
  COLL(MPI_Alltoallv, MPI_Ialltoallv, to_v, kVecCounts, kVecDispls, MPI_INT, from_v, rcounts, rdispls, MPI_INT,
       world);
  for (int j = 0; j < 4; j++) EXPECT(from_v[rdispls[j]] == 100 * j + r);

  /* Alltoallw: one int to even ranks, one double to odd ranks (4 + 8 + 4 + 8 = 24 bytes sent); rank r
   * receives four of its own type (16 or 32 bytes). Displacements are in bytes, 8 apart. */
  char to_w[32], from_w[32];
  int ones[4] = {1, 1, 1, 1}, wdispls[4] = {0, 8, 16, 24};
  MPI_Datatype stypes[4], rtypes[4];
  for (int j = 0; j < 4; j++) {
    stypes[j] = j % 2 ? MPI_DOUBLE : MPI_INT;
    rtypes[j] = r % 2 ? MPI_DOUBLE : MPI_INT;
    if (j % 2) {
      double v = 10 * r + j;
      memcpy(to_w + 8 * j, &v, sizeof v);
    } else {
      int v = 10 * r + j;
      memcpy(to_w + 8 * j, &v, sizeof v);
    }
  }
  COLL(MPI_Alltoallw, MPI_Ialltoallw, to_w, ones, wdispls, stypes, from_w, ones, wdispls, rtypes, world);
  for (int j = 0; j < 4; j++) {
    double got;
    if (r % 2) memcpy(&got, from_w + 8 * j, sizeof got);
    else {
      int v;
      memcpy(&v, from_w + 8 * j, sizeof v);
      got = v;
    }
    EXPECT(got == 10 * j + r);
  }

  /* Reduce_scatter: 10 ints from each (40 bytes), r + 1 of the sums back (4 * (r + 1) bytes) */
  int rs_in[10], rs_out[4] = {0};
  for (int i = 0; i < 10; i++) rs_in[i] = i + r;
  COLL(MPI_Reduce_scatter, MPI_Ireduce_scatter, rs_in, rs_out, kVecCounts, MPI_INT, MPI_SUM, world);
  EXPECT(rs_out[0] == 4 * kVecDispls[r] + 6);

  /* Reduce_scatter_block: 2 ints for each of 4 ranks (32 bytes), 2 back (8 bytes) */
  int rsb_in[8], rsb_out[2] = {0};
  for (int i = 0; i < 8; i++) rsb_in[i] = i * r;
  COLL(MPI_Reduce_scatter_block, MPI_Ireduce_scatter_block, rsb_in, rsb_out, 2, MPI_INT, MPI_SUM, world);
  EXPECT(rsb_out[0] == 12 * r && rsb_out[1] == 6 * (2 * r + 1));
  checksum += rsb_out[1];

  /* Scan and Exscan: 2 ints (8 bytes) */
  int sc_in[2] = {r, 1}, sc_out[2] = {0, 0};
  COLL(MPI_Scan, MPI_Iscan, sc_in, sc_out, 2, MPI_INT, MPI_SUM, world);
  EXPECT(sc_out[0] == r * (r + 1) / 2 && sc_out[1] == r + 1);
  COLL(MPI_Exscan, MPI_Iexscan, sc_in, sc_out, 2, MPI_INT, MPI_SUM, world);
  if (r > 0) { /* rank 0's result is undefined */
    EXPECT(sc_out[0] == r * (r - 1) / 2 && sc_out[1] == r);
    checksum += sc_out[1];
  }
}

/* The world rank of rank `local` of comm (whose group is translated, not assumed). */
static int world_rank_of(MPI_Comm comm, int local)
{
  MPI_Group group, world_group;
  int world;
  MPI_Comm_group(comm, &group);
  MPI_Comm_group(MPI_COMM_WORLD, &world_group);
  MPI_Group_translate_ranks(group, 1, &local, world_group, &world);
  MPI_Group_free(&group);
  MPI_Group_free(&world_group);
  return world;
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 4) {
    if (rank == 0) fprintf(stderr, "coll_all: run with 4 ranks\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  const int r = rank;

  /* 1. every collective, blocking, then every I- form each completed by MPI_Wait */
  collectives(0);
  collectives(1);

  /* 2. three non-blocking collectives in flight at once, completed by one MPI_Waitall */
  MPI_Request batch[3];
  int x[2] = {r == 0 ? 7 : 0, r == 0 ? 8 : 0};
  long total = r;
  MPI_Ibarrier(MPI_COMM_WORLD, &batch[0]);
  MPI_Ibcast(x, 2, MPI_INT, 0, MPI_COMM_WORLD, &batch[1]);
  MPI_Iallreduce(MPI_IN_PLACE, &total, 1, MPI_LONG, MPI_SUM, MPI_COMM_WORLD, &batch[2]);
  MPI_Waitall(3, batch, MPI_STATUSES_IGNORE);
  EXPECT(x[1] == 8 && total == 6);

  /* 3. communicators */
  MPI_Comm dup, dup_info, idup;
  MPI_Comm_dup(MPI_COMM_WORLD, &dup);
  MPI_Comm_dup_with_info(MPI_COMM_WORLD, MPI_INFO_NULL, &dup_info);
  MPI_Request idup_request;
  MPI_Comm_idup(MPI_COMM_WORLD, &idup, &idup_request);
  MPI_Wait(&idup_request, MPI_STATUS_IGNORE);
  if (r < 2) { /* ranks 2 and 3 never use idup: it must be defined on them all the same */
    int mine = r, theirs = -1;
    MPI_Sendrecv(&mine, 1, MPI_INT, 1 - r, 50, &theirs, 1, MPI_INT, 1 - r, 50, idup, MPI_STATUS_IGNORE);
    EXPECT(theirs == 1 - r);
  }

  /* halves in reverse order: world {1, 0} and {3, 2} (local rank 0 is world 1 or 3) */
  MPI_Comm half;
  MPI_Comm_split(MPI_COMM_WORLD, r / 2, -r, &half);
  int half_rank;
  MPI_Comm_rank(half, &half_rank);
  EXPECT(half_rank == 1 - r % 2);
  /* roots as ranks of half: local 1 is world 0 or 2, local 0 is world 1 or 3 */
  int hb[3] = {0};
  if (half_rank == 1) hb[0] = hb[1] = hb[2] = 40 + r;
  MPI_Bcast(hb, 3, MPI_INT, 1, half);
  EXPECT(hb[2] == 40 + (r / 2) * 2);
  long hr = r, hsum = 0;
  MPI_Reduce(&hr, &hsum, 1, MPI_LONG, MPI_SUM, 0, half);
  if (half_rank == 0) EXPECT(hsum == (r / 2 == 0 ? 1 : 5));

  MPI_Comm shared;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, r, MPI_INFO_NULL, &shared);

  MPI_Group world_group, odd_group, group_023;
  MPI_Comm_group(MPI_COMM_WORLD, &world_group);
  const int odd_ranks[2] = {3, 1}, ranks_023[3] = {0, 2, 3};
  MPI_Group_incl(world_group, 2, odd_ranks, &odd_group);
  MPI_Group_incl(world_group, 3, ranks_023, &group_023);
  MPI_Comm created; /* world {3, 1}; MPI_COMM_NULL on ranks 0 and 2 */
  MPI_Comm_create(MPI_COMM_WORLD, odd_group, &created);
  EXPECT((created == MPI_COMM_NULL) == (r % 2 == 0));
  MPI_Comm created_group = MPI_COMM_NULL; /* world {0, 2, 3}, made by those three alone */
  if (r != 1) MPI_Comm_create_group(MPI_COMM_WORLD, group_023, 7, &created_group);

  /* an intercommunicator between the halves: leaders world 1 and world 3 */
  MPI_Comm inter;
  MPI_Intercomm_create(half, 0, MPI_COMM_WORLD, r < 2 ? 3 : 1, 42, &inter);
  /* world 0 (local 1 of {1, 0}) sends to remote rank 0 (world 3) */
  int payload[4] = {r, r, r, r};
  if (r == 0) MPI_Send(payload, 4, MPI_INT, 0, 60, inter);
  if (r == 3) {
    MPI_Recv(payload, 4, MPI_INT, 1, 60, inter, MPI_STATUS_IGNORE);
    EXPECT(payload[3] == 0);
  }
  /* world 2 (local 1 of {3, 2}) sends to remote rank 0 (world 1), which receives from any source */
  MPI_Request ireq;
  int from_any = -1;
  if (r == 2) {
    MPI_Isend(&r, 1, MPI_INT, 0, 61, inter, &ireq);
    MPI_Wait(&ireq, MPI_STATUS_IGNORE);
  }
  if (r == 1) {
    MPI_Irecv(&from_any, 1, MPI_INT, MPI_ANY_SOURCE, 61, inter, &ireq);
    MPI_Waitall(1, &ireq, MPI_STATUSES_IGNORE);
    EXPECT(from_any == 2);
  }
  /* an intercommunicator broadcast from world 1: MPI_ROOT there, MPI_PROC_NULL beside it, and remote
   * rank 0 in the other half */
  int ib[3] = {r == 1 ? 77 : 0, 0, 0};
  MPI_Bcast(ib, 3, MPI_INT, r == 1 ? MPI_ROOT : r == 0 ? MPI_PROC_NULL : 0, inter);
  if (r >= 2) EXPECT(ib[0] == 77);
  checksum += ib[0];

  MPI_Comm merged; /* the lower half first: world {1, 0, 3, 2} */
  MPI_Intercomm_merge(inter, r >= 2, &merged);
  int merged_rank;
  MPI_Comm_rank(merged, &merged_rank);
  EXPECT(merged_rank == (r ^ 1));

  /* a 2 x 2 torus the library may reorder: peers are found with Cart_shift, and the world rank of each
   * (through the group) goes into the tag, so the tests can check the log's translation */
  MPI_Comm cart;
  const int dims[2] = {2, 2}, periods[2] = {1, 0};
  MPI_Cart_create(MPI_COMM_WORLD, 2, dims, periods, 1, &cart);
  int cart_rank, up, down;
  MPI_Comm_rank(cart, &cart_rank);
  MPI_Cart_shift(cart, 0, 1, &up, &down);
  int cart_out = r, cart_in = -1;
  MPI_Sendrecv(&cart_out, 1, MPI_INT, down, 100 + world_rank_of(cart, down), &cart_in, 1, MPI_INT, up, 100 + r, cart,
               MPI_STATUS_IGNORE);
  EXPECT(cart_in == world_rank_of(cart, up));
  MPI_Comm row;
  const int keep_second[2] = {0, 1};
  MPI_Cart_sub(cart, keep_second, &row);

  MPI_Comm graph, dist_graph, dist_graph_adjacent;
  const int ring_index[4] = {1, 2, 3, 4}, ring_edges[4] = {1, 2, 3, 0};
  MPI_Graph_create(MPI_COMM_WORLD, 4, ring_index, ring_edges, 0, &graph);
  /* weights given (not MPI_UNWEIGHTED, a sentinel address the compiler warns about reading) */
  const int me[1] = {r}, one_edge[1] = {1}, next[1] = {(r + 1) % 4}, prev[1] = {(r + 3) % 4}, weight[1] = {1};
  MPI_Dist_graph_create(MPI_COMM_WORLD, 1, me, one_edge, next, weight, MPI_INFO_NULL, 0, &dist_graph);
  MPI_Dist_graph_create_adjacent(MPI_COMM_WORLD, 1, prev, weight, 1, next, weight, MPI_INFO_NULL, 0,
                                 &dist_graph_adjacent);

  /* 4. a communicator freed while tracing is paused; the next one made may get its handle back */
  MPI_Comm parity, after_pause;
  MPI_Comm_split(MPI_COMM_WORLD, r % 2, r, &parity); /* world {0, 2} or {1, 3} */
  MPI_Pcontrol(0);
  MPI_Comm_free(&parity);
  MPI_Pcontrol(1);
  MPI_Comm_dup(MPI_COMM_WORLD, &after_pause);
  int pause_in = -1;
  MPI_Sendrecv(&r, 1, MPI_INT, r ^ 1, 70, &pause_in, 1, MPI_INT, r ^ 1, 70, after_pause, MPI_STATUS_IGNORE);
  EXPECT(pause_in == (r ^ 1));

  /* 5. each communicator used once (a barrier), then freed */
  MPI_Comm made[] = {dup,  dup_info, idup,  half,  shared, created,    created_group,       inter,
                     merged, cart,   row,  graph, dist_graph, dist_graph_adjacent, after_pause};
  const int nmade = (int)(sizeof made / sizeof made[0]);
  for (int i = 0; i < nmade; i++)
    if (made[i] != MPI_COMM_NULL) MPI_Barrier(made[i]);
  for (int i = 0; i < nmade; i++)
    if (made[i] != MPI_COMM_NULL) MPI_Comm_free(&made[i]);
  MPI_Group_free(&odd_group);
  MPI_Group_free(&group_023);
  MPI_Group_free(&world_group);

  long mine[2] = {errors, checksum}, job[2] = {0, 0};
  MPI_Reduce(mine, job, 2, MPI_LONG, MPI_SUM, 0, MPI_COMM_WORLD);
  if (r == 0) printf("coll_all: %s %ld\n", job[0] ? "FAILED" : "ok", job[1]);
  MPI_Finalize();
  return job[0] && r == 0 ? 1 : 0;
}

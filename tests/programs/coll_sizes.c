/* Every collective mpiadvise follows, blocking and non-blocking, on MPI_COMM_WORLD at each size given:
 * with Open MPI's pml monitoring writing what the library sent to each peer (--mca pml_monitoring_enable 2
 * --mca pml_monitoring_enable_output 3), the ground truth for the schedules mpiadvise derives from the
 * log (tests/mpi_collectives.cpp). The vector forms give rank r (r + 1) blocks, except Alltoallv and
 * Alltoallw: rank r sends 1 + (r + 2i) % 3 blocks to rank i, a different count to each peer. Allreduce,
 * Reduce (at the root), Alltoall, Alltoallv and Alltoallw run once more with MPI_IN_PLACE, the last two
 * with 1 + (r + i) % 3 blocks between r and i (in place, what r sends to i is what it receives from i). The element type is the largest of 8,
 * 4, 2, 1 bytes that divides the size (as mpiadvise infers it). COLL_SIZES_ONLY=TEXT runs only the calls
 * whose name contains TEXT.
 *   coll_sizes BYTES...  */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, size;
static const char *only; /* run just the calls whose name contains it */

static int wanted(const char *name) { return !only || strstr(name, only); }

static MPI_Datatype type_of(long bytes, int *element)
{
  if (bytes % 8 == 0 && bytes >= 8) return *element = 8, MPI_DOUBLE;
  if (bytes % 4 == 0 && bytes >= 4) return *element = 4, MPI_INT;
  if (bytes % 2 == 0 && bytes >= 2) return *element = 2, MPI_SHORT;
  return *element = 1, MPI_UNSIGNED_CHAR;
}

#define BOTH(name, blocking, immediate)           \
  do {                                            \
    MPI_Request request;                          \
    if (wanted("MPI_" name)) {                    \
      blocking;                                   \
    }                                             \
    if (wanted("MPI_I" name)) {                   \
      immediate;                                  \
      MPI_Wait(&request, MPI_STATUS_IGNORE);      \
    }                                             \
  } while (0)

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  only = getenv("COLL_SIZES_ONLY");
  const MPI_Comm w = MPI_COMM_WORLD;
  int *counts = malloc(sizeof(int) * size), *displs = malloc(sizeof(int) * size);
  int *a2a_send = malloc(sizeof(int) * size), *a2a_sdispl = malloc(sizeof(int) * size);
  for (int a = 1; a < argc; a++) {
    long bytes = atol(argv[a]);
    int e;
    MPI_Datatype t = type_of(bytes, &e);
    int n = (int)(bytes / e);
    /* buffers for the largest case: (size + 1) * size blocks */
    size_t cap = (size_t)(bytes > 0 ? bytes : 1) * (size_t)(size + 1) * (size_t)size + 64;
    char *sbuf = calloc(cap, 1), *rbuf = calloc(cap, 1);
    const int root_b = 1 % size, root_r = size - 1;
    int total = 0;
    for (int i = 0; i < size; i++) {
      counts[i] = n * (i + 1);
      displs[i] = total;
      total += counts[i];
    }
    for (int i = 0, at = 0; i < size; i++) { /* Alltoallv: rank r sends 1 + (r + 2i) % 3 blocks to rank i */
      a2a_send[i] = n * (1 + (rank + 2 * i) % 3);
      a2a_sdispl[i] = at;
      at += a2a_send[i];
    }
    int *a2a_recv = malloc(sizeof(int) * size), *a2a_rdispl = malloc(sizeof(int) * size);
    int *w_sdispl = malloc(sizeof(int) * size), *w_rdispl = malloc(sizeof(int) * size); /* in bytes */
    MPI_Datatype *types = malloc(sizeof(MPI_Datatype) * size);
    for (int i = 0, at = 0; i < size; i++) {
      a2a_recv[i] = n * (1 + (i + 2 * rank) % 3);
      a2a_rdispl[i] = at;
      at += a2a_recv[i];
      w_sdispl[i] = a2a_sdispl[i] * e;
      w_rdispl[i] = a2a_rdispl[i] * e;
      types[i] = t;
    }
    BOTH("Barrier", MPI_Barrier(w), MPI_Ibarrier(w, &request));
    BOTH("Bcast", MPI_Bcast(sbuf, n, t, root_b, w), MPI_Ibcast(sbuf, n, t, root_b, w, &request));
    BOTH("Reduce", MPI_Reduce(sbuf, rbuf, n, t, MPI_SUM, root_r, w),
         MPI_Ireduce(sbuf, rbuf, n, t, MPI_SUM, root_r, w, &request));
    BOTH("Allreduce", MPI_Allreduce(sbuf, rbuf, n, t, MPI_SUM, w),
         MPI_Iallreduce(sbuf, rbuf, n, t, MPI_SUM, w, &request));
    BOTH("Allreduce_in_place", MPI_Allreduce(MPI_IN_PLACE, rbuf, n, t, MPI_SUM, w),
         MPI_Iallreduce(MPI_IN_PLACE, rbuf, n, t, MPI_SUM, w, &request));
    BOTH("Reduce_in_place",
         MPI_Reduce(rank == root_r ? MPI_IN_PLACE : sbuf, rbuf, n, t, MPI_SUM, root_r, w),
         MPI_Ireduce(rank == root_r ? MPI_IN_PLACE : sbuf, rbuf, n, t, MPI_SUM, root_r, w, &request));
    BOTH("Gather", MPI_Gather(sbuf, n, t, rbuf, n, t, 0, w), MPI_Igather(sbuf, n, t, rbuf, n, t, 0, w, &request));
    BOTH("Gatherv", MPI_Gatherv(sbuf, counts[rank], t, rbuf, counts, displs, t, 0, w),
         MPI_Igatherv(sbuf, counts[rank], t, rbuf, counts, displs, t, 0, w, &request));
    BOTH("Scatter", MPI_Scatter(sbuf, n, t, rbuf, n, t, 0, w), MPI_Iscatter(sbuf, n, t, rbuf, n, t, 0, w, &request));
    BOTH("Scatterv", MPI_Scatterv(sbuf, counts, displs, t, rbuf, counts[rank], t, 0, w),
         MPI_Iscatterv(sbuf, counts, displs, t, rbuf, counts[rank], t, 0, w, &request));
    BOTH("Allgather", MPI_Allgather(sbuf, n, t, rbuf, n, t, w), MPI_Iallgather(sbuf, n, t, rbuf, n, t, w, &request));
    BOTH("Allgatherv", MPI_Allgatherv(sbuf, counts[rank], t, rbuf, counts, displs, t, w),
         MPI_Iallgatherv(sbuf, counts[rank], t, rbuf, counts, displs, t, w, &request));
    BOTH("Alltoall", MPI_Alltoall(sbuf, n, t, rbuf, n, t, w), MPI_Ialltoall(sbuf, n, t, rbuf, n, t, w, &request));
    BOTH("Alltoallv", MPI_Alltoallv(sbuf, a2a_send, a2a_sdispl, t, rbuf, a2a_recv, a2a_rdispl, t, w),
         MPI_Ialltoallv(sbuf, a2a_send, a2a_sdispl, t, rbuf, a2a_recv, a2a_rdispl, t, w, &request));
    BOTH("Alltoallw", MPI_Alltoallw(sbuf, a2a_send, w_sdispl, types, rbuf, a2a_recv, w_rdispl, types, w),
         MPI_Ialltoallw(sbuf, a2a_send, w_sdispl, types, rbuf, a2a_recv, w_rdispl, types, w, &request));
    for (int i = 0, at = 0; i < size; i++) { /* in place: symmetric counts */
      a2a_recv[i] = n * (1 + (rank + i) % 3);
      a2a_rdispl[i] = at;
      at += a2a_recv[i];
      w_rdispl[i] = a2a_rdispl[i] * e;
    }
    BOTH("Alltoall_in_place", MPI_Alltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, rbuf, n, t, w),
         MPI_Ialltoall(MPI_IN_PLACE, 0, MPI_DATATYPE_NULL, rbuf, n, t, w, &request));
    BOTH("Alltoallv_in_place",
         MPI_Alltoallv(MPI_IN_PLACE, NULL, NULL, MPI_DATATYPE_NULL, rbuf, a2a_recv, a2a_rdispl, t, w),
         MPI_Ialltoallv(MPI_IN_PLACE, NULL, NULL, MPI_DATATYPE_NULL, rbuf, a2a_recv, a2a_rdispl, t, w, &request));
    BOTH("Alltoallw_in_place", MPI_Alltoallw(MPI_IN_PLACE, NULL, NULL, NULL, rbuf, a2a_recv, w_rdispl, types, w),
         MPI_Ialltoallw(MPI_IN_PLACE, NULL, NULL, NULL, rbuf, a2a_recv, w_rdispl, types, w, &request));
    BOTH("Reduce_scatter", MPI_Reduce_scatter(sbuf, rbuf, counts, t, MPI_SUM, w),
         MPI_Ireduce_scatter(sbuf, rbuf, counts, t, MPI_SUM, w, &request));
    BOTH("Reduce_scatter_block", MPI_Reduce_scatter_block(sbuf, rbuf, n, t, MPI_SUM, w),
         MPI_Ireduce_scatter_block(sbuf, rbuf, n, t, MPI_SUM, w, &request));
    BOTH("Scan", MPI_Scan(sbuf, rbuf, n, t, MPI_SUM, w), MPI_Iscan(sbuf, rbuf, n, t, MPI_SUM, w, &request));
    BOTH("Exscan", MPI_Exscan(sbuf, rbuf, n, t, MPI_SUM, w), MPI_Iexscan(sbuf, rbuf, n, t, MPI_SUM, w, &request));
    free(a2a_recv);
    free(a2a_rdispl);
    free(w_sdispl);
    free(w_rdispl);
    free(types);
    free(sbuf);
    free(rbuf);
  }
  if (rank == 0) printf("coll_sizes: ok\n");
  MPI_Finalize();
  return 0;
}

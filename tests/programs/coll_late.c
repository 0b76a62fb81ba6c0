/* A loop of one collective between computations, one rank computing longer than the others: how long each
 * rank waits in the collective depends on the algorithm the library runs (tests/mpi_collectives.cpp,
 * bench/). Doubles, MPI_SUM, MPI_COMM_WORLD, root 0.
 *   coll_late CALL BYTES ITERATIONS MS [LATE_RANK EXTRA_MS]
 * CALL is allreduce, reduce, bcast, allgather (BYTES from each rank) or alltoall (BYTES from each rank in
 * all, BYTES / size to each peer); every rank
 * computes MS milliseconds before each call, LATE_RANK MS + EXTRA_MS. Prints the loop's time from rank 0. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "compute.h"

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (argc < 5) {
    if (rank == 0) fprintf(stderr, "usage: coll_late CALL BYTES ITERATIONS MS [LATE_RANK EXTRA_MS]\n");
    MPI_Finalize();
    return 2;
  }
  const char *call = argv[1];
  int n = (int)(atol(argv[2]) / 8), iterations = atoi(argv[3]);
  double ms = atof(argv[4]);
  int late = argc > 5 ? atoi(argv[5]) : -1;
  double extra = argc > 6 ? atof(argv[6]) : 0;
  double *a = calloc((size_t)n * size + 1, sizeof(double)), *b = calloc((size_t)n * size + 1, sizeof(double));
  for (int i = 0; i < n; i++) a[i] = rank + i;
  double t0 = MPI_Wtime();
  for (int it = 0; it < iterations; it++) {
    compute_ms(rank == late ? ms + extra : ms);
    if (strcmp(call, "allreduce") == 0) MPI_Allreduce(a, b, n, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
    else if (strcmp(call, "reduce") == 0) MPI_Reduce(a, b, n, MPI_DOUBLE, MPI_SUM, 0, MPI_COMM_WORLD);
    else if (strcmp(call, "bcast") == 0) MPI_Bcast(a, n, MPI_DOUBLE, 0, MPI_COMM_WORLD);
    else if (strcmp(call, "allgather") == 0) MPI_Allgather(a, n, MPI_DOUBLE, b, n, MPI_DOUBLE, MPI_COMM_WORLD);
    else if (strcmp(call, "alltoall") == 0) MPI_Alltoall(a, n / size, MPI_DOUBLE, b, n / size, MPI_DOUBLE, MPI_COMM_WORLD);
    else {
      if (rank == 0) fprintf(stderr, "coll_late: unknown call %s\n", call);
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  }
  double t = MPI_Wtime() - t0;
  if (rank == 0) printf("coll_late: %s %ld bytes x %d: %.6f s\n", call, (long)n * 8, iterations, t);
  free(a);
  free(b);
  MPI_Finalize();
  return 0;
}

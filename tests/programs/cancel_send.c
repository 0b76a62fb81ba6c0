/* A send whose MPI_Cancel succeeded, as a log records it. MPI allows cancelling a send, but neither Open
 * MPI 4.1 nor MPICH 4.0 carries it out here (an MPI_Issend never received, then cancelled, waits for ever
 * in MPI_Wait under both), so this program stands in for an MPI that does: it answers the tracer's
 * MPI_Test_cancelled itself (PMPI_Test_cancelled, linked with -rdynamic so that the tracer's call finds it)
 * for the completion of its first send, and MPI's own answer otherwise. Run with 2 ranks.
 *   cancel_send
 * Rank 0: MPI_Isend (tag 5) and MPI_Cancel (its Wait's status "cancelled"), MPI_Send (tag 6), MPI_Send (tag 5). Rank 1:
 * MPI_Recv (tag 6), MPI_Recv (tag 5). MPI delivers the first tag 5 message to rank 1 (nothing was
 * cancelled); the log says it is the second. Rank 0 prints "cancel_send: ok" where its answer was asked. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

static int pretend_cancelled = 0, asked = 0;

int PMPI_Test_cancelled(const MPI_Status *status, int *flag)
{
  if (pretend_cancelled) {
    asked++;
    *flag = 1;
    return MPI_SUCCESS;
  }
  int (*real)(const MPI_Status *, int *) = (int (*)(const MPI_Status *, int *))dlsym(RTLD_NEXT, "PMPI_Test_cancelled");
  if (!real) abort();
  return real(status, flag);
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size != 2) {
    if (rank == 0) fprintf(stderr, "cancel_send: run with 2 ranks\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  int buf = 0;
  if (rank == 0) {
    MPI_Request req;
    MPI_Status st;
    MPI_Isend(&buf, 1, MPI_INT, 1, 5, MPI_COMM_WORLD, &req);
    MPI_Cancel(&req);  /* an eager send: MPI completes it, cancelled or not */
    pretend_cancelled = 1;
    MPI_Wait(&req, &st);
    pretend_cancelled = 0;
    MPI_Send(&buf, 1, MPI_INT, 1, 6, MPI_COMM_WORLD);
    MPI_Send(&buf, 1, MPI_INT, 1, 5, MPI_COMM_WORLD);
  } else {
    MPI_Recv(&buf, 1, MPI_INT, 0, 6, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Recv(&buf, 1, MPI_INT, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) printf("cancel_send: %s\n", asked ? "ok" : "not asked");
  MPI_Finalize();
  return 0;
}

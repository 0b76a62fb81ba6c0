/* Calls MPI refuses, for the test that a traced program gets the same refusals as the untraced one and
 * goes on (tests/mpi_answers.cpp). With MPI_ERRORS_RETURN on MPI_COMM_WORLD, every rank makes calls
 * with arguments no MPI library accepts: a null pointer and MPI_DATATYPE_NULL as the datatype of a
 * send, a receive and a non-blocking send, a rank beyond the communicator, a negative count, a root
 * beyond the communicator, a null request in MPI_Wait's place. Each line printed names the call and the
 * error class MPI returned, then a correct exchange shows the program carries on. Run on 2 ranks. */
#include <mpi.h>
#include <stdio.h>

static int rank = -1;

static void report(const char *what, int rc)
{
  int cls = -1;
  if (rc != MPI_SUCCESS) MPI_Error_class(rc, &cls);
  printf("rank %d %s: %s (class %d)\n", rank, what, rc == MPI_SUCCESS ? "accepted" : "refused", cls);
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int size = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  int peer = rank ^ 1, buf[4] = {rank, rank, rank, rank};
  MPI_Request req = MPI_REQUEST_NULL;

  report("MPI_Send, null datatype", MPI_Send(buf, 4, (MPI_Datatype)0, peer, 1, MPI_COMM_WORLD));
  report("MPI_Send, MPI_DATATYPE_NULL", MPI_Send(buf, 4, MPI_DATATYPE_NULL, peer, 1, MPI_COMM_WORLD));
  report("MPI_Recv, null datatype",
         MPI_Recv(buf, 4, (MPI_Datatype)0, peer, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE));
  report("MPI_Isend, null datatype", MPI_Isend(buf, 4, (MPI_Datatype)0, peer, 1, MPI_COMM_WORLD, &req));
  report("MPI_Send, rank beyond the communicator", MPI_Send(buf, 4, MPI_INT, size + 3, 1, MPI_COMM_WORLD));
  report("MPI_Send, negative count", MPI_Send(buf, -4, MPI_INT, peer, 1, MPI_COMM_WORLD));
  report("MPI_Bcast, root beyond the communicator", MPI_Bcast(buf, 4, MPI_INT, size + 3, MPI_COMM_WORLD));
  report("MPI_Wait, null request pointer", MPI_Wait(NULL, MPI_STATUS_IGNORE));

  int got[4] = {-1, -1, -1, -1};
  int rc = MPI_Sendrecv(buf, 4, MPI_INT, peer, 2, got, 4, MPI_INT, peer, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  printf("rank %d then a correct exchange: %s, got %d from rank %d\n", rank, rc == MPI_SUCCESS ? "ok" : "failed",
         got[0], peer);
  MPI_Finalize();
  return 0;
}

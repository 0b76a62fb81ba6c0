/* A communicator made while tracing is paused (MPI_Pcontrol(0)) and used after it resumes: its traffic
 * must still name world ranks. Run with 4 ranks. */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int rank;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm half, gone;
  MPI_Pcontrol(0);
  MPI_Comm_dup(MPI_COMM_WORLD, &gone);
  MPI_Comm_free(&gone);
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half); /* {0, 2} and {1, 3} */
  MPI_Pcontrol(1);
  int hrank, v = rank;
  MPI_Comm_rank(half, &hrank);
  if (hrank == 0) MPI_Send(&v, 1, MPI_INT, 1, 42, half);
  else MPI_Recv(&v, 1, MPI_INT, 0, 42, half, MPI_STATUS_IGNORE);
  MPI_Comm_free(&half);
  if (rank == 0) printf("paused_comm: ok\n");
  MPI_Finalize();
  return 0;
}

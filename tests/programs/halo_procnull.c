/* A 1-D halo exchange without wrap-around: the ranks at the ends send to and receive from
 * MPI_PROC_NULL, for which Open MPI returns one request object (ompi_request_empty) every time, so
 * one MPI_Waitall names that handle up to four times. Then, on every rank, two sends to MPI_PROC_NULL
 * in flight at once, completed by MPI_Waitall, MPI_Waitany and MPI_Waitsome.
 * Usage: halo_procnull [iterations] (default 5). Prints "halo_procnull: ok" from rank 0. */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int rank, size, errors = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int iterations = argc > 1 ? atoi(argv[1]) : 5;
  int left = rank > 0 ? rank - 1 : MPI_PROC_NULL, right = rank < size - 1 ? rank + 1 : MPI_PROC_NULL;
  double to_left[4], to_right[4], from_left[4] = {0}, from_right[4] = {0};

  for (int it = 0; it < iterations; it++) {
    for (int i = 0; i < 4; i++) to_left[i] = to_right[i] = rank * 100 + it;
    MPI_Request rq[4];
    MPI_Status st[4];
    MPI_Irecv(from_left, 4, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, &rq[0]);
    MPI_Irecv(from_right, 4, MPI_DOUBLE, right, 2, MPI_COMM_WORLD, &rq[1]);
    MPI_Isend(to_right, 4, MPI_DOUBLE, right, 1, MPI_COMM_WORLD, &rq[2]);
    MPI_Isend(to_left, 4, MPI_DOUBLE, left, 2, MPI_COMM_WORLD, &rq[3]);
    MPI_Waitall(4, rq, st);
    if (left != MPI_PROC_NULL && from_left[0] != left * 100 + it) errors++;
    if (right != MPI_PROC_NULL && from_right[0] != right * 100 + it) errors++;
#ifdef OPEN_MPI /* MPICH 4.0.2 gives MPI_SOURCE 0 here, traced or not (measured) */
    if (left == MPI_PROC_NULL && st[0].MPI_SOURCE != MPI_PROC_NULL) errors++;
    if (right == MPI_PROC_NULL && st[1].MPI_SOURCE != MPI_PROC_NULL) errors++;
#endif
  }

  /* two sends to MPI_PROC_NULL in flight at once, three ways of completing them */
  int x = rank, index, done, indices[2];
  MPI_Request two[2];
  MPI_Isend(&x, 1, MPI_INT, MPI_PROC_NULL, 7, MPI_COMM_WORLD, &two[0]);
  MPI_Isend(&x, 1, MPI_INT, MPI_PROC_NULL, 8, MPI_COMM_WORLD, &two[1]);
  MPI_Waitall(2, two, MPI_STATUSES_IGNORE);
  MPI_Isend(&x, 1, MPI_INT, MPI_PROC_NULL, 9, MPI_COMM_WORLD, &two[0]);
  MPI_Isend(&x, 1, MPI_INT, MPI_PROC_NULL, 10, MPI_COMM_WORLD, &two[1]);
  MPI_Waitany(2, two, &index, MPI_STATUS_IGNORE);
  MPI_Waitany(2, two, &index, MPI_STATUS_IGNORE);
  MPI_Isend(&x, 1, MPI_INT, MPI_PROC_NULL, 11, MPI_COMM_WORLD, &two[0]);
  MPI_Isend(&x, 1, MPI_INT, MPI_PROC_NULL, 12, MPI_COMM_WORLD, &two[1]);
  for (int left_to_complete = 2; left_to_complete > 0; left_to_complete -= done) {
    MPI_Waitsome(2, two, &done, indices, MPI_STATUSES_IGNORE);
    if (done == MPI_UNDEFINED) break;
  }

  int all = 0;
  MPI_Reduce(&errors, &all, 1, MPI_INT, MPI_SUM, 0, MPI_COMM_WORLD);
  if (rank == 0) printf("halo_procnull: %s\n", all ? "FAILED" : "ok");
  MPI_Finalize();
  return all ? 1 : 0;
}

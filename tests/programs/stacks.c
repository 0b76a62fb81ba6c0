/* One MPI call reached through chains of functions that put it at the same place of the stack, and at
 * other places: three callers of one helper, each with a frame of the same size, taken in an order that
 * is no cycle of two; and a recursion that reaches it at several depths. The tag of each call says the
 * chain it came through (1, 2, 3: via_a, via_b, via_c; 10 + L: through nested with L levels below the
 * first), so that a test can check each call's site at MPIADVISE_STACK_DEPTH=N.
 *   stacks [iterations]      (default 60; 2 ranks) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) static void exchange(int *v, int peer, int tag)
{
  MPI_Sendrecv_replace(v, 1, MPI_INT, peer, tag, peer, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
}

__attribute__((noinline)) static void via_a(int *v, int peer) { exchange(v, peer, 1); }
__attribute__((noinline)) static void via_b(int *v, int peer) { exchange(v, peer, 2); }
__attribute__((noinline)) static void via_c(int *v, int peer) { exchange(v, peer, 3); }

__attribute__((noinline)) static void nested(int *v, int peer, int below, int levels)
{
  if (below == 0) exchange(v, peer, 10 + levels);
  else nested(v, peer, below - 1, levels);
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int iterations = argc > 1 ? atoi(argv[1]) : 60;
  int peer = rank ^ 1, v = rank;
  if (peer >= size) peer = MPI_PROC_NULL;
  for (int i = 0; i < iterations; i++) {
    switch (((unsigned)i * 2654435761u >> 13) % 4) { /* a fixed order, in no short cycle */
      case 0: via_a(&v, peer); break;
      case 1: via_b(&v, peer); break;
      case 2: via_c(&v, peer); break;
      default: nested(&v, peer, i / 4 % 4, i / 4 % 4); break;
    }
    v += i;
  }
  if (rank == 0) printf("stacks: %d iterations, result %d\n", iterations, v);
  MPI_Finalize();
  return 0;
}

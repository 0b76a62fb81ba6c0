/* One MPI call reached through chains of functions that put it at the same place of the stack, and at
 * other places, so that a test can check each call's site at MPIADVISE_STACK_DEPTH=4 (the tracer
 * remembers where a stack's return addresses were: libtrace/callsite.c):
 *   - three callers of one helper, each with a frame of the same size, in an order that is no cycle of two
 *     (tags 1, 2, 3: via_a, via_b, via_c);
 *   - a recursion that reaches it at several depths (tag 10 + L: L levels of nested below the first);
 *   - two callers of the same size of one middle function, so that the chains differ only in their third
 *     frame (tags 6, 7: outer_a, outer_b);
 *   - a helper whose frame is realigned to 32 bytes (a local of that alignment, as vectorised code has),
 *     called through one call instruction by two callers whose frames differ by 16 bytes: entered 16 bytes
 *     apart, its realigned frame can be at the same place for both, with its return address 16 bytes
 *     apart (and the other's left in the unwritten part of the deeper frame); called so from two
 *     places whose stacks differ by 16 bytes, so that one of them is that case whatever the alignment of
 *     the stack at main (tags 20 + k from main, 30 + k from shifted; k 0 near_caller, 1 far_caller);
 *   - the same with a helper whose array of variable length its callers size (tags 40, 41).
 * Every call's tag says the chain it came through. Each call of a chain is followed by a statement, so
 * that no compiler turns it into a jump (a sibling call would take its frame out of the chain).
 *   stacks [iterations]      (default 60; 2 ranks) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

#define NOT_LAST __asm__ volatile("")

__attribute__((noinline)) static void exchange(int *v, int peer, int tag)
{
  MPI_Sendrecv_replace(v, 1, MPI_INT, peer, tag, peer, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  NOT_LAST;
}

__attribute__((noinline)) static void via_a(int *v, int peer) { exchange(v, peer, 1); NOT_LAST; }
__attribute__((noinline)) static void via_b(int *v, int peer) { exchange(v, peer, 2); NOT_LAST; }
__attribute__((noinline)) static void via_c(int *v, int peer) { exchange(v, peer, 3); NOT_LAST; }

__attribute__((noinline)) static void nested(int *v, int peer, int below, int levels)
{
  if (below == 0) exchange(v, peer, 10 + levels);
  else nested(v, peer, below - 1, levels);
  NOT_LAST;
}

__attribute__((noinline)) static void mid(int *v, int peer, int tag) { exchange(v, peer, tag); NOT_LAST; }
__attribute__((noinline)) static void outer_a(int *v, int peer) { mid(v, peer, 6); NOT_LAST; }
__attribute__((noinline)) static void outer_b(int *v, int peer) { mid(v, peer, 7); NOT_LAST; }

__attribute__((noinline)) static void aligned_exchange(int *v, int peer, int tag)
{
  _Alignas(32) volatile int spill[8];
  spill[0] = *v;
  MPI_Sendrecv_replace(v, 1, MPI_INT, peer, tag, peer, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  *v += spill[0] - spill[0];
}
__attribute__((noinline)) static void near_caller(int *v, int peer, int tag) { aligned_exchange(v, peer, tag); NOT_LAST; }
__attribute__((noinline)) static void far_caller(int *v, int peer, int tag)
{
  volatile char pad[16];
  pad[0] = 0;
  aligned_exchange(v, peer, tag);
  NOT_LAST;
  (void)pad[0];
}
/* both callers through one call instruction, so that the chains differ in their second frame only */
__attribute__((noinline)) static void alternate(int *v, int peer, int base, int iterations)
{
  void (*const callers[2])(int *, int, int) = {near_caller, far_caller};
  for (int i = 0; i < iterations; i++) callers[i & 1](v, peer, base + (i & 1));
  NOT_LAST;
}
/* A helper with an array of variable length, which its callers size so that its frame ends at the same
 * place for both (the deeper caller asks for 16 bytes less): its return address, 16 bytes apart, is found
 * through its frame pointer (tags 40 + k; k 0 vla_near, 1 vla_far). */
__attribute__((noinline)) static void vla_exchange(int *v, int peer, int tag, int bytes)
{
  volatile char scratch[bytes];
  scratch[0] = (char)*v;
  MPI_Sendrecv_replace(v, 1, MPI_INT, peer, tag, peer, tag, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  *v += scratch[0] - scratch[0];
}
__attribute__((noinline)) static void vla_near(int *v, int peer, int tag) { vla_exchange(v, peer, tag, 48); NOT_LAST; }
__attribute__((noinline)) static void vla_far(int *v, int peer, int tag)
{
  volatile char pad[16];
  pad[0] = 0;
  vla_exchange(v, peer, tag, 32);
  NOT_LAST;
  (void)pad[0];
}
__attribute__((noinline)) static void vla_alternate(int *v, int peer, int iterations)
{
  void (*const callers[2])(int *, int, int) = {vla_near, vla_far};
  for (int i = 0; i < iterations; i++) callers[i & 1](v, peer, 40 + (i & 1));
  NOT_LAST;
}

__attribute__((noinline)) static void shifted(int *v, int peer, int iterations)
{
  alternate(v, peer, 30, iterations); /* 16 bytes deeper than from main: a return address and alignment */
  NOT_LAST;
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
  for (int i = 0; i < iterations; i++) {
    if (i & 1) outer_b(&v, peer);
    else outer_a(&v, peer);
  }
  alternate(&v, peer, 20, iterations);
  shifted(&v, peer, iterations);
  vla_alternate(&v, peer, iterations);
  if (rank == 0) printf("stacks: %d iterations of each, result %d\n", iterations, v);
  MPI_Finalize();
  return 0;
}

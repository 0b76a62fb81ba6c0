/* A program that defines functions of its own under names the tracer uses inside (mpa_thread_attach,
 * mpa_finish), and is linked with -rdynamic, as programs that load plugins are: its functions are in its
 * dynamic symbol table, first in the order the dynamic linker looks names up. Each counts its calls; the
 * program calls each once and prints the counts, which are the same traced and untraced only when
 * the tracer never calls them for its own.
 *   clash [iterations]      (default 10; any number of ranks) */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int attach_calls, finish_calls;
void *mpa_thread_attach(void);
void mpa_finish(void);
void *mpa_thread_attach(void)
{
  attach_calls++;
  return NULL;
}
void mpa_finish(void) { finish_calls++; }

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int iterations = argc > 1 ? atoi(argv[1]) : 10;
  int v = rank, right = (rank + 1) % size, left = (rank + size - 1) % size;
  for (int i = 0; i < iterations; i++)
    MPI_Sendrecv_replace(&v, 1, MPI_INT, right, 1, left, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
  (void)mpa_thread_attach();
  mpa_finish();
  if (rank == 0) printf("clash: value %d, own functions called %d and %d times\n", v, attach_calls, finish_calls);
  MPI_Finalize();
  return 0;
}

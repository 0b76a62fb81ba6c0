/* make bench: a 1-D periodic halo exchange, as a regular application's communication looks.
 *
 *   halo ITERS CELLS
 *
 * Each iteration: MPI_Irecv from both neighbours, MPI_Isend to both, MPI_Waitall(4), a 3-point stencil
 * over CELLS local cells, and an MPI_Allreduce of one double (the residual): 6 intercepted calls.
 * Each rank prints the BENCH line of p2p_loop.c (the loop is not timed in blocks: median_ns = loop_ns). */
#include "bench_common.h" /* first: it defines _GNU_SOURCE */

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
  if (argc != 3) {
    fprintf(stderr, "usage: halo ITERS CELLS\n");
    return 2;
  }
  long iters = atol(argv[1]);
  int n = atoi(argv[2]);
  if (n < 2) n = 2;
  long long traced = 0;

  MPI_Init(&argc, &argv);
  traced++;
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  int left = (rank + size - 1) % size, right = (rank + 1) % size;

  double *u = calloc((size_t)n + 2, sizeof *u), *v = calloc((size_t)n + 2, sizeof *v);
  if (!u || !v) MPI_Abort(MPI_COMM_WORLD, 1);
  for (int i = 1; i <= n; i++) u[i] = (double)((rank * n + i) % 17);

  MPI_Barrier(MPI_COMM_WORLD);
  traced++;
  long long c0 = bench_thread_cpu_ns(), t0 = bench_now_ns();
  double residual = 0;
  for (long it = 0; it < iters; it++) {
    MPI_Request req[4];
    MPI_Irecv(&u[0], 1, MPI_DOUBLE, left, 1, MPI_COMM_WORLD, &req[0]);
    MPI_Irecv(&u[n + 1], 1, MPI_DOUBLE, right, 2, MPI_COMM_WORLD, &req[1]);
    MPI_Isend(&u[1], 1, MPI_DOUBLE, left, 2, MPI_COMM_WORLD, &req[2]);
    MPI_Isend(&u[n], 1, MPI_DOUBLE, right, 1, MPI_COMM_WORLD, &req[3]);
    MPI_Waitall(4, req, MPI_STATUSES_IGNORE);
    double local = 0;
    for (int i = 1; i <= n; i++) {
      v[i] = 0.25 * u[i - 1] + 0.5 * u[i] + 0.25 * u[i + 1];
      local += (v[i] - u[i]) * (v[i] - u[i]);
    }
    double *t = u;
    u = v;
    v = t;
    MPI_Allreduce(&local, &residual, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  }
  long long t1 = bench_now_ns(), c1 = bench_thread_cpu_ns();
  traced += 6 * iters;

  if (rank == 0 && residual < 0) printf("impossible\n"); /* keep the computation */
  free(u);
  free(v);
  MPI_Finalize();
  traced++;
  long long cpu_process_us, cpu_main_us;
  bench_cpu_us(&cpu_process_us, &cpu_main_us);
  printf("BENCH rank=%d loop_calls=%ld loop_ns=%lld median_ns=%lld loop_cpu_ns=%lld traced_calls=%lld "
         "vmhwm_kib=%ld cpu_process_us=%lld cpu_main_us=%lld\n",
         rank, 6 * iters, t1 - t0, t1 - t0, c1 - c0, traced, bench_vmhwm_kib(), cpu_process_us, cpu_main_us);
  return 0;
}

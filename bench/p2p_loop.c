/* make bench: a loop of MPI_Irecv / MPI_Isend / MPI_Waitall(2) with 8-byte messages, or a polling loop.
 *
 *   p2p_loop self ITERS WARMUP   one rank (or each rank) sends to itself
 *   p2p_loop pair ITERS WARMUP   ranks 2k and 2k+1 exchange
 *   p2p_loop poll ITERS WARMUP   each rank polls for a message to itself that is not sent yet: an
 *                                MPI_Irecv, POLLS MPI_Test and POLLS MPI_Iprobe that find nothing, then
 *                                MPI_Send and MPI_Wait (2 * POLLS + 3 calls an iteration, most of them
 *                                polls: the pattern of a code that polls with MPI_Test or MPI_Iprobe)
 *
 * After WARMUP iterations and a barrier, ITERS iterations are timed with CLOCK_MONOTONIC. Each rank prints
 *   BENCH rank=R loop_calls=C loop_ns=N median_ns=M loop_cpu_ns=L traced_calls=T vmhwm_kib=H
 *         cpu_process_us=P cpu_main_us=U
 * (on one line). loop_calls: intercepted calls inside the timed loop; loop_ns: its time; median_ns: the
 * same from the median of 10 blocks (robust to a time slice lost to another process); loop_cpu_ns: the
 * main thread's CPU time over the loop (the writer thread's is not in it); traced_calls: every
 * call of this program that the tracer intercepts (Init, Barrier, the loop and its warm-up, Finalize);
 * vmhwm_kib: VmHWM after MPI_Finalize; cpu_process_us / cpu_main_us: CPU time of every thread of the
 * process (joined ones included) and of the main thread, after MPI_Finalize. */
#include "bench_common.h" /* first: it defines _GNU_SOURCE */

#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

enum { POLLS = 50 };

static void step(int peer, double *in, const double *out, MPI_Request req[2])
{
  MPI_Irecv(in, 1, MPI_DOUBLE, peer, 7, MPI_COMM_WORLD, &req[0]);
  MPI_Isend(out, 1, MPI_DOUBLE, peer, 7, MPI_COMM_WORLD, &req[1]);
  MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
}

/* Returns the unsuccessful polls it made (every one, unless the library misbehaves) through *misses. */
static void poll_step(int self, double *in, const double *out, MPI_Request req[2], long *misses)
{
  int flag = 0;
  MPI_Irecv(in, 1, MPI_DOUBLE, self, 7, MPI_COMM_WORLD, &req[0]);
  for (int i = 0; i < POLLS; i++) {
    MPI_Test(&req[0], &flag, MPI_STATUS_IGNORE);
    *misses += !flag;
  }
  for (int i = 0; i < POLLS; i++) {
    MPI_Iprobe(self, 8, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE);
    *misses += !flag;
  }
  MPI_Send(out, 1, MPI_DOUBLE, self, 7, MPI_COMM_WORLD);
  MPI_Wait(&req[0], MPI_STATUS_IGNORE);
}

int main(int argc, char **argv)
{
  if (argc != 4 || (strcmp(argv[1], "self") && strcmp(argv[1], "pair") && strcmp(argv[1], "poll"))) {
    fprintf(stderr, "usage: p2p_loop self|pair|poll ITERS WARMUP\n");
    return 2;
  }
  int pair = !strcmp(argv[1], "pair"), poll = !strcmp(argv[1], "poll");
  const long calls_per_iter = poll ? 2 * POLLS + 3 : 3;
  long misses = 0;
  long iters = atol(argv[2]), warmup = atol(argv[3]);
  long long traced = 0;

  MPI_Init(&argc, &argv);
  traced++;
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (pair && size % 2) {
    if (rank == 0) fprintf(stderr, "p2p_loop pair: needs an even number of ranks\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  int peer = pair ? rank ^ 1 : rank;
  double in = 0, out = rank;
  MPI_Request req[2];

  for (long i = 0; i < warmup; i++) {
    if (poll) poll_step(peer, &in, &out, req, &misses);
    else step(peer, &in, &out, req);
  }
  traced += calls_per_iter * warmup;
  MPI_Barrier(MPI_COMM_WORLD);
  traced++;

  /* Timed in BLOCKS blocks: loop_ns is the whole loop; median_ns is the median block's time per
   * iteration times ITERS, which a time slice lost to another process on a shared machine does not
   * move. */
  enum { BLOCKS = 10 };
  double per_iter[BLOCKS];
  long long c0 = bench_thread_cpu_ns();
  long long t0 = bench_now_ns(), tb = t0;
  long done = 0;
  for (int b = 0; b < BLOCKS; b++) {
    long n = b == BLOCKS - 1 ? iters - done : iters / BLOCKS;
    for (long i = 0; i < n; i++) {
      out = (double)(done + i);
      if (poll) poll_step(peer, &in, &out, req, &misses);
      else step(peer, &in, &out, req);
    }
    long long te = bench_now_ns();
    per_iter[b] = n > 0 ? (double)(te - tb) / (double)n : 0;
    tb = te;
    done += n;
  }
  long long t1 = tb, c1 = bench_thread_cpu_ns();
  traced += calls_per_iter * iters;
  if (poll && misses != 2L * POLLS * (iters + warmup) && rank == 0)
    fprintf(stderr, "p2p_loop poll: %ld of %ld polls found something\n", 2L * POLLS * (iters + warmup) - misses,
            2L * POLLS * (iters + warmup));
  qsort(per_iter, BLOCKS, sizeof per_iter[0], cmp_double);
  long long median_ns = (long long)((per_iter[BLOCKS / 2 - 1] + per_iter[BLOCKS / 2]) / 2 * (double)iters);

  MPI_Finalize();
  traced++;
  long long cpu_process_us, cpu_main_us;
  bench_cpu_us(&cpu_process_us, &cpu_main_us);
  printf("BENCH rank=%d loop_calls=%ld loop_ns=%lld median_ns=%lld loop_cpu_ns=%lld traced_calls=%lld "
         "vmhwm_kib=%ld cpu_process_us=%lld cpu_main_us=%lld\n",
         rank, calls_per_iter * iters, t1 - t0, median_ns, c1 - c0, traced, bench_vmhwm_kib(), cpu_process_us,
         cpu_main_us);
  return 0;
}

/* make bench: what the primitives on the tracer's per-call path cost on this machine, to read the
 * per-call figures against. Prints
 *   CLOCK rdtsc_ns=A clock_gettime_ns=B lock_add_ns=C xchg_lock_unlock_ns=D
 * rdtsc: one read of the time stamp counter (the tracer reads the event clock twice per call);
 * lock_add: one atomic add (as on a shared counter); xchg_lock_unlock: a test-and-set lock taken and
 * released. Each is the best of 5 timings of 2,000,000 back-to-back operations. */
#include "bench_common.h" /* first: it defines _GNU_SOURCE */

#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

#define N 2000000

static uint64_t g_counter;
static atomic_flag g_flag = ATOMIC_FLAG_INIT;
static volatile uint64_t g_sink;

static double best_of(int what)
{
  double best = 1e30;
  for (int rep = 0; rep < 5; rep++) {
    uint64_t s = 0;
    long long a = bench_now_ns();
    for (int i = 0; i < N; i++) {
      switch (what) {
#if defined(__x86_64__) || defined(__i386__)
      case 0: s += __rdtsc(); break;
#else
      case 0: s += (uint64_t)bench_now_ns(); break;
#endif
      case 1: s += (uint64_t)bench_now_ns(); break;
      case 2: __atomic_fetch_add(&g_counter, 1, __ATOMIC_RELAXED); break;
      case 3:
        while (atomic_flag_test_and_set_explicit(&g_flag, memory_order_acquire)) { }
        atomic_flag_clear_explicit(&g_flag, memory_order_release);
        break;
      }
      __asm__ volatile("" ::: "memory");
    }
    long long b = bench_now_ns();
    g_sink = s;
    double per = (double)(b - a) / N;
    if (per < best) best = per;
  }
  return best;
}

int main(void)
{
  printf("CLOCK rdtsc_ns=%.1f clock_gettime_ns=%.1f lock_add_ns=%.1f xchg_lock_unlock_ns=%.1f\n", best_of(0),
         best_of(1), best_of(2), best_of(3));
  return 0;
}

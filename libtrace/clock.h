/* The event clock. The time stamp counter where the kernel itself trusts it (clocksource "tsc", with
 * constant_tsc and nonstop_tsc): about 10 ns a read here, against 25 ns for clock_gettime. Otherwise
 * CLOCK_MONOTONIC. A tick of the log is the counter divided by 2^mpa_tick_shift (mpa_clock_init); each
 * chunk carries a (tick, CLOCK_MONOTONIC ns) pair read together, from which the reader converts ticks to
 * ns. */
#ifndef MPIADVISE_CLOCK_H
#define MPIADVISE_CLOCK_H

#include <stdint.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

/* read on every call: hidden, so that the library reads them directly rather than through its GOT */
extern int mpa_clock_is_tsc __attribute__((visibility("hidden")));
extern unsigned mpa_tick_shift __attribute__((visibility("hidden")));

static inline uint64_t mpa_monotonic_ns(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static inline uint64_t mpa_now(void)
{
#if defined(__x86_64__) || defined(__i386__)
  if (mpa_clock_is_tsc) return __rdtsc() >> mpa_tick_shift;
#endif
  return mpa_monotonic_ns();
}

/* Chooses the clock; returns its name ("tsc" or "monotonic"). */
const char *mpa_clock_init(void);
/* A (tick, ns) pair read as close together as possible. */
void mpa_clock_sync(uint64_t *tick, uint64_t *ns);
/* Ticks per ns, measured once over 2 ms at the first call (1 for CLOCK_MONOTONIC). */
double mpa_clock_ticks_per_ns(void);

#endif

/* The event clock. The time stamp counter where the kernel itself trusts it (clocksource "tsc", with
 * constant_tsc and nonstop_tsc): about 10 ns a read here, against 25 ns for clock_gettime. Otherwise
 * CLOCK_MONOTONIC. Ticks go into the log as they are; each chunk carries a (tick, CLOCK_MONOTONIC ns)
 * pair read together, from which the reader converts ticks to ns. */
#ifndef MPIADVISE_CLOCK_H
#define MPIADVISE_CLOCK_H

#include <stdint.h>
#include <time.h>
#if defined(__x86_64__) || defined(__i386__)
#include <x86intrin.h>
#endif

extern int mpa_clock_is_tsc;

static inline uint64_t mpa_monotonic_ns(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

static inline uint64_t mpa_now(void)
{
#if defined(__x86_64__) || defined(__i386__)
  if (mpa_clock_is_tsc) return __rdtsc();
#endif
  return mpa_monotonic_ns();
}

/* Chooses the clock; returns its name ("tsc" or "monotonic"). */
const char *mpa_clock_init(void);
/* A (tick, ns) pair read as close together as possible. */
void mpa_clock_sync(uint64_t *tick, uint64_t *ns);

#endif

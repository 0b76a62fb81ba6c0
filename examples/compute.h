/* The examples' stand-in for an application's computation: the CPU kept busy for a given time. */
#ifndef MPIADVISE_EXAMPLES_COMPUTE_H
#define MPIADVISE_EXAMPLES_COMPUTE_H

#include <time.h>

static inline void compute_ms(double ms)
{
  struct timespec t0, t;
  clock_gettime(CLOCK_MONOTONIC, &t0);
  volatile double x = 0;
  do {
    for (int i = 0; i < 1000; i++) x += i * 1e-9;
    clock_gettime(CLOCK_MONOTONIC, &t);
  } while ((t.tv_sec - t0.tv_sec) * 1e3 + (t.tv_nsec - t0.tv_nsec) / 1e6 < ms);
}

#endif

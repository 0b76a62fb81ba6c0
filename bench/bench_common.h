/* Shared by the bench programs: the clocks around the timed loop, CPU time by thread, the peak resident
 * set. Include it first: it defines _GNU_SOURCE. */
#ifndef MPIADVISE_BENCH_COMMON_H
#define MPIADVISE_BENCH_COMMON_H
#ifndef _GNU_SOURCE
#define _GNU_SOURCE /* RUSAGE_THREAD */
#endif

#include <stdio.h>
#include <sys/resource.h>
#include <string.h>
#include <time.h>

static inline long long bench_now_ns(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* CPU time of the calling thread, ns. */
static inline long long bench_thread_cpu_ns(void)
{
  struct timespec t;
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t) != 0) return -1;
  return (long long)t.tv_sec * 1000000000LL + t.tv_nsec;
}

/* VmHWM (peak resident set) of this process in KiB, from /proc/self/status; -1 if unreadable. */
static inline long bench_vmhwm_kib(void)
{
  FILE *f = fopen("/proc/self/status", "r");
  if (!f) return -1;
  char line[256];
  long kib = -1;
  while (fgets(line, sizeof line, f))
    if (!strncmp(line, "VmHWM:", 6)) {
      sscanf(line + 6, "%ld", &kib);
      break;
    }
  fclose(f);
  return kib;
}

/* CPU time of the whole process (every thread, joined ones included) and of the calling thread, in us. */
static inline void bench_cpu_us(long long *process_us, long long *thread_us)
{
  struct rusage ru;
  *process_us = *thread_us = -1;
  if (getrusage(RUSAGE_SELF, &ru) == 0)
    *process_us = (long long)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000LL + ru.ru_utime.tv_usec +
                  ru.ru_stime.tv_usec;
  if (getrusage(RUSAGE_THREAD, &ru) == 0)
    *thread_us = (long long)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1000000LL + ru.ru_utime.tv_usec +
                 ru.ru_stime.tv_usec;
}

#endif

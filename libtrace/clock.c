#include "clock.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int mpa_clock_is_tsc = 0;
unsigned mpa_tick_shift = 0;

#if defined(__x86_64__) || defined(__i386__)
/* The bits of the counter below its step carry nothing, yet they cost the log: an AMD EPYC's counter
 * here advances 24 or 25 at a time (10 ns at 2.45 GHz), and on any processor reads in a row are tens of
 * ticks apart. Divided by 2^k, the largest power of two not above the least difference between reads in
 * a row, a halo exchange's log took 2.6 bytes a call where it took 3.8 (4 ranks, 480,000 calls, three
 * runs each), and an event's gap and duration fit one byte more often. The time stamps lose nothing the
 * counter resolved. */
static unsigned tick_shift(void)
{
  uint64_t least = UINT64_MAX, prev = __rdtsc();
  for (int i = 0; i < 256; i++) {
    uint64_t t = __rdtsc();
    if (t > prev && t - prev < least) least = t - prev;
    prev = t;
  }
  unsigned k = 0;
  while (k < 8 && (2ull << k) <= least) k++;
  return k;
}
#endif

static int file_has(const char *path, const char *word, int whole_word)
{
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  char line[4096];
  int found = 0;
  size_t n = strlen(word);
  while (!found && fgets(line, sizeof line, f)) {
    for (char *p = strstr(line, word); p && !found; p = strstr(p + 1, word)) {
      if (!whole_word) found = 1;
      else found = (p == line || p[-1] == ' ' || p[-1] == '\t') &&
                   (p[n] == ' ' || p[n] == '\n' || p[n] == '\0');
    }
  }
  fclose(f);
  return found;
}

const char *mpa_clock_init(void)
{
  const char *want = getenv("MPIADVISE_CLOCK"); /* tsc, monotonic, or auto (core.c warns of another value) */
  mpa_clock_is_tsc = 0;
  mpa_tick_shift = 0;
  if (want && !strcmp(want, "monotonic")) return "monotonic";
#if defined(__x86_64__) || defined(__i386__)
  /* An invariant counter (constant_tsc, nonstop_tsc) that the kernel uses as its clocksource, or that
   * is declared reliable (tsc_reliable: the hypervisor or the boot line vouches for it; the kernel of a
   * virtual machine may still keep kvm-clock, whose clock_gettime costs 25 ns against rdtsc's 10 here,
   * make bench). Its rate against CLOCK_MONOTONIC comes from the (tick, ns) pairs of the log's chunks. */
  const int invariant = file_has("/proc/cpuinfo", "constant_tsc", 1) && file_has("/proc/cpuinfo", "nonstop_tsc", 1);
  const int trusted = file_has("/sys/devices/system/clocksource/clocksource0/current_clocksource", "tsc", 1) ||
                      file_has("/proc/cpuinfo", "tsc_reliable", 1) || (want && !strcmp(want, "tsc"));
  if (invariant && trusted) {
    mpa_tick_shift = tick_shift();
    mpa_clock_is_tsc = 1;
    return "tsc";
  }
#endif
  return "monotonic";
}

void mpa_clock_sync(uint64_t *tick, uint64_t *ns)
{
  /* Take the tightest of a few bracketed reads so the pair is good to a few ns. */
  uint64_t best_width = UINT64_MAX;
  for (int i = 0; i < 5; i++) {
    uint64_t a = mpa_now();
    uint64_t n = mpa_monotonic_ns();
    uint64_t b = mpa_now();
    if (b - a < best_width) {
      best_width = b - a;
      *tick = a + (b - a) / 2;
      *ns = n;
    }
  }
}

double mpa_clock_ticks_per_ns(void)
{
  static double rate;
  if (rate > 0) return rate;
  if (!mpa_clock_is_tsc) return rate = 1.0;
  uint64_t t0, n0, t1, n1;
  mpa_clock_sync(&t0, &n0);
  struct timespec nap = {0, 2000000};
  nanosleep(&nap, NULL);
  mpa_clock_sync(&t1, &n1);
  rate = n1 > n0 && t1 > t0 ? (double)(t1 - t0) / (double)(n1 - n0) : 1.0;
  return rate;
}

/* How calibrate's round trips (cli/calibrate_bench.c) and the tracer's probe of a run's message speed
 * (probe.c) write what they send before each send. The two must write alike: the report replays a run at
 * the speed its probe measured against the set that calibrate fitted, and a probe writing otherwise than
 * calibrate would measure the difference between two ways of writing, not the machine's speed.
 *
 * They copy the k bytes from the buffer the last message was received into, as a code packs what it
 * sends (a halo's cells, a derived datatype, PETSc's scatters): whole lines written just before the send,
 * their source in the sender's cache. How data was written matters over shared memory, whose receiver
 * copies a large message out of the sender's cache by CMA: untraced round trips over Open MPI 4.1's vader
 * here (1000 after 50 of warm-up, the median; the partner's writing timed and taken out), in us:
 *                       4 KiB     8 KiB     16 KiB   128 KiB   1 MiB
 *   nothing written     3.4-4.0   3.7-4.1   4.5      14.4      125
 *   a byte a line       5.6-5.8   7.6-8.7   10.7     31.9-32.1 190
 *   a stencil's loop    4.4-4.9   5.7-5.8   8.6      28.1-28.2 184
 *   8-byte stores       4.7       5.7       -        31.2      189
 *   memset              5.4       6.8       -        31.8      189
 *   memcpy (this)       5.3-5.4   6.3-6.6   9.4      29.1-29.3 200
 * (/tmp programs, one to three runs each.) A byte written in each line, what both wrote before, was the
 * dearest from 4 to 16 KiB, 1.2-1.4 times a memcpy at 8 KiB: sets calibrated so priced the halo example's
 * 8 KiB messages, which its stencil writes whole, 14-17% dear over vader (bench/validate.py). A memcpy lies
 * among the ways codes write what they send. */
#ifndef MPA_SENT_DATA_H
#define MPA_SENT_DATA_H

#include <string.h>

static inline void mpa_write_sent(char *buf, const char *received, int k)
{
  memcpy(buf, received, (size_t)k);
}

#endif

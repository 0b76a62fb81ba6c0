/* The event codec: how one traced call becomes bytes of an EVENTS chunk (format.h, mpiadvise-log(5)),
 * and back. The tracer encodes (inline here: it runs inside every MPI call); the reader decodes
 * (codec.c). Both sides share the per-chunk state below, so they cannot drift apart.
 *
 * Encoding a chunk:   p = mpa_encode_chunk_start(&state, p, first_enter_tick, times);
 *                     then for each event, with mpa_event_bound(ev, npapi) bytes of room at p and
 *                     MPA_TIMES_BOUND at the state's times cursor:
 *                     p = mpa_encode_event(&state, p, ev, callsite, count, incall, papi, npapi);
 *                     then end = mpa_encode_chunk_end(&state, p, times).
 *                     times: where the events' times go until the end appends them (MPA_CODEC_ZSTD_TIMES,
 *                     format.h), or NULL: each event's times among its fields (MPA_CODEC_ZSTD).
 * Decoding a chunk:   mpa_decode_chunk_start(&state, &p, &end, codec), then
 *                     mpa_decode_event(&state, &p, end, &out) until p == end.
 * No MPI here: the C++ reader and the tests include this header. */
#ifndef MPIADVISE_CODEC_H
#define MPIADVISE_CODEC_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "format.h"

#define MPA_HANDLE_CACHE 16 /* see MPA_F_REQS in format.h */
#define MPA_HANDLE_DELTA_LIMIT ((int64_t)1 << 62) /* deltas coded as zigzag << 1 lie within +-2^62 */
#define MPA_HANDLE_CODE_WHOLE 33u /* slot 16, which does not exist: a whole handle follows */
#define MPA_DECODE_MAX_PAPI 64 /* counters per event a reader accepts */
/* the fields after STATUS, which few events have */
#define MPA_F_AFTER_STATUS (MPA_F_DEFINED & ~(((uint32_t)MPA_F_STATUS << 1) - 1))

/* ---- varints (LEB128) and zigzag ------------------------------------------------------------------- */
static inline uint8_t *mpa_put_varint(uint8_t *p, uint64_t v)
{
  while (v >= 0x80) {
    *p++ = (uint8_t)(v | 0x80);
    v >>= 7;
  }
  *p++ = (uint8_t)v;
  return p;
}
static inline uint64_t mpa_zigzag(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }
static inline int64_t mpa_unzigzag(uint64_t v) { return (int64_t)(v >> 1) ^ -(int64_t)(v & 1); }

typedef struct mpa_status {
  int32_t index;  /* position in the request array (0 for single-request calls) */
  int32_t source; /* rank in the request's communicator, or a special rank code */
  int32_t tag;
  uint64_t bytes;
} mpa_status;

/* ---- what one chunk's events are coded against --------------------------------------------------- */
/* Format 5: a loop calls MPI from the same places with the same arguments, so a chunk remembers, for each
 * of MPA_TEMPLATES call sites (by callsite id modulo MPA_TEMPLATES), the last event's mask and arguments
 * (peers, tags, communicator, bytes, up to MPA_TEMPLATE_STATS statuses); an event equal to its call
 * site's is written as its call byte with MPA_CALL_REPEAT set, its times, its callsite and its requests.
 * On the bench's loops that halves the bytes the writer compresses (and its time: zstd's is per byte). */
#define MPA_TEMPLATES 64
#define MPA_TEMPLATE_STATS 4
#define MPA_CALL_REPEAT 0x80u /* in the call byte (call ids are below it) */
#define MPA_TEMPLATE_VERSION 5u /* the first format with templates */

typedef struct mpa_template {
  uint32_t callsite;
  uint32_t used; /* 0: no event at this slot yet in this chunk */
  uint32_t call, mask;
  int32_t peer, tag, peer2, tag2;
  uint32_t comm;
  uint64_t bytes, bytes2;
  uint32_t nstat;
  mpa_status stats[MPA_TEMPLATE_STATS];
} mpa_template;

typedef struct mpa_codec_state {
  uint64_t prev_exit;   /* delta base for the next event's enter tick */
  uint64_t prev_handle; /* delta base for request handles */
  uint64_t recent_handles[MPA_HANDLE_CACHE]; /* a handle seen again in the chunk costs one byte */
  uint32_t version;     /* the log's format version (mpa_handle_slot); 0 when decoding: this one's */
  /* MPA_CODEC_ZSTD_TIMES: where the next event's gap and duration are written (encoding), or read from
   * up to times_end (decoding); NULL: among the event's fields */
  uint8_t *times;
  const uint8_t *times_in, *times_end;
  mpa_template templates[MPA_TEMPLATES]; /* format 5 */
} mpa_codec_state;

static inline int mpa_templates_on(uint32_t version) { return version == 0 || version >= MPA_TEMPLATE_VERSION; }
static inline unsigned mpa_template_slot(uint32_t callsite) { return callsite % MPA_TEMPLATES; }

typedef struct mpa_event {
  uint32_t call;
  uint32_t mask; /* MPA_F_* present */
  uint64_t t_enter, t_exit;
  int32_t peer, tag, peer2, tag2;
  uint32_t comm, newcomm;
  uint64_t bytes, bytes2;
  uint32_t nreq;
  const uint64_t *reqs;
  uint32_t nstat;
  const mpa_status *stats;
  int64_t value;
  uint32_t ncancelled; /* with MPA_F_CANCELLED: positions in stats of cancelled requests */
  const uint32_t *cancelled;
  uint32_t nvcounts; /* with MPA_F_VCOUNTS: bytes for each member */
  const uint64_t *vcounts;
} mpa_event;

/* ---- encoding ------------------------------------------------------------------------------------- */
/* Starts a chunk: its base tick, and every delta base and handle slot back at 0; times: where the events'
 * times go (MPA_CODEC_ZSTD_TIMES), or NULL. */
#define MPA_TIMES_BOUND 20 /* bytes of one event's times at most: two 64-bit varints */
static inline uint8_t *mpa_encode_chunk_start(mpa_codec_state *s, uint8_t *p, uint64_t base_tick, uint8_t *times)
{
  s->times = times;
  s->prev_exit = base_tick;
  s->prev_handle = 0;
  s->version = MPA_FORMAT_VERSION;
  memset(s->recent_handles, 0, sizeof s->recent_handles);
  memset(s->templates, 0, sizeof s->templates);
  return mpa_put_varint(p, base_tick);
}

/* Ends a chunk whose events end at p: with MPA_CODEC_ZSTD_TIMES appends the times written from `times` on
 * and their length (room for both at p: the caller's); returns the end of the payload. */
static inline uint8_t *mpa_encode_chunk_end(mpa_codec_state *s, uint8_t *p, const uint8_t *times)
{
  if (!s->times) return p;
  const uint32_t n = (uint32_t)(s->times - times);
  memcpy(p, times, n);
  p += n;
  for (int i = 0; i < 4; i++) *p++ = (uint8_t)(n >> (8 * i));
  s->times = (uint8_t *)times;
  return p;
}
/* The bytes an ended chunk takes beyond its events': its times and their length */
static inline size_t mpa_encode_times_bytes(const mpa_codec_state *s, const uint8_t *times)
{
  return s->times ? (size_t)(s->times - times) + 4 : 0;
}

/* Bytes an event can take at most: 10 per 64-bit varint, 5 per 32-bit one. */
static inline size_t mpa_event_bound(const mpa_event *ev, int npapi)
{
  size_t n = 1 + 5 + 10 + 10 + 5;   /* call, mask, gap, duration, callsite */
  n += 5 + 5 + 5 + 10 + 5 + 5 + 10; /* peer, tag, comm, bytes, peer2, tag2, bytes2 */
  n += 5 + (size_t)ev->nreq * 11;
  n += 5 + (size_t)ev->nstat * 30;
  n += 5 + 5 + 5 + (size_t)npapi * 10 + 10 + 10; /* count, newcomm, papi, incall, value */
  if (ev->mask & MPA_F_CANCELLED) n += 5 + (size_t)ev->ncancelled * 5;
  if (ev->mask & MPA_F_VCOUNTS) n += 5 + (size_t)ev->nvcounts * 10;
  return n;
}

static inline uint8_t *mpa_encode_handles(mpa_codec_state *s, uint8_t *p, const uint64_t *h, uint32_t n)
{
  p = mpa_put_varint(p, n);
  for (uint32_t i = 0; i < n; i++) {
    unsigned slot = mpa_handle_slot(h[i], s->version);
    if (s->recent_handles[slot] == h[i]) {
      *p++ = (uint8_t)(slot << 1 | 1);
      continue;
    }
    int64_t delta = (int64_t)(h[i] - s->prev_handle);
    if (__builtin_expect(delta >= -MPA_HANDLE_DELTA_LIMIT && delta < MPA_HANDLE_DELTA_LIMIT, 1)) {
      p = mpa_put_varint(p, mpa_zigzag(delta) << 1);
    } else { /* a delta whose code would not fit in 64 bits: the handle itself */
      *p++ = MPA_HANDLE_CODE_WHOLE;
      p = mpa_put_varint(p, h[i]);
    }
    s->prev_handle = h[i];
    s->recent_handles[slot] = h[i];
  }
  return p;
}

/* The fields of an event a template holds: only those its mask names, the others 0 (as a decoder has
 * them); mask: the event's as written (RESENT, which has no payload, included). An event with a field
 * after STATUS (a folded run, counters, an error code, ...) or more statuses than a template holds has
 * none. */
static inline int mpa_template_fits(uint32_t mask, uint32_t nstat)
{
  return !(mask & MPA_F_AFTER_STATUS & ~MPA_F_RESENT) && (!(mask & MPA_F_STATUS) || nstat <= MPA_TEMPLATE_STATS);
}
static inline void mpa_template_set(mpa_template *t, uint32_t callsite, uint32_t call, uint32_t mask, int32_t peer,
                                    int32_t tag, uint32_t comm, uint64_t bytes, int32_t peer2, int32_t tag2,
                                    uint64_t bytes2, uint32_t nstat, const mpa_status *stats)
{
  t->callsite = callsite;
  t->used = 1;
  t->call = call;
  t->mask = mask;
  t->peer = mask & MPA_F_PEER ? peer : 0;
  t->tag = mask & MPA_F_TAG ? tag : 0;
  t->comm = mask & MPA_F_COMM ? comm : 0;
  t->bytes = mask & MPA_F_BYTES ? bytes : 0;
  t->peer2 = mask & MPA_F_PEER2 ? peer2 : 0;
  t->tag2 = mask & MPA_F_TAG2 ? tag2 : 0;
  t->bytes2 = mask & MPA_F_BYTES2 ? bytes2 : 0;
  t->nstat = mask & MPA_F_STATUS ? nstat : 0;
  for (uint32_t i = 0; i < t->nstat; i++) t->stats[i] = stats[i];
}
static inline int mpa_template_same(const mpa_template *t, uint32_t callsite, const mpa_event *ev, uint32_t mask)
{
  if (!t->used || t->callsite != callsite || t->call != ev->call || t->mask != mask) return 0;
  if ((mask & MPA_F_PEER) && t->peer != ev->peer) return 0;
  if ((mask & MPA_F_TAG) && t->tag != ev->tag) return 0;
  if ((mask & MPA_F_COMM) && t->comm != ev->comm) return 0;
  if ((mask & MPA_F_BYTES) && t->bytes != ev->bytes) return 0;
  if (__builtin_expect(mask & (MPA_F_PEER2 | MPA_F_TAG2 | MPA_F_BYTES2), 0)) {
    if ((mask & MPA_F_PEER2) && t->peer2 != ev->peer2) return 0;
    if ((mask & MPA_F_TAG2) && t->tag2 != ev->tag2) return 0;
    if ((mask & MPA_F_BYTES2) && t->bytes2 != ev->bytes2) return 0;
  }
  if (mask & MPA_F_STATUS) {
    if (t->nstat != ev->nstat) return 0;
    for (uint32_t i = 0; i < ev->nstat; i++)
      if (t->stats[i].index != ev->stats[i].index || t->stats[i].source != ev->stats[i].source ||
          t->stats[i].tag != ev->stats[i].tag || t->stats[i].bytes != ev->stats[i].bytes)
        return 0;
  }
  return 1;
}

/* An event's gap and duration: to the times stream, or at p; returns the new p */
static inline uint8_t *mpa_put_times(mpa_codec_state *s, uint8_t *p, const mpa_event *ev)
{
  uint8_t *q = s->times ? s->times : p;
  q = mpa_put_varint(q, mpa_zigzag((int64_t)(ev->t_enter - s->prev_exit)));
  q = mpa_put_varint(q, ev->t_exit - ev->t_enter);
  if (s->times) {
    s->times = q;
    return p;
  }
  return q;
}

/* Writes one event at p (mpa_event_bound bytes of room) and returns the end. count > 0: a folded run of
 * count unsuccessful tests with incall ticks inside them (COUNT and INCALL); npapi > 0: counter deltas
 * (PAPI; a negative delta is written as 0). */
static inline __attribute__((always_inline)) uint8_t *mpa_encode_event(mpa_codec_state *s, uint8_t *p,
                                                                       const mpa_event *ev, uint32_t callsite,
                                                                       uint32_t count, uint64_t incall,
                                                                       const long long *papi, int npapi)
{
  uint32_t mask = ev->mask;
  if (count) mask |= MPA_F_COUNT | MPA_F_INCALL;
  if (npapi) mask |= MPA_F_PAPI;
  if (mpa_templates_on(s->version) && mpa_template_fits(mask, ev->nstat)) {
    mpa_template *t = &s->templates[mpa_template_slot(callsite)];
    if (mpa_template_same(t, callsite, ev, mask)) {
      *p++ = (uint8_t)(ev->call | MPA_CALL_REPEAT);
      p = mpa_put_times(s, p, ev);
      p = mpa_put_varint(p, callsite);
      if (mask & MPA_F_REQS) p = mpa_encode_handles(s, p, ev->reqs, ev->nreq);
      s->prev_exit = ev->t_exit;
      return p;
    }
    mpa_template_set(t, callsite, ev->call, mask, ev->peer, ev->tag, ev->comm, ev->bytes, ev->peer2, ev->tag2,
                     ev->bytes2, ev->nstat, ev->stats);
  }
  *p++ = (uint8_t)ev->call;
  p = mpa_put_varint(p, mask);
  p = mpa_put_times(s, p, ev);
  p = mpa_put_varint(p, callsite);
  /* Fields in bit order. Most calls carry a few of the first eight bits and none of the rest: the
   * rarer fields are tested by group, so a point-to-point call passes the seven it lacks in two tests. */
  if (mask & MPA_F_PEER) p = mpa_put_varint(p, mpa_zigzag(ev->peer));
  if (mask & MPA_F_TAG) p = mpa_put_varint(p, mpa_zigzag(ev->tag));
  if (mask & MPA_F_COMM) p = mpa_put_varint(p, ev->comm);
  if (mask & MPA_F_BYTES) p = mpa_put_varint(p, ev->bytes);
  if (__builtin_expect(mask & (MPA_F_PEER2 | MPA_F_TAG2 | MPA_F_BYTES2), 0)) {
    if (mask & MPA_F_PEER2) p = mpa_put_varint(p, mpa_zigzag(ev->peer2));
    if (mask & MPA_F_TAG2) p = mpa_put_varint(p, mpa_zigzag(ev->tag2));
    if (mask & MPA_F_BYTES2) p = mpa_put_varint(p, ev->bytes2);
  }
  if (mask & MPA_F_REQS) p = mpa_encode_handles(s, p, ev->reqs, ev->nreq);
  if (mask & MPA_F_STATUS) {
    p = mpa_put_varint(p, ev->nstat);
    for (uint32_t i = 0; i < ev->nstat; i++) {
      p = mpa_put_varint(p, (uint64_t)(int64_t)ev->stats[i].index);
      p = mpa_put_varint(p, mpa_zigzag(ev->stats[i].source));
      p = mpa_put_varint(p, mpa_zigzag(ev->stats[i].tag));
      p = mpa_put_varint(p, ev->stats[i].bytes);
    }
  }
  if (__builtin_expect(mask & MPA_F_AFTER_STATUS & ~MPA_F_RESENT, 0)) { /* RESENT: no payload */
    if (mask & MPA_F_COUNT) p = mpa_put_varint(p, count);
    if (mask & MPA_F_NEWCOMM) p = mpa_put_varint(p, ev->newcomm);
    if (mask & MPA_F_PAPI) {
      p = mpa_put_varint(p, (uint64_t)npapi);
      for (int i = 0; i < npapi; i++) p = mpa_put_varint(p, (uint64_t)(papi[i] < 0 ? 0 : papi[i]));
    }
    if (mask & MPA_F_INCALL) p = mpa_put_varint(p, incall);
    if (mask & MPA_F_VALUE) p = mpa_put_varint(p, mpa_zigzag(ev->value));
    if (mask & MPA_F_CANCELLED) {
      p = mpa_put_varint(p, ev->ncancelled);
      for (uint32_t i = 0; i < ev->ncancelled; i++) p = mpa_put_varint(p, ev->cancelled[i]);
    }
    if (mask & MPA_F_VCOUNTS) {
      p = mpa_put_varint(p, ev->nvcounts);
      for (uint32_t i = 0; i < ev->nvcounts; i++) p = mpa_put_varint(p, ev->vcounts[i]);
    }
  }
  s->prev_exit = ev->t_exit;
  return p;
}

/* ---- decoding (codec.c) --------------------------------------------------------------------------- */
enum mpa_decode_result {
  MPA_DECODE_OK = 0,
  MPA_DECODE_TRUNCATED, /* the event runs past the end of its chunk */
  MPA_DECODE_OVERLONG,  /* a varint longer than 64 bits */
  MPA_DECODE_RANGE,     /* a value outside its field's range */
  MPA_DECODE_MASK,      /* field bits this format does not define */
  MPA_DECODE_ROOM,      /* an array of out is too small: grow it to the count set, and decode again */
  MPA_DECODE_TIMES,     /* a chunk's times (MPA_CODEC_ZSTD_TIMES) do not match its events */
};

/* A decoded event. The caller owns the arrays and says how many elements each holds (cap); a field
 * absent from the event is 0 (count too: a folded run has count >= 1). */
typedef struct mpa_decoded {
  uint32_t call, mask;
  uint64_t t_enter, t_exit; /* ticks */
  uint32_t callsite;
  int32_t peer, tag, peer2, tag2;
  uint32_t comm, newcomm;
  uint64_t bytes, bytes2;
  uint32_t count;
  uint64_t incall; /* ticks */
  int64_t value;
  uint32_t nreq, nstat, npapi, ncancelled, nvcounts;
  uint64_t *reqs;
  mpa_status *stats;
  uint64_t *papi;
  uint32_t *cancelled; /* positions in stats, as written (a reader checks them against nstat) */
  uint64_t *vcounts;
  uint32_t reqs_cap, stats_cap, papi_cap, cancelled_cap, vcounts_cap;
} mpa_decoded;

/* Each returns an mpa_decode_result. On anything but MPA_DECODE_OK, *p and the state are unchanged.
 * mpa_decode_chunk_start: codec is the chunk's (format.h); *end becomes the end of its events. */
int mpa_decode_chunk_start(mpa_codec_state *s, const uint8_t **p, const uint8_t **end, int codec);
int mpa_decode_event(mpa_codec_state *s, const uint8_t **p, const uint8_t *end, mpa_decoded *out);
/* The enter tick of the event at p, without decoding it. */
int mpa_decode_peek_enter(const mpa_codec_state *s, const uint8_t *p, const uint8_t *end, uint64_t *enter);
const char *mpa_decode_message(int result); /* e.g. "event runs past the end of its chunk" */
/* After a chunk's last event: OK when its times were all read (MPA_CODEC_ZSTD_TIMES), else TIMES */
int mpa_decode_chunk_done(const mpa_codec_state *s);

#endif

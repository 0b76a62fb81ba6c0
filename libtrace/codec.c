/* The decoding half of the event codec (codec.h): the inverse of mpa_encode_event, refusing anything
 * the encoder cannot have written (a value wider than its field, an unknown field bit) so that damage
 * shows as an error and not as plausible numbers. */
#include "codec.h"

typedef struct cursor {
  const uint8_t *p, *end;
  int error; /* first mpa_decode_result other than OK */
} cursor;

static uint64_t get_varint_long(cursor *c);

/* Most values fit in one byte (a call's gap and duration in ticks, a call site, a handle's delta): read
 * inline, the rest out of line. */
static inline uint64_t get_varint(cursor *c)
{
  if (__builtin_expect(c->p < c->end && !(*c->p & 0x80), 1)) return *c->p++;
  return get_varint_long(c);
}

static uint64_t get_varint_long(cursor *c)
{
  uint64_t v = 0;
  for (int shift = 0; shift < 64; shift += 7) {
    if (c->p >= c->end) {
      if (!c->error) c->error = MPA_DECODE_TRUNCATED;
      return 0;
    }
    uint8_t b = *c->p++;
    /* the tenth byte holds bit 63 only */
    if (shift == 63 && b > 1) {
      if (!c->error) c->error = MPA_DECODE_OVERLONG;
      return 0;
    }
    v |= (uint64_t)(b & 0x7f) << shift;
    if (!(b & 0x80)) return v;
  }
  if (!c->error) c->error = MPA_DECODE_OVERLONG;
  return 0;
}

static uint32_t get_u32(cursor *c)
{
  uint64_t v = get_varint(c);
  if (v > UINT32_MAX) {
    if (!c->error) c->error = MPA_DECODE_RANGE;
    return 0;
  }
  return (uint32_t)v;
}

static int32_t get_i32_zigzag(cursor *c)
{
  int64_t v = mpa_unzigzag(get_varint(c));
  if (v < INT32_MIN || v > INT32_MAX) {
    if (!c->error) c->error = MPA_DECODE_RANGE;
    return 0;
  }
  return (int32_t)v;
}

/* An int32 written as the varint of its 64-bit sign extension (a status index). */
static int32_t get_i32_extended(cursor *c)
{
  uint64_t v = get_varint(c);
  if (v > (uint64_t)INT32_MAX && v < (uint64_t)(int64_t)INT32_MIN) {
    if (!c->error) c->error = MPA_DECODE_RANGE;
    return 0;
  }
  return (int32_t)(int64_t)v;
}

/* A count of items that take at least min_bytes each: no more than the chunk has room for. */
static uint32_t get_count(cursor *c, size_t min_bytes)
{
  uint32_t n = get_u32(c);
  if (!c->error && (size_t)(c->end - c->p) / min_bytes < n) {
    c->error = MPA_DECODE_TRUNCATED;
    return 0;
  }
  return n;
}

int mpa_decode_chunk_start(mpa_codec_state *s, const uint8_t **p, const uint8_t **end, int codec)
{
  const uint8_t *events_end = *end;
  const uint8_t *times = NULL;
  if (codec == MPA_CODEC_ZSTD_TIMES) {
    if (*end - *p < 4) return MPA_DECODE_TIMES;
    const uint8_t *at = *end - 4;
    const uint32_t n = (uint32_t)at[0] | (uint32_t)at[1] << 8 | (uint32_t)at[2] << 16 | (uint32_t)at[3] << 24;
    if ((size_t)(at - *p) < n) return MPA_DECODE_TIMES;
    times = at - n;
    events_end = times;
  } else if (codec != MPA_CODEC_ZSTD) {
    return MPA_DECODE_RANGE;
  }
  cursor c = {*p, events_end, 0};
  uint64_t base = get_varint(&c);
  if (c.error) return c.error;
  s->times = NULL;
  s->times_in = times;
  s->times_end = times ? *end - 4 : NULL;
  s->prev_exit = base;
  s->prev_handle = 0;
  memset(s->recent_handles, 0, sizeof s->recent_handles);
  memset(s->templates, 0, sizeof s->templates);
  *p = c.p;
  *end = events_end;
  return MPA_DECODE_OK;
}

int mpa_decode_chunk_done(const mpa_codec_state *s)
{
  return s->times_in != s->times_end ? MPA_DECODE_TIMES : MPA_DECODE_OK;
}

int mpa_decode_peek_enter(const mpa_codec_state *s, const uint8_t *p, const uint8_t *end, uint64_t *enter)
{
  cursor c = {p, end, 0};
  if (c.p >= c.end) return MPA_DECODE_TRUNCATED;
  const uint8_t call = *c.p++;
  if (!((call & MPA_CALL_REPEAT) && mpa_templates_on(s->version))) get_varint(&c); /* mask */
  if (c.error) return c.error;
  if (s->times_in) c = (cursor){s->times_in, s->times_end, 0};
  int64_t gap = mpa_unzigzag(get_varint(&c));
  if (c.error) return s->times_in ? MPA_DECODE_TIMES : c.error;
  *enter = s->prev_exit + (uint64_t)gap;
  return MPA_DECODE_OK;
}

int mpa_decode_event(mpa_codec_state *s, const uint8_t **p, const uint8_t *end, mpa_decoded *out)
{
  cursor c = {*p, end, 0};
  /* what the event changes, committed only when the whole event decodes (the templates at the end) */
  struct {
    uint64_t prev_handle;
    uint64_t recent_handles[MPA_HANDLE_CACHE];
    uint32_t version;
  } st;
  st.prev_handle = s->prev_handle;
  st.version = s->version;
  if (c.p >= c.end) return MPA_DECODE_TRUNCATED;
  out->call = *c.p++;
  const mpa_template *t = NULL; /* the call site's, for an event that repeats it */
  uint64_t mask = 0;
  const int repeat = (out->call & MPA_CALL_REPEAT) && mpa_templates_on(st.version);
  if (repeat) {
    out->call &= ~MPA_CALL_REPEAT;
  } else {
    mask = get_varint(&c);
    if (!c.error && (mask & ~(uint64_t)MPA_F_DEFINED)) return MPA_DECODE_MASK;
    /* a bit a file of an older format cannot hold (version 0: this format) */
    if (!c.error && (mask & MPA_F_UNFINISHED) && st.version && st.version < 4) return MPA_DECODE_MASK;
    if (!c.error && (mask & MPA_F_RESENT) && st.version && st.version < MPA_TEMPLATE_VERSION) return MPA_DECODE_MASK;
  }
  /* the times: among the fields, or from the chunk's times (committed with the rest) */
  cursor tc = {s->times_in, s->times_end, 0};
  cursor *times = s->times_in ? &tc : &c;
  out->t_enter = s->prev_exit + (uint64_t)mpa_unzigzag(get_varint(times));
  out->t_exit = out->t_enter + get_varint(times);
  if (tc.error) return MPA_DECODE_TIMES;
  out->callsite = get_u32(&c);
  if (c.error) return c.error;
  if (repeat) { /* a repeat: every argument as its call site's last event in the chunk */
    t = &s->templates[mpa_template_slot(out->callsite)];
    if (!t->used || t->callsite != out->callsite || t->call != out->call) return MPA_DECODE_RANGE;
    mask = t->mask;
    out->peer = t->peer;
    out->tag = t->tag;
    out->comm = t->comm;
    out->bytes = t->bytes;
    out->peer2 = t->peer2;
    out->tag2 = t->tag2;
    out->bytes2 = t->bytes2;
  } else {
    out->peer = (mask & MPA_F_PEER) ? get_i32_zigzag(&c) : 0;
    out->tag = (mask & MPA_F_TAG) ? get_i32_zigzag(&c) : 0;
    out->comm = (mask & MPA_F_COMM) ? get_u32(&c) : 0;
    out->bytes = (mask & MPA_F_BYTES) ? get_varint(&c) : 0;
    out->peer2 = (mask & MPA_F_PEER2) ? get_i32_zigzag(&c) : 0;
    out->tag2 = (mask & MPA_F_TAG2) ? get_i32_zigzag(&c) : 0;
    out->bytes2 = (mask & MPA_F_BYTES2) ? get_varint(&c) : 0;
  }
  out->mask = (uint32_t)mask;
  out->nreq = out->nstat = out->npapi = out->ncancelled = out->nvcounts = 0;
  if (c.error) return c.error;

  if (mask & MPA_F_REQS) {
    memcpy(st.recent_handles, s->recent_handles, sizeof st.recent_handles);
    uint32_t n = get_count(&c, 1);
    if (c.error) return c.error;
    if (n > out->reqs_cap) {
      out->nreq = n;
      return MPA_DECODE_ROOM;
    }
    for (uint32_t i = 0; i < n && !c.error; i++) {
      uint64_t code = get_varint(&c);
      if (code == MPA_HANDLE_CODE_WHOLE || !(code & 1)) {
        st.prev_handle = code & 1 ? get_varint(&c) : st.prev_handle + (uint64_t)mpa_unzigzag(code >> 1);
        st.recent_handles[mpa_handle_slot(st.prev_handle, st.version ? st.version : MPA_FORMAT_VERSION)] = st.prev_handle;
        out->reqs[i] = st.prev_handle;
      } else if (code >> 1 < MPA_HANDLE_CACHE) {
        out->reqs[i] = st.recent_handles[code >> 1];
      } else if (!c.error) {
        c.error = MPA_DECODE_RANGE;
      }
    }
    out->nreq = n;
  }
  if (!c.error && (mask & MPA_F_STATUS)) {
    uint32_t n = t ? t->nstat : get_count(&c, 4);
    if (c.error) return c.error;
    if (n > out->stats_cap) {
      out->nstat = n;
      return MPA_DECODE_ROOM;
    }
    if (t)
      for (uint32_t i = 0; i < n; i++) out->stats[i] = t->stats[i];
    else
      for (uint32_t i = 0; i < n && !c.error; i++) {
      out->stats[i].index = get_i32_extended(&c);
      out->stats[i].source = get_i32_zigzag(&c);
      out->stats[i].tag = get_i32_zigzag(&c);
      out->stats[i].bytes = get_varint(&c);
      }
    out->nstat = n;
  }
  out->count = (mask & MPA_F_COUNT) ? get_u32(&c) : 0;
  out->newcomm = (mask & MPA_F_NEWCOMM) ? get_u32(&c) : 0;
  if (!c.error && (mask & MPA_F_PAPI)) {
    uint32_t n = get_count(&c, 1);
    if (c.error) return c.error;
    if (n > MPA_DECODE_MAX_PAPI) return MPA_DECODE_RANGE;
    if (n > out->papi_cap) {
      out->npapi = n;
      return MPA_DECODE_ROOM;
    }
    for (uint32_t i = 0; i < n; i++) out->papi[i] = get_varint(&c);
    out->npapi = n;
  }
  out->incall = (mask & MPA_F_INCALL) ? get_varint(&c) : 0;
  out->value = (mask & MPA_F_VALUE) ? mpa_unzigzag(get_varint(&c)) : 0;
  if (!c.error && (mask & MPA_F_CANCELLED)) {
    uint32_t n = get_count(&c, 1);
    if (c.error) return c.error;
    if (n > out->cancelled_cap) {
      out->ncancelled = n;
      return MPA_DECODE_ROOM;
    }
    for (uint32_t i = 0; i < n; i++) out->cancelled[i] = get_u32(&c);
    out->ncancelled = n;
  }
  if (!c.error && (mask & MPA_F_VCOUNTS)) {
    const uint8_t *at = c.p;
    if (get_u32(&c) > MPA_MAX_VCOUNTS && !c.error) return MPA_DECODE_RANGE;
    c.p = at;
    uint32_t n = get_count(&c, 1);
    if (c.error) return c.error;
    if (n > out->vcounts_cap) {
      out->nvcounts = n;
      return MPA_DECODE_ROOM;
    }
    for (uint32_t i = 0; i < n; i++) out->vcounts[i] = get_varint(&c);
    out->nvcounts = n;
  }
  if (c.error) return c.error;
  s->prev_exit = out->t_exit;
  if (s->times_in) s->times_in = tc.p;
  if (mask & MPA_F_REQS) {
    s->prev_handle = st.prev_handle;
    memcpy(s->recent_handles, st.recent_handles, sizeof st.recent_handles);
  }
  if (!t && mpa_templates_on(st.version) && mpa_template_fits(out->mask, out->nstat))
    mpa_template_set(&s->templates[mpa_template_slot(out->callsite)], out->callsite, out->call, out->mask, out->peer,
                     out->tag, out->comm, out->bytes, out->peer2, out->tag2, out->bytes2, out->nstat, out->stats);
  *p = c.p;
  return MPA_DECODE_OK;
}

const char *mpa_decode_message(int result)
{
  switch (result) {
    case MPA_DECODE_OK: return "no error";
    case MPA_DECODE_TRUNCATED: return "event runs past the end of its chunk";
    case MPA_DECODE_OVERLONG: return "varint longer than 64 bits";
    case MPA_DECODE_RANGE: return "a value outside its field's range";
    case MPA_DECODE_MASK: return "field bits this format does not define";
    case MPA_DECODE_ROOM: return "arrays too small for the event";
    case MPA_DECODE_TIMES: return "the chunk's times do not match its events";
    default: return "unknown decoding error";
  }
}

/* Per-thread event buffers, the encoder, and the writer thread.
 *
 * Each thread encodes its events into a chunk of MPA_CHUNK_BYTES. A full chunk, or one whose first
 * event is 2 x MPA_SEAL_AGE_NS old when the next comes, is sealed and queued; the writer thread
 * compresses it (zstd, one frame with checksum) and appends it to the rank's file with a single write(),
 * so chunks never interleave. Chunks come from a pool bounded by MPIADVISE_BUFFER: when the pool is
 * empty and chunks are queued, the application thread waits for the writer (counted as a stall) rather
 * than lose events. Every MPA_SEAL_AGE_NS the writer seals the chunks that have held events that long,
 * so a rank killed outright (SIGKILL: a launcher ending the job after its first rank died, on a node
 * too loaded for the rank's own signal handler to have run) loses at most its last 2 x MPA_SEAL_AGE_NS.
 * A busy rank fills its chunks long before (64 KiB is thousands of calls); a quiet one writes small
 * chunks, a few times a second. */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#define ZSTD_STATIC_LINKING_ONLY /* ZSTD_initStaticCCtx: compression without malloc, for signal time */
#include <zstd.h>

#include "wrap.h"

/* ---- byte buffers ----------------------------------------------------------------------------------- */
int mpa_bytes_reserve(mpa_bytes *b, size_t extra)
{
  if (b->len + extra <= b->cap) return 0;
  size_t cap = b->cap ? b->cap : 256;
  while (cap < b->len + extra) cap *= 2;
  uint8_t *d = realloc(b->data, cap);
  if (!d) return -1;
  b->data = d;
  b->cap = cap;
  return 0;
}

void mpa_bytes_free(mpa_bytes *b)
{
  free(b->data);
  b->data = NULL;
  b->len = b->cap = 0;
}

/* ---- writer state -------------------------------------------------------------------------------- */
static int g_fd = -1;
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER; /* queue, pool, defs, stats */
static pthread_cond_t g_cv_work = PTHREAD_COND_INITIALIZER;
static pthread_cond_t g_cv_space = PTHREAD_COND_INITIALIZER;
static mpa_chunk *g_queue_head, *g_queue_tail;
static mpa_chunk *g_pool;
static size_t g_chunks_allocated, g_chunks_budget;
static mpa_bytes g_defs;
static pthread_t g_writer;
static int g_writer_running, g_stop;
static atomic_int g_writer_busy;
static ZSTD_CCtx *g_cctx;
static mpa_bytes g_out;
static char g_error[512];
static struct mpa_writer_stats g_stats;
#define MPA_SEAL_AGE_NS 100000000ull
static uint64_t g_seal_age_ticks = MPA_SEAL_AGE_NS; /* MPA_SEAL_AGE_NS in mpa_now() ticks */
static uint64_t g_last_steal_ns; /* CLOCK_MONOTONIC of the writer's last look for stale chunks */

/* signal-time flushing: a static compression context and output, allocated up front */
static ZSTD_CCtx *g_sig_cctx;
static void *g_sig_cctx_mem;
static uint8_t *g_sig_out;
static size_t g_sig_out_cap;
static mpa_chunk *g_sig_spare; /* a chunk for a thread that has none when a signal records its call */
#define MPA_SIG_MAX_REQS 4096   /* requests recorded of an unfinished call (MPI_Waitall of more: the first) */
static uint64_t g_sig_reqs[MPA_SIG_MAX_REQS];
static atomic_int g_sig_owner;  /* the thread (its tid) flushing from a signal handler, or 0 */

/* threads */
static pthread_mutex_t g_threads_mu = PTHREAD_MUTEX_INITIALIZER;
static mpa_thread *g_threads;
static uint16_t g_thread_count;
static pthread_key_t g_thread_key;
__thread mpa_thread *mpa_tls __attribute__((tls_model("initial-exec")));

mpa_thread *mpa_thread_list(void) { return g_threads; }

/* A thread's chunk, codec and run of polls are written by the thread itself on every call (mpa_finish),
 * and now and then by another: the writer sealing a stale chunk, a signal handler flushing, the end of
 * the job. The thread says it is busy and then looks whether another has claimed them; another claims
 * them and then looks whether the thread is busy. Each side stores, then loads the other's flag
 * (Dekker's), which needs a full fence between the two on both sides. The thread's fence would cost as
 * much as the lock it replaces (an xchg: 6.5 ns of a call's 47 in make bench (a), a third of
 * mpa_finish), so the claimer makes it for both: membarrier(MEMBARRIER_CMD_PRIVATE_EXPEDITED) runs a full
 * fence on every CPU that runs one of the process's threads (the asymmetric fence of liburcu and folly;
 * a few microseconds, every MPA_SEAL_AGE_NS). Where the kernel refuses it, and under ThreadSanitizer,
 * which knows no such fence, the thread's store is sequentially consistent instead (g_asym 0). */
#if defined(__SANITIZE_THREAD__)
#define MPA_ASYM_FENCE_POSSIBLE 0
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
#define MPA_ASYM_FENCE_POSSIBLE 0
#endif
#endif
#ifndef MPA_ASYM_FENCE_POSSIBLE
#if defined(__linux__) && defined(SYS_membarrier)
#define MPA_ASYM_FENCE_POSSIBLE 1
#include <linux/membarrier.h>
#else
#define MPA_ASYM_FENCE_POSSIBLE 0
#endif
#endif
static int g_asym; /* the claimer's membarrier fences the threads (set once, before tracing) */

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

/* The thread's own side: mpa_finish, and its end (thread_gone). Waits while another has claimed it. */
static inline void ts_enter(mpa_thread *ts)
{
  for (;;) {
    if (__builtin_expect(g_asym, 1)) {
      atomic_store_explicit(&ts->busy, 1, memory_order_relaxed);
      atomic_signal_fence(memory_order_seq_cst); /* the compiler's order; the CPU's is the claimer's fence */
    } else {
      atomic_store_explicit(&ts->busy, 1, memory_order_seq_cst);
    }
    if (__builtin_expect(!atomic_load_explicit(&ts->claimed, memory_order_seq_cst), 1)) return;
    atomic_store_explicit(&ts->busy, 0, memory_order_release);
    while (atomic_load_explicit(&ts->claimed, memory_order_acquire)) cpu_relax();
  }
}
static inline void ts_leave(mpa_thread *ts) { atomic_store_explicit(&ts->busy, 0, memory_order_release); }

/* A full fence on every CPU running a thread of the process, or 0 when there is none to be had */
static int fence_the_threads(void)
{
#if MPA_ASYM_FENCE_POSSIBLE
  if (g_asym) return syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) == 0;
#endif
  return 1; /* the threads' own stores are sequentially consistent */
}

/* Another thread's side (or a signal handler's on the thread itself): 1 when the thread's chunk, codec
 * and run are this caller's until ts_release; 0 when the thread is busy with them or another claimed
 * them first. */
static int ts_claim(mpa_thread *ts)
{
  int none = 0;
  if (!atomic_compare_exchange_strong(&ts->claimed, &none, 1)) return 0;
  if (fence_the_threads() && !atomic_load_explicit(&ts->busy, memory_order_seq_cst)) return 1;
  atomic_store_explicit(&ts->claimed, 0, memory_order_release);
  return 0;
}
static inline void ts_release(mpa_thread *ts) { atomic_store_explicit(&ts->claimed, 0, memory_order_release); }
static void ts_claim_wait(mpa_thread *ts)
{
  while (!ts_claim(ts)) cpu_relax();
}

/* ---- writing ---------------------------------------------------------------------------------------- */
static void note_error(const char *what, int err)
{
  if (!g_error[0]) snprintf(g_error, sizeof g_error, "%s: %s", what, strerror(err));
}

const char *mpa_writer_error(void) { return g_error[0] ? g_error : NULL; }

static int write_all(int fd, const uint8_t *p, size_t n)
{
  while (n > 0) {
    ssize_t w = write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    p += w;
    n -= (size_t)w;
  }
  return 0;
}

/* Compresses payload into out (after a chunk header) and writes header + frame with one write(). */
static int emit_chunk(ZSTD_CCtx *cctx, uint8_t *out, size_t out_cap, uint32_t type, uint16_t thread,
                      const uint8_t *payload, size_t len)
{
  if (g_fd < 0 || g_error[0]) return -1;
  mpa_chunk_header h;
  size_t z = ZSTD_compress2(cctx, out + sizeof h, out_cap - sizeof h, payload, len);
  if (ZSTD_isError(z)) {
    if (!g_error[0]) snprintf(g_error, sizeof g_error, "compressing a chunk: %s", ZSTD_getErrorName(z));
    return -1;
  }
  h.magic = MPA_CHUNK_MAGIC;
  h.type = (uint8_t)type;
  h.codec = type == MPA_CHUNK_EVENTS ? MPA_CODEC_ZSTD_TIMES : MPA_CODEC_ZSTD; /* every EVENTS chunk: chunk_end */
  h.thread = thread;
  h.raw_bytes = (uint32_t)len;
  h.stored_bytes = (uint32_t)z;
  mpa_clock_sync(&h.sync_tick, &h.sync_ns);
  memcpy(out, &h, sizeof h);
  int err = write_all(g_fd, out, sizeof h + z);
  if (err) {
    note_error("writing the log", err);
    return -1;
  }
  g_stats.chunks++;
  g_stats.raw_bytes += len;
  g_stats.stored_bytes += sizeof h + z;
  return 0;
}

static pthread_mutex_t g_emit_mu = PTHREAD_MUTEX_INITIALIZER; /* g_cctx, g_out, file, stats */

static int writer_emit(uint32_t type, uint16_t thread, const uint8_t *payload, size_t len)
{
  pthread_mutex_lock(&g_emit_mu);
  size_t need = sizeof(mpa_chunk_header) + ZSTD_compressBound(len);
  int rc = -1;
  g_out.len = 0;
  if (mpa_bytes_reserve(&g_out, need) == 0)
    rc = emit_chunk(g_cctx, g_out.data, g_out.cap, type, thread, payload, len);
  pthread_mutex_unlock(&g_emit_mu);
  return rc;
}

static void pool_put_locked(mpa_chunk *c)
{
  if (c->cap > MPA_CHUNK_BYTES) { /* a one-off chunk for an outsized event */
    free(c->data);
    free(c);
    g_chunks_allocated--;
  } else {
    c->next = g_pool;
    g_pool = c;
  }
  pthread_cond_broadcast(&g_cv_space);
}

static void steal_stale_chunks(void);

static void *writer_main(void *arg)
{
  (void)arg;
  sigset_t all;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, NULL); /* signals belong to the application's threads */
  mpa_bytes defs = {0};
  for (;;) {
    pthread_mutex_lock(&g_mu);
    int timed_out = 0;
    while (!g_queue_head && !g_stop && !timed_out) {
      struct timespec until;
      clock_gettime(CLOCK_REALTIME, &until);
      until.tv_nsec += (long)MPA_SEAL_AGE_NS;
      if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
      }
      timed_out = pthread_cond_timedwait(&g_cv_work, &g_mu, &until) == ETIMEDOUT;
    }
    /* every MPA_SEAL_AGE_NS, whatever else is queued: a quiet thread's chunk must not wait for a lull
     * in a busy one's traffic */
    uint64_t now_ns = mpa_monotonic_ns();
    if (now_ns - g_last_steal_ns >= MPA_SEAL_AGE_NS) {
      g_last_steal_ns = now_ns;
      pthread_mutex_unlock(&g_mu);
      steal_stale_chunks();
      continue;
    }
    if (timed_out && !g_queue_head) {
      pthread_mutex_unlock(&g_mu);
      continue;
    }
    mpa_chunk *list = g_queue_head;
    g_queue_head = g_queue_tail = NULL;
    mpa_bytes swap = g_defs;
    g_defs = defs;
    defs = swap;
    int stopping = g_stop;
    atomic_store(&g_writer_busy, 1);
    pthread_mutex_unlock(&g_mu);

    if (defs.len) writer_emit(MPA_CHUNK_DEFS, 0, defs.data, defs.len);
    defs.len = 0;
    while (list) {
      mpa_chunk *c = list;
      list = list->next;
      if (c->len) writer_emit(c->type, c->thread, c->data, c->len);
      pthread_mutex_lock(&g_mu);
      pool_put_locked(c);
      pthread_mutex_unlock(&g_mu);
    }
    atomic_store(&g_writer_busy, 0);
    if (stopping) {
      pthread_mutex_lock(&g_mu);
      int done = g_queue_head == NULL;
      pthread_mutex_unlock(&g_mu);
      if (done) break;
    }
  }
  mpa_bytes_free(&defs);
  return NULL;
}

/* ---- chunks for application threads ------------------------------------------------------------------ */
static mpa_chunk *chunk_new(size_t cap)
{
  mpa_chunk *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  c->data = malloc(cap);
  if (!c->data) {
    free(c);
    return NULL;
  }
  c->cap = cap;
  return c;
}

/* A chunk to fill. may_wait: an application thread waits for the writer when the pool is spent. */
static mpa_chunk *chunk_get(size_t need, int may_wait)
{
  mpa_chunk *c = NULL;
  pthread_mutex_lock(&g_mu);
  if (need <= MPA_CHUNK_BYTES) {
    while (!g_pool && g_chunks_allocated >= g_chunks_budget && (g_queue_head || atomic_load(&g_writer_busy)) &&
           may_wait && g_writer_running) {
      g_stats.stalls++;
      pthread_cond_wait(&g_cv_space, &g_mu);
    }
    if (g_pool) {
      c = g_pool;
      g_pool = c->next;
    }
  }
  if (!c) {
    c = chunk_new(need > MPA_CHUNK_BYTES ? need : MPA_CHUNK_BYTES);
    if (c) {
      g_chunks_allocated++;
      if (g_chunks_allocated > g_chunks_budget) g_stats.over_budget++;
    }
  }
  pthread_mutex_unlock(&g_mu);
  if (c) {
    c->next = NULL;
    c->len = 0;
    c->type = MPA_CHUNK_EVENTS;
  }
  return c;
}

/* Ends the thread's chunk: its events' times after them (codec.h: mpa_encode_chunk_end) */
static void chunk_end(mpa_thread *ts)
{
  mpa_chunk *c = ts->chunk;
  c->len = (size_t)(mpa_encode_chunk_end(&ts->codec, c->data + c->len, ts->times) - c->data);
}
/* Bytes the chunk in hand takes with its times, once ended */
static inline size_t chunk_ended_len(const mpa_thread *ts)
{
  return ts->chunk->len + mpa_encode_times_bytes(&ts->codec, ts->times);
}

static void chunk_seal(mpa_chunk *c)
{
  pthread_mutex_lock(&g_mu);
  c->next = NULL;
  if (g_queue_tail) g_queue_tail->next = c;
  else g_queue_head = c;
  g_queue_tail = c;
  pthread_cond_signal(&g_cv_work);
  pthread_mutex_unlock(&g_mu);
}

void mpa_defs_append(const uint8_t *rec, size_t len)
{
  pthread_mutex_lock(&g_mu);
  if (mpa_bytes_reserve(&g_defs, len) == 0) {
    memcpy(g_defs.data + g_defs.len, rec, len);
    g_defs.len += len;
  }
  pthread_mutex_unlock(&g_mu);
}

/* ---- encoding (the codec itself is codec.h) ----------------------------------------------------- */
_Static_assert(MPA_CALL_COUNT <= MPA_CALL_REPEAT, "call ids must stay below the call byte's repeat bit (codec.h)");
/* An event of need bytes takes MPA_TIMES_BOUND more in the times, and the chunk's end 4 */
#define ROOM_BEYOND (MPA_TIMES_BOUND + 4)
static void seal_thread_chunk(mpa_thread *ts)
{
  chunk_end(ts);
  chunk_seal(ts->chunk);
  ts->chunk = NULL;
}
/* Room for need bytes in the thread's chunk; returns the write position or NULL (event dropped). The
 * chunk in hand is checked inline; sealing it and starting the next are out of line (room_in_next), so
 * that the check costs no saved registers (20 of room's 35 instructions a call when it was one). */
static __attribute__((noinline, cold)) uint8_t *room_in_next(mpa_thread *ts, size_t need, uint64_t t_enter,
                                                             int may_wait)
{
  if (ts->chunk) seal_thread_chunk(ts);
  mpa_chunk *c = ts->chunk = chunk_get(need + 10 + ROOM_BEYOND, may_wait);
  if (!c) return NULL;
  c->thread = ts->index;
  c->first_tick = t_enter;
  uint8_t *p = mpa_encode_chunk_start(&ts->codec, c->data, t_enter, ts->times);
  c->len = (size_t)(p - c->data);
  return p;
}
static inline __attribute__((always_inline)) uint8_t *room(mpa_thread *ts, size_t need, uint64_t t_enter,
                                                           int may_wait)
{
  mpa_chunk *c = ts->chunk;
  if (__builtin_expect(c && c->cap - chunk_ended_len(ts) >= need + ROOM_BEYOND &&
                           t_enter - c->first_tick <= 2 * g_seal_age_ticks,
                       1))
    return c->data + c->len;
  return room_in_next(ts, need, t_enter, may_wait);
}

/* Inline: each caller's constants (no fold count, no counters for an ordinary call) drop the fields
 * they rule out from its copy of the encoder. */
static inline __attribute__((always_inline)) void encode(mpa_thread *ts, const mpa_event *ev, uint32_t callsite,
                                                         uint32_t count, uint64_t incall, const long long *papi,
                                                         int npapi, int may_wait)
{
  uint8_t *p = room(ts, mpa_event_bound(ev, npapi), ev->t_enter, may_wait);
  if (!p) return;
  uint8_t *end = mpa_encode_event(&ts->codec, p, ev, callsite, count, incall, papi, npapi);
  ts->chunk->len += (size_t)(end - p);
  ts->events += count ? count : 1; /* summed over threads at finalize: no shared cache line per call */
}

/* A pending run of unsuccessful tests becomes one event: first enter, last exit, count, time inside.
 * A poll not clocked (wrap.h: mpa_poll_quiet) is taken to last the mean of the run's timed polls, and the
 * ones after the last timed poll to come one period apart (the mean period between the run's timed
 * polls, at least a mean poll); the run ends no later than limit (the next event's entry, or now), and
 * its time inside is within its span. */
static void fold_event(const struct mpa_fold_run *f, mpa_event *ev, uint64_t limit, uint64_t *incall)
{
  uint64_t last_exit = f->last_exit;
  *incall = f->incall;
  if (f->untimed && f->timed) {
    /* a mean poll is a few ticks (of 2^mpa_tick_shift counts): the untimed polls' share is taken whole
     * from the timed polls' time, not from their mean rounded down */
    uint64_t mean = (f->incall + f->timed / 2) / f->timed;
    *incall += (uint64_t)((double)f->incall * (double)f->untimed / (double)f->timed + 0.5);
    if (f->tail) {
      uint64_t period = mean;
      if (f->n_timed_at > 1 && f->last_enter > f->first_enter) {
        uint64_t between = (f->last_enter - f->first_enter) / (f->n_timed_at - 1);
        if (between > period) period = between;
      }
      /* the tail's polls started after the last timed one returned, whatever its period says */
      last_exit = f->last_enter + period * f->tail + mean;
      if (last_exit < f->last_exit + mean * f->tail) last_exit = f->last_exit + mean * f->tail;
      if (last_exit > limit) last_exit = limit > f->last_exit ? limit : f->last_exit;
    }
    if (*incall > last_exit - f->first_enter) *incall = last_exit - f->first_enter;
  }
  mpa_event_start(ev, f->call, f->first_enter, last_exit);
  ev->mask = f->mask;
  ev->peer = f->peer;
  ev->tag = f->tag;
  ev->comm = f->comm;
  if (f->mask & MPA_F_REQS) {
    ev->reqs = &f->handle;
    ev->nreq = 1;
  }
}

/* limit: the next event's entry, or now */
static void flush_fold(mpa_thread *ts, int may_wait, uint64_t limit)
{
  struct mpa_fold_run *f = &ts->fold;
  if (!f->n) return;
  mpa_event ev = {0}; /* fold_event sets the fields its mask names */
  uint64_t incall;
  fold_event(f, &ev, limit, &incall);
  encode(ts, &ev, f->callsite, f->n, incall, NULL, 0, may_wait);
  f->n = 0;
}

/* The writer asks for a run older than the seal age (fold_flush_wanted) instead of writing it, and the
 * thread writes it at its next timed poll (a poll is not quiet while the flush is wanted); at the end
 * (seal_threads(SEAL_ALL_*), a signal) nothing polls any more. */
void mpa_finish(mpa_thread *ts, mpa_event *ev, int fold, uint32_t callsite)
{
  if (__builtin_expect(!fold && !mpa_papi_on, 1)) { /* the common call: written whole */
    ts_enter(ts);
    if (ts->fold.n) flush_fold(ts, 1, ev->t_enter);
    encode(ts, ev, callsite, 0, 0, NULL, 0, 1);
    ts_leave(ts);
    ts->depth = 0;
    return;
  }
  long long delta[MPA_MAX_PAPI];
  int npapi = 0;
  if (mpa_papi_on && !fold) {
    npapi = mpa_papi_count_for(ts);
    for (int i = 0; i < npapi; i++) delta[i] = ts->papi_enter[i] - ts->papi_exit[i];
  }
  ts_enter(ts);
  struct mpa_fold_run *f = &ts->fold;
  if (fold) {
    int wanted = atomic_load_explicit(&ts->fold_flush_wanted, memory_order_relaxed);
    if (f->n && (wanted || f->call != ev->call || f->callsite != callsite)) flush_fold(ts, 1, ev->t_enter);
    if (wanted) atomic_store_explicit(&ts->fold_flush_wanted, 0, memory_order_relaxed);
    if (!f->n) {
      f->call = ev->call;
      f->callsite = callsite;
      f->ra = ts->poll_ra;
      f->first_enter = ev->t_enter;
      f->incall = 0;
      f->timed = f->untimed = 0;
      /* a folded run keeps what identifies what was polled: the request of a Test, the peer of a probe */
      f->mask = ev->mask & (MPA_F_PEER | MPA_F_TAG | MPA_F_COMM);
      f->peer = ev->peer;
      f->tag = ev->tag;
      f->comm = ev->comm;
      if (ev->nreq == 1) {
        f->mask |= MPA_F_REQS;
        f->handle = ev->reqs[0];
      }
    }
    f->n++;
    f->timed++;
    f->n_timed_at = f->n;
    f->tail = 0;
    f->last_enter = ev->t_enter;
    f->last_exit = ev->t_exit;
    f->incall += ev->t_exit - ev->t_enter;
  } else {
    if (f->n) flush_fold(ts, 1, ev->t_enter);
    encode(ts, ev, callsite, 0, 0, delta, npapi, 1);
  }
  ts_leave(ts);
  if (npapi) mpa_papi_read(ts, ts->papi_exit);
  ts->depth = 0;
}

/* ---- threads ---------------------------------------------------------------------------------------- */
static int g_in_forked_child; /* this process is a child forked by a traced rank: see mpa_writer_forget */

static void thread_gone(void *arg)
{
  mpa_thread *ts = arg;
  if (g_in_forked_child) return; /* it may have been claimed by the parent's writer at the fork */
  ts_enter(ts);
  flush_fold(ts, 1, mpa_now());
  if (ts->chunk) seal_thread_chunk(ts);
  ts_leave(ts);
  mpa_callsite_thread_gone(ts);
}

static pthread_once_t g_key_once = PTHREAD_ONCE_INIT;
static void make_key(void) { pthread_key_create(&g_thread_key, thread_gone); }

mpa_thread *mpa_thread_attach(void)
{
  pthread_once(&g_key_once, make_key);
  mpa_thread *ts = calloc(1, sizeof *ts);
  if (!ts) return NULL;
  ts->times = malloc(MPA_CHUNK_BYTES);
  if (!ts->times) {
    free(ts);
    return NULL;
  }
  pthread_mutex_lock(&g_threads_mu);
  ts->index = g_thread_count++;
  ts->next_thread = g_threads;
  g_threads = ts;
  pthread_mutex_unlock(&g_threads_mu);
  pthread_setspecific(g_thread_key, ts);
  mpa_tls = ts;
  return ts;
}

/* A claim made within about 50 ms, or not at all: at exit, a thread interrupted inside the tracer (by a
 * signal whose handler called exit()) stays busy for ever. */
static int ts_claim_briefly(mpa_thread *ts)
{
  for (int i = 0; i < 50; i++) {
    if (ts_claim(ts)) return 1;
    struct timespec ms = {0, 1000000};
    nanosleep(&ms, NULL);
  }
  return 0;
}

enum seal_how { SEAL_STALE_TRY, SEAL_ALL_WAIT, SEAL_ALL_BRIEFLY };

/* Seal every thread's chunk (the writer calls this every MPA_SEAL_AGE_NS with stale chunks only). */
static void seal_threads(enum seal_how how)
{
  int stale_only = how == SEAL_STALE_TRY;
  uint64_t now = mpa_now();
  if (how == SEAL_ALL_BRIEFLY) {
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += 100000000L;
    if (until.tv_nsec >= 1000000000L) until.tv_sec++, until.tv_nsec -= 1000000000L;
    if (pthread_mutex_timedlock(&g_threads_mu, &until) != 0) return;
  } else {
    pthread_mutex_lock(&g_threads_mu);
  }
  for (mpa_thread *ts = g_threads; ts; ts = ts->next_thread) {
    if (how == SEAL_ALL_WAIT) ts_claim_wait(ts);
    else if (how == SEAL_ALL_BRIEFLY ? !ts_claim_briefly(ts) : !ts_claim(ts)) continue;
    int stale = ts->chunk && now - ts->chunk->first_tick > g_seal_age_ticks;
    /* the pending run of polls is the thread's own while it may poll (mpa_poll_again): asked for */
    if (stale_only) atomic_store_explicit(&ts->fold_flush_wanted, 1, memory_order_relaxed);
    if (!stale_only || stale) {
      if (!stale_only) flush_fold(ts, 0, now);
      if (ts->chunk) seal_thread_chunk(ts);
    }
    ts_release(ts);
  }
  pthread_mutex_unlock(&g_threads_mu);
}

static void steal_stale_chunks(void) { seal_threads(SEAL_STALE_TRY); }

/* ---- life cycle ------------------------------------------------------------------------------------ */
int mpa_writer_start(int fd)
{
  g_fd = fd;
#if MPA_ASYM_FENCE_POSSIBLE
  g_asym = syscall(SYS_membarrier, MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED, 0, 0) == 0;
#endif
  g_chunks_budget = mpa_cfg.buffer_bytes / MPA_CHUNK_BYTES;
  if (g_chunks_budget < 4) g_chunks_budget = 4;
  g_cctx = ZSTD_createCCtx();
  if (!g_cctx) return -1;
  ZSTD_CCtx_setParameter(g_cctx, ZSTD_c_compressionLevel, mpa_cfg.zstd_level);
  ZSTD_CCtx_setParameter(g_cctx, ZSTD_c_checksumFlag, 1);
  ZSTD_CCtx_setParameter(g_cctx, ZSTD_c_contentSizeFlag, 1); /* the reader checks the frame's size */

  g_sig_spare = chunk_new(MPA_CHUNK_BYTES);
  size_t sig_size = ZSTD_estimateCCtxSize(1);
  g_sig_cctx_mem = malloc(sig_size);
  g_sig_out_cap = sizeof(mpa_chunk_header) + ZSTD_compressBound(MPA_CHUNK_BYTES);
  g_sig_out = malloc(g_sig_out_cap);
  if (g_sig_cctx_mem && g_sig_out) {
    g_sig_cctx = ZSTD_initStaticCCtx(g_sig_cctx_mem, sig_size);
    if (g_sig_cctx) {
      /* a static context starts with every parameter zero, the content size flag too (zstd 1.5.4:
       * frames without their size, which the reader rightly refuses): set each one */
      ZSTD_CCtx_setParameter(g_sig_cctx, ZSTD_c_compressionLevel, 1);
      ZSTD_CCtx_setParameter(g_sig_cctx, ZSTD_c_checksumFlag, 1);
      ZSTD_CCtx_setParameter(g_sig_cctx, ZSTD_c_contentSizeFlag, 1);
    }
  }
  /* ticks in MPA_SEAL_AGE_NS, for sealing chunks by age */
  g_seal_age_ticks = (uint64_t)(mpa_clock_ticks_per_ns() * (double)MPA_SEAL_AGE_NS);

  g_stop = 0;
  if (pthread_create(&g_writer, NULL, writer_main, NULL) != 0) return -1;
  g_writer_running = 1;
  return 0;
}

static void wait_writer_idle(int wait_ms)
{
  for (int i = 0; i < wait_ms; i++) {
    pthread_mutex_lock(&g_mu);
    int idle = !g_queue_head && !atomic_load(&g_writer_busy);
    pthread_mutex_unlock(&g_mu);
    if (idle) return;
    struct timespec ms = {0, 1000000};
    nanosleep(&ms, NULL);
  }
}

void mpa_flush_at_exit(void)
{
  if (!g_writer_running) return;
  seal_threads(SEAL_ALL_BRIEFLY);
  if (pthread_mutex_trylock(&g_mu) == 0) {
    pthread_cond_signal(&g_cv_work);
    pthread_mutex_unlock(&g_mu);
  }
  for (int i = 0; i < 2000 && (g_queue_head || atomic_load(&g_writer_busy)); i++) { /* unlocked peek: exit path */
    struct timespec ms = {0, 1000000};
    nanosleep(&ms, NULL);
  }
}

void mpa_flush_all(int wait_ms)
{
  if (!g_writer_running) return;
  seal_threads(SEAL_ALL_WAIT);
  pthread_mutex_lock(&g_mu);
  pthread_cond_signal(&g_cv_work);
  pthread_mutex_unlock(&g_mu);
  wait_writer_idle(wait_ms);
}

void mpa_writer_stop(void)
{
  if (!g_writer_running) return;
  seal_threads(SEAL_ALL_WAIT);
  pthread_mutex_lock(&g_mu);
  g_stop = 1;
  pthread_cond_signal(&g_cv_work);
  pthread_mutex_unlock(&g_mu);
  pthread_join(g_writer, NULL);
  g_writer_running = 0;
  if (g_defs.len) { /* definitions made after the last chunk (e.g. by MPI_Finalize) */
    writer_emit(MPA_CHUNK_DEFS, 0, g_defs.data, g_defs.len);
    g_defs.len = 0;
  }
}

int mpa_write_json_chunk(uint32_t type, const char *json, size_t len)
{
  if (g_fd < 0) return -1;
  return writer_emit(type, 0, (const uint8_t *)json, len);
}

/* In a child forked by a traced rank (pthread_atfork): the writer thread was not copied, its locks may
 * be held for ever, and the buffers hold the parent's events, which the parent writes. Nothing of it is
 * touched again: no chunk is sealed, flushed or written into the parent's file, and nothing is waited
 * for at the child's exit. Only plain stores: the child of a threaded process may call nothing else
 * before it execs. */
void mpa_writer_forget(void)
{
  g_in_forked_child = 1;
  g_writer_running = 0;
  g_sig_cctx = NULL;
  g_fd = -1; /* the parent's descriptor: closed by core.c's handler, and O_CLOEXEC across exec */
}

void mpa_writer_stats(struct mpa_writer_stats *s)
{
  pthread_mutex_lock(&g_emit_mu);
  *s = g_stats;
  pthread_mutex_lock(&g_threads_mu);
  for (mpa_thread *ts = g_threads; ts; ts = ts->next_thread) s->events += ts->events;
  pthread_mutex_unlock(&g_threads_mu);
  pthread_mutex_unlock(&g_emit_mu);
}

/* From a signal handler: record the call each thread is inside (unfinished), write what can be written
 * without waiting for a lock, with the static compression context, then give the writer a moment to
 * finish what it holds. */
static void sleep_1ms(void)
{
  struct timespec ms = {0, 1000000};
  nanosleep(&ms, NULL);
}

/* Room for need bytes in ts's chunk at signal time, ts claimed: nothing allocated, no lock waited
 * on for long. A full chunk is written at once and its memory used again; a thread without a chunk (a
 * thread blocked for longer than MPA_SEAL_AGE_NS has had its chunk sealed by the writer) takes one from the
 * pool, or the spare. NULL: no room, the event is not recorded. */
static int fits_from_signal(const mpa_thread *ts, size_t need)
{
  const mpa_chunk *c = ts->chunk;
  return chunk_ended_len(ts) + need + ROOM_BEYOND <= (c->cap < MPA_CHUNK_BYTES ? c->cap : MPA_CHUNK_BYTES);
}
static uint8_t *room_from_signal(mpa_thread *ts, size_t need, uint64_t t_enter)
{
  mpa_chunk *c = ts->chunk;
  if (c && !fits_from_signal(ts, need)) {
    if (chunk_ended_len(ts) > MPA_CHUNK_BYTES) return NULL; /* an outsized chunk: g_sig_out has no room for it */
    chunk_end(ts);
    emit_chunk(g_sig_cctx, g_sig_out, g_sig_out_cap, c->type, c->thread, c->data, c->len);
    c->len = 0;
  }
  if (!c) {
    for (int i = 0; i < 20; i++) {
      if (pthread_mutex_trylock(&g_mu) == 0) {
        if ((c = g_pool)) g_pool = c->next;
        pthread_mutex_unlock(&g_mu);
        break;
      }
      sleep_1ms();
    }
    if (!c && (c = g_sig_spare)) g_sig_spare = NULL;
    if (!c) return NULL;
    c->next = NULL;
    c->type = MPA_CHUNK_EVENTS;
    c->thread = ts->index;
    c->len = 0;
    ts->chunk = c;
  }
  if (c->len == 0) {
    c->first_tick = t_enter;
    c->len = (size_t)(mpa_encode_chunk_start(&ts->codec, c->data, t_enter, ts->times) - c->data);
  }
  if (!fits_from_signal(ts, need)) return NULL;
  return c->data + c->len;
}

static void encode_from_signal(mpa_thread *ts, const mpa_event *ev, uint32_t callsite, uint32_t count, uint64_t incall)
{
  uint8_t *p = room_from_signal(ts, mpa_event_bound(ev, 0), ev->t_enter);
  if (!p) return;
  uint8_t *end = mpa_encode_event(&ts->codec, p, ev, callsite, count, incall, NULL, 0);
  ts->chunk->len += (size_t)(end - p);
  ts->events += count ? count : 1;
}

/* The call ts is inside, as an event flagged MPA_F_UNFINISHED that ends now (ts claimed). The thread
 * may be another one, running: the fields are read, then `what` and t0 again, and a call that returned
 * meanwhile is not recorded. */
static void record_unfinished(mpa_thread *ts, uint64_t now, uint64_t not_before)
{
  const volatile struct mpa_inflight *in = &ts->inflight;
  uint32_t what = atomic_load_explicit(&ts->inflight.what, memory_order_acquire);
  if (!what) return;
  uint64_t t0 = in->t0;
  /* a poll that continued its run unclocked has the run's last timed exit as its entry: it starts no
   * earlier than the run just written ends */
  const uint64_t start = t0 < not_before ? not_before : t0;
  mpa_event ev;
  mpa_event_start(&ev, (what & 0xffffu) - 1, start, now > start ? now : start);
  ev.mask = (what >> 16) | MPA_F_UNFINISHED;
  ev.peer = in->peer;
  ev.tag = in->tag;
  ev.peer2 = in->peer2;
  ev.tag2 = in->tag2;
  ev.comm = in->comm;
  uint32_t callsite = in->callsite;
  if (ev.mask & MPA_F_REQS) {
    uint32_t n = in->nreq;
    const volatile uint64_t *reqs = in->reqs;
    if (n > MPA_SIG_MAX_REQS) n = MPA_SIG_MAX_REQS;
    if (!reqs) n = 0;
    for (uint32_t i = 0; i < n; i++) g_sig_reqs[i] = reqs[i];
    ev.reqs = g_sig_reqs;
    ev.nreq = n;
  }
  atomic_thread_fence(memory_order_acquire);
  if (atomic_load_explicit(&ts->inflight.what, memory_order_relaxed) != what || in->t0 != t0) return;
  encode_from_signal(ts, &ev, callsite, 0, 0);
}

int mpa_flush_from_signal(void)
{
  if (!g_sig_cctx || g_fd < 0) return 0;
  if (pthread_equal(pthread_self(), g_writer) && g_writer_running) return 0;
  uint64_t now = mpa_now();
  /* one thread at a time uses the static context: a signal on another thread waits for it (a while);
   * one that interrupts this thread's own flush does nothing */
  int me = (int)syscall(SYS_gettid), owner = 0;
  for (int i = 0; !atomic_compare_exchange_strong(&g_sig_owner, &owner, me); i++, owner = 0) {
    if (owner == me || i >= 500) return 0;
    sleep_1ms();
  }
  /* The writer holds the queue's lock and a thread's claim only for moments (to look at the queue, to
   * seal a stale chunk): try for up to 50 ms each, not once, or a chunk being sealed at the moment
   * of the signal is lost. The crashing thread busy in the tracer itself costs those 50 ms. */
  int locked = 0;
  for (int i = 0; i < 50 && !(locked = pthread_mutex_trylock(&g_mu) == 0); i++) sleep_1ms();
  if (locked) {
    if (g_defs.len)
      emit_chunk(g_sig_cctx, g_sig_out, g_sig_out_cap, MPA_CHUNK_DEFS, 0, g_defs.data, g_defs.len);
    g_defs.len = 0;
    while (g_queue_head) {
      mpa_chunk *c = g_queue_head;
      g_queue_head = c->next;
      if (c->len <= MPA_CHUNK_BYTES) {
        emit_chunk(g_sig_cctx, g_sig_out, g_sig_out_cap, c->type, c->thread, c->data, c->len);
        c->next = g_pool; /* back to the pool (an outsized one is not freed here: free() is not safe) */
        g_pool = c;
      }
    }
    g_queue_tail = NULL;
    pthread_mutex_unlock(&g_mu);
  }
  for (mpa_thread *ts = g_threads; ts; ts = ts->next_thread) {
    int got = 0;
    for (int i = 0; i < 50 && !(got = ts_claim(ts)); i++) sleep_1ms();
    if (!got) continue;
    /* the run of tests in progress, then the call in progress: the thread's last events */
    uint64_t run_end = 0;
    if (ts->fold.n) {
      mpa_event ev;
      uint64_t incall;
      fold_event(&ts->fold, &ev, now, &incall);
      encode_from_signal(ts, &ev, ts->fold.callsite, ts->fold.n, incall);
      run_end = ev.t_exit;
      ts->fold.n = 0;
    }
    record_unfinished(ts, now, run_end);
    mpa_chunk *c = ts->chunk;
    if (c && c->len && chunk_ended_len(ts) <= MPA_CHUNK_BYTES) {
      chunk_end(ts);
      emit_chunk(g_sig_cctx, g_sig_out, g_sig_out_cap, c->type, c->thread, c->data, c->len);
      ts->chunk = NULL; /* it is in the file: the next event starts a new chunk */
      if (pthread_mutex_trylock(&g_mu) == 0) {
        c->next = g_pool;
        g_pool = c;
        pthread_mutex_unlock(&g_mu);
      }
    }
    ts_release(ts);
  }
  /* what the writer holds, or sealed since: it writes it (its signals are blocked) */
  for (int i = 0; i < 200 && (atomic_load(&g_writer_busy) || *(mpa_chunk *volatile *)&g_queue_head); i++) sleep_1ms();
  atomic_store(&g_sig_owner, 0);
  return 1;
}

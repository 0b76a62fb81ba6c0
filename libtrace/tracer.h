/* Internals of libmpiadvise shared by its modules: core (life cycle, settings), buffers (per-thread
 * event buffers and the writer thread), comm, callsite, metadata, papi. Not seen by the wrappers except
 * through wrap.h. */
#ifndef MPIADVISE_TRACER_H
#define MPIADVISE_TRACER_H

#include <mpi.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "codec.h"
#include "format.h"

typedef struct mpa_thread mpa_thread;

#define MPA_TOOL_VERSION "0.1.0"
#define MPA_CHUNK_BYTES (64u * 1024u) /* raw bytes of events per chunk */
#define MPA_MAX_PAPI 8
/* The library is built with -fvisibility=hidden: what it defines is its own (a call between its parts is
 * direct, and a program or library of the job that defines a function of the same name neither takes its
 * place nor is taken), except MPI's entry points, which it exports. */
#define MPA_EXPORT __attribute__((visibility("default")))
/* a function that reads other functions' stack frames: AddressSanitizer's redzones are not its to check */
#if defined(__has_attribute)
#if __has_attribute(no_sanitize_address)
#define MPA_NO_SANITIZE_ADDRESS __attribute__((no_sanitize_address))
#endif
#endif
#ifndef MPA_NO_SANITIZE_ADDRESS
#define MPA_NO_SANITIZE_ADDRESS
#endif

/* ---- settings (environment, read once at MPI_Init) ---------------------------------------------- */
typedef struct mpa_settings {
  int enabled;            /* MPIADVISE=0 turns the tracer off */
  char dir[4096];         /* MPIADVISE_DIR, or chosen by rank 0 */
  int dir_given;
  int stack_depth;        /* MPIADVISE_STACK_DEPTH: 0 or 1 = return address, N = N frames by libunwind */
  size_t buffer_bytes;    /* MPIADVISE_BUFFER: bound on event buffer memory per rank */
  int zstd_level;         /* MPIADVISE_ZSTD_LEVEL */
  char papi[1024];        /* MPIADVISE_PAPI */
  int probe;              /* MPIADVISE_PROBE=0: no round trips timed at MPI_Init and MPI_Finalize (probe.c) */
} mpa_settings;

extern mpa_settings mpa_cfg;

/* ---- byte buffers and varints -------------------------------------------------------------------- */
typedef struct mpa_bytes {
  uint8_t *data;
  size_t len, cap;
} mpa_bytes;

int mpa_bytes_reserve(mpa_bytes *b, size_t extra); /* 0 on success */
void mpa_bytes_free(mpa_bytes *b);
/* varints: mpa_put_varint and mpa_zigzag in codec.h */

/* ---- per-thread state ---------------------------------------------------------------------------- */
typedef struct mpa_chunk {
  struct mpa_chunk *next;
  uint32_t type;
  uint16_t thread;
  size_t len, cap;
  uint64_t first_tick; /* of the first event, to seal a chunk that is a second old */
  uint8_t *data;
} mpa_chunk;

/* One poll in MPA_POLL_SAMPLE of a run is timed at both ends; the others are not clocked at all. */
#define MPA_POLL_SAMPLE 16

struct mpa_fold_run {
  uint32_t call, n;
  uint32_t callsite;
  uintptr_t ra; /* the return address of the run's first poll: a poll from there may continue it unclocked */
  uint64_t first_enter, last_exit, incall;
  /* polls timed at both ends (the first of a run, then one in MPA_POLL_SAMPLE) and polls not clocked
   * (wrap.h: mpa_poll_quiet); incall sums the timed ones. last_enter and last_exit: the last timed poll's,
   * n_timed_at: the run's count at it (so the period between timed polls is known), tail: the unclocked
   * polls after it */
  uint32_t timed, untimed, n_timed_at, tail;
  uint64_t last_enter;
  uint64_t handle; /* Test's request */
  int32_t peer, tag;
  uint32_t comm, mask;
};

/* The MPI call a thread is inside, for a signal handler to record as unfinished (MPA_F_UNFINISHED) when
 * the process is killed while the call has not returned: a hung job's logs then end with the call every
 * thread was waiting in. A wrapper fills it once it has t0 and just before the PMPI call (wrap.h:
 * mpa_inflight_enter), with what it knows at entry, and clears it when PMPI returns: `what` is written
 * last on entry and first on exit, so a handler that interrupts the thread between two stores finds
 * either no call or every field of it. Another thread's handler reads it as it is (mpa_flush_from_signal:
 * `what` and t0 read again after the fields; a call that changed meanwhile is left out). */
struct mpa_inflight {
  _Atomic uint32_t what;  /* 0: no call; else (fields << 16) | (1 + call id), fields of MPA_F_PEER ... MPA_F_REQS */
  uint32_t callsite;
  uint64_t t0;
  int32_t peer, tag, peer2, tag2; /* rank and tag codes, as the event records them */
  uint32_t comm;
  uint32_t nreq;
  const uint64_t *reqs; /* the thread's scratch handles (mpa_scratch_handles), read only at signal time */
};

struct mpa_thread {
  int depth;                /* first field: read on every call by mpa_begin */
  uint16_t index;
  /* who may touch chunk, codec and fold: the thread while busy, another thread (the writer sealing a
   * stale chunk, a signal's flush, the end of the job) once it has claimed it (buffers.c: ts_enter) */
  atomic_int busy;
  atomic_int claimed;
  struct mpa_inflight inflight; /* beside depth: written on every call */
  mpa_chunk *chunk;         /* being filled, or NULL */
  uint8_t *times;           /* the times of chunk's events until it ends (MPA_CODEC_ZSTD_TIMES): MPA_CHUNK_BYTES */
  mpa_codec_state codec;    /* the chunk being filled is coded against it */
  uint64_t events;          /* MPI calls encoded by this thread */
  struct mpa_fold_run fold; /* pending run of unsuccessful tests: the thread's own (see mpa_poll_again) */
  atomic_int fold_flush_wanted; /* set by the writer: the thread writes its pending run at its next poll */
  uintptr_t poll_ra;            /* the return address of the clocked poll being finished (mpa_finish) */
  uintptr_t last_send_buf;      /* the thread's previous send: buffer, bytes and type (mpa_resent) */
  uint64_t last_send_bytes;
  uintptr_t last_send_type;
  /* call-site cache: return address -> id, direct-mapped */
  uintptr_t cs_addr[256];
  uint32_t cs_id[256];
  struct mpa_stack_cache *stack_cache; /* MPIADVISE_STACK_DEPTH above 1: stacks seen before (callsite.c) */
  /* communicator cache: handle -> id, valid while comm_generation is unchanged */
  uintptr_t comm_handle[64];
  uint32_t comm_id[64];
  unsigned comm_generation;
  /* scratch for arrays of requests and statuses */
  uint64_t *handles; int handles_cap;
  MPI_Status *statuses; int statuses_cap;
  MPI_Fint *fstatuses; int fstatuses_cap;
  int *indices; int indices_cap;
  mpa_status *stats; int stats_cap;
  uint32_t *cancelled; int cancelled_cap;
  uint64_t *vcounts; int vcounts_cap; /* a v-collective's bytes for each member (MPA_F_VCOUNTS) */
  /* PAPI */
  long long papi_enter[MPA_MAX_PAPI]; /* counters when this call began */
  long long papi_exit[MPA_MAX_PAPI];  /* and when the previous one ended */
  struct mpa_thread *next_thread;
};

mpa_thread *mpa_thread_list(void);

/* ---- buffers and the writer (buffers.c) ---------------------------------------------------------- */
int mpa_writer_start(int fd);          /* 0 on success */
void mpa_writer_stop(void);            /* seals every chunk, writes all, joins the writer */
void mpa_flush_all(int wait_ms);       /* seals every chunk and waits until written (MPI_Abort) */
void mpa_flush_at_exit(void);          /* the same, skipping any thread or lock that stays busy */
int mpa_flush_from_signal(void);       /* best effort from a signal handler: no locks waited on; the calls
                                          every thread is inside are recorded first, as unfinished.
                                          1: it wrote (0: no log, or another thread is writing) */
void mpa_writer_forget(void);          /* in a forked child: the parent's writer and buffers are not ours */
int mpa_write_json_chunk(uint32_t type, const char *json, size_t len); /* META / TRAILER, synchronous */
void mpa_defs_append(const uint8_t *rec, size_t len); /* a definition record, written before any event */
const char *mpa_writer_error(void);    /* first write error, or NULL */
struct mpa_writer_stats {
  uint64_t events, chunks, raw_bytes, stored_bytes, stalls, over_budget;
};
void mpa_writer_stats(struct mpa_writer_stats *s);

/* ---- call sites (callsite.c) ----------------------------------------------------------------------- */
/* The call site's id for a call returning to return_address (and, with MPIADVISE_STACK_DEPTH above 1, the
 * frames above it). A thread caches ids by key in cs_addr/cs_id; at depth 1 the key is the return address
 * and a cached id is answered inline. */
static inline unsigned mpa_callsite_slot(uint64_t key) { return (unsigned)((key >> 4) ^ (key >> 13)) & 255u; }
uint32_t mpa_callsite_lookup(mpa_thread *ts, void *return_address);
static inline uint32_t mpa_callsite_id(mpa_thread *ts, void *return_address)
{
  if (mpa_cfg.stack_depth <= 1) {
    const uintptr_t key = (uintptr_t)return_address;
    const unsigned slot = mpa_callsite_slot(key);
    if (ts->cs_addr[slot] == key) return ts->cs_id[slot];
  }
  return mpa_callsite_lookup(ts, return_address);
}
void mpa_callsite_thread_gone(mpa_thread *ts); /* at the thread's end: its stacks seen */
void mpa_modules_record(void);   /* module map as DEF records */
size_t mpa_callsite_count(void);
const char *mpa_unwind_load(void); /* loads libunwind for MPIADVISE_STACK_DEPTH > 1; NULL, or why it cannot */
void mpa_callsite_tables_json(mpa_bytes *out); /* for the trailer */

/* ---- communicators (comm.c) ------------------------------------------------------------------------ */
void mpa_comm_init(void);
void mpa_comm_tables_json(mpa_bytes *out);

/* ---- metadata (metadata.c) ------------------------------------------------------------------------- */
void mpa_json_str(mpa_bytes *b, const char *s);     /* appends a JSON string literal */
void mpa_json_raw(mpa_bytes *b, const char *s);
void mpa_json_bytes(mpa_bytes *b, const mpa_bytes *json); /* appends JSON made elsewhere */
void mpa_json_fmt(mpa_bytes *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Reads the MPI_T control variables the header holds (cvars) before MPI_Init, at the thread level asked
 * for; mpa_header_json then writes them in rank 0's header instead of reading them. */
void mpa_cvars_before_init(int thread_level);
void mpa_header_json(mpa_bytes *b, int rank, int size, int thread_level, const char *job, const char *clock_name,
                     int64_t clock_offset_ns, const char *offset_method, uint64_t sync_tick,
                     uint64_t sync_ns, const mpa_bytes *message_probe);

/* ---- the machine's message speed (probe.c) --------------------------------------------------------- */
/* Ranks 0 and partner of comm time round trips between them; rank 0 appends them to json as a JSON
 * object. Every other rank returns at once. */
void mpa_probe_messages(MPI_Comm comm, int rank, int size, int partner, mpa_bytes *json);

/* ---- PAPI (papi.c) --------------------------------------------------------------------------------- */
int mpa_papi_init(int rank);             /* number of counters recorded (0: none) */
int mpa_papi_count(void);
int mpa_papi_count_for(mpa_thread *ts); /* counters recorded on this thread */
const char *mpa_papi_name(int i);
extern int mpa_papi_on; /* counters are read on the thread that called MPI_Init */
void mpa_papi_at_enter(mpa_thread *ts);
int mpa_papi_read(mpa_thread *ts, long long *values); /* 0 on success */

/* ---- core (core.c) --------------------------------------------------------------------------------- */
extern int mpa_rank, mpa_size;
void mpa_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void mpa_warn_once_per_job(int local_problem, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif

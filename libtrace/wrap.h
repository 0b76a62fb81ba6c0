/* What the generated wrappers (wrappers.c) call: the per-call path of the tracer.
 * Everything here runs inside the user's MPI calls, so it is small, inline where it pays, and never
 * makes an MPI call of its own except the local queries named below (Type_size, Get_count, f2c). */
#ifndef MPIADVISE_WRAP_H
#define MPIADVISE_WRAP_H

#include <limits.h>
#include <mpi.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "call_ids.h"
#include "clock.h"
#include "format.h"

#include "tracer.h"

/* Integers in a Fortran status (MPI_STATUS_SIZE). MPI-3 names it MPI_F_STATUS_SIZE; Open MPI 4.1's mpi.h
 * lacks it, and its Fortran status is the C struct's bytes. */
#ifdef MPI_F_STATUS_SIZE
#define MPA_F_STATUS_SIZE MPI_F_STATUS_SIZE
#else
#define MPA_F_STATUS_SIZE ((int)(sizeof(MPI_Status) / sizeof(MPI_Fint)))
#endif

/* The entry point MPI_X of every C wrapper. When the process runs another MPI than the one this library
 * is built for (core.c: check_process_mpi), a wrapper's own parameters would already be wrong: Open MPI's
 * handles are pointers, MPICH's ints, and a pointer passed through an int parameter loses its upper half.
 * So on x86-64 MPI_X is a few instructions of its own that jump, with the caller's registers and stack
 * untouched, either to the C wrapper (mpa_c_MPI_X) or straight to the process's PMPI_X, which the
 * process's MPI defines first in lookup order. Elsewhere the C wrapper is MPI_X itself, and a library
 * preloaded into another MPI's job passes calls through its wrappers' parameters. */
extern int mpa_foreign_mpi __attribute__((visibility("hidden")));
#if defined(__x86_64__) && defined(__ELF__)
#define MPA_ENTRY(name)                                                                                       \
  __asm__(".pushsection .text\n.globl MPI_" #name "\n.type MPI_" #name ", @function\n.p2align 4\nMPI_" #name \
          ":\n\tcmpl $0, mpa_foreign_mpi(%rip)\n\tjne PMPI_" #name "@PLT\n\tjmp mpa_c_MPI_" #name            \
          "\n.size MPI_" #name ", .-MPI_" #name "\n.popsection");
#define MPA_C_NAME(name) __attribute__((visibility("hidden"))) mpa_c_MPI_##name
#else
#define MPA_ENTRY(name)
#define MPA_C_NAME(name) MPA_EXPORT MPI_##name
#endif

/* One intercepted call, as the wrapper describes it to the encoder: mpa_event in codec.h. */

/* Tracing state, read on every call. */
extern volatile int mpa_active;
extern __thread mpa_thread *mpa_tls __attribute__((tls_model("initial-exec")));
mpa_thread *mpa_thread_attach(void);

/* Returns the calling thread's state when this call is to be traced, else NULL (tracing off, paused by
 * MPI_Pcontrol(0), or a call nested inside one of ours). */
static inline mpa_thread *mpa_begin(void)
{
  if (!mpa_active) return NULL;
  mpa_thread *ts = mpa_tls;
  if (__builtin_expect(ts == NULL, 0)) ts = mpa_thread_attach();
  if (!ts) return NULL;
  if (ts->depth) return NULL;
  ts->depth = 1;
  if (__builtin_expect(mpa_papi_on, 0)) mpa_papi_at_enter(ts);
  return ts;
}

static inline void mpa_event_start(mpa_event *ev, uint32_t call, uint64_t t0, uint64_t t1)
{
  ev->call = call;
  ev->mask = 0;
  ev->t_enter = t0;
  ev->t_exit = t1;
  ev->nreq = 0;
  ev->nstat = 0;
}

/* Encodes the event into the thread's buffer (or folds an unsuccessful test into a run) and ends the
 * call: the thread may be traced again. callsite: mpa_callsite_id of the call's return address, which
 * the wrapper takes before the call (a signal handler records a call in progress with it). */
void mpa_finish(mpa_thread *ts, mpa_event *ev, int fold, uint32_t callsite);

/* Polls (MPI_Test*, MPI_Iprobe, MPI_Improbe). A poll about to be made from return address ra is quiet when
 * it would continue the thread's run of polls that found nothing: the same call from the same place, not
 * the run's next sampled poll (one in MPA_POLL_SAMPLE is timed at both ends), and no flush asked for by
 * the writer. A quiet poll reads no clock and looks up no call site (the run's): if it finds nothing it
 * is counted in the run (mpa_poll_again), if it finds something its entry is estimated (mpa_poll_entry).
 * Only the thread changes its run while it may poll: read without its lock. The call site of a quiet poll
 * is its run's; with MPIADVISE_STACK_DEPTH above 1 the frames beyond the return address are the run's
 * first poll's for the polls it folds (the next sampled poll looks them up again, and a different stack
 * ends the run there), and a quiet poll that finds something looks up its own. Its in-flight entry time,
 * until it returns, is the run's last timed exit, after which it started. */
static inline int mpa_poll_quiet(mpa_thread *ts, uint32_t call, const void *ra)
{
  const struct mpa_fold_run *f = &ts->fold;
  return f->n && f->call == call && f->ra == (uintptr_t)ra && (f->n % MPA_POLL_SAMPLE) &&
         !atomic_load_explicit(&ts->fold_flush_wanted, memory_order_relaxed);
}
/* A quiet poll that found nothing: one more in the run, and the call ends; returns 1. Returns 0 when the
 * run was written while the poll was inside MPI (a signal's flush): the poll then goes the clocked way and
 * starts a run of its own. */
static inline int mpa_poll_again(mpa_thread *ts)
{
  if (!ts->fold.n) return 0;
  ts->fold.n++;
  ts->fold.untimed++;
  ts->fold.tail++;
  ts->depth = 0;
  return 1;
}
/* The entry of a quiet poll that found something and returned at t1: a mean poll of its run earlier, and
 * not before the run's last timed poll returned. */
static inline uint64_t mpa_poll_entry(const mpa_thread *ts, uint64_t t1)
{
  const struct mpa_fold_run *f = &ts->fold;
  uint64_t mean = f->timed ? (f->incall + f->timed / 2) / f->timed : 0;
  uint64_t t0 = t1 > mean ? t1 - mean : t1;
  return t0 < f->last_exit && f->last_exit <= t1 ? f->last_exit : t0;
}

/* The call in progress (tracer.h: struct mpa_inflight). The wrapper stores t0, the call site and the
 * fields known at entry into ts->inflight, then mpa_inflight_enter publishes them; mpa_inflight_exit is
 * the first thing after the PMPI call. A handler on this thread sees every store before `what` (the
 * release store keeps the compiler from sinking them past it), and none of the next call's stores
 * before the clear (the fence after it). */
static inline void mpa_inflight_enter(mpa_thread *ts, uint32_t call, uint32_t fields)
{
  atomic_store_explicit(&ts->inflight.what, fields << 16 | (call + 1), memory_order_release);
}
static inline void mpa_inflight_exit(mpa_thread *ts)
{
  atomic_store_explicit(&ts->inflight.what, 0, memory_order_relaxed);
  atomic_thread_fence(memory_order_release); /* no instruction on x86-64: orders the compiler's stores */
}

/* ---- arguments --------------------------------------------------------------------------------------- */
/* A buffer argument's address: fortran as for mpa_in_place (2: a TS 29113 descriptor, whose first member
 * is the address) */
static inline uintptr_t mpa_buffer_address(const void *buf, int fortran)
{
  if (fortran == 2 && buf) buf = *(const void *const *)buf;
  return (uintptr_t)buf;
}
/* A send from buf of bytes of type: 1 when buf (not NULL: MPI_BOTTOM in C), bytes and type are the
 * thread's previous send's and no call has been given buf to write since (format.h: RESENT); that send is
 * now this one. */
static inline int mpa_resent(mpa_thread *ts, const void *buf, uint64_t bytes, uintptr_t type, int fortran)
{
  const uintptr_t at = mpa_buffer_address(buf, fortran);
  const int again = at && at == ts->last_send_buf && bytes == ts->last_send_bytes && type == ts->last_send_type;
  ts->last_send_buf = at;
  ts->last_send_bytes = bytes;
  ts->last_send_type = type;
  return again;
}
/* buf was given to a call that may write it: a send from it is no longer a resend */
static inline void mpa_written(mpa_thread *ts, const void *buf, int fortran)
{
  if (mpa_buffer_address(buf, fortran) == ts->last_send_buf) ts->last_send_buf = 0;
}

static inline int32_t mpa_rank_code(int rank)
{
  if (rank >= 0) return rank;
  if (rank == MPI_ANY_SOURCE) return MPA_RANK_ANY;
  if (rank == MPI_PROC_NULL) return MPA_RANK_NULL;
  if (rank == MPI_ROOT) return MPA_RANK_ROOT;
  return MPA_RANK_UNDEF;
}
static inline int32_t mpa_tag_code(int tag) { return tag == MPI_ANY_TAG ? MPA_TAG_ANY : tag; }

#ifdef MPICH
/* Reading the MPICH ABI's statuses and predefined types without a call (support.c): set in MPI_Init when
 * the library running is seen to keep them so. */
extern int mpa_mpich_status_bytes __attribute__((visibility("hidden")));
extern int mpa_mpich_type_sizes __attribute__((visibility("hidden")));
void mpa_mpich_shortcuts_check(void);
static inline uint64_t mpa_mpich_count(const MPI_Status *st)
{
  return (uint64_t)((unsigned)st->count_hi_and_cancelled >> 1) << 32 | (unsigned)st->count_lo;
}
static inline int mpa_mpich_builtin(MPI_Datatype type) { return ((unsigned)type & 0xc0000000u) == 0x40000000u; }
static inline unsigned mpa_mpich_builtin_size(MPI_Datatype type) { return ((unsigned)type >> 8) & 0xffu; }
#endif

/* The statuses the tracer passes MPI in place of a program's MPI_STATUS(ES)_IGNORE (and a Fortran
 * program's, always), made MPI's empty status first: source MPI_ANY_SOURCE, tag MPI_ANY_TAG, no bytes.
 * MPICH writes only the cancelled bit of a completed send request's status (MPIR_Request_completion_
 * processing, MPIR_REQUEST_KIND__SEND), so a send's status was logged as whatever the memory held; Open
 * MPI writes every status it completes, and is given them as they are. A program's own statuses are
 * passed as it gave them. Returns st. */
static inline MPI_Status *mpa_statuses_empty(MPI_Status *st, int n)
{
#ifdef MPICH
  for (int i = 0; i < n; i++) {
    st[i].count_lo = 0;
    st[i].count_hi_and_cancelled = 0;
    st[i].MPI_SOURCE = MPI_ANY_SOURCE;
    st[i].MPI_TAG = MPI_ANY_TAG;
    st[i].MPI_ERROR = MPI_SUCCESS;
  }
#else
  (void)n;
#endif
  return st;
}

#ifdef OPEN_MPI
/* Open MPI keeps a datatype's size in its object (opal_datatype_t.size), at this offset: 24 in a
 * release build, 48 with OPAL_ENABLE_DEBUG. Found in MPI_Init by comparing with PMPI_Type_size on
 * predefined and derived types (support.c); -1 until then, or when no offset agreed. */
extern int mpa_ompi_type_size_at __attribute__((visibility("hidden")));
void mpa_ompi_shortcuts_check(void);
#endif

static inline uint64_t mpa_type_bytes(int count, MPI_Datatype type)
{
  int size = 0;
  if (count <= 0) return 0;
#ifdef MPICH
  if (mpa_mpich_type_sizes && mpa_mpich_builtin(type)) return (uint64_t)count * mpa_mpich_builtin_size(type);
#endif
#ifdef OPEN_MPI
  /* a null pointer is no datatype, and Open MPI's checks let a call with one return an error */
  if (mpa_ompi_type_size_at >= 0 && type != NULL && type != MPI_DATATYPE_NULL) {
    size_t bytes;
    memcpy(&bytes, (const char *)type + mpa_ompi_type_size_at, sizeof bytes);
    if (bytes <= INT_MAX) return (uint64_t)count * bytes; /* beyond, PMPI_Type_size gives MPI_UNDEFINED */
  }
#endif
  if (type == MPI_DATATYPE_NULL || PMPI_Type_size(type, &size) != MPI_SUCCESS || size < 0) return 0;
  return (uint64_t)count * (uint64_t)size;
}
uint64_t mpa_sum_bytes_v(const int *counts, MPI_Datatype type, int n);
uint64_t mpa_sum_bytes_w(const int *counts, const void *types, int n, int fortran);
/* The same sums, also recording each member's bytes in the event (MPA_F_VCOUNTS) unless it has them. */
uint64_t mpa_each_bytes_v(mpa_event *ev, mpa_thread *ts, const int *counts, MPI_Datatype type, int n);
uint64_t mpa_each_bytes_w(mpa_event *ev, mpa_thread *ts, const int *counts, const void *types, int n, int fortran);
int mpa_in_place(const void *buf, int fortran);
/* The first index of the indices the library's mpi_f08 MPI_Waitany, Testany, Waitsome and Testsome
 * return: 1 as the standard says, 0 from MPICH 4.0.2's (support.c) */
int mpa_f08_index_base(void);

/* Communicators: ids and definitions (comm.c). */
uint32_t mpa_comm_id_lookup(MPI_Comm comm); /* any communicator; MPI_COMM_WORLD is id 1, answered inline */
static inline uint32_t mpa_comm_id(MPI_Comm comm) { return comm == MPI_COMM_WORLD ? 1 : mpa_comm_id_lookup(comm); }
int mpa_comm_peers(MPI_Comm comm); /* size, or remote size of an intercommunicator */
int mpa_comm_local_size(MPI_Comm comm); /* size, or local size of an intercommunicator */
uint64_t mpa_own_bytes(const int *counts, MPI_Datatype type, MPI_Comm comm); /* counts[my rank] bytes */
int mpa_is_root(MPI_Comm comm, int root);
void mpa_newcomm(mpa_event *ev, MPI_Comm newcomm, MPI_Comm parent, uint32_t call);
/* Communicators made or freed while tracing is paused (MPI_Pcontrol(0)) are still defined and retired,
 * so that the ids and global ids of later ones stay right on every rank. */
extern int mpa_comms_tracked;
uint32_t mpa_comm_created(MPI_Comm newcomm, MPI_Comm parent, uint32_t call);
void mpa_comm_freed(uint32_t id);

/* Handles: requests and messages are logged as the bits of the library's handle; the reader turns
 * them into request identities (a handle is reused only after the request it named is gone). */
static inline uint64_t mpa_handle_bits(const void *h, size_t size)
{
  uint64_t v = 0;
  memcpy(&v, h, size < sizeof v ? size : sizeof v);
  return v;
}
#define MPA_HANDLE(h) mpa_handle_bits(&(h), sizeof(h))
#define MPA_HANDLE_OF(type, expr) __extension__({ type mpa_tmp_ = (expr); MPA_HANDLE(mpa_tmp_); })

uint64_t *mpa_scratch_handles_grow(mpa_thread *ts, int n);
static inline uint64_t *mpa_scratch_handles(mpa_thread *ts, int n)
{
  return n <= ts->handles_cap && ts->handles ? ts->handles : mpa_scratch_handles_grow(ts, n);
}
MPI_Status *mpa_scratch_statuses(mpa_thread *ts, int n);
MPI_Fint *mpa_scratch_fstatuses(mpa_thread *ts, int n);
int *mpa_scratch_indices(mpa_thread *ts, int n);

static inline void mpa_reqs(mpa_event *ev, const uint64_t *handles, int n)
{
  ev->mask |= MPA_F_REQS;
  ev->reqs = handles;
  ev->nreq = (uint32_t)n;
}
/* A handle the call made, after any it consumed (already at the front of the scratch). */
static inline void mpa_handle_out(mpa_event *ev, mpa_thread *ts, uint64_t handle)
{
  uint32_t k = ev->nreq;
  uint64_t *h = mpa_scratch_handles(ts, (int)k + 1);
  h[k] = handle;
  mpa_reqs(ev, h, (int)k + 1);
}
static inline void mpa_req_out(mpa_event *ev, mpa_thread *ts, const MPI_Request *req)
{
  mpa_handle_out(ev, ts, MPA_HANDLE(*req));
}
static inline void mpa_msg_out(mpa_event *ev, mpa_thread *ts, const MPI_Message *msg)
{
  mpa_handle_out(ev, ts, MPA_HANDLE(*msg));
}
void mpa_status1(mpa_event *ev, mpa_thread *ts, int index, const MPI_Status *st);
void mpa_status_all(mpa_event *ev, mpa_thread *ts, int n, const MPI_Status *st);
void mpa_status_some(mpa_event *ev, mpa_thread *ts, int n, const int *indices, const MPI_Status *st);

/* Cancelled requests. MPI_Cancel notes its request; while any noted request is outstanding
 * (mpa_cancels_pending, one relaxed load on the completion path, 0 in a program that never cancels),
 * a completion asks MPI_Test_cancelled of the status of each noted request it completes, and records
 * those that were cancelled (MPA_F_CANCELLED). st[k] is the status of ev->stats[k]. */
extern atomic_int mpa_cancels_pending;
void mpa_cancel_noted(uint64_t handle);
void mpa_cancel_check(mpa_event *ev, mpa_thread *ts, const MPI_Status *st);
static inline int mpa_cancels_to_check(const mpa_event *ev)
{
  return __builtin_expect(atomic_load_explicit(&mpa_cancels_pending, memory_order_relaxed) != 0, 0) && ev->nstat;
}

/* Fortran: the library's own entry for a mangled name, and its sentinels. */
void *mpa_fortran_real(const char *name);
int mpa_fortran_status_ignored(const MPI_Fint *status);
int mpa_fortran_statuses_ignored(const MPI_Fint *statuses);

#endif

/* Helpers the generated wrappers call: byte counts, statuses, request links, scratch arrays, and the
 * Fortran side (the library's own entry points and its sentinels). */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "wrap.h"

uint64_t mpa_sum_bytes_v(const int *counts, MPI_Datatype type, int n)
{
  int size = 0;
  if (!counts || n <= 0 || type == MPI_DATATYPE_NULL || PMPI_Type_size(type, &size) != MPI_SUCCESS) return 0;
  uint64_t total = 0;
  for (int i = 0; i < n; i++)
    if (counts[i] > 0) total += (uint64_t)counts[i];
  return total * (uint64_t)(size > 0 ? size : 0);
}

uint64_t mpa_sum_bytes_w(const int *counts, const void *types, int n, int fortran)
{
  if (!counts || !types || n <= 0) return 0;
  uint64_t total = 0;
  for (int i = 0; i < n; i++) {
    MPI_Datatype t = fortran ? PMPI_Type_f2c(((const MPI_Fint *)types)[i]) : ((const MPI_Datatype *)types)[i];
    total += mpa_type_bytes(counts[i], t);
  }
  return total;
}

static void *grow(void *p, int *cap, int n, size_t elem);

/* Room for n members' bytes in the event, or NULL when it has them already or n is out of range. */
static uint64_t *each_room(mpa_event *ev, mpa_thread *ts, int n)
{
  if ((ev->mask & MPA_F_VCOUNTS) || n <= 0 || n > MPA_MAX_VCOUNTS) return NULL;
  ts->vcounts = grow(ts->vcounts, &ts->vcounts_cap, n, sizeof *ts->vcounts);
  if (ts->vcounts_cap < n) return NULL;
  ev->mask |= MPA_F_VCOUNTS;
  ev->nvcounts = (uint32_t)n;
  ev->vcounts = ts->vcounts;
  return ts->vcounts;
}

uint64_t mpa_each_bytes_v(mpa_event *ev, mpa_thread *ts, const int *counts, MPI_Datatype type, int n)
{
  int size = 0;
  if (!counts || n <= 0 || type == MPI_DATATYPE_NULL || PMPI_Type_size(type, &size) != MPI_SUCCESS || size < 0)
    return 0;
  uint64_t *each = each_room(ev, ts, n);
  uint64_t total = 0;
  for (int i = 0; i < n; i++) {
    uint64_t b = counts[i] > 0 ? (uint64_t)counts[i] * (uint64_t)size : 0;
    if (each) each[i] = b;
    total += b;
  }
  return total;
}

uint64_t mpa_each_bytes_w(mpa_event *ev, mpa_thread *ts, const int *counts, const void *types, int n, int fortran)
{
  if (!counts || !types || n <= 0) return 0;
  uint64_t *each = each_room(ev, ts, n);
  uint64_t total = 0;
  for (int i = 0; i < n; i++) {
    MPI_Datatype t = fortran ? PMPI_Type_f2c(((const MPI_Fint *)types)[i]) : ((const MPI_Datatype *)types)[i];
    uint64_t b = mpa_type_bytes(counts[i], t);
    if (each) each[i] = b;
    total += b;
  }
  return total;
}

/* The addresses of a Fortran sentinel, one copy per process once the dynamic linker has bound every
 * reference to the first definition. Open MPI's are common blocks of their own (mpi_fortran_in_place_,
 * ...), one for every binding. MPICH's mpif.h and `use mpi` keep MPI_BOTTOM, MPI_IN_PLACE and
 * MPI_STATUS_IGNORE in COMMON /MPIPRIV1/, in that order, and MPI_STATUSES_IGNORE first in /MPIPRIV2/
 * (its mpif.h); its `use mpi_f08` has objects of its own (MPIR_F08_MPI_IN_PLACE, ...). Looked up once,
 * whether or not they exist: a library without them must not cost a dlsym on every call. */
typedef struct {
  const char *common;   /* the mpif.h / use mpi sentinel: a common block */
  size_t offset;        /* its place in the block, in Fortran integers */
  const char *f08;      /* the mpi_f08 sentinel, or NULL */
  int looked_up;
  const void *at[2];
} fortran_sentinel;

static int is_sentinel(fortran_sentinel *s, const void *p)
{
  if (!__atomic_load_n(&s->looked_up, __ATOMIC_ACQUIRE)) {
    const char *block = dlsym(RTLD_DEFAULT, s->common);
    s->at[0] = block ? block + s->offset * sizeof(MPI_Fint) : NULL;
    s->at[1] = s->f08 ? dlsym(RTLD_DEFAULT, s->f08) : NULL;
    __atomic_store_n(&s->looked_up, 1, __ATOMIC_RELEASE);
  }
  return p && (p == s->at[0] || p == s->at[1]);
}

#ifdef OPEN_MPI
static fortran_sentinel in_place_sentinel = {"mpi_fortran_in_place_", 0, NULL, 0, {0}};
static fortran_sentinel status_ignore_sentinel = {"mpi_fortran_status_ignore_", 0, NULL, 0, {0}};
static fortran_sentinel statuses_ignore_sentinel = {"mpi_fortran_statuses_ignore_", 0, NULL, 0, {0}};
#else
static fortran_sentinel in_place_sentinel = {"mpipriv1_", 1, "MPIR_F08_MPI_IN_PLACE", 0, {0}};
static fortran_sentinel status_ignore_sentinel = {"mpipriv1_", 2, "MPIR_F08_MPI_STATUS_IGNORE_OBJ", 0, {0}};
static fortran_sentinel statuses_ignore_sentinel = {"mpipriv2_", 0, "MPIR_F08_MPI_STATUSES_IGNORE_OBJ", 0, {0}};
#endif

/* fortran: 0 from C, 1 a Fortran buffer argument, 2 a Fortran TS 29113 descriptor (MPICH's mpi_f08
 * entries named *_f08ts_ take their buffers so: the address is the descriptor's first member) */
int mpa_in_place(const void *buf, int fortran)
{
  if (buf == MPI_IN_PLACE) return 1;
  if (!fortran) return 0;
  if (fortran == 2) buf = buf ? *(const void *const *)buf : NULL;
  return is_sentinel(&in_place_sentinel, buf);
}

/* A status the wrappers must not convert: PMPI_Status_f2c of MPI_STATUS_IGNORE fails with
 * MPI_ERR_IN_STATUS, which aborts the job under the default error handler. MPI_F_STATUS_IGNORE is the
 * C name MPI-3 gives the Fortran sentinel, whatever the MPI library calls its common block; Open MPI's
 * own name is kept as a second check. */
int mpa_fortran_status_ignored(const MPI_Fint *status)
{
  if (status == NULL || status == MPI_F_STATUS_IGNORE) return 1;
  return is_sentinel(&status_ignore_sentinel, status);
}

int mpa_fortran_statuses_ignored(const MPI_Fint *statuses)
{
  if (statuses == NULL || statuses == MPI_F_STATUSES_IGNORE) return 1;
  return is_sentinel(&statuses_ignore_sentinel, statuses);
}

/* The MPI library's Fortran entry for one of our Fortran wrappers: the profiling name of the same
 * mangling, else any other mangling of it. Without one the call cannot be made at all. */
void *mpa_fortran_real(const char *name)
{
  void *f;
#ifndef OPEN_MPI
  /* MPICH names the profiling entries of its mpi_f08 bindings pmpir_*_f08_ and pmpir_*_f08ts_ (its
   * src/binding/fortran/use_mpi_f08); Open MPI pmpi_*_f08_ */
  if (!strncmp(name, "pmpi_", 5) && strstr(name, "_f08")) {
    char r[160];
    snprintf(r, sizeof r, "pmpir_%s", name + 5);
    if ((f = dlsym(RTLD_NEXT, r))) return f;
  }
#endif
  f = dlsym(RTLD_NEXT, name);
  if (f) return f;
  char base[128], alt[160];
  snprintf(base, sizeof base, "%s", name);
  for (char *p = base; *p; p++) *p = (char)(*p >= 'A' && *p <= 'Z' ? *p - 'A' + 'a' : *p);
  size_t n = strlen(base);
  while (n && base[n - 1] == '_') base[--n] = '\0';
  if (n > 4 && !strcmp(base + n - 4, "_f08")) base[n - 4] = '\0';
  const char *forms[] = {"%s_", "%s__", "%s", "%s_f08_"};
  for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
    snprintf(alt, sizeof alt, forms[i], base);
    if ((f = dlsym(RTLD_NEXT, alt))) return f;
  }
  for (char *p = base; *p; p++) *p = (char)(*p >= 'a' && *p <= 'z' ? *p - 'a' + 'A' : *p);
  if ((f = dlsym(RTLD_NEXT, base))) return f;
  fprintf(stderr, "mpiadvise: the MPI library has no Fortran entry %s; the call cannot be made\n", name);
  abort();
}

/* MPICH 4.0.2's mpi_f08 MPI_Waitany, Testany, Waitsome and Testsome return C's 0-based indices
 * (measured, untraced: of [MPI_REQUEST_NULL, a receive], the receive came back as index 1, under Open MPI
 * as 2), where the mpi_f08 binding of later versions adds one. The library is asked once: a message to
 * itself on MPI_COMM_SELF, waited for with its own mpi_f08 MPI_Waitany. */
int mpa_f08_index_base(void)
{
#ifdef OPEN_MPI
  return 1;
#else
  static int base = -1;
  int b = __atomic_load_n(&base, __ATOMIC_ACQUIRE);
  if (b >= 0) return b;
  typedef void (*waitany_f08)(MPI_Fint *, MPI_Fint *, MPI_Fint *, void *, MPI_Fint *);
  waitany_f08 waitany = (waitany_f08)dlsym(RTLD_NEXT, "pmpir_waitany_f08_");
  void *ignore = dlsym(RTLD_DEFAULT, "MPIR_F08_MPI_STATUS_IGNORE_OBJ");
  b = 1;
  if (waitany && ignore) {
    int out = 0, in = 1;
    MPI_Request r;
    if (PMPI_Irecv(&out, 1, MPI_INT, 0, 31999, MPI_COMM_SELF, &r) == MPI_SUCCESS) {
      PMPI_Send(&in, 1, MPI_INT, 0, 31999, MPI_COMM_SELF);
      MPI_Fint count = 2, index = 0, ierr = 0;
      MPI_Fint reqs[2] = {PMPI_Request_c2f(MPI_REQUEST_NULL), PMPI_Request_c2f(r)};
      waitany(&count, reqs, &index, ignore, &ierr);
      if (ierr == MPI_SUCCESS && index == 1) b = 0;
    }
  }
  __atomic_store_n(&base, b, __ATOMIC_RELEASE);
  return b;
#endif
}

/* ---- scratch arrays, per thread, grown as needed ---------------------------------------------------- */
static void *grow(void *p, int *cap, int n, size_t elem)
{
  if (n <= *cap) return p;
  int c = *cap ? *cap : 16;
  while (c < n) c *= 2;
  void *q = realloc(p, (size_t)c * elem);
  if (!q) return p;
  *cap = c;
  return q;
}

uint64_t *mpa_scratch_handles_grow(mpa_thread *ts, int n)
{
  ts->handles = grow(ts->handles, &ts->handles_cap, n > 0 ? n : 1, sizeof *ts->handles);
  return ts->handles;
}

MPI_Status *mpa_scratch_statuses(mpa_thread *ts, int n)
{
  ts->statuses = grow(ts->statuses, &ts->statuses_cap, n > 0 ? n : 1, sizeof *ts->statuses);
  return ts->statuses;
}

MPI_Fint *mpa_scratch_fstatuses(mpa_thread *ts, int n)
{
  ts->fstatuses = grow(ts->fstatuses, &ts->fstatuses_cap, (n > 0 ? n : 1) * MPA_F_STATUS_SIZE, sizeof(MPI_Fint));
  return ts->fstatuses;
}

int *mpa_scratch_indices(mpa_thread *ts, int n)
{
  ts->indices = grow(ts->indices, &ts->indices_cap, n > 0 ? n : 1, sizeof *ts->indices);
  return ts->indices;
}

static mpa_status *scratch_stats(mpa_thread *ts, int n)
{
  ts->stats = grow(ts->stats, &ts->stats_cap, n > 0 ? n : 1, sizeof *ts->stats);
  return ts->stats;
}

/* ---- requests and statuses ------------------------------------------------------------------------ */

#ifdef MPICH
int mpa_mpich_status_bytes, mpa_mpich_type_sizes;

/* The MPICH ABI (MPICH, Intel MPI, MVAPICH) keeps two things where the tracer can read them without a
 * call: a status's count, in bytes, in count_lo and above the cancelled bit of count_hi_and_cancelled
 * (MPICH's MPIR_STATUS_GET_COUNT), and a predefined type's size in bits 8-15 of its handle (handle kind
 * builtin, the top bits 01: MPIR_Datatype_get_basic_size). PMPI_Get_count and PMPI_Type_size took 82 and
 * 66 instructions a call in MPICH 4.0.2 (callgrind). Each is used only once the library running has
 * shown it holds, here in MPI_Init: a count set by MPI_Status_set_elements, and the sizes of the
 * predefined types, as PMPI_Get_count and PMPI_Type_size give them. */
void mpa_mpich_shortcuts_check(void)
{
  MPI_Status st;
  memset(&st, 0, sizeof st);
  const int n = 1234567;
  int count = -1;
  mpa_mpich_status_bytes = PMPI_Status_set_elements(&st, MPI_BYTE, n) == MPI_SUCCESS &&
                           PMPI_Get_count(&st, MPI_BYTE, &count) == MPI_SUCCESS && count == n &&
                           mpa_mpich_count(&st) == (uint64_t)n;
  static const MPI_Datatype types[] = {MPI_CHAR, MPI_BYTE, MPI_SHORT, MPI_INT, MPI_LONG, MPI_LONG_LONG, MPI_FLOAT,
                                       MPI_DOUBLE, MPI_LONG_DOUBLE, MPI_UNSIGNED, MPI_UINT64_T, MPI_C_DOUBLE_COMPLEX,
                                       MPI_PACKED};
  int ok = 1;
  for (size_t i = 0; ok && i < sizeof types / sizeof types[0]; i++) {
    int size = -1;
    ok = mpa_mpich_builtin(types[i]) && PMPI_Type_size(types[i], &size) == MPI_SUCCESS &&
         (unsigned)size == mpa_mpich_builtin_size(types[i]);
  }
  mpa_mpich_type_sizes = ok;
}
#endif

#ifdef OPEN_MPI
int mpa_ompi_type_size_at = -1;

/* PMPI_Type_size took 58 instructions a call in Open MPI 4.1 (callgrind), for a field of the datatype
 * object. The field's offset depends on how the library was built (opal_object_t grows by 24 bytes with
 * OPAL_ENABLE_DEBUG); an offset is used only when it gives PMPI_Type_size's answer for every predefined
 * type below and for two derived ones, made and freed here. */
void mpa_ompi_shortcuts_check(void)
{
  MPI_Datatype types[16] = {MPI_CHAR, MPI_BYTE, MPI_SHORT, MPI_INT, MPI_LONG, MPI_LONG_LONG, MPI_FLOAT,
                            MPI_DOUBLE, MPI_LONG_DOUBLE, MPI_UNSIGNED, MPI_UINT64_T, MPI_C_DOUBLE_COMPLEX,
                            MPI_PACKED, MPI_DOUBLE_INT};
  int n = 14;
  if (PMPI_Type_contiguous(5, MPI_INT, &types[n]) == MPI_SUCCESS) n++;
  if (PMPI_Type_vector(2, 3, 4, MPI_DOUBLE, &types[n]) == MPI_SUCCESS) n++;
  static const int offsets[] = {24, 48};
  for (size_t o = 0; o < sizeof offsets / sizeof offsets[0] && mpa_ompi_type_size_at < 0; o++) {
    int ok = n == 16;
    for (int i = 0; ok && i < n; i++) {
      int size = -1;
      size_t bytes;
      memcpy(&bytes, (const char *)types[i] + offsets[o], sizeof bytes);
      ok = PMPI_Type_size(types[i], &size) == MPI_SUCCESS && size >= 0 && bytes == (size_t)size;
    }
    if (ok) mpa_ompi_type_size_at = offsets[o];
  }
  for (int i = 14; i < n; i++) PMPI_Type_free(&types[i]);
}
#endif

static void fill(mpa_status *out, int index, const MPI_Status *st)
{
  out->index = index;
  out->source = mpa_rank_code(st->MPI_SOURCE);
  out->tag = mpa_tag_code(st->MPI_TAG);
#ifdef OPEN_MPI
  out->bytes = (uint64_t)st->_ucount; /* what PMPI_Get_count(MPI_BYTE) returns, without the call */
#else
#ifdef MPICH
  if (mpa_mpich_status_bytes) {
    /* as PMPI_Get_count gives it, MPI_UNDEFINED beyond INT_MAX as 0: the library does not write the
     * status of a send request, and one the program passed holds whatever was there */
    const uint64_t count = mpa_mpich_count(st);
    out->bytes = count <= INT_MAX ? count : 0;
    return;
  }
#endif
  int count = 0;
  if (PMPI_Get_count(st, MPI_BYTE, &count) != MPI_SUCCESS || count == MPI_UNDEFINED || count < 0) count = 0;
  out->bytes = (uint64_t)count;
#endif
}

void mpa_status1(mpa_event *ev, mpa_thread *ts, int index, const MPI_Status *st)
{
  mpa_status *s = scratch_stats(ts, 1);
  fill(s, index, st);
  ev->mask |= MPA_F_STATUS;
  ev->stats = s;
  ev->nstat = 1;
}

void mpa_status_all(mpa_event *ev, mpa_thread *ts, int n, const MPI_Status *st)
{
  if (n <= 0) return;
  mpa_status *s = scratch_stats(ts, n);
  for (int i = 0; i < n; i++) fill(&s[i], i, &st[i]);
  ev->mask |= MPA_F_STATUS;
  ev->stats = s;
  ev->nstat = (uint32_t)n;
}

void mpa_status_some(mpa_event *ev, mpa_thread *ts, int n, const int *indices, const MPI_Status *st)
{
  mpa_status *s = scratch_stats(ts, n);
  for (int i = 0; i < n; i++) fill(&s[i], indices[i], &st[i]);
  ev->mask |= MPA_F_STATUS;
  ev->stats = s;
  ev->nstat = (uint32_t)n;
}

/* ---- cancelled requests ---------------------------------------------------------------------------- */
atomic_int mpa_cancels_pending;
static pthread_mutex_t g_cancel_mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t *g_cancelled; /* handles of requests MPI_Cancel was called on, not yet completed */
static int g_cancelled_n, g_cancelled_cap;

void mpa_cancel_noted(uint64_t handle)
{
  pthread_mutex_lock(&g_cancel_mu);
  int known = 0;
  for (int i = 0; i < g_cancelled_n && !known; i++) known = g_cancelled[i] == handle;
  if (!known) {
    uint64_t *grown = grow(g_cancelled, &g_cancelled_cap, g_cancelled_n + 1, sizeof *g_cancelled);
    if (g_cancelled_n < g_cancelled_cap) { /* else no memory: the cancel goes unrecorded */
      g_cancelled = grown;
      g_cancelled[g_cancelled_n++] = handle;
    }
  }
  atomic_store_explicit(&mpa_cancels_pending, g_cancelled_n, memory_order_relaxed);
  pthread_mutex_unlock(&g_cancel_mu);
}

void mpa_cancel_check(mpa_event *ev, mpa_thread *ts, const MPI_Status *st)
{
  uint32_t n = 0;
  ts->cancelled = grow(ts->cancelled, &ts->cancelled_cap, (int)ev->nstat, sizeof *ts->cancelled);
  if (ts->cancelled_cap < (int)ev->nstat) return;
  pthread_mutex_lock(&g_cancel_mu);
  for (uint32_t k = 0; k < ev->nstat && g_cancelled_n; k++) {
    int32_t index = ev->stats[k].index;
    if (index < 0 || (uint32_t)index >= ev->nreq) continue;
    uint64_t handle = ev->reqs[index]; /* as it was before the completion freed it */
    for (int i = 0; i < g_cancelled_n; i++) {
      if (g_cancelled[i] != handle) continue;
      g_cancelled[i] = g_cancelled[--g_cancelled_n]; /* completed: no longer outstanding */
      int flag = 0;
      if (PMPI_Test_cancelled(&st[k], &flag) == MPI_SUCCESS && flag) ts->cancelled[n++] = k;
      break;
    }
  }
  atomic_store_explicit(&mpa_cancels_pending, g_cancelled_n, memory_order_relaxed);
  pthread_mutex_unlock(&g_cancel_mu);
  if (n) {
    ev->mask |= MPA_F_CANCELLED;
    ev->cancelled = ts->cancelled;
    ev->ncancelled = n;
  }
}

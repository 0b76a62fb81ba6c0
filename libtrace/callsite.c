/* Call sites: the return address of every intercepted call (or, with MPIADVISE_STACK_DEPTH=N, N frames
 * through libunwind), each unique one defined once in the log, and the map of loaded modules that lets
 * the reader symbolise them offline. Nothing is symbolised in the job. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "wrap.h"

#ifndef MPA_UNWIND_SONAME
#define MPA_UNWIND_SONAME "libunwind.so.8"
#endif

/* libunwind is loaded (dlopen) only when MPIADVISE_STACK_DEPTH asks for more than the return address:
 * linked, it and its liblzma took about 110 KiB of every rank's resident memory that one frame never
 * uses (libtrace/core.c, start) */
static int (*g_backtrace)(void **frames, int max);

const char *mpa_unwind_load(void)
{
  if (g_backtrace) return NULL;
  void *h = dlopen(MPA_UNWIND_SONAME, RTLD_NOW | RTLD_LOCAL);
  if (!h) return dlerror();
  void *f = dlsym(h, "unw_backtrace");
  if (!f) return "unw_backtrace is missing from " MPA_UNWIND_SONAME;
  *(void **)&g_backtrace = f;
  return NULL;
}

#define MAX_FRAMES 32

typedef struct site {
  uint64_t key; /* the return address, or a hash of the frames */
  uint32_t id;
  int depth;
  uintptr_t frames[MAX_FRAMES];
} site;

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static site *g_sites;
static size_t g_n, g_cap;
static uint32_t *g_index; /* open addressing: key -> 1 + position in g_sites */
static size_t g_index_cap;

typedef struct module {
  uintptr_t start, end, base;
} module;
static module *g_modules;
static size_t g_nmodules, g_capmodules;

/* ---- modules ------------------------------------------------------------------------------------------ */
static int known_module(uintptr_t a)
{
  for (size_t i = 0; i < g_nmodules; i++)
    if (a >= g_modules[i].start && a < g_modules[i].end) return 1;
  return 0;
}

static int add_module(struct dl_phdr_info *info, size_t size, void *data)
{
  (void)size;
  (void)data;
  uintptr_t lo = UINTPTR_MAX, hi = 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X)) continue;
    uintptr_t s = info->dlpi_addr + ph->p_vaddr, e = s + ph->p_memsz;
    if (s < lo) lo = s;
    if (e > hi) hi = e;
  }
  if (lo >= hi || known_module(lo)) return 0;
  char path[4096];
  const char *name = info->dlpi_name;
  if (!name || !*name) {
    ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
    path[n > 0 ? n : 0] = '\0';
    name = path;
  }
  if (strstr(name, "linux-vdso") || strstr(name, "libmpiadvise")) return 0;
  if (g_nmodules == g_capmodules) {
    size_t cap = g_capmodules ? 2 * g_capmodules : 32;
    module *m = realloc(g_modules, cap * sizeof *m);
    if (!m) return 0;
    g_modules = m;
    g_capmodules = cap;
  }
  g_modules[g_nmodules++] = (module){lo, hi, info->dlpi_addr};
  size_t len = strlen(name);
  uint8_t *rec = malloc(len + 40), *p = rec;
  if (!rec) return 0;
  *p++ = MPA_DEF_MODULE;
  p = mpa_put_varint(p, lo);
  p = mpa_put_varint(p, hi);
  p = mpa_put_varint(p, info->dlpi_addr);
  p = mpa_put_varint(p, len);
  memcpy(p, name, len);
  p += len;
  mpa_defs_append(rec, (size_t)(p - rec));
  free(rec);
  return 0;
}

void mpa_modules_record(void)
{
  pthread_mutex_lock(&g_mu);
  dl_iterate_phdr(add_module, NULL);
  pthread_mutex_unlock(&g_mu);
}

/* ---- sites -------------------------------------------------------------------------------------------- */
static int index_grow(void)
{
  size_t cap = g_index_cap ? 2 * g_index_cap : 1024;
  uint32_t *t = calloc(cap, sizeof *t);
  if (!t) return -1;
  for (size_t i = 0; i < g_n; i++) {
    size_t h = (size_t)(g_sites[i].key * 0x9e3779b97f4a7c15ull) & (cap - 1);
    while (t[h]) h = (h + 1) & (cap - 1);
    t[h] = (uint32_t)i + 1;
  }
  free(g_index);
  g_index = t;
  g_index_cap = cap;
  return 0;
}

/* Finds or defines the site; g_mu held. */
static uint32_t site_locked(uint64_t key, const uintptr_t *frames, int depth)
{
  if (g_index_cap) {
    size_t h = (size_t)(key * 0x9e3779b97f4a7c15ull) & (g_index_cap - 1);
    for (; g_index[h]; h = (h + 1) & (g_index_cap - 1)) {
      const site *s = &g_sites[g_index[h] - 1];
      if (s->key == key && s->depth == depth && !memcmp(s->frames, frames, sizeof(uintptr_t) * (size_t)depth))
        return s->id;
    }
  }
  if ((g_n + 1) * 2 > g_index_cap && index_grow()) return 0;
  if (g_n == g_cap) {
    size_t cap = g_cap ? 2 * g_cap : 64;
    site *t = realloc(g_sites, cap * sizeof *t);
    if (!t) return 0;
    g_sites = t;
    g_cap = cap;
  }
  site *s = &g_sites[g_n];
  s->key = key;
  s->id = (uint32_t)g_n + 1;
  s->depth = depth;
  memcpy(s->frames, frames, sizeof(uintptr_t) * (size_t)depth);
  size_t h = (size_t)(key * 0x9e3779b97f4a7c15ull) & (g_index_cap - 1);
  while (g_index[h]) h = (h + 1) & (g_index_cap - 1);
  g_index[h] = (uint32_t)g_n + 1;
  g_n++;

  for (int i = 0; i < depth; i++)
    if (frames[i] && !known_module(frames[i])) {
      dl_iterate_phdr(add_module, NULL); /* a module loaded since: map it too */
      break;
    }
  uint8_t rec[16 + 10 * MAX_FRAMES], *p = rec;
  *p++ = MPA_DEF_CALLSITE;
  p = mpa_put_varint(p, s->id);
  p = mpa_put_varint(p, (uint64_t)depth);
  for (int i = 0; i < depth; i++) p = mpa_put_varint(p, frames[i]);
  mpa_defs_append(rec, (size_t)(p - rec));
  return s->id;
}

static uint64_t hash_frames(const uintptr_t *f, int n)
{
  uint64_t h = 1469598103934665603ull;
  for (int i = 0; i < n; i++) {
    h ^= f[i];
    h *= 1099511628211ull;
  }
  return h | 1; /* never 0: 0 marks an empty cache slot */
}

/* Where the caller is among the frames libunwind gives (1 from a C wrapper, 2 or 3 from a Fortran one):
 * learnt, so that a call asks for that many frames and its depth, not more. A frame cost about 7 ns here
 * (unw_backtrace from a stack of ten frames: 37 ns for 3, 80 for 9); asking for 5 beyond the depth on
 * every call, as a fixed margin did, took 30 ns of a call at MPIADVISE_STACK_DEPTH=4. */
static atomic_int g_caller_frame = 1;

/* The index of return_address among the first frames of raw, or -1 */
static int caller_frame(void *const *raw, int n, const void *return_address)
{
  for (int i = 0; i < n && i < 8; i++)
    if (raw[i] == return_address) return i;
  return -1;
}

/* ---- stacks seen before (MPIADVISE_STACK_DEPTH above 1) -------------------------------------------------
 * A loop calls MPI from the same place of the same chain of functions, and libunwind took most of such a
 * call's time (unw_backtrace of 5 frames about 50 ns). A thread remembers, for a call's return address and
 * the position of its stack (this function's frame), where on the stack the return addresses of the
 * frames above the caller were found and what they were. The return address and the position fix the
 * caller's stack pointer; the caller's frame at that return address has a fixed size, so its own return
 * address is in the same place, and so on up: while every remembered place still holds what it held, the
 * frames are the ones found then and libunwind is not asked. (A frame sized at run time, by alloca or an
 * array of variable length, moves the places above it: a call through one then finds other contents
 * there, unless they hold by chance the very return address remembered.) Only the thread's own stack, as
 * pthread_getattr_np gives it, is remembered: a stack switched to by a coroutine library may be freed and
 * its addresses reused. Two ways a set, so that a site reached alternately through two chains of the same
 * depth keeps both. */
#define STACK_SETS 128
#define STACK_WAYS 2
#define STACK_SCAN_MAX (64u * 1024) /* bytes searched above a frame for its caller's return address */

typedef struct stack_seen {
  uintptr_t ra, pos; /* ra 0: empty */
  uint32_t id, used;
  int n;             /* places remembered: the frames above the caller */
} stack_seen;

struct mpa_stack_cache {
  uintptr_t lo, hi;  /* the thread's stack */
  uint32_t tick;
  int places;        /* room for places an entry: the depth less the caller */
  size_t stride;     /* bytes an entry: stack_seen, then its places, then what they held */
  unsigned char entries[];
};

static inline stack_seen *seen_at(struct mpa_stack_cache *c, size_t i)
{
  return (stack_seen *)(void *)(c->entries + i * c->stride);
}
static inline uintptr_t *places_of(stack_seen *e) { return (uintptr_t *)(void *)(e + 1); }

static inline unsigned stack_set(uintptr_t ra, uintptr_t pos)
{
  return (unsigned)(((ra ^ (pos << 7)) * 0x9e3779b97f4a7c15ull) >> 57) & (STACK_SETS - 1);
}

/* The id of the site of a call from return address ra at stack position pos, if the stack still holds
 * the return addresses it held when it was seen; else 0. Reads only places of live frames, found there
 * before (not the sanitizer's to check: they lie in other functions' frames). */
MPA_NO_SANITIZE_ADDRESS
static uint32_t stack_known(struct mpa_stack_cache *c, uintptr_t ra, uintptr_t pos)
{
  const unsigned set = stack_set(ra, pos);
  for (unsigned w = 0; w < STACK_WAYS; w++) {
    stack_seen *e = seen_at(c, set * STACK_WAYS + w);
    if (e->ra != ra || e->pos != pos) continue;
    const uintptr_t *place = places_of(e), *held = place + c->places;
    int k = 0;
    while (k < e->n && *(const volatile uintptr_t *)place[k] == held[k]) k++;
    if (k < e->n) continue;
    e->used = ++c->tick;
    return e->id;
  }
  return 0;
}

static struct mpa_stack_cache *stack_cache_new(void)
{
  const int places = mpa_cfg.stack_depth - 1;
  const size_t stride = sizeof(stack_seen) + 2 * sizeof(uintptr_t) * (size_t)places;
  struct mpa_stack_cache *c = calloc(1, sizeof *c + stride * STACK_SETS * STACK_WAYS);
  if (!c) return NULL;
  c->places = places;
  c->stride = stride;
  pthread_attr_t attr;
  void *addr;
  size_t size;
  if (pthread_getattr_np(pthread_self(), &attr) == 0) {
    if (pthread_attr_getstack(&attr, &addr, &size) == 0) {
      c->lo = (uintptr_t)addr;
      c->hi = (uintptr_t)addr + size;
    }
    pthread_attr_destroy(&attr);
  }
  return c;
}

/* Remembers where the frames above the caller (frames[1..depth)) have their return addresses: each found
 * by its value, above the one before, within the thread's stack. Nothing is remembered when one is not
 * there (a signal's frame, a stack of another kind). */
MPA_NO_SANITIZE_ADDRESS
static void stack_learn(mpa_thread *ts, uintptr_t ra, uintptr_t pos, const uintptr_t *frames, int depth, uint32_t id)
{
  if (!ts->stack_cache && !(ts->stack_cache = stack_cache_new())) return;
  struct mpa_stack_cache *c = ts->stack_cache;
  if (!id || pos < c->lo || pos >= c->hi || depth - 1 > c->places) return;
  uintptr_t place[MAX_FRAMES];
  uintptr_t at = (pos + 7) & ~(uintptr_t)7;
  for (int k = 1; k < depth; k++) {
    const uintptr_t end = c->hi - at > STACK_SCAN_MAX ? at + STACK_SCAN_MAX : c->hi;
    while (at + sizeof(uintptr_t) <= end && *(const volatile uintptr_t *)at != frames[k]) at += sizeof(uintptr_t);
    if (!frames[k] || at + sizeof(uintptr_t) > end) return;
    place[k - 1] = at;
    at += sizeof(uintptr_t);
  }
  const unsigned set = stack_set(ra, pos);
  stack_seen *e = seen_at(c, set * STACK_WAYS), *other = seen_at(c, set * STACK_WAYS + 1);
  if (e->ra && (!other->ra || other->used < e->used)) e = other; /* an empty way, or the older */
  e->ra = ra;
  e->pos = pos;
  e->id = id;
  e->used = ++c->tick;
  e->n = depth - 1;
  memcpy(places_of(e), place, sizeof(uintptr_t) * (size_t)e->n);
  memcpy(places_of(e) + c->places, frames + 1, sizeof(uintptr_t) * (size_t)e->n);
}

void mpa_callsite_thread_gone(mpa_thread *ts)
{
  free(ts->stack_cache);
  ts->stack_cache = NULL;
}

uint32_t mpa_callsite_lookup(mpa_thread *ts, void *return_address)
{
  uintptr_t frames[MAX_FRAMES];
  int depth = 1;
  uint64_t key;
  uintptr_t pos = 0;
  frames[0] = (uintptr_t)return_address;
  if (mpa_cfg.stack_depth <= 1 || !g_backtrace) {
    key = frames[0];
  } else {
    pos = (uintptr_t)__builtin_frame_address(0);
    if (ts->stack_cache) {
      const uint32_t id = stack_known(ts->stack_cache, frames[0], pos);
      if (id) return id;
    }
    void *raw[MAX_FRAMES + 8];
    /* the caller is frame 1 (mpa_callsite_lookup <- the wrapper), a Fortran caller one or two further:
     * found by its return address. Asked for as many frames as the last call needed; again with room
     * when the caller is not among them, or its frames were cut short by the asking. */
    const int hint = atomic_load_explicit(&g_caller_frame, memory_order_relaxed);
    const int asked = hint + mpa_cfg.stack_depth;
    int n = g_backtrace(raw, asked);
    int from = caller_frame(raw, n, return_address);
    if (from < 0 || (from + mpa_cfg.stack_depth > n && n == asked)) {
      n = g_backtrace(raw, mpa_cfg.stack_depth + 8);
      from = caller_frame(raw, n, return_address);
    }
    if (from >= 0 && from != hint) atomic_store_explicit(&g_caller_frame, from, memory_order_relaxed);
    if (from < 0) pos = 0; /* the caller not among the frames: nothing to remember */
    if (from >= 0) {
      depth = 0;
      for (int i = from; i < n && depth < mpa_cfg.stack_depth; i++) frames[depth++] = (uintptr_t)raw[i];
    }
    key = hash_frames(frames, depth);
  }
  unsigned slot = mpa_callsite_slot(key);
  uint32_t id;
  if (ts->cs_addr[slot] == key) {
    id = ts->cs_id[slot];
  } else {
    pthread_mutex_lock(&g_mu);
    id = site_locked(key, frames, depth);
    pthread_mutex_unlock(&g_mu);
    ts->cs_addr[slot] = key;
    ts->cs_id[slot] = id;
  }
  if (pos) stack_learn(ts, frames[0], pos, frames, depth, id);
  return id;
}

size_t mpa_callsite_count(void) { return g_n; }

void mpa_callsite_tables_json(mpa_bytes *out)
{
  pthread_mutex_lock(&g_mu);
  mpa_json_raw(out, "[");
  for (size_t i = 0; i < g_n; i++) {
    mpa_json_fmt(out, "%s{\"id\":%u,\"frames\":[", i ? "," : "", g_sites[i].id);
    for (int k = 0; k < g_sites[i].depth; k++)
      mpa_json_fmt(out, "%s\"0x%llx\"", k ? "," : "", (unsigned long long)g_sites[i].frames[k]);
    mpa_json_raw(out, "]}");
  }
  mpa_json_raw(out, "]");
  pthread_mutex_unlock(&g_mu);
}

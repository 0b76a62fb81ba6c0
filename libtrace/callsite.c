/* Call sites: the return address of every intercepted call (or, with MPIADVISE_STACK_DEPTH=N, N frames
 * through libunwind), each unique one defined once in the log, and the map of loaded modules that lets
 * the reader symbolise them offline. Nothing is symbolised in the job. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* the stacks each thread remembers (below) take libunwind's cursor, on x86-64 */
#if defined(__x86_64__) && defined(__has_include)
#if __has_include(<libunwind.h>)
#define MPA_STACK_CACHE 1
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#endif
#endif

#include "wrap.h"

#ifndef MPA_UNWIND_SONAME
#define MPA_UNWIND_SONAME "libunwind.so.8"
#endif

/* libunwind is loaded (dlopen) only when MPIADVISE_STACK_DEPTH asks for more than the return address:
 * linked, it and its liblzma took about 110 KiB of every rank's resident memory that one frame never
 * uses (libtrace/core.c, start) */
static int (*g_backtrace)(void **frames, int max);
#if MPA_STACK_CACHE
static int stack_cache_load(void *h);
static int g_stack_cache_on; /* libunwind's cursor functions are loaded */
#endif

const char *mpa_unwind_load(void)
{
  if (g_backtrace) return NULL;
  void *h = dlopen(MPA_UNWIND_SONAME, RTLD_NOW | RTLD_LOCAL);
  if (!h) return dlerror();
  void *f = dlsym(h, "unw_backtrace");
  if (!f) return "unw_backtrace is missing from " MPA_UNWIND_SONAME;
  *(void **)&g_backtrace = f;
#if MPA_STACK_CACHE
  g_stack_cache_on = stack_cache_load(h);
#endif
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
 * call's time (unw_backtrace of 5 frames about 50 ns). A thread remembers, for a call's return address
 * and the position of its stack (this function's frame), what the stack held then where the chain's
 * layout is kept: the return address of each frame above the caller, where that frame's caller stored
 * it, and, for a frame whose size is set at run time, the frame pointer it kept. While all of these still
 * hold the same, the frames are the ones found then and libunwind is not asked.
 *
 * Why that is exact: the return address, the position and where this function was called from (which
 * wrapper: a call through a pointer may reach several) fix the caller's stack pointer (the wrapper's frame
 * and this one are of fixed size). A frame whose size is fixed at each return address (stack
 * pointer based: most compiled code) then has its own return address in a fixed place, and so on up. A
 * frame sized at run time (alloca, arrays of variable length, a stack realigned to 32 or 64 bytes)
 * addresses its frame through rbp, which points right below its return address: that rbp, saved by the
 * frames below, is checked too, and a frame entered elsewhere has another. The places are where
 * libunwind's own unwinding found them (the stack pointer of each frame: its return address is just below,
 * on x86-64), never searched for by value. Not remembered: chains through a signal's frame, calls on an
 * alternate signal stack or on a stack that is not the thread's own (a coroutine library's, which may be
 * freed), and a frame whose rbp points into it otherwise (gcc's dynamic realignment through r10, which it
 * uses where a realigned function also passes arguments on the stack: its caller's stack pointer is kept
 * in the frame; tests/programs/stacks.c has one), a frame without unwind information (libunwind's guess
 * reads what this does not check), and a chain shorter than asked for (it may end at such a guess).
 * Learning walks the
 * stack through libunwind's cursor (about 2.5 us, against 60 ns for unw_backtrace), once per chain and
 * position: a set that keeps missing (chains that take turns beyond its two ways, a chain that cannot be
 * remembered) learns again only after 16 more misses. x86-64 only. */
#if MPA_STACK_CACHE
#define STACK_SETS 128
#define STACK_WAYS 2
#define STACK_RELEARN 16 /* misses of a set between two learnings that replace a way */

static int (*g_unw_getcontext)(unw_context_t *);
static int (*g_unw_init_local)(unw_cursor_t *, unw_context_t *);
static int (*g_unw_step)(unw_cursor_t *);
static int (*g_unw_get_reg)(unw_cursor_t *, unw_regnum_t, unw_word_t *);
static int (*g_unw_get_save_loc)(unw_cursor_t *, int, unw_save_loc_t *);
static int (*g_unw_is_signal_frame)(unw_cursor_t *);
static int (*g_unw_get_proc_info)(unw_cursor_t *, unw_proc_info_t *);

#define MPA_STR2(x) #x
#define MPA_STR(x) MPA_STR2(x)
/* libunwind's cursor functions, by the names its header gives them; 1 when all are there */
static int stack_cache_load(void *h)
{
  *(void **)&g_unw_getcontext = dlsym(h, MPA_STR(unw_tdep_getcontext));
  *(void **)&g_unw_init_local = dlsym(h, MPA_STR(unw_init_local));
  *(void **)&g_unw_step = dlsym(h, MPA_STR(unw_step));
  *(void **)&g_unw_get_reg = dlsym(h, MPA_STR(unw_get_reg));
  *(void **)&g_unw_get_save_loc = dlsym(h, MPA_STR(unw_get_save_loc));
  *(void **)&g_unw_is_signal_frame = dlsym(h, MPA_STR(unw_is_signal_frame));
  *(void **)&g_unw_get_proc_info = dlsym(h, MPA_STR(unw_get_proc_info));
  return g_unw_getcontext && g_unw_init_local && g_unw_step && g_unw_get_reg && g_unw_get_save_loc &&
         g_unw_is_signal_frame && g_unw_get_proc_info;
}

typedef struct stack_seen {
  uintptr_t ra, pos; /* ra 0: empty */
  uintptr_t via;     /* where mpa_callsite_lookup was called: which wrapper's frame lies between */
  uint32_t id, used;
  int n;             /* places to check */
} stack_seen;

struct mpa_stack_cache {
  uintptr_t lo, hi;  /* the thread's stack */
  uint32_t tick;
  int room;          /* places an entry has room for: 2 a frame above the caller */
  size_t stride;     /* bytes an entry: stack_seen, then its places, then what they held */
  uint8_t relearn[STACK_SETS]; /* misses before the set learns again */
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
 * what it held where its layout is kept when that call was seen; else 0. Reads only places in live frames
 * above pos (other functions' frames: not the sanitizer's to check). */
MPA_NO_SANITIZE_ADDRESS
static uint32_t stack_known(struct mpa_stack_cache *c, uintptr_t ra, uintptr_t pos, uintptr_t via)
{
  const unsigned set = stack_set(ra, pos);
  for (unsigned w = 0; w < STACK_WAYS; w++) {
    stack_seen *e = seen_at(c, set * STACK_WAYS + w);
    if (e->ra != ra || e->pos != pos || e->via != via) continue;
    const uintptr_t *place = places_of(e), *held = place + c->room;
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
  const int room = 2 * (mpa_cfg.stack_depth - 1);
  const size_t stride = sizeof(stack_seen) + 2 * sizeof(uintptr_t) * (size_t)room;
  struct mpa_stack_cache *c = calloc(1, sizeof *c + stride * STACK_SETS * STACK_WAYS);
  if (!c) return NULL;
  c->room = room;
  c->stride = stride;
  pthread_attr_t attr;
  void *addr;
  size_t size;
  if (pthread_getattr_np(pthread_self(), &attr) == 0) {
    if (pthread_attr_getstack(&attr, &addr, &size) == 0) {
      c->lo = (uintptr_t)addr;
      c->hi = (uintptr_t)addr + size;
      /* the main thread's stack, when its limit is unlimited, is reported down to the next mapping: only
       * its top 1 GiB is taken for it */
      if (getpid() == (pid_t)syscall(SYS_gettid) && c->hi - c->lo > ((uintptr_t)1 << 30)) c->lo = c->hi - ((uintptr_t)1 << 30);
    }
    pthread_attr_destroy(&attr);
  }
  return c;
}

/* Remembers the chain of a call from return address ra at stack position pos (its frames: frames[0, depth),
 * as unw_backtrace gave them, and its site id), walking the stack with libunwind's cursor from here. Nothing
 * is remembered where the walk disagrees, passes a signal's frame, or leaves the thread's stack. */
__attribute__((noinline)) static void stack_learn(mpa_thread *ts, uintptr_t ra, uintptr_t pos, uintptr_t via,
                                                  const uintptr_t *frames, int depth, uint32_t id)
{
  /* a chain shorter than asked for ends where libunwind found no caller, which may be its guess about a
   * frame without unwind information: not remembered */
  if (!g_stack_cache_on || !id || depth < mpa_cfg.stack_depth) return;
  if (!ts->stack_cache && !(ts->stack_cache = stack_cache_new())) return;
  struct mpa_stack_cache *c = ts->stack_cache;
  const unsigned set = stack_set(ra, pos);
  if (c->relearn[set]) {
    c->relearn[set]--;
    return;
  }
  /* what follows fails, or takes a way another chain held: the set waits before it learns again */
  c->relearn[set] = STACK_RELEARN;
  if (pos < c->lo || pos >= c->hi || 2 * (depth - 1) > c->room) return;
  stack_t alt;
  if (sigaltstack(NULL, &alt) == 0 && (alt.ss_flags & SS_ONSTACK)) return;

  unw_context_t uc;
  unw_cursor_t cur;
  if (g_unw_getcontext(&uc) || g_unw_init_local(&cur, &uc)) return;
  uintptr_t place[2 * MAX_FRAMES], held[2 * MAX_FRAMES];
  int n = 0, k = -1;
  unw_word_t rbp = 0, prev_sp = 0;
  unw_save_loc_t rbp_at = {0};
  for (int steps = 0; k < depth - 1 && steps < depth + 16; steps++) {
    if (g_unw_step(&cur) <= 0 || g_unw_is_signal_frame(&cur) > 0) return;
    unw_word_t ip, sp;
    if (g_unw_get_reg(&cur, UNW_REG_IP, &ip) || g_unw_get_reg(&cur, UNW_REG_SP, &sp)) return;
    if (k < 0 && ip != frames[0]) continue; /* this function, stack_learn's caller, the wrapper */
    k++;
    if (ip != frames[k] || sp < pos || sp >= c->hi) return;
    if (k > 0) {
      /* frames[k], the return address into frame k, is just below frame k's stack pointer */
      const uintptr_t slot = (uintptr_t)sp - sizeof(uintptr_t);
      if (*(const uintptr_t *)slot != frames[k]) return;
      place[n] = slot, held[n++] = frames[k];
      /* frame k-1 addresses itself through rbp (rbp + 16 is its caller's stack pointer): its rbp, where
       * the frames below saved it. An rbp inside frame k-1 otherwise: a frame pointer of another kind (gcc's
       * dynamic realignment through r10 keeps the caller's stack pointer in the frame), not remembered. */
      if (rbp + 2 * sizeof(uintptr_t) == sp) {
        if (rbp_at.type != UNW_SLT_MEMORY || rbp_at.u.addr < pos || rbp_at.u.addr >= c->hi) return;
        place[n] = (uintptr_t)rbp_at.u.addr, held[n++] = (uintptr_t)rbp;
      } else if (rbp >= prev_sp && rbp < sp) {
        return;
      }
    }
    prev_sp = sp;
    /* the frames whose layout places the next: each with unwind information (libunwind guesses a frame
     * without, from memory this does not check) */
    unw_proc_info_t info;
    if (k < depth - 1 && (g_unw_get_proc_info(&cur, &info) || g_unw_get_reg(&cur, UNW_X86_64_RBP, &rbp) ||
                          g_unw_get_save_loc(&cur, UNW_X86_64_RBP, &rbp_at)))
      return;
  }
  if (k != depth - 1) return;
  stack_seen *e = seen_at(c, set * STACK_WAYS), *other = seen_at(c, set * STACK_WAYS + 1);
  if (!e->ra || !other->ra) c->relearn[set] = 0; /* an empty way taken: nobody's chain forgotten */
  if (e->ra && (!other->ra || other->used < e->used)) e = other; /* an empty way, or the older */
  /* written with ra last: a signal handler's call in between finds the entry empty, not half written */
  e->ra = 0;
  atomic_signal_fence(memory_order_seq_cst);
  e->pos = pos;
  e->via = via;
  e->id = id;
  e->used = ++c->tick;
  e->n = n;
  memcpy(places_of(e), place, sizeof(uintptr_t) * (size_t)n);
  memcpy(places_of(e) + c->room, held, sizeof(uintptr_t) * (size_t)n);
  atomic_signal_fence(memory_order_seq_cst);
  e->ra = ra;
}
#endif /* MPA_STACK_CACHE */

void mpa_callsite_thread_gone(mpa_thread *ts)
{
  struct mpa_stack_cache *c = ts->stack_cache;
  ts->stack_cache = NULL; /* before the memory goes: a handler's call in between finds none */
  free(c);
}

uint32_t mpa_callsite_lookup(mpa_thread *ts, void *return_address)
{
  uintptr_t frames[MAX_FRAMES];
  int depth = 1;
  uint64_t key;
  uintptr_t pos = 0;
  const uintptr_t via = (uintptr_t)__builtin_return_address(0);
  frames[0] = (uintptr_t)return_address;
  if (mpa_cfg.stack_depth <= 1 || !g_backtrace) {
    key = frames[0];
  } else {
    pos = (uintptr_t)__builtin_frame_address(0);
#if MPA_STACK_CACHE
    if (ts->stack_cache) {
      const uint32_t id = stack_known(ts->stack_cache, frames[0], pos, via);
      if (id) return id;
    }
#endif
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
#if MPA_STACK_CACHE
  if (pos) stack_learn(ts, frames[0], pos, via, frames, depth, id);
#endif
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

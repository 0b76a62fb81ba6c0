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

uint32_t mpa_callsite_lookup(mpa_thread *ts, void *return_address)
{
  uintptr_t frames[MAX_FRAMES];
  int depth = 1;
  uint64_t key;
  frames[0] = (uintptr_t)return_address;
  if (mpa_cfg.stack_depth <= 1 || !g_backtrace) {
    key = frames[0];
  } else {
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
    if (from >= 0) {
      depth = 0;
      for (int i = from; i < n && depth < mpa_cfg.stack_depth; i++) frames[depth++] = (uintptr_t)raw[i];
    }
    key = hash_frames(frames, depth);
  }
  unsigned slot = mpa_callsite_slot(key);
  if (ts->cs_addr[slot] == key) return ts->cs_id[slot];
  pthread_mutex_lock(&g_mu);
  uint32_t id = site_locked(key, frames, depth);
  pthread_mutex_unlock(&g_mu);
  ts->cs_addr[slot] = key;
  ts->cs_id[slot] = id;
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

/* Communicators: a small id per communicator in the log, its members as world ranks defined once (DEFS),
 * and a global id that is the same on every rank, so that the reader can match traffic across ranks
 * without any MPI traffic of the tracer's own. Everything here is local MPI (groups, ranks). */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "wrap.h"

typedef struct comm_entry {
  uintptr_t handle;
  uint32_t id, parent, call;
  uint64_t gid;
  int inter;
  int size, remote_size;
  int *members, *remote; /* world ranks */
} comm_entry;

static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;
static comm_entry *g_comms;
static size_t g_n, g_cap;          /* live communicators only: a freed one leaves the table */
static uint32_t g_last_id = 2;      /* ids are never reused within a log: 1, 2 are WORLD and SELF */
static atomic_uint g_generation = 1;
static MPI_Group g_world_group = MPI_GROUP_NULL;
typedef struct { uint64_t hash; uint32_t count; } seen_members;
static seen_members *g_seen;
static size_t g_nseen, g_capseen;

static uintptr_t handle_bits(MPI_Comm c) { return (uintptr_t)mpa_handle_bits(&c, sizeof c); }

static int *world_ranks(MPI_Group group, int n)
{
  int *local = malloc(sizeof(int) * (size_t)(n ? n : 1)), *world = malloc(sizeof(int) * (size_t)(n ? n : 1));
  if (!local || !world) {
    free(local);
    free(world);
    return NULL;
  }
  for (int i = 0; i < n; i++) local[i] = i;
  if (PMPI_Group_translate_ranks(group, n, local, g_world_group, world) != MPI_SUCCESS)
    for (int i = 0; i < n; i++) world[i] = MPA_RANK_UNDEF;
  /* a process outside MPI_COMM_WORLD (spawned, connected): MPI's own MPI_UNDEFINED is not the log's */
  for (int i = 0; i < n; i++)
    if (world[i] == MPI_UNDEFINED) world[i] = MPA_RANK_UNDEF;
  free(local);
  return world;
}

static int cmp_int(const void *a, const void *b)
{
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

static uint64_t fnv(uint64_t h, const int *v, int n)
{
  for (int i = 0; i < n; i++) {
    h ^= (uint64_t)(uint32_t)v[i];
    h *= 1099511628211ull;
  }
  return h;
}

/* Same members, same order of creation on every member: the same gid everywhere. */
static uint64_t global_id(const comm_entry *e)
{
  int n = e->size + e->remote_size;
  int *all = malloc(sizeof(int) * (size_t)(n ? n : 1));
  if (!all) return 0;
  memcpy(all, e->members, sizeof(int) * (size_t)e->size);
  if (e->remote_size) memcpy(all + e->size, e->remote, sizeof(int) * (size_t)e->remote_size);
  qsort(all, (size_t)n, sizeof(int), cmp_int);
  uint64_t h = fnv(1469598103934665603ull ^ (uint64_t)e->inter, all, n);
  free(all);
  uint32_t occurrence = 0;
  size_t i;
  for (i = 0; i < g_nseen && g_seen[i].hash != h; i++) { }
  if (i < g_nseen) occurrence = ++g_seen[i].count;
  else {
    if (g_nseen == g_capseen) {
      size_t cap = g_capseen ? 2 * g_capseen : 16;
      seen_members *s = realloc(g_seen, cap * sizeof *s);
      if (s) g_seen = s, g_capseen = cap;
    }
    if (g_nseen < g_capseen) g_seen[g_nseen++] = (seen_members){h, 0};
  }
  return h ^ ((uint64_t)occurrence * 0x9e3779b97f4a7c15ull);
}

static void define(const comm_entry *e)
{
  size_t cap = 64 + 5 * (size_t)(e->size + e->remote_size);
  uint8_t *rec = malloc(cap), *p = rec;
  if (!rec) return;
  *p++ = MPA_DEF_COMM;
  p = mpa_put_varint(p, e->id);
  p = mpa_put_varint(p, e->gid);
  p = mpa_put_varint(p, (uint64_t)e->inter);
  p = mpa_put_varint(p, (uint64_t)e->size);
  for (int i = 0; i < e->size; i++) p = mpa_put_varint(p, mpa_zigzag(e->members[i]));
  if (e->inter) {
    p = mpa_put_varint(p, (uint64_t)e->remote_size);
    for (int i = 0; i < e->remote_size; i++) p = mpa_put_varint(p, mpa_zigzag(e->remote[i]));
  }
  p = mpa_put_varint(p, e->parent);
  p = mpa_put_varint(p, e->call);
  mpa_defs_append(rec, (size_t)(p - rec));
  free(rec);
}

/* Called with g_mu held. */
static uint32_t register_comm(MPI_Comm c, uint32_t id, uint32_t parent, uint32_t call)
{
  if (g_n == g_cap) {
    size_t cap = g_cap ? 2 * g_cap : 16;
    comm_entry *t = realloc(g_comms, cap * sizeof *t);
    if (!t) return 0;
    g_comms = t;
    g_cap = cap;
  }
  comm_entry e;
  memset(&e, 0, sizeof e);
  e.handle = handle_bits(c);
  e.id = id ? id : ++g_last_id;
  e.parent = parent;
  e.call = call;
  PMPI_Comm_test_inter(c, &e.inter);
  MPI_Group g;
  PMPI_Comm_group(c, &g);
  PMPI_Group_size(g, &e.size);
  e.members = world_ranks(g, e.size);
  PMPI_Group_free(&g);
  if (e.inter) {
    PMPI_Comm_remote_group(c, &g);
    PMPI_Group_size(g, &e.remote_size);
    e.remote = world_ranks(g, e.remote_size);
    PMPI_Group_free(&g);
  }
  if (!e.members || (e.inter && !e.remote)) {
    free(e.members);
    free(e.remote);
    return 0;
  }
  e.gid = global_id(&e);
  g_comms[g_n++] = e;
  define(&e);
  return e.id;
}

/* The log keeps the definition; the table forgets the communicator (g_mu held). */
static void retire_locked(size_t i)
{
  free(g_comms[i].members);
  free(g_comms[i].remote);
  g_comms[i] = g_comms[--g_n];
}

void mpa_comm_init(void)
{
  PMPI_Comm_group(MPI_COMM_WORLD, &g_world_group);
  pthread_mutex_lock(&g_mu);
  register_comm(MPI_COMM_WORLD, 1, 0, MPA_CALL_Init);
  register_comm(MPI_COMM_SELF, 2, 0, MPA_CALL_Init);
  pthread_mutex_unlock(&g_mu);
}

static uint32_t lookup_locked(uintptr_t h)
{
  for (size_t i = g_n; i-- > 0;)
    if (g_comms[i].handle == h) return g_comms[i].id;
  return 0;
}

uint32_t mpa_comm_id_lookup(MPI_Comm c)
{
  if (c == MPI_COMM_NULL) return 0;
  if (c == MPI_COMM_WORLD) return 1;
  if (c == MPI_COMM_SELF) return 2;
  uintptr_t h = handle_bits(c);
  mpa_thread *ts = mpa_tls;
  unsigned gen = atomic_load_explicit(&g_generation, memory_order_acquire);
  /* a multiplicative hash of every bit: MPICH's communicators are ints numbered in their low bits
   * (0x84000000, 0x84000001, ...), and the bits above the fourth put the first 16 in one slot */
  unsigned slot = (unsigned)((h * 0x9E3779B97F4A7C15ull) >> 58);
  if (ts) {
    if (ts->comm_generation != gen) {
      memset(ts->comm_handle, 0, sizeof ts->comm_handle);
      ts->comm_generation = gen;
    }
    if (ts->comm_handle[slot] == h) return ts->comm_id[slot];
  }
  pthread_mutex_lock(&g_mu);
  uint32_t id = lookup_locked(h);
  if (!id) id = register_comm(c, 0, 0, MPA_CALL_COUNT); /* made by a call we do not intercept */
  pthread_mutex_unlock(&g_mu);
  if (ts && id) {
    ts->comm_handle[slot] = h;
    ts->comm_id[slot] = id;
  }
  return id;
}

/* A creating call always returns a communicator that did not exist before. A live entry with its handle
 * names one whose free we did not see (freed while tracing was paused, or by MPI_Comm_disconnect): MPI
 * gave the handle back, and the entry, its members and the threads' cached ids are stale. */
uint32_t mpa_comm_created(MPI_Comm newcomm, MPI_Comm parent, uint32_t call)
{
  if (newcomm == MPI_COMM_NULL) return 0;
  uint32_t parent_id = mpa_comm_id(parent);
  uintptr_t h = handle_bits(newcomm);
  int stale = 0;
  pthread_mutex_lock(&g_mu);
  for (size_t i = 0; i < g_n;)
    if (g_comms[i].handle == h && g_comms[i].id > 2) {
      retire_locked(i);
      stale = 1;
    } else {
      i++;
    }
  uint32_t id = register_comm(newcomm, 0, parent_id, call);
  pthread_mutex_unlock(&g_mu);
  if (stale) atomic_fetch_add_explicit(&g_generation, 1, memory_order_release);
  return id;
}

void mpa_newcomm(mpa_event *ev, MPI_Comm newcomm, MPI_Comm parent, uint32_t call)
{
  uint32_t id = mpa_comm_created(newcomm, parent, call);
  if (id) {
    ev->mask |= MPA_F_NEWCOMM;
    ev->newcomm = id;
  }
}

void mpa_comm_freed(uint32_t id)
{
  if (id <= 2) return;
  pthread_mutex_lock(&g_mu);
  for (size_t i = 0; i < g_n; i++)
    if (g_comms[i].id == id) {
      retire_locked(i);
      break;
    }
  pthread_mutex_unlock(&g_mu);
  atomic_fetch_add_explicit(&g_generation, 1, memory_order_release);
  uint8_t rec[8], *p = rec;
  *p++ = MPA_DEF_COMMFREE;
  p = mpa_put_varint(p, id);
  mpa_defs_append(rec, (size_t)(p - rec));
}

int mpa_comm_peers(MPI_Comm c)
{
  int inter = 0, n = 0;
  PMPI_Comm_test_inter(c, &inter);
  if (inter) PMPI_Comm_remote_size(c, &n);
  else PMPI_Comm_size(c, &n);
  return n;
}

int mpa_comm_local_size(MPI_Comm c)
{
  int n = 0;
  PMPI_Comm_size(c, &n); /* the local group of an intercommunicator */
  return n;
}

uint64_t mpa_own_bytes(const int *counts, MPI_Datatype type, MPI_Comm c)
{
  int me = -1;
  if (!counts || PMPI_Comm_rank(c, &me) != MPI_SUCCESS || me < 0) return 0;
  return mpa_type_bytes(counts[me], type);
}

int mpa_is_root(MPI_Comm c, int root)
{
  int inter = 0, me = -1;
  PMPI_Comm_test_inter(c, &inter);
  if (inter) return root == MPI_ROOT;
  PMPI_Comm_rank(c, &me);
  return me == root;
}

static void json_ranks(mpa_bytes *out, const int *r, int n)
{
  mpa_json_raw(out, "[");
  for (int i = 0; i < n; i++) mpa_json_fmt(out, "%s%d", i ? "," : "", r[i]);
  mpa_json_raw(out, "]");
}

void mpa_comm_tables_json(mpa_bytes *out)
{
  pthread_mutex_lock(&g_mu);
  mpa_json_raw(out, "[");
  for (size_t i = 0; i < g_n; i++) {
    const comm_entry *e = &g_comms[i];
    mpa_json_fmt(out, "%s{\"id\":%u,\"gid\":\"%016llx\",\"inter\":%s,\"parent\":%u,\"call\":", i ? "," : "",
                 e->id, (unsigned long long)e->gid, e->inter ? "true" : "false", e->parent);
    mpa_json_str(out, e->call < MPA_CALL_COUNT ? mpa_call_names[e->call] : "");
    mpa_json_raw(out, ",\"members\":");
    json_ranks(out, e->members, e->size);
    if (e->inter) {
      mpa_json_raw(out, ",\"remote\":");
      json_ranks(out, e->remote, e->remote_size);
    }
    mpa_json_raw(out, "}");
  }
  mpa_json_raw(out, "]");
  pthread_mutex_unlock(&g_mu);
}

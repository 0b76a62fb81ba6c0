/* PAPI counters over each computation interval (one MPI call's exit to the next one's enter), on the
 * thread that called MPI_Init. Optional at run time: with no counters (these machines are VMs) or an
 * unknown event, one warning and the log is written without them.
 * PAPI is loaded (dlopen) only when MPIADVISE_PAPI asks for counters: linked, libpapi and libpfm's event
 * tables took 2.3 MiB of every rank's resident memory whether counters were asked for or not. */
#include <dlfcn.h>
#include <papi.h>
#include <stdio.h>
#include <string.h>

#include "wrap.h"

#ifndef MPA_PAPI_SONAME
#define MPA_PAPI_SONAME "libpapi.so"
#endif

/* The PAPI functions used, looked up in the library loaded at MPI_Init */
static struct {
  int (*library_init)(int);
  int (*create_eventset)(int *);
  int (*event_name_to_code)(const char *, int *);
  int (*add_event)(int, int);
  int (*start)(int);
  int (*read)(int, long long *);
  char *(*strerror)(int);
  const PAPI_component_info_t *(*get_component_info)(int);
} papi;

static const char *papi_load(void)
{
  void *h = dlopen(MPA_PAPI_SONAME, RTLD_NOW | RTLD_LOCAL);
  if (!h) return dlerror();
#define MPA_PAPI_SYM(field, name) \
  if (!(*(void **)&papi.field = dlsym(h, name))) return "a PAPI function is missing from " MPA_PAPI_SONAME;
  MPA_PAPI_SYM(library_init, "PAPI_library_init")
  MPA_PAPI_SYM(create_eventset, "PAPI_create_eventset")
  MPA_PAPI_SYM(event_name_to_code, "PAPI_event_name_to_code")
  MPA_PAPI_SYM(add_event, "PAPI_add_event")
  MPA_PAPI_SYM(start, "PAPI_start")
  MPA_PAPI_SYM(read, "PAPI_read")
  MPA_PAPI_SYM(strerror, "PAPI_strerror")
  MPA_PAPI_SYM(get_component_info, "PAPI_get_component_info")
#undef MPA_PAPI_SYM
  return NULL;
}

int mpa_papi_on;
static int g_eventset = PAPI_NULL;
static int g_n;
static char g_names[MPA_MAX_PAPI][128];
static mpa_thread *g_papi_thread;

int mpa_papi_count(void) { return mpa_papi_on ? g_n : 0; }
const char *mpa_papi_name(int i) { return g_names[i]; }

/* One warning for everything that cannot be counted: where there are no counters at all (a VM), every
 * event fails the same way and a warning per event would say the same thing several times. */
int mpa_papi_init(int rank)
{
  if (!mpa_cfg.papi[0]) return 0;
  const char *missing = papi_load();
  if (missing) {
    if (rank == 0) mpa_warn("MPIADVISE_PAPI: PAPI cannot be loaded (%s); no counters recorded", missing);
    return 0;
  }
  int rc = papi.library_init(PAPI_VER_CURRENT);
  if (rc != PAPI_VER_CURRENT) {
    if (rank == 0) mpa_warn("MPIADVISE_PAPI: PAPI does not start (%s); no counters recorded", papi.strerror(rc));
    return 0;
  }
  if (papi.create_eventset(&g_eventset) != PAPI_OK) {
    if (rank == 0) mpa_warn("MPIADVISE_PAPI: PAPI cannot make an event set; no counters recorded");
    return 0;
  }
  char list[sizeof mpa_cfg.papi], failed[sizeof mpa_cfg.papi + 64] = "";
  strcpy(list, mpa_cfg.papi);
  char *save = NULL;
  int unknown = 0, uncountable = 0, too_many = 0;
  for (char *name = strtok_r(list, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
    int code;
    if (g_n == MPA_MAX_PAPI) too_many++;
    else if (papi.event_name_to_code(name, &code) != PAPI_OK) unknown++;
    else if (papi.add_event(g_eventset, code) != PAPI_OK) uncountable++;
    else {
      snprintf(g_names[g_n++], sizeof g_names[0], "%s", name);
      continue;
    }
    if (strlen(failed) + strlen(name) + 3 < sizeof failed) {
      if (failed[0]) strcat(failed, ", ");
      strcat(failed, name);
    }
  }
  if (g_n && (rc = papi.start(g_eventset)) != PAPI_OK) {
    if (rank == 0) mpa_warn("MPIADVISE_PAPI: counters do not start (%s); no counters recorded", papi.strerror(rc));
    g_n = 0;
    return 0;
  }
  if (failed[0] && rank == 0) {
    const PAPI_component_info_t *cpu = papi.get_component_info(0);
    int no_counters = !cpu || cpu->disabled || cpu->num_cntrs == 0;
    char why[160] = "";
    if (no_counters) strcat(why, "this machine has no hardware counters");
    else {
      if (unknown) strcat(why, "unknown to PAPI");
      if (uncountable) strcat(why, why[0] ? "; cannot be counted here" : "cannot be counted here");
    }
    if (too_many) strcat(why, why[0] ? "; at most 8 events" : "at most 8 events");
    mpa_warn("MPIADVISE_PAPI: %s not recorded (%s); the log is written without %s", failed, why,
             g_n ? "them" : "counters");
  }
  if (g_n == 0) return 0;
  g_papi_thread = mpa_tls ? mpa_tls : mpa_thread_attach();
  if (g_papi_thread) papi.read(g_eventset, g_papi_thread->papi_exit);
  mpa_papi_on = 1;
  return g_n;
}

int mpa_papi_read(mpa_thread *ts, long long *values)
{
  if (ts != g_papi_thread) return -1;
  return papi.read(g_eventset, values) == PAPI_OK ? 0 : -1;
}

void mpa_papi_at_enter(mpa_thread *ts)
{
  if (ts == g_papi_thread) papi.read(g_eventset, ts->papi_enter);
}

int mpa_papi_count_for(mpa_thread *ts) { return mpa_papi_on && ts == g_papi_thread ? g_n : 0; }

/* PAPI counters over each computation interval (one MPI call's exit to the next one's enter), on the
 * thread that called MPI_Init. Optional at run time: with no counters (these machines are VMs) or an
 * unknown event, one warning and the log is written without them. */
#include <papi.h>
#include <stdio.h>
#include <string.h>

#include "wrap.h"

int mpa_papi_on;
static int g_eventset = PAPI_NULL;
static int g_n;
static char g_names[MPA_MAX_PAPI][128];
static mpa_thread *g_papi_thread;

int mpa_papi_count(void) { return mpa_papi_on ? g_n : 0; }
const char *mpa_papi_name(int i) { return g_names[i]; }

int mpa_papi_init(int rank)
{
  if (!mpa_cfg.papi[0]) return 0;
  int rc = PAPI_library_init(PAPI_VER_CURRENT);
  if (rc != PAPI_VER_CURRENT) {
    if (rank == 0) mpa_warn("MPIADVISE_PAPI: PAPI does not start (%s); no counters recorded", PAPI_strerror(rc));
    return 0;
  }
  if (PAPI_create_eventset(&g_eventset) != PAPI_OK) return 0;
  char list[sizeof mpa_cfg.papi];
  strcpy(list, mpa_cfg.papi);
  char *save = NULL;
  for (char *name = strtok_r(list, ",", &save); name; name = strtok_r(NULL, ",", &save)) {
    if (g_n == MPA_MAX_PAPI) {
      if (rank == 0) mpa_warn("MPIADVISE_PAPI: at most %d events; %s and after are not recorded", MPA_MAX_PAPI, name);
      break;
    }
    int code;
    if (PAPI_event_name_to_code(name, &code) != PAPI_OK) {
      if (rank == 0) mpa_warn("MPIADVISE_PAPI: unknown event %s; it is not recorded", name);
      continue;
    }
    rc = PAPI_add_event(g_eventset, code);
    if (rc != PAPI_OK) {
      if (rank == 0) mpa_warn("MPIADVISE_PAPI: event %s cannot be counted here (%s); it is not recorded", name, PAPI_strerror(rc));
      continue;
    }
    snprintf(g_names[g_n++], sizeof g_names[0], "%s", name);
  }
  if (g_n == 0) return 0;
  if ((rc = PAPI_start(g_eventset)) != PAPI_OK) {
    if (rank == 0) mpa_warn("MPIADVISE_PAPI: counters do not start (%s); none recorded", PAPI_strerror(rc));
    g_n = 0;
    return 0;
  }
  g_papi_thread = mpa_tls ? mpa_tls : mpa_thread_attach();
  if (g_papi_thread) PAPI_read(g_eventset, g_papi_thread->papi_exit);
  mpa_papi_on = 1;
  return g_n;
}

int mpa_papi_read(mpa_thread *ts, long long *values)
{
  if (ts != g_papi_thread) return -1;
  return PAPI_read(g_eventset, values) == PAPI_OK ? 0 : -1;
}

void mpa_papi_at_enter(mpa_thread *ts)
{
  if (ts == g_papi_thread) PAPI_read(g_eventset, ts->papi_enter);
}

int mpa_papi_count_for(mpa_thread *ts) { return mpa_papi_on && ts == g_papi_thread ? g_n : 0; }

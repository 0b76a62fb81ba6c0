/* What each log records about the run, in its header (JSON): the MPI library, the configured eager and
 * rendezvous limits read through MPI_T, the MPI-relevant environment, host, rank, clock facts, and the
 * names of the calls by id so that the file describes itself. */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "wrap.h"

extern char **environ;

static void append(mpa_bytes *b, const void *s, size_t n)
{
  if (mpa_bytes_reserve(b, n)) return;
  memcpy(b->data + b->len, s, n);
  b->len += n;
}

void mpa_json_raw(mpa_bytes *b, const char *s) { append(b, s, strlen(s)); }

void mpa_json_bytes(mpa_bytes *b, const mpa_bytes *json) { append(b, json->data, json->len); }

void mpa_json_fmt(mpa_bytes *b, const char *fmt, ...)
{
  char small[512];
  va_list ap;
  va_start(ap, fmt);
  int n = vsnprintf(small, sizeof small, fmt, ap);
  va_end(ap);
  if (n < 0) return;
  if ((size_t)n < sizeof small) {
    mpa_json_raw(b, small);
    return;
  }
  if (mpa_bytes_reserve(b, (size_t)n + 1)) return;
  va_start(ap, fmt);
  vsnprintf((char *)b->data + b->len, (size_t)n + 1, fmt, ap);
  va_end(ap);
  b->len += (size_t)n;
}

/* Length of the well-formed UTF-8 sequence at p (1 to 4 bytes), or 0 where none starts (a stray
 * continuation byte, an overlong form, a surrogate, a code point above U+10FFFF, a cut sequence). */
static size_t utf8_sequence(const unsigned char *p)
{
  if (p[0] < 0x80) return 1;
  size_t n;
  uint32_t v, min;
  if ((p[0] & 0xe0) == 0xc0) n = 2, v = p[0] & 0x1f, min = 0x80;
  else if ((p[0] & 0xf0) == 0xe0) n = 3, v = p[0] & 0x0f, min = 0x800;
  else if ((p[0] & 0xf8) == 0xf0) n = 4, v = p[0] & 0x07, min = 0x10000;
  else return 0;
  for (size_t k = 1; k < n; k++) { /* the terminating NUL is no continuation byte: no read past it */
    if ((p[k] & 0xc0) != 0x80) return 0;
    v = v << 6 | (p[k] & 0x3f);
  }
  if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff)) return 0;
  return n;
}

/* Strings from the job (paths, environment, host name) are bytes. Valid UTF-8 is written as it is; any
 * other string as U+0000 followed by its text with '%' and each byte that is not UTF-8 written %HH, so
 * that the header stays JSON and the reader gets the bytes back (mpiadvise-log(5), STRINGS). */
void mpa_json_str(mpa_bytes *b, const char *s)
{
  int escaped = 0;
  for (const unsigned char *p = (const unsigned char *)s; *p && !escaped;) {
    size_t n = utf8_sequence(p);
    escaped = n == 0;
    p += n;
  }
  mpa_json_raw(b, escaped ? "\"\\u0000" : "\"");
  for (const unsigned char *p = (const unsigned char *)s; *p;) {
    char esc[8];
    size_t n = utf8_sequence(p);
    if (n == 0 || (escaped && *p == '%')) {
      snprintf(esc, sizeof esc, "%%%02X", *p);
      mpa_json_raw(b, esc);
      p++;
      continue;
    }
    if (n > 1) {
      if (mpa_bytes_reserve(b, n)) return;
      memcpy(b->data + b->len, p, n);
      b->len += n;
      p += n;
      continue;
    }
    if (*p == '"' || *p == '\\') snprintf(esc, sizeof esc, "\\%c", *p);
    else if (*p == '\n') strcpy(esc, "\\n");
    else if (*p == '\t') strcpy(esc, "\\t");
    else if (*p < 0x20 || *p == 0x7f) snprintf(esc, sizeof esc, "\\u%04x", *p);
    else esc[0] = (char)*p, esc[1] = '\0';
    mpa_json_raw(b, esc);
    p++;
  }
  mpa_json_raw(b, "\"");
}

static int mentions_protocol_limit(const char *name)
{
  return strcasestr(name, "eager") || strcasestr(name, "rndv") || strcasestr(name, "rendezvous") ||
         strcasestr(name, "max_inline_send"); /* Open MPI vader: above it a send can wait for its receiver */
}

/* Every MPI_T control variable whose name mentions eager or rndv, with its value where it can be read
 * without an object. thread_level: what MPI provided the program. MPI_T is started at that level, not
 * lower: Open MPI's MPI_T_init_thread sets the MPI library's own thread level to the one it is given
 * (ompi_mpi_thread_level), so MPI_THREAD_SINGLE here made MPI_Query_thread answer SINGLE to a program
 * that had been provided MULTIPLE, and turned off Open MPI's support for concurrent calls. */
static int mpi_t_cvars(mpa_bytes *b, int thread_level)
{
  int provided, n = 0, first = 1;
  mpa_json_raw(b, "{");
  if (PMPI_T_init_thread(thread_level, &provided) != MPI_SUCCESS) {
    mpa_json_raw(b, "}");
    return 0;
  }
  PMPI_T_cvar_get_num(&n);
  for (int i = 0; i < n; i++) {
    char name[256], desc[8];
    int name_len = sizeof name, desc_len = sizeof desc, verbosity, bind, scope;
    MPI_Datatype type;
    MPI_T_enum enumtype;
    if (PMPI_T_cvar_get_info(i, name, &name_len, &verbosity, &type, &enumtype, desc, &desc_len, &bind,
                             &scope) != MPI_SUCCESS)
      continue;
    if (!mentions_protocol_limit(name) || bind != MPI_T_BIND_NO_OBJECT) continue;
    MPI_T_cvar_handle handle;
    int count = 0;
    if (PMPI_T_cvar_handle_alloc(i, NULL, &handle, &count) != MPI_SUCCESS) continue;
    char value[1024];
    value[0] = '\0';
    int is_string = 0;
    if (count == 1 && type == MPI_INT) {
      int v;
      if (PMPI_T_cvar_read(handle, &v) == MPI_SUCCESS) snprintf(value, sizeof value, "%d", v);
    } else if (count == 1 && type == MPI_UNSIGNED) {
      unsigned v;
      if (PMPI_T_cvar_read(handle, &v) == MPI_SUCCESS) snprintf(value, sizeof value, "%u", v);
    } else if (count == 1 && (type == MPI_UNSIGNED_LONG || type == MPI_COUNT)) {
      unsigned long v;
      if (PMPI_T_cvar_read(handle, &v) == MPI_SUCCESS) snprintf(value, sizeof value, "%lu", v);
    } else if (count == 1 && type == MPI_UNSIGNED_LONG_LONG) {
      unsigned long long v;
      if (PMPI_T_cvar_read(handle, &v) == MPI_SUCCESS) snprintf(value, sizeof value, "%llu", v);
    } else if (count == 1 && type == MPI_DOUBLE) {
      double v;
      if (PMPI_T_cvar_read(handle, &v) == MPI_SUCCESS) snprintf(value, sizeof value, "%.17g", v);
    } else if (type == MPI_CHAR && count > 0 && count < (int)sizeof value) {
      if (PMPI_T_cvar_read(handle, value) == MPI_SUCCESS) {
        value[count] = '\0';
        is_string = 1;
      }
    }
    PMPI_T_cvar_handle_free(&handle);
    if (!value[0] && !is_string) continue;
    mpa_json_raw(b, first ? "" : ",");
    first = 0;
    mpa_json_str(b, name);
    mpa_json_raw(b, ":");
    if (is_string) mpa_json_str(b, value);
    else mpa_json_raw(b, value);
  }
  PMPI_T_finalize();
  mpa_json_raw(b, "}");
  return 1;
}

/* Rank 0's control variables, read before MPI_Init by mpa_cvars_before_init (empty: not read then). */
static mpa_bytes g_early_cvars;

void mpa_cvars_before_init(int thread_level)
{
  static int done;
  if (done) return;
  done = 1;
  if (!mpi_t_cvars(&g_early_cvars, thread_level)) mpa_bytes_free(&g_early_cvars); /* read after MPI_Init */
}

static void mpi_environment(mpa_bytes *b)
{
  static const char *const prefixes[] = {"OMPI_MCA_", "UCX_", "MPIR_CVAR_", "I_MPI_", "MV2_", "MPICH_",
                                         "FI_", "PSM2_", "MPIADVISE"};
  int first = 1;
  mpa_json_raw(b, "{");
  for (char **e = environ; e && *e; e++) {
    int relevant = 0;
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0] && !relevant; i++)
      relevant = !strncmp(*e, prefixes[i], strlen(prefixes[i]));
    const char *eq = strchr(*e, '=');
    if (!relevant || !eq) continue;
    char name[256];
    size_t n = (size_t)(eq - *e) < sizeof name - 1 ? (size_t)(eq - *e) : sizeof name - 1;
    memcpy(name, *e, n);
    name[n] = '\0';
    mpa_json_raw(b, first ? "" : ",");
    first = 0;
    mpa_json_str(b, name);
    mpa_json_raw(b, ":");
    mpa_json_str(b, eq + 1);
  }
  mpa_json_raw(b, "}");
}

static const char *thread_level_name(int level)
{
  if (level == MPI_THREAD_SINGLE) return "MPI_THREAD_SINGLE";
  if (level == MPI_THREAD_FUNNELED) return "MPI_THREAD_FUNNELED";
  if (level == MPI_THREAD_SERIALIZED) return "MPI_THREAD_SERIALIZED";
  if (level == MPI_THREAD_MULTIPLE) return "MPI_THREAD_MULTIPLE";
  return "unknown";
}

void mpa_header_json(mpa_bytes *b, int rank, int size, int thread_level, const char *job, const char *clock_name,
                     int64_t clock_offset_ns, const char *offset_method, uint64_t sync_tick, uint64_t sync_ns,
                     const mpa_bytes *message_probe)
{
  char host[256] = "", lib[MPI_MAX_LIBRARY_VERSION_STRING] = "", exe[4096] = "";
  gethostname(host, sizeof host - 1);
  int len = 0, major = 0, minor = 0;
  PMPI_Get_library_version(lib, &len);
  PMPI_Get_version(&major, &minor);
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  exe[n > 0 ? n : 0] = '\0';
  struct timespec wall;
  clock_gettime(CLOCK_REALTIME, &wall);

  mpa_json_fmt(b, "{\"format\":%u,\"tool\":\"mpiadvise %s\",\"job\":", MPA_FORMAT_VERSION, MPA_TOOL_VERSION);
  mpa_json_str(b, job);
  mpa_json_fmt(b, ",\"rank\":%d,\"size\":%d,\"pid\":%d,\"hostname\":", rank, size, (int)getpid());
  mpa_json_str(b, host);
  /* the host's CPUs: more ranks than these on one host share cores, which the model does not price */
  long cpus = sysconf(_SC_NPROCESSORS_ONLN);
  if (cpus > 0) mpa_json_fmt(b, ",\"host_cpus\":%ld", cpus);
  mpa_json_raw(b, ",\"program\":");
  mpa_json_str(b, exe);
  mpa_json_raw(b, ",\"mpi_library\":");
  /* the version string ends with a newline in some libraries */
  for (char *e = lib + strlen(lib); e > lib && (e[-1] == '\n' || e[-1] == ' '); e--) e[-1] = '\0';
  mpa_json_str(b, lib);
  mpa_json_fmt(b, ",\"mpi_version\":\"%d.%d\",\"thread_level\":", major, minor);
  mpa_json_str(b, thread_level_name(thread_level));
  mpa_json_fmt(b, ",\"start_unix_ns\":%lld,\"clock\":{\"source\":", (long long)wall.tv_sec * 1000000000ll + wall.tv_nsec);
  mpa_json_str(b, clock_name);
  mpa_json_fmt(b, ",\"sync_tick\":%llu,\"sync_ns\":%llu,\"offset_to_rank0_ns\":%lld,\"offset_method\":",
               (unsigned long long)sync_tick, (unsigned long long)sync_ns, (long long)clock_offset_ns);
  mpa_json_str(b, offset_method);
  /* a tick is the counter divided by 2^tick_shift (clock.c); its rate, for a run too short for its clock
   * pairs to give one (an integer: the application's locale may write a decimal comma) */
  mpa_json_fmt(b, ",\"tick_shift\":%u,\"tick_hz\":%llu", mpa_tick_shift,
               (unsigned long long)(mpa_clock_ticks_per_ns() * 1e9 + 0.5));
  mpa_json_fmt(b, "},\"stack_depth\":%d,\"buffer_bytes\":%zu,\"papi\":[", mpa_cfg.stack_depth,
               mpa_cfg.buffer_bytes);
  for (int i = 0; i < mpa_papi_count(); i++) {
    if (i) mpa_json_raw(b, ",");
    mpa_json_str(b, mpa_papi_name(i));
  }
  mpa_json_raw(b, "]");
  /* One rank reads them: the analysis takes a job's settings from one header, and Open MPI's
   * MPI_T_init_thread registers every variable of every component (1116 under Open MPI 4.1), which
   * raised each rank's peak resident memory by 3.6 MiB for the time it took. Read before MPI_Init where
   * the launcher said this is rank 0 (the memory it takes then is not on top of MPI's own: 1.1 MiB of
   * peak less), else now. */
  if (rank == 0) {
    mpa_json_raw(b, ",\"cvars\":");
    if (g_early_cvars.len) mpa_json_bytes(b, &g_early_cvars);
    else mpi_t_cvars(b, thread_level);
  }
  mpa_bytes_free(&g_early_cvars);
  if (message_probe && message_probe->len) {
    mpa_json_raw(b, ",\"message_probe\":");
    mpa_json_bytes(b, message_probe);
  }
  mpa_json_raw(b, ",\"env\":");
  mpi_environment(b);
  mpa_json_raw(b, ",\"calls\":[");
  for (int i = 0; i < MPA_CALL_COUNT; i++) {
    if (i) mpa_json_raw(b, ",");
    mpa_json_str(b, mpa_call_names[i]);
  }
  mpa_json_raw(b, "]}");
}

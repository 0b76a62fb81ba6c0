/* The tracer's life cycle: settings, MPI_Init / MPI_Finalize / MPI_Abort / MPI_Pcontrol (C and Fortran),
 * the job directory, one-per-job warnings, signal and exit handling.
 *
 * Rule for everything here: the application's results and exit status are those of the untraced run.
 * Every failure turns tracing off for the rank concerned (or for the job) with one warning, never more. */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "wrap.h"

mpa_settings mpa_cfg;
volatile int mpa_active;
int mpa_rank = -1, mpa_size = 0;
int mpa_comms_tracked;

static int g_started, g_finished, g_paused, g_enabled;
int mpa_foreign_mpi; /* the process runs another MPI than the one this library is built for (wrap.h) */
static __thread int g_in_fortran; /* inside the library's Fortran entry of a life-cycle call */
static int g_joined; /* takes part in the tracer's collectives at init and finalize */
static int g_fd = -1;
static MPI_Comm g_comm = MPI_COMM_NULL; /* our own traffic at init and finalize only */
static char g_path[sizeof mpa_cfg.dir + 32];
static char g_hosts_differ;
static char g_host_differs; /* this rank's host is not rank 0's */
static int g_probe; /* rank 0's MPIADVISE_PROBE, which every rank follows (probe.c) */
#ifdef OPEN_MPI
static int g_ompi_version; /* the running Open MPI's, major * 10000 + minor * 100 + release; 0 unknown */
#endif

static void update_active(void) { mpa_active = g_enabled && g_started && !g_finished && !g_paused; }

void mpa_warn(const char *fmt, ...)
{
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fprintf(stderr, "mpiadvise: %s\n", msg);
}

/* ---- settings ---------------------------------------------------------------------------------------- */
static char g_setting_warnings[2048];

static void setting_warning(const char *fmt, ...)
{
  size_t n = strlen(g_setting_warnings);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(g_setting_warnings + n, sizeof g_setting_warnings - n, fmt, ap);
  va_end(ap);
  n = strlen(g_setting_warnings);
  if (n + 1 < sizeof g_setting_warnings) strcat(g_setting_warnings, "\n");
}

/* Parses "4M", "512K", "1048576", "2G". Returns 0 on success. */
static int parse_size(const char *s, size_t *out)
{
  char *end;
  if (*s < '0' || *s > '9') return -1; /* no sign, no blanks */
  errno = 0;
  unsigned long long v = strtoull(s, &end, 10);
  if (end == s || errno) return -1;
  unsigned long long mult = 1;
  if (*end == 'k' || *end == 'K') mult = 1024ull, end++;
  else if (*end == 'm' || *end == 'M') mult = 1024ull * 1024, end++;
  else if (*end == 'g' || *end == 'G') mult = 1024ull * 1024 * 1024, end++;
  if (mult > 1 && end[0] == 'i' && end[1] == 'B') end += 2;
  else if (end[0] == 'B') end++;
  if (*end || v > SIZE_MAX / mult) return -1;
  *out = (size_t)(v * mult);
  return 0;
}

static int parse_int(const char *s, long lo, long hi, long *out)
{
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (end == s || *end || errno || v < lo || v > hi) return -1;
  *out = v;
  return 0;
}

/* a setting's value that turns a thing off (MPIADVISE, MPIADVISE_PROBE) */
static int says_off(const char *v) { return !strcmp(v, "0") || !strcasecmp(v, "off") || !strcasecmp(v, "no"); }

/* This process's rank as its launcher numbers them (Hydra, Open MPI's, PMIx, Slurm's srun), known before
 * MPI_Init; NULL without a launcher we know. */
static const char *launcher_rank(void)
{
  static const char *const vars[] = {"PMI_RANK", "OMPI_COMM_WORLD_RANK", "PMIX_RANK", "SLURM_PROCID"};
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
    const char *r = getenv(vars[i]);
    if (r && *r) return r;
  }
  return NULL;
}

static void read_settings(void)
{
  const char *v;
  memset(&mpa_cfg, 0, sizeof mpa_cfg);
  mpa_cfg.enabled = 1;
  mpa_cfg.stack_depth = 1;
  mpa_cfg.buffer_bytes = 4u << 20;
  mpa_cfg.zstd_level = 1; /* on these logs level 1 is both faster and smaller than 3 (make bench) */
  mpa_cfg.probe = 1;
  if ((v = getenv("MPIADVISE")) && *v) {
    if (says_off(v)) mpa_cfg.enabled = 0;
    else if (strcmp(v, "1") && strcasecmp(v, "on") && strcasecmp(v, "yes"))
      setting_warning("MPIADVISE=%s is not 0/off or 1/on; tracing stays on", v);
  }
  if ((v = getenv("MPIADVISE_DIR")) && *v) {
    if (strlen(v) >= sizeof mpa_cfg.dir - 32) setting_warning("MPIADVISE_DIR is too long; using the default");
    else {
      strcpy(mpa_cfg.dir, v);
      mpa_cfg.dir_given = 1;
    }
  }
  if ((v = getenv("MPIADVISE_STACK_DEPTH")) && *v) {
    long d;
    if (parse_int(v, 0, 32, &d)) setting_warning("MPIADVISE_STACK_DEPTH=%s is not a number from 0 to 32; using 1", v);
    else mpa_cfg.stack_depth = (int)d;
  }
  if ((v = getenv("MPIADVISE_BUFFER")) && *v) {
    size_t b;
    if (parse_size(v, &b)) setting_warning("MPIADVISE_BUFFER=%s is not a size such as 4M; using 4M", v);
    else if (b < 256u * 1024) setting_warning("MPIADVISE_BUFFER=%s is below the minimum 256K; using 256K", v), mpa_cfg.buffer_bytes = 256u * 1024;
    else mpa_cfg.buffer_bytes = b;
  }
  if ((v = getenv("MPIADVISE_ZSTD_LEVEL")) && *v) {
    long l;
    if (parse_int(v, 1, 19, &l)) setting_warning("MPIADVISE_ZSTD_LEVEL=%s is not a level from 1 to 19; using 1", v);
    else mpa_cfg.zstd_level = (int)l;
  }
  if ((v = getenv("MPIADVISE_CLOCK")) && *v) {
    if (strcmp(v, "tsc") && strcmp(v, "monotonic") && strcmp(v, "auto"))
      setting_warning("MPIADVISE_CLOCK=%s is not tsc, monotonic or auto; using auto (%s)", v,
                      mpa_clock_is_tsc ? "tsc" : "monotonic");
    else if (!strcmp(v, "tsc") && !mpa_clock_is_tsc)
      setting_warning("MPIADVISE_CLOCK=tsc: this CPU's time stamp counter is not invariant; using monotonic");
  }
  if ((v = getenv("MPIADVISE_PROBE")) && *v) {
    if (says_off(v)) mpa_cfg.probe = 0;
    else if (strcmp(v, "1") && strcasecmp(v, "on") && strcasecmp(v, "yes"))
      setting_warning("MPIADVISE_PROBE=%s is not 0/off or 1/on; the round trips are timed", v);
  }
  if ((v = getenv("MPIADVISE_PAPI")) && *v) {
    if (strlen(v) >= sizeof mpa_cfg.papi) setting_warning("MPIADVISE_PAPI is too long; no counters recorded");
    else strcpy(mpa_cfg.papi, v);
  }
}

/* ---- the job directory ------------------------------------------------------------------------------- */
static int mkdir_p(const char *path)
{
  char tmp[PATH_MAX];
  if (strlen(path) >= sizeof tmp) return ENAMETOOLONG;
  strcpy(tmp, path);
  for (char *p = tmp + 1; *p; p++) {
    if (*p != '/') continue;
    *p = '\0';
    if (mkdir(tmp, 0777) && errno != EEXIST) return errno;
    *p = '/';
  }
  if (mkdir(tmp, 0777) && errno != EEXIST) return errno;
  return 0;
}

static void program_name(char *out, size_t cap)
{
  char buf[PATH_MAX] = "";
  FILE *f = fopen("/proc/self/cmdline", "r");
  if (f) {
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
  }
  const char *base = strrchr(buf, '/');
  base = base ? base + 1 : buf;
  if (!*base) base = "mpi";
  snprintf(out, cap, "%s", base);
}

static int g_dir_err; /* rank 0's failure to make the default directory, else 0 */

/* Whether dir holds a rank log already; names the first one found. */
static int dir_holds_trace(const char *dir, char *found, size_t cap)
{
  DIR *d = opendir(dir);
  if (!d) return 0;
  int holds = 0;
  for (struct dirent *e; !holds && (e = readdir(d));) {
    size_t n = strlen(e->d_name);
    holds = n > 9 && !strncmp(e->d_name, "rank-", 5) && !strcmp(e->d_name + n - 4, ".mpa");
    if (holds) snprintf(found, cap, "%s", e->d_name);
  }
  closedir(d);
  return holds;
}

/* Creates this rank's log, which must not exist, and writes its head with one write(). 0 or errno. */
static int create_log(const uint8_t *head, size_t len)
{
  snprintf(g_path, sizeof g_path, "%s/rank-%05d.mpa", mpa_cfg.dir, mpa_rank);
  g_fd = open(g_path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0666);
  if (g_fd < 0) return errno;
  ssize_t w = write(g_fd, head, len);
  if (w == (ssize_t)len) return 0;
  return w < 0 ? errno : EIO;
}

/* Rank 0 chooses mpiadvise-PROGRAM-YYYYMMDD-HHMMSS (with .N if taken) and makes it, exclusively so that
 * two jobs started in the same second get one each; everyone gets it by broadcast. */
static void choose_dir(void)
{
  if (!mpa_cfg.dir_given && mpa_rank == 0) {
    char prog[256], stamp[32];
    program_name(prog, sizeof prog);
    time_t now = time(NULL);
    struct tm tm;
    localtime_r(&now, &tm);
    strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
    snprintf(mpa_cfg.dir, sizeof mpa_cfg.dir, "mpiadvise-%s-%s", prog, stamp);
    g_dir_err = mkdir(mpa_cfg.dir, 0777) ? errno : 0;
    for (int i = 1; g_dir_err == EEXIST && i < 1000; i++) {
      snprintf(mpa_cfg.dir, sizeof mpa_cfg.dir, "mpiadvise-%s-%s.%d", prog, stamp, i);
      g_dir_err = mkdir(mpa_cfg.dir, 0777) ? errno : 0;
    }
  }
  PMPI_Bcast(mpa_cfg.dir, (int)sizeof mpa_cfg.dir, MPI_CHAR, 0, g_comm);
}

/* ---- one warning per job ------------------------------------------------------------------------------ */
/* Collective over the job (init and finalize only): rank 0 prints when any rank has the problem, with
 * how many ranks do. */
void mpa_warn_once_per_job(int local_problem, const char *fmt, ...)
{
  int counts[2] = {local_problem ? 1 : 0, 0}, total[2] = {0, 0};
  PMPI_Allreduce(counts, total, 2, MPI_INT, MPI_SUM, g_comm);
  if (mpa_rank != 0 || total[0] == 0) return;
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  if (total[0] == mpa_size) mpa_warn("%s", msg);
  else mpa_warn("%s (%d of %d ranks)", msg, total[0], mpa_size);
}

/* ---- clocks across nodes --------------------------------------------------------------------------------- */
/* Offset of this rank's CLOCK_MONOTONIC to rank 0's, by the exchange with the smallest round trip
 * (Cristian). Ranks on rank 0's host share its clock: offset 0. Collective. */
static int64_t clock_offset(const char **method)
{
  char host[256] = "", host0[256] = "";
  gethostname(host, sizeof host - 1);
  if (mpa_rank == 0) strcpy(host0, host);
  PMPI_Bcast(host0, sizeof host0, MPI_CHAR, 0, g_comm);
  int differs = strcmp(host, host0) != 0, any = 0;
  g_host_differs = (char)differs;
  PMPI_Allreduce(&differs, &any, 1, MPI_INT, MPI_MAX, g_comm);
  g_hosts_differ = (char)any;
  *method = "same-host";
  if (!any) return 0;
  int64_t offset = 0;
  const int rounds = 16, tag = 1;
  if (mpa_rank == 0) {
    for (int r = 1; r < mpa_size; r++) {
      int need;
      PMPI_Recv(&need, 1, MPI_INT, r, tag, g_comm, MPI_STATUS_IGNORE);
      if (!need) continue;
      int64_t best_rtt = INT64_MAX, best = 0;
      for (int i = 0; i < rounds; i++) {
        uint64_t a = mpa_monotonic_ns(), remote;
        PMPI_Send(&a, 1, MPI_UINT64_T, r, tag, g_comm);
        PMPI_Recv(&remote, 1, MPI_UINT64_T, r, tag, g_comm, MPI_STATUS_IGNORE);
        uint64_t b = mpa_monotonic_ns();
        if ((int64_t)(b - a) < best_rtt) {
          best_rtt = (int64_t)(b - a);
          best = (int64_t)remote - (int64_t)(a + (b - a) / 2);
        }
      }
      PMPI_Send(&best, 1, MPI_INT64_T, r, tag, g_comm);
    }
  } else {
    PMPI_Send(&differs, 1, MPI_INT, 0, tag, g_comm);
    if (differs) {
      for (int i = 0; i < rounds; i++) {
        uint64_t a, mine;
        PMPI_Recv(&a, 1, MPI_UINT64_T, 0, tag, g_comm, MPI_STATUS_IGNORE);
        mine = mpa_monotonic_ns();
        PMPI_Send(&mine, 1, MPI_UINT64_T, 0, tag, g_comm);
      }
      PMPI_Recv(&offset, 1, MPI_INT64_T, 0, tag, g_comm, MPI_STATUS_IGNORE);
    }
  }
  *method = differs ? "ping-pong" : "same-host";
  return offset;
}

/* Round trips between rank 0 and a partner (probe.c): the first rank on another host than rank 0's where
 * the job spans hosts (the messages a parameter set for it prices cross hosts; two ranks on one host
 * would time shared memory), else rank 1. Every rank calls it: the choice is a collective. */
static void probe_messages(mpa_bytes *json)
{
  int partner = 1;
  if (g_hosts_differ) {
    int mine = g_host_differs ? mpa_rank : mpa_size;
    PMPI_Allreduce(&mine, &partner, 1, MPI_INT, MPI_MIN, g_comm);
  }
  mpa_probe_messages(g_comm, mpa_rank, mpa_size, partner, json);
}

/* ---- signals and exit ------------------------------------------------------------------------------ */
static const int g_signals[] = {SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTERM, SIGINT, SIGQUIT};
static struct sigaction g_old_actions[NSIG];

static pid_t g_pid; /* of the traced process, to know a forked child by */
static void in_forked_child(void);

/* A request to end (SIGTERM, SIGINT, SIGQUIT) usually reaches every rank of the job at once, from the
 * launcher or the batch system; as soon as one rank has died of it, Open MPI's mpirun and MPICH's
 * mpiexec kill the others outright (SIGKILL). A rank that has not yet run its handler then (on a node
 * with more ranks than free cores, it may wait some milliseconds for one) loses the calls it was inside
 * and its last events. So a rank that is about to die of such a signal by its default action waits
 * until this long after the signal came: the others have then had the time to write theirs. */
#define MPA_TERMINATION_GRACE_NS 100000000ull

static void on_fatal_signal(int sig, siginfo_t *info, void *ctx)
{
  uint64_t came = mpa_monotonic_ns();
  int flushed = 0;
  /* a signal can reach a forked child before its fork handler has run: the parent's events are the
   * parent's to write */
  if (getpid() != g_pid) in_forked_child();
  /* record the calls in progress and write what is held; tracing goes on, for a program whose own
   * handler lets it continue */
  else flushed = mpa_flush_from_signal();
  struct sigaction *old = &g_old_actions[sig];
  /* a one-shot handler of the application's goes away after this signal, as it would have */
  if (old->sa_flags & SA_RESETHAND) {
    struct sigaction dfl = *old;
    dfl.sa_handler = SIG_DFL;
    dfl.sa_flags &= ~(SA_SIGINFO | SA_RESETHAND);
    sigaction(sig, &dfl, NULL);
  }
  if ((old->sa_flags & SA_SIGINFO) && old->sa_sigaction) {
    old->sa_sigaction(sig, info, ctx);
    return;
  }
  if (old->sa_handler == SIG_IGN) return;
  if (old->sa_handler != SIG_DFL) {
    old->sa_handler(sig);
    return;
  }
  if (flushed && g_started && !g_finished && (sig == SIGTERM || sig == SIGINT || sig == SIGQUIT)) {
    for (uint64_t now = mpa_monotonic_ns(); now - came < MPA_TERMINATION_GRACE_NS; now = mpa_monotonic_ns()) {
      uint64_t left = MPA_TERMINATION_GRACE_NS - (now - came);
      struct timespec nap = {(time_t)(left / 1000000000ull), (long)(left % 1000000000ull)};
      nanosleep(&nap, NULL);
    }
  }
  /* default action: restore it and re-raise; delivered as soon as this handler returns */
  sigaction(sig, old, NULL);
  raise(sig);
}

static void install_signal_handlers(void)
{
  for (size_t i = 0; i < sizeof g_signals / sizeof g_signals[0]; i++) {
    int sig = g_signals[i];
    struct sigaction old, sa;
    if (sigaction(sig, NULL, &old) != 0) continue;
    if (!(old.sa_flags & SA_SIGINFO) && old.sa_handler == SIG_IGN) continue; /* the job ignores it */
    g_old_actions[sig] = old;
    /* the application's flags and mask stay as they were (SA_RESTART or not, SA_NODEFER, ...) */
    sa = old;
    sa.sa_sigaction = on_fatal_signal;
    sa.sa_flags = (old.sa_flags | SA_SIGINFO) & ~SA_RESETHAND;
    sigaction(sig, &sa, NULL);
  }
}

static void at_exit(void)
{
  /* exit() without MPI_Finalize: write what we hold; the log has no trailer */
  if (g_started && !g_finished && getpid() == g_pid) {
    mpa_active = 0;
    mpa_flush_at_exit(); /* exit() may come from a signal handler: no lock is waited on for long */
  }
}

/* ---- fork ------------------------------------------------------------------------------------------- */
/* A child forked by a traced rank is not traced: it shares the parent's log file and holds a copy of
 * its unwritten events, but not its writer thread. Without this, its exit() waited 2 s for a writer
 * that does not exist, and a fatal signal in it wrote the copied events into the parent's log a second
 * time. Tracing is off in the child from its first instruction; its exit, signals, MPI_Finalize or
 * MPI_Abort touch nothing of the parent's. Runs in the child right after fork(): plain stores and
 * close() only (async-signal-safe), as the child of a threaded process may call nothing else. */
static void in_forked_child(void)
{
  mpa_active = 0;
  g_enabled = 0;
  g_finished = 1; /* at_exit, MPI_Abort and MPI_Pcontrol do nothing */
  g_joined = 0;   /* MPI_Finalize takes no part in the tracer's collectives */
  mpa_comms_tracked = 0;
  mpa_writer_forget();
  if (g_fd >= 0) close(g_fd);
  g_fd = -1;
}

/* ---- start ------------------------------------------------------------------------------------------ */
static void record_core_event(uint32_t call, uint64_t t0, uint64_t t1, void *ra, int64_t value, int has_value)
{
  mpa_thread *ts = mpa_begin();
  if (!ts) return;
  mpa_event ev;
  mpa_event_start(&ev, call, t0, t1);
  if (has_value) {
    ev.mask |= MPA_F_VALUE;
    ev.value = value;
  }
  mpa_finish(ts, &ev, 0, mpa_callsite_id(ts, ra));
}

/* t0: when the application called MPI_Init; the event ends when the tracer's own set-up has too, so
 * that none of it is counted as the application's computation. */
static void start(uint32_t call, uint64_t t0, void *ra)
{
  if (g_started || g_joined || mpa_foreign_mpi) return;
  read_settings();
  g_enabled = mpa_cfg.enabled;
#ifdef MPICH
  mpa_mpich_shortcuts_check();
#endif
#ifdef OPEN_MPI
  mpa_ompi_shortcuts_check();
#endif
  PMPI_Comm_rank(MPI_COMM_WORLD, &mpa_rank);
  PMPI_Comm_size(MPI_COMM_WORLD, &mpa_size);
  if (mpa_rank == 0 && g_setting_warnings[0]) {
    for (char *line = strtok(g_setting_warnings, "\n"); line; line = strtok(NULL, "\n")) mpa_warn("%s", line);
  }
  if (!g_enabled) return;
  if (PMPI_Comm_dup(MPI_COMM_WORLD, &g_comm) != MPI_SUCCESS) {
    g_enabled = 0;
    return;
  }
  /* From here every rank takes part in the same collectives, here and in finish(), whether or not it
   * can write its own log. */
  g_joined = 1;
  choose_dir();
  int err = mpa_cfg.dir_given ? mkdir_p(mpa_cfg.dir) : g_dir_err;
  int any_err = 0;
  PMPI_Allreduce(&err, &any_err, 1, MPI_INT, MPI_MAX, g_comm);
  mpa_warn_once_per_job(err != 0, "cannot write logs in %s: %s; tracing is off", mpa_cfg.dir,
                        strerror(any_err));

  /* The job's identity, in every rank's header: a reader tells the logs of two jobs apart by it; and
   * whether rank 0 and a partner time round trips, as rank 0 was told (both must, or neither). */
  struct {
    char job[128];
    int probe;
  } shared = {"", mpa_cfg.probe};
  char *job = shared.job;
  if (mpa_rank == 0) {
    char host[64] = "";
    struct timespec wall;
    gethostname(host, sizeof host - 1);
    clock_gettime(CLOCK_REALTIME, &wall);
    snprintf(job, sizeof shared.job, "%s-%d-%lld", host, (int)getpid(),
             (long long)wall.tv_sec * 1000000000ll + wall.tv_nsec);
  }
  PMPI_Bcast(&shared, (int)sizeof shared, MPI_BYTE, 0, g_comm);
  g_probe = shared.probe;

  /* deeper call sites than the return address: libunwind, loaded now that tracing is on (callsite.c) */
  const char *no_unwind = mpa_cfg.stack_depth > 1 ? mpa_unwind_load() : NULL;
  mpa_warn_once_per_job(no_unwind != NULL, "MPIADVISE_STACK_DEPTH=%d needs libunwind, which cannot be loaded "
                        "(%s); call sites are the return address alone", mpa_cfg.stack_depth,
                        no_unwind ? no_unwind : "on other ranks than 0");
  if (no_unwind) mpa_cfg.stack_depth = 1;

  int level = MPI_THREAD_SINGLE;
  PMPI_Query_thread(&level);
  const char *method;
  int64_t offset = clock_offset(&method);
  mpa_bytes probe = {0};
  if (g_probe) probe_messages(&probe);
  /* The whole head of the log (file header and header JSON) is made before the file and written with
   * one write() right after creating it: a rank killed in between leaves no log at all rather than an
   * empty one, except for that one system call. */
  mpa_bytes head = {0};
  if (!err) {
    mpa_papi_init(mpa_rank);
    uint64_t sync_tick, sync_ns;
    mpa_clock_sync(&sync_tick, &sync_ns);
    mpa_bytes json = {0};
    mpa_header_json(&json, mpa_rank, mpa_size, level, job, mpa_clock_is_tsc ? "tsc" : "monotonic", offset,
                    method, sync_tick, sync_ns, &probe);
    mpa_file_header h;
    memcpy(h.magic, MPA_FILE_MAGIC, 8);
    h.version = MPA_FORMAT_VERSION;
    h.json_bytes = (uint32_t)json.len;
    if (json.len && mpa_bytes_reserve(&head, sizeof h + json.len) == 0) {
      memcpy(head.data, &h, sizeof h);
      memcpy(head.data + sizeof h, json.data, json.len);
      head.len = sizeof h + json.len;
    } else {
      err = ENOMEM;
    }
    mpa_bytes_free(&json);
  }
  /* One job per directory: rank 0 claims it by creating its log exclusively, unless it holds a trace
   * already (of an earlier job, or of one running now); then the other ranks create theirs. */
  int claim = err;
  if (mpa_rank == 0 && !err) {
    char found[256];
    if (dir_holds_trace(mpa_cfg.dir, found, sizeof found)) {
      claim = EEXIST;
      mpa_warn("%s already holds a trace (%s): tracing is off; give each job its own MPIADVISE_DIR", mpa_cfg.dir,
               found);
    } else if ((claim = create_log(head.data, head.len)) == EEXIST) {
      mpa_warn("%s already holds a trace (rank-00000.mpa, of a job started at the same time): tracing is off; "
               "give each job its own MPIADVISE_DIR", mpa_cfg.dir);
    }
  }
  PMPI_Bcast(&claim, 1, MPI_INT, 0, g_comm);
  int refused = claim == EEXIST;
  if (refused || any_err) g_probe = 0; /* no log of rank 0's to hold them at MPI_Finalize (every rank knows) */
  if (mpa_rank != 0 && !err && !refused) err = create_log(head.data, head.len);
  if (mpa_rank == 0 && !err) err = claim;
  mpa_bytes_free(&head);
  mpa_bytes_free(&probe);
  if (!err && !refused && mpa_writer_start(g_fd) != 0) err = ENOMEM;
  int late_err = err && !any_err && !refused ? err : 0;
  mpa_warn_once_per_job(late_err != 0, "cannot write logs in %s: %s; tracing is off", mpa_cfg.dir,
                        strerror(late_err ? late_err : EIO));
  if (err || refused) {
    if (g_fd >= 0) close(g_fd);
    g_fd = -1;
    g_enabled = 0;
    return;
  }
  mpa_comm_init();
  mpa_comms_tracked = 1;
  mpa_modules_record();
  g_pid = getpid();
  install_signal_handlers();
  atexit(at_exit);
  pthread_atfork(NULL, NULL, in_forked_child);
  g_started = 1;
  update_active();
  record_core_event(call, t0, mpa_now(), ra, level, 1);
}

/* ---- finish ------------------------------------------------------------------------------------------ */
static void finish(void *ra)
{
  if (!g_joined) return;
  g_joined = 0;
  if (g_started && !g_finished) {
    uint64_t t0 = mpa_now();
    g_paused = 0;
    update_active();
    record_core_event(MPA_CALL_Finalize, t0, mpa_now(), ra, 0, 0);
  }
  int writing = g_started && !g_finished;
  g_finished = 1;
  mpa_comms_tracked = 0;
  update_active();

  const char *method;
  int64_t offset = clock_offset(&method);
  /* the writer thread stopped first: compressing beside the round trips, it would slow them */
  if (writing) mpa_writer_stop();
  mpa_bytes probe = {0};
  if (g_probe) probe_messages(&probe);
  const char *werr = NULL;
  if (writing) {
    struct mpa_writer_stats st;
    mpa_writer_stats(&st);
    werr = mpa_writer_error();
    mpa_bytes j = {0};
    mpa_json_fmt(&j, "{\"complete\":true,\"clock_offset_finalize_ns\":%lld,\"clock_offset_method\":",
                 (long long)offset);
    mpa_json_str(&j, method);
    mpa_json_fmt(&j, ",\"events\":%llu,\"chunks\":%llu,\"raw_bytes\":%llu,\"stored_bytes\":%llu,"
                 "\"stalls\":%llu,\"chunks_over_budget\":%llu,\"write_error\":",
                 (unsigned long long)st.events, (unsigned long long)st.chunks,
                 (unsigned long long)st.raw_bytes, (unsigned long long)st.stored_bytes,
                 (unsigned long long)st.stalls, (unsigned long long)st.over_budget);
    if (werr) mpa_json_str(&j, werr);
    else mpa_json_raw(&j, "null");
    if (probe.len) {
      mpa_json_raw(&j, ",\"message_probe\":");
      mpa_json_bytes(&j, &probe);
    }
    mpa_json_raw(&j, ",\"callsites\":");
    mpa_callsite_tables_json(&j);
    mpa_json_raw(&j, ",\"comms\":");
    mpa_comm_tables_json(&j);
    mpa_json_raw(&j, "}");
    mpa_write_json_chunk(MPA_CHUNK_TRAILER, (const char *)j.data, j.len);
    mpa_bytes_free(&j);
    werr = mpa_writer_error();
  }
  mpa_bytes_free(&probe);
  mpa_warn_once_per_job(werr != NULL, "the log in %s is incomplete: %s", mpa_cfg.dir, werr ? werr : "");
  if (g_fd >= 0) close(g_fd);
  g_fd = -1;
  if (g_comm != MPI_COMM_NULL) PMPI_Comm_free(&g_comm);
}

/* ---- the MPI of the process --------------------------------------------------------------------------- */
/* This library is built against one MPI (its mpi.h and its libmpi). Preloaded into a program of another,
 * its handles mean nothing there: Open MPI's are pointers, MPICH's ints, and MPI_COMM_WORLD of one passed
 * to the other ended the job with "Invalid communicator" (exit 5) or a segmentation fault. The library
 * asks the MPI the process runs, before anything is called: the first PMPI_Get_library_version in the
 * process's lookup order is the program's own MPI (the program and its libraries come before the
 * libraries this one pulls in). Another MPI: tracing stays off, one line says so, and every wrapper
 * passes its call straight through. */
static void check_process_mpi(void)
{
  typedef int (*version_fn)(char *, int *);
  version_fn version = (version_fn)dlsym(RTLD_DEFAULT, "PMPI_Get_library_version");
  static char v[16384]; /* MPICH's MPI_MAX_LIBRARY_VERSION_STRING is 8192, Open MPI's 256 */
  int len = 0;
  if (!version || version(v, &len) != 0) return;
  v[sizeof v - 1] = 0;
#ifdef OPEN_MPI
  const char *ours = "Open MPI";
  mpa_foreign_mpi = strstr(v, "Open MPI") == NULL;
  const char *at = strstr(v, "Open MPI v");
  int major = 0, minor = 0, release = 0;
  if (at && sscanf(at, "Open MPI v%d.%d.%d", &major, &minor, &release) == 3)
    g_ompi_version = major * 10000 + minor * 100 + release;
#else
  const char *ours = "MPICH";
  mpa_foreign_mpi = strstr(v, "Open MPI") != NULL; /* the MPICH ABI: MPICH, Intel MPI, MVAPICH */
#endif
  if (!mpa_foreign_mpi) return;
  /* one line for the job: from its first rank, as the launcher numbers them, or from a singleton */
  const char *r = launcher_rank();
  if (r && strcmp(r, "0") != 0) return;
  char theirs[96];
  size_t n = 0;
  for (const char *c = v; *c && *c != '\n' && *c != ',' && n + 1 < sizeof theirs; c++) theirs[n++] = *c == '\t' ? ' ' : *c;
  theirs[n] = 0;
  Dl_info self;
  const char *lib = dladdr((void *)check_process_mpi, &self) && self.dli_fname ? self.dli_fname : "libmpiadvise.so";
  mpa_warn("%s is built for %s but this job runs %s: tracing is off (mpiadvise run preloads the library built for "
           "the job's MPI)", lib, ours, theirs);
}

/* Before MPI_Init: the rank its launcher calls 0 reads the MPI_T control variables for its header now
 * (mpa_cvars_before_init). Open MPI's MPI_T_init_thread opens every component of every framework to
 * register their variables; done before MPI_Init the memory that takes is mostly given back before MPI
 * takes its own, and rank 0's peak resident set rose by 3.1 MiB traced instead of 4.2 (make bench's
 * exchange on 2 ranks). Not in a process the tracing is off for, nor under another MPI than ours; nor
 * under MPICH, whose MPI_Init (4.0.2) dies in a strcmp of a null pointer after MPI_T_init_thread and
 * MPI_T_finalize (a program that does only that, here), and where reading them after MPI_Init raised
 * rank 0's peak no higher than the other ranks' (measured). */
static void before_init(int thread_level)
{
  (void)thread_level;
  /* Open MPI 4.1 before 4.1.4 dies in MPI_Init after MPI_T_finalize (opal_common_ucx's tls freed by
   * mca_base_var_finalize: open-mpi/ompi#10409, fixed in 4.1.4), as 5.0 did before its release (#8860):
   * read before MPI_Init only from 4.1.4 on in the 4.1 series, built and running, where it was measured */
#if defined(OPEN_MPI) && OMPI_MAJOR_VERSION == 4 && OMPI_MINOR_VERSION == 1 && OMPI_RELEASE_VERSION >= 4
  /* Open MPI's own numbering (mpirun, or srun through PMIx): not a PMI_RANK left by an outer launcher */
  const char *r = getenv("OMPI_COMM_WORLD_RANK");
  if (!r || !*r) r = getenv("PMIX_RANK");
  const char *on = getenv("MPIADVISE");
  if (mpa_foreign_mpi || (on && *on && says_off(on)) || !r || strcmp(r, "0") != 0) return;
  if (g_ompi_version < 40104 || g_ompi_version >= 40200) return;
  /* nor under ThreadSanitizer: with its runtime in the process, a program of MPI_T_init_thread,
   * MPI_T_finalize and MPI_Init alone dies of a segmentation fault in Open MPI 4.1.4 (here) */
  if (dlsym(RTLD_DEFAULT, "__tsan_init")) return;
  mpa_cvars_before_init(thread_level);
#endif
}

/* ---- C entry points -------------------------------------------------------------------------------- */
__attribute__((constructor)) static void mpa_load(void)
{
  mpa_clock_init();
  check_process_mpi();
}

MPA_ENTRY(Init)
int MPA_C_NAME(Init)(int *argc, char ***argv)
{
  uint64_t t0 = mpa_now();
  if (!g_in_fortran) before_init(MPI_THREAD_SINGLE);
  int rc = PMPI_Init(argc, argv);
  if (rc == MPI_SUCCESS && !g_in_fortran) start(MPA_CALL_Init, t0, __builtin_return_address(0));
  return rc;
}

MPA_ENTRY(Init_thread)
int MPA_C_NAME(Init_thread)(int *argc, char ***argv, int required, int *provided)
{
  uint64_t t0 = mpa_now();
  if (!g_in_fortran) before_init(required);
  int rc = PMPI_Init_thread(argc, argv, required, provided);
  if (rc == MPI_SUCCESS && !g_in_fortran) start(MPA_CALL_Init_thread, t0, __builtin_return_address(0));
  return rc;
}

MPA_ENTRY(Finalize)
int MPA_C_NAME(Finalize)(void)
{
  if (!g_in_fortran) finish(__builtin_return_address(0));
  return PMPI_Finalize();
}

static void before_abort(int errorcode, void *ra)
{
  if (!g_started || g_finished) return;
  uint64_t t = mpa_now();
  record_core_event(MPA_CALL_Abort, t, t, ra, errorcode, 1);
  g_finished = 1;
  update_active();
  mpa_flush_all(2000);
  char meta[128];
  int n = snprintf(meta, sizeof meta, "{\"aborted\":true,\"errorcode\":%d}", errorcode);
  mpa_write_json_chunk(MPA_CHUNK_META, meta, (size_t)n);
}

MPA_ENTRY(Abort)
int MPA_C_NAME(Abort)(MPI_Comm comm, int errorcode)
{
  before_abort(errorcode, __builtin_return_address(0));
  return PMPI_Abort(comm, errorcode);
}

static void pcontrol(int level, void *ra)
{
  if (!g_started || g_finished) return;
  uint64_t t = mpa_now();
  if (level == 0) {
    record_core_event(MPA_CALL_Pcontrol, t, t, ra, level, 1);
    g_paused = 1;
    update_active();
  } else {
    g_paused = 0;
    update_active();
    record_core_event(MPA_CALL_Pcontrol, t, t, ra, level, 1);
  }
}

MPA_ENTRY(Pcontrol)
int MPA_C_NAME(Pcontrol)(const int level, ...)
{
  if (!g_in_fortran) pcontrol(level, __builtin_return_address(0));
  return PMPI_Pcontrol(level);
}

/* ---- Fortran entry points of the life cycle (the rest are generated) -------------------------------- */
/* MPICH's Fortran bindings call the C functions (MPI_Init, MPI_Pcontrol, ...), and those are ours too:
 * while a Fortran entry here runs the library's, the C wrappers of the life cycle only pass the call on,
 * so that the call is recorded once, at the program's call site. */
#define MPA_FORTRAN_REAL(call) \
  do {                         \
    g_in_fortran++;            \
    call;                      \
    g_in_fortran--;            \
  } while (0)
#define MPA_FORTRAN_ENTRIES(lower, upper, params, args, body)                                          \
  MPA_EXPORT void lower##_ params;                                                                     \
  void lower##_ params { static void *real; void *ra = __builtin_return_address(0);                   \
    if (!real) { real = mpa_fortran_real("p" #lower "_"); } body }                                         \
  MPA_EXPORT void lower##__ params;                                                                    \
  void lower##__ params { static void *real; void *ra = __builtin_return_address(0);                  \
    if (!real) { real = mpa_fortran_real("p" #lower "__"); } body }                                        \
  MPA_EXPORT void lower params;                                                                        \
  void lower params { static void *real; void *ra = __builtin_return_address(0);                      \
    if (!real) { real = mpa_fortran_real("p" #lower); } body }                                             \
  MPA_EXPORT void upper params;                                                                        \
  void upper params { static void *real; void *ra = __builtin_return_address(0);                      \
    if (!real) { real = mpa_fortran_real("P" #upper); } body }                                             \
  MPA_EXPORT void lower##_f08_ params;                                                                 \
  void lower##_f08_ params { static void *real; void *ra = __builtin_return_address(0);               \
    if (!real) { real = mpa_fortran_real("p" #lower "_f08_"); } body }

typedef void (*fn_ierr)(MPI_Fint *);
typedef void (*fn_init_thread)(MPI_Fint *, MPI_Fint *, MPI_Fint *);
typedef void (*fn_abort)(MPI_Fint *, MPI_Fint *, MPI_Fint *);
typedef void (*fn_pcontrol)(MPI_Fint *, MPI_Fint *);

MPA_FORTRAN_ENTRIES(mpi_init, MPI_INIT, (MPI_Fint *ierr), (ierr), {
  uint64_t t0 = mpa_now();
  before_init(MPI_THREAD_SINGLE);
  MPA_FORTRAN_REAL(((fn_ierr)real)(ierr));
  if (!ierr || *ierr == MPI_SUCCESS) start(MPA_CALL_Init, t0, ra);
})

MPA_FORTRAN_ENTRIES(mpi_init_thread, MPI_INIT_THREAD, (MPI_Fint *required, MPI_Fint *provided, MPI_Fint *ierr),
                    (required, provided, ierr), {
  uint64_t t0 = mpa_now();
  before_init(required ? (int)*required : MPI_THREAD_SINGLE);
  MPA_FORTRAN_REAL(((fn_init_thread)real)(required, provided, ierr));
  if (!ierr || *ierr == MPI_SUCCESS) start(MPA_CALL_Init_thread, t0, ra);
})

MPA_FORTRAN_ENTRIES(mpi_finalize, MPI_FINALIZE, (MPI_Fint *ierr), (ierr), {
  finish(ra);
  MPA_FORTRAN_REAL(((fn_ierr)real)(ierr));
})

MPA_FORTRAN_ENTRIES(mpi_abort, MPI_ABORT, (MPI_Fint *comm, MPI_Fint *errorcode, MPI_Fint *ierr),
                    (comm, errorcode, ierr), {
  before_abort((int)*errorcode, ra);
  MPA_FORTRAN_REAL(((fn_abort)real)(comm, errorcode, ierr));
})

/* MPI_PCONTROL has no IERROR in mpif.h and `use mpi`, but MPICH's mpi_f08 binding takes an optional one,
 * (level, ierror or NULL), and stores its result there (mpi_pcontrol_f08_ in MPICH 4.0.2). Each entry
 * passes on both registers as it got them: a library whose entry takes one argument ignores the second,
 * and MPICH's f08 entry gets the program's ierror instead of whatever our own code left in that register
 * (a pointer into the trace buffer, which it overwrote with the result). */
MPA_FORTRAN_ENTRIES(mpi_pcontrol, MPI_PCONTROL, (MPI_Fint *level, MPI_Fint *ierr), (level, ierr), {
  pcontrol((int)*level, ra);
  MPA_FORTRAN_REAL(((fn_pcontrol)real)(level, ierr));
})

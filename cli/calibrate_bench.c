/* mpiadvise-calibrate-bench: the paper's round-trip benchmark (sections 4.1, 4.2), run by
 * `mpiadvise calibrate` under the user's launcher.
 *   mpiadvise-calibrate-bench W_NS REPS SIZE [SIZE ...]
 * Ranks 0 and 1 bounce a k-byte message with blocking MPI_Send/MPI_Recv in a loop without barriers, rank
 * 1 computing w ns after each of its sends and before its next receive: the loop of the paper's Table 6,
 * whose round trip is equations (12)-(14). Rank 1 thus computes while rank 0's message arrives, and rank
 * 0's send meets a receiver w ns late. w = 0 and w = W, every size, REPS round trips each, taken three at
 * a time with every size in turn (a disturbance then costs a few repetitions of several sizes). Then
 * w = 0 again for the sizes of 1 KiB and more with neither rank writing its buffer between its sends:
 * data sent again unchanged, each slice beside one of data just written (printed with "resend":true, the
 * latter as fresh_rtt_ns). Then the effective S: the sweep brackets it (the largest size whose send with w = W returned at once,
 * and the next one, whose send waited for the receiver); rank 0 bisects between them, telling rank 1 the
 * next size, until the two are one byte apart. Each probe is a few round trips with w = W; a send that
 * waits takes about W, an eager one microseconds, and the majority of the probe's sends decides.
 * Then the eager buffer: rank 0 floods rank 1, which computes 20 ms first, with up to FLOOD_MAX eager
 * sends of k bytes (k = 64, S/2 and S, at most S); the sends that returned before the first one that
 * waited went into the library's buffer for a late receiver. Three floods per size. Then late receives:
 * eager messages of S/8 to S bytes whose receive is posted 200 us after their send, each receive timed.
 * Prints JSON lines on stdout from rank 0: the run's facts, one line per (w, k) with every repetition's
 * round trip and send time, the bisection, the floods, the late receives, the persistent-request timing,
 * the time of an MPI_Isend and an MPI_Irecv call (post_costs), and {"done":true} once every measurement is
 * made (mpiadvise calibrate stops a job that then hangs in MPI_Finalize). Progress goes to stderr. */
#define _GNU_SOURCE /* strcasestr */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "sent_data.h"

#define FLOOD_MAX 4096 /* eager sends per flood at most */

static double now_ns(void)
{
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e9 + t.tv_nsec;
}

static void compute(double ns)
{
  double until = now_ns() + ns;
  while (now_ns() < until) {
  }
}

/* s as a JSON string: quotes, backslashes and every control character escaped (MPICH's library version
 * holds TABs and newlines; JSON allows none of them raw) */
static void print_json_string(const char *s)
{
  putchar('"');
  for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
    if (*p == '"' || *p == '\\') printf("\\%c", *p);
    else if (*p < 0x20 || *p == 0x7f) printf("\\u%04x", *p);
    else putchar(*p);
  }
  putchar('"');
}

static int by_value(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* What posting a non-blocking call costs its caller: rank 1 posts n MPI_Irecv for messages not yet sent,
 * timing each call; after a barrier rank 0 posts the n matching 0-byte MPI_Isend, timing each, to the
 * waiting receives (a halo exchange's usual order). Five batches; the median call of all. Rank 0 prints
 * both (rank 1 sends it its median). */
static void post_costs(char *buf, int n, int rank)
{
  MPI_Request *req = malloc(sizeof *req * n);
  double *t = malloc(sizeof *t * n * 5);
  if (!req || !t) {
    fprintf(stderr, "mpiadvise-calibrate-bench: out of memory\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  for (int batch = 0; batch < 5; batch++) {
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 1) {
      for (int i = 0; i < n; i++) {
        double t0 = now_ns();
        MPI_Irecv(buf, 0, MPI_BYTE, 0, 6, MPI_COMM_WORLD, &req[i]);
        t[batch * n + i] = now_ns() - t0;
      }
    }
    MPI_Barrier(MPI_COMM_WORLD);
    if (rank == 0) {
      for (int i = 0; i < n; i++) {
        double t0 = now_ns();
        MPI_Isend(buf, 0, MPI_BYTE, 1, 6, MPI_COMM_WORLD, &req[i]);
        t[batch * n + i] = now_ns() - t0;
      }
    }
    for (int i = 0; i < n && rank < 2; i++) MPI_Wait(&req[i], MPI_STATUS_IGNORE); /* MPI_STATUSES_IGNORE: see below */
  }
  double median = 0;
  if (rank < 2) {
    qsort(t, (size_t)n * 5, sizeof *t, by_value);
    median = t[n * 5 / 2];
  }
  if (rank == 1) MPI_Send(&median, 1, MPI_DOUBLE, 0, 7, MPI_COMM_WORLD);
  if (rank == 0) {
    double irecv = 0;
    MPI_Recv(&irecv, 1, MPI_DOUBLE, 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    printf("{\"posts\":true,\"calls\":%d,\"isend_ns\":%.1f,\"irecv_ns\":%.1f}\n", n * 5, median, irecv);
    fflush(stdout);
  }
  free(req);
  free(t);
}

/* the eager and rendezvous limits the library reports through MPI_T */
static void print_cvars(void)
{
  int provided, n = 0, first = 1;
  printf("\"cvars\":{");
  if (MPI_T_init_thread(MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS) {
    printf("}");
    return;
  }
  MPI_T_cvar_get_num(&n);
  for (int i = 0; i < n; i++) {
    char name[256], desc[8];
    int nl = sizeof name, dl = sizeof desc, verbosity, bind, scope, count;
    MPI_Datatype type;
    MPI_T_enum et;
    if (MPI_T_cvar_get_info(i, name, &nl, &verbosity, &type, &et, desc, &dl, &bind, &scope) != MPI_SUCCESS) continue;
    if ((!strcasestr(name, "eager") && !strcasestr(name, "rndv")) || bind != MPI_T_BIND_NO_OBJECT) continue;
    MPI_T_cvar_handle h;
    if (MPI_T_cvar_handle_alloc(i, NULL, &h, &count) != MPI_SUCCESS) continue;
    unsigned long long v = 0;
    int ok = 0;
    if (count == 1 && type == MPI_INT) {
      int x;
      ok = MPI_T_cvar_read(h, &x) == MPI_SUCCESS && x >= 0, v = (unsigned long long)x;
    } else if (count == 1 && type == MPI_UNSIGNED) {
      unsigned x;
      ok = MPI_T_cvar_read(h, &x) == MPI_SUCCESS, v = x;
    } else if (count == 1 && (type == MPI_UNSIGNED_LONG || type == MPI_UNSIGNED_LONG_LONG || type == MPI_COUNT)) {
      unsigned long long x = 0;
      ok = MPI_T_cvar_read(h, &x) == MPI_SUCCESS, v = x;
    }
    MPI_T_cvar_handle_free(&h);
    if (ok) {
      printf("%s", first ? "" : ",");
      print_json_string(name);
      printf(":%llu", v);
      first = 0;
    }
  }
  MPI_T_finalize();
  printf("}");
}

enum { kWarmup = 2 }; /* round trips before the loop is in its steady state (rank 1 computing after its send) */
enum { kSlice = 3 };  /* round trips of one size in a row in the sweep */

/* "env":{...}: the environment that chooses the MPI's transport and protocol switch, as the tracer logs it
 * (Open MPI's OMPI_MCA_*, UCX's UCX_*, MPICH's MPIR_CVAR_*): mpiadvise reads the run's facts from it */
static void print_env(void)
{
  extern char **environ;
  static const char *const prefixes[] = {"OMPI_MCA_", "UCX_", "MPIR_CVAR_"};
  int first = 1;
  printf("\"env\":{");
  for (char **e = environ; e && *e; e++) {
    const char *eq = strchr(*e, '=');
    int relevant = 0;
    for (size_t i = 0; i < sizeof prefixes / sizeof prefixes[0]; i++) relevant |= !strncmp(*e, prefixes[i], strlen(prefixes[i]));
    if (!relevant || !eq || eq - *e >= 256) continue;
    char name[256];
    memcpy(name, *e, (size_t)(eq - *e));
    name[eq - *e] = 0;
    printf("%s", first ? "" : ",");
    first = 0;
    print_json_string(name);
    printf(":");
    print_json_string(eq + 1);
  }
  printf("}");
}

/* The k bytes a send carries are written just before it (mpa_write_sent, libtrace/sent_data.h: copied from
 * the receive buffer, as a code packs what it sends; the tracer's probe writes alike). Sending from a
 * buffer nobody wrote measures another machine: calloc's untouched pages are the kernel's one zero page,
 * always cached, and a line written elsewhere long ago is clean. Over Open MPI's shared memory (untraced
 * ping-pongs, 1000 round trips, `mpirun -np 2 --mca btl vader,self`) a 128 KiB round trip took 14.6 us
 * from an unwritten buffer and 24.1 us from a freshly written one, 1 MiB 86 against 211 us (CMA reads the
 * lines out of the sender's cache), 8 KiB 3.8-6.3 against 5.3-5.4 (two runs: no direction); loopback TCP
 * at 128 KiB 82 against 70 us. The halo example, which sends the cells its stencil just wrote, was
 * predicted 22% fast from the unwritten buffer. */

/* n round trips of k bytes (after kWarmup more), rank 1 computing w ns before each receive. Rank 0 keeps
 * in rtt the period of its loop, from one send's call to the next one's (the time of a round trip in the
 * steady state), and in snd each send's time. A rank descheduled between two round trips lengthens the
 * period it falls in; timing from send to receive alone would instead shorten the round trip by the
 * time rank 1 computed unseen. Each rank writes its k bytes before each send (mpa_write_sent), and neither
 * write is part of a round trip: rank 0's falls between two periods, and rank 1's, between its receive and
 * its send while rank 0 waits in its receive, is timed and taken out of the period it fell in (rank 1
 * sends its times to rank 0 after the loop). Each rank sends from one buffer and receives into another, as
 * applications do: with one buffer for both, Open MPI's shared memory copied its large messages by CMA
 * 1.8 to 2.6 times slower (8 KiB round trips 8.6 against 4.8 us, 128 KiB 37.2 against 14.4 us). */
static void round_trips(char *buf, char *rbuf, int k, double w, int n, double *rtt, double *snd, int rank, int fresh)
{
  enum { kMaxN = 64 }; /* the callers' n: kSlice or a probe's 5 */
  double start = 0, wrote[kMaxN + kWarmup + 1] = {0};
  if (n > kMaxN) {
    fprintf(stderr, "mpiadvise-calibrate-bench: %d round trips in a row, at most %d\n", n, kMaxN);
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  for (int r = 0; r <= n + kWarmup; r++) {
    if (rank == 0) {
      double t = now_ns();
      if (r > kWarmup) rtt[r - kWarmup - 1] = t - start;
      if (r == n + kWarmup) break; /* the last call only closes the last period */
      if (fresh) mpa_write_sent(buf, rbuf, k);
      double t0 = now_ns();
      start = t0;
      MPI_Send(buf, k, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
      double t1 = now_ns();
      MPI_Recv(rbuf, k, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      if (r >= kWarmup) snd[r - kWarmup] = t1 - t0;
    } else if (rank == 1) {
      if (r == n + kWarmup) break;
      if (w > 0) compute(w);
      MPI_Recv(rbuf, k, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      double t = now_ns();
      if (fresh) mpa_write_sent(buf, rbuf, k);
      wrote[r] = now_ns() - t;
      MPI_Send(buf, k, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
    }
  }
  if (rank == 1) MPI_Send(wrote + kWarmup, n, MPI_DOUBLE, 0, 7, MPI_COMM_WORLD);
  if (rank == 0) {
    MPI_Recv(wrote, n, MPI_DOUBLE, 1, 7, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    for (int i = 0; i < n; i++) rtt[i] -= wrote[i];
  }
}

/* whether the sends of a probe waited for their receiver: most of them took more than W/2 (a send that
 * waits takes about W, an eager one microseconds; a descheduled rank can make one send of either kind
 * look like the other, not most of them) */
static int waited(const double *snd, int n, double W)
{
  int slow = 0;
  for (int i = 0; i < n; i++) slow += snd[i] > W / 2;
  return 2 * slow > n;
}

static void print_samples(int k, double w, const double *rtt, const double *snd, int n)
{
  printf("{\"k\":%d,\"w\":%.0f,\"rtt_ns\":[", k, w);
  for (int i = 0; i < n; i++) printf("%s%.0f", i ? "," : "", rtt[i]);
  printf("],\"send_ns\":[");
  for (int i = 0; i < n; i++) printf("%s%.0f", i ? "," : "", snd[i]);
  printf("]}\n");
  fflush(stdout);
}

int main(int argc, char **argv)
{
  MPI_Init(&argc, &argv);
  int rank, size;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size < 2) {
    fprintf(stderr, "mpiadvise calibrate: the benchmark needs 2 ranks, the job has %d\n", size);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  /* --progress: mpiadvise calibrate's stderr is a terminal (a rank's never is, under mpirun) */
  int progress = argc > 1 && strcmp(argv[1], "--progress") == 0;
  if (progress) argv++, argc--;
  if (argc < 4) {
    if (rank == 0) fprintf(stderr, "usage: mpiadvise-calibrate-bench [--progress] W_NS REPS SIZE...\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  double W = atof(argv[1]);
  int reps = atoi(argv[2]), nsizes = argc - 3;
  if (!(W > 0) || reps < 1) {
    if (rank == 0) fprintf(stderr, "mpiadvise calibrate: bad W_NS %s or REPS %s\n", argv[1], argv[2]);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  int *sizes = malloc(sizeof(int) * (size_t)nsizes);
  long max_k = 0;
  for (int i = 0; i < nsizes; i++) {
    sizes[i] = atoi(argv[3 + i]);
    if (sizes[i] > max_k) max_k = sizes[i];
    if (i > 0 && sizes[i] <= sizes[i - 1]) {
      if (rank == 0) fprintf(stderr, "mpiadvise calibrate: the sizes must increase (%s after %s)\n", argv[3 + i], argv[2 + i]);
      MPI_Abort(MPI_COMM_WORLD, 2);
    }
  }
  const int probe_reps = 5; /* round trips per bisection probe */
  int nbuf = reps > probe_reps ? reps : probe_reps;
  char *buf = malloc((size_t)max_k + 1), *rbuf = malloc((size_t)max_k + 1);
  if (!buf || !rbuf) {
    fprintf(stderr, "mpiadvise calibrate: cannot allocate two buffers of %lld bytes\n", (long long)max_k + 1);
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  memset(buf, 1, (size_t)max_k + 1); /* real pages, not the kernel's zero page (mpa_write_sent) */
  memset(rbuf, 1, (size_t)max_k + 1);
  double *rtt = malloc(sizeof(double) * (size_t)nbuf), *snd = malloc(sizeof(double) * (size_t)nbuf);
  char host[256] = "", peer_host[256] = "";
  gethostname(host, sizeof host - 1);
  if (rank == 1) MPI_Send(host, sizeof host, MPI_CHAR, 0, 2, MPI_COMM_WORLD);
  if (rank == 0) {
    char lib[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    int len;
    MPI_Recv(peer_host, sizeof peer_host, MPI_CHAR, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Get_library_version(lib, &len);
    printf("{\"facts\":true,\"hostname\":");
    print_json_string(host);
    printf(",\"hosts\":[");
    print_json_string(host);
    printf(",");
    print_json_string(peer_host);
    printf("],\"mpi_library\":");
    print_json_string(lib);
    printf(",\"ranks\":%d,", size);
    print_cvars();
    printf(",");
    print_env();
    printf("}\n");
    fflush(stdout);
  }
  /* warm up the fast paths (Open MPI sets up some only after a number of messages) */
  for (int i = 0; i < 64; i++) {
    if (rank == 0) {
      MPI_Send(buf, (int)max_k, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
      MPI_Recv(rbuf, (int)max_k, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (rank == 1) {
      MPI_Recv(rbuf, (int)max_k, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(buf, (int)max_k, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
    }
  }
  /* the sweep, in slices: each size's round trips are taken kSlice at a time, every size in turn, so that a
   * disturbance of the machine (a rank descheduled, another job's burst) lasting many round trips falls on
   * a few repetitions of several sizes, which their medians leave out, instead of on every repetition of
   * one or two sizes (seen over UCX's shared memory: three sizes in a row at 9 times their round trip).
   * Rank 0 notes the bracket of S from the sends with w = W. */
  int eager_below = -1, waited_above = -1; /* sizes; -1: none yet */
  int eager_limit_found = 0;               /* the bisection's S, on rank 0 */
  int eager_limit_seen = 0;                /* a size of the sweep waited: S is the library's limit, on rank 0 */
  double *all_rtt = malloc(sizeof(double) * (size_t)nsizes * (size_t)reps),
         *all_snd = malloc(sizeof(double) * (size_t)nsizes * (size_t)reps);
  if (!all_rtt || !all_snd) {
    fprintf(stderr, "mpiadvise-calibrate-bench: out of memory\n");
    MPI_Abort(MPI_COMM_WORLD, 1);
  }
  for (int pass = 0; pass < 2; pass++) {
    double w = pass ? W : 0;
    for (int from = 0; from < reps; from += kSlice) {
      int n = reps - from < kSlice ? reps - from : kSlice;
      for (int i = 0; i < nsizes; i++) {
        MPI_Barrier(MPI_COMM_WORLD); /* between slices only: a slice's round trips run back to back */
        round_trips(buf, rbuf, sizes[i], w, n, all_rtt + (size_t)i * reps + from, all_snd + (size_t)i * reps + from, rank, 1);
      }
      if (rank == 0 && progress)
        fprintf(stderr, "\rmpiadvise calibrate: w = %.0f us, %d of %d repetitions", w / 1e3, from + n, reps);
    }
    for (int i = 0; rank == 0 && i < nsizes; i++) {
      const double *r = all_rtt + (size_t)i * reps, *s = all_snd + (size_t)i * reps;
      print_samples(sizes[i], w, r, s, reps);
      if (pass == 1 && waited_above < 0) {
        if (waited(s, reps, W)) waited_above = sizes[i];
        else eager_below = sizes[i];
      }
    }
  }
  /* data sent again unchanged: the same round trips with w = 0, neither rank writing its buffer between its
   * sends, the sizes of at least 1 KiB. The library then reads data the caches hold (the receiver's CMA copy
   * over Open MPI's shared memory reads lines it read a round trip before), as in a halo exchange's second
   * send of the cells it just sent to another neighbour; what that costs beside data just written is
   * calibrate's [resend] factor. Each slice beside one of data just written (kept in all_snd), the two in
   * turn: the machine's speed drifts between phases of a run (15-30% between runs here), and the pair
   * sees the same speed. */
  for (int from = 0; from < reps; from += kSlice) {
    int n = reps - from < kSlice ? reps - from : kSlice;
    for (int i = 0; i < nsizes; i++) {
      if (sizes[i] < 1024) continue;
      MPI_Barrier(MPI_COMM_WORLD);
      round_trips(buf, rbuf, sizes[i], 0, n, all_snd + (size_t)i * reps + from, snd, rank, 1);
      MPI_Barrier(MPI_COMM_WORLD);
      round_trips(buf, rbuf, sizes[i], 0, n, all_rtt + (size_t)i * reps + from, rtt, rank, 0);
    }
  }
  for (int i = 0; rank == 0 && i < nsizes; i++) {
    if (sizes[i] < 1024) continue;
    printf("{\"resend\":true,\"k\":%d,\"w\":0,\"rtt_ns\":[", sizes[i]);
    for (int r = 0; r < reps; r++) printf("%s%.0f", r ? "," : "", all_rtt[(size_t)i * reps + r]);
    printf("],\"fresh_rtt_ns\":[");
    for (int r = 0; r < reps; r++) printf("%s%.0f", r ? "," : "", all_snd[(size_t)i * reps + r]);
    printf("]}\n");
  }
  fflush(stdout);
  free(all_rtt);
  free(all_snd);
  if (rank == 0 && progress) fprintf(stderr, "\n");
  /* the bisection: rank 0 decides each next size and sends it to every rank (0 ends it) */
  {
    int lo = eager_below, hi = waited_above, probes = 0;
    int next;
    for (;;) {
      next = rank == 0 && lo >= 0 && hi > lo + 1 ? lo + (hi - lo) / 2 : 0;
      MPI_Bcast(&next, 1, MPI_INT, 0, MPI_COMM_WORLD);
      if (next == 0) break;
      round_trips(buf, rbuf, next, W, probe_reps, rtt, snd, rank, 1);
      if (rank == 0) {
        probes++;
        if (waited(snd, probe_reps, W)) hi = next;
        else lo = next;
      }
    }
    eager_limit_found = lo;
    eager_limit_seen = hi >= 0;
    if (rank == 0) {
      if (hi < 0) printf("{\"bisection\":true,\"S\":%d,\"S_next\":null,\"probes\":0}\n", lo);
      else printf("{\"bisection\":true,\"S\":%d,\"S_next\":%d,\"probes\":%d}\n", lo, hi, probes);
      fflush(stdout);
    }
  }
  /* the eager buffer: how many k-byte eager sends a receiver 20 ms late lets through */
  {
    int S = 0;
    if (rank == 0) {
      S = eager_limit_found;
    }
    MPI_Bcast(&S, 1, MPI_INT, 0, MPI_COMM_WORLD);
    int ks[3] = {S < 64 ? S : 64, S / 2, S}, nk = 0;
    for (int i = 0; i < 3; i++) /* increasing, distinct, at least 1 byte */
      if (ks[i] > 0 && (nk == 0 || ks[i] > ks[nk - 1])) ks[nk++] = ks[i];
    const double delay = 20e6;
    const long budget = 64L << 20; /* bytes per flood at most */
    for (int i = 0; i < nk && rank < 2; i++) {
      int k = ks[i], n = budget / k < FLOOD_MAX ? (int)(budget / k) : FLOOD_MAX, through[3];
      for (int rep = 0; rep < 3; rep++) {
        MPI_Barrier(MPI_COMM_WORLD);
        through[rep] = n;
        if (rank == 0) {
          for (int j = 0; j < n; j++) {
            double t0 = now_ns();
            MPI_Send(buf, k, MPI_BYTE, 1, 4, MPI_COMM_WORLD);
            if (through[rep] == n && now_ns() - t0 > delay / 2) through[rep] = j;
          }
        } else {
          compute(delay);
          for (int j = 0; j < n; j++) MPI_Recv(buf, k, MPI_BYTE, 0, 4, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
      }
      if (rank == 0) {
        printf("{\"flood\":true,\"k\":%d,\"sent\":%d,\"delay_ns\":%.0f,\"through\":[%d,%d,%d]}\n", k, n, delay,
               through[0], through[1], through[2]);
        fflush(stdout);
      }
    }
    for (int i = 0; i < nk && rank >= 2; i++)
      for (int rep = 0; rep < 3; rep++) MPI_Barrier(MPI_COMM_WORLD);
  }
  /* late receives: an eager k-byte message (k = S/8, S/4, S/2, S, those of 1 byte or more, distinct) whose
   * receive is posted 200 us after its send, so that it came first; rank 1 times each MPI_Recv and sends the
   * times to rank 0, which prints them with its sends' times (a send that waited was no eager one). What
   * the receiver pays then is not the receive of a message it waited for: a library over TCP moves the
   * data only while the receiver is inside MPI, and one that buffered it copies it out. Rank 0 computes
   * after its send instead of entering the next barrier, whose message would reach rank 1 before its
   * receive and be read in it: over Open MPI's TCP that made a late 8 KiB receive 28 us instead of 6. And
   * 200 us, not longer: the first MPI call after computing costs more the longer the rank was away (an
   * MPI_Iprobe for nothing, no message waiting, Open MPI over TCP: 0.42 us right after another call, 0.54
   * after 200 us of computing, 1.7 us after 2 ms), which any call pays, not a late receive. Not run when no
   * size of the sweep waited (S is then the sweep's largest size, no limit of the library). */
  {
    int S = eager_limit_seen ? eager_limit_found : 0;
    MPI_Bcast(&S, 1, MPI_INT, 0, MPI_COMM_WORLD);
    int ks[4] = {S / 8, S / 4, S / 2, S}, nk = 0;
    for (int i = 0; i < 4; i++)
      if (ks[i] > 0 && (nk == 0 || ks[i] > ks[nk - 1])) ks[nk++] = ks[i];
    enum { kLateReps = 15 };
    const double late_by = 200e3;
    double late[kLateReps], sent[kLateReps];
    for (int i = 0; i < nk; i++) {
      for (int rep = 0; rep < kLateReps; rep++) {
        MPI_Barrier(MPI_COMM_WORLD);
        if (rank == 0) {
          mpa_write_sent(buf, rbuf, ks[i]);
          double t0 = now_ns();
          MPI_Send(buf, ks[i], MPI_BYTE, 1, 5, MPI_COMM_WORLD);
          sent[rep] = now_ns() - t0;
          /* in MPI now and then (a probe for nothing), so that an eager send the library has not put on
           * the wire whole by the time MPI_Send returns still goes while rank 1 computes */
          for (double end = now_ns() + 2 * late_by; now_ns() < end;) {
            int flag;
            compute(10e3);
            MPI_Iprobe(MPI_ANY_SOURCE, 11, MPI_COMM_WORLD, &flag, MPI_STATUS_IGNORE); /* a tag no phase sends */
          }
        } else if (rank == 1) {
          compute(late_by);
          double t0 = now_ns();
          MPI_Recv(buf, ks[i], MPI_BYTE, 0, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
          late[rep] = now_ns() - t0;
        }
      }
      if (rank == 1) MPI_Send(late, kLateReps, MPI_DOUBLE, 0, 5, MPI_COMM_WORLD);
      if (rank == 0) {
        MPI_Recv(late, kLateReps, MPI_DOUBLE, 1, 5, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        printf("{\"late_receive\":true,\"k\":%d,\"ns\":[", ks[i]);
        for (int rep = 0; rep < kLateReps; rep++) printf("%s%.0f", rep ? "," : "", late[rep]);
        printf("],\"send_ns\":[");
        for (int rep = 0; rep < kLateReps; rep++) printf("%s%.0f", rep ? "," : "", sent[rep]);
        printf("]}\n");
        fflush(stdout);
      }
    }
  }
  /* what a persistent request saves: 0-byte exchanges by MPI_Irecv + MPI_Isend + MPI_Waitall against
   * MPI_Startall + MPI_Waitall on requests made once, interleaved, the fastest of five batches each */
  if (rank < 2) {
    int peer = 1 - rank, n = reps * 20;
    double best[2] = {1e300, 1e300};
    MPI_Request req[2];
    MPI_Status status[2]; /* not MPI_STATUSES_IGNORE: MPICH's (a cast 1) trips gcc's -Wstringop-overflow */
    for (int batch = 0; batch < 5; batch++) {
      MPI_Barrier(MPI_COMM_WORLD);
      double t0 = now_ns();
      for (int i = 0; i < n; i++) {
        MPI_Irecv(buf, 0, MPI_BYTE, peer, 3, MPI_COMM_WORLD, &req[0]);
        MPI_Isend(buf, 0, MPI_BYTE, peer, 3, MPI_COMM_WORLD, &req[1]);
        MPI_Waitall(2, req, status);
      }
      double t1 = now_ns();
      MPI_Recv_init(buf, 0, MPI_BYTE, peer, 3, MPI_COMM_WORLD, &req[0]);
      MPI_Send_init(buf, 0, MPI_BYTE, peer, 3, MPI_COMM_WORLD, &req[1]);
      MPI_Barrier(MPI_COMM_WORLD);
      double t2 = now_ns();
      for (int i = 0; i < n; i++) {
        MPI_Startall(2, req);
        MPI_Waitall(2, req, status);
      }
      double t3 = now_ns();
      MPI_Request_free(&req[0]);
      MPI_Request_free(&req[1]);
      if ((t1 - t0) / n < best[0]) best[0] = (t1 - t0) / n;
      if ((t3 - t2) / n < best[1]) best[1] = (t3 - t2) / n;
    }
    if (rank == 0) {
      printf("{\"persistent\":true,\"exchange_ns\":%.1f,\"persistent_exchange_ns\":%.1f}\n", best[0], best[1]);
      fflush(stdout);
    }
  } else {
    for (int batch = 0; batch < 5; batch++) {
      MPI_Barrier(MPI_COMM_WORLD);
      MPI_Barrier(MPI_COMM_WORLD);
    }
  }
  post_costs(buf, reps * 20, rank);
  if (rank == 0) { /* every measurement made: mpiadvise calibrate stops a job that then hangs in MPI_Finalize */
    printf("{\"done\":true}\n");
    fflush(stdout);
  }
  free(sizes);
  free(buf);
  free(rbuf);
  free(rtt);
  free(snd);
  MPI_Finalize();
  return 0;
}

/* mpiadvise-calibrate-bench: the paper's round-trip benchmark (sections 4.1, 4.2), run by
 * `mpiadvise calibrate` under the user's launcher. Ranks 0 and 1 bounce a k-byte message with blocking
 * MPI_Send/MPI_Recv, with w = 0 and with w = W ns of computation on rank 1 before it receives.
 *   mpiadvise-calibrate-bench W_NS REPS SIZE [SIZE ...]
 * Prints JSON lines on stdout from rank 0: first the run's facts, then one line per (w, k) with the
 * median round trip and the median time of rank 0's MPI_Send. Progress goes to stderr. */
#define _GNU_SOURCE /* strcasestr */
#include <mpi.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

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

static int by_value(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n)
{
  qsort(v, (size_t)n, sizeof *v, by_value);
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
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
    if (ok) printf("%s\"%s\":%llu", first ? "" : ",", name, v), first = 0;
  }
  MPI_T_finalize();
  printf("}");
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
  if (argc < 4) {
    if (rank == 0) fprintf(stderr, "usage: mpiadvise-calibrate-bench W_NS REPS SIZE...\n");
    MPI_Abort(MPI_COMM_WORLD, 2);
  }
  double W = atof(argv[1]);
  int reps = atoi(argv[2]), nsizes = argc - 3;
  long max_k = 0;
  for (int i = 0; i < nsizes; i++) max_k = atol(argv[3 + i]) > max_k ? atol(argv[3 + i]) : max_k;
  char *buf = calloc((size_t)max_k + 1, 1);
  double *rtt = malloc(sizeof(double) * (size_t)reps), *snd = malloc(sizeof(double) * (size_t)reps);
  char host[256] = "", peer_host[256] = "";
  gethostname(host, sizeof host - 1);
  if (rank == 1) MPI_Send(host, sizeof host, MPI_CHAR, 0, 2, MPI_COMM_WORLD);
  if (rank == 0) {
    char lib[MPI_MAX_LIBRARY_VERSION_STRING] = "";
    int len;
    MPI_Recv(peer_host, sizeof peer_host, MPI_CHAR, 1, 2, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    MPI_Get_library_version(lib, &len);
    for (char *p = lib; *p; p++)
      if (*p == '"' || *p == '\\' || *p == '\n') *p = ' ';
    printf("{\"facts\":true,\"hostname\":\"%s\",\"hosts\":[\"%s\",\"%s\"],\"mpi_library\":\"%s\",\"ranks\":%d,", host,
           host, peer_host, lib, size);
    print_cvars();
    printf("}\n");
    fflush(stdout);
  }
  /* warm up the fast paths (Open MPI sets up some only after a number of messages) */
  for (int i = 0; i < 64; i++) {
    if (rank == 0) {
      MPI_Send(buf, (int)max_k, MPI_BYTE, 1, 0, MPI_COMM_WORLD);
      MPI_Recv(buf, (int)max_k, MPI_BYTE, 1, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    } else if (rank == 1) {
      MPI_Recv(buf, (int)max_k, MPI_BYTE, 0, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
      MPI_Send(buf, (int)max_k, MPI_BYTE, 0, 0, MPI_COMM_WORLD);
    }
  }
  for (int pass = 0; pass < 2; pass++) {
    double w = pass ? W : 0;
    for (int i = 0; i < nsizes; i++) {
      int k = atoi(argv[3 + i]);
      for (int r = 0; r < reps + 2; r++) {
        MPI_Barrier(MPI_COMM_WORLD);
        double t0 = now_ns(), t1 = 0;
        if (rank == 0) {
          MPI_Send(buf, k, MPI_BYTE, 1, 1, MPI_COMM_WORLD);
          t1 = now_ns();
          MPI_Recv(buf, k, MPI_BYTE, 1, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        } else if (rank == 1) {
          if (w > 0) compute(w);
          MPI_Recv(buf, k, MPI_BYTE, 0, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
          MPI_Send(buf, k, MPI_BYTE, 0, 1, MPI_COMM_WORLD);
        }
        if (r >= 2) { /* two more warm-up round trips per size */
          rtt[r - 2] = now_ns() - t0;
          snd[r - 2] = t1 - t0;
        }
      }
      if (rank == 0) {
        printf("{\"k\":%d,\"w\":%.0f,\"rtt_ns\":%.1f,\"send_ns\":%.1f}\n", k, w, median(rtt, reps), median(snd, reps));
        fflush(stdout);
        fprintf(stderr, "\rmpiadvise calibrate: w = %.0f us, %d of %d sizes", w / 1e3, i + 1, nsizes);
      }
    }
  }
  if (rank == 0) fprintf(stderr, "\n");
  /* what a persistent request saves: 0-byte exchanges by MPI_Irecv + MPI_Isend + MPI_Waitall against
   * MPI_Startall + MPI_Waitall on requests made once, interleaved, the fastest of five batches each */
  if (rank < 2) {
    int peer = 1 - rank, n = reps * 20;
    double best[2] = {1e300, 1e300};
    MPI_Request req[2];
    for (int batch = 0; batch < 5; batch++) {
      MPI_Barrier(MPI_COMM_WORLD);
      double t0 = now_ns();
      for (int i = 0; i < n; i++) {
        MPI_Irecv(buf, 0, MPI_BYTE, peer, 3, MPI_COMM_WORLD, &req[0]);
        MPI_Isend(buf, 0, MPI_BYTE, peer, 3, MPI_COMM_WORLD, &req[1]);
        MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
      }
      double t1 = now_ns();
      MPI_Recv_init(buf, 0, MPI_BYTE, peer, 3, MPI_COMM_WORLD, &req[0]);
      MPI_Send_init(buf, 0, MPI_BYTE, peer, 3, MPI_COMM_WORLD, &req[1]);
      MPI_Barrier(MPI_COMM_WORLD);
      double t2 = now_ns();
      for (int i = 0; i < n; i++) {
        MPI_Startall(2, req);
        MPI_Waitall(2, req, MPI_STATUSES_IGNORE);
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
  free(buf);
  free(rtt);
  free(snd);
  MPI_Finalize();
  return 0;
}

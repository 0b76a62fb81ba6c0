/* The machine's message speed inside the traced job. Messages on these machines go 15-30% faster or
 * slower from one job to the next and over minutes, and a parameter set prices them at the speed its
 * calibration saw: a job whose time is mostly messages was then predicted 16-28% off with nothing wrong in
 * the model. So rank 0 and a partner (rank 1, or the first rank on another host: core.c) time a few round
 * trips of the sizes below on the tracer's own communicator,
 * at MPI_Init and at MPI_Finalize, the way calibrate's benchmark times them (cli/calibrate_bench.c:
 * each rank writes what it sends just before sending it, as sent_data.h says, the partner's writing is
 * timed and taken out, the partner receives at once). Rank 0 records them in its header and its trailer ("message_probe"), and the report
 * replays the run at the speed they show against the set's model (analyzer/model_fit.cpp, probe_speed).
 * The sizes are taken in turn, round after round, so that a moment of the machine's touches each of them
 * alike, three round trips of a size in a row of which the first is not timed: a round trip just after one
 * of another size is no steady state (timed once per size and round, MPICH over UCX's shared memory gave
 * 8 KiB 1.3-1.5 times the calibration's time and 3-4 times at MPI_Init, and the run was predicted 18-30%
 * slow; with the first left out, 0.96-1.07 and within 2.4%). About 3.5 ms over Open MPI's shared memory
 * and 7 ms over its loopback TCP each time (the round trips' sum, two jobs each); MPIADVISE_PROBE=0 leaves
 * it out. */
#include <string.h>
#include <sys/mman.h>

#include "clock.h"
#include "sent_data.h"
#include "tracer.h"

enum { kSizes = 5, kWarmup = 4, kRounds = 8, kRun = 3, kTimed = kRounds * (kRun - 1), kTag = 2 };
static const int kBytes[kSizes] = {0, 1024, 8192, 65536, 262144};

void mpa_probe_messages(MPI_Comm comm, int rank, int size, int partner, mpa_bytes *json)
{
  if (size < 2 || partner < 1 || partner >= size || (rank != 0 && rank != partner)) return;
  const int peer = rank == 0 ? partner : 0;
  /* mapped, not malloc'd: glibc's free of a block this large raises its mmap threshold for the rest of
   * the program, which would change how the application's own allocations are served */
  const size_t len = 2 * (size_t)kBytes[kSizes - 1];
  char *sbuf = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  int ok = sbuf != MAP_FAILED, peer_ok = 0;
  /* both take part or neither */
  PMPI_Sendrecv(&ok, 1, MPI_INT, peer, kTag, &peer_ok, 1, MPI_INT, peer, kTag, comm, MPI_STATUS_IGNORE);
  if (!ok || !peer_ok) {
    if (ok) munmap(sbuf, len);
    return;
  }
  char *rbuf = sbuf + kBytes[kSizes - 1];
  memset(sbuf, 1, len); /* real pages, not the kernel's zero page */
  double rtt[kSizes][kTimed], wrote[kSizes][kTimed];
  for (int r = 0; r < kWarmup + kRounds; r++) {
    for (int i = 0; i < kSizes; i++) {
      const int k = kBytes[i];
      for (int j = 0; j < kRun; j++) {
        /* the first of a run follows another size: not timed (below) */
        const int timed = r >= kWarmup && j > 0, at = (r - kWarmup) * (kRun - 1) + j - 1;
        if (rank == 0) {
          mpa_write_sent(sbuf, rbuf, k);
          uint64_t t0 = mpa_monotonic_ns();
          PMPI_Send(sbuf, k, MPI_BYTE, peer, kTag, comm);
          PMPI_Recv(rbuf, k, MPI_BYTE, peer, kTag, comm, MPI_STATUS_IGNORE);
          if (timed) rtt[i][at] = (double)(mpa_monotonic_ns() - t0);
        } else {
          PMPI_Recv(rbuf, k, MPI_BYTE, peer, kTag, comm, MPI_STATUS_IGNORE);
          uint64_t t0 = mpa_monotonic_ns();
          mpa_write_sent(sbuf, rbuf, k);
          if (timed) wrote[i][at] = (double)(mpa_monotonic_ns() - t0);
          PMPI_Send(sbuf, k, MPI_BYTE, peer, kTag, comm);
        }
      }
    }
  }
  munmap(sbuf, len);
  if (rank != 0) {
    PMPI_Send(wrote, kSizes * kTimed, MPI_DOUBLE, 0, kTag, comm);
    return;
  }
  PMPI_Recv(wrote, kSizes * kTimed, MPI_DOUBLE, peer, kTag, comm, MPI_STATUS_IGNORE);
  mpa_json_fmt(json, "{\"ranks\":[0,%d],\"bytes\":[", peer);
  for (int i = 0; i < kSizes; i++) mpa_json_fmt(json, "%s%d", i ? "," : "", kBytes[i]);
  mpa_json_raw(json, "],\"round_trip_ns\":[");
  for (int i = 0; i < kSizes; i++) {
    mpa_json_raw(json, i ? ",[" : "[");
    for (int r = 0; r < kTimed; r++) {
      const double t = rtt[i][r] - wrote[i][r];
      mpa_json_fmt(json, "%s%lld", r ? "," : "", (long long)(t > 0 ? t : 0));
    }
    mpa_json_raw(json, "]");
  }
  /* the partner's copies: how fast a rank of this run rewrites what it sends (analyzer/message_probe.hpp,
   * where a resend of a buffer with less computation before it than such a copy takes is data the receiver
   * has just read, not data just written) */
  mpa_json_raw(json, "],\"copy_ns\":[");
  for (int i = 0; i < kSizes; i++) {
    mpa_json_raw(json, i ? ",[" : "[");
    for (int r = 0; r < kTimed; r++) mpa_json_fmt(json, "%s%lld", r ? "," : "", (long long)wrote[i][r]);
    mpa_json_raw(json, "]");
  }
  mpa_json_raw(json, "]}");
}

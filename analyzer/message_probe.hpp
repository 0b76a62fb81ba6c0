// What the tracer timed inside the run between rank 0 and a partner (libtrace/probe.c): round trips, and
// the partner's copying of what it sends before each send.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "log_reader.hpp"

namespace mpiadvise {

// Round trips between rank 0 and a partner that the tracer timed inside the run, at MPI_Init and at
// MPI_Finalize (rank 0's header and trailer): each size's rounds, in nanoseconds, and the partner's
// copies of the bytes it sent back (a memcpy from the buffer it had just received into, the way a code
// packs what it sends).
struct MessageProbe {
  std::vector<uint64_t> bytes;
  std::vector<std::vector<double>> init, finalize;  // round trips [size][round]; empty where the log has none
  std::vector<std::vector<double>> copies;          // both probes' copies [size][round]; empty in older logs
  int partner = 1;  // the rank that timed them with rank 0: 1, or the first on another host than rank 0's
};
// None when the job has no rank 0 log, or it holds no probe (MPIADVISE_PROBE=0, one rank, an older log).
std::optional<MessageProbe> message_probe(const JobLog& job);

// The fastest a rank of the run may have written data it sends again, in bytes a nanosecond: twice the
// fastest median rate of the probe's copies (a copy of the same size at less than half its median time
// is rare; a halo's resend after only the tracer's own time between calls takes far less), or
// kRewriteBytesPerNs (trace.hpp) where the log has no copies: build_trace's Trace::rewrite_bytes_per_ns.
double rewrite_bytes_per_ns(const std::optional<MessageProbe>& probe);

}  // namespace mpiadvise

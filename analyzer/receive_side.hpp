// The receive side of a run, as the AP1000 message-level simulator's authors measured it (Horie et al.,
// the third source paper: receive-side overlap gained far more than send-side overlap): how many receives
// were posted before their message arrived, how deep each rank's queue of unexpected messages grew
// (arrived, not yet received), and how many non-blocking sends each rank kept outstanding.
//
// From the measured times: a receive and a send are posted when their calls were entered; a message
// arrives when the model says (an eager one after the send overhead and the transfer, a rendezvous one's
// request after o' + L); a non-blocking send is outstanding from its post until the call that completed it
// returned.
#pragma once

#include <cstdint>
#include <vector>

#include "loggps.hpp"
#include "op_stream.hpp"
#include "trace.hpp"

namespace mpiadvise {

struct ReceiveSide {
  struct Rank {
    int rank = 0;
    uint64_t receives = 0;            // matched messages this rank received
    uint64_t posted_early = 0;        // of which the receive was posted before the message arrived
    uint64_t unexpected_max = 0;      // most messages arrived and not yet received, at any instant
    double unexpected_mean = 0;       // their mean over the rank's run (MPI_Init's exit to MPI_Finalize's entry)
    uint64_t unexpected_max_bytes = 0;  // most eager bytes waiting so (what the library buffered)
    uint64_t outstanding_sends_max = 0;  // most non-blocking sends posted and not yet completed
    // the queue over time: the most unexpected messages at any instant of each of the run's
    // kQueueSteps equal steps, and when the most of all was first reached (ns from the run's start)
    std::vector<uint32_t> unexpected_by_step;
    double unexpected_peak_ns = 0;
  };
  static constexpr size_t kQueueSteps = 40;
  double start_ns = 0, step_ns = 0;  // the run's start (rank 0's clock) and the length of a step
  std::vector<Rank> ranks;
  uint64_t receives = 0, posted_early = 0;
  double posted_early_share() const { return receives ? static_cast<double>(posted_early) / static_cast<double>(receives) : 0; }
};

ReceiveSide receive_side(const Trace& trace, const LogGPS& model);

// The same from the ranks' op streams, walked together by entry (walk_by_entry): a message is held from
// the first of its posts met until it has given what it gives (its arrival against its receive's post;
// a non-blocking send's completion), and each rank's changes of its queues are folded in time order as
// soon as no later message can give one before them, where the ranks' entries never go down
// (OpStream::entries_sorted; else at the end). held: the most messages and changes held at once.
struct ReceiveSideHeld {
  size_t messages = 0, changes = 0;
};
ReceiveSide receive_side(const std::vector<OpStream>& streams, const LogGPS& model, ReceiveSideHeld* held = nullptr);

}  // namespace mpiadvise

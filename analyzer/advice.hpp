// Toward `mpiadvise report` (issue 4): hot spots from the measured wait states, and the eager-limit
// advice from a what-if sweep (never a back-of-envelope guess). The report command is not built yet.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "replay.hpp"
#include "run_facts.hpp"
#include "waits.hpp"

namespace mpiadvise {

struct HotSpot {
  int rank = 0;
  uint32_t callsite = 0;
  uint32_t call = 0;
  WaitCause cause = WaitCause::LateSender;  // the cause of most of its waiting
  double waited_ns = 0;                     // all causes
  uint64_t count = 0;
  std::vector<int> peers;                   // ranks of the messages it waited on
  std::map<int, uint64_t> size_log2;        // message sizes: floor(log2(bytes)) -> count
};

// Call sites ranked by time lost waiting, at most top of them.
std::vector<HotSpot> hot_spots(const Trace& trace, const WaitStates& waits, size_t top);

// Raise the eager limit: the smallest setting (a power of two) whose replay removes most (90%) of the
// predicted rendezvous send-wait, with its predicted run time and the memory it may cost.
struct RaiseEagerLimit {
  std::string setting;         // e.g. "btl_tcp_eager_limit"
  uint64_t value = 0;          // the value to set
  uint64_t S = 0;              // the effective S it gives
  std::string mca, env;        // "--mca btl_tcp_eager_limit 131072", "OMPI_MCA_btl_tcp_eager_limit=131072"
  double baseline_ns = 0, predicted_ns = 0;
  double send_wait_before_ns = 0, send_wait_after_ns = 0;
  uint64_t memory_per_rank_bytes = 0;  // eager buffering: the limit for each rank that sends to one
  int senders_per_rank = 0;
};

std::optional<RaiseEagerLimit> advise_eager_limit(const Trace& trace, const RunFacts& facts, const ReplayOptions& base);

}  // namespace mpiadvise

// Programs that depend on buffering: a standard-mode send that completed only because the MPI library
// buffered it (sent it eagerly) is a program that hangs, or serialises, on another MPI library, another
// transport or a larger message, where that send waits for its receive. MUST finds them at run time by
// making every send synchronous; mpiadvise replays the trace with S = 0, every send of a byte or more
// waiting for its receive, and reports where that replay cannot go on: the ranks each wait for another
// in a cycle the buffering hid.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "replay.hpp"

namespace mpiadvise {

struct BufferingDependence {
  // A send that waits for its receive in a cycle of waiting ranks.
  struct Send {
    int rank = 0, peer = 0;
    uint32_t op = 0, call = 0, callsite = 0;
    uint64_t bytes = 0;
  };
  // One cycle: its sends, and every rank waiting in it (the op each is in).
  struct Deadlock {
    std::vector<Send> sends;
    std::vector<ReplayResult::Stall::Parked> ranks;
    // The program hangs where the eager limit is below this many bytes (the smallest send of the cycle:
    // a larger limit sends it eagerly and the cycle opens), checked by a replay with S one byte below;
    // nullopt where that replay did not hang (the cycle needs more than its smallest send).
    std::optional<uint64_t> hangs_below;
    uint64_t times = 1;  // stalls at the same sends (a loop's iterations): the first one is kept
  };
  std::vector<Deadlock> deadlocks;
  // False where the replay at the run's own S already could not go on (a rank's log missing): the S = 0
  // replay then says nothing about buffering.
  bool checked = false;
};

// baseline: the replay with options (the run's own parameters).
BufferingDependence buffering_dependence(const Trace& trace, const ReplayOptions& options, const ReplayResult& baseline);

}  // namespace mpiadvise

// The analysis's independent replays (what-ifs of one run: the eager-limit sweep, the advice's candidates,
// the optimisation targets, the gate's noise replays) on the machine's cores, and the reading of the
// ranks' logs (build_trace). Each replay reads the trace and writes only its own result: the results, and
// the report, are the same whatever the thread count.
#pragma once

#include <cstddef>
#include <functional>
#include <vector>

#include "replay.hpp"

namespace mpiadvise {

// Threads the analysis may use: set_analysis_threads(n) (mpiadvise report --threads), else the CPUs this
// process may run on. 1: every replay on the calling thread.
unsigned analysis_threads();
void set_analysis_threads(unsigned n);  // 0: the CPUs again

// Calls fn(0) .. fn(n - 1), on up to analysis_threads() threads (the calling thread one of them), each
// index once; returns when all have. The first exception thrown is rethrown here, after the others end.
void parallel_for(size_t n, const std::function<void(size_t)>& fn);

// One replay of the trace under each of the options, in the options' order.
std::vector<ReplayResult> replay_all(const Trace& trace, const std::vector<ReplayOptions>& options);
// The same, each result handed to take(i, result) as soon as its replay ends, on the thread that ran it
// (so take must write only what is i's), and let go once take returns: where the caller keeps a few
// figures of each what-if, one result a thread is held at once, not one a what-if (their sites and
// ranks: about 3 MiB a result of 4096 ranks).
void replay_each(const Trace& trace, const std::vector<ReplayOptions>& options,
                 const std::function<void(size_t, ReplayResult&)>& take);

}  // namespace mpiadvise

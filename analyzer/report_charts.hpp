// The figures behind the report's pictures (mpiadvise report --format html draws them; --format json
// carries them as "charts"): the predicted run time over a sweep of S, the messages by size and
// protocol, a window of the run as measured and as predicted, and the source text of the hot spots'
// lines. Computed here, once, so that a renderer only presents them (see mpiadvise-report(1)).
#pragma once

#include <cstdint>
#include <optional>

#include <nlohmann/json.hpp>

#include "analysis.hpp"
#include "report_types.hpp"
#include "replay.hpp"

namespace mpiadvise {

// A timeline window holds at most this many calls of at most this many ranks: a 1024-rank run draws in
// a browser as fast as a 2-rank one.
inline constexpr size_t kTimelineCalls = 3000;
inline constexpr int kTimelineRanks = 32;
// The S sweep: powers of two from 1 KiB up to the largest message (at least 64 KiB), at most this many,
// with the parameter set's S and the advised S added.
inline constexpr int kSweepPoints = 16;

// base: the replay options of the report's baseline; advised_S and considered_S: the S of the eager-limit
// advice and of the one considered and not advised, if any (points of the sweep). Replays the trace once
// per point of the sweep and once for the predicted timeline.
report::Charts report_charts(const Analysis& a, const ReplayOptions& base, std::optional<uint64_t> advised_S,
                             std::optional<uint64_t> considered_S);

// The text of a source line, where the file is readable: the path as the debug information names it,
// else under the current directory or a directory above the module (an executable built in its source
// tree). Empty when not found.
std::string source_line_text(const std::string& file, int line, const std::string& module);

}  // namespace mpiadvise

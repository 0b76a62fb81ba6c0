// A traced run as a timeline for the viewers people already use: the Chrome trace-event JSON that
// Perfetto (ui.perfetto.dev) and chrome://tracing open, and OTF2, which Vampir and the other Score-P
// tools read. One process per rank, its MPI calls as slices with their arguments, every matched message
// as an arrow from the call that sent it to the call that completed its receive; with a replay's
// predicted timeline (ReplayOptions::record_spans) as a second set of processes, one beside each rank.
#pragma once

#include <cstdint>
#include <filesystem>
#include <iosfwd>
#include <string>

#include "analysis.hpp"
#include "replay.hpp"

namespace mpiadvise {

struct ExportCounts {
  uint64_t calls = 0;            // MPI calls of the measured timeline (every event of the logs)
  uint64_t messages = 0;         // matched messages drawn on it
  uint64_t collectives = 0;      // collective calls written with their collective records (OTF2)
  uint64_t predicted_calls = 0;  // calls of the predicted timeline (those of the replay window)
};

// Chrome trace-event JSON ("JSON Object Format"): slices (ph X), flow arrows (ph s/f), process and thread
// names (ph M); times in microseconds from the run's first call. predicted: null for the measured
// timeline only.
ExportCounts write_trace_events(const Analysis& a, const ReplayResult* predicted, std::ostream& out);

// An OTF2 archive: DIR/traces.otf2, DIR/traces.def and DIR/traces/. A location per rank and thread
// (Enter/Leave per MPI call, MpiSend/MpiRecv, MpiIsend/MpiIsendComplete, MpiIrecvRequest/MpiIrecv,
// MpiCollectiveBegin/End and the non-blocking collective records), every communicator of the trace; the
// predicted timeline as a second location group per rank on communicators of its own. Throws
// std::runtime_error naming what OTF2 refused.
ExportCounts write_otf2(const Analysis& a, const ReplayResult* predicted, const std::filesystem::path& dir);

}  // namespace mpiadvise

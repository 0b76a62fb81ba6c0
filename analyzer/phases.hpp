// The phases of a run, for the efficiency factors of each: those the program marked with MPI_Pcontrol,
// or else the iterations of its main loop, found in the trace.
//
// A phase opens at an op of each rank and takes in the computation before it: it starts where the rank
// left the op before (the window's start for the first op), so that in a loop "compute; MPI_Recv;
// MPI_Send" the iteration that MPI_Recv opens holds the computation that made the receive late. A
// program's MPI_Pcontrol call ends a phase; the next one opens at the op after it. Where a rank's loop
// computes after the call that opens its iteration ("MPI_Recv; compute; MPI_Send"), its phases open at
// the call's entry instead (at_entry): the computation before the call is the previous iteration's. The
// trace does not say where the loop's body begins; the computations around it do: the computation
// before the loop's first call and after its last piece are compared with those before its calls
// inside it, and the one that looks like the loop's own belongs to it.
//
// Iterations: on each rank, the sequence of its MPI calls (call site and call) is cut at every call of
// one site; the cut is an iteration when every piece between two such calls is the same sequence, there
// are at least kMinIterations pieces, and the last call is followed by a whole piece too. Of the sites
// that cut a rank so, the one with the most pieces is its innermost loop (a site of an outer loop cuts
// into pieces that hold several inner ones; a site of an inner loop cuts the outer loop's pieces unevenly);
// among equal counts the site called first opens the iteration. Ranks may open their iterations at
// different sites (the first rank of a pipeline only receives), but must agree on the count: the
// largest count every rank can cut its calls into is the run's.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trace.hpp"

namespace mpiadvise {

class OpStream;

inline constexpr size_t kMinIterations = 3;

struct PhaseMarks {
  enum class Source { None, Pcontrol, Iterations };
  Source source = Source::None;
  // by rank: the ops at which phase 1, 2, ... open (phase 0 opens at the replay window's start); an
  // index at the window's end opens an empty phase there. Iterations: phase 0 is what comes before the
  // loop, phases 1 to `iterations` its iterations, the last phase what comes after it.
  std::vector<std::vector<uint32_t>> opens;
  std::vector<bool> at_entry;  // by rank: its phases open at the op's entry, not where it left the op before
  size_t iterations = 0;
  // where phase opening k (1-based) of rank r starts, on the measured clock
  uint64_t opening_ns(const RankTrace& rank, const ReplayWindow& w, size_t r, size_t k) const;
  // the same, op i's entry and exit asked of enter(i) and exit(i)
  template <typename Enter, typename Exit>
  uint64_t opening_ns(const ReplayWindow& w, size_t r, size_t k, Enter enter, Exit exit) const {
    const uint32_t i = opens[r][k - 1];
    if (r < at_entry.size() && at_entry[r]) return i < w.end ? enter(i) : w.stop_ns;
    return i == w.first ? w.start_ns : exit(i - 1);
  }
  // the op of rank 0 that names each opening (its MPI_Pcontrol, or its iteration's first call; an index
  // past its ops: none)
  std::vector<uint32_t> rank0_names;
  std::string note;  // why there are no phases though the program called MPI_Pcontrol, or ""
};

PhaseMarks phase_marks(const Trace& trace);
// The same marks from the ranks' op streams (OpStream::encode_all, packed or not): one rank's ops held at
// a time, with the search's tables of them, where the trace holds every rank's.
PhaseMarks phase_marks(const std::vector<OpStream>& streams);

}  // namespace mpiadvise

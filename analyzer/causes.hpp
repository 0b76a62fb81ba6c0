// Why ranks wait, and what bounds the run, from the recorded times.
//
// Root causes of waiting follow Scalasca's delay analysis (Böhme, Geimer, Wolf et al., "Identifying
// the root causes of wait states in large-scale parallel applications", ICPP 2010): a wait is caused by
// the delay of the rank it waits for, the excess of time that rank spent since the two last
// synchronised over what the waiting rank spent in the same code. The wait's cost goes to that excess:
// to the late rank's computations where it computed longer (their direct delay cost), and to its own
// waits where it waited itself, which pass the cost on to their own causes (the indirect, or
// propagating, delay cost). Every nanosecond of waiting thus ends at a computation, "directly or
// through others".
//
// The critical path is the chain of computations and MPI calls that bounds the run: from the rank that
// reached MPI_Finalize last, backwards, through each wait to the rank it waited for. Only what lies on
// it can shorten the run; the report weighs each computation on it (and the largest off it) by a
// what-if replay with that computation made faster.
#pragma once

#include <cstdint>
#include <vector>

#include "trace.hpp"
#include "waits.hpp"

namespace mpiadvise {

// A computation of a rank: the time outside MPI before the call at a call site (the call that ends it),
// every instance added up.
struct ComputationKey {
  int rank = 0;
  uint32_t callsite = 0;  // of the call that ends the computation (MPI_Finalize's for the last)
  uint32_t call = 0;
  bool operator<(const ComputationKey& o) const {
    return rank != o.rank ? rank < o.rank : callsite < o.callsite;
  }
};

struct RootCause {
  ComputationKey where;
  double direct_ns = 0;    // waits this computation caused itself
  double indirect_ns = 0;  // waits it caused through the waits of the ranks it made late
  double total() const { return direct_ns + indirect_ns; }
};

struct DelayCosts {
  double waiting_ns = 0;       // every wait of the run
  double unattributed_ns = 0;  // of it, waits whose late rank neither computed nor waited since the
                               // ranks last synchronised (clock error, a rank entering late from MPI)
  std::vector<RootCause> causes;  // by total, largest first
};

DelayCosts delay_costs(const Trace& trace, const std::vector<Wait>& waits);
// The same from the ranks' op streams (OpStream::encode_all, packed or not), read out of order a frame at
// a time (OpFrames: 2 frames a rank kept decoded); the trace gives its call sites only.
// What the reading cost, where asked: the frames decoded, of how many, and the most the kept ones held.
struct FramesRead {
  uint64_t decoded = 0, frames = 0;
  size_t held_bytes = 0;
};
DelayCosts delay_costs(const Trace& trace, const std::vector<OpStream>& streams, const std::vector<Wait>& waits,
                       FramesRead* read = nullptr);

struct CriticalPath {
  struct Part {
    ComputationKey where;
    bool computation = true;  // else the MPI call at where.callsite, as far as it was not waiting
    double ns = 0;
    uint64_t times = 0;
  };
  double length_ns = 0, computation_ns = 0, mpi_ns = 0;
  int last_rank = -1;      // the rank the run waited for at its end
  uint64_t rank_changes = 0;  // times the path passes from one rank to another (a wait)
  std::vector<Part> parts;    // by ns, largest first
};

CriticalPath critical_path(const Trace& trace, const std::vector<Wait>& waits);
CriticalPath critical_path(const std::vector<OpStream>& streams, const std::vector<Wait>& waits,
                           FramesRead* read = nullptr);

// Every computation of the run, by rank and call site.
std::vector<CriticalPath::Part> computations(const Trace& trace);
// The same from the ranks' op streams (OpStream::encode_all, packed or not), one walk of each.
std::vector<CriticalPath::Part> computations(const std::vector<OpStream>& streams);

}  // namespace mpiadvise

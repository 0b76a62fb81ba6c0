// Halo exchanges, recognised in the trace (the first source paper's stencil codes): in each iteration a
// rank exchanges messages with a fixed set of neighbours, sending to and receiving from each, in one
// burst of point-to-point calls (no call site posting twice for one peer). The advice on one of its calls then speaks of
// the exchange, not of N separate sends.
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "op_stream.hpp"
#include "replay.hpp"
#include "trace.hpp"

namespace mpiadvise {

struct HaloExchange {
  std::vector<int> ranks;                 // the ranks taking part
  int neighbours_min = 0, neighbours_max = 0;  // each rank's neighbours
  uint64_t bytes_max = 0;                 // the largest message of the exchange
  uint64_t exchanges = 0;                 // iterations (the fewest any of its ranks made)
  // its call sites, each with a (rank, callsite id) there to name it by
  std::map<SiteKey, std::pair<int, uint32_t>> send_sites, recv_sites;
  bool at(const SiteKey& k) const { return send_sites.count(k) || recv_sites.count(k); }
};

// A burst pattern repeated at least this many times on a rank is an iteration's exchange.
inline constexpr uint64_t kHaloMinRepeats = 3;

std::vector<HaloExchange> find_halos(const Trace& trace);
// The same from the ranks' op streams (OpStream::encode_all of the trace), each rank's read alone: every
// post's fields are in its own op (a matched receive's too, StreamOp::received); the trace is asked its call
// sites alone. The same exchanges, field for field, where every message's posts are its sender's send and
// its receiver's receive, as build_trace makes them.
std::vector<HaloExchange> find_halos(const Trace& trace, const std::vector<OpStream>& streams);

// A change to the whole exchange at once, replayed: what the advice at one of its calls cannot show.
struct HaloWhatIf {
  enum class Change { Overlap, Split, OverlapAndSplit };
  Change change = Change::Overlap;
  bool nonblocking = false, prepost = false, split = false;  // the transformations at its sites
  double predicted_ns = 0;
};
const char* halo_change_name(HaloWhatIf::Change c);  // "overlap", "split", "overlap_and_split"

// The exchange written as non-blocking calls completed together (every blocking send at its sites made
// an MPI_Isend completed at the next MPI call, every blocking receive posted early into a second
// buffer), its messages above S split into chunks of at most S (when it has any), and both.
std::vector<HaloWhatIf> halo_whatifs(const Trace& trace, const HaloExchange& halo, const ReplayOptions& base);

}  // namespace mpiadvise

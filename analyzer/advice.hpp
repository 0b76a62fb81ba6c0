// What `mpiadvise report` finds and advises: hot spots from the measured wait states, and advice whose
// every figure comes from a what-if replay of the trace (never a back-of-envelope guess).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "message_sides.hpp"
#include "replay.hpp"
#include "run_facts.hpp"
#include "waits.hpp"

namespace mpiadvise {

// A call site (the same module and offset on every rank that has it) ranked by the time lost there.
// A rank is named at a hot spot when it did at least this share of the waiting there.
inline constexpr double kRankShareOfSite = 0.02;

struct HotSpot {
  SiteKey key;
  int rank = 0;             // the rank that lost most there, and its id for the site
  uint32_t callsite = 0;
  std::vector<int> ranks;   // the ranks that waited there (each at least kRankShareOfSite of the site's waiting)
  std::vector<std::pair<int, uint32_t>> members;  // (rank, callsite id) of each
  uint32_t call = 0;
  WaitCause cause = WaitCause::LateSender;  // the cause of most of its waiting
  std::map<WaitCause, double> waited_by_cause;
  double waited_ns = 0;                     // all causes
  double caused_ns = 0;                     // what the site made other ranks wait
  uint64_t count = 0;                       // waits
  std::vector<int> peers;                   // ranks at the other end of the messages completed there
  // sizes of the messages waited on for the main cause: floor(log2(bytes)) -> count (-1: 0 bytes)
  std::map<int, uint64_t> size_log2;
};

// Call sites ranked by time lost waiting, at most top of them.
std::vector<HotSpot> hot_spots(const Trace& trace, const WaitStates& waits, size_t top);
// The same, the peers at each site read from the ranks' op streams (OpStream::encode_all, packed or not),
// one rank's at a time; the trace gives its call sites alone.
std::vector<HotSpot> hot_spots(const Trace& trace, const std::vector<OpStream>& streams, const WaitStates& waits,
                               size_t top);

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
  uint64_t messages_made_eager = 0;
  std::vector<std::pair<int, uint32_t>> send_sites;  // (rank, callsite) of the sends it makes eager
  std::string caution;  // a measured hazard of the setting with this library and transport, or ""
};

// The messages are read from base's op streams where its replays walk them (AdviceInput).
std::optional<RaiseEagerLimit> advise_eager_limit(const Trace& trace, const RunFacts& facts, const ReplayOptions& base);
// The same from the replay of the run as it was (base's), handing back the replay of the setting advised:
// the sweep has run it, and the report's advice takes it from there instead of running it again (its time
// and its ranks' figures: its sites are let go).
struct EagerLimitChoice {
  RaiseEagerLimit advice;
  ReplayResult replayed;
};
std::optional<EagerLimitChoice> choose_eager_limit(const Trace& trace, const RunFacts& facts, const ReplayOptions& base,
                                                   const ReplayResult& baseline);

enum class AdviceKind { RaiseEagerLimit, SplitMessages, PrepostReceives, NonblockingSend, PersistentRequests };
const char* advice_kind_name(AdviceKind k);  // "raise_eager_limit", ...

// What each kind of change says beyond where it is made: the part of the advice that is its own.
struct SplitMessages {
  uint64_t chunk_bytes = 0;      // at most S: each chunk eager
  uint64_t extra_messages = 0;   // chunks beyond one per message
};
struct PrepostReceives {
  uint64_t buffer_bytes = 0;     // the second buffer, per rank
};
struct NonblockingSend {};
struct PersistentRequests {
  uint64_t identical_calls = 0;  // calls with the same arguments
};
// in the order of AdviceKind
using AdviceChange = std::variant<RaiseEagerLimit, SplitMessages, PrepostReceives, NonblockingSend, PersistentRequests>;

struct Advice {
  AdviceChange change;
  SiteKey site;                                   // where to change the program (not for the eager limit)
  std::vector<std::pair<int, uint32_t>> members;  // (rank, callsite id) at that site
  uint32_t call = 0;
  uint64_t messages = 0;                          // messages (or receives) the change touches
  double baseline_ns = 0, predicted_ns = 0;       // the measured run replayed, and with the change
  double model_error = 0;                         // |predicted - measured| / measured of the run as it was
  Breakdown before, after;                        // summed over ranks
  bool worthwhile = false;                        // saving above the model's error and 1% of the run
  AdviceKind kind() const { return static_cast<AdviceKind>(change.index()); }
  double saving_ns() const { return baseline_ns - predicted_ns; }
  double saving() const { return baseline_ns > 0 ? saving_ns() / baseline_ns : 0; }
};

// What an advisor looks at: the trace, what the log says of the job, the measured wait states, and the
// replay of the run as it was (with its options). Where base's replays walk the ranks' op streams
// (ReplayOptions::streams, Simulate mode), the advisors read the ops and the messages from them too, each
// rank's alone, and ask the trace its call sites alone: the same advice (the trace's ops, links and
// messages may be let go).
struct AdviceInput {
  const Trace& trace;
  const RunFacts& facts;
  const WaitStates& waits;
  const ReplayOptions& base;
  const ReplayResult& baseline;
  size_t max_sites;  // candidate sites weighed per kind
};

// A change proposed: the advice without its figures, and the what-if that makes it in a replay.
struct Proposal {
  Advice advice;
  ReplayOptions whatif;
  std::optional<ReplayResult> replayed;  // the what-if's replay, where the advisor ran it already
};

// One kind of advice: which changes to weigh on a trace, each a transformation of the replay, and how
// the change is said. The registry holds one per AdviceKind, in its order.
struct Advisor {
  AdviceKind kind;
  std::vector<Proposal> (*propose)(const AdviceInput& in);
  // the advice in one line; where: the site as a reader names it (empty for the eager limit)
  std::string (*title)(const Advice& a, const std::string& where);
};
const std::vector<Advisor>& advisors();
const Advisor& advisor(AdviceKind kind);

// Call sites that repeat one point-to-point call with the same peer, tag, size and communicator: at
// least 10 times and 90% of the site's calls (candidates for persistent requests).
struct RepeatedCalls {
  SiteKey site;
  std::vector<std::pair<int, uint32_t>> members;
  uint32_t call = 0;
  uint64_t calls = 0, identical = 0;
};
std::vector<RepeatedCalls> repeated_calls(const Trace& trace);
// the same, the messages' sides read from `sides` (the trace's, or its op streams'), the call sites from the trace
std::vector<RepeatedCalls> repeated_calls(const Trace& trace, const MessageSides& sides);

// Every change the advisors propose, each replayed on the trace, best (lowest predicted run time) first;
// worthwhile only when its predicted saving exceeds the model's error on the measured run and 1% of the
// run. Candidate sites: those of the hot spots (where ranks waited or made others wait), every send site
// above S, and the sites that repeat one point-to-point call with the same arguments (persistent
// requests, when the parameter set says what they save).
std::vector<Advice> advise(const AdviceInput& in);

}  // namespace mpiadvise

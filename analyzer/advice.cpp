#include "advice.hpp"

#include "op_stream.hpp"
#include "parallel.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>
#include <tuple>
#include <unordered_map>
#include <utility>

#include <fmt/format.h>

namespace mpiadvise {

namespace {

// The messages of the run at their posts: the ranks' op streams' where the replays walk them
// (ReplayOptions::streams), else the trace's.
MessageSides sides_of(const Trace& t, const ReplayOptions& base) {
  return base.streams ? MessageSides(*base.streams) : MessageSides(t);
}

// f(rank, op) for every op of every rank in order: the op streams' StreamOp where the replays walk them,
// else the trace's Op
template <class F>
void each_op(const Trace& t, const ReplayOptions& base, F&& f) {
  if (!base.streams) {
    for (size_t r = 0; r < t.ranks.size(); r++)
      for (const Op& op : t.ranks[r].ops) f(static_cast<int>(r), op);
    return;
  }
  StreamOp op;
  for (size_t r = 0; r < base.streams->size(); r++)
    for (OpCursor c((*base.streams)[r]); c.next(op);) f(static_cast<int>(r), std::as_const(op));
}

// By site (rank, call site): the other end of every matched message an op there completed.
using SitePeers = std::map<std::pair<int, uint32_t>, std::set<int>>;

SitePeers site_peers(const Trace& trace) {
  SitePeers peers;
  for (size_t r = 0; r < trace.ranks.size(); r++)
    for (const Op& op : trace.ranks[r].ops) {
      const OpLinks links = trace.links_of(op);
      for (uint32_t k = 0; k < links.size(); k++) {
        const Link l = links[k];
        if ((l.kind != Link::DoneSend && l.kind != Link::DoneRecv) || l.id >= trace.messages.size()) continue;
        const Message& m = trace.messages[l.id];
        if (m.matched()) peers[{static_cast<int>(r), op.callsite}].insert(l.kind == Link::DoneSend ? m.dst : m.src);
      }
    }
  return peers;
}

// The same from the ranks' streams, one rank's at a time: a send's receiver and whether a receive matched
// it from the fields its own rank's send carries, held from that send's post to its completion; a
// received message's sender from the runs of ids each rank sent (a message of the trace no send posted
// is a receive's that none matched).
SitePeers site_peers(const std::vector<OpStream>& streams) {
  const Senders senders(streams);
  SitePeers peers;
  std::unordered_map<uint32_t, const StreamMessage*> sending;  // this rank's sends posted, not yet completed
  StreamOp op;
  for (size_t r = 0; r < streams.size(); r++) {
    sending.clear();
    for (OpCursor c(streams[r]); c.next(op);) {
      for (const auto& p : op.posted)
        if (p.m->sent) sending[p.id] = p.m;
      const OpLinks links = op.links();
      for (uint32_t k = 0; k < links.size(); k++) {
        const Link l = links[k];
        int peer = -1;
        if (l.kind == Link::DoneSend) {
          const auto it = sending.find(l.id);
          if (it == sending.end()) continue;
          if (it->second->answered) peer = it->second->fields.dst;
          sending.erase(it);
        } else if (l.kind == Link::DoneRecv) {
          peer = senders.of(l.id);
        }
        if (peer >= 0) peers[{static_cast<int>(r), op.callsite}].insert(peer);
      }
    }
  }
  return peers;
}

std::vector<HotSpot> ranked(const Trace& trace, const WaitStates& waits, size_t top, const SitePeers& peers) {
  std::map<SiteKey, HotSpot> by_key;
  std::map<SiteKey, double> best_rank_ns;
  std::map<SiteKey, std::map<WaitCause, std::map<int, uint64_t>>> sizes_by_cause;
  std::map<SiteKey, std::map<int, double>> waited_by_rank;
  for (const auto& [rc, s] : waits.sites) {
    SiteKey key = trace.site(s.rank, s.callsite);
    HotSpot& h = by_key[key];
    h.key = key;
    double waited = 0;
    for (const auto& [cause, ns] : s.waited_ns) waited += ns, h.waited_by_cause[cause] += ns;
    for (const auto& [cause, ns] : s.caused_ns) h.caused_ns += ns;
    for (const auto& [cause, n] : s.count) h.count += n;
    if (h.members.empty() || waited > best_rank_ns[key]) {
      best_rank_ns[key] = waited;
      h.rank = s.rank, h.callsite = s.callsite, h.call = s.call;
    }
    h.members.emplace_back(s.rank, s.callsite);
    waited_by_rank[key][s.rank] += waited;
    h.waited_ns += waited;
    for (const auto& [cause, sizes] : s.size_log2)
      for (const auto& [log2, n] : sizes) sizes_by_cause[key][cause][log2] += n;
  }
  std::vector<HotSpot> out;
  for (auto& [key, h] : by_key) {
    if (h.waited_ns <= 0) continue;
    // the ranks that waited there: each with at least kRankShareOfSite of the site's waiting, so that a
    // rank descheduled once on a loaded machine is not named beside those the program makes wait
    for (const auto& [rank, ns] : waited_by_rank[key])
      if (ns > 0 && ns >= kRankShareOfSite * h.waited_ns) h.ranks.push_back(rank);
    double most = -1;
    for (const auto& [cause, ns] : h.waited_by_cause)
      if (ns > most) most = ns, h.cause = cause;
    h.size_log2 = sizes_by_cause[key][h.cause];
    std::set<int> all;
    for (const auto& member : h.members) {
      auto it = peers.find(member);
      if (it != peers.end()) all.insert(it->second.begin(), it->second.end());
    }
    h.peers.assign(all.begin(), all.end());
    out.push_back(std::move(h));
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.waited_ns > b.waited_ns; });
  if (out.size() > top) out.resize(top);
  return out;
}

}  // namespace

std::vector<HotSpot> hot_spots(const Trace& trace, const WaitStates& waits, size_t top) {
  return ranked(trace, waits, top, site_peers(trace));
}

std::vector<HotSpot> hot_spots(const Trace& trace, const std::vector<OpStream>& streams, const WaitStates& waits,
                               size_t top) {
  return ranked(trace, waits, top, site_peers(streams));
}

namespace {

double send_wait(const ReplayResult& r) {
  double t = 0;
  for (const auto& rank : r.ranks) t += rank.predicted.send_wait;
  return t;
}

// Bytes the library counts in its limit on top of the message (run_facts.cpp has the measurements).
uint64_t header_bytes(const RunFacts& f) { return f.setting_overhead; }

}  // namespace

std::optional<RaiseEagerLimit> advise_eager_limit(const Trace& trace, const RunFacts& facts, const ReplayOptions& base) {
  if (!facts.eager_setting_futile.empty()) return std::nullopt;
  auto chosen = choose_eager_limit(trace, facts, base, replay(trace, base));
  if (!chosen) return std::nullopt;
  return std::move(chosen->advice);
}

std::optional<EagerLimitChoice> choose_eager_limit(const Trace& trace, const RunFacts& facts, const ReplayOptions& base,
                                                   const ReplayResult& baseline) {
  if (!facts.eager_setting_futile.empty()) return std::nullopt;  // no setting to advise there
  if (baseline.rendezvous_messages == 0) return std::nullopt;
  const double before = send_wait(baseline);
  const uint64_t header = header_bytes(facts);
  const uint64_t need = trace.largest_message + header;
  // the smallest message that waits for its receiver now: a limit whose S stays below it changes no
  // message's protocol, and whatever the model predicts for it is no gain of a larger S (a clean-clone
  // run advised btl_tcp_eager_limit 131072 for the halo's 131072-byte messages, S 131016: 0 messages
  // made eager, a 3.5% saving predicted, the rerun 2.3% slower)
  uint64_t smallest_waiting = LogGPSParams::kInfinite;
  const MessageSides sides = sides_of(trace, base);
  {
    const LogGPS model(base.params);
    sides.each([&](const MessageSide& x) {
      const Message& m = *x.fields;
      if (x.send && x.matched && model.send_waits_for_receive(m.bytes, m.synchronous) && !m.synchronous)
        smallest_waiting = std::min(smallest_waiting, m.bytes);
    });
  }
  // the sweep: each power of two above the limit in force, up to the first that makes every message eager
  std::vector<uint64_t> limits;
  std::vector<ReplayOptions> whatifs;
  // (a library that reaches no further than the set's raised_to: the first limit there ends it)
  for (uint64_t limit = 1024; limit <= LogGPSParams::kInfinite / 4; limit *= 2) {
    uint64_t S = limit > header ? limit - header : 0;
    if (S <= base.params.S || S < smallest_waiting) continue;
    ReplayOptions whatif = base;
    whatif.params.move_S(S);
    if (whatif.params.S == base.params.S || whatif.params.S < smallest_waiting) break;  // no larger S to be had
    limits.push_back(limit);
    whatifs.push_back(std::move(whatif));
    if (limit >= need || whatifs.back().params.S < S) break;
  }
  // each replay's time and its ranks' figures are read, not its sites (let go as each ends)
  std::vector<std::pair<uint64_t, ReplayResult>> sweep(limits.size());
  replay_each(trace, whatifs, [&](size_t i, ReplayResult& r) {
    std::vector<SiteReplay>().swap(r.sites);
    sweep[i] = {limits[i], std::move(r)};
  });
  double best_ns = baseline.predicted_ns;
  for (const auto& [limit, r] : sweep) best_ns = std::min(best_ns, r.predicted_ns);
  const double gain = baseline.predicted_ns - best_ns;
  if (gain <= 0) return std::nullopt;
  // the smallest limit that gives 90% of the best gain (and then also removes most of the send-wait)
  RaiseEagerLimit best;
  ReplayResult* best_replay = nullptr;
  for (size_t i = 0; i < sweep.size(); i++) {
    auto& [limit, r] = sweep[i];
    if (baseline.predicted_ns - r.predicted_ns < 0.9 * gain) continue;
    best_replay = &r;
    best.value = limit;
    best.S = whatifs[i].params.S;  // the limit less the headers, or the most the library reaches
    best.baseline_ns = baseline.predicted_ns;
    best.predicted_ns = r.predicted_ns;
    best.send_wait_before_ns = before;
    best.send_wait_after_ns = send_wait(r);
    break;
  }
  best.setting = facts.eager_setting.empty() ? "the eager limit of the MPI library" : facts.eager_setting;
  if (facts.library == "Open MPI" && facts.eager_setting.rfind("btl_", 0) == 0) {
    best.mca = fmt::format("--mca {} {}", facts.eager_setting, best.value);
    best.env = fmt::format("OMPI_MCA_{}={}", facts.eager_setting, best.value);
  } else if (facts.eager_setting == "UCX_RNDV_THRESH") {
    best.env = fmt::format("UCX_RNDV_THRESH={}", best.value);
  } else if (facts.eager_setting.rfind("MPIR_CVAR_", 0) == 0) {
    best.env = fmt::format("{}={}", facts.eager_setting, best.value);
  }
  // eager messages that arrive before their receive are buffered at the receiver: up to the limit for
  // each rank that sends to it messages the new limit makes eager
  std::map<int, std::set<int>> senders;
  std::set<std::pair<int, uint32_t>> sites;
  ReplayOptions raised = base;
  raised.params.move_S(best.S);
  const LogGPS before_model(base.params), after_model(raised.params);
  sides.each([&](const MessageSide& x) {
    const Message& m = *x.fields;
    if (x.send && x.matched && before_model.send_waits_for_receive(m.bytes, m.synchronous) &&
        !after_model.send_waits_for_receive(m.bytes, m.synchronous)) {
      senders[m.dst].insert(m.src);
      sites.insert({x.rank, x.callsite});
      best.messages_made_eager++;
    }
  });
  if (best.messages_made_eager == 0) return std::nullopt;
  // measured here: MPICH 4.0.2 over UCX's TCP hung in MPI_Finalize in 1 run of 20 of the pipeline example
  // with UCX_RNDV_THRESH=262144 (none of 20 at the default), untraced; one rank in the process manager's
  // barrier, the other in ucp_worker_progress
  if (facts.library == "MPICH" && facts.library_version.rfind("4.0", 0) == 0 && facts.transport == "ucx-tcp" &&
      best.value > 65536)
    best.caution = "MPICH 4.0 over UCX's TCP hung in MPI_Finalize in 1 run of 20 with large eager messages "
                   "(UCX_RNDV_THRESH=262144, measured untraced): try it on a test run first";
  // the set's calibration found the most the library reaches below the limit advised, and some of this
  // run's messages lie between the two: the user would expect the limit to make them eager, and they still
  // wait (where every message is at most the S reached, the limit does all it is advised for: a CI machine's
  // calibration reached 259088 bytes, and the halo's 131072-byte messages were cautioned for nothing)
  const auto still_waiting = [&] {
    bool found = false;
    sides.each([&](const MessageSide& x) {
      const Message& m = *x.fields;
      found |= x.send && x.matched && !m.synchronous && m.bytes > best.S && m.bytes <= best.value - header;
    });
    return found;
  };
  if (base.params.raised_to && best.S == *base.params.raised_to && best.value > header && best.S < best.value - header &&
      still_waiting())
    best.caution += fmt::format("{}with its limit raised above every size, this library sent no message larger than {} "
                                "bytes without waiting for its receiver (the parameter set's [raised] to_bytes): the "
                                "larger ones still wait, as priced",
                                best.caution.empty() ? "" : "; ", *base.params.raised_to);
  best.send_sites.assign(sites.begin(), sites.end());
  for (const auto& [dst, srcs] : senders) best.senders_per_rank = std::max(best.senders_per_rank, static_cast<int>(srcs.size()));
  best.memory_per_rank_bytes = static_cast<uint64_t>(best.senders_per_rank) * best.value;
  return EagerLimitChoice{std::move(best), std::move(*best_replay)};
}

const char* advice_kind_name(AdviceKind k) {
  switch (k) {
    case AdviceKind::RaiseEagerLimit: return "raise_eager_limit";
    case AdviceKind::SplitMessages: return "split_messages";
    case AdviceKind::PrepostReceives: return "prepost_receives";
    case AdviceKind::NonblockingSend: return "nonblocking_send";
    case AdviceKind::PersistentRequests: return "persistent_requests";
  }
  return "?";
}

namespace {

Breakdown sum_ranks(const ReplayResult& r) {
  Breakdown b;
  for (const auto& rank : r.ranks) b += rank.predicted;
  return b;
}

bool blocking_send(uint32_t call) {
  return call == MPA_CALL_Send || call == MPA_CALL_Ssend || call == MPA_CALL_Bsend || call == MPA_CALL_Rsend;
}
bool blocking_recv(uint32_t call) { return call == MPA_CALL_Recv || call == MPA_CALL_Mrecv; }

// The fields of the message an op posts the receive of (its first receive's), or null.
const Message* received_fields(const Trace& t, const Op& op) {
  const OpLinks links = t.links_of(op);
  for (uint32_t k = 0; k < links.size(); k++) {
    const Link l = links[k];
    if (l.kind == Link::PostRecv && l.id != kNone) return &t.messages[l.id];
  }
  return nullptr;
}
// (from its stream: the sender's fields where a send matched it, the receive's own where none did)
const Message* received_fields(const Trace&, const StreamOp& op) {
  const OpLinks links = op.links();
  for (uint32_t k = 0; k < links.size(); k++) {
    const Link l = links[k];
    if (l.kind != Link::PostRecv || l.id == kNone) continue;
    for (const auto* list : {&op.received, &op.posted})
      for (const StreamOp::Posted& p : *list)
        if (p.id == l.id && !(list == &op.posted && p.m->sent)) return &p.m->fields;
    return nullptr;
  }
  return nullptr;
}

// Can the receives at a site be posted as soon as the previous one there completed without changing
// which message each receives? Not where a receive posted in between (at another site) took a message
// from the same source with the same tag on the same communicator: the early receive would take it;
// nor where the rank probes in between. (The trace keeps the envelope each message matched, not the
// one each receive asked for: a wildcard receive at the site is judged by the messages it took.)
bool prepost_keeps_matching(const Trace& t, const ReplayOptions& base, const SiteKey& site) {
  // by rank: whether a receive at the site was met, and since the last one the envelopes the rank's
  // other receives took and whether it probed
  int rank = -1;
  bool met = false, probed = false, keeps = true;
  std::set<std::tuple<int, int32_t, uint32_t>> between;  // source, tag, communicator
  each_op(t, base, [&](int r, const auto& op) {
    if (!keeps) return;
    if (r != rank) rank = r, met = probed = false, between.clear();
    const Message* m = received_fields(t, op);
    if (op.call != MPA_CALL_Recv || !(t.site(r, op.callsite) == site)) {
      // a probe in between looks for a message the early receive could take first
      const uint32_t c = op.call;
      probed |= c == MPA_CALL_Probe || c == MPA_CALL_Iprobe || c == MPA_CALL_Mprobe || c == MPA_CALL_Improbe;
      if (m) between.emplace(m->src, m->tag, uint32_t{m->comm});
      return;
    }
    if (met && m && (probed || between.count({m->src, m->tag, uint32_t{m->comm}}))) keeps = false;
    met = true, probed = false, between.clear();
  });
  return keeps;
}

// The blocking point-to-point call sites of a trace, with what the advisors at sites weigh: how long
// ranks waited there or made others wait, the messages sent or received there.
struct SiteFacts {
  std::vector<std::pair<int, uint32_t>> members;
  uint32_t call = 0;
  double weight = 0;            // waited there plus made others wait
  uint64_t messages = 0, messages_above_S = 0, extra_chunks = 0, largest = 0;
};

// The sites, heaviest first.
std::vector<std::pair<SiteKey, SiteFacts>> ranked_sites(const AdviceInput& in) {
  const Trace& trace = in.trace;
  std::map<SiteKey, SiteFacts> sites;
  int rank = -1;
  std::set<uint32_t> seen;  // the rank's
  each_op(trace, in.base, [&](int r, const auto& op) {
    if (r != rank) rank = r, seen.clear();
    if (!blocking_send(op.call) && !blocking_recv(op.call)) return;
    if (!seen.insert(op.callsite).second) return;
    SiteFacts& f = sites[trace.site(r, op.callsite)];
    f.members.emplace_back(r, op.callsite);
    f.call = op.call;
  });
  for (const auto& [rc, w] : in.waits.sites) {
    auto it = sites.find(trace.site(w.rank, w.callsite));
    if (it == sites.end()) continue;
    for (const auto& [cause, ns] : w.waited_ns) it->second.weight += ns;
    for (const auto& [cause, ns] : w.caused_ns) it->second.weight += ns;
  }
  const uint64_t S = in.base.params.S;
  const LogGPS model(in.base.params);
  sides_of(trace, in.base).each([&](const MessageSide& x) {
    if (!x.matched || !(x.send ? blocking_send(x.call) : blocking_recv(x.call))) return;
    auto it = sites.find(trace.site(x.rank, x.callsite));
    if (it == sites.end()) return;
    SiteFacts& f = it->second;
    const Message& m = *x.fields;
    f.messages++;
    f.largest = std::max(f.largest, m.bytes);
    if (x.send && !m.synchronous && !model.eager(m.bytes) && S > 0)  // a split into chunks of S would be eager
      f.messages_above_S++, f.extra_chunks += (m.bytes + S - 1) / S - 1;
  });
  std::vector<std::pair<SiteKey, SiteFacts>> ranked(sites.begin(), sites.end());
  std::stable_sort(ranked.begin(), ranked.end(),
                   [](const auto& a, const auto& b) { return a.second.weight > b.second.weight; });
  return ranked;
}

// A change at a site of the trace, replayed with options
Proposal at_site(const SiteKey& key, const SiteFacts& f, AdviceChange change, ReplayOptions whatif) {
  Proposal p{Advice{}, std::move(whatif), std::nullopt};
  p.advice.change = std::move(change);
  p.advice.site = key;
  p.advice.members = f.members;
  p.advice.call = f.call;
  p.advice.messages = f.messages;
  return p;
}

// The sites of ranked_sites an advisor at sites weighs: those that pass `fits`, the heaviest
// max_sites of them, each made into a proposal by `make`.
template <typename Fits, typename Make>
std::vector<Proposal> heaviest_sites(const AdviceInput& in, Fits fits, Make make) {
  std::vector<Proposal> out;
  for (const auto& [key, f] : ranked_sites(in)) {
    if (out.size() >= in.max_sites) break;
    if (fits(key, f)) out.push_back(make(key, f));
  }
  return out;
}

// The call that makes a persistent request for what call does.
const char* persistent_init(uint32_t call) {
  switch (call) {
    case MPA_CALL_Ssend:
    case MPA_CALL_Issend: return "MPI_Ssend_init";
    case MPA_CALL_Bsend:
    case MPA_CALL_Ibsend: return "MPI_Bsend_init";
    case MPA_CALL_Rsend:
    case MPA_CALL_Irsend: return "MPI_Rsend_init";
    case MPA_CALL_Recv:
    case MPA_CALL_Irecv: return "MPI_Recv_init";
    default: return "MPI_Send_init";
  }
}

// ---- the advisors

// A larger S: the smallest setting of the library that removes most of the rendezvous send-wait.
std::vector<Proposal> propose_eager_limit(const AdviceInput& in) {
  auto e = choose_eager_limit(in.trace, in.facts, in.base, in.baseline);
  if (!e) return {};
  Proposal p{Advice{}, in.base, std::move(e->replayed)};
  p.whatif.params.move_S(e->advice.S);
  p.advice.messages = e->advice.messages_made_eager;
  p.advice.members = e->advice.send_sites;
  p.advice.change = std::move(e->advice);
  return {p};
}
std::string title_eager_limit(const Advice& a, const std::string&) {
  const auto& e = std::get<RaiseEagerLimit>(a.change);
  return fmt::format("raise the eager limit: {} {}", e.setting, e.value);
}

// Blocking sends of messages above S split into chunks of S, each eager.
std::vector<Proposal> propose_split(const AdviceInput& in) {
  return heaviest_sites(
      in, [](const SiteKey&, const SiteFacts& f) { return blocking_send(f.call) && f.messages_above_S > 0; },
      [&](const SiteKey& key, const SiteFacts& f) {
        ReplayOptions o = in.base;
        o.split_sites = {key};
        Proposal p = at_site(key, f, SplitMessages{in.base.params.S, f.extra_chunks}, std::move(o));
        p.advice.messages = f.messages_above_S;
        return p;
      });
}
std::string title_split(const Advice& a, const std::string& where) {
  return fmt::format("split the messages sent at {} into chunks of at most {} bytes", where,
                     std::get<SplitMessages>(a.change).chunk_bytes);
}

// A blocking receive posted as soon as the previous one at its site completed, into a second buffer.
std::vector<Proposal> propose_prepost(const AdviceInput& in) {
  return heaviest_sites(
      in,
      [&](const SiteKey& key, const SiteFacts& f) {
        return f.weight > 0 && f.call == MPA_CALL_Recv && prepost_keeps_matching(in.trace, in.base, key);
      },
      [&](const SiteKey& key, const SiteFacts& f) {
        ReplayOptions o = in.base;
        o.prepost_sites = {key};
        return at_site(key, f, PrepostReceives{f.largest}, std::move(o));
      });
}
std::string title_prepost(const Advice&, const std::string& where) {
  return fmt::format("post the receive at {} earlier: MPI_Irecv into a second buffer as soon as the previous one completed",
                     where);
}

// A blocking send made non-blocking, completed at the rank's next MPI call.
std::vector<Proposal> propose_nonblocking(const AdviceInput& in) {
  return heaviest_sites(
      in, [](const SiteKey&, const SiteFacts& f) { return f.weight > 0 && blocking_send(f.call); },
      [&](const SiteKey& key, const SiteFacts& f) {
        ReplayOptions o = in.base;
        o.nonblocking_sites = {key};
        return at_site(key, f, NonblockingSend{}, std::move(o));
      });
}
std::string title_nonblocking(const Advice&, const std::string& where) {
  return fmt::format("make the send at {} non-blocking (MPI_Isend, completed at the next MPI call)", where);
}

// A call repeated with the same arguments made persistent: what the parameter set says a persistent
// request saves per call (nothing proposed when it does not say).
std::vector<Proposal> propose_persistent(const AdviceInput& in) {
  std::vector<Proposal> out;
  if (!in.base.params.persistent_saving) return out;
  for (const auto& rc : repeated_calls(in.trace, sides_of(in.trace, in.base))) {
    if (out.size() >= in.max_sites) break;
    Proposal p{Advice{}, in.base, std::nullopt};
    p.whatif.persistent_sites = {rc.site};
    p.advice.change = PersistentRequests{rc.identical};
    p.advice.site = rc.site;
    p.advice.members = rc.members;
    p.advice.call = rc.call;
    p.advice.messages = rc.calls;
    out.push_back(std::move(p));
  }
  return out;
}
std::string title_persistent(const Advice& a, const std::string& where) {
  return fmt::format("make the repeated {} at {} persistent ({} once, MPI_Start in the loop)",
                     call_name(static_cast<int>(a.call)), where, persistent_init(a.call));
}

}  // namespace

const std::vector<Advisor>& advisors() {
  static const std::vector<Advisor> registry = {
      {AdviceKind::RaiseEagerLimit, propose_eager_limit, title_eager_limit},
      {AdviceKind::SplitMessages, propose_split, title_split},
      {AdviceKind::PrepostReceives, propose_prepost, title_prepost},
      {AdviceKind::NonblockingSend, propose_nonblocking, title_nonblocking},
      {AdviceKind::PersistentRequests, propose_persistent, title_persistent},
  };
  return registry;
}

const Advisor& advisor(AdviceKind kind) {
  for (const Advisor& a : advisors())
    if (a.kind == kind) return a;
  throw std::logic_error(std::string("no advisor for ") + advice_kind_name(kind));
}

std::vector<Advice> advise(const AdviceInput& in) {
  std::vector<Advice> out;
  const double error = std::fabs(in.baseline.error());
  const double threshold = std::max(error, 0.01);
  const Breakdown before = sum_ranks(in.baseline);
  std::vector<Proposal> proposals;
  for (const Advisor& advisor : advisors())
    for (Proposal& p : advisor.propose(in)) proposals.push_back(std::move(p));
  // the what-ifs not replayed yet, on the machine's cores
  std::vector<size_t> pending;
  std::vector<ReplayOptions> whatifs;
  for (size_t i = 0; i < proposals.size(); i++)
    if (!proposals[i].replayed) pending.push_back(i), whatifs.push_back(proposals[i].whatif);
  // what is read of each below: its time and its ranks' sums, not its sites
  replay_each(in.trace, whatifs, [&](size_t k, ReplayResult& r) {
    std::vector<SiteReplay>().swap(r.sites);  // let go (= {} would keep their capacity)
    proposals[pending[k]].replayed = std::move(r);
  });
  for (Proposal& p : proposals) {
    Advice& a = out.emplace_back(std::move(p.advice));
    a.baseline_ns = in.baseline.predicted_ns;
    a.predicted_ns = p.replayed->predicted_ns;
    a.model_error = error;
    a.before = before;
    a.after = sum_ranks(*p.replayed);
    a.worthwhile = a.saving() > threshold;
  }
  std::stable_sort(out.begin(), out.end(), [](const Advice& a, const Advice& b) { return a.predicted_ns < b.predicted_ns; });
  return out;
}

std::vector<RepeatedCalls> repeated_calls(const Trace& trace) { return repeated_calls(trace, MessageSides(trace)); }

std::vector<RepeatedCalls> repeated_calls(const Trace& trace, const MessageSides& sides) {
  using Signature = std::tuple<int, int32_t, uint64_t, uint32_t>;  // peer, tag, bytes, communicator
  struct Site {
    uint32_t call = 0;
    uint64_t calls = 0;
    std::map<Signature, uint64_t> signatures;
  };
  std::map<std::pair<int, uint32_t>, Site> sites;
  auto persistent_able = [](const MessageSide& op) {
    return (op.kind == OpKind::Send || op.kind == OpKind::SyncSend || op.kind == OpKind::Recv ||
            op.kind == OpKind::PostSend || op.kind == OpKind::PostRecv) &&
           op.call != MPA_CALL_Start && op.call != MPA_CALL_Startall && op.call != MPA_CALL_Mrecv &&
           op.call != MPA_CALL_Imrecv;
  };
  sides.each([&](const MessageSide& x) {
    if (!x.matched || !persistent_able(x)) return;
    const Message& m = *x.fields;
    Site& s = sites[{x.rank, x.callsite}];
    // a site makes one call; where a trace's has two, the lower, whichever side was met first
    s.call = s.calls == 0 ? x.call : std::min(s.call, uint32_t{x.call});
    s.calls++, s.signatures[{x.send ? m.dst : m.src, m.tag, m.bytes, m.comm}]++;
  });
  std::map<SiteKey, RepeatedCalls> by_key;
  for (const auto& [rc, s] : sites) {
    uint64_t most = 0;
    for (const auto& [sig, n] : s.signatures) most = std::max(most, n);
    if (most < 10 || most < 0.9 * static_cast<double>(s.calls)) continue;
    RepeatedCalls& r = by_key[trace.site(rc.first, rc.second)];
    r.site = trace.site(rc.first, rc.second);
    r.members.push_back(rc);
    r.call = s.call;
    r.calls += s.calls;
    r.identical += most;
  }
  std::vector<RepeatedCalls> out;
  for (auto& [k, r] : by_key) out.push_back(std::move(r));
  std::stable_sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.identical > b.identical; });
  return out;
}

}  // namespace mpiadvise

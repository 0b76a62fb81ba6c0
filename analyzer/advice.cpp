#include "advice.hpp"

#include <algorithm>
#include <cmath>
#include <set>

#include <fmt/format.h>

namespace mpiadvise {

std::vector<HotSpot> hot_spots(const Trace& trace, const WaitStates& waits, size_t top) {
  std::vector<HotSpot> out;
  for (const auto& [key, s] : waits.sites) {
    HotSpot h;
    h.rank = s.rank;
    h.callsite = s.callsite;
    h.call = s.call;
    double most = -1;
    for (const auto& [cause, ns] : s.waited_ns) {
      h.waited_ns += ns;
      if (ns > most) most = ns, h.cause = cause;
    }
    for (const auto& [cause, n] : s.count) h.count += n;
    if (h.waited_ns <= 0) continue;
    for (uint64_t b : s.message_bytes) h.size_log2[b ? static_cast<int>(std::floor(std::log2(static_cast<double>(b)))) : -1]++;
    out.push_back(std::move(h));
  }
  // peers: the other end of every message this site waited on (the site completes it)
  std::map<std::pair<int, uint32_t>, std::set<int>> peers;
  for (const auto& m : trace.messages) {
    if (!m.matched()) continue;
    if (m.send_done_op != kNone) peers[{m.src, trace.op(m.src, m.send_done_op).callsite}].insert(m.dst);
    if (m.recv_done_op != kNone) peers[{m.dst, trace.op(m.dst, m.recv_done_op).callsite}].insert(m.src);
  }
  for (auto& h : out) {
    auto it = peers.find({h.rank, h.callsite});
    if (it != peers.end()) h.peers.assign(it->second.begin(), it->second.end());
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.waited_ns > b.waited_ns; });
  if (out.size() > top) out.resize(top);
  return out;
}

namespace {

double send_wait(const ReplayResult& r) {
  double t = 0;
  for (const auto& rank : r.ranks) t += rank.predicted.send_wait;
  return t;
}

// Bytes the library counts in its limit on top of the message (run_facts.cpp has the measurement).
uint64_t header_bytes(const RunFacts& f) {
  return f.configured_S && f.effective_S && *f.configured_S > *f.effective_S ? *f.configured_S - *f.effective_S : 0;
}

}  // namespace

std::optional<RaiseEagerLimit> advise_eager_limit(const Trace& trace, const RunFacts& facts, const ReplayOptions& base) {
  ReplayResult baseline = replay(trace, base);
  double before = send_wait(baseline);
  if (baseline.rendezvous_messages == 0 || before <= 0) return std::nullopt;
  uint64_t header = header_bytes(facts);
  uint64_t need = trace.largest_message + header;
  RaiseEagerLimit best;
  bool found = false;
  for (uint64_t limit = 1024; limit <= std::max<uint64_t>(need, 1024) * 2 && !found; limit *= 2) {
    uint64_t S = limit > header ? limit - header : 0;
    if (S <= base.params.S) continue;
    ReplayOptions o = base;
    o.params.S = S;
    o.params.s = std::min(o.params.s, S);
    ReplayResult r = replay(trace, o);
    double after = send_wait(r);
    if (after <= 0.1 * before) {
      found = true;
      best.value = limit;
      best.S = S;
      best.baseline_ns = baseline.predicted_ns;
      best.predicted_ns = r.predicted_ns;
      best.send_wait_before_ns = before;
      best.send_wait_after_ns = after;
    }
  }
  if (!found) return std::nullopt;
  best.setting = facts.eager_setting.empty() ? "the eager limit of the MPI library" : facts.eager_setting;
  if (facts.library == "Open MPI" && facts.eager_setting.rfind("btl_", 0) == 0) {
    best.mca = fmt::format("--mca {} {}", facts.eager_setting, best.value);
    best.env = fmt::format("OMPI_MCA_{}={}", facts.eager_setting, best.value);
  } else if (facts.eager_setting == "UCX_RNDV_THRESH") {
    best.env = fmt::format("UCX_RNDV_THRESH={}", best.value);
  }
  // eager messages that arrive before their receive are buffered at the receiver: up to the limit for
  // each rank that sends to it messages the new limit makes eager
  std::map<int, std::set<int>> senders;
  for (const auto& m : trace.messages)
    if (m.matched() && m.bytes > base.params.S && m.bytes <= best.S) senders[m.dst].insert(m.src);
  for (const auto& [dst, srcs] : senders) best.senders_per_rank = std::max(best.senders_per_rank, static_cast<int>(srcs.size()));
  best.memory_per_rank_bytes = static_cast<uint64_t>(best.senders_per_rank) * best.value;
  return best;
}

}  // namespace mpiadvise

#include "buffering.hpp"

#include <algorithm>
#include <map>
#include <set>

#include "op_stream.hpp"

namespace mpiadvise {

namespace {

// The sends an op waits for when every send of a byte or more waits for its receive: a blocking send's
// message, or the send requests a completion waits on. sent(link): the message the link names, where a
// receive matched it (nullptr elsewhere).
template <typename SentOf>
std::vector<BufferingDependence::Send> waiting_sends(int rank, uint32_t op_index, OpKind kind, uint32_t call,
                                                     uint32_t callsite, OpLinks links, SentOf sent) {
  std::vector<BufferingDependence::Send> out;
  std::set<uint32_t> seen;  // a blocking send both posts and completes its message
  for (uint32_t i = 0; i < links.size(); i++) {
    const Link l = links[i];
    const bool blocking_send = l.kind == Link::PostSend && (kind == OpKind::Send || kind == OpKind::SendRecv);
    if (!(blocking_send || l.kind == Link::DoneSend) || l.id == kNone) continue;
    const Message* m = sent(l);
    if (!m || !seen.insert(l.id).second) continue;
    // a synchronous send waits at any S (the program would hang as it is); 0 bytes always go eagerly
    if (m->synchronous || m->bytes == 0) continue;
    out.push_back({rank, m->dst, op_index, call, callsite, m->bytes});
  }
  return out;
}

// From the trace's op and messages, or, where the replays walk the op streams, from the op sought in its
// rank's stream: its sends' fields where it posted them, a completed send's where it completes it.
std::vector<BufferingDependence::Send> waiting_sends(const Trace& t, const ReplayOptions& o, int rank, uint32_t op_index) {
  if (!o.streams) {
    const Op& op = t.op(rank, op_index);
    return waiting_sends(rank, op_index, op.kind, op.call, op.callsite, t.links_of(op), [&](Link l) -> const Message* {
      return l.id < t.messages.size() && t.messages[l.id].matched() ? &t.messages[l.id] : nullptr;
    });
  }
  OpCursor c(o.streams->at(static_cast<size_t>(rank)));
  c.seek(op_index);
  StreamOp op;
  if (!c.next(op)) return {};
  return waiting_sends(rank, op_index, op.kind, op.call, op.callsite, op.links(), [&](Link l) -> const Message* {
    for (const auto& p : l.kind == Link::PostSend ? op.posted : op.completed)
      if (p.id == l.id) return p.m->sent && p.m->answered ? &p.m->fields : nullptr;
    return nullptr;
  });
}

ReplayResult replay_at(const Trace& t, const ReplayOptions& options, uint64_t S) {
  ReplayOptions o = options;
  o.params.move_S(S);
  return replay(t, o);
}

}  // namespace

BufferingDependence buffering_dependence(const Trace& trace, const ReplayOptions& options, const ReplayResult& baseline) {
  BufferingDependence out;
  if (!baseline.stalls.empty() || options.mode != ReplayMode::Simulate) return out;
  out.checked = true;
  const ReplayResult strict = replay_at(trace, options, 0);
  std::map<std::vector<std::pair<int, uint32_t>>, size_t> seen;  // the sends' (rank, call site) -> deadlock
  for (const auto& stall : strict.stalls) {
    BufferingDependence::Deadlock d;
    d.ranks = stall.ranks;
    for (const auto& parked : stall.ranks) {
      auto sends = waiting_sends(trace, options, parked.rank, parked.op);
      d.sends.insert(d.sends.end(), sends.begin(), sends.end());
    }
    if (d.sends.empty()) continue;  // waits that buffering did not hide (receives of a missing partner)
    std::vector<std::pair<int, uint32_t>> key;
    for (const auto& s : d.sends) key.emplace_back(s.rank, s.callsite);
    std::sort(key.begin(), key.end());
    if (auto it = seen.find(key); it != seen.end()) {
      out.deadlocks[it->second].times++;
      continue;
    }
    seen.emplace(key, out.deadlocks.size());
    out.deadlocks.push_back(std::move(d));
  }
  // the cycle closes while every send of it waits: at S one byte below its smallest send too, where it
  // needs only these sends
  for (auto& d : out.deadlocks) {
    uint64_t smallest = d.sends.front().bytes;
    for (const auto& s : d.sends) smallest = std::min(smallest, s.bytes);
    const ReplayResult below = replay_at(trace, options, smallest - 1);
    const bool again = std::any_of(below.stalls.begin(), below.stalls.end(), [&](const ReplayResult::Stall& st) {
      return std::any_of(st.ranks.begin(), st.ranks.end(), [&](const ReplayResult::Stall::Parked& p) {
        return std::any_of(d.sends.begin(), d.sends.end(), [&](const auto& s) { return s.rank == p.rank && s.op == p.op; });
      });
    });
    if (again) d.hangs_below = smallest;
  }
  return out;
}

}  // namespace mpiadvise

#include "waits.hpp"

#include <algorithm>

namespace mpiadvise {

const char* wait_cause_name(WaitCause c) {
  switch (c) {
    case WaitCause::LateSender: return "late sender";
    case WaitCause::LateReceiverRendezvous: return "late receiver (rendezvous)";
    case WaitCause::LateReceiverSynchronous: return "late receiver (synchronous send)";
    case WaitCause::LateReceiverOther: return "late receiver (other)";
    case WaitCause::Collective: return "collective";
  }
  return "?";
}

double WaitStates::total(WaitCause c) const {
  double t = 0;
  for (const auto& r : rank_ns) {
    auto it = r.find(c);
    if (it != r.end()) t += it->second;
  }
  return t;
}

double WaitStates::send_wait_ns(int rank) const {
  double t = 0;
  for (auto c : {WaitCause::LateReceiverRendezvous, WaitCause::LateReceiverSynchronous, WaitCause::LateReceiverOther}) {
    auto it = rank_ns[rank].find(c);
    if (it != rank_ns[rank].end()) t += it->second;
  }
  return t;
}

double WaitStates::recv_wait_ns(int rank) const {
  auto it = rank_ns[rank].find(WaitCause::LateSender);
  return it == rank_ns[rank].end() ? 0 : it->second;
}

double WaitStates::site_send_wait_ns(int rank, uint32_t callsite) const {
  auto it = sites.find({rank, callsite});
  if (it == sites.end()) return 0;
  double t = 0;
  for (const auto& [cause, ns] : it->second.waited_ns)
    if (cause != WaitCause::LateSender && cause != WaitCause::Collective) t += ns;
  return t;
}

double WaitStates::site_recv_wait_ns(int rank, uint32_t callsite) const {
  auto it = sites.find({rank, callsite});
  if (it == sites.end()) return 0;
  auto c = it->second.waited_ns.find(WaitCause::LateSender);
  return c == it->second.waited_ns.end() ? 0 : c->second;
}

namespace {

// Every wait of the run, to `keep(Wait)`: a wait in op of the waiter, from its entry to `to`, where that
// is after it. send_done, recv_done: done_ops of each side.
template <typename Keep>
void each_wait(const Trace& t, const LogGPS& model, const std::vector<uint32_t>& send_done,
               const std::vector<uint32_t>& recv_done, Keep&& keep) {
  auto add = [&](int waiter, uint32_t op, double to, int culprit, uint32_t culprit_op, WaitCause cause, uint64_t bytes) {
    if (to > static_cast<double>(t.op(waiter, op).t_enter))
      keep(Wait{waiter, op, to, culprit, culprit_op, std::min(bytes, kMaxWaitBytes), cause});
  };
  for (size_t id = 0; id < t.messages.size(); id++) {
    const Message& m = t.messages[id];
    if (!m.matched()) continue;
    double ts = static_cast<double>(t.op(m.src, m.send_op).t_enter);
    double tr = static_cast<double>(t.op(m.dst, m.recv_op).t_enter);
    if (send_done[id] != kNone) {
      // late receiver: the send completed only after the receive was posted, and was waiting before it
      const Op& d = t.op(m.src, send_done[id]);
      double enter = static_cast<double>(d.t_enter), exit = static_cast<double>(d.t_exit());
      if (enter < tr && exit >= tr) {
        WaitCause cause = m.synchronous ? WaitCause::LateReceiverSynchronous
                          : model.send_waits_for_receive(m.bytes, false) ? WaitCause::LateReceiverRendezvous
                                                                         : WaitCause::LateReceiverOther;
        add(m.src, send_done[id], tr, m.dst, m.recv_op, cause, m.bytes);
      }
    }
    if (recv_done[id] != kNone) {
      // late sender: the receive (or its wait) began before the send was called
      const Op& d = t.op(m.dst, recv_done[id]);
      double enter = static_cast<double>(d.t_enter), exit = static_cast<double>(d.t_exit());
      if (enter < ts) add(m.dst, recv_done[id], std::min(ts, exit), m.src, m.send_op, WaitCause::LateSender, m.bytes);
    }
  }
  for (const auto& c : t.collectives) {
    if (c.members.size() < 2) continue;
    double last = 0;
    int last_rank = -1;
    uint32_t last_op = kNone;
    for (const auto& [r, op] : c.members)
      if (static_cast<double>(t.op(r, op).t_enter) >= last)
        last = static_cast<double>(t.op(r, op).t_enter), last_rank = r, last_op = op;
    for (const auto& [r, op] : c.members) {
      const Op& o = t.op(r, op);
      if (o.kind != OpKind::Collective || r == last_rank) continue;  // non-blocking ones wait in their completion
      add(r, op, std::min(last, static_cast<double>(o.t_exit())), last_rank, last_op, WaitCause::Collective, 0);
    }
  }
}

}  // namespace

std::vector<Wait> find_waits(const Trace& t, const LogGPS& model) {
  const std::vector<uint32_t> send_done = done_ops(t, Link::DoneSend), recv_done = done_ops(t, Link::DoneRecv);
  // counted first, then made at their number: kept by the analysis for the whole report (about one for
  // every four calls of a halo), grown by doubling and then cut to their size they took three times
  // their memory at the peak (mpiadvise-synth's halo of 64 x 10^5 calls: 160 MB above the trace for 64)
  size_t n = 0;
  each_wait(t, model, send_done, recv_done, [&](const Wait&) { n++; });
  std::vector<Wait> waits;
  waits.reserve(n);
  each_wait(t, model, send_done, recv_done, [&](const Wait& w) { waits.push_back(w); });
  return waits;
}

WaitStates measure_waits(const Trace& t, const LogGPS& model) { return measure_waits(t, find_waits(t, model)); }

WaitStates measure_waits(const Trace& t, const std::vector<Wait>& waits) {
  WaitStates w;
  w.rank_ns.resize(t.ranks.size());
  auto site = [&](int rank, uint32_t op) -> SiteWaits& {
    const Op& o = t.op(rank, op);
    auto [it, fresh] = w.sites.try_emplace({rank, o.callsite});
    if (fresh) it->second.rank = rank, it->second.callsite = o.callsite, it->second.call = o.call;
    return it->second;
  };
  for (const Wait& x : waits) {
    w.rank_ns[x.rank][x.cause] += x.ns(t);
    SiteWaits& s = site(x.rank, x.op);
    s.waited_ns[x.cause] += x.ns(t);
    s.count[x.cause]++;
    if (x.bytes) s.message_bytes[x.cause].push_back(x.bytes);
    // at a collective the last rank's computation, not its call, keeps the others waiting
    if (x.cause != WaitCause::Collective) site(x.culprit, x.culprit_op).caused_ns[x.cause] += x.ns(t);
  }
  return w;
}

}  // namespace mpiadvise

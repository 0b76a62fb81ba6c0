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

WaitStates measure_waits(const Trace& t, const LogGPS& model) {
  WaitStates w;
  w.rank_ns.resize(t.ranks.size());
  auto site = [&](int rank, uint32_t op) -> SiteWaits& {
    const Op& o = t.op(rank, op);
    auto [it, fresh] = w.sites.try_emplace({rank, o.callsite});
    if (fresh) it->second.rank = rank, it->second.callsite = o.callsite, it->second.call = o.call;
    return it->second;
  };
  auto charge = [&](int waiter, uint32_t wait_op, int culprit, uint32_t culprit_op, WaitCause cause, double ns,
                    uint64_t bytes) {
    if (ns <= 0) return;
    w.rank_ns[waiter][cause] += ns;
    SiteWaits& s = site(waiter, wait_op);
    s.waited_ns[cause] += ns;
    s.count[cause]++;
    if (bytes) s.message_bytes[cause].push_back(bytes);
    if (culprit >= 0 && culprit_op != kNone) site(culprit, culprit_op).caused_ns[cause] += ns;
  };
  for (const auto& m : t.messages) {
    if (!m.matched()) continue;
    double ts = static_cast<double>(t.op(m.src, m.send_op).t_enter);
    double tr = static_cast<double>(t.op(m.dst, m.recv_op).t_enter);
    if (m.send_done_op != kNone) {
      // late receiver: the send completed only after the receive was posted, and was waiting before it
      const Op& d = t.op(m.src, m.send_done_op);
      double enter = static_cast<double>(d.t_enter), exit = static_cast<double>(d.t_exit);
      if (enter < tr && exit >= tr) {
        WaitCause cause = m.synchronous ? WaitCause::LateReceiverSynchronous
                          : model.send_waits_for_receive(m.bytes, false) ? WaitCause::LateReceiverRendezvous
                                                                         : WaitCause::LateReceiverOther;
        charge(m.src, m.send_done_op, m.dst, m.recv_op, cause, tr - enter, m.bytes);
      }
    }
    if (m.recv_done_op != kNone) {
      // late sender: the receive (or its wait) began before the send was called
      const Op& d = t.op(m.dst, m.recv_done_op);
      double enter = static_cast<double>(d.t_enter), exit = static_cast<double>(d.t_exit);
      if (enter < ts) charge(m.dst, m.recv_done_op, m.src, m.send_op, WaitCause::LateSender, std::min(ts, exit) - enter, m.bytes);
    }
  }
  for (const auto& c : t.collectives) {
    if (c.members.size() < 2) continue;
    double last = 0;
    int last_rank = -1;
    for (const auto& [r, op] : c.members)
      if (static_cast<double>(t.op(r, op).t_enter) >= last) last = static_cast<double>(t.op(r, op).t_enter), last_rank = r;
    for (const auto& [r, op] : c.members) {
      const Op& o = t.op(r, op);
      if (o.kind != OpKind::Collective) continue;  // non-blocking ones wait in their completion
      double waited = std::min(last, static_cast<double>(o.t_exit)) - static_cast<double>(o.t_enter);
      if (r != last_rank) charge(r, op, -1, kNone, WaitCause::Collective, waited, 0);
    }
  }
  return w;
}

}  // namespace mpiadvise

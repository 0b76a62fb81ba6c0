#include "waits.hpp"

#include <algorithm>
#include <bit>
#include <stdexcept>
#include <unordered_map>

#include <fmt/format.h>

#include "mapped_list.hpp"
#include "measured_walk.hpp"

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

// What the waits need of an op: its index in its rank's ops (kNone: no such op) and its times.
struct OpTimes {
  uint32_t op = kNone;
  double enter = 0, exit = 0;
};

// What the waits need of a matched message: its ranks and size, when each side was posted and by which op,
// and the ops that completed each side.
struct MessageOps {
  int src = -1, dst = -1;
  uint64_t bytes = 0;
  bool synchronous = false;
  uint32_t send_op = kNone, recv_op = kNone;
  double ts = 0, tr = 0;  // the posting ops' entries
  OpTimes send_done, recv_done;
};

// A wait in the waiter's op w, from its entry to `to`, where that is after it.
template <typename Keep>
void add_wait(Keep& keep, int waiter, const OpTimes& w, double to, int culprit, uint32_t culprit_op, WaitCause cause,
              uint64_t bytes) {
  if (to <= w.enter) return;
  Wait x;
  x.from = w.enter, x.to = to, x.op = w.op, x.culprit_op = culprit_op;
  x.rank = static_cast<uint32_t>(waiter) & 0xffffff, x.cause = cause, x.culprit = culprit;
  x.size_bits = static_cast<uint32_t>(std::bit_width(bytes)) & 0x7f;
  keep(x);
}

// A message's waits: its sender's (a late receiver), then its receiver's (a late sender).
template <typename Keep>
void message_waits(const MessageOps& m, const LogGPS& model, Keep& keep) {
  const OpTimes& sd = m.send_done;
  if (sd.op != kNone && sd.enter < m.tr && sd.exit >= m.tr) {
    // late receiver: the send completed only after the receive was posted, and was waiting before it
    WaitCause cause = m.synchronous ? WaitCause::LateReceiverSynchronous
                      : model.send_waits_for_receive(m.bytes, false) ? WaitCause::LateReceiverRendezvous
                                                                     : WaitCause::LateReceiverOther;
    add_wait(keep, m.src, sd, m.tr, m.dst, m.recv_op, cause, m.bytes);
  }
  const OpTimes& rd = m.recv_done;
  // late sender: the receive (or its wait) began before the send was called
  if (rd.op != kNone && rd.enter < m.ts)
    add_wait(keep, m.dst, rd, std::min(m.ts, rd.exit), m.src, m.send_op, WaitCause::LateSender, m.bytes);
}

// A collective instance's waits, member(k) giving its kth member's rank, op and kind: from each blocking
// member's entry to the last member's.
template <typename Member, typename Keep>
void collective_waits(size_t n, Member&& member, Keep& keep) {
  if (n < 2) return;
  double last = 0;
  int last_rank = -1;
  uint32_t last_op = kNone;
  for (size_t k = 0; k < n; k++) {
    const auto [r, o, kind] = member(k);
    if (o.enter >= last) last = o.enter, last_rank = r, last_op = o.op;
  }
  for (size_t k = 0; k < n; k++) {
    const auto [r, o, kind] = member(k);
    if (kind != OpKind::Collective || r == last_rank) continue;  // non-blocking ones wait in their completion
    add_wait(keep, r, o, std::min(last, o.exit), last_rank, last_op, WaitCause::Collective, 0);
  }
}

OpTimes times(const Trace& t, int rank, uint32_t op) {
  if (op == kNone) return {};
  const Op& o = t.op(rank, op);
  return {op, static_cast<double>(o.t_enter), static_cast<double>(o.t_exit())};
}

// Every wait of the run, to `keep(Wait)`: by message, then by collective instance.
template <typename Keep>
void each_wait(const Trace& t, const LogGPS& model, const std::vector<uint32_t>& send_done,
               const std::vector<uint32_t>& recv_done, Keep&& keep) {
  for (size_t id = 0; id < t.messages.size(); id++) {
    const Message& m = t.messages[id];
    if (!m.matched()) continue;
    const MessageOps ops{m.src, m.dst, m.bytes, m.synchronous, m.send_op, m.recv_op,
                         static_cast<double>(t.op(m.src, m.send_op).t_enter), static_cast<double>(t.op(m.dst, m.recv_op).t_enter),
                         times(t, m.src, send_done[id]), times(t, m.dst, recv_done[id])};
    message_waits(ops, model, keep);
  }
  for (const auto& c : t.collectives)
    collective_waits(
        c.members.size(),
        [&](size_t k) {
          const auto [r, op] = c.members[k];
          return std::make_tuple(r, times(t, r, op), t.op(r, op).kind);
        },
        keep);
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

std::vector<Wait> find_waits(const std::vector<OpStream>& streams, const LogGPS& model, WaitsHeld* held) {
  // a message from the first of its ops met to the last: its posting ops (the sender's carries its
  // fields) and the ops that complete its sides
  struct InFlight {
    MessageOps ops;
    bool matched = false;  // its send's fields say a receive matched it
    uint8_t met = 0;       // kPosted... below
  };
  enum : uint8_t { kPostedSend = 1, kPostedRecv = 2, kSendDone = 4, kRecvDone = 8, kAll = 15 };
  struct Member {
    int rank = -1;
    OpTimes op;
    OpKind kind = OpKind::Other;
  };
  struct Instance {
    size_t met = 0;
    std::vector<Member> members;
  };
  // the messages in flight
  uint32_t ids = 0;
  for (const OpStream& s : streams) ids = std::max(ids, s.message_ids());
  HeldMessages<InFlight> held_messages(ids);
  std::unordered_map<uint32_t, Instance> instances;
  WaitsHeld most;
  // the waits as found, each with its place in find_waits(trace)'s order: the messages' by id, the
  // sender's first, then the instances' by id and member, in the order found (a key each, none the same).
  // Sorted in place and read out into the waits a page at a time, given back as read: 48 bytes a wait at
  // the peak, where the waits as found, their places apart (16 bytes: key and number) and the waits
  // gathered from them held 96, the peak of mpiadvise report --low-memory (mpiadvise-synth's halo of 64
  // ranks x 10^5 calls, 1.78 M waits). A MappedList grows in place, not by doubling into a copy.
  struct Found {
    uint64_t key;
    Wait w;
  };
  MappedList<Found> found;
  auto keep_at = [&](uint64_t key, const Wait& w) {
    if (found.size() == UINT32_MAX) throw std::length_error("more than 2^32 - 1 wait states: more than a report numbers");
    found.push_back({key, w});
  };
  auto message_done = [&](uint32_t id, const InFlight& m) {
    if (!m.matched) return;
    const uint64_t place = uint64_t{id} << 31;  // a message's waits: its sender's, then its receiver's
    auto keep = [&](const Wait& w) { keep_at(place + (w.cause == WaitCause::LateSender), w); };
    message_waits(m.ops, model, keep);
  };
  auto instance_done = [&](uint32_t id, const Instance& c) {
    const uint64_t place = uint64_t{1} << 63 | uint64_t{id} << 31;
    uint64_t kept = 0;  // the instance's waits so far: keyed in the order found (fewer than its members)
    auto keep = [&](const Wait& w) { keep_at(place + kept++, w); };
    collective_waits(
        c.members.size(), [&](size_t k) { return std::make_tuple(c.members[k].rank, c.members[k].op, c.members[k].kind); }, keep);
  };
  walk_by_entry(streams, [&](int r, uint32_t i, const StreamOp& op) {
    const OpTimes here{i, static_cast<double>(op.t_enter), static_cast<double>(op.t_exit())};
    const OpLinks links = op.links();
    for (uint32_t k = 0; k < links.size(); k++) {
      const Link l = links[k];
      // (an id beyond the messages, a hand-made trace's, names none: the trace's waits pass it by too)
      if (l.kind > Link::DoneRecv || l.id >= held_messages.ids()) continue;
      InFlight& m = held_messages.at(l.id);
      switch (l.kind) {
        case Link::PostSend:
          m.met |= kPostedSend;
          m.ops.src = r, m.ops.send_op = i, m.ops.ts = here.enter;
          for (const StreamOp::Posted& p : op.posted)
            if (p.id == l.id) {
              m.matched = p.m->sent && p.m->answered;
              m.ops.dst = p.m->fields.dst, m.ops.bytes = p.m->fields.bytes, m.ops.synchronous = p.m->fields.synchronous;
            }
          break;
        case Link::PostRecv: m.met |= kPostedRecv, m.ops.recv_op = i, m.ops.tr = here.enter; break;
        case Link::DoneSend: m.met |= kSendDone, m.ops.send_done = here; break;
        default: m.met |= kRecvDone, m.ops.recv_done = here; break;
      }
      if (m.met == kAll) {
        message_done(l.id, m);
        held_messages.let_go(l.id);
      }
    }
    for (const StreamOp::Joined& j : op.joined) {
      const size_t n = j.fields->members.size();
      if (n < 2) continue;
      auto [it, fresh] = instances.try_emplace(j.instance);
      if (fresh) {
        it->second.members.resize(n);
        most.instances = std::max(most.instances, instances.size());
      }
      Instance& c = it->second;
      c.members[j.k] = {r, here, op.kind};
      if (++c.met == n) {
        instance_done(j.instance, c);
        instances.erase(it);
      }
    }
  });
  // what the walk left: messages one of whose sides no op completed, or never matched (an instance's
  // members are all met: each is an op of a stream)
  held_messages.each_held(message_done);
  most.messages = held_messages.most();
  found.fit();
  Found* const all = found.empty() ? nullptr : &found[0];
  std::sort(all, all + found.size(), [](const Found& a, const Found& b) { return a.key < b.key; });
  std::vector<Wait> waits;
  waits.reserve(found.size());
  found.drain([&](const Found& f) { waits.push_back(f.w); });
  if (held) *held = most;
  return waits;
}

namespace {

// The waits added up one by one; site_of(rank, op): the op's call site and call.
template <typename SiteOf>
class WaitSums {
 public:
  WaitSums(size_t ranks, SiteOf site_of) : site_of_(std::move(site_of)) { w_.rank_ns.resize(ranks); }
  void add(const Wait& x) {
    w_.rank_ns[x.rank][x.cause] += x.ns();
    SiteWaits& s = site(x.rank, x.op);
    s.waited_ns[x.cause] += x.ns();
    s.count[x.cause]++;
    if (x.size_bits) s.size_log2[x.cause][static_cast<int>(x.size_bits) - 1]++;
    // at a collective the last rank's computation, not its call, keeps the others waiting
    if (x.cause != WaitCause::Collective) site(x.culprit, x.culprit_op).caused_ns[x.cause] += x.ns();
  }
  WaitStates take() { return std::move(w_); }

 private:
  SiteWaits& site(int rank, uint32_t op) {
    const auto [callsite, call] = site_of_(rank, op);
    auto [it, fresh] = w_.sites.try_emplace({rank, callsite});
    if (fresh) it->second.rank = rank, it->second.callsite = callsite, it->second.call = call;
    return it->second;
  }
  SiteOf site_of_;
  WaitStates w_;
};

template <typename SiteOf>
WaitStates add_up(size_t ranks, const std::vector<Wait>& waits, SiteOf site_of) {
  WaitSums<SiteOf> sums(ranks, std::move(site_of));
  for (const Wait& x : waits) sums.add(x);
  return sums.take();
}

auto trace_sites(const Trace& t) {
  return [&t](int rank, uint32_t op) {
    const Op& o = t.op(rank, op);
    return std::pair<uint32_t, uint32_t>{o.callsite, o.call};
  };
}

}  // namespace

// each wait added as found, in find_waits' order (the same sums, to the bit), none of them held: the
// analysis's peak is the trace's, not the trace's and its waits' (40 bytes each, one every four calls of
// a halo)
WaitStates measure_waits(const Trace& t, const LogGPS& model) {
  WaitSums sums(t.ranks.size(), trace_sites(t));
  each_wait(t, model, done_ops(t, Link::DoneSend), done_ops(t, Link::DoneRecv), [&](const Wait& w) { sums.add(w); });
  return sums.take();
}

WaitStates measure_waits(const Trace& t, const std::vector<Wait>& waits) { return add_up(t.ranks.size(), waits, trace_sites(t)); }

WaitStates measure_waits(const std::vector<OpStream>& streams, const std::vector<Wait>& waits) {
  // the ops the waits name (a waiter's; a late rank's, but at a collective), by rank in order, each once,
  // and their call sites and calls as one walk of each rank's stream finds them
  std::vector<std::vector<uint32_t>> ops(streams.size());
  for (const Wait& x : waits) {
    ops[x.rank].push_back(x.op);
    if (x.cause != WaitCause::Collective) ops[x.culprit].push_back(x.culprit_op);
  }
  std::vector<std::vector<std::pair<uint32_t, uint32_t>>> sites(streams.size());
  StreamOp op;
  for (size_t r = 0; r < streams.size(); r++) {
    auto& v = ops[r];
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
    v.shrink_to_fit();
    sites[r].reserve(v.size());
    OpCursor c(streams[r]);
    uint32_t k = 0;
    for (const uint32_t want : v) {
      while (k <= want && c.next(op)) k++;
      if (k != want + 1)
        throw std::out_of_range(fmt::format("measure_waits: rank {} has no op {}", r, want));
      sites[r].emplace_back(op.callsite, op.call);
    }
  }
  return add_up(streams.size(), waits, [&](int rank, uint32_t o) {
    const auto& v = ops[rank];
    return sites[rank][static_cast<size_t>(std::lower_bound(v.begin(), v.end(), o) - v.begin())];
  });
}

}  // namespace mpiadvise

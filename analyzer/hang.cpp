#include "hang.hpp"

#include <algorithm>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

namespace mpiadvise {

const char* hang_state_name(HangState::State s) {
  switch (s) {
    case HangState::State::Finished: return "finished";
    case HangState::State::InMpi: return "in MPI";
    case HangState::State::Computing: return "computing";
    case HangState::State::NoLog: return "no log";
  }
  return "?";
}

namespace {

// The ops that completed each side of every message (done_ops), made once for all the ranks in MPI.
struct Completions {
  std::vector<uint32_t> send, recv;
};

// Whom an unfinished op waits for, from what it posted; a completion (MPI_Wait and its family) from
// the rank's messages still pending at its entry.
void waits_of(const Trace& t, const Completions& done, int r, const Op& op, HangState::Rank* out) {
  std::set<int> who;
  auto comm_members = [&](uint32_t comm) {
    if (comm >= t.comms.size()) return;  // a communicator the log does not know
    for (int m : t.comms[comm].members)
      if (m != r) who.insert(m);
  };
  auto on_message = [&](const Message& m, bool receiving) {
    const int peer = receiving ? m.src : m.dst;
    if (peer >= 0 && peer != r) who.insert(peer);
    else if (peer < 0 && receiving) out->any_source = true, comm_members(m.comm);
  };
  const OpLinks links = t.links_of(op);
  bool linked = false;
  for (uint32_t l = 0; l < links.size(); l++) {
    if (links[l].id == kNone) continue;
    linked = true;
    switch (links[l].kind) {
      case Link::PostSend: on_message(t.messages[links[l].id], false); break;
      case Link::PostRecv: on_message(t.messages[links[l].id], true); break;
      case Link::PostColl:
      case Link::DoneColl: {
        // the members of its communicator that never entered this collective
        const CollectiveInstance c = t.collectives[links[l].id];
        std::set<int> in;
        for (const auto& [m, o] : c.members) in.insert(m);
        for (int m : t.comms[c.comm].members)
          if (!in.count(m)) who.insert(m);
        break;
      }
      default: break;
    }
  }
  if (!linked) {
    // a completion: the rank's messages posted earlier and never completed
    for (size_t id = 0; id < t.messages.size(); id++) {
      const Message& m = t.messages[id];
      const bool received = done.recv[id] != kNone;
      if (m.dst == r && m.recv_op != kNone && !received && m.recv_op < out->op) on_message(m, true);
      if (m.src == r && m.send_op != kNone && done.send[id] == kNone && m.send_op < out->op &&
          t.op(r, m.send_op).kind == OpKind::PostSend && (m.recv_op == kNone || !received))
        on_message(m, false);
    }
  }
  out->waits_for.assign(who.begin(), who.end());
}

// The same from the streams, `last` the rank's last op: its links with what its own stream carries of
// their other ends (a receive some send matched: its sender from the runs of sent ids; a collective: its
// instance); a completion from the rank's stream walked once, its posts not completed, and for its sends
// some receive matched, whether their receivers' streams complete that receive.
void waits_of(const Trace& t, const std::vector<OpStream>& streams, const Senders& senders, int r, const StreamOp& last,
              HangState::Rank* out) {
  std::set<int> who;
  auto comm_members = [&](uint32_t comm) {
    if (comm >= t.comms.size()) return;  // a communicator the log does not know
    for (int m : t.comms[comm].members)
      if (m != r) who.insert(m);
  };
  // a message's peer: a send's receiver, a receive's sender (-1: any source, of comm)
  auto on_peer = [&](int peer, bool receiving, uint32_t comm) {
    if (peer >= 0 && peer != r) who.insert(peer);
    else if (peer < 0 && receiving) out->any_source = true, comm_members(comm);
  };
  auto on_instance = [&](const StreamInstance& c) {
    // the members of its communicator that never entered this collective
    std::set<int> in;
    for (const auto& [m, o] : c.members) in.insert(m);
    for (int m : t.comms[c.comm].members)
      if (!in.count(m)) who.insert(m);
  };
  // the fields an op carries as the owner of one side of a message (posted: a message one op both sends
  // and receives, a rank's MPI_Sendrecv to itself, is owned by its send), null where it carries none
  auto carried = [](const StreamOp& op, uint32_t id, bool send) -> const StreamMessage* {
    for (const auto& p : op.posted)
      if (p.id == id && p.m->sent == send) return p.m;
    return nullptr;
  };
  // a collective instance an op entered (joined) or completed (left) as a member
  auto instance = [](const std::vector<StreamOp::Joined>& list, uint32_t id) -> const StreamInstance* {
    const auto it = std::find_if(list.begin(), list.end(), [&](const StreamOp::Joined& j) { return j.instance == id; });
    return it == list.end() ? nullptr : it->fields;
  };
  const OpLinks links = last.links();
  bool linked = false;
  for (uint32_t l = 0; l < links.size(); l++) {
    const Link link = links[l];
    if (link.id == kNone) continue;
    linked = true;
    switch (link.kind) {
      case Link::PostSend:
        if (const StreamMessage* m = carried(last, link.id, true)) on_peer(m->fields.dst, false, m->fields.comm);
        break;
      case Link::PostRecv:
        if (const StreamMessage* m = carried(last, link.id, false)) on_peer(m->fields.src, true, m->fields.comm);
        else on_peer(senders.of(link.id), true, kNone);
        break;
      case Link::PostColl:
        if (const StreamInstance* c = instance(last.joined, link.id)) on_instance(*c);
        break;
      case Link::DoneColl:  // (an unfinished op of build_trace's completes nothing: a hand-made trace's)
        if (const StreamInstance* c = instance(last.left, link.id)) on_instance(*c);
        break;
      default: break;
    }
  }
  if (!linked) {
    // a completion: the rank's messages posted before it and never completed (the completions, by any of
    // the rank's ops, are taken off once all are read). A receive's sender and communicator (kNone where
    // some send matched it: its sender is known); a send's fields. (The last op links nothing here.)
    std::map<uint32_t, std::pair<int, uint32_t>> receiving;
    std::map<uint32_t, const StreamMessage*> sending;
    std::set<uint32_t> received, sent;
    OpCursor c(streams[r]);
    StreamOp op;
    for (uint32_t i = 0; c.next(op); i++) {
      const OpLinks ls = op.links();
      for (uint32_t l = 0; l < ls.size(); l++) {
        const Link link = ls[l];
        if (link.id == kNone) continue;
        if (link.kind == Link::PostRecv && i < out->op) {
          if (const StreamMessage* m = carried(op, link.id, false)) receiving[link.id] = {m->fields.src, m->fields.comm};
          else receiving[link.id] = {senders.of(link.id), kNone};
        } else if (link.kind == Link::PostSend && i < out->op && op.kind == OpKind::PostSend) {
          if (const StreamMessage* m = carried(op, link.id, true)) sending[link.id] = m;
        } else if (link.kind == Link::DoneRecv) {
          received.insert(link.id);
        } else if (link.kind == Link::DoneSend) {
          sent.insert(link.id);
        }
      }
    }
    for (uint32_t id : received) receiving.erase(id);
    for (uint32_t id : sent) sending.erase(id);
    // a send some receive matched waits no more once its receiver completed that receive
    std::map<int, std::set<uint32_t>> answered;  // by receiver
    for (const auto& [id, m] : sending)
      if (m->answered && m->fields.dst >= 0 && static_cast<size_t>(m->fields.dst) < streams.size())
        answered[m->fields.dst].insert(id);
    for (auto& [dst, ids] : answered) {
      OpCursor theirs(streams[dst]);
      while (!ids.empty() && theirs.next(op)) {
        const OpLinks ls = op.links();
        for (uint32_t l = 0; l < ls.size(); l++)
          if (ls[l].kind == Link::DoneRecv && ids.erase(ls[l].id)) sending.erase(ls[l].id);
      }
    }
    for (const auto& [id, peer] : receiving) on_peer(peer.first, true, peer.second);
    for (const auto& [id, m] : sending) on_peer(m->fields.dst, false, m->fields.comm);
  }
  out->waits_for.assign(who.begin(), who.end());
}

// A rank's last op, as either reader gives it
struct LastOp {
  uint32_t index = 0;
  uint64_t t_enter = 0, t_exit = 0;
  uint8_t call = 0;
  bool unfinished = false;
};

// Where each rank was at the end: its last op from last_of(r) (none where it has no op), whom an
// unfinished one waits for from waits(r, x), called right after last_of(r); then the wait-for graph's
// cycles and the ranks waited for.
template <typename Last, typename Waits>
HangState hang_state_of(const Trace& t, int P, Last last_of, Waits waits) {
  HangState h;
  for (int r = 0; r < P; r++) {
    HangState::Rank x;
    x.rank = r;
    const std::optional<LastOp> last = last_of(r);
    if (!last && t.ranks[r].calls_before) {
      // every call of it before the part analysed (--from): where its log ended (no op of the part to name)
      const auto& b = t.ranks[r].last_before;
      x.state = b.finalized    ? HangState::State::Finished
                : b.unfinished ? HangState::State::InMpi
                               : HangState::State::Computing;
      x.since_ns = static_cast<double>(b.unfinished ? b.enter_ns : b.exit_ns);
      h.end_ns = std::max(h.end_ns, static_cast<double>(b.exit_ns));
    } else if (!last) {
      x.state = HangState::State::NoLog;
    } else {
      x.op = last->index;
      h.end_ns = std::max(h.end_ns, static_cast<double>(last->t_exit));
      // a rank cut off by --until (Trace::cut_ns) went on after the part analysed: as if it finished
      if (t.ranks[r].cut || (last->call == MPA_CALL_Finalize && !last->unfinished)) {
        x.state = HangState::State::Finished;
      } else if (last->unfinished) {
        x.state = HangState::State::InMpi;
        x.since_ns = static_cast<double>(last->t_enter);
        waits(r, &x);
      } else {
        x.state = HangState::State::Computing;
        x.since_ns = static_cast<double>(last->t_exit);
      }
    }
    if (x.state == HangState::State::InMpi || x.state == HangState::State::Computing) h.finished = false;
    h.ranks.push_back(std::move(x));
  }
  if (h.finished) return h;
  // cycles: follow each rank's first wait not yet explained, colouring as a depth-first search does
  std::vector<int> colour(static_cast<size_t>(P), 0), stack;
  std::set<std::vector<int>> seen;
  std::function<void(int)> visit = [&](int r) {
    colour[r] = 1;
    stack.push_back(r);
    for (int p : h.ranks[r].waits_for) {
      if (p < 0 || p >= P) continue;
      if (colour[p] == 1) {
        std::vector<int> cycle(std::find(stack.begin(), stack.end(), p), stack.end());
        std::vector<int> key = cycle;
        std::rotate(key.begin(), std::min_element(key.begin(), key.end()), key.end());
        if (seen.insert(key).second) h.deadlocks.push_back(key);
      } else if (colour[p] == 0) {
        visit(p);
      }
    }
    stack.pop_back();
    colour[r] = 2;
  };
  for (int r = 0; r < P; r++)
    if (colour[r] == 0 && h.ranks[r].state == HangState::State::InMpi) visit(r);
  // the ranks waited for that do not wait themselves
  std::set<int> held;
  for (const auto& x : h.ranks)
    if (x.state == HangState::State::InMpi && !x.any_source)
      for (int p : x.waits_for)
        if (p >= 0 && p < P && (h.ranks[p].state != HangState::State::InMpi || h.ranks[p].waits_for.empty())) held.insert(p);
  h.waited_for.assign(held.begin(), held.end());
  return h;
}

}  // namespace

HangState hang_state(const Trace& t) {
  std::optional<Completions> done;
  return hang_state_of(
      t, static_cast<int>(t.ranks.size()),
      [&](int r) -> std::optional<LastOp> {
        const auto& ops = t.ranks[r].ops;
        if (ops.empty()) return std::nullopt;
        const Op& last = ops.back();
        return LastOp{static_cast<uint32_t>(ops.size() - 1), last.t_enter, last.t_exit(), last.call, last.unfinished};
      },
      [&](int r, HangState::Rank* x) {
        if (!done) done = Completions{done_ops(t, Link::DoneSend), done_ops(t, Link::DoneRecv)};
        waits_of(t, *done, r, t.ranks[r].ops.back(), x);
      });
}

HangState hang_state(const Trace& t, const std::vector<OpStream>& streams) {
  if (t.ranks.size() != streams.size())
    throw std::invalid_argument(fmt::format("hang: {} ranks' op streams for a trace of {} ranks", streams.size(), t.ranks.size()));
  std::optional<Senders> senders;
  StreamOp op;
  return hang_state_of(
      t, static_cast<int>(streams.size()),
      [&](int r) -> std::optional<LastOp> {
        if (streams[r].ops() == 0) return std::nullopt;
        OpCursor c(streams[r]);
        c.seek(streams[r].ops() - 1);
        c.next(op);
        return LastOp{static_cast<uint32_t>(streams[r].ops() - 1), op.t_enter, op.t_exit(), op.call, op.unfinished};
      },
      [&](int r, HangState::Rank* x) {  // (op: r's last, last_of's just before)
        if (!senders) senders.emplace(streams);
        waits_of(t, streams, *senders, r, op, x);
      });
}

}  // namespace mpiadvise

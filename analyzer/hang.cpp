#include "hang.hpp"

#include <algorithm>
#include <functional>
#include <optional>
#include <set>

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

}  // namespace

HangState hang_state(const Trace& t) {
  HangState h;
  const int P = static_cast<int>(t.ranks.size());
  std::optional<Completions> done;
  for (int r = 0; r < P; r++) {
    HangState::Rank x;
    x.rank = r;
    const auto& ops = t.ranks[r].ops;
    if (ops.empty() && t.ranks[r].calls_before) {
      // every call of it before the part analysed (--from): where its log ended (no op of the part to name)
      const auto& b = t.ranks[r].last_before;
      x.state = b.finalized    ? HangState::State::Finished
                : b.unfinished ? HangState::State::InMpi
                               : HangState::State::Computing;
      x.since_ns = static_cast<double>(b.unfinished ? b.enter_ns : b.exit_ns);
      h.end_ns = std::max(h.end_ns, static_cast<double>(b.exit_ns));
    } else if (ops.empty()) {
      x.state = HangState::State::NoLog;
    } else {
      const Op& last = ops.back();
      x.op = static_cast<uint32_t>(ops.size() - 1);
      h.end_ns = std::max(h.end_ns, static_cast<double>(last.t_exit()));
      // a rank cut off by --until (Trace::cut_ns) went on after the part analysed: as if it finished
      if (t.ranks[r].cut || (last.call == MPA_CALL_Finalize && !last.unfinished)) {
        x.state = HangState::State::Finished;
      } else if (last.unfinished) {
        x.state = HangState::State::InMpi;
        x.since_ns = static_cast<double>(last.t_enter);
        if (!done) done = Completions{done_ops(t, Link::DoneSend), done_ops(t, Link::DoneRecv)};
        waits_of(t, *done, r, last, &x);
      } else {
        x.state = HangState::State::Computing;
        x.since_ns = static_cast<double>(last.t_exit());
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

}  // namespace mpiadvise

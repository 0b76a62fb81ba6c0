#include "receive_side.hpp"

#include <algorithm>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <optional>
#include <queue>
#include <utility>

#include "measured_walk.hpp"

namespace mpiadvise {

namespace {

// Intervals [start, end) with a weight, given in any order but none with a change before the time last
// settled: the most at once (of the count and of the weight), the integral of the count over time, and
// the most at once in each of `steps` steps of `step` ns from `start`, with when the most of all was first
// reached. The changes are folded in time order, at equal times the ends first, as a sort of them all
// would; those not folded yet are held (16 bytes each).
class Sweep {
 public:
  explicit Sweep(double start = 0, double step = 0, size_t steps = 0) : start_(start), step_(step), steps_(steps, 0) {}
  void add(uint64_t start, uint64_t end, uint64_t w) {
    if (end <= start) return;
    count_.push({start, 1}), count_.push({end, -1});
    if (w) weight_.push({start, static_cast<int64_t>(w)}), weight_.push({end, -static_cast<int64_t>(w)});
  }
  // An interval of the count (no weight) given in two (start_at, end_at): its start, then its end, no earlier than the time
  // settled when its start was given (an interval ending where it starts is none: its start is taken back,
  // which has not been folded then).
  void start_at(uint64_t start) { count_.push({start, 1}); }
  void end_at(uint64_t start, uint64_t end) {
    if (end > start) count_.push({end, -1});
    else taken_back_[start]++;
  }
  // No change before `before` is still to come: fold those held.
  void settle(uint64_t before) {
    while (!count_.empty() && count_.top().first < before) fold_count();
    while (!weight_.empty() && weight_.top().first < before) weight_now_ += take(weight_).second, weight_most_ = std::max(weight_most_, weight_now_);
  }
  // Every change has been given.
  void finish() {
    settle(std::numeric_limits<uint64_t>::max());
    while (!count_.empty()) fold_count();
    while (!weight_.empty()) weight_now_ += take(weight_).second, weight_most_ = std::max(weight_most_, weight_now_);
    if (instant_) close(*instant_, std::nullopt);
    instant_.reset();
  }
  size_t held() const { return count_.size() + weight_.size() + taken_back_.size(); }
  uint64_t most() const { return static_cast<uint64_t>(most_); }
  uint64_t most_weight() const { return static_cast<uint64_t>(weight_most_); }
  double integral() const { return integral_; }
  const std::vector<uint32_t>& by_step() const { return steps_; }
  double peak_at() const { return peak_at_; }

 private:
  using Change = std::pair<uint64_t, int64_t>;  // (time, +1/-1 or +w/-w)
  using Heap = std::priority_queue<Change, std::vector<Change>, std::greater<>>;
  static Change take(Heap& h) {
    const Change c = h.top();
    h.pop();
    return c;
  }
  void fold_count() {
    const Change c = take(count_);
    if (c.second > 0 && !taken_back_.empty())
      if (const auto it = taken_back_.find(c.first); it != taken_back_.end()) {
        if (--it->second == 0) taken_back_.erase(it);
        return;
      }
    fold(c);
  }
  void fold(const Change& c) {
    const auto [t, d] = c;
    if (instant_ && *instant_ != t) close(*instant_, t);  // the last change of the instant before
    if (instant_) integral_ += static_cast<double>(now_) * static_cast<double>(t - *instant_);
    instant_ = t;
    now_ += d;
    most_ = std::max(most_, now_);
  }
  // The count after the instant t's last change holds until the next change's instant.
  void close(uint64_t t, std::optional<uint64_t> next) {
    if (now_ > peak_) peak_ = now_, peak_at_ = static_cast<double>(t) - start_;
    if (now_ <= 0 || steps_.empty()) return;
    const double from = static_cast<double>(t);
    const double until = next ? std::max(from, static_cast<double>(*next) - 1) : from;
    for (size_t k = step_of(from); k <= step_of(until); k++) steps_[k] = std::max(steps_[k], static_cast<uint32_t>(now_));
  }
  size_t step_of(double ns) const {
    const double k = step_ > 0 ? (ns - start_) / step_ : 0;
    return static_cast<size_t>(std::clamp(k, 0.0, static_cast<double>(steps_.size() - 1)));
  }

  double start_, step_;
  std::vector<uint32_t> steps_;
  Heap count_, weight_;
  std::map<uint64_t, uint32_t> taken_back_;  // starts given by start_at() whose interval is none
  std::optional<uint64_t> instant_;  // the time of the last change folded
  int64_t now_ = 0, most_ = 0, peak_ = 0, weight_now_ = 0, weight_most_ = 0;
  double integral_ = 0, peak_at_ = 0;
};

// When a matched message reaches its receiver after its send's post at send_enter (an eager message's
// data after the send overhead and the transfer, data sent again unchanged at its [resend] price as the
// replay has it; a rendezvous message's request after o' + L), and the bytes an eager one has the library
// buffer.
struct Arrival {
  uint64_t at = 0, buffered = 0;
};
Arrival arrival(const LogGPS& model, const ResentModels& resent, const Message& m, uint64_t send_enter) {
  const bool eager = !model.send_waits_for_receive(m.bytes, m.synchronous);
  const LogGPS& priced = resent.of(model, m.bytes, m.cached);
  const double offset = eager ? priced.T1(m.bytes) + priced.transfer(m.bytes) : model.params().o + model.params().L;
  return {send_enter + static_cast<uint64_t>(std::max(0.0, offset)), eager ? m.bytes : 0};
}

// The queues of each rank over the run's window (every rank's, on rank 0's clock), and what is made of
// them at the end.
struct Queues {
  ReceiveSide out;
  std::vector<Sweep> unexpected, outstanding;
  explicit Queues(const std::vector<ReplayWindow>& windows) {
    const size_t n = windows.size();
    out.ranks.resize(n);
    for (size_t r = 0; r < n; r++) out.ranks[r].rank = static_cast<int>(r);
    double first = std::numeric_limits<double>::max(), last = 0;
    for (const ReplayWindow& w : windows) {
      if (w.end <= w.first) continue;
      first = std::min(first, static_cast<double>(w.start_ns));
      last = std::max(last, static_cast<double>(w.stop_ns));
    }
    if (last < first) first = last = 0;
    out.start_ns = first;
    out.step_ns = std::max(0.0, last - first) / static_cast<double>(ReceiveSide::kQueueSteps);
    unexpected.assign(n, Sweep(out.start_ns, out.step_ns, ReceiveSide::kQueueSteps));
    outstanding.assign(n, Sweep());
  }
  // a matched message's receive posted at recv_enter, on rank dst
  void receive(size_t dst, const Arrival& a, uint64_t recv_enter) {
    auto& rr = out.ranks[dst];
    rr.receives++, out.receives++;
    if (recv_enter <= a.at)
      rr.posted_early++, out.posted_early++;
    else
      unexpected[dst].add(a.at, recv_enter, a.buffered);
  }
  // rank r's sweeps done: what they say, and their memory let go
  void close(size_t r, const ReplayWindow& w) {
    auto& rr = out.ranks[r];
    Sweep& u = unexpected[r];
    u.finish();
    outstanding[r].finish();
    rr.unexpected_by_step = u.by_step();
    rr.unexpected_peak_ns = u.peak_at();
    rr.unexpected_max = u.most();
    rr.unexpected_max_bytes = u.most_weight();
    rr.outstanding_sends_max = outstanding[r].most();
    if (w.end > w.first && w.stop_ns > w.start_ns) rr.unexpected_mean = u.integral() / static_cast<double>(w.stop_ns - w.start_ns);
    u = Sweep(), outstanding[r] = Sweep();
  }
};

// The matched messages between ranks of the trace, by receiver and by sender: each rank's ids are
// [start[r], start[r + 1]) of ids. 8 bytes a message, where the sweeps of every rank held at once took up to
// 64 (mpiadvise-synth's halo of 64 x 10^5 calls: 60 MB above the report's other memory at its peak).
struct ByRank {
  std::vector<uint32_t> start, ids;
  template <typename RankOf>
  ByRank(const Trace& t, RankOf rank_of) : start(t.ranks.size() + 1, 0) {
    auto kept = [&](const Message& m) {
      const size_t n = t.ranks.size();
      return m.matched() && m.src >= 0 && m.dst >= 0 && static_cast<size_t>(m.src) < n && static_cast<size_t>(m.dst) < n;
    };
    for (const Message& m : t.messages)
      if (kept(m)) start[rank_of(m) + 1]++;
    for (size_t r = 0; r + 1 < start.size(); r++) start[r + 1] += start[r];
    ids.resize(start.back());
    std::vector<uint32_t> next(start.begin(), start.end() - 1);
    for (uint32_t id = 0; id < t.messages.size(); id++)
      if (kept(t.messages[id])) ids[next[rank_of(t.messages[id])]++] = id;
  }
  template <typename F>
  void each(size_t r, F&& f) const {
    for (uint32_t k = start[r]; k < start[r + 1]; k++) f(ids[k]);
  }
};

}  // namespace

ReceiveSide receive_side(const Trace& t, const LogGPS& model) {
  const size_t n = t.ranks.size();
  std::vector<ReplayWindow> windows(n);
  for (size_t r = 0; r < n; r++) windows[r] = replay_window(t.ranks[r]);
  Queues q(windows);
  const ResentModels resent(model.params());
  const std::vector<uint32_t> send_done = done_ops(t, Link::DoneSend);
  const ByRank to(t, [](const Message& m) { return static_cast<size_t>(m.dst); });
  const ByRank from(t, [](const Message& m) { return static_cast<size_t>(m.src); });
  // rank by rank, each rank's sweeps made and dropped in turn
  for (size_t r = 0; r < n; r++) {
    to.each(r, [&](uint32_t id) {
      const Message& m = t.messages[id];
      q.receive(r, arrival(model, resent, m, t.op(m.src, m.send_op).t_enter), t.op(m.dst, m.recv_op).t_enter);
    });
    from.each(r, [&](uint32_t id) {
      const Message& m = t.messages[id];
      const Op& send = t.op(m.src, m.send_op);
      if (send.kind != OpKind::PostSend) return;
      const auto& ops = t.ranks[m.src].ops;
      const uint64_t done = send_done[id] != kNone ? t.op(m.src, send_done[id]).t_exit() : ops.back().t_exit();
      q.outstanding[r].add(send.t_enter, done, 0);
    });
    q.close(r, windows[r]);
  }
  return std::move(q.out);
}

ReceiveSide receive_side(const std::vector<OpStream>& streams, const LogGPS& model, ReceiveSideHeld* held) {
  const size_t n = streams.size();
  std::vector<ReplayWindow> windows(n);
  for (size_t r = 0; r < n; r++) windows[r] = streams[r].window();
  Queues q(windows);
  const ResentModels resent(model.params());
  // a matched message from the first of its posts met until it has given its receive and, sent by a
  // non-blocking call, its time outstanding (HeldMessages, as find_waits' walk)
  enum : uint8_t { kSend = 1, kRecv = 2, kDone = 4, kReceived = 8, kOpened = 16, kOutstanding = 32 };
  struct InFlight {
    Arrival arrival;
    uint64_t send_enter = 0, recv_enter = 0, done_exit = 0;
    uint32_t src = 0, dst = 0;
    uint8_t met = 0;
    bool nonblocking = false;
  };
  uint32_t ids = 0;
  for (const OpStream& s : streams) ids = std::max(ids, s.message_ids());
  HeldMessages<InFlight> messages(ids);
  ReceiveSideHeld most;
  // Where every rank's entries go up, the walk meets the ops in the order of their entries: no change is
  // still to come before the earliest of the current op's entry and the send entries of the messages
  // held whose send was met and whose receive was not (a message's changes start at its send's post or
  // after; a non-blocking send's end, given later, at the exit of an op not yet met). Their sends, in the
  // order met (that of their entries), each let go from the front once its receive is met.
  const bool sorted = std::all_of(streams.begin(), streams.end(), [](const OpStream& s) { return s.entries_sorted(); });
  std::deque<std::pair<uint64_t, uint32_t>> sends;
  std::vector<uint64_t> last_exit(n, 0);
  auto settle = [&](uint64_t now) {
    // a send's message keeps the bound at its send's entry until its receive is met (its arrival is then
    // given); its time outstanding was given from its start when the send was met
    while (!sends.empty() && (!messages.held(sends.front().second) || (messages[sends.front().second].met & kReceived)))
      sends.pop_front();
    const uint64_t before = sends.empty() ? now : std::min(now, sends.front().first);
    size_t changes = 0;
    for (size_t r = 0; r < n; r++) {
      changes += q.unexpected[r].held() + q.outstanding[r].held();
      q.unexpected[r].settle(before), q.outstanding[r].settle(before);
    }
    most.changes = std::max(most.changes, changes);
  };
  constexpr uint64_t kSettleEvery = 4096;  // ops walked
  uint64_t walked = 0;
  auto sender_fields = [](const std::vector<StreamOp::Posted>& v, uint32_t id) -> const StreamMessage* {
    for (const StreamOp::Posted& p : v)
      if (p.id == id) return p.m->sent && p.m->answered ? p.m : nullptr;
    return nullptr;
  };
  walk_by_entry(streams, [&](int r, uint32_t, const StreamOp& op) {
    last_exit[r] = op.t_exit();
    const OpLinks links = op.links();
    for (uint32_t k = 0; k < links.size(); k++) {
      const Link l = links[k];
      if (l.id >= messages.ids()) continue;
      const StreamMessage* sm = nullptr;
      if (l.kind == Link::PostSend) {
        sm = sender_fields(op.posted, l.id);
      } else if (l.kind == Link::PostRecv) {
        sm = sender_fields(op.received, l.id);
      } else if (l.kind == Link::DoneSend) {
        // a blocking send's completion, in its post's op, gives nothing (its message may be let go)
        bool posted_here = false;
        for (uint32_t j = 0; j < links.size(); j++) posted_here |= links[j].kind == Link::PostSend && links[j].id == l.id;
        if (!posted_here) sm = sender_fields(op.completed, l.id);
      }
      if (!sm || sm->fields.src < 0 || sm->fields.dst < 0 || static_cast<size_t>(sm->fields.src) >= n ||
          static_cast<size_t>(sm->fields.dst) >= n)
        continue;
      InFlight& m = messages.at(l.id);
      m.src = static_cast<uint32_t>(sm->fields.src), m.dst = static_cast<uint32_t>(sm->fields.dst);
      if (l.kind == Link::PostSend) {
        m.met |= kSend;
        m.send_enter = op.t_enter;
        m.nonblocking = op.kind == OpKind::PostSend;
        m.arrival = arrival(model, resent, sm->fields, op.t_enter);
        if (sorted) sends.emplace_back(op.t_enter, l.id);
      } else if (l.kind == Link::PostRecv) {
        m.met |= kRecv, m.recv_enter = op.t_enter;
      } else {
        m.met |= kDone, m.done_exit = op.t_exit();
      }
      if ((m.met & (kSend | kRecv | kReceived)) == (kSend | kRecv)) {
        q.receive(m.dst, m.arrival, m.recv_enter);
        m.met |= kReceived;
      }
      // a non-blocking send outstanding: its start given once its send is met, its end once the op that
      // completed it is (no earlier than that op's entry), or both at once where that op came first
      if (m.nonblocking && (m.met & (kSend | kDone | kOpened | kOutstanding)) == kSend) {
        q.outstanding[m.src].start_at(m.send_enter);
        m.met |= kOpened;
      }
      if (m.nonblocking && (m.met & (kSend | kDone | kOutstanding)) == (kSend | kDone)) {
        if (m.met & kOpened) q.outstanding[m.src].end_at(m.send_enter, m.done_exit);
        else q.outstanding[m.src].add(m.send_enter, m.done_exit, 0);
        m.met |= kOutstanding;
      }
      if ((m.met & kReceived) && (!m.nonblocking || (m.met & kOutstanding))) {
        messages.let_go(l.id);
      }
    }
    if (sorted && ++walked % kSettleEvery == 0) settle(op.t_enter);
  });
  // what the walk left: non-blocking sends no op completed (a request freed), outstanding to their rank's
  // last op's exit
  messages.each_held([&](uint32_t, const InFlight& m) {
    if ((m.met & kOpened) && !(m.met & kOutstanding)) q.outstanding[m.src].end_at(m.send_enter, last_exit[m.src]);
  });
  most.messages = messages.most();
  size_t changes = 0;
  for (size_t r = 0; r < n; r++) changes += q.unexpected[r].held() + q.outstanding[r].held();
  most.changes = std::max(most.changes, changes);
  for (size_t r = 0; r < n; r++) q.close(r, windows[r]);
  if (held) *held = most;
  return std::move(q.out);
}

}  // namespace mpiadvise

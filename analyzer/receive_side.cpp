#include "receive_side.hpp"

#include <algorithm>
#include <limits>
#include <utility>

namespace mpiadvise {

namespace {

// Intervals [start, end) with a weight: the most weight at once, and the integral of the count over time.
struct Sweep {
  std::vector<std::pair<uint64_t, int64_t>> count, weight;  // (time, +1/-1) and (time, +w/-w)
  void add(uint64_t start, uint64_t end, uint64_t w) {
    if (end <= start) return;
    count.emplace_back(start, 1), count.emplace_back(end, -1);
    if (w) weight.emplace_back(start, static_cast<int64_t>(w)), weight.emplace_back(end, -static_cast<int64_t>(w));
  }
  static uint64_t peak(std::vector<std::pair<uint64_t, int64_t>>& v) {
    std::sort(v.begin(), v.end());  // at equal times the ends (negative) first
    int64_t now = 0, most = 0;
    for (const auto& [t, d] : v) most = std::max(most, now += d);
    return static_cast<uint64_t>(most);
  }
  // The most at once in each of `steps` steps of `step` ns from `start`, and when the most was first
  // reached.
  void by_step(double start, double step, size_t steps, std::vector<uint32_t>* most, double* peak_at) {
    most->assign(steps, 0);
    std::sort(count.begin(), count.end());
    int64_t now = 0, peak = 0;
    auto step_of = [&](double ns) {
      const double k = step > 0 ? (ns - start) / step : 0;
      return static_cast<size_t>(std::clamp(k, 0.0, static_cast<double>(steps - 1)));
    };
    for (size_t i = 0; i < count.size(); i++) {
      now += count[i].second;
      if (i + 1 < count.size() && count[i + 1].first == count[i].first) continue;  // the instant's last change
      if (now > peak) peak = now, *peak_at = static_cast<double>(count[i].first) - start;
      if (now <= 0) continue;
      const double from = static_cast<double>(count[i].first);
      const double until = i + 1 < count.size() ? std::max(from, static_cast<double>(count[i + 1].first) - 1) : from;
      for (size_t k = step_of(from); k <= step_of(until); k++)
        (*most)[k] = std::max((*most)[k], static_cast<uint32_t>(now));
    }
  }
  double integral() {
    std::sort(count.begin(), count.end());
    double sum = 0;
    int64_t now = 0;
    for (size_t i = 0; i < count.size(); i++) {
      if (i > 0) sum += static_cast<double>(now) * static_cast<double>(count[i].first - count[i - 1].first);
      now += count[i].second;
    }
    return sum;
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
  ReceiveSide out;
  const size_t n = t.ranks.size();
  out.ranks.resize(n);
  for (size_t r = 0; r < n; r++) out.ranks[r].rank = static_cast<int>(r);
  const ResentModels resent(model.params());
  const std::vector<uint32_t> send_done = done_ops(t, Link::DoneSend);
  const ByRank to(t, [](const Message& m) { return static_cast<size_t>(m.dst); });
  const ByRank from(t, [](const Message& m) { return static_cast<size_t>(m.src); });
  double first = std::numeric_limits<double>::max(), last = 0;
  for (size_t r = 0; r < n; r++) {
    const ReplayWindow w = replay_window(t.ranks[r]);
    if (w.end <= w.first) continue;
    first = std::min(first, static_cast<double>(w.start_ns));
    last = std::max(last, static_cast<double>(w.stop_ns));
  }
  if (last < first) first = last = 0;
  out.start_ns = first;
  out.step_ns = std::max(0.0, last - first) / static_cast<double>(ReceiveSide::kQueueSteps);
  // rank by rank, each rank's sweeps made and dropped in turn
  for (size_t r = 0; r < n; r++) {
    auto& rr = out.ranks[r];
    Sweep unexpected, outstanding;
    to.each(r, [&](uint32_t id) {
      const Message& m = t.messages[id];
      const Op& send = t.op(m.src, m.send_op);
      const Op& recv = t.op(m.dst, m.recv_op);
      const bool eager = !model.send_waits_for_receive(m.bytes, m.synchronous);
      // an eager message's data, or a rendezvous message's request, reaches the receiver; data sent again
      // unchanged at its [resend] price, as the replay has it
      const LogGPS& priced = resent.of(model, m.bytes, m.cached);
      const double arrival_offset = eager ? priced.T1(m.bytes) + priced.transfer(m.bytes) : model.params().o + model.params().L;
      const uint64_t arrival = send.t_enter + static_cast<uint64_t>(std::max(0.0, arrival_offset));
      rr.receives++;
      out.receives++;
      if (recv.t_enter <= arrival) {
        rr.posted_early++;
        out.posted_early++;
      } else {
        unexpected.add(arrival, recv.t_enter, eager ? m.bytes : 0);
      }
    });
    from.each(r, [&](uint32_t id) {
      const Message& m = t.messages[id];
      const Op& send = t.op(m.src, m.send_op);
      if (send.kind != OpKind::PostSend) return;
      const auto& ops = t.ranks[m.src].ops;
      const uint64_t done = send_done[id] != kNone ? t.op(m.src, send_done[id]).t_exit() : ops.back().t_exit();
      outstanding.add(send.t_enter, done, 0);
    });
    unexpected.by_step(out.start_ns, out.step_ns, ReceiveSide::kQueueSteps, &rr.unexpected_by_step, &rr.unexpected_peak_ns);
    rr.unexpected_max = Sweep::peak(unexpected.count);
    rr.unexpected_max_bytes = Sweep::peak(unexpected.weight);
    rr.outstanding_sends_max = Sweep::peak(outstanding.count);
    const ReplayWindow w = replay_window(t.ranks[r]);
    if (w.end > w.first && w.stop_ns > w.start_ns)
      rr.unexpected_mean = unexpected.integral() / static_cast<double>(w.stop_ns - w.start_ns);
  }
  return out;
}

}  // namespace mpiadvise

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

}  // namespace

ReceiveSide receive_side(const Trace& t, const LogGPS& model) {
  ReceiveSide out;
  const size_t n = t.ranks.size();
  std::vector<Sweep> unexpected(n), outstanding(n);
  out.ranks.resize(n);
  for (size_t r = 0; r < n; r++) out.ranks[r].rank = static_cast<int>(r);
  const ResentModels resent(model.params());
  const std::vector<uint32_t> send_done = done_ops(t, Link::DoneSend);
  for (size_t id = 0; id < t.messages.size(); id++) {
    const Message& m = t.messages[id];
    if (!m.matched() || m.src < 0 || m.dst < 0 || static_cast<size_t>(m.src) >= n || static_cast<size_t>(m.dst) >= n)
      continue;
    const Op& send = t.op(m.src, m.send_op);
    const Op& recv = t.op(m.dst, m.recv_op);
    const bool eager = !model.send_waits_for_receive(m.bytes, m.synchronous);
    // an eager message's data, or a rendezvous message's request, reaches the receiver; data sent again
    // unchanged at its [resend] price, as the replay has it
    const LogGPS& priced = resent.of(model, m.bytes, m.cached);
    const double arrival_offset = eager ? priced.T1(m.bytes) + priced.transfer(m.bytes) : model.params().o + model.params().L;
    const uint64_t arrival = send.t_enter + static_cast<uint64_t>(std::max(0.0, arrival_offset));
    auto& rr = out.ranks[m.dst];
    rr.receives++;
    out.receives++;
    if (recv.t_enter <= arrival) {
      rr.posted_early++;
      out.posted_early++;
    } else {
      unexpected[m.dst].add(arrival, recv.t_enter, eager ? m.bytes : 0);
    }
    if (send.kind == OpKind::PostSend) {
      const auto& ops = t.ranks[m.src].ops;
      const uint64_t done = send_done[id] != kNone ? t.op(m.src, send_done[id]).t_exit() : ops.back().t_exit();
      outstanding[m.src].add(send.t_enter, done, 0);
    }
  }
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
  for (size_t r = 0; r < n; r++) {
    auto& rr = out.ranks[r];
    unexpected[r].by_step(out.start_ns, out.step_ns, ReceiveSide::kQueueSteps, &rr.unexpected_by_step, &rr.unexpected_peak_ns);
    rr.unexpected_max = Sweep::peak(unexpected[r].count);
    rr.unexpected_max_bytes = Sweep::peak(unexpected[r].weight);
    rr.outstanding_sends_max = Sweep::peak(outstanding[r].count);
    const ReplayWindow w = replay_window(t.ranks[r]);
    if (w.end > w.first && w.stop_ns > w.start_ns)
      rr.unexpected_mean = unexpected[r].integral() / static_cast<double>(w.stop_ns - w.start_ns);
  }
  return out;
}

}  // namespace mpiadvise

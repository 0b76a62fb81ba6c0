#include "receive_side.hpp"

#include <algorithm>
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
  for (const auto& m : t.messages) {
    if (!m.matched() || m.src < 0 || m.dst < 0 || static_cast<size_t>(m.src) >= n || static_cast<size_t>(m.dst) >= n)
      continue;
    const Op& send = t.op(m.src, m.send_op);
    const Op& recv = t.op(m.dst, m.recv_op);
    const bool eager = !model.send_waits_for_receive(m.bytes, m.synchronous);
    // an eager message's data, or a rendezvous message's request, reaches the receiver
    const double arrival_offset = eager ? model.T1(m.bytes) + model.transfer(m.bytes) : model.params().o + model.params().L;
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
      const uint64_t done = m.send_done_op != kNone ? t.op(m.src, m.send_done_op).t_exit : ops.back().t_exit;
      outstanding[m.src].add(send.t_enter, done, 0);
    }
  }
  for (size_t r = 0; r < n; r++) {
    auto& rr = out.ranks[r];
    rr.unexpected_max = Sweep::peak(unexpected[r].count);
    rr.unexpected_max_bytes = Sweep::peak(unexpected[r].weight);
    rr.outstanding_sends_max = Sweep::peak(outstanding[r].count);
    const auto& ops = t.ranks[r].ops;
    if (!ops.empty() && ops.back().t_exit > ops.front().t_enter)
      rr.unexpected_mean = unexpected[r].integral() / static_cast<double>(ops.back().t_exit - ops.front().t_enter);
  }
  return out;
}

}  // namespace mpiadvise

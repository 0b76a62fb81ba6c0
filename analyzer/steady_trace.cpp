#include "steady_trace.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>
#include <tuple>

#include <fmt/format.h>

namespace mpiadvise {

namespace {

// Ops the replay gives their measured duration.
bool replayed_as_measured(OpKind k) { return k == OpKind::Probe || k == OpKind::Polling || k == OpKind::Other; }

// q-quantile of sorted values, interpolated
double quantile(const std::vector<double>& sorted, double q) {
  const double at = q * static_cast<double>(sorted.size() - 1);
  const size_t i = static_cast<size_t>(at);
  if (i + 1 >= sorted.size()) return sorted.back();
  return sorted[i] + (at - static_cast<double>(i)) * (sorted[i + 1] - sorted[i]);
}

constexpr double kSpreadFloorNs = 1000;     // 1 us: below it, clock and cache effects
constexpr double kSpreadFloorShare = 0.05;  // of the median
constexpr double kFence = 3;                // Tukey's far-out fence, in spreads above Q3
constexpr double kIqrToSd = 1.349;          // IQR of a normal distribution, in standard deviations

// The statistics of one interval from its instances (of rank r), and which of them were pauses.
IntervalStats settle(const Trace& trace, size_t r, std::vector<MeasuredInterval*>& instances) {
  IntervalStats s;
  if (instances.size() < kMinRepeats) return s;  // a one-off: its instances kept as measured
  std::vector<double> v;
  v.reserve(instances.size());
  for (auto* x : instances) v.push_back(SteadyIntervals::measured_ns(trace, r, *x));
  std::sort(v.begin(), v.end());
  const double median = quantile(v, 0.5), q1 = quantile(v, 0.25), q3 = quantile(v, 0.75);
  const double spread = std::max({q3 - q1, kSpreadFloorShare * median, kSpreadFloorNs});
  const double fence = q3 + kFence * spread;
  for (auto* x : instances) x->replaced = SteadyIntervals::measured_ns(trace, r, *x) > fence;
  s.median_ns = median;
  s.noise_ns = spread / kIqrToSd;
  s.repeated = true;
  return s;
}

}  // namespace

double SteadyIntervals::measured_ns(const Trace& trace, size_t rank, const MeasuredInterval& x) {
  const Op& op = trace.ranks[rank].ops[x.op];
  if (x.duration) return op.t_exit > op.t_enter ? static_cast<double>(op.t_exit - op.t_enter) : 0;
  const Op& before = trace.ranks[rank].ops[x.op - 1];
  return op.t_enter > before.t_exit ? static_cast<double>(op.t_enter - before.t_exit) : 0;
}

SteadyIntervals steady_intervals(const Trace& trace) {
  SteadyIntervals out;
  out.ranks.resize(trace.ranks.size());
  out.stats.resize(trace.ranks.size());
  for (size_t r = 0; r < trace.ranks.size(); r++) {
    const auto& ops = trace.ranks[r].ops;
    const ReplayWindow w = replay_window(trace.ranks[r]);
    auto& list = out.ranks[r];
    // the gaps before each replayed op and before MPI_Finalize (the replay runs up to its entry)
    const uint32_t last_gap = w.end < ops.size() ? w.end : w.end - 1;
    for (uint32_t i = w.first; i <= last_gap && i < ops.size(); i++) {
      if (i > 0) {
        MeasuredInterval gap;
        gap.op = i;
        list.push_back(gap);
      }
      if (i < w.end && replayed_as_measured(ops[i].kind)) {
        MeasuredInterval d;
        d.op = i;
        d.duration = 1;
        list.push_back(d);
      }
    }
    // the instances of each interval: a gap between the same two call sites, a duration at one site
    std::map<std::tuple<bool, uint32_t, uint32_t>, std::vector<MeasuredInterval*>> intervals;
    for (auto& x : list) {
      const Op& op = ops[x.op];
      intervals[{x.duration != 0, x.duration ? op.call : ops[x.op - 1].callsite, op.callsite}].push_back(&x);
    }
    if (intervals.size() >= (1u << 30))
      throw std::length_error(fmt::format("rank {}: {} intervals between call sites, more than the gate numbers", r,
                                          intervals.size()));
    for (auto& [key, instances] : intervals) {
      for (auto* x : instances) x->interval = static_cast<uint32_t>(out.stats[r].size()) & ((1u << 30) - 1);
      out.stats[r].push_back(settle(trace, r, instances));
    }
    list.shrink_to_fit();
    for (const auto& x : list) {
      out.measured++;
      out.repeated += out.of(r, x).repeated;
      out.replaced += x.replaced;
    }
  }
  return out;
}

OpTimes retimed_times(const Trace& trace, const SteadyIntervals& intervals, const std::vector<std::vector<double>>& values) {
  OpTimes t(trace.ranks.size());
  // far enough from 0 that MPI_Init's measured duration fits before the common start
  uint64_t start = 0;
  for (const auto& rank : trace.ranks)
    if (!rank.ops.empty()) start = std::max(start, rank.ops.front().t_exit - rank.ops.front().t_enter);
  start += 1;
  for (size_t r = 0; r < t.size(); r++) {
    const auto& orig = trace.ranks[r].ops;
    auto& ops = t[r];
    if (orig.empty()) continue;
    ops.resize(orig.size());
    std::vector<double> gap(ops.size()), duration(ops.size());
    for (size_t i = 0; i < ops.size(); i++) {
      gap[i] = i > 0 && orig[i].t_enter > orig[i - 1].t_exit ? static_cast<double>(orig[i].t_enter - orig[i - 1].t_exit) : 0;
      duration[i] = orig[i].t_exit > orig[i].t_enter ? static_cast<double>(orig[i].t_exit - orig[i].t_enter) : 0;
    }
    const auto& list = intervals.ranks[r];
    for (size_t k = 0; k < list.size() && k < values[r].size(); k++)
      (list[k].duration ? duration : gap)[list[k].op] = std::max(0.0, values[r][k]);
    // MPI_Init returns at the common start (a rank without it starts there); every later op follows its
    // gap and duration
    const uint64_t first_ns = static_cast<uint64_t>(duration[0]);
    const bool init = orig[0].call == MPA_CALL_Init || orig[0].call == MPA_CALL_Init_thread;
    ops[0].enter = init ? start - first_ns : start;
    ops[0].exit = init ? start : start + first_ns;
    double exit = static_cast<double>(ops[0].exit);
    for (size_t i = 1; i < ops.size(); i++) {
      const double enter = exit + gap[i];
      exit = enter + duration[i];
      ops[i].enter = static_cast<uint64_t>(std::llround(enter));
      ops[i].exit = std::max(ops[i].enter, static_cast<uint64_t>(std::llround(exit)));
    }
  }
  return t;
}

Trace retimed(const Trace& trace, const SteadyIntervals& intervals, const std::vector<std::vector<double>>& values) {
  const OpTimes times = retimed_times(trace, intervals, values);
  Trace t = trace;
  for (size_t r = 0; r < t.ranks.size(); r++)
    for (size_t i = 0; i < t.ranks[r].ops.size(); i++) {
      t.ranks[r].ops[i].t_enter = times[r][i].enter;
      t.ranks[r].ops[i].t_exit = times[r][i].exit;
    }
  return t;
}

}  // namespace mpiadvise

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

// The statistics of one interval from its instances (entries of list, whose measured times are
// measured's at the same places), and which of them were pauses.
IntervalStats settle(const std::vector<uint32_t>& instances, std::vector<MeasuredInterval>& list,
                     const std::vector<double>& measured) {
  IntervalStats s;
  if (instances.size() < kMinRepeats) return s;  // a one-off: its instances kept as measured
  std::vector<double> v;
  v.reserve(instances.size());
  for (const uint32_t k : instances) v.push_back(measured[k]);
  std::sort(v.begin(), v.end());
  const double median = quantile(v, 0.5), q1 = quantile(v, 0.25), q3 = quantile(v, 0.75);
  const double spread = std::max({q3 - q1, kSpreadFloorShare * median, kSpreadFloorNs});
  const double fence = q3 + kFence * spread;
  for (const uint32_t k : instances) list[k].replaced = measured[k] > fence;
  s.median_ns = median;
  s.noise_ns = spread / kIqrToSd;
  s.repeated = true;
  return s;
}

// What the intervals need of an op.
struct OpView {
  uint64_t enter = 0, exit = 0;
  uint32_t callsite = 0;
  uint8_t call = 0;
  OpKind kind = OpKind::Other;
};

// Rank r's intervals into out, its n ops given in order by next(OpView&) (false past the last): the gaps
// before each replayed op and before MPI_Finalize (the replay runs up to its entry), the durations of the
// replayed ops it does not model; each an instance of the interval between the same two call sites (a
// gap), or at one call site (a duration).
template <typename Next>
void rank_intervals(size_t r, const ReplayWindow& w, uint64_t n, Next next, SteadyIntervals& out) {
  auto& list = out.ranks[r];
  std::vector<double> measured;  // by entry of list
  std::map<std::tuple<bool, uint32_t, uint32_t>, std::vector<uint32_t>> intervals;  // their instances' entries
  auto add = [&](uint64_t i, bool duration, double ns, std::tuple<bool, uint32_t, uint32_t> key) {
    MeasuredInterval x;
    x.op = static_cast<uint32_t>(i);
    x.duration = duration;
    intervals[key].push_back(static_cast<uint32_t>(list.size()));
    list.push_back(x);
    measured.push_back(ns);
  };
  const uint64_t last_gap = w.end < n ? w.end : uint64_t{w.end} - 1;
  OpView before, op;
  for (uint64_t i = 0; i < n && i <= last_gap && next(op); i++, before = op) {
    if (i < w.first) continue;
    if (i > 0) add(i, false, op.enter > before.exit ? static_cast<double>(op.enter - before.exit) : 0, {false, before.callsite, op.callsite});
    if (i < w.end && replayed_as_measured(op.kind))
      add(i, true, op.exit > op.enter ? static_cast<double>(op.exit - op.enter) : 0, {true, op.call, op.callsite});
  }
  if (intervals.size() >= (1u << 30))
    throw std::length_error(fmt::format("rank {}: {} intervals between call sites, more than the gate numbers", r,
                                        intervals.size()));
  for (const auto& [key, instances] : intervals) {
    for (const uint32_t k : instances) list[k].interval = static_cast<uint32_t>(out.stats[r].size()) & ((1u << 30) - 1);
    out.stats[r].push_back(settle(instances, list, measured));
  }
  list.shrink_to_fit();
  for (const auto& x : list) {
    out.measured++;
    out.repeated += out.of(r, x).repeated;
    out.replaced += x.replaced;
  }
}

}  // namespace

double SteadyIntervals::measured_ns(const Trace& trace, size_t rank, const MeasuredInterval& x) {
  const Op& op = trace.ranks[rank].ops[x.op];
  if (x.duration) return op.t_exit() > op.t_enter ? static_cast<double>(op.t_exit() - op.t_enter) : 0;
  const Op& before = trace.ranks[rank].ops[x.op - 1];
  return op.t_enter > before.t_exit() ? static_cast<double>(op.t_enter - before.t_exit()) : 0;
}

SteadyIntervals steady_intervals(const Trace& trace) {
  SteadyIntervals out;
  out.ranks.resize(trace.ranks.size());
  out.stats.resize(trace.ranks.size());
  for (size_t r = 0; r < trace.ranks.size(); r++) {
    const auto& ops = trace.ranks[r].ops;
    size_t k = 0;
    rank_intervals(r, replay_window(trace.ranks[r]), ops.size(), [&](OpView& v) {
      const Op& op = ops[k++];
      v = {op.t_enter, op.t_exit(), op.callsite, op.call, op.kind};
      return true;
    }, out);
  }
  return out;
}

SteadyIntervals steady_intervals(const std::vector<OpStream>& streams) {
  SteadyIntervals out;
  out.ranks.resize(streams.size());
  out.stats.resize(streams.size());
  StreamOp op;
  for (size_t r = 0; r < streams.size(); r++) {
    OpCursor cursor(streams[r]);
    rank_intervals(r, streams[r].window(), streams[r].ops(), [&](OpView& v) {
      if (!cursor.next(op))
        throw std::logic_error(fmt::format("steady_intervals: rank {}'s stream ends before its {} ops", r, streams[r].ops()));
      v = {op.t_enter, op.t_exit(), op.callsite, op.call, op.kind};
      return true;
    }, out);
  }
  return out;
}

namespace {

// when every rank of a retimed trace leaves MPI_Init: far enough from 0 that MPI_Init's measured
// duration fits before it, the longest first op's (first(r, ns): ns the duration of rank r's first op,
// false where it has none)
template <typename First>
uint64_t common_start(size_t ranks, First first) {
  uint64_t start = 0, ns = 0;
  for (size_t r = 0; r < ranks; r++)
    if (first(r, ns)) start = std::max(start, ns);
  return start + 1;
}
uint64_t common_start(const Trace& trace) {
  return common_start(trace.ranks.size(), [&](size_t r, uint64_t& ns) {
    if (trace.ranks[r].ops.empty()) return false;
    ns = trace.ranks[r].ops.front().t_exit() - trace.ranks[r].ops.front().t_enter;
    return true;
  });
}

bool is_init(uint32_t call) { return call == MPA_CALL_Init || call == MPA_CALL_Init_thread; }

// An op's times as a retiming draws them, within what an op holds (drawn from a measured trace's, they
// are within it but for a draw far off its fit): retimed() and Retiming make the same
std::pair<uint64_t, uint64_t> held(uint64_t enter, uint64_t exit) {
  enter = std::min(enter, kMaxOpEnter);
  return {enter, std::clamp(exit, enter, enter + kMaxOpDuration)};
}
void place(Op& op, uint64_t enter, uint64_t exit) {
  const auto [e, x] = held(enter, exit);
  (void)op.set_times(e, x);  // held: in range
}
}  // namespace

Trace retimed(const Trace& trace, const SteadyIntervals& intervals, const std::vector<std::vector<double>>& values) {
  Trace t = trace;
  const uint64_t start = common_start(trace);
  for (size_t r = 0; r < t.ranks.size(); r++) {
    auto& ops = t.ranks[r].ops;
    const auto& orig = trace.ranks[r].ops;
    if (orig.empty()) continue;
    std::vector<double> gap(ops.size()), duration(ops.size());
    RankTimes measured(orig);
    for (uint32_t i = 0; i < ops.size(); i++) {
      gap[i] = i > 0 ? measured.gap(i) : 0;
      duration[i] = measured.duration(i);
    }
    const auto& list = intervals.ranks[r];
    for (size_t k = 0; k < list.size() && k < values[r].size(); k++)
      (list[k].duration ? duration : gap)[list[k].op] = std::max(0.0, values[r][k]);
    // MPI_Init returns at the common start (a rank without it starts there); every later op follows its
    // gap and duration
    const uint64_t first_ns = static_cast<uint64_t>(duration[0]);
    place(ops[0], is_init(orig[0].call) ? start - first_ns : start, is_init(orig[0].call) ? start : start + first_ns);
    double exit = static_cast<double>(ops[0].t_exit());
    for (size_t i = 1; i < ops.size(); i++) {
      const double enter = exit + gap[i];
      exit = enter + duration[i];
      place(ops[i], static_cast<uint64_t>(std::llround(enter)), static_cast<uint64_t>(std::llround(exit)));
    }
  }
  return t;
}

Retiming::Retiming(const Trace& trace, const SteadyIntervals& intervals, RetimingDraw draw)
    : trace_(&trace), intervals_(intervals), draw_(draw), start_(common_start(trace)) {
  if (intervals.ranks.size() != trace.ranks.size())
    throw std::invalid_argument("Retiming: the intervals are not of this trace (another number of ranks)");
  for (const RankTrace& rank : trace.ranks) init_.push_back(!rank.ops.empty() && is_init(rank.ops.front().call));
}

Retiming::Retiming(const std::vector<OpStream>& streams, const SteadyIntervals& intervals, RetimingDraw draw)
    : streams_(&streams), intervals_(intervals), draw_(draw) {
  if (intervals.ranks.size() != streams.size())
    throw std::invalid_argument("Retiming: the intervals are not of these streams (another number of ranks)");
  // each rank's first op, read through a cursor of its own that is let go at once
  StreamOp first;
  start_ = common_start(streams.size(), [&](size_t r, uint64_t& ns) {
    OpCursor cursor(streams[r]);
    const bool any = cursor.next(first);
    init_.push_back(any && is_init(first.call));
    ns = first.duration;
    return any;
  });
}

RankTimes Retiming::times(size_t rank) const {
  return trace_ ? RankTimes(trace_->ranks[rank].ops) : RankTimes((*streams_)[rank]);
}

Retiming::Values::Stream::result_type Retiming::Values::Stream::operator()() {
  uint64_t z = (state += 0x9e3779b97f4a7c15);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9;
  z = (z ^ (z >> 27)) * 0x94d049bb133111eb;
  return z ^ (z >> 31);
}

Retiming::Values Retiming::values(size_t rank) const {
  Values v;
  v.of_ = this;
  v.rank_ = rank;
  if (draw_.kind != RetimingDraw::Noisy) return v;
  // the rank's stream: the seed and the rank mixed, so that neighbouring seeds and ranks start far apart
  Values::Stream mix{draw_.seed};
  v.stream_.state = mix() ^ (0xd1b54a32d192ed03 * (rank + 1));
  v.stream_.state = v.stream_();
  v.speed_ = 1 + draw_.speed_sd * v.normal_(v.stream_);
  v.shift_.resize(intervals_.stats[rank].size());
  for (auto& x : v.shift_) x = draw_.shift_sd_ns * v.normal_(v.stream_);
  return v;
}

double Retiming::Values::next(const MeasuredInterval& x, double measured_ns) {
  const SteadyIntervals& in = of_->intervals_;
  const IntervalStats& s = in.of(rank_, x);
  switch (of_->draw_.kind) {
    case RetimingDraw::Floor:
      return s.repeated ? std::min(in.steady_ns(rank_, x, measured_ns), s.median_ns) : 0.0;
    case RetimingDraw::Steady:
      return s.repeated ? in.steady_ns(rank_, x, measured_ns) : 0.0;
    case RetimingDraw::Noisy: {
      const double z = normal_(stream_);  // drawn whether used or not
      return s.repeated ? std::max(0.0, in.steady_ns(rank_, x, measured_ns) * speed_ + shift_[x.interval] + s.noise_ns * z)
                        : 0.0;
    }
  }
  return 0.0;
}

std::vector<std::vector<double>> Retiming::all_values() const {
  std::vector<std::vector<double>> all(intervals_.ranks.size());
  for (size_t r = 0; r < all.size(); r++) {
    Values v = values(r);
    RankTimes t = times(r);
    for (const MeasuredInterval& x : intervals_.ranks[r]) all[r].push_back(v.next(x, x.duration ? t.duration(x.op) : t.gap(x.op)));
  }
  return all;
}

Retiming::Rank Retiming::rank(size_t rank) const {
  Rank k;
  k.times_.emplace(times(rank));
  k.n_ = static_cast<uint32_t>(trace_ ? trace_->ranks[rank].ops.size() : (*streams_)[rank].ops());
  k.x_ = intervals_.ranks[rank].data();
  k.x_end_ = k.x_ + intervals_.ranks[rank].size();
  k.values_ = values(rank);
  if (k.n_ == 0) return k;
  double gap = 0, duration = k.times_->duration(0);
  k.take(0, gap, duration);
  const uint64_t first_ns = static_cast<uint64_t>(duration);
  const bool init = init_[rank];
  std::tie(k.enter_, k.exit_) = held(init ? start_ - first_ns : start_, init ? start_ : start_ + first_ns);
  k.exit_before_ = k.enter_;
  k.exit_sum_ = static_cast<double>(k.exit_);
  return k;
}

// op i's gap and duration where an interval sets them (given their measured values)
void Retiming::Rank::take(uint32_t i, double& gap, double& duration) {
  for (; x_ != x_end_ && x_->op == i; x_++) {
    double& v = x_->duration ? duration : gap;
    v = std::max(0.0, values_.next(*x_, v));
  }
}

// the op after, as retimed() makes it
void Retiming::Rank::next() {
  const uint32_t i = op_ + 1;
  double gap = times_->gap(i), duration = times_->duration(i);
  take(i, gap, duration);
  const double enter = exit_sum_ + gap;
  exit_sum_ = enter + duration;
  exit_before_ = exit_;
  std::tie(enter_, exit_) = held(static_cast<uint64_t>(std::llround(enter)), static_cast<uint64_t>(std::llround(exit_sum_)));
  op_ = i;
}

void Retiming::Rank::at(uint32_t i) {
  if (i < op_ || i >= n_)
    throw std::logic_error(fmt::format("Retiming: op {} asked for at op {} of {} (forward only)", i, op_, n_));
  while (op_ < i) next();
}

}  // namespace mpiadvise

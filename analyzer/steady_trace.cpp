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

namespace {

// when every rank of a retimed trace leaves MPI_Init: far enough from 0 that MPI_Init's measured
// duration fits before it
uint64_t common_start(const Trace& trace) {
  uint64_t start = 0;
  for (const auto& rank : trace.ranks)
    if (!rank.ops.empty()) start = std::max(start, rank.ops.front().t_exit() - rank.ops.front().t_enter);
  return start + 1;
}

double measured_gap(const Op& before, const Op& op) {
  return op.t_enter > before.t_exit() ? static_cast<double>(op.t_enter - before.t_exit()) : 0;
}
double measured_duration(const Op& op) { return op.t_exit() > op.t_enter ? static_cast<double>(op.t_exit() - op.t_enter) : 0; }

bool is_init(const Op& op) { return op.call == MPA_CALL_Init || op.call == MPA_CALL_Init_thread; }

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
    for (size_t i = 0; i < ops.size(); i++) {
      gap[i] = i > 0 ? measured_gap(orig[i - 1], orig[i]) : 0;
      duration[i] = measured_duration(orig[i]);
    }
    const auto& list = intervals.ranks[r];
    for (size_t k = 0; k < list.size() && k < values[r].size(); k++)
      (list[k].duration ? duration : gap)[list[k].op] = std::max(0.0, values[r][k]);
    // MPI_Init returns at the common start (a rank without it starts there); every later op follows its
    // gap and duration
    const uint64_t first_ns = static_cast<uint64_t>(duration[0]);
    place(ops[0], is_init(orig[0]) ? start - first_ns : start, is_init(orig[0]) ? start : start + first_ns);
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
    : trace_(trace), intervals_(intervals), draw_(draw), start_(common_start(trace)) {
  if (intervals.ranks.size() != trace.ranks.size())
    throw std::invalid_argument("Retiming: the intervals are not of this trace (another number of ranks)");
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

double Retiming::Values::next(const MeasuredInterval& x) {
  const SteadyIntervals& in = of_->intervals_;
  const IntervalStats& s = in.of(rank_, x);
  switch (of_->draw_.kind) {
    case RetimingDraw::Floor:
      return s.repeated ? std::min(in.steady_ns(of_->trace_, rank_, x), s.median_ns) : 0.0;
    case RetimingDraw::Steady:
      return s.repeated ? in.steady_ns(of_->trace_, rank_, x) : 0.0;
    case RetimingDraw::Noisy: {
      const double z = normal_(stream_);  // drawn whether used or not
      return s.repeated ? std::max(0.0, in.steady_ns(of_->trace_, rank_, x) * speed_ + shift_[x.interval] + s.noise_ns * z)
                        : 0.0;
    }
  }
  return 0.0;
}

std::vector<std::vector<double>> Retiming::all_values() const {
  std::vector<std::vector<double>> all(intervals_.ranks.size());
  for (size_t r = 0; r < all.size(); r++) {
    Values v = values(r);
    for (const MeasuredInterval& x : intervals_.ranks[r]) all[r].push_back(v.next(x));
  }
  return all;
}

Retiming::Rank Retiming::rank(size_t rank) const {
  Rank k;
  const auto& ops = trace_.ranks[rank].ops;
  k.ops_ = ops.data();
  k.n_ = static_cast<uint32_t>(ops.size());
  k.x_ = intervals_.ranks[rank].data();
  k.x_end_ = k.x_ + intervals_.ranks[rank].size();
  k.values_ = values(rank);
  if (ops.empty()) return k;
  double gap = 0, duration = measured_duration(ops[0]);
  k.take(0, gap, duration);
  const uint64_t first_ns = static_cast<uint64_t>(duration);
  std::tie(k.enter_, k.exit_) = held(is_init(ops[0]) ? start_ - first_ns : start_, is_init(ops[0]) ? start_ : start_ + first_ns);
  k.exit_before_ = k.enter_;
  k.exit_sum_ = static_cast<double>(k.exit_);
  return k;
}

// op i's gap and duration where an interval sets them
void Retiming::Rank::take(uint32_t i, double& gap, double& duration) {
  for (; x_ != x_end_ && x_->op == i; x_++) (x_->duration ? duration : gap) = std::max(0.0, values_.next(*x_));
}

// the op after, as retimed() makes it
void Retiming::Rank::next() {
  const uint32_t i = op_ + 1;
  double gap = measured_gap(ops_[i - 1], ops_[i]), duration = measured_duration(ops_[i]);
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

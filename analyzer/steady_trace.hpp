// The measured part of a trace, and how much of it is the machine's noise.
//
// The replay models the time of MPI calls, but it takes two things from the run as measured: the
// computation between one MPI call and the next, and the duration of the calls it does not model
// (probes, polling, MPI_Comm_rank, ...). Both carry the noise of the machine: a rank descheduled for
// 30 ms in a 30 us interval, a free() that waits for other CPUs, a launcher that starts one rank later.
// Two runs of an unchanged program then replay to different figures.
//
// Each such time is an interval of a rank, and the intervals of a rank between the same two call sites
// (the computation from site A to site B, or the duration of a call at site C) are instances of one
// interval: a loop repeats them. Where an interval has at least kMinRepeats instances, the bulk of them
// says what it takes, and an instance far above the bulk is a pause of the machine:
//   spread = max(IQR, 5% of the median, 1 us)      (IQR: the interquartile range of the instances)
//   an instance above Q3 + 3 spread (Tukey's far-out fence) is replaced by the median
//   its noise is spread / 1.349 (a standard deviation, for normal noise)
// Instances between the median and the fence may hold shorter pauses, and an interval with fewer
// instances (a one-off: set-up before the first call, a phase run once) cannot be told from a pause
// at all: both are kept as measured, and the gate bounds what pauses in them could have added by
// cutting every interval to its median, every one-off to nothing (mpiadvise-gate(1)).
#pragma once

#include <cstdint>
#include <optional>
#include <random>
#include <vector>

#include "op_stream.hpp"
#include "replay.hpp"
#include "trace.hpp"

namespace mpiadvise {

inline constexpr size_t kMinRepeats = 5;

// One measured time of a rank: the computation before ops[op] (a gap), or the duration of ops[op]. About
// one an op: 8 bytes. Its time is the op's as measured (SteadyIntervals::measured_ns of the trace; read
// from the op stream where the intervals were found on one), and what it shares with the other instances
// of its interval is kept once (IntervalStats).
struct MeasuredInterval {
  uint32_t op = 0;
  uint32_t interval : 30 = 0;  // which interval of its rank this is an instance of (0, 1, ...)
  uint32_t duration : 1 = 0;
  uint32_t replaced : 1 = 0;   // taken for a pause and replaced by its interval's median
};
static_assert(sizeof(MeasuredInterval) == 8);

// What the instances of one interval share.
struct IntervalStats {
  double median_ns = 0;   // the instances' median (0 for a one-off)
  double noise_ns = 0;    // standard deviation of an instance from run to run, as estimated (0 for one-offs)
  bool repeated = false;  // at least kMinRepeats instances; else a one-off
};

struct SteadyIntervals {
  std::vector<std::vector<MeasuredInterval>> ranks;  // by world rank
  std::vector<std::vector<IntervalStats>> stats;     // by world rank and interval
  uint64_t measured = 0, repeated = 0, replaced = 0;

  const IntervalStats& of(size_t rank, const MeasuredInterval& x) const { return stats[rank][x.interval]; }
  // the measured time, from the trace the intervals are of
  static double measured_ns(const Trace& trace, size_t rank, const MeasuredInterval& x);
  // the measured time, or its interval's median where it was a pause
  double steady_ns(size_t rank, const MeasuredInterval& x, double measured_ns) const {
    return x.replaced ? of(rank, x).median_ns : measured_ns;
  }
  double steady_ns(const Trace& trace, size_t rank, const MeasuredInterval& x) const {
    return steady_ns(rank, x, measured_ns(trace, rank, x));
  }
};

// Every measured interval of the trace, with its steady value and noise.
SteadyIntervals steady_intervals(const Trace& trace);
// The same from the op streams of a trace (OpStream::encode_all), one rank's stream read at a time, with
// the measured times of that rank's intervals alone held while they are settled: the trace's, interval
// for interval.
SteadyIntervals steady_intervals(const std::vector<OpStream>& streams);

// The trace with each rank's intervals set to values[rank][i] (in the order of intervals.ranks[rank])
// and every rank leaving MPI_Init at the same time: when the launcher started a rank is not the
// program's doing. Ops outside the replayed window keep their measured durations. The replays take
// Retiming instead, which makes the same times as they go; this whole copy is what the tests compare
// it with.
Trace retimed(const Trace& trace, const SteadyIntervals& intervals, const std::vector<std::vector<double>>& values);

// What a retimed replay sets the measured intervals to (gate.hpp): each one-off to nothing, and each
// repeated interval to
//   Floor   the smaller of its steady value and its median: what is left where no pause lengthened any;
//   Steady  its steady value;
//   Noisy   its steady value times (1 + speed_sd z), plus shift_sd z', plus its noise z'' (never below
//           zero): z drawn once for the rank, z' once for each of its intervals, z'' for each instance.
// The draws are standard normal, from a stream of the rank's own (seed and rank), taken in the order of
// its intervals, every one whether used or not: the same log gives the same values whatever order a
// replay runs its ranks in.
struct RetimingDraw {
  enum Kind : uint8_t { Floor, Steady, Noisy } kind = Steady;
  uint64_t seed = 0;
  double speed_sd = 0, shift_sd_ns = 0;
};

// The ops' times of the retimed trace (retimed(), with the values `draw` sets) made rank by rank and op
// after op as a replay reaches them (ReplayOptions::retiming), where times held for every op took 16
// bytes an op in each of the gate's replays. It reads the measured times from the trace's ops, or from
// the trace's op streams (a cursor a rank, which holds the frame it unpacks where they are packed). It
// refers to them and to the intervals: all must outlive it.
class Retiming {
 public:
  Retiming(const Trace& trace, const SteadyIntervals& intervals, RetimingDraw draw);
  Retiming(const std::vector<OpStream>& streams, const SteadyIntervals& intervals, RetimingDraw draw);

  // One rank's values, drawn in the order of its intervals.
  class Values {
   public:
    // the value of interval x, whose measured time is measured_ns
    double next(const MeasuredInterval& x, double measured_ns);

   private:
    friend class Retiming;
    struct Stream {  // SplitMix64: 8 bytes of state for each rank's stream, where a Mersenne twister takes 2.5 KB
      using result_type = uint64_t;
      uint64_t state = 0;
      static constexpr result_type min() { return 0; }
      static constexpr result_type max() { return UINT64_MAX; }
      result_type operator()();
    };
    const Retiming* of_ = nullptr;
    size_t rank_ = 0;
    Stream stream_;
    std::normal_distribution<double> normal_;
    double speed_ = 1;
    std::vector<double> shift_;  // by interval
  };

  // One rank's ops' times, forward only: at(i) moves to op i, which must not come before the op it is at
  // (std::logic_error). A rank with ops starts at op 0.
  class Rank {
   public:
    void at(uint32_t i);
    uint32_t op() const { return op_; }
    uint64_t enter() const { return enter_; }
    uint64_t exit() const { return exit_; }
    uint64_t exit_before() const { return exit_before_; }  // of the op before it (op 0: its own entry)

   private:
    friend class Retiming;
    void next();
    void take(uint32_t i, double& gap, double& duration);
    std::optional<RankTimes> times_;  // the measured times
    uint32_t n_ = 0, op_ = 0;
    const MeasuredInterval *x_ = nullptr, *x_end_ = nullptr;  // the intervals not yet reached
    Values values_;
    double exit_sum_ = 0;  // the exit before rounding: the next op's times follow from it
    uint64_t enter_ = 0, exit_ = 0, exit_before_ = 0;
  };

  Values values(size_t rank) const;
  Rank rank(size_t rank) const;
  // every rank's values, in the order of intervals.ranks[rank]: retimed() given them makes the same times
  std::vector<std::vector<double>> all_values() const;
  // whether it retimes this trace, or these streams of it (a replay's ReplayOptions::streams)
  bool retimes(const Trace& trace, const std::vector<OpStream>* streams) const {
    return trace_ ? trace_ == &trace : streams_ == streams;
  }

 private:
  RankTimes times(size_t rank) const;
  const Trace* trace_ = nullptr;                   // the measured times: the trace's ops,
  const std::vector<OpStream>* streams_ = nullptr;  // or its streams'
  const SteadyIntervals& intervals_;
  RetimingDraw draw_;
  uint64_t start_ = 1;      // when every rank leaves MPI_Init
  std::vector<bool> init_;  // by rank: its first op is MPI_Init's
};

}  // namespace mpiadvise

// Calibration by the paper's round trips (sections 4.1, 4.2), fitted as a whole. The benchmark bounces a
// k-byte message between two ranks, one of them computing w ns before each receive (w = 0 and w = W):
// the loop whose period is the model's LogGPS::round_trip, equations (12)-(14). Instead of the paper's
// eight equations solved from separate line fits (whose noisy differences gave negative latencies and
// gaps), the parameters are the non-negative least-squares fit of round_trip, and of MPI_Send's time
// for eager sizes (which alone splits Oss from Ors), to every sample at once.
//
// Why a linear method suffices: once s and S are fixed and each sample's branch of the max() in
// (12)-(14) is known, round_trip is affine in (L, o', Oss, Ors, Osl, Orl, Gs, Gl). The fit takes the
// affine map from the model itself (differences of round_trip in each parameter: no equation of the
// model is restated here), solves the weighted problem by Lawson and Hanson's active-set NNLS, and
// repeats while a sample's branch changes under the new parameters (a fixed point after one or two
// rounds). s, a discrete parameter, is chosen by fitting each candidate.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "loggps.hpp"

namespace mpiadvise {

// ---- the linear algebra ------------------------------------------------------------------------------------
// A dense m x n matrix, row-major.
struct Matrix {
  size_t rows = 0, cols = 0;
  std::vector<double> a;
  Matrix(size_t m, size_t n) : rows(m), cols(n), a(m * n, 0.0) {}
  double& operator()(size_t i, size_t j) { return a[i * cols + j]; }
  double operator()(size_t i, size_t j) const { return a[i * cols + j]; }
};

// min |Ax - b| by Householder QR; columns that are zero or dependent on earlier ones get 0.
std::vector<double> least_squares(const Matrix& A, const std::vector<double>& b);
// min |Ax - b| subject to x >= 0: Lawson and Hanson's active-set method (Solving Least Squares
// Problems, 1974, ch. 23). Exact up to rounding, in at most a few passes per column.
std::vector<double> nnls(const Matrix& A, const std::vector<double>& b);

// ---- the measurements -------------------------------------------------------------------------------------
// One (w, k) of a sweep: the typical round trip and MPI_Send time of its repetitions.
// The repetitions of one (w, k) in two groups, when they fall so: a machine whose messages go at two
// speeds, switching while it runs. Measured on this project's machines (KVM guests of 2 CPUs), an 8-byte
// ping-pong in one run, the median of each 2000 round trips, 40 times 50 ms apart: Open MPI's vader
// 0.35-0.52 or 0.85-1.09 us, MPICH's UCX shared memory 0.36-0.52 or 1.26-1.49 us, the speed changing
// from one window to the next or holding for a second. A run as short as the halo example's falls mostly
// on one of them.
struct TwoSpeeds {
  double fast_ns = 0, slow_ns = 0;  // each group's median (of round trip less w)
  double slow_share = 0;            // the share of the repetitions in the slower group
  double ratio() const { return slow_ns / fast_ns; }
  // what a run that spans many switches takes on average
  double mean_ns() const { return (1 - slow_share) * fast_ns + slow_share * slow_ns; }
};
// The two groups of these times (round trips less w), or none when they are one group. Two groups: the
// widest gap between neighbours in sorted order (its upper side over its lower at least 1.3) leaves at
// least 15% of the times on each side, each group is tight (its upper quartile within 1.5 times its
// lower one) and the slower group's median is 1.5 to 5 times the faster's. A rank descheduled during a
// few repetitions makes them far slower and scattered, not a group.
std::optional<TwoSpeeds> two_speeds(std::vector<double> less_w);

// One (w, k) of a sweep: the typical round trip and MPI_Send time of its repetitions.
struct RoundTrip {
  uint64_t k = 0;      // bytes
  double w = 0;        // ns computed before each receive
  double rtt_ns = 0;   // round trip
  double send_ns = 0;  // rank 0's blocking send (0: not measured)
  std::optional<TwoSpeeds> speeds;  // the round trips' two speeds, when they have two
};

// The runs of the benchmark (--runs) compared: a machine whose speed holds for seconds and changes between
// them puts each run at one speed. Twelve one-run calibrations over Open MPI's vader in a row, here:
// seven took 1.9-2.1 us for a 512-byte round trip and 45-57 us for 64 KiB, four 0.76-0.83 and 23-27 us,
// one 0.56 and 19 us; pooling such runs size by size prices some sizes at one speed and some at another.
// speed[i]: run i's round trips over the runs' median (the median over its w = 0 sizes); keep: the runs
// within 15% of the middle run's speed, whose samples are pooled.
struct RunSpeeds {
  std::vector<double> speed;
  std::vector<size_t> keep;
};
RunSpeeds run_speeds(const std::vector<std::vector<RoundTrip>>& runs);

// The machine's two speeds as a sweep's small messages show them (w = 0, up to kSpeedsUpTo bytes, whose
// round trip is latency and overheads): none unless at least two of those sizes, and half of them, have
// two. `of`: the smallest such size's groups; ratio and slow_share: their medians over the sizes.
inline constexpr uint64_t kSpeedsUpTo = 1024;
struct MachineSpeeds {
  uint64_t k = 0;
  TwoSpeeds of;
  double ratio = 0, slow_share = 0;
  std::vector<double> factors;  // each speed seen, as a factor on what the set prices (the pooled runs', or the mean)
  size_t sizes = 0, split = 0;  // small sizes with w = 0, and those with two speeds (across_runs: runs, slower runs)
  bool across_runs = false;     // found between the runs of the benchmark, not within them
};
std::optional<MachineSpeeds> machine_speeds(const std::vector<RoundTrip>& samples);
// The same from the runs' speeds: two when the slowest run is at least 1.5 times the fastest (k 0, `of`
// the two speeds relative to the fastest; slow_share: the runs more than 1.25 times the fastest).
std::optional<MachineSpeeds> machine_speeds(const RunSpeeds& runs);

// The median: in the benchmark's loop a rank descheduled during one round trip lengthens that period
// and shortens the next, so the middle value, not the smallest, is the undisturbed one.
double median(std::vector<double> v);
// A (w, k) from its repetitions: their medians, but for round trips at two speeds (two_speeds) the mean
// of the two, weighted by their shares: what a run spanning many switches takes, where the median picks
// whichever speed held most repetitions of that size and the fit then meets sizes measured at different
// speeds. Throws ParamError when there are none.
RoundTrip from_repetitions(uint64_t k, double w, const std::vector<double>& rtt_ns, const std::vector<double>& send_ns);

// The samples of one run of the benchmark, at one eager limit, and the s and S its rows are modelled
// with (S: the run's effective S, found by bisection).
struct Sweep {
  std::vector<RoundTrip> samples;
  uint64_t s = 0, S = 0;
  // Sizes above this are left out of the fit of the base parameters and fitted alone: the first sweep's
  // above the library's second rendezvous protocol's threshold (LogGPSParams::large_from, fit_large),
  // the raised sweep's above the library's own eager limit (LogGPSParams::raised_from, fit_raised).
  // Fitted with the rest, UCX's shared memory's raised eager sizes (0.2 + 0.11 ns/B) set the eager terms
  // of every size: Oss + Ors 0.28 ns/B where its 8 KiB messages took 0.03, and a halo of them was
  // predicted +80%.
  std::optional<uint64_t> base_up_to;
};

// ---- the fit ------------------------------------------------------------------------------------------------
// The fitted parameters, in this order. The samples measure o_r only with L (o_r + L: a receive waiting
// for its message) and with D (o_r + D: a late one); the fit takes o_r = o' where they allow it (the
// paper's one o'), less where they say a receive costs less than a send (kConventionOr).
constexpr std::array<const char*, 11> kFittedNames = {"L", "o", "Oss", "Ors", "Osl", "Orl", "Gs", "Gl", "R", "o_r", "D"};
constexpr size_t kConventionOr = 9;
// L, o', R, o_r and D are times (ns); the others costs per byte (ns/B)
constexpr bool fitted_in_ns(size_t i) { return i < 2 || i >= 8; }
double& fitted_param(LogGPSParams& p, size_t i);
double fitted_param(const LogGPSParams& p, size_t i);

// The weighted linear problem at one point: row i is sample i's model value as J_i . x + offset_i,
// all divided by the sample's weight scale (the measured time less the computation w: the part of it
// the model explains, so that every row counts by its relative error).
struct LinearProblem {
  Matrix A{0, kFittedNames.size()};
  std::vector<double> b;
  size_t round_trip_rows = 0;  // the first rows; the others are eager MPI_Send times
};
LinearProblem linearise(const std::vector<Sweep>& sweeps, const LogGPSParams& at);

// A sample the fit left out as disturbed.
struct LeftOut {
  uint64_t k = 0;
  double w = 0;
  bool send = false;  // an MPI_Send time, else a round trip
  double measured_ns = 0, model_ns = 0;
};

struct Fit {
  LogGPSParams params;               // s and S: the first sweep's
  std::array<double, kFittedNames.size()> std_error{};  // one standard error each, ns or ns/B; NaN where not determined
  std::array<bool, kFittedNames.size()> at_bound{};     // held at 0 by the constraint (unconstrained it would go negative)
  std::array<bool, kFittedNames.size()> determined{};   // some sample depends on the parameter
  std::array<bool, kFittedNames.size()> separable{};    // the samples tell it from the others (else only a sum is known)
  bool o_r_is_o = false;  // o_r at o' by the convention (kConventionOr): moving with it, no error of its own
  uint64_t receiver_not_late_from = 0;  // the smallest size whose w > 0 round trip is the w = 0 one (the
                                        // communication outlasts w, max() > 0 in (12)-(14)); 0: none
  // The model's own structure against the samples: at an eager size k the w = 0 round trip is
  // 2(T1 + T2 + T3) and, with the receiver late, the w = W one is W + T1 + T3 ((12), (13)), so the first is
  // at least twice the second's communication for any L, Gs >= 0. Where it is less (Open MPI over loopback
  // TCP here: 11.6 us against 2 x 10.6 at 0 bytes), a receive whose message came while its receiver
  // computed costs more than one the receiver waited for, which the model's one o' cannot price: the
  // fit can only compromise between the two kinds of rows. Set at the smallest size sampled at both w
  // where the w = 0 round trip is under 1.9 times the other's communication, with the fitted set's
  // relative error on each (model - measured) / measured.
  struct LateReceiveDearer {
    uint64_t k = 0;
    double w = 0, rtt_w0_ns = 0, comm_wW_ns = 0, error_w0 = 0, error_wW = 0;
  };
  std::optional<LateReceiveDearer> late_receive_dearer;
  double residual_rtt = 0;   // RMS of (model - measured) / measured over the round trips
  double residual_comm = 0;  // the same relative to the round trip less w (the communication alone)
  double weighted_sse = 0;   // what the fit minimised
  bool R_not_called_for = false;  // R held at 0: it did not lower the residual enough (calibrate)
  size_t rows = 0;                // samples fitted
  std::vector<LeftOut> left_out;  // samples left out as disturbed
  int rounds = 0;            // linearisations until no sample changed branch
};

// The fit of every sweep's samples at once, each sweep's rows with its own s and S; the result's s
// and S are the first sweep's. Uncertainties: the covariance of the weighted linear fit at the
// solution, sigma^2 (A_F^T A_F)^-1 over the free parameters F with sigma^2 the residual variance (so
// they include the model's misfit as if it were noise); for a parameter held at 0, the same with it
// freed. Samples whose error is far beyond the others' (a descheduled rank: more than 4 robust standard
// deviations and 25% of the communication) are left out and listed. Throws ParamError when there are no
// round trips.
// with_R false: R held at 0
Fit fit_params(const std::vector<Sweep>& sweeps, bool with_R = true);

// The [raised] table (LogGPSParams::raised_from, Oss_raised, Ors_raised): what eager messages above the
// library's own limit `from` cost per byte, fitted to the rows of the sweep with the limit raised whose
// size is above `from` and eager in it, every other parameter held at the base fit's. Those are the
// messages a what-if that raises S makes eager, and the sizes that decide its gain: fitted over every
// size of that sweep, the many small ones set the slope, and over loopback TCP a 128 KiB eager message
// was priced at 0.4 ns/B where it took 0.7-1.2 (the halo example, predicted 5-15% faster with S raised,
// ran 30-47% slower). nullopt when fewer than 2 rows are above `from`.
struct RaisedFit {
  double Oss = 0, Ors = 0;
  double Oss_error = 0, Ors_error = 0;  // one standard error each, as Fit's; NaN where not determined
  size_t rows = 0;
};
std::optional<RaisedFit> fit_raised(const Sweep& raised, uint64_t from, const LogGPSParams& base);

// The [large] table (LogGPSParams::large_from, R_large, Osl_large, Orl_large): what the library's second
// rendezvous protocol adds, fitted to the sweep's round trips above `from` (and above S), every other
// parameter held at the base fit's, which left those sizes out (Sweep::base_up_to). Fitted with the rest,
// Open MPI's shared memory sits on a ridge: its CMA rendezvous costs 2.8 us more per message than the
// FIFO below 4041 bytes and less per byte, and one Osl for both came out 0.0-0.37 ns/B from run to run.
// nullopt when fewer than 4 round trips are above `from`.
struct LargeFit {
  uint64_t from = 0;
  double R = 0, Osl = 0, Orl = 0;
  double R_error = 0, Osl_error = 0, Orl_error = 0;  // one standard error each; NaN where not determined
  size_t rows = 0;
  double residual_rtt = 0;  // RMS of (model - measured) / measured over its round trips
};
std::optional<LargeFit> fit_large(const Sweep& sweep, uint64_t from, const LogGPSParams& base);

// The [resend] table (LogGPSParams::resend_buffered, resend_rendezvous): the round trips of data sent
// again unchanged (w = 0, neither rank writing its buffer between its sends) against the set fitted to
// data written before each send, `full` with every table the calibration found. For each path
// (LogGPSParams::buffered) the factor f is the weighted least-squares fit (each round trip by its
// relative error, 0 <= f <= 10, Gauss-Newton on the model's round_trip with LogGPSParams::resent(f): no
// equation restated) over the sizes on it whose priced terms (per-byte, and R on the rendezvous) are at
// least a quarter of their round trip: the others say nothing of f. A path with fewer than 2 such sizes
// has none. fresh_beside: round trips of data just written taken beside them (the same k); where a size
// has one, its resend round trip is taken times the model's fresh one over it: the factor is then the
// ratio of the two at one speed of the machine, which drifts between the benchmark's phases.
struct ResendFit {
  struct Path {
    double factor = 1, error = 0;  // f, and one standard error (NaN where not determined)
    // the most bytes the caches hold (LogGPSParams::resend_cached_bytes): the size among the fitted ones
    // that, taken as the hold, leaves at most 0.8 times the squared misfit of none, the least so; none else.
    // Searched on the rendezvous path (the large sizes); the buffered path is fitted with the same hold
    // (one for the set), and searches its own only where there is no rendezvous path.
    std::optional<uint64_t> cached_bytes;
    size_t rows = 0;
    uint64_t from = 0, to = 0;      // the sizes fitted
    double residual_rtt = 0;        // RMS of (model - measured) / measured over them, at f
    double residual_as_fresh = 0;   // the same with f = 1: priced as data just written
    double residual_one_factor = 0; // the same with no hold of the caches: one factor for every size
  };
  std::optional<Path> buffered, rendezvous;
};
ResendFit fit_resend(const std::vector<RoundTrip>& resent, const LogGPSParams& full,
                     const std::vector<RoundTrip>& fresh_beside = {});

// What a calibration found.
struct Calibration {
  Fit fit;
  std::vector<uint64_t> s_tried;  // the candidates for s that were fitted
};

// The fit, choosing s for the first sweep among its sizes below S and S itself (one eager segment),
// unless fix_s_to_S: the fit with the lowest weighted residual, s < S only when it lowers the residual
// by more than a Bayesian information criterion charges for one more parameter.
Calibration calibrate(std::vector<Sweep> sweeps, bool fix_s_to_S);

// ---- the eager buffer --------------------------------------------------------------------------------------
// One flood of the benchmark: `sent` eager sends of k bytes to a receiver that computes first; `through`:
// how many returned before the first one that waited for it, in each repetition.
struct Flood {
  uint64_t k = 0, sent = 0;
  std::vector<uint64_t> through;
};

// The eager buffer the floods show (LogGPSParams::eager_buffer_*). Per size, the median count c(k).
//  - A size whose every send went through says no more than "at least sent": when all do, no limit.
//  - Bytes: from the two largest sizes, c(k) (k + h) = C, i.e. h = (c2 k2 - c1 k1) / (c1 - c2) (0 when the
//    two give no positive h), and C the smallest c(k) (k + h) over the sizes that waited (the buffer the
//    job can count on).
//  - Messages: where the smallest size got through fewer than 80% of the bytes the larger ones did, the
//    buffer ran out of messages first: its count is the limit, and C comes from the larger sizes.
struct EagerBufferFit {
  std::optional<uint64_t> bytes, messages;
  uint64_t header = 0;
  std::vector<std::pair<uint64_t, uint64_t>> counts;  // (k, median through), as measured
};
EagerBufferFit fit_eager_buffer(const std::vector<Flood>& floods);

}  // namespace mpiadvise

#include "calibration.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include <fmt/format.h>

namespace mpiadvise {

// ---- the linear algebra ------------------------------------------------------------------------------------
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Column j's Euclidean norm.
double column_norm(const Matrix& A, size_t j) {
  double s = 0;
  for (size_t i = 0; i < A.rows; i++) s += A(i, j) * A(i, j);
  return std::sqrt(s);
}

// Householder QR of A (columns scaled to unit norm first: the parameters' columns differ by twelve
// orders of magnitude, ns against ns per byte times a megabyte); a column whose remainder below the
// rows already used is negligible depends on earlier ones and gets 0.
std::vector<double> qr_solve(Matrix R, std::vector<double> y) {
  const size_t m = R.rows, n = R.cols;
  std::vector<double> scale(n, 0.0), x(n, 0.0);
  for (size_t j = 0; j < n; j++) {
    scale[j] = column_norm(R, j);
    if (scale[j] > 0)
      for (size_t i = 0; i < m; i++) R(i, j) /= scale[j];
  }
  std::vector<size_t> pivot_row(n, SIZE_MAX);
  size_t r = 0;
  for (size_t j = 0; j < n && r < m; j++) {
    if (scale[j] == 0) continue;
    double norm = 0;
    for (size_t i = r; i < m; i++) norm += R(i, j) * R(i, j);
    norm = std::sqrt(norm);
    if (norm < 1e-10) continue;  // unit column: its part outside the earlier columns' span is nil
    const double alpha = R(r, j) > 0 ? -norm : norm;
    std::vector<double> v(m - r);
    for (size_t i = r; i < m; i++) v[i - r] = R(i, j);
    v[0] -= alpha;
    double vv = 0;
    for (double e : v) vv += e * e;
    if (vv > 0) {
      for (size_t c = j; c < n; c++) {
        double d = 0;
        for (size_t i = r; i < m; i++) d += v[i - r] * R(i, c);
        d = 2 * d / vv;
        for (size_t i = r; i < m; i++) R(i, c) -= d * v[i - r];
      }
      double d = 0;
      for (size_t i = r; i < m; i++) d += v[i - r] * y[i];
      d = 2 * d / vv;
      for (size_t i = r; i < m; i++) y[i] -= d * v[i - r];
    }
    pivot_row[j] = r++;
  }
  for (size_t jj = n; jj-- > 0;) {
    if (pivot_row[jj] == SIZE_MAX) continue;
    const size_t row = pivot_row[jj];
    double s = y[row];
    for (size_t c = jj + 1; c < n; c++)
      if (pivot_row[c] != SIZE_MAX) s -= R(row, c) * x[c];
    x[jj] = s / R(row, jj);
  }
  for (size_t j = 0; j < n; j++) x[j] = scale[j] > 0 ? x[j] / scale[j] : 0;
  return x;
}

// The columns of A where keep is set, in order.
Matrix columns(const Matrix& A, const std::vector<bool>& keep) {
  size_t n = static_cast<size_t>(std::count(keep.begin(), keep.end(), true)), c = 0;
  Matrix out(A.rows, n);
  for (size_t j = 0; j < A.cols; j++) {
    if (!keep[j]) continue;
    for (size_t i = 0; i < A.rows; i++) out(i, c) = A(i, j);
    c++;
  }
  return out;
}

std::vector<double> residual(const Matrix& A, const std::vector<double>& x, const std::vector<double>& b) {
  std::vector<double> r(b);
  for (size_t i = 0; i < A.rows; i++)
    for (size_t j = 0; j < A.cols; j++) r[i] -= A(i, j) * x[j];
  return r;
}

// The inverse of A_K^T A_K for the columns K of A, as a full n x n matrix (NaN outside K); empty when
// singular. Gauss-Jordan with partial pivoting on the column-scaled normal matrix (8 x 8 at most).
std::vector<double> inverse_normal(const Matrix& A, const std::vector<bool>& keep) {
  Matrix Ak = columns(A, keep);
  const size_t n = Ak.cols;
  std::vector<double> scale(n);
  for (size_t j = 0; j < n; j++) {
    scale[j] = column_norm(Ak, j);
    if (scale[j] == 0) return {};
  }
  Matrix N(n, 2 * n);
  for (size_t p = 0; p < n; p++) {
    for (size_t q = 0; q < n; q++) {
      double s = 0;
      for (size_t i = 0; i < Ak.rows; i++) s += Ak(i, p) * Ak(i, q);
      N(p, q) = s / (scale[p] * scale[q]);
    }
    N(p, n + p) = 1;
  }
  for (size_t c = 0; c < n; c++) {
    size_t best = c;
    for (size_t r = c + 1; r < n; r++)
      if (std::fabs(N(r, c)) > std::fabs(N(best, c))) best = r;
    if (std::fabs(N(best, c)) < 1e-13) return {};
    for (size_t k = 0; k < 2 * n; k++) std::swap(N(c, k), N(best, k));
    const double d = N(c, c);
    for (size_t k = 0; k < 2 * n; k++) N(c, k) /= d;
    for (size_t r = 0; r < n; r++) {
      if (r == c || N(r, c) == 0) continue;
      const double f = N(r, c);
      for (size_t k = 0; k < 2 * n; k++) N(r, k) -= f * N(c, k);
    }
  }
  std::vector<size_t> index;
  for (size_t j = 0; j < A.cols; j++)
    if (keep[j]) index.push_back(j);
  std::vector<double> inv(A.cols * A.cols, kNaN);
  for (size_t p = 0; p < n; p++)
    for (size_t q = 0; q < n; q++) inv[index[p] * A.cols + index[q]] = N(p, n + q) / (scale[p] * scale[q]);
  return inv;
}

}  // namespace

std::vector<double> least_squares(const Matrix& A, const std::vector<double>& b) { return qr_solve(A, b); }

std::vector<double> nnls(const Matrix& A, const std::vector<double>& b) {
  const size_t n = A.cols;
  std::vector<double> x(n, 0.0);
  std::vector<bool> passive(n, false), usable(n, true);
  for (size_t j = 0; j < n; j++) usable[j] = column_norm(A, j) > 0;
  double bnorm = 0;
  for (double v : b) bnorm += v * v;
  bnorm = std::sqrt(bnorm);
  // the solution of the least-squares problem over the passive columns, 0 elsewhere
  auto solve_passive = [&]() {
    std::vector<double> zp = qr_solve(columns(A, passive), b), z(n, 0.0);
    size_t c = 0;
    for (size_t j = 0; j < n; j++)
      if (passive[j]) z[j] = zp[c++];
    return z;
  };
  for (size_t outer = 0; outer < 3 * n + 10; outer++) {
    // the gradient of -|Ax - b|^2 / 2: a column that would lower the residual by growing from 0
    std::vector<double> r = residual(A, x, b);
    size_t t = n;
    double best = 0;
    for (size_t j = 0; j < n; j++) {
      if (passive[j] || !usable[j]) continue;
      double g = 0;
      for (size_t i = 0; i < A.rows; i++) g += A(i, j) * r[i];
      g /= column_norm(A, j);  // per unit of the column, as the tolerance is
      if (g > best) best = g, t = j;
    }
    if (t == n || best <= 1e-12 * bnorm) break;
    passive[t] = true;
    for (size_t inner = 0; inner < 3 * n + 10; inner++) {
      std::vector<double> z = solve_passive();
      if (inner == 0 && z[t] <= 0) {  // rounding: the new column adds nothing after all
        passive[t] = usable[t] = false;
        break;
      }
      bool feasible = true;
      double alpha = 1;
      for (size_t j = 0; j < n; j++)
        if (passive[j] && z[j] <= 0) {
          feasible = false;
          alpha = std::min(alpha, x[j] > z[j] ? x[j] / (x[j] - z[j]) : 0.0);
        }
      if (feasible) {
        x = z;
        break;
      }
      for (size_t j = 0; j < n; j++) {
        if (!passive[j]) continue;
        x[j] += alpha * (z[j] - x[j]);
        if (x[j] <= 0 || (z[j] <= 0 && x[j] <= 1e-15 * std::fabs(z[j]))) x[j] = 0, passive[j] = false;
      }
    }
  }
  return x;
}

// ---- the measurements -------------------------------------------------------------------------------------
double median(std::vector<double> v) {
  if (v.empty()) return kNaN;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

namespace {
// the q-quantile of sorted v (lower of the two neighbours)
double quantile(const std::vector<double>& v, double q) { return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1))]; }
}  // namespace

std::optional<TwoSpeeds> two_speeds(std::vector<double> x) {
  constexpr double kMinShare = 0.15, kMinGap = 1.3, kMaxSpread = 1.5, kMinRatio = 1.5, kMaxRatio = 5;
  const size_t n = x.size();
  if (n < 9) return std::nullopt;  // --quick takes 9
  std::sort(x.begin(), x.end());
  if (!(x[0] > 0)) return std::nullopt;
  const auto lo_end = static_cast<size_t>(std::ceil(kMinShare * static_cast<double>(n)));
  const auto hi_end = n - lo_end;  // the split i leaves x[0, i) and x[i, n)
  size_t best = 0;
  double widest = 0;
  for (size_t i = std::max<size_t>(lo_end, 1); i <= hi_end; i++)
    if (x[i] / x[i - 1] > widest) widest = x[i] / x[i - 1], best = i;
  if (best == 0 || widest < kMinGap) return std::nullopt;
  const std::vector<double> fast(x.begin(), x.begin() + static_cast<long>(best)), slow(x.begin() + static_cast<long>(best), x.end());
  for (const auto* g : {&fast, &slow})
    if (quantile(*g, 0.75) > kMaxSpread * quantile(*g, 0.25)) return std::nullopt;
  TwoSpeeds t{median(fast), median(slow), static_cast<double>(slow.size()) / static_cast<double>(n)};
  if (t.ratio() < kMinRatio || t.ratio() > kMaxRatio) return std::nullopt;
  return t;
}

std::optional<MachineSpeeds> machine_speeds(const std::vector<RoundTrip>& samples) {
  MachineSpeeds m;
  std::vector<double> ratios, shares;
  for (const RoundTrip& r : samples) {
    if (r.w != 0 || r.k > kSpeedsUpTo) continue;
    m.sizes++;
    if (!r.speeds) continue;
    m.split++;
    ratios.push_back(r.speeds->ratio());
    shares.push_back(r.speeds->slow_share);
    if (m.split == 1 || r.k < m.k) m.k = r.k, m.of = *r.speeds;
  }
  if (m.split < 2 || 2 * m.split < m.sizes) return std::nullopt;
  m.ratio = median(ratios);
  m.slow_share = median(shares);
  const double set = 1 + m.slow_share * (m.ratio - 1);  // the weighted mean, over the faster speed
  m.factors = {1 / set, m.ratio / set};
  return m;
}

RunSpeeds run_speeds(const std::vector<std::vector<RoundTrip>>& runs) {
  RunSpeeds r;
  r.speed.assign(runs.size(), 1.0);
  if (runs.empty()) return r;
  for (size_t i = 0; i < runs.size(); i++) {
    std::vector<double> ratios;
    for (const RoundTrip& s : runs[i]) {
      if (s.w != 0 || !(s.rtt_ns > 0)) continue;
      std::vector<double> same;
      for (const auto& other : runs)
        for (const RoundTrip& o : other)
          if (o.k == s.k && o.w == 0 && o.rtt_ns > 0) same.push_back(o.rtt_ns);
      ratios.push_back(s.rtt_ns / median(same));
    }
    if (!ratios.empty()) r.speed[i] = median(ratios);
  }
  std::vector<size_t> order(runs.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return r.speed[a] < r.speed[b]; });
  const double middle = r.speed[order[(order.size() - 1) / 2]];
  for (size_t i = 0; i < runs.size(); i++)
    if (std::abs(r.speed[i] / middle - 1) <= 0.15) r.keep.push_back(i);
  return r;
}

std::optional<MachineSpeeds> machine_speeds(const RunSpeeds& runs) {
  if (runs.speed.size() < 2) return std::nullopt;
  const auto [lo, hi] = std::minmax_element(runs.speed.begin(), runs.speed.end());
  if (*hi < 1.5 * *lo) return std::nullopt;
  MachineSpeeds m;
  m.across_runs = true;
  m.of.fast_ns = 1, m.of.slow_ns = *hi / *lo;
  m.sizes = runs.speed.size();
  for (double s : runs.speed) m.split += s > 1.25 * *lo;
  m.of.slow_share = static_cast<double>(m.split) / static_cast<double>(m.sizes);
  m.ratio = m.of.ratio(), m.slow_share = m.of.slow_share;
  std::vector<double> kept;
  for (size_t i : runs.keep) kept.push_back(runs.speed[i]);
  const double set = median(kept);
  std::vector<double> sorted = runs.speed;
  std::sort(sorted.begin(), sorted.end());
  for (double s : sorted)  // one factor for runs within 5% of each other
    if (m.factors.empty() || s / set > 1.05 * m.factors.back()) m.factors.push_back(s / set);
  return m;
}

RoundTrip from_repetitions(uint64_t k, double w, const std::vector<double>& rtt_ns, const std::vector<double>& send_ns) {
  if (rtt_ns.empty()) throw ParamError(fmt::format("calibration: no round trips of {} bytes with w = {:.0f} ns", k, w));
  RoundTrip r{k, w, median(rtt_ns), send_ns.empty() ? 0.0 : median(send_ns), std::nullopt};
  std::vector<double> less_w(rtt_ns);
  for (double& t : less_w) t -= w;
  if ((r.speeds = two_speeds(std::move(less_w)))) r.rtt_ns = w + r.speeds->mean_ns();
  return r;
}

// ---- the fit ------------------------------------------------------------------------------------------------
namespace {
// kFittedNames' parameters, in its order (o_r apart: an optional one, o' when empty)
constexpr double LogGPSParams::*kFittedFields[] = {&LogGPSParams::L,   &LogGPSParams::o,   &LogGPSParams::Oss,
                                                   &LogGPSParams::Ors, &LogGPSParams::Osl, &LogGPSParams::Orl,
                                                   &LogGPSParams::Gs,  &LogGPSParams::Gl,  &LogGPSParams::R,
                                                   nullptr,            &LogGPSParams::D};
static_assert(std::size(kFittedFields) == kFittedNames.size());
}  // namespace

double& fitted_param(LogGPSParams& p, size_t i) {
  if (i != kConventionOr) return p.*kFittedFields[i];
  if (!p.o_r) p.o_r = p.o;
  return *p.o_r;
}
double fitted_param(const LogGPSParams& p, size_t i) { return i == kConventionOr ? p.o_recv() : p.*kFittedFields[i]; }

namespace {

constexpr size_t kParams = kFittedNames.size();
constexpr size_t kR = 8;  // R's place in kFittedNames

// A step in each parameter for the model's differences: the model is affine in it within a branch, so
// any step that keeps the branch gives the exact slope; these keep rounding below 1e-6 of it.
double step(size_t i) { return fitted_in_ns(i) ? 1.0 : 1e-3; }

// What a row of the fit measures: a round trip, or the time of an eager MPI_Send.
struct Row {
  const RoundTrip* sample;
  uint64_t s, S;
  bool send;
};

// The rows of the base fit: every sample but those of sizes fitted alone (Sweep::base_up_to).
std::vector<Row> rows_of(const std::vector<Sweep>& sweeps) {
  std::vector<Row> rows;
  for (const auto& sw : sweeps)
    for (const auto& r : sw.samples)
      if (r.rtt_ns > 0 && !(sw.base_up_to && r.k > *sw.base_up_to)) rows.push_back({&r, sw.s, sw.S, false});
  for (const auto& sw : sweeps)
    for (const auto& r : sw.samples)
      if (r.send_ns > 0 && r.k <= sw.S && !(sw.base_up_to && r.k > *sw.base_up_to)) rows.push_back({&r, sw.s, sw.S, true});
  return rows;
}

double model_value(const Row& row, LogGPSParams p) {
  p.s = row.s;
  p.S = row.S;
  LogGPS m(p);
  return row.send ? m.send(row.sample->k, 0, 0) : m.round_trip(row.sample->k, row.sample->w);
}

double measured(const Row& row) { return row.send ? row.sample->send_ns : row.sample->rtt_ns; }

// The part of a measurement the model's parameters explain: the round trip less the computation (with a
// floor, for a noisy period shorter than w), or the send's time.
double weight_scale(const Row& row) {
  const double y = measured(row), comm = row.send ? y : y - row.sample->w;
  return std::max({comm, 0.01 * y, 1.0});
}

// A parameter a fit solves for, and the step of the model's difference in it.
struct Unknown {
  double LogGPSParams::*field;  // or, when null, the fitted parameter `index` (kFittedNames)
  double step;
  size_t index = 0;
  double& of(LogGPSParams& p) const { return field ? p.*field : fitted_param(p, index); }
  double value(const LogGPSParams& p) const { return field ? p.*field : fitted_param(p, index); }
};

// The weighted linear problem of the rows in the unknowns at `at`: the model is affine in each within a
// branch, so a difference gives its exact column.
LinearProblem linearise_over(const std::vector<Row>& rows, const LogGPSParams& at, const std::vector<Unknown>& unknowns) {
  LinearProblem lp;
  lp.A = Matrix(rows.size(), unknowns.size());
  lp.b.assign(rows.size(), 0.0);
  // o_r explicit: a step in o' must not move the receive's overhead with it
  LogGPSParams base = at;
  if (!base.o_r) base.o_r = base.o;
  for (size_t i = 0; i < rows.size(); i++) {
    const double f0 = model_value(rows[i], base), scale = weight_scale(rows[i]);
    double offset = f0;
    for (size_t j = 0; j < unknowns.size(); j++) {
      LogGPSParams q = base;
      unknowns[j].of(q) += unknowns[j].step;
      const double slope = (model_value(rows[i], q) - f0) / unknowns[j].step;
      lp.A(i, j) = slope / scale;
      offset -= slope * unknowns[j].value(base);
    }
    lp.b[i] = (measured(rows[i]) - offset) / scale;
    if (!rows[i].send) lp.round_trip_rows = i + 1;
  }
  return lp;
}

// The model's fitted parameters (kFittedNames); with_R false: R held at 0 (its column left empty)
LinearProblem linearise_rows(const std::vector<Row>& rows, const LogGPSParams& at, bool with_R = true) {
  std::vector<Unknown> all;
  for (size_t j = 0; j < kParams; j++) all.push_back({nullptr, step(j), j});
  LinearProblem lp = linearise_over(rows, at, all);
  if (!with_R)
    for (size_t i = 0; i < rows.size(); i++) lp.A(i, kR) = 0.0;
  return lp;
}

double weighted_sse(const std::vector<Row>& rows, const LogGPSParams& p) {
  double s = 0;
  for (const auto& row : rows) {
    const double e = (model_value(row, p) - measured(row)) / weight_scale(row);
    s += e * e;
  }
  return s;
}

}  // namespace

LinearProblem linearise(const std::vector<Sweep>& sweeps, const LogGPSParams& at) {
  return linearise_rows(rows_of(sweeps), at);
}

namespace {

struct Solution {
  LogGPSParams params;
  double sse = std::numeric_limits<double>::infinity();
  int rounds = 0;
};

// The fit of the rows: linearise, NNLS, again while a sample's branch changes.
Solution solve(const std::vector<Row>& rows, bool with_R) {
  // a start whose branches are those of any real machine's: the w = 0 round trips longer than the
  // computation, those with w = W (W above the communication) shorter
  LogGPSParams p;
  p.L = p.o = 1000;
  p.o_r = 1000;
  p.Oss = p.Ors = p.Osl = p.Orl = p.Gs = p.Gl = 0.01;
  Solution best;
  best.params = p;
  for (int round = 1; round <= 10; round++) {
    LinearProblem lp = linearise_rows(rows, p, with_R);
    // the convention that settles o_r (kConventionOr): one more row, o_r - o' = 0, weighted a thousandth
    // of the rows' o' column, so that it decides only what the samples leave open
    const double pull = 1e-3 * column_norm(lp.A, 1) / std::sqrt(static_cast<double>(std::max<size_t>(rows.size(), 1)));
    Matrix A(lp.A.rows + 1, kParams);
    std::copy(lp.A.a.begin(), lp.A.a.end(), A.a.begin());
    A(lp.A.rows, kConventionOr) = pull, A(lp.A.rows, 1) = -pull;
    lp.b.push_back(0.0);
    std::vector<double> x = nnls(A, lp.b);
    // what NNLS leaves above 0 only by rounding (1e-16 ns/B, 1e-11 ns) is 0: held at the bound
    for (size_t j = 0; j < kParams; j++)
      if (x[j] < 1e-9 * step(j)) x[j] = 0;
    LogGPSParams next = p;
    double change = 0;
    for (size_t j = 0; j < kParams; j++) {
      change = std::max(change, std::fabs(x[j] - fitted_param(p, j)) / (std::fabs(x[j]) + step(j)));
      fitted_param(next, j) = x[j];
    }
    const double sse = weighted_sse(rows, next);
    if (sse < best.sse) best = {next, sse, round};
    p = next;
    if (change < 1e-9) break;  // the same branches again: the fixed point
  }
  return best;
}

// The weighted error of a row under p.
double weighted_error(const Row& row, const LogGPSParams& p) {
  return (model_value(row, p) - measured(row)) / weight_scale(row);
}

}  // namespace

namespace {

// The fit of a few unknowns to rows with every other parameter held at p's (the [raised] and [large]
// tables): NNLS again while a row's branch changes. p holds the solution; the standard errors, as Fit's.
std::vector<double> fit_held(const std::vector<Row>& rows, LogGPSParams& p, const std::vector<Unknown>& unknowns) {
  const size_t n = unknowns.size();
  LinearProblem lp;
  for (int round = 0; round < 10; round++) {
    lp = linearise_over(rows, p, unknowns);
    const std::vector<double> x = nnls(lp.A, lp.b);
    double change = 0;
    for (size_t j = 0; j < n; j++) change = std::max(change, std::fabs(x[j] - p.*unknowns[j].field)), p.*unknowns[j].field = x[j];
    if (change < 1e-12) break;
  }
  lp = linearise_over(rows, p, unknowns);
  double sse = 0;
  for (const Row& row : rows) sse += std::pow(weighted_error(row, p), 2);
  const std::vector<double> inv = inverse_normal(lp.A, std::vector<bool>(n, true));
  const double sigma2 = rows.size() > n ? sse / static_cast<double>(rows.size() - n) : kNaN;
  std::vector<double> errors(n, kNaN);
  if (!inv.empty())
    for (size_t j = 0; j < n; j++) errors[j] = std::sqrt(sigma2 * inv[j * n + j]);
  return errors;
}

}  // namespace

std::optional<RaisedFit> fit_raised(const Sweep& raised, uint64_t from, const LogGPSParams& base) {
  std::vector<Row> rows;  // pointing into `raised`, which outlives them (not into a copy of it)
  for (const auto& r : raised.samples)
    if (r.rtt_ns > 0 && r.k > from && r.k <= raised.S) rows.push_back({&r, raised.s, raised.S, false});
  for (const auto& r : raised.samples)
    if (r.send_ns > 0 && r.k > from && r.k <= raised.S) rows.push_back({&r, raised.s, raised.S, true});
  if (rows.size() < 2) return std::nullopt;
  LogGPSParams p = base;
  p.raised_from = from;
  p.Oss_raised = base.Oss, p.Ors_raised = base.Ors;  // a start on the eager branch of every row
  const std::vector<double> e = fit_held(rows, p, {{&LogGPSParams::Oss_raised, 1e-3}, {&LogGPSParams::Ors_raised, 1e-3}});
  RaisedFit out;
  out.Oss = p.Oss_raised, out.Ors = p.Ors_raised, out.rows = rows.size();
  out.Oss_error = e[0], out.Ors_error = e[1];
  return out;
}

std::optional<LargeFit> fit_large(const Sweep& sweep, uint64_t from, const LogGPSParams& base) {
  std::vector<Row> rows;  // round trips only: a send above S waits for its receiver, and is not one of the fit's rows
  for (const auto& r : sweep.samples)
    if (r.rtt_ns > 0 && r.k > from && r.k > sweep.S) rows.push_back({&r, sweep.s, sweep.S, false});
  if (rows.size() < 4) return std::nullopt;
  LogGPSParams p = base;
  p.s = sweep.s, p.S = sweep.S;
  p.large_from = from;
  p.R_large = 0, p.Osl_large = base.Osl, p.Orl_large = base.Orl;
  const std::vector<double> e = fit_held(
      rows, p, {{&LogGPSParams::R_large, 1.0}, {&LogGPSParams::Osl_large, 1e-3}, {&LogGPSParams::Orl_large, 1e-3}});
  LargeFit out;
  out.from = from;
  out.R = p.R_large, out.Osl = p.Osl_large, out.Orl = p.Orl_large;
  out.R_error = e[0], out.Osl_error = e[1], out.Orl_error = e[2];
  out.rows = rows.size();
  double sum = 0;
  for (const Row& row : rows) sum += std::pow((model_value(row, p) - measured(row)) / measured(row), 2);
  out.residual_rtt = std::sqrt(sum / static_cast<double>(rows.size()));
  return out;
}

Fit fit_params(const std::vector<Sweep>& sweeps, bool with_R) {
  if (sweeps.empty()) throw ParamError("calibration: no sweep to fit");
  const std::vector<Row> all = rows_of(sweeps);
  size_t all_round_trips = 0;
  for (const auto& r : all) all_round_trips += !r.send;
  if (all_round_trips == 0) throw ParamError("calibration: no round trips to fit");
  // Disturbed samples out: a rank descheduled for most of a (w, k)'s repetitions (a loaded machine
  // runs both ranks on one core now and then) makes its median milliseconds long. Fit, leave out the
  // rows whose error is beyond both 4 robust standard deviations (1.4826 times the median absolute
  // error) and 25%, fit again, until the rows left out stay the same.
  std::vector<bool> kept(all.size(), true);
  std::vector<Row> rows = all;
  Solution sol = solve(rows, with_R);
  for (int pass = 0; pass < 4; pass++) {
    std::vector<double> abs_err;
    for (const auto& row : rows) abs_err.push_back(std::fabs(weighted_error(row, sol.params)));
    const double limit = std::max(4 * 1.4826 * median(abs_err), 0.25);
    std::vector<bool> next(all.size());
    for (size_t i = 0; i < all.size(); i++) next[i] = std::fabs(weighted_error(all[i], sol.params)) <= limit;
    if (next == kept) break;
    kept = next;
    rows.clear();
    for (size_t i = 0; i < all.size(); i++)
      if (kept[i]) rows.push_back(all[i]);
    sol = solve(rows, with_R);
  }
  Fit fit;
  for (size_t i = 0; i < all.size(); i++)
    if (!kept[i])
      fit.left_out.push_back({all[i].sample->k, all[i].sample->w, all[i].send, measured(all[i]), model_value(all[i], sol.params)});
  const LogGPSParams& best = sol.params;
  fit.params = best;
  fit.params.s = sweeps.front().s;
  fit.params.S = sweeps.front().S;
  fit.weighted_sse = sol.sse;
  fit.rounds = sol.rounds;
  fit.rows = rows.size();
  // the uncertainties, from the linear problem at the solution
  LinearProblem lp = linearise_rows(rows, best, with_R);
  // o_r where the convention put it: at o' it moves with o' (one column for both), elsewhere it is fitted
  // with the others (the samples measure o_r + L and o_r + D; with R fitted and s = S, not o_r alone)
  const bool o_r_is_o = std::fabs(best.o_recv() - best.o) <= 1e-6 * std::max(best.o, 1.0);
  const bool o_r_measured = column_norm(lp.A, kConventionOr) > 0;
  if (o_r_is_o)
    for (size_t i = 0; i < lp.A.rows; i++) lp.A(i, 1) += lp.A(i, kConventionOr), lp.A(i, kConventionOr) = 0;
  std::vector<bool> free(kParams);
  size_t n_free = 0;
  for (size_t j = 0; j < kParams; j++) {
    fit.determined[j] = column_norm(lp.A, j) > 0;
    free[j] = fit.determined[j] && fitted_param(best, j) > 0;
    fit.at_bound[j] = fit.determined[j] && !free[j];
    n_free += free[j];
  }
  fit.determined[kConventionOr] = o_r_measured;
  fit.o_r_is_o = o_r_is_o;
  const double sigma2 = rows.size() > n_free ? sol.sse / static_cast<double>(rows.size() - n_free) : kNaN;
  const std::vector<double> inv = inverse_normal(lp.A, free);
  for (size_t j = 0; j < kParams; j++) {
    fit.std_error[j] = kNaN;
    if (free[j] && !inv.empty()) fit.std_error[j] = std::sqrt(sigma2 * inv[j * kParams + j]), fit.separable[j] = true;
    if (fit.at_bound[j]) {
      std::vector<bool> with = free;
      with[j] = true;
      const std::vector<double> inv_j = inverse_normal(lp.A, with);
      if (!inv_j.empty()) fit.std_error[j] = std::sqrt(sigma2 * inv_j[j * kParams + j]), fit.separable[j] = true;
    }
  }
  // where w did not make the receiver late, the w > 0 round trip equals the w = 0 one under the model
  for (const auto& row : rows) {
    if (row.send || row.sample->w <= 0) continue;
    RoundTrip at_zero = *row.sample;
    at_zero.w = 0;
    const Row zero_row{&at_zero, row.s, row.S, false};
    const double with_w = model_value(row, best), without = model_value(zero_row, best);
    if (std::fabs(with_w - without) <= 1e-9 * with_w &&
        (fit.receiver_not_late_from == 0 || row.sample->k < fit.receiver_not_late_from))
      fit.receiver_not_late_from = row.sample->k;
  }
  for (const auto& zero : rows) {
    if (zero.send || zero.sample->w != 0 || zero.sample->k > zero.S) continue;
    for (const auto& late : rows) {
      if (late.send || late.sample->w <= 0 || late.sample->k != zero.sample->k || late.S != zero.S) continue;
      const double comm = late.sample->rtt_ns - late.sample->w;
      if (comm <= 0 || zero.sample->rtt_ns >= 1.9 * comm) continue;
      if (fit.late_receive_dearer && fit.late_receive_dearer->k <= zero.sample->k) continue;
      fit.late_receive_dearer = Fit::LateReceiveDearer{zero.sample->k, late.sample->w, zero.sample->rtt_ns, comm,
                                                       model_value(zero, best) / zero.sample->rtt_ns - 1,
                                                       (model_value(late, best) - late.sample->rtt_ns) / comm};
    }
  }
  double sum_rtt = 0, sum_comm = 0;
  size_t round_trips = 0;
  for (const auto& row : rows) {
    if (row.send) continue;
    const double e = model_value(row, best) - measured(row);
    sum_rtt += (e / measured(row)) * (e / measured(row));
    sum_comm += (e / weight_scale(row)) * (e / weight_scale(row));
    round_trips++;
  }
  if (round_trips == 0) throw ParamError("calibration: every round trip was left out as disturbed");
  fit.residual_rtt = std::sqrt(sum_rtt / static_cast<double>(round_trips));
  fit.residual_comm = std::sqrt(sum_comm / static_cast<double>(round_trips));
  return fit;
}

Calibration calibrate(std::vector<Sweep> sweeps, bool fix_s_to_S) {
  if (sweeps.empty()) throw ParamError("calibration: no sweep to fit");
  Calibration c;
  Sweep& first = sweeps.front();
  std::vector<uint64_t> candidates{first.S};
  if (!fix_s_to_S)
    for (const auto& r : first.samples)
      if (r.k > 0 && r.k < first.S && std::find(candidates.begin(), candidates.end(), r.k) == candidates.end())
        candidates.push_back(r.k);
  first.s = first.S;
  const Fit one_segment = fit_params(sweeps);
  c.fit = one_segment;
  c.s_tried.push_back(first.S);
  // one more parameter (s) is worth it when m ln(MSE_S / MSE_s) exceeds ln m (the Bayesian criterion
  // for Gaussian errors; mean squared errors, as each fit may leave out other disturbed samples)
  auto mse = [](const Fit& f) { return f.weighted_sse / static_cast<double>(f.rows); };
  const double m = static_cast<double>(one_segment.rows);
  for (size_t i = 1; i < candidates.size(); i++) {
    first.s = candidates[i];
    Fit f = fit_params(sweeps);
    c.s_tried.push_back(candidates[i]);
    if (mse(f) < mse(c.fit) && (mse(f) == 0 || m * std::log(mse(one_segment) / mse(f)) > std::log(m))) c.fit = f;
  }
  // R, mpiadvise's rendezvous term, is kept by the same criterion: where the samples do not call for it
  // (Open MPI's ob1 over TCP fitted 1.4 +- 1.7 us one day and 7.3 +- 6.0 us on a loaded one, which priced
  // every rendezvous of the gauss example 7 us higher) the fit without it is taken
  if (c.fit.params.R > 0) {
    first.s = c.fit.params.s;
    Fit without = fit_params(sweeps, false);
    if (mse(c.fit) > 0 && !(m * std::log(mse(without) / mse(c.fit)) > std::log(m))) {
      c.fit = without;
      c.fit.R_not_called_for = true;
    }
  }
  std::sort(c.s_tried.begin(), c.s_tried.end());
  return c;
}

EagerBufferFit fit_eager_buffer(const std::vector<Flood>& floods) {
  EagerBufferFit f;
  struct Point {
    uint64_t k, c;
    bool waited;
  };
  std::vector<Point> pts;
  for (const auto& fl : floods) {
    if (fl.through.empty() || fl.k == 0) continue;
    std::vector<double> v(fl.through.begin(), fl.through.end());
    const auto c = static_cast<uint64_t>(std::llround(median(v)));
    f.counts.emplace_back(fl.k, c);
    pts.push_back({fl.k, c, c < fl.sent});
  }
  std::sort(pts.begin(), pts.end(), [](const Point& a, const Point& b) { return a.k < b.k; });
  std::vector<Point> waited;
  for (const auto& p : pts)
    if (p.waited) waited.push_back(p);
  if (waited.empty()) return f;  // every send went through: no limit the floods could see
  if (waited.size() >= 2) {
    const Point& a = waited[waited.size() - 2];
    const Point& b = waited.back();
    const double num = static_cast<double>(b.c) * b.k - static_cast<double>(a.c) * a.k;
    if (a.c > b.c && num > 0) f.header = static_cast<uint64_t>(std::llround(num / static_cast<double>(a.c - b.c)));
  }
  auto held = [&](const Point& p) { return p.c * (p.k + f.header); };
  const Point& smallest = waited.front();
  uint64_t others = std::numeric_limits<uint64_t>::max();  // the bytes the larger sizes got through
  for (size_t i = 1; i < waited.size(); i++) others = std::min(others, held(waited[i]));
  if (waited.size() >= 2 && static_cast<double>(held(smallest)) < 0.8 * static_cast<double>(others)) {
    f.messages = smallest.c;  // the smallest size ran out of messages before bytes
    f.bytes = others;
  } else {
    f.bytes = std::min(others, held(smallest));
  }
  return f;
}

ResendFit fit_resend(const std::vector<RoundTrip>& resent, const LogGPSParams& full,
                     const std::vector<RoundTrip>& fresh_beside) {
  constexpr double kMinShare = 0.25, kMaxFactor = 10, kStep = 1e-3;
  // a hold of the caches is kept where it leaves at most this share of the squared misfit without one
  constexpr double kCacheGain = 0.8;
  // each size's round trip at the speed of the sweep the set was fitted to: times the model's fresh round
  // trip over the one measured beside it, where there is one
  std::vector<RoundTrip> at_set_speed;
  for (const RoundTrip& r : resent) {
    RoundTrip s = r;
    for (const RoundTrip& f : fresh_beside)
      if (f.k == r.k && f.rtt_ns > 0) s.rtt_ns = r.rtt_ns * LogGPS(full).round_trip(r.k, 0) / f.rtt_ns;
    at_set_speed.push_back(s);
  }
  using Held = std::optional<uint64_t>;
  // given: the caches' hold to take (the set has one for both paths), else searched for
  auto fit_path = [&](bool rendezvous, std::optional<Held> given) -> std::optional<ResendFit::Path> {
    auto round_trip = [&](uint64_t k, double f, Held held) {
      return LogGPS(full.resent(resent_factor(f, k, held), rendezvous)).round_trip(k, 0);
    };
    std::vector<const RoundTrip*> rows;
    for (const RoundTrip& r : at_set_speed) {
      if (r.w != 0 || !(r.rtt_ns > 0) || full.buffered(r.k) == rendezvous) continue;
      const double fresh = round_trip(r.k, 1, {}), fixed = round_trip(r.k, 0, {});
      if (fresh > 0 && fresh - fixed >= kMinShare * fresh) rows.push_back(&r);
    }
    if (rows.size() < 2) return std::nullopt;
    std::sort(rows.begin(), rows.end(), [](const RoundTrip* a, const RoundTrip* b) { return a->k < b->k; });
    auto sse = [&](double f, Held held) {
      double sum = 0;
      for (const RoundTrip* r : rows) sum += std::pow((round_trip(r->k, f, held) - r->rtt_ns) / r->rtt_ns, 2);
      return sum;
    };
    // f for a given hold of the caches, and the fit's curvature there (0: none)
    auto fit_factor = [&](Held held, double* normal) {
      double f = 1;
      for (int round = 0; round < 20; round++) {
        double gradient = 0;
        *normal = 0;
        const double lo = std::max(f - kStep, 0.0), hi = f + kStep;
        for (const RoundTrip* r : rows) {
          const double y = r->rtt_ns, d = (round_trip(r->k, hi, held) - round_trip(r->k, lo, held)) / (hi - lo);
          gradient += d * (y - round_trip(r->k, f, held)) / (y * y);
          *normal += d * d / (y * y);
        }
        if (!(*normal > 0)) return f;
        const double next = std::clamp(f + gradient / *normal, 0.0, kMaxFactor);
        const bool settled = std::fabs(next - f) < 1e-6;
        f = next;
        if (settled) break;
      }
      return f;
    };
    double normal = 0;
    // one factor for every size, the misfit a hold is measured against
    const double f_one = fit_factor({}, &normal);
    if (!(normal > 0)) return std::nullopt;
    const double unlimited = sse(f_one, {});
    Held held = given.value_or(Held{});
    double f = held ? fit_factor(held, &normal) : f_one;
    if (!(normal > 0)) return std::nullopt;
    // the caches' hold: each size but the largest in turn, kept where it fits the round trips clearly
    // better than none (the sizes above it then cost more of what data just written does)
    double best = unlimited;
    for (size_t i = 0; !given && i + 1 < rows.size(); i++) {
      if (rows[i]->k == rows[i + 1]->k) continue;
      double n_i = 0;
      const double f_i = fit_factor(rows[i]->k, &n_i);
      const double s = sse(f_i, rows[i]->k);
      if (n_i > 0 && s < kCacheGain * unlimited && s < best) best = s, f = f_i, normal = n_i, held = rows[i]->k;
    }
    ResendFit::Path out;
    out.factor = f;
    out.cached_bytes = held;
    out.rows = rows.size();
    out.from = rows.front()->k, out.to = rows.back()->k;
    const double n = static_cast<double>(rows.size());
    // at a bound the fit's curvature says nothing of how far f could go
    out.error = f > 0 && f < kMaxFactor ? std::sqrt(sse(f, held) / (n - 1) / normal) : kNaN;
    out.residual_rtt = std::sqrt(sse(f, held) / n);
    out.residual_as_fresh = std::sqrt(sse(1, {}) / n);
    out.residual_one_factor = std::sqrt(unlimited / n);
    return out;
  };
  // the hold from the rendezvous path, whose sizes are the large ones; the other path priced with it
  ResendFit out;
  out.rendezvous = fit_path(true, std::nullopt);
  out.buffered = fit_path(false, out.rendezvous ? std::optional<Held>(out.rendezvous->cached_bytes) : std::nullopt);
  return out;
}

}  // namespace mpiadvise

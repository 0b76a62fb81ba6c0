#include "calibration.hpp"

#include <set>

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

namespace mpiadvise {

LogGPSParams solve_calibration(const CalibrationSides& in) {
  std::vector<std::string> clamped;
  LogGPSParams p = solve_calibration(in, clamped);
  if (!clamped.empty()) throw ParamError("calibration: " + clamped.front() + " is negative");
  return p;
}

LogGPSParams solve_calibration(const CalibrationSides& in, std::vector<std::string>& clamped) {
  LogGPSParams p;
  p.s = in.s;
  p.S = in.S;
  p.o = (in.intercept_wW - in.W) / 2;                  // 2o' + W
  p.L = (in.intercept_w0 - 4 * p.o) / 2;               // 4o' + 2L
  double oss_ors = in.slope_wW_eager;                  // Oss + Ors
  p.Gs = in.slope_w0_short / 2 - oss_ors;              // 2(Oss + Ors + Gs)
  p.Oss = in.S ? (in.send_at_S - p.o) / static_cast<double>(in.S) : 0;  // o' + S Oss
  p.Ors = oss_ors - p.Oss;
  double osl_orl_gl = in.slope_w0_rndv / 2;            // 2(Osl + Orl + Gl)
  if (in.s < in.S) {
    p.Gl = in.slope_w0_eager / 2 - oss_ors;            // 2(Oss + Ors + Gl)
    p.Osl = in.slope_wW_rndv - osl_orl_gl;             // (2Osl + Orl + Gl) - (Osl + Orl + Gl)
    p.Orl = osl_orl_gl - p.Osl - p.Gl;
  } else {
    p.Osl = in.slope_wW_rndv - osl_orl_gl;
    p.Gl = osl_orl_gl - p.Osl;                         // Orl + Gl, put in Gl
    p.Orl = 0;
  }
  const std::pair<const char*, double*> values[] = {{"L", &p.L},     {"o", &p.o},     {"Oss", &p.Oss}, {"Ors", &p.Ors},
                                                    {"Osl", &p.Osl}, {"Orl", &p.Orl}, {"Gs", &p.Gs},   {"Gl", &p.Gl}};
  for (const auto& [name, v] : values)
    if (*v < 0) {
      clamped.push_back(fmt::format("{} = {}", name, *v));
      *v = 0;
    }
  p.validate("calibration");
  return p;
}

namespace {

struct Line {
  double intercept = 0, slope = 0;
  size_t n = 0;
};

Line least_squares(const std::vector<std::pair<double, double>>& xy) {
  Line l;
  l.n = xy.size();
  if (l.n < 2) return l;
  double sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const auto& [x, y] : xy) sx += x, sy += y, sxx += x * x, sxy += x * y;
  double n = static_cast<double>(l.n), d = n * sxx - sx * sx;
  if (d == 0) return l;
  l.slope = (n * sxy - sx * sy) / d;
  l.intercept = (sy - l.slope * sx) / n;
  return l;
}

}  // namespace

CalibrationSides fit_sides(const std::vector<RoundTrip>& samples, uint64_t s, uint64_t S, double W) {
  auto segment = [&](double w, auto in_segment, bool send_time) {
    std::vector<std::pair<double, double>> xy;
    for (const auto& r : samples)
      if (r.w == w && in_segment(r.k) && (!send_time || r.send_ns > 0))
        xy.emplace_back(static_cast<double>(r.k), send_time ? r.send_ns : r.rtt_ns);
    return least_squares(xy);
  };
  auto need = [](const Line& l, const char* what) {
    if (l.n < 2) throw ParamError(fmt::format("calibration: fewer than two sizes {}", what));
  };
  auto is_short = [&](uint64_t k) { return k <= s; };
  auto is_eager = [&](uint64_t k) { return k > s && k <= S; };
  auto is_rndv = [&](uint64_t k) { return k > S; };
  auto below_S = [&](uint64_t k) { return k <= S; };
  CalibrationSides c;
  c.s = s;
  c.S = S;
  c.W = W;
  Line w0_short = segment(0, is_short, false), wW_eager = segment(W, below_S, false);
  Line w0_rndv = segment(0, is_rndv, false), wW_rndv = segment(W, is_rndv, false);
  Line send = segment(W, below_S, true);
  need(w0_short, "at or below s with w = 0");
  need(wW_eager, "at or below S with w = W");
  need(w0_rndv, "above S with w = 0");
  need(wW_rndv, "above S with w = W");
  need(send, "with a measured send time at or below S");
  c.intercept_w0 = w0_short.intercept;
  c.slope_w0_short = w0_short.slope;
  c.intercept_wW = wW_eager.intercept;
  c.slope_wW_eager = wW_eager.slope;
  c.slope_w0_rndv = w0_rndv.slope;
  c.slope_wW_rndv = wW_rndv.slope;
  c.send_at_S = send.intercept + send.slope * static_cast<double>(S);
  if (s < S) {
    Line w0_eager = segment(0, is_eager, false);
    need(w0_eager, "between s and S with w = 0");
    c.slope_w0_eager = w0_eager.slope;
  }
  return c;
}

Calibration calibrate(const std::vector<RoundTrip>& samples, double W) {
  std::vector<RoundTrip> slow, fast;  // w = W, w = 0
  for (const auto& r : samples) (r.w > 0 ? slow : fast).push_back(r);
  auto by_k = [](const RoundTrip& a, const RoundTrip& b) { return a.k < b.k; };
  std::sort(slow.begin(), slow.end(), by_k);
  std::sort(fast.begin(), fast.end(), by_k);
  if (slow.size() < 4 || fast.size() < 4) throw ParamError("calibration: fewer than four sizes measured");
  Calibration c;
  // S: sends at or below it return at once while the receiver computes for W
  size_t last_eager = 0;
  bool any_eager = false;
  for (size_t i = 0; i < slow.size() && slow[i].send_ns < W / 2; i++) last_eager = i, any_eager = true;
  if (!any_eager) throw ParamError("calibration: even the smallest send waited for its receiver");
  c.S = slow[last_eager].k;
  c.S_next = last_eager + 1 < slow.size() ? slow[last_eager + 1].k : 0;
  // s: the split of the w = 0 curve below S that most reduces the residuals of two lines against one
  std::vector<std::pair<double, double>> xy;
  for (const auto& r : fast)
    if (r.k <= c.S) xy.emplace_back(static_cast<double>(r.k), r.rtt_ns);
  auto sse = [](const std::vector<std::pair<double, double>>& pts, size_t from, size_t to) {
    std::vector<std::pair<double, double>> part(pts.begin() + from, pts.begin() + to);
    Line l = least_squares(part);
    double e = 0;
    for (const auto& [x, y] : part) e += (y - l.intercept - l.slope * x) * (y - l.intercept - l.slope * x);
    return e;
  };
  c.s = c.S;
  if (xy.size() >= 6) {
    double one = sse(xy, 0, xy.size()), best = one;
    size_t best_split = xy.size();
    for (size_t j = 3; j + 3 <= xy.size(); j++) {
      double two = sse(xy, 0, j) + sse(xy, j, xy.size());
      if (two < best) best = two, best_split = j;
    }
    if (best_split < xy.size() && best < 0.25 * one) c.s = static_cast<uint64_t>(xy[best_split - 1].first);
  }
  CalibrationSides sides = fit_sides(samples, c.s, c.S, W);
  c.params = solve_calibration(sides, c.clamped);
  LogGPS m(c.params);
  double sum = 0;
  for (const auto& r : samples) {
    double e = (m.round_trip(r.k, r.w) - r.rtt_ns) / r.rtt_ns;
    sum += e * e;
  }
  c.residual_rms = std::sqrt(sum / static_cast<double>(samples.size()));
  return c;
}

EagerTerms fit_eager_terms(const std::vector<RoundTrip>& all_eager, double W) {
  std::vector<std::pair<double, double>> send, slow, fast;
  EagerTerms e;
  std::set<uint64_t> waited;
  for (const auto& r : all_eager)
    if (r.w > 0 && r.send_ns >= W / 2) waited.insert(r.k);
  e.left_out = waited.size();
  for (const auto& r : all_eager) {
    if (waited.count(r.k)) continue;
    const double k = static_cast<double>(r.k);
    e.largest = std::max(e.largest, r.k);
    (r.w > 0 ? slow : fast).emplace_back(k, r.rtt_ns);
    if (r.w > 0 && r.send_ns > 0) send.emplace_back(k, r.send_ns);
  }
  if (send.size() < 2 || slow.size() < 2 || fast.size() < 2)
    throw ParamError("calibration: fewer than two sizes were sent eagerly in the sweep with the eager limit raised");
  auto clamp = [&](double v, const char* name) {
    if (v >= 0) return v;
    e.clamped.push_back(fmt::format("{} = {}", name, v));
    return 0.0;
  };
  const double oss = least_squares(send).slope, both = least_squares(slow).slope, all = least_squares(fast).slope / 2;
  e.Oss = clamp(oss, "Oss");
  e.Ors = clamp(both - e.Oss, "Ors");
  e.Gs = clamp(all - e.Oss - e.Ors, "Gs");
  return e;
}

}  // namespace mpiadvise

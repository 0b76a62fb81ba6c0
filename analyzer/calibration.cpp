#include "calibration.hpp"

#include <cmath>

#include <fmt/format.h>

namespace mpiadvise {

LogGPSParams solve_calibration(const CalibrationSides& in) {
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

}  // namespace mpiadvise

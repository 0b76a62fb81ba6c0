// The calibration fit (the paper's sections 4.1 and 4.2): the eight equations solved from the paper's
// own measured right-hand sides, and parameters recovered from round-trip curves.
#include <catch2/catch.hpp>

#include <cmath>
#include <random>

#include "calibration.hpp"

using namespace mpiadvise;
using Catch::Detail::Approx;

namespace {

// The paper's measured right-hand sides on Myrinet (ns; W = 5e5, s = 8191, S = 16383), with the erratum
// of loggps.md: o' + S Oss is 8.893013e4, not e6.
CalibrationSides myrinet_sides() {
  CalibrationSides c;
  c.W = 5e5;
  c.s = 8191;
  c.S = 16383;
  c.intercept_w0 = 2.862000e4;
  c.intercept_wW = 5.134580e5;
  c.slope_wW_eager = 9.733257;
  c.slope_w0_short = 4.979819e1;
  c.slope_w0_eager = 1.955259e1;
  c.slope_w0_rndv = 1.740265e1;
  c.slope_wW_rndv = 1.350428e1;
  c.send_at_S = 8.893013e4;
  return c;
}

LogGPSParams table5_myrinet() {
  LogGPSParams p;
  p.L = 850, p.o = 6730, p.Oss = 5.02, p.Ors = 4.72, p.Gs = 15.17, p.Osl = 4.80, p.Orl = 3.86, p.Gl = 0.04;
  p.s = 8191, p.S = 16383;
  return p;
}

std::vector<RoundTrip> curves(const LogGPSParams& p, double W, double noise, unsigned seed) {
  LogGPS m(p);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> jitter(-noise, noise);
  std::vector<RoundTrip> out;
  for (uint64_t k = 0; k <= 4 * p.S; k += p.S / 32)
    for (double w : {0.0, W}) {
      RoundTrip r;
      r.k = k;
      r.w = w;
      r.rtt_ns = m.round_trip(k, w) * (1 + jitter(rng));
      if (w == W) r.send_ns = m.send(k, 0, 0) * (1 + jitter(rng));
      out.push_back(r);
    }
  return out;
}

}  // namespace

TEST_CASE("the paper's Myrinet right-hand sides give Table 5's Myrinet row", "[calibration][paper]") {
  LogGPSParams p = solve_calibration(myrinet_sides());
  CHECK(p.o == Approx(6729).margin(0.5));  // loggps.md: o' = 6729, L = 852, Oss = 5.018
  CHECK(p.L == Approx(852).margin(0.5));
  CHECK(p.Oss == Approx(5.018).margin(0.001));
  LogGPSParams t = table5_myrinet();
  // every per-byte parameter to the two decimals Table 5 prints
  CHECK(std::round(p.Oss * 100) / 100 == Approx(t.Oss));
  CHECK(std::round(p.Ors * 100) / 100 == Approx(t.Ors));
  CHECK(std::round(p.Gs * 100) / 100 == Approx(t.Gs));
  CHECK(std::round(p.Osl * 100) / 100 == Approx(t.Osl));
  CHECK(std::round(p.Orl * 100) / 100 == Approx(t.Orl));
  CHECK(std::round(p.Gl * 100) / 100 == Approx(t.Gl));
  // and Table 5's o' and L to the tens the paper prints them in
  CHECK(std::round(p.o / 10) * 10 == Approx(t.o));
  CHECK(std::round(p.L / 10) * 10 == Approx(t.L));
}

TEST_CASE("round-trip curves without noise give back the parameters they came from", "[calibration]") {
  LogGPSParams truth = table5_myrinet();
  LogGPSParams p = solve_calibration(fit_sides(curves(truth, 5e5, 0, 1), truth.s, truth.S, 5e5));
  CHECK(p.o == Approx(truth.o).epsilon(1e-9));
  CHECK(p.L == Approx(truth.L).epsilon(1e-6));
  for (auto [got, want] : {std::pair{p.Oss, truth.Oss}, {p.Ors, truth.Ors}, {p.Gs, truth.Gs}, {p.Osl, truth.Osl},
                           {p.Orl, truth.Orl}, {p.Gl, truth.Gl}})
    CHECK(got == Approx(want).margin(1e-9));
}

TEST_CASE("noisy round-trip curves give parameters whose curves agree with the truth within the noise",
          "[calibration]") {
  LogGPSParams truth = table5_myrinet();
  const double noise = 0.002;  // +-0.2% on every measurement
  for (unsigned seed : {1u, 2u, 3u}) {
    LogGPSParams p = solve_calibration(fit_sides(curves(truth, 5e5, noise, seed), truth.s, truth.S, 5e5));
    LogGPS fitted(p), real(truth);
    // the lines are fitted to whole segments: their error is the noise of the segment's largest times
    double largest = real.round_trip(4 * truth.S, 5e5);
    for (uint64_t k = 0; k <= 4 * truth.S; k += 1024)
      for (double w : {0.0, 5e5}) {
        INFO("seed " << seed << " k " << k << " w " << w);
        CHECK(std::abs(fitted.round_trip(k, w) - real.round_trip(k, w)) <= noise * largest);
      }
    CHECK(p.o == Approx(truth.o).epsilon(0.1));
    CHECK(p.Oss + p.Ors == Approx(truth.Oss + truth.Ors).epsilon(0.05));
  }
}

TEST_CASE("with s = S the rendezvous receive terms are known only as their sum, as for the Cenju-4", "[calibration]") {
  LogGPSParams truth = table5_myrinet();
  truth.s = truth.S;
  truth.Orl = 0.10;
  truth.Gl = 0.18;
  // W must exceed a one-way eager transfer of S bytes (here 16383 bytes at Gs): the method's premise
  LogGPSParams p = solve_calibration(fit_sides(curves(truth, 2e6, 0, 1), truth.s, truth.S, 2e6));
  CHECK(p.Orl == 0);
  CHECK(p.Gl == Approx(0.28).margin(1e-9));
}

TEST_CASE("curves the model cannot explain, or too few sizes, are refused", "[calibration][errors]") {
  CalibrationSides bad = myrinet_sides();
  bad.intercept_w0 = 1000;  // 4o' + 2L below 4o': a negative latency
  CHECK_THROWS_WITH(solve_calibration(bad), Catch::Contains("L = ") && Catch::Contains("negative"));
  std::vector<RoundTrip> few{{0, 0, 1000, 0}, {0, 5e5, 501000, 900}};
  CHECK_THROWS_WITH(fit_sides(few, 8191, 16383, 5e5), Catch::Contains("fewer than two sizes"));
}

TEST_CASE("a sweep with every size eager gives back the eager terms it came from", "[calibration]") {
  // Table 5's Myrinet row with S made infinite: every size of the sweep eager, as with the limit raised
  LogGPSParams p = table5_myrinet();
  p.s = p.S = LogGPSParams::kInfinite;
  LogGPS m(p);
  std::vector<RoundTrip> sweep;
  // W above the communication of the largest size (15.17 ns/B x 1 MiB is 16 ms), the method's premise
  for (uint64_t k = 0; k <= 1 << 20; k += 1 << 16)
    for (double w : {0.0, 1e8}) sweep.push_back({k, w, m.round_trip(k, w), w > 0 ? m.send(k, 0, 0) : 0.0});
  EagerTerms e = fit_eager_terms(sweep, 1e8);
  CHECK(e.Oss == Approx(5.02));
  CHECK(e.Ors == Approx(4.72));
  CHECK(e.Gs == Approx(15.17));
  CHECK(e.largest == 1u << 20);
  CHECK(e.clamped.empty());
  CHECK(e.left_out == 0);
  CHECK_THROWS_AS(fit_eager_terms({sweep[0], sweep[1]}, 1e8), ParamError);
  // sizes whose send waited for the receiver (the raised limit did not reach them) are left out
  std::vector<RoundTrip> partly = sweep;
  for (auto& r : partly)
    if (r.k > (1u << 19)) {
      if (r.w > 0) r.send_ns = 1e8, r.rtt_ns *= 3;
      else r.rtt_ns *= 3;
    }
  EagerTerms p2 = fit_eager_terms(partly, 1e8);
  CHECK(p2.left_out == 8);
  CHECK(p2.largest == 1u << 19);
  CHECK(p2.Oss == Approx(5.02));
  CHECK(p2.Gs == Approx(15.17));
}

// Calibration by the paper's method (sections 4.1, 4.2): round trips of k bytes with w = 0 and with a
// dummy computation of W ns before one side receives give two intercepts and five slopes, and the send
// time at k = S one more value; the eight equations of ../shared/docs/loggps.md then give the parameters.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "loggps.hpp"

namespace mpiadvise {

// The right-hand sides of the eight equations, ns and ns per byte.
struct CalibrationSides {
  double W = 0;                 // the dummy computation
  double intercept_w0 = 0;      // 4o' + 2L
  double intercept_wW = 0;      // 2o' + W
  double slope_wW_eager = 0;    // Oss + Ors                (w = W, k <= S)
  double slope_w0_short = 0;    // 2(Oss + Ors + Gs)        (w = 0, k <= s)
  double slope_w0_eager = 0;    // 2(Oss + Ors + Gl)        (w = 0, s < k <= S); unused when s = S
  double slope_w0_rndv = 0;     // 2(Osl + Orl + Gl)        (w = 0, k > S)
  double slope_wW_rndv = 0;     // 2Osl + Orl + Gl          (w = W, k > S)
  double send_at_S = 0;         // o' + S Oss               (MPI_Send time of an S-byte message)
  uint64_t s = 0, S = 0;
};

// Solves the eight equations. When s = S there is no eager segment above s, Gl and Orl appear only
// as their sum, and the sum is put in Gl (as the paper's Cenju-4 row gives only Orl + Gl). Throws
// ParamError when the sides give a negative parameter (the curves do not follow the model).
LogGPSParams solve_calibration(const CalibrationSides& sides);

// One measurement of the benchmark.
struct RoundTrip {
  uint64_t k = 0;     // bytes
  double w = 0;       // ns of computation before the receive
  double rtt_ns = 0;  // round-trip time
  double send_ns = 0; // time of the blocking send (0 where not measured)
};

// Least squares over every size: a line per segment (k <= s, s < k <= S, k > S) and per w, whose
// intercepts and slopes are the sides. Needs at least two sizes in each segment it uses. The method's
// premise: W exceeds the round trip's communication below S (T1 + 2T2' + T3 at k = S), so that the
// w = W curve there is W plus the overheads alone.
CalibrationSides fit_sides(const std::vector<RoundTrip>& samples, uint64_t s, uint64_t S, double W);

}  // namespace mpiadvise

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
// The same, but a parameter the sides make negative is set to 0 and named in clamped (real curves,
// such as loopback TCP's, follow the model only roughly).
LogGPSParams solve_calibration(const CalibrationSides& sides, std::vector<std::string>& clamped);

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

// What a calibration run found.
struct Calibration {
  LogGPSParams params;
  uint64_t s = 0;                 // largest message sent as one packet (a breakpoint of the w = 0 curve)
  uint64_t S = 0;                 // effective S: the largest size whose send returned without its receiver
  uint64_t S_next = 0;            // the next size of the sweep, whose send waited (0: none waited)
  double residual_rms = 0;        // relative RMS of the model's round trips against the measured ones
  std::vector<std::string> clamped;
};

// From the benchmark's samples: S from the send times with w = W (a send that waits takes about W),
// s by the change point of the w = 0 curve below S (two lines against one, by residuals), then the fit.
Calibration calibrate(const std::vector<RoundTrip>& samples, double W);

// The eager terms over the whole range of sizes, from a sweep run with the eager limit raised above the
// largest size (every send eager): the slope of the send time is Oss, that of the w = W round trip
// Oss + Ors, that of the w = 0 round trip 2(Oss + Ors + Gs). A what-if that raises S makes messages
// eager that the sweep at the configured limit sent by rendezvous; these price them. The premise, as
// for fit_sides: W exceeds the communication of the largest size. A term the slopes make negative is
// set to 0 and named in clamped.
// Sizes whose send with w = W took W/2 or more waited for their receiver (not eager: the raised limit
// did not reach them) and are left out; fewer than two eager sizes left is a ParamError.
struct EagerTerms {
  double Oss = 0, Ors = 0, Gs = 0;
  uint64_t largest = 0;  // the largest eager size of the sweep
  size_t left_out = 0;   // sizes left out because their send waited
  std::vector<std::string> clamped;
};
EagerTerms fit_eager_terms(const std::vector<RoundTrip>& all_eager, double W);

}  // namespace mpiadvise

// Whether the model explains a run: the replay of the run as measured against the measurement, where the
// two part (ranks, call sites) and what the trace suggests as the reason. The report says so and weakens
// its advice when the model misses by more than it is expected to.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "message_probe.hpp"
#include "replay.hpp"
#include "run_facts.hpp"
#include "waits.hpp"

namespace mpiadvise {

// The paper's model reproduced its runs within 7.2%; beyond 10% a prediction is not trusted.
inline constexpr double kExpectedModelError = 0.10;

enum class MissReason : uint8_t {
  ParameterSet,  // the parameter set was not measured for this library or transport
  Polling,       // the ranks poll (MPI_Test/Iprobe loops): that time is replayed as measured
  SlowCalls,     // calls far slower than the rest at their site: descheduling, or waits the log cannot see
  Collectives,   // much of the time is in collectives, where the replay follows the library least closely
  SlowMessages,  // point-to-point calls take longer than the set prices their messages: a loaded machine,
                 // or a set that does not fit it
  Oversubscribed,  // more ranks on a host than it has CPUs: they share cores, and the model gives each its own
  FastMessages,    // point-to-point calls take less time than the set prices their messages: a set measured
                   // on a slower or loaded machine, or by a calibration a disturbed run threw off
};
const char* miss_reason_name(MissReason r);

struct ModelFit {
  double error = 0;  // (predicted - measured) / measured, of the run
  bool explained = true;
  struct RankMiss {
    int rank = 0;
    double measured_ns = 0, predicted_ns = 0, error = 0;
  };
  std::vector<RankMiss> ranks;  // ranks missed by more than expected, worst first
  // A call site whose time inside MPI the replay misses most (measured against predicted, every rank).
  struct SiteMiss {
    int rank = 0;  // a rank with the site, for naming it
    uint32_t callsite = 0, call = 0;
    double measured_ns = 0, predicted_ns = 0;
  };
  std::vector<SiteMiss> sites;  // at most three, largest difference first
  struct Suspect {
    MissReason reason;
    double share = 0;    // of the ranks' measured time it concerns
    std::string detail;  // what in the trace points to it
    int rank = -1;       // where it is most (or -1)
    uint32_t callsite = 0;
  };
  std::vector<Suspect> suspects;  // most weight first
};

// The run's speed, where the set's calibration found the machine at several ([machine] in the set): when
// the set as it is replays the run more than kExpectedModelError off, the set scaled to each other speed
// the calibration saw (LogGPSParams::speeds) is replayed too, and the one closest to the measured run
// wins if it is closer than the set's own. The machine's speed is a fact of the run, read from its own
// times as the library and transport are read from its header; only speeds the calibration measured are
// candidates. None: the set as it is.
struct RunSpeed {
  double factor = 1;                   // LogGPSParams::scaled's
  bool faster = false;                 // factor < 1
  double error_set = 0, error_run = 0;  // the replay's error with the set as it is, and scaled
};
std::optional<RunSpeed> run_speed(const Trace& trace, const RunFacts& facts, const LogGPSParams& params);
// The same, the replays reading the ranks' ops from their op streams (ReplayOptions::streams, a trace
// without its ops beside them): the same speed, to the bit.
std::optional<RunSpeed> run_speed(const Trace& trace, const std::shared_ptr<const std::vector<OpStream>>& streams,
                                  const RunFacts& facts, const LogGPSParams& params);

// The speed of the run's messages against the set's: each size's median round trip (both probes' rounds
// together) against the set's model of it (LogGPS::round_trip(k, 0), the steady ping-pong the calibration
// timed), and the mean of those ratios (geometric) weighted by where the run's point-to-point messages
// spend the set's time (a message of a size between two probed ones takes the ratio interpolated between
// theirs over log(1 + size)): the factor by which the set's times are scaled to the run
// (LogGPSParams::scaled). The messages went faster than the set prices them where factor < 1. A machine
// whose messages of one size go faster than the set says and of another slower (8 KiB at x0.9 and 64 KiB
// at x1.14 over shared memory in one run here) is scaled for the sizes the run sends.
struct ProbeSpeed {
  double factor = 1;
  std::vector<uint64_t> bytes;
  std::vector<double> measured_ns, model_ns;  // per size: the median round trip, and the set's
  std::optional<double> init, finalize;       // the factor from each probe alone
  int partner = 1;                            // MessageProbe's
};
std::optional<ProbeSpeed> probe_speed(const MessageProbe& probe, const LogGPSParams& params, const Trace& trace);
// The same, the run's messages read from the ranks' op streams, each once (MessageSides).
std::optional<ProbeSpeed> probe_speed(const MessageProbe& probe, const LogGPSParams& params,
                                      const std::vector<OpStream>& streams);
// A factor beyond these is no speed of the machine the set was measured on (here the runs' went at
// 0.72 to 1.67 of their sets' times): a set for another machine or transport, or a damaged log. The
// report then leaves the set's times as they are, and says so.
inline constexpr double kProbeFactorMin = 0.2, kProbeFactorMax = 5;

ModelFit assess_fit(const Trace& trace, const RunFacts& facts, const LogGPSParams& params, const ReplayResult& baseline);
// The same reading the ranks' ops from their op streams, one rank's at a time (the trace is asked its call
// sites and its ranks' hosts alone).
ModelFit assess_fit(const Trace& trace, const std::vector<OpStream>& streams, const RunFacts& facts,
                    const LogGPSParams& params, const ReplayResult& baseline);

// The share of the bytes sent that went again unchanged (Message::cached, trace.hpp: RESENT with less
// computation between than rewriting the bytes takes). The fast_messages suspect names it from 10% up: a
// set measured with data written just before each send prices them at its [resend] factors, or as
// fresh data where it has none (over shared memory a receiver copies data it has just read faster: the
// plain halo over vader was +25% without a [resend] table, -4.6% with one; the packed one +0.2% either way).
double cached_resend_share(const Trace& trace);
double cached_resend_share(const std::vector<OpStream>& streams);

}  // namespace mpiadvise

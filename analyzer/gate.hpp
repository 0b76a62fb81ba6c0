// mpiadvise gate, the comparison: the figures of a run that tell a change of the program from the noise
// of the machine, and the verdict on candidate runs against baseline runs. See mpiadvise-gate(1).
//
// Structural figures (calls, messages and bytes per call site and protocol) come from the program and
// compare exactly. Time figures come from a replay of the steady trace (steady_trace.hpp: pauses of the
// machine taken out of the repeated intervals, ranks started together), and carry two estimates of the
// run's own noise: the standard deviation of the figure over kNoiseReplays replays in which every
// repeated interval moves by its noise (and all of a rank's, and all instances of one interval,
// together: kRankSpeedNoise, kIntervalShiftNs); and how much the figure moves when every interval is
// cut to what it takes at least (its median; a one-off to nothing), which bounds what pauses the
// steady trace could not tell apart may have added. A time figure regresses when it grows by more
// than the larger of the allowed share and the band, plus kTimeFloorShare of the predicted run time
// (kWaitFloorShare for a wait):
//   kBandSigmas * sqrt(se_baseline^2 + se_candidate^2) + pause_baseline + pause_candidate
// where se is the standard error of a side's median run (the larger of the runs' own standard
// deviation and the spread between its runs, over sqrt(runs)), and pause the median over its runs.
#pragma once

#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "analysis.hpp"
#include "op_stream.hpp"

namespace mpiadvise::gate {

inline constexpr const char* kFiguresSchema = "mpiadvise-gate-figures/1";  // the "gate" object of a report
inline constexpr int kNoiseReplays = 16;
// From run to run a rank computes faster or slower as a whole (the core it ran on, what shared its
// cache), and every instance of one interval is longer or shorter together (the tracer's own time
// between two calls, the state of the caches): standard deviations of 3% of each repeated interval,
// drawn once per rank, and 250 ns, drawn once per interval, as measured on a loaded machine
// (mpiadvise-gate(1)).
inline constexpr double kRankSpeedNoise = 0.03;
inline constexpr double kIntervalShiftNs = 250;
inline constexpr double kBandSigmas = 4;
inline constexpr double kTimeFloorShare = 0.001;  // of the baseline's predicted run time, always allowed
// A wait (send-wait, receive-wait, a site's) may always grow by this share of the predicted run time:
// where the communication is cheap (shared memory) the waiting moves between the ranks from one
// unchanged run to the next more than a run's own noise shows. Measured on examples/halo.c over vader
// with two busy loops: a send-wait of 89 to 133 us in 13 runs of 14 and 1.3 us in one (runs of 5.5 ms).
inline constexpr double kWaitFloorShare = 0.03;

// A bad "gate" object in a report: names the file and the key.
class FiguresError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A figure of time from one run: its value in the steady replay; the standard deviation of that value
// from run to run as the run's repeated intervals let estimate it; and how much it moves when every
// interval is cut to its median, every one-off to nothing (what pauses could have added or taken).
struct TimeFigure {
  double ns = 0, noise_ns = 0, pause_ns = 0;
};

// A call site as the gate names it: a source line (or module and offset) and the MPI call made there,
// all ranks and call stacks through that line together.
struct SiteFigures {
  std::string name;                  // "file:line (function) MPI_Send"
  std::string file, function, call;  // file empty without line information
  int line = 0;
  uint64_t calls = 0;                // calls completed there (runs of unsuccessful tests not counted)
  bool calls_timed = false;          // how many calls is the timing's doing (Waitsome, Testany, Iprobe)
  uint64_t eager_messages = 0, eager_bytes = 0, rendezvous_messages = 0, rendezvous_bytes = 0;  // sent there
  TimeFigure wait;                   // predicted send- and receive-wait there
  double measured_wait_ns = 0;
  uint64_t messages() const { return eager_messages + rendezvous_messages; }
  uint64_t bytes() const { return eager_bytes + rendezvous_bytes; }
};

struct RunFigures {
  std::string source;  // the log directory or report file
  std::string params;  // the parameter set's name
  int ranks = 0;
  uint64_t calls = 0, messages = 0, bytes = 0, rendezvous_messages = 0, rendezvous_bytes = 0;
  TimeFigure predicted, send_wait, recv_wait;
  double measured_ns = 0, measured_send_wait_ns = 0, measured_recv_wait_ns = 0;
  uint64_t intervals = 0, repeated_intervals = 0, replaced_intervals = 0;  // of the steady trace
  std::vector<SiteFigures> sites;
  // the figures are of the part of the run before until_s and from from_s seconds after its start (--until,
  // --from: Analysis::part); neither: of the whole run
  std::optional<double> until_s, from_s;
};

// The figures of an analysed run: 2 + kNoiseReplays replays under its chosen parameter set. Given the
// op streams of its trace (OpStream::encode_all), they are read from them where the trace's ops were:
// its intervals (a rank's stream at a time), their retiming and the replays (a cursor a rank for each,
// at once), the sites' calls and messages (a rank's stream at a time); the trace's call sites and
// communicators alone are read. The same figures, to the bit.
RunFigures run_figures(const Analysis& a, std::shared_ptr<const std::vector<OpStream>> streams = nullptr);

nlohmann::json figures_json(const RunFigures& f);
// Names are the job's bytes (text_escape.hpp): figures_json holds them as they are, for the report's
// json_safe; figures_from_json expects them decoded (decode_json_strings on the report read back).
// Throws FiguresError naming where and the key that is missing or of the wrong type.
RunFigures figures_from_json(const nlohmann::json& j, const std::string& where);
// The figures of a report file's text (mpiadvise report --format json), as mpiadvise gate reads one: parsed
// no deeper than kMaxJsonDepth (log_header.hpp), its strings decoded, checked as a report (check_report),
// its "gate" object read. Throws FiguresError naming `where` and what is wrong, in one line: not JSON (and
// the byte), nested too deeply, not a report of this version, no gate figures, a bad key.
RunFigures figures_from_report(std::string_view text, const std::string& where);

// ---- the verdict ------------------------------------------------------------------------------------------
enum class Metric { PredictedTime, SendWait, RecvWait, Messages, Bytes, RendezvousMessages, RendezvousBytes, Calls, Sites };

struct MetricInfo {
  Metric metric;
  const char* name;
  bool time;
  bool sized;  // a number of bytes
  const char* what;
};
const std::vector<MetricInfo>& metrics();
const MetricInfo* metric_named(std::string_view name);

// METRIC<=LIMIT for the candidate alone.
struct Budget {
  std::string text;
  Metric metric = Metric::PredictedTime;
  double limit = 0;    // ns, bytes or a count; a fraction when share
  bool share = false;  // of the ranks' predicted time (send_wait, recv_wait)
};

struct GateOptions {
  double max_regression = 0.05;  // growth allowed whatever the noise (a machine of another speed)
  std::set<Metric> metrics;      // checked; empty: all
  std::vector<Budget> budgets;
};

// One figure compared.
struct FigureCheck {
  std::string figure;  // "predicted_time", "messages", "wait", ...
  bool time = false;
  double baseline = NAN, candidate = NAN;  // the median over each side's runs
  double band = 0;     // time: the noise band (ns); counts: 0, or how much the baseline's runs differ
  double limit = NAN;  // above it the figure regressed
  double measured_baseline = NAN, measured_candidate = NAN;  // for information
  bool varies = false;  // a count that differs between the runs of one side
  bool failed = false;
};

enum class CheckGroup { Metrics, Sites, Budgets };
const char* group_name(CheckGroup g);

struct Check {
  CheckGroup group = CheckGroup::Metrics;
  std::string name;
  std::vector<FigureCheck> figures;
  bool failed = false;
};

struct Verdict {
  std::vector<Check> checks;
  bool failed = false;
  size_t baseline_runs = 0, candidate_runs = 0;
  double max_regression = 0;
  std::set<std::string> baseline_params, candidate_params;  // names of the parameter sets of each side
  uint64_t intervals = 0, replaced_intervals = 0;           // of every run: measured, taken for pauses
};

// baseline may be empty (budgets only); candidate may not.
Verdict compare(const std::vector<RunFigures>& baseline, const std::vector<RunFigures>& candidate,
                const GateOptions& options);

// Whether the verdict failed on time figures alone (no count and no budget failed) with a side of a single
// run, whose band holds nothing of how the machine's speed moves from one run to the next: one run a side
// of examples/halo.c over TCP with the cores loaded failed at +6.8% twice in a row on one machine.
bool failed_on_times_of_one_run(const Verdict& v);

}  // namespace mpiadvise::gate

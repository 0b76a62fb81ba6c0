// The report of one traced job as a value: every figure `mpiadvise report` shows, computed once by the
// analyzer (report.cpp) and only presented by the renderers (text, Markdown, JSON, HTML). Its JSON form
// is the schema mpiadvise-report/1 that mpiadvise-report(1) documents: the member names below are the
// JSON keys, the serialisation is nlohmann-json's type macros (report_types.cpp), and a member that
// is std::optional is written as null when empty, except where a comment says it is left out.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "gate.hpp"
#include "loggps.hpp"

namespace mpiadvise::report {

// A byte count that may be infinite (an s or S without limit): "inf" in JSON.
struct Bytes {
  uint64_t value = 0;
  bool infinite() const { return value == LogGPSParams::kInfinite; }
};

// Where a call is: "text" always; file and line, function, module and offset when known, source (the
// line's text) when the report draws pictures and the file is readable. Absent parts are left out.
struct Location {
  std::string text = "?";
  std::optional<std::string> file;
  std::optional<int> line;
  std::optional<std::string> function, module;
  std::optional<uint64_t> offset;
  std::optional<std::string> source;
};

struct Summary {
  int ranks = 0;
  uint64_t ranks_logged = 0;
  std::vector<std::string> hosts;
  std::string library, library_version, transport, eager_setting;
  std::optional<uint64_t> configured_S;
  std::optional<std::string> configured_setting;  // the value as set, or as the log names it
  std::optional<uint64_t> effective_S;
  std::string effective_S_note;
  double traced_ns = 0, rank_time_ns = 0, mpi_ns = 0, mpi_share = 0;
  uint64_t messages = 0, collectives = 0, unmatched_sends = 0, unmatched_recvs = 0, incomplete_collectives = 0;
};

// The parameter set: params_json's members plus why it was chosen and what it describes.
// The run's message speed from its own round trips (model_fit.hpp, ProbeSpeed), and whether the set was
// scaled to it (not with --at-set-speed)
struct ProbedSpeed {
  int partner = 1;  // the rank that timed the round trips with rank 0
  double factor = 1;
  bool applied = false;
  std::vector<uint64_t> bytes;
  std::vector<double> measured_ns, model_ns;
  std::optional<double> init, finalize;
};

struct Params {
  LogGPSParams values;
  std::string why, description;
  std::optional<ProbedSpeed> run_speed;
};

struct RankMiss {
  int rank = 0;
  double measured_ns = 0, predicted_ns = 0, error = 0;
};
struct SiteMiss {
  Location where;
  std::string call;
  double measured_ns = 0, predicted_ns = 0;
};
struct Suspect {
  std::string reason, detail;
  double share = 0;
  std::optional<int> rank;         // left out when the suspect is the whole run
  std::optional<Location> where;   // with rank
};
struct Fit {
  bool explained = true;
  double expected_error = 0;
  std::vector<RankMiss> ranks;
  std::vector<SiteMiss> sites;
  std::vector<Suspect> suspects;
};

struct Model {
  double measured_ns = 0, predicted_ns = 0, error = 0;
  double predicted_send_wait_ns = 0, predicted_recv_wait_ns = 0, measured_send_wait_ns = 0, measured_recv_wait_ns = 0;
  uint64_t rendezvous_messages = 0, rendezvous_bytes = 0, unresolved_ops = 0;
  Fit fit;
};

// One rank's time by cause: measured from its log, predicted by the replay.
struct MeasuredTimes {
  double total_ns = 0, computation_ns = 0, mpi_ns = 0, send_wait_ns = 0, recv_wait_ns = 0, collectives_ns = 0,
         other_mpi_ns = 0;
};
struct PredictedTimes {
  double total_ns = 0, computation_ns = 0, overhead_ns = 0, send_wait_ns = 0, recv_wait_ns = 0,
         synchronisation_ns = 0, collectives_ns = 0, other_ns = 0,
         other_mpi_ns = 0;  // as measured: inside MPI, neither waiting nor collectives
};
struct Rank {
  int rank = 0;
  MeasuredTimes measured;
  PredictedTimes predicted;
  double error = 0;
};

// The POP efficiency factors of the run, of a phase or of an iteration.
struct Factors {
  double parallel = 0, load_balance = 0, communication = 0, serialisation = 0, transfer = 0;
  double run_ns = 0, model_ns = 0, ideal_ns = 0, mean_computation_ns = 0, max_computation_ns = 0;
};
struct Phase : Factors {
  std::optional<Location> opened_at;  // null: the run's start
};
struct SlowestIteration : Phase {
  uint64_t iteration = 0;  // from 1
};
struct IterationFigures {
  double run_ns = 0, model_ns = 0, parallel = 0, load_balance = 0;
};
struct Iterations {
  uint64_t count = 0;
  std::optional<Location> opened_at;
  Phase before, after;
  double run_ns_median = 0, model_ns_median = 0, parallel_median = 0, load_balance_median = 0, communication_median = 0;
  SlowestIteration slowest;
  std::vector<IterationFigures> each;  // empty beyond kIterationsListed
};
struct Efficiency : Factors {
  int slowest_rank = -1;
  std::vector<Phase> phases;  // MPI_Pcontrol's
  std::string phases_note;
  std::optional<Iterations> iterations;
};

// Where a rank of a run that did not finish was at its end; call, where, for_ns, waits_for and
// any_source are left out for a rank that finished.
struct HangRank {
  int rank = 0;
  std::string state;
  std::optional<std::string> call;
  std::optional<Location> where;
  double for_ns = 0;
  std::vector<int> waits_for;
  bool any_source = false;
};
struct Hang {
  bool finished = true;
  std::vector<HangRank> ranks;
  std::vector<std::vector<HangRank>> deadlocks;
  std::vector<HangRank> waited_for;
};

// A computation: the time a rank spent outside MPI before a call.
struct Computation {
  int rank = 0;
  std::string before_call;
  Location where;
};
struct RootCause : Computation {
  double direct_ns = 0, indirect_ns = 0, total_ns = 0, share_of_waiting = 0;
};
struct RootCauses {
  double waiting_ns = 0, unattributed_ns = 0;
  std::vector<RootCause> causes;
};
// A part of the critical path: a computation (before_call) or an MPI call (call).
struct PathPart {
  int rank = 0;
  bool computation = true;  // JSON: "kind": "computation" or "mpi"
  std::string call;         // JSON: "before_call" for a computation, "call" for MPI
  Location where;
  double ns = 0, share = 0;
  uint64_t times = 0;
};
struct CriticalPath {
  double length_ns = 0, computation_ns = 0, mpi_ns = 0;
  int ends_on_rank = -1;
  uint64_t rank_changes = 0;
  std::vector<PathPart> parts;
};
struct Target : Computation {
  double computation_ns = 0, on_path_ns = 0, saving_if_halved_ns = 0, saving_if_halved = 0;
};

struct ReceiveRank {
  int rank = 0;
  uint64_t receives = 0, posted_early = 0, unexpected_max = 0;
  double unexpected_mean = 0;
  uint64_t unexpected_max_bytes = 0, outstanding_sends_max = 0;
  std::vector<uint32_t> unexpected_by_step;
  double unexpected_peak_ns = 0;
};
struct ReceiveSide {
  uint64_t receives = 0, posted_early = 0;
  double posted_early_share = 0, step_ns = 0;
  std::vector<ReceiveRank> ranks;
};

struct BufferedSend {
  int rank = 0, peer = 0;
  Location where;
  std::string call;
  uint64_t bytes = 0;
};
struct BlockedRank {
  int rank = 0;
  Location where;
  std::string call;
};
struct BufferingCycle {
  std::vector<BufferedSend> sends;
  std::vector<BlockedRank> ranks;
  std::optional<uint64_t> hangs_below_bytes;
  uint64_t times = 0;
};
struct Buffering {
  bool checked = false;
  std::vector<BufferingCycle> deadlocks;
};

struct SizeBin {
  uint64_t min_bytes = 0, max_bytes = 0, count = 0;
};
struct HotSpot {
  Location where;
  std::string call;
  std::vector<int> ranks, peers;
  uint64_t count = 0;
  double waited_ns = 0, share_of_waiting = 0, caused_ns = 0;
  std::string cause;
  std::map<std::string, double> by_cause;
  std::vector<SizeBin> sizes;
};

// Every call site's modelled figures.
struct Site {
  Location where;
  std::string call;
  std::vector<int> ranks;
  uint64_t calls = 0, messages_sent = 0, bytes_sent = 0, rendezvous_messages = 0, rendezvous_bytes = 0;
  double predicted_send_wait_ns = 0, predicted_recv_wait_ns = 0, predicted_wait_ns = 0, measured_wait_ns = 0;
};

struct HaloWhatIf {
  std::string change;  // halo_change_name
  double predicted_ns = 0, saving_ns = 0, saving = 0;
  std::optional<std::string> command;  // the mpiadvise whatif that replays it, where every site has a line
};
struct Halo {
  std::vector<int> ranks;
  std::vector<HaloWhatIf> whatif;
  int neighbours_min = 0, neighbours_max = 0;
  uint64_t bytes_max = 0, exchanges = 0;
  std::vector<Location> send_sites, recv_sites;
  std::string text;
};

// A change weighed by an advisor (advice.hpp), with its what-if replay's figures. The members of the
// kind's own part are written beside the common ones; the parts of other kinds are left out.
struct EagerLimitChange {
  std::string setting;
  uint64_t value = 0, S = 0;
  std::string mca, env;
  uint64_t memory_per_rank_bytes = 0;
  int senders_per_rank = 0;
  std::string caution;
  std::vector<Location> sites;
};
struct SiteChange {  // every kind made at one call site
  Location where;
  std::string call;
  std::optional<uint64_t> halo;  // the index in halos of the exchange the site is part of
  std::vector<int> ranks;
};
struct SplitChange {
  uint64_t chunk_bytes = 0, extra_messages = 0;
  double extra_overhead_ns = 0;
};
struct PrepostChange {
  uint64_t buffer_bytes = 0;
};
struct PersistentChange {
  uint64_t identical_calls = 0;
  double saving_per_call_ns = 0;
};
struct Advice {
  std::string kind;  // advice_kind_name
  std::string title;
  double baseline_ns = 0, predicted_ns = 0, saving_ns = 0, saving = 0, model_error = 0;
  bool uncertain = false;  // the model does not explain the run as measured: the saving is not to be trusted
  double send_wait_before_ns = 0, send_wait_after_ns = 0, recv_wait_before_ns = 0, recv_wait_after_ns = 0;
  uint64_t messages = 0;
  std::optional<EagerLimitChange> eager;
  std::optional<SiteChange> at;
  std::optional<SplitChange> split;
  std::optional<PrepostChange> prepost;
  std::optional<PersistentChange> persistent;
};

// The figures of the pictures (report --format html draws them).
struct SweepPoint {
  uint64_t S = 0;
  double predicted_ns = 0, send_wait_ns = 0;
  uint64_t rendezvous_messages = 0;
};
struct SSweep {
  Bytes current_S;
  std::optional<uint64_t> advised_S, considered_S;
  std::vector<SweepPoint> points;
};
struct SizeProtocolBin {
  int log2 = 0;  // -1: 0 bytes
  uint64_t min_bytes = 0, max_bytes = 0, eager_messages = 0, rendezvous_messages = 0, eager_bytes = 0,
           rendezvous_bytes = 0;
};
struct MessageSizes {
  Bytes S;
  std::vector<SizeProtocolBin> bins;
};
struct TimelineCall {
  int rank = 0;
  std::string call;
  std::string class_;  // JSON: "class"
  uint64_t site = 0;   // index in sites
  std::array<double, 2> measured_ns{}, predicted_ns{};
};
struct TimelineMessage {
  uint64_t from = 0, to = 0;  // indices in calls
  uint64_t bytes = 0;
};
struct Timeline {
  int ranks_shown = 0, ranks = 0;
  std::vector<TimelineCall> calls;
  std::vector<TimelineMessage> messages;
  std::vector<std::string> sites;
  double end_ns = 0;
  bool truncated = false;
};
struct Charts {
  SSweep s_sweep;
  MessageSizes message_sizes;
  Timeline timeline;
};

struct Report {
  std::string schema, generator, dir;
  Summary summary;
  Params params;
  Model model;
  std::vector<Rank> ranks;
  Efficiency efficiency;
  Hang hang;
  RootCauses root_causes;
  CriticalPath critical_path;
  std::vector<Target> targets;
  ReceiveSide receive_side;
  Buffering buffering;
  std::vector<HotSpot> hot_spots;
  std::vector<Site> sites;
  std::optional<gate::RunFigures> gate;  // left out unless asked for (what mpiadvise gate compares)
  std::vector<Halo> halos;
  std::vector<Advice> advice, considered;
  std::optional<Charts> charts;  // left out unless asked for
  std::vector<std::string> notes, problems;
};

// The JSON form (schema mpiadvise-report/1) and back; from_json throws nlohmann's type_error or
// out_of_range naming the key that is wrong.
void to_json(nlohmann::json& j, const Bytes& v);
void from_json(const nlohmann::json& j, Bytes& v);
void to_json(nlohmann::json& j, const Location& v);
void from_json(const nlohmann::json& j, Location& v);
void to_json(nlohmann::json& j, const ProbedSpeed& v);
void from_json(const nlohmann::json& j, ProbedSpeed& v);
void to_json(nlohmann::json& j, const Params& v);
void from_json(const nlohmann::json& j, Params& v);
void to_json(nlohmann::json& j, const Suspect& v);
void from_json(const nlohmann::json& j, Suspect& v);
void to_json(nlohmann::json& j, const HangRank& v);
void from_json(const nlohmann::json& j, HangRank& v);
void to_json(nlohmann::json& j, const PathPart& v);
void from_json(const nlohmann::json& j, PathPart& v);
void to_json(nlohmann::json& j, const Advice& v);
void from_json(const nlohmann::json& j, Advice& v);
void to_json(nlohmann::json& j, const TimelineCall& v);
void from_json(const nlohmann::json& j, TimelineCall& v);
void to_json(nlohmann::json& j, const Report& v);
void from_json(const nlohmann::json& j, Report& v);

}  // namespace mpiadvise::report

namespace mpiadvise::gate {
void to_json(nlohmann::json& j, const RunFigures& v);
void from_json(const nlohmann::json& j, RunFigures& v);
}  // namespace mpiadvise::gate

// The report's JSON form (schema mpiadvise-report/1): nlohmann-json's type macros for every part of
// fixed shape; by hand only where a member is left out when it does not apply (a location's parts, a
// rank that finished, a critical path part's call, an advice's kind-specific members) and where a
// value has a JSON form of its own (a byte count that may be "inf", the parameter set).
#include "report_types.hpp"

#include "report.hpp"

#include <stdexcept>

namespace nlohmann {
// std::optional as null or the value (nlohmann-json 3.11.2 has no serialiser of its own for it)
template <typename T>
struct adl_serializer<std::optional<T>> {
  static void to_json(json& j, const std::optional<T>& o) {
    if (o) j = *o;
    else j = nullptr;
  }
  static void from_json(const json& j, std::optional<T>& o) {
    if (j.is_null()) o.reset();
    else o = j.get<T>();
  }
};
}  // namespace nlohmann

namespace mpiadvise::gate {
void to_json(nlohmann::json& j, const RunFigures& v) { j = figures_json(v); }
void from_json(const nlohmann::json& j, RunFigures& v) { v = figures_from_json(j, "gate"); }
}  // namespace mpiadvise::gate

namespace mpiadvise::report {

using json = nlohmann::json;

namespace {

// a member left out when empty, and read back as empty when absent
template <typename T>
void put(json& j, const char* key, const std::optional<T>& v) {
  if (v) j[key] = *v;
}
template <typename T>
void take(const json& j, const char* key, std::optional<T>& v) {
  if (j.contains(key) && !j[key].is_null()) v = j[key].get<T>();
  else v.reset();
}

}  // namespace

void to_json(json& j, const Bytes& v) { j = v.infinite() ? json("inf") : json(v.value); }
void from_json(const json& j, Bytes& v) {
  v.value = j.is_string() && j.get<std::string>() == "inf" ? LogGPSParams::kInfinite : j.get<uint64_t>();
}

void to_json(json& j, const Location& v) {
  j = {{"text", v.text}};
  put(j, "file", v.file);
  put(j, "line", v.line);
  put(j, "function", v.function);
  put(j, "module", v.module);
  put(j, "offset", v.offset);
  put(j, "source", v.source);
}
void from_json(const json& j, Location& v) {
  v.text = j.at("text").get<std::string>();
  take(j, "file", v.file);
  take(j, "line", v.line);
  take(j, "function", v.function);
  take(j, "module", v.module);
  take(j, "offset", v.offset);
  take(j, "source", v.source);
}

void to_json(json& j, const ProbedSpeed& v) {
  j = {{"partner", v.partner}, {"factor", v.factor}, {"applied", v.applied}, {"bytes", v.bytes}, {"measured_ns", v.measured_ns},
       {"model_ns", v.model_ns}};
  put(j, "init_factor", v.init);
  put(j, "finalize_factor", v.finalize);
}
void from_json(const json& j, ProbedSpeed& v) {
  v.partner = j.value("partner", 1);
  v.factor = j.at("factor").get<double>();
  v.applied = j.at("applied").get<bool>();
  v.bytes = j.at("bytes").get<std::vector<uint64_t>>();
  v.measured_ns = j.at("measured_ns").get<std::vector<double>>();
  v.model_ns = j.at("model_ns").get<std::vector<double>>();
  take(j, "init_factor", v.init);
  take(j, "finalize_factor", v.finalize);
}

void to_json(json& j, const Params& v) {
  j = params_json(v.values);
  j["why"] = v.why;
  j["description"] = v.description;
  put(j, "run_speed", v.run_speed);
}
void from_json(const json& j, Params& v) {
  LogGPSParams& p = v.values;
  p.name = j.at("name").get<std::string>();
  p.L = j.at("L_ns").get<double>();
  p.o = j.at("o_ns").get<double>();
  p.Oss = j.at("Oss_ns_per_byte").get<double>();
  p.Ors = j.at("Ors_ns_per_byte").get<double>();
  p.Osl = j.at("Osl_ns_per_byte").get<double>();
  p.Orl = j.at("Orl_ns_per_byte").get<double>();
  p.Gs = j.at("Gs_ns_per_byte").get<double>();
  p.Gl = j.at("Gl_ns_per_byte").get<double>();
  p.R = j.at("R_ns").get<double>();
  p.s = j.at("s_bytes").get<Bytes>().value;
  p.S = j.at("S_bytes").get<Bytes>().value;
  if (j.contains("s_set_bytes")) p.s_set = j["s_set_bytes"].get<Bytes>().value;
  take(j, "o_r_ns", p.o_r);
  p.D = j.value("D_ns", 0.0);
  take(j, "persistent_saving_ns", p.persistent_saving);
  take(j, "reduce_ns_per_byte", p.reduce_ns_per_byte);
  take(j, "isend_ns", p.isend_ns);
  take(j, "irecv_ns", p.irecv_ns);
  if (j.contains("raised")) {
    const json& r = j["raised"];
    p.raised_from = r.at("from_bytes").get<uint64_t>();
    p.Oss_raised = r.at("Oss_ns_per_byte").get<double>();
    p.Ors_raised = r.at("Ors_ns_per_byte").get<double>();
    take(r, "to_bytes", p.raised_to);
  }
  if (j.contains("large")) {
    const json& r = j["large"];
    p.large_from = r.at("from_bytes").get<uint64_t>();
    p.R_large = r.at("R_ns").get<double>();
    p.Osl_large = r.at("Osl_ns_per_byte").get<double>();
    p.Orl_large = r.at("Orl_ns_per_byte").get<double>();
  }
  if (j.contains("machine")) {
    p.speeds_ratio = j["machine"].at("speeds_ratio").get<double>();
    p.slow_share = j["machine"].at("slow_share").get<double>();
    p.speeds = j["machine"].value("speeds", std::vector<double>{});
  }
  if (j.contains("resend")) {
    take(j["resend"], "buffered_factor", p.resend_buffered);
    take(j["resend"], "rendezvous_factor", p.resend_rendezvous);
    take(j["resend"], "cached_bytes", p.resend_cached_bytes);
  }
  v.why = j.value("why", std::string());
  v.description = j.value("description", std::string());
  take(j, "run_speed", v.run_speed);
}

void to_json(json& j, const Suspect& v) {
  j = {{"reason", v.reason}, {"share", v.share}, {"detail", v.detail}};
  put(j, "rank", v.rank);
  put(j, "where", v.where);
}
void from_json(const json& j, Suspect& v) {
  v.reason = j.at("reason").get<std::string>();
  v.share = j.at("share").get<double>();
  v.detail = j.at("detail").get<std::string>();
  take(j, "rank", v.rank);
  take(j, "where", v.where);
}

void to_json(json& j, const HangRank& v) {
  j = {{"rank", v.rank}, {"state", v.state}};
  if (!v.call) return;
  j["call"] = *v.call;
  put(j, "where", v.where);
  j["for_ns"] = v.for_ns;
  j["waits_for"] = v.waits_for;
  j["any_source"] = v.any_source;
}
void from_json(const json& j, HangRank& v) {
  v.rank = j.at("rank").get<int>();
  v.state = j.at("state").get<std::string>();
  take(j, "call", v.call);
  take(j, "where", v.where);
  v.for_ns = j.value("for_ns", 0.0);
  v.waits_for = j.value("waits_for", std::vector<int>());
  v.any_source = j.value("any_source", false);
}

void to_json(json& j, const PathPart& v) {
  j = {{"rank", v.rank}, {"kind", v.computation ? "computation" : "mpi"}, {v.computation ? "before_call" : "call", v.call},
       {"where", v.where}, {"ns", v.ns},  {"times", v.times}, {"share", v.share}};
}
void from_json(const json& j, PathPart& v) {
  v.rank = j.at("rank").get<int>();
  v.computation = j.at("kind").get<std::string>() == "computation";
  v.call = j.at(v.computation ? "before_call" : "call").get<std::string>();
  v.where = j.at("where").get<Location>();
  v.ns = j.at("ns").get<double>();
  v.times = j.at("times").get<uint64_t>();
  v.share = j.at("share").get<double>();
}

void to_json(json& j, const TimelineCall& v) {
  j = {{"rank", v.rank},         {"call", v.call},
       {"class", v.class_},      {"site", v.site},
       {"measured_ns", v.measured_ns}, {"predicted_ns", v.predicted_ns}};
}
void from_json(const json& j, TimelineCall& v) {
  v.rank = j.at("rank").get<int>();
  v.call = j.at("call").get<std::string>();
  v.class_ = j.at("class").get<std::string>();
  v.site = j.at("site").get<uint64_t>();
  v.measured_ns = j.at("measured_ns").get<std::array<double, 2>>();
  v.predicted_ns = j.at("predicted_ns").get<std::array<double, 2>>();
}

NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Summary, ranks, ranks_logged, hosts, library, library_version, transport, eager_setting,
                                   configured_S, configured_setting, effective_S, effective_S_note, traced_ns, rank_time_ns,
                                   mpi_ns, mpi_share, messages, collectives, unmatched_sends, unmatched_recvs,
                                   incomplete_collectives)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(RankMiss, rank, measured_ns, predicted_ns, error)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(SiteMiss, where, call, measured_ns, predicted_ns)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Fit, explained, expected_error, ranks, sites, suspects)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Model, measured_ns, predicted_ns, error, predicted_send_wait_ns, predicted_recv_wait_ns,
                                   measured_send_wait_ns, measured_recv_wait_ns, rendezvous_messages, rendezvous_bytes,
                                   unresolved_ops, fit)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(MeasuredTimes, total_ns, computation_ns, mpi_ns, send_wait_ns, recv_wait_ns,
                                   collectives_ns, other_mpi_ns)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(PredictedTimes, total_ns, computation_ns, overhead_ns, send_wait_ns, recv_wait_ns,
                                   synchronisation_ns, collectives_ns, other_ns, other_mpi_ns)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Rank, rank, measured, predicted, error)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Phase, parallel, load_balance, communication, serialisation, transfer, run_ns, model_ns,
                                   ideal_ns, mean_computation_ns, max_computation_ns, opened_at)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(SlowestIteration, parallel, load_balance, communication, serialisation, transfer, run_ns,
                                   model_ns, ideal_ns, mean_computation_ns, max_computation_ns, opened_at, iteration)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(IterationFigures, run_ns, model_ns, parallel, load_balance)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Iterations, count, opened_at, before, after, run_ns_median, model_ns_median,
                                   parallel_median, load_balance_median, communication_median, slowest, each)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Efficiency, parallel, load_balance, communication, serialisation, transfer, run_ns,
                                   model_ns, ideal_ns, mean_computation_ns, max_computation_ns, slowest_rank, phases,
                                   phases_note, iterations)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Hang, finished, ranks, deadlocks, waited_for)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(RootCause, rank, before_call, where, direct_ns, indirect_ns, total_ns, share_of_waiting)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(RootCauses, waiting_ns, unattributed_ns, causes)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(CriticalPath, length_ns, computation_ns, mpi_ns, ends_on_rank, rank_changes, parts)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Target, rank, before_call, where, computation_ns, on_path_ns, saving_if_halved_ns,
                                   saving_if_halved)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(ReceiveRank, rank, receives, posted_early, unexpected_max, unexpected_mean,
                                   unexpected_max_bytes, outstanding_sends_max, unexpected_by_step, unexpected_peak_ns)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(ReceiveSide, receives, posted_early, posted_early_share, step_ns, ranks)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(BufferedSend, rank, peer, where, call, bytes)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(BlockedRank, rank, where, call)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(BufferingCycle, sends, ranks, hangs_below_bytes, times)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Buffering, checked, deadlocks)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(SizeBin, min_bytes, max_bytes, count)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(HotSpot, where, call, ranks, peers, count, waited_ns, share_of_waiting, caused_ns, cause,
                                   by_cause, sizes)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Site, where, call, ranks, calls, messages_sent, bytes_sent, rendezvous_messages,
                                   rendezvous_bytes, predicted_send_wait_ns, predicted_recv_wait_ns, predicted_wait_ns,
                                   measured_wait_ns)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(HaloWhatIf, change, predicted_ns, saving_ns, saving, command)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Halo, ranks, whatif, neighbours_min, neighbours_max, bytes_max, exchanges, send_sites,
                                   recv_sites, text)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(EagerLimitChange, setting, value, S, mca, env, memory_per_rank_bytes, senders_per_rank,
                                   caution, sites)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(SiteChange, where, call, halo, ranks)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(SplitChange, chunk_bytes, extra_messages, extra_overhead_ns)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(PrepostChange, buffer_bytes)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(PersistentChange, identical_calls, saving_per_call_ns)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(SweepPoint, S, predicted_ns, send_wait_ns, rendezvous_messages)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(SSweep, current_S, advised_S, considered_S, points)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(SizeProtocolBin, log2, min_bytes, max_bytes, eager_messages, rendezvous_messages,
                                   eager_bytes, rendezvous_bytes)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(MessageSizes, S, bins)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(TimelineMessage, from, to, bytes)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Timeline, ranks_shown, ranks, calls, messages, sites, end_ns, truncated)
NLOHMANN_DEFINE_TYPE_NON_INTRUSIVE(Charts, s_sweep, message_sizes, timeline)

namespace {
// the members of one part written into (and read from) the object of the advice itself
template <typename T>
void merge(json& j, const std::optional<T>& part) {
  if (part) j.update(json(*part));
}
template <typename T>
void unmerge(const json& j, std::optional<T>& part, bool present) {
  if (present) part = j.get<T>();
  else part.reset();
}
}  // namespace

void to_json(json& j, const Advice& v) {
  j = {{"kind", v.kind},
       {"title", v.title},
       {"baseline_ns", v.baseline_ns},
       {"predicted_ns", v.predicted_ns},
       {"saving_ns", v.saving_ns},
       {"saving", v.saving},
       {"model_error", v.model_error},
       {"uncertain", v.uncertain},
       {"send_wait_before_ns", v.send_wait_before_ns},
       {"send_wait_after_ns", v.send_wait_after_ns},
       {"recv_wait_before_ns", v.recv_wait_before_ns},
       {"recv_wait_after_ns", v.recv_wait_after_ns},
       {"messages", v.messages}};
  merge(j, v.eager);
  merge(j, v.at);
  merge(j, v.split);
  merge(j, v.prepost);
  merge(j, v.persistent);
}
void from_json(const json& j, Advice& v) {
  v.kind = j.at("kind").get<std::string>();
  v.title = j.at("title").get<std::string>();
  v.baseline_ns = j.at("baseline_ns").get<double>();
  v.predicted_ns = j.at("predicted_ns").get<double>();
  v.saving_ns = j.at("saving_ns").get<double>();
  v.saving = j.at("saving").get<double>();
  v.model_error = j.at("model_error").get<double>();
  v.uncertain = j.value("uncertain", false);
  v.send_wait_before_ns = j.at("send_wait_before_ns").get<double>();
  v.send_wait_after_ns = j.at("send_wait_after_ns").get<double>();
  v.recv_wait_before_ns = j.at("recv_wait_before_ns").get<double>();
  v.recv_wait_after_ns = j.at("recv_wait_after_ns").get<double>();
  v.messages = j.at("messages").get<uint64_t>();
  unmerge(j, v.eager, j.contains("setting"));
  unmerge(j, v.at, j.contains("where"));
  unmerge(j, v.split, j.contains("chunk_bytes"));
  unmerge(j, v.prepost, j.contains("buffer_bytes"));
  unmerge(j, v.persistent, j.contains("identical_calls"));
}

void to_json(json& j, const Report& v) {
  j = {{"schema", v.schema},
       {"generator", v.generator},
       {"dir", v.dir},
       {"summary", v.summary},
       {"params", v.params},
       {"model", v.model},
       {"ranks", v.ranks},
       {"efficiency", v.efficiency},
       {"hang", v.hang},
       {"root_causes", v.root_causes},
       {"critical_path", v.critical_path},
       {"targets", v.targets},
       {"receive_side", v.receive_side},
       {"buffering", v.buffering},
       {"hot_spots", v.hot_spots},
       {"sites", v.sites},
       {"halos", v.halos},
       {"advice", v.advice},
       {"considered", v.considered},
       {"notes", v.notes},
       {"problems", v.problems}};
  put(j, "gate", v.gate);
  put(j, "charts", v.charts);
}
void from_json(const json& j, Report& v) {
  v.schema = j.at("schema").get<std::string>();
  v.generator = j.at("generator").get<std::string>();
  v.dir = j.at("dir").get<std::string>();
  j.at("summary").get_to(v.summary);
  j.at("params").get_to(v.params);
  j.at("model").get_to(v.model);
  j.at("ranks").get_to(v.ranks);
  j.at("efficiency").get_to(v.efficiency);
  j.at("hang").get_to(v.hang);
  j.at("root_causes").get_to(v.root_causes);
  j.at("critical_path").get_to(v.critical_path);
  j.at("targets").get_to(v.targets);
  j.at("receive_side").get_to(v.receive_side);
  j.at("buffering").get_to(v.buffering);
  j.at("hot_spots").get_to(v.hot_spots);
  j.at("sites").get_to(v.sites);
  j.at("halos").get_to(v.halos);
  j.at("advice").get_to(v.advice);
  j.at("considered").get_to(v.considered);
  j.at("notes").get_to(v.notes);
  j.at("problems").get_to(v.problems);
  take(j, "gate", v.gate);
  take(j, "charts", v.charts);
}

}  // namespace mpiadvise::report

#include "report.hpp"

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "advice.hpp"
#include "buffering.hpp"
#include "causes.hpp"
#include "phases.hpp"
#include "halo.hpp"
#include "hang.hpp"
#include "efficiency.hpp"
#include "receive_side.hpp"
#include "report_charts.hpp"
#include "gate.hpp"
#include "model_fit.hpp"
#include "replay.hpp"
#include "text_escape.hpp"

#ifndef MPIADVISE_VERSION
#define MPIADVISE_VERSION "0.1.0"
#endif

namespace mpiadvise {

namespace {

using json = nlohmann::json;

json location_json(const SourceLocation& loc) {
  json j = {{"text", loc.module.empty() && loc.file.empty() ? std::string("?") : loc.text()}};
  if (!loc.file.empty()) j["file"] = loc.file, j["line"] = loc.line;
  if (!loc.function.empty()) j["function"] = loc.function;
  if (!loc.module.empty()) j["module"] = loc.module;
  if (!loc.module.empty() && !loc.function_only()) j["offset"] = loc.offset;  // a function-only site is the whole function
  return j;
}

json bytes_json(uint64_t v) { return v == LogGPSParams::kInfinite ? json("inf") : json(v); }

json breakdown_json(const Breakdown& b) {
  return {{"computation_ns", b.computation},
          {"overhead_ns", b.send_overhead + b.recv_overhead},
          {"send_wait_ns", b.send_wait},
          {"recv_wait_ns", b.recv_wait},
          {"synchronisation_ns", b.synchronisation},
          {"collectives_ns", b.collectives},
          {"other_ns", b.other}};
}

const char* call_name_of(uint32_t call) { return call_name(static_cast<int>(call)); }

// The measured side of a rank: its window (MPI_Init's exit to MPI_Finalize's entry) split into
// computation, waiting by cause, collectives and the rest of the time inside MPI.
json measured_rank(const Analysis& a, int r) {
  const auto& ops = a.trace.ranks[r].ops;
  json j = {{"total_ns", 0.0},     {"computation_ns", 0.0}, {"mpi_ns", 0.0},      {"send_wait_ns", 0.0},
            {"recv_wait_ns", 0.0}, {"collectives_ns", 0.0}, {"other_mpi_ns", 0.0}};
  if (ops.empty()) return j;
  size_t first = 0, end = ops.size();
  if (ops.front().call == MPA_CALL_Init || ops.front().call == MPA_CALL_Init_thread) first = 1;
  if (end > first && ops[end - 1].call == MPA_CALL_Finalize) end--;
  if (end <= first) return j;
  double start = first ? static_cast<double>(ops[0].t_exit) : static_cast<double>(ops[0].t_enter);
  double stop = end < ops.size() ? static_cast<double>(ops[end].t_enter) : static_cast<double>(ops.back().t_exit);
  double mpi = 0, coll = 0;
  for (size_t i = first; i < end; i++) {
    double d = static_cast<double>(ops[i].t_exit - ops[i].t_enter);
    mpi += d;
    if (ops[i].kind == OpKind::Collective) coll += d;
  }
  double sw = a.measured.send_wait_ns(r), rw = a.measured.recv_wait_ns(r);
  j["total_ns"] = stop - start;
  j["computation_ns"] = std::max(0.0, stop - start - mpi);
  j["mpi_ns"] = mpi;
  j["send_wait_ns"] = sw;
  j["recv_wait_ns"] = rw;
  j["collectives_ns"] = coll;
  j["other_mpi_ns"] = std::max(0.0, mpi - sw - rw - coll);
  return j;
}

// The call that makes a persistent request for what call does.
const char* persistent_init(uint32_t call) {
  switch (call) {
    case MPA_CALL_Ssend:
    case MPA_CALL_Issend: return "MPI_Ssend_init";
    case MPA_CALL_Bsend:
    case MPA_CALL_Ibsend: return "MPI_Bsend_init";
    case MPA_CALL_Rsend:
    case MPA_CALL_Irsend: return "MPI_Rsend_init";
    case MPA_CALL_Recv:
    case MPA_CALL_Irecv: return "MPI_Recv_init";
    default: return "MPI_Send_init";
  }
}

std::string advice_title(const Advice& a, const std::string& where) {
  switch (a.kind) {
    case AdviceKind::RaiseEagerLimit:
      return fmt::format("raise the eager limit: {} {}", a.eager->setting, a.eager->value);
    case AdviceKind::SplitMessages:
      return fmt::format("split the messages sent at {} into chunks of at most {} bytes", where, a.chunk_bytes);
    case AdviceKind::PrepostReceives:
      return fmt::format("post the receive at {} earlier: MPI_Irecv into a second buffer as soon as the previous one completed",
                         where);
    case AdviceKind::NonblockingSend:
      return fmt::format("make the send at {} non-blocking (MPI_Isend, completed at the next MPI call)", where);
    case AdviceKind::PersistentRequests:
      return fmt::format("make the repeated {} at {} persistent ({} once, MPI_Start in the loop)", call_name_of(a.call), where,
                         persistent_init(a.call));
  }
  return "?";
}

}  // namespace

nlohmann::json build_report(const Analysis& a, const ReportOptions& options) {
  const Trace& t = a.trace;
  json j;
  j["schema"] = kReportSchema;
  j["generator"] = std::string("mpiadvise ") + MPIADVISE_VERSION;
  j["dir"] = a.dir;

  ReplayOptions base;
  base.params = a.chosen.params;
  base.mpi_library = a.facts.library;
  base.marks = std::make_shared<const PhaseMarks>(phase_marks(t));
  ReplayResult baseline = replay(t, base);

  // ---- summary
  json s;
  s["ranks"] = t.world_size;
  s["ranks_logged"] = a.job->ranks().size();
  s["hosts"] = a.facts.hosts;
  s["library"] = a.facts.library;
  s["library_version"] = a.facts.library_version;
  s["transport"] = a.facts.transport;
  s["eager_setting"] = a.facts.eager_setting;
  s["configured_S"] = a.facts.configured_S ? json(*a.facts.configured_S) : json(nullptr);
  s["configured_setting"] = a.facts.configured_S ? json(std::to_string(*a.facts.configured_S))
                            : a.facts.configured_text.empty() ? json(nullptr) : json(a.facts.configured_text);
  s["effective_S"] = a.facts.effective_S ? json(*a.facts.effective_S) : json(nullptr);
  s["effective_S_note"] = a.facts.effective_S_note;
  double traced = 0, mpi = 0, span = 0;
  json ranks = json::array();
  for (const auto& rr : baseline.ranks) {
    json m = measured_rank(a, rr.rank);
    traced += m["total_ns"].get<double>();
    m["total_ns"] = rr.measured_ns;  // from the job's start, as the predicted total is
    mpi += m["mpi_ns"].get<double>();
    span = std::max(span, rr.measured_ns);
    json p = breakdown_json(rr.predicted);
    p["total_ns"] = rr.predicted_ns;
    // as measured: the time inside MPI that is neither waiting nor collectives
    p["other_mpi_ns"] = rr.predicted.send_overhead + rr.predicted.recv_overhead + rr.predicted.synchronisation +
                        rr.predicted.other;
    ranks.push_back({{"rank", rr.rank},
                     {"measured", m},
                     {"predicted", p},
                     {"error", rr.measured_ns > 0 ? (rr.predicted_ns - rr.measured_ns) / rr.measured_ns : 0.0}});
  }
  s["traced_ns"] = baseline.measured_ns;
  s["rank_time_ns"] = traced;
  s["mpi_ns"] = mpi;
  s["mpi_share"] = traced > 0 ? mpi / traced : 0.0;
  uint64_t matched = 0;
  for (const auto& m : t.messages) matched += m.matched();
  s["messages"] = matched;
  s["collectives"] = t.collectives.size();
  s["unmatched_sends"] = t.unmatched_sends;
  s["unmatched_recvs"] = t.unmatched_recvs;
  s["incomplete_collectives"] = t.incomplete_collectives;
  j["summary"] = s;

  // ---- the model on the measured run
  const LogGPSParams& p = a.chosen.params;
  const LogGPS model(p);
  j["params"] = params_json(p);
  j["params"]["why"] = a.chosen.why;
  j["params"]["description"] = p.description;
  Breakdown total;
  for (const auto& rr : baseline.ranks) total += rr.predicted;
  double measured_sw = 0, measured_rw = 0;
  for (int r = 0; r < t.world_size; r++) measured_sw += a.measured.send_wait_ns(r), measured_rw += a.measured.recv_wait_ns(r);
  j["model"] = {{"measured_ns", baseline.measured_ns},
                {"predicted_ns", baseline.predicted_ns},
                {"error", baseline.error()},
                {"predicted_send_wait_ns", total.send_wait},
                {"predicted_recv_wait_ns", total.recv_wait},
                {"measured_send_wait_ns", measured_sw},
                {"measured_recv_wait_ns", measured_rw},
                {"rendezvous_messages", baseline.rendezvous_messages},
                {"rendezvous_bytes", baseline.rendezvous_bytes},
                {"unresolved_ops", baseline.unresolved_ops}};
  // whether the model explains the run, and where and why not
  const ModelFit fit = assess_fit(t, a.facts, p, baseline);
  {
    json ranks_missed = json::array(), sites_missed = json::array(), suspects = json::array();
    for (const auto& m : fit.ranks)
      ranks_missed.push_back({{"rank", m.rank}, {"measured_ns", m.measured_ns}, {"predicted_ns", m.predicted_ns},
                              {"error", m.error}});
    for (const auto& m : fit.sites)
      sites_missed.push_back({{"where", location_json(a.locate(m.rank, m.callsite))},
                              {"call", call_name_of(m.call)},
                              {"measured_ns", m.measured_ns},
                              {"predicted_ns", m.predicted_ns}});
    for (const auto& s : fit.suspects) {
      json x = {{"reason", miss_reason_name(s.reason)}, {"share", s.share}, {"detail", s.detail}};
      if (s.rank >= 0) x["rank"] = s.rank, x["where"] = location_json(a.locate(s.rank, s.callsite));
      suspects.push_back(x);
    }
    j["model"]["fit"] = {{"explained", fit.explained},
                         {"expected_error", kExpectedModelError},
                         {"ranks", ranks_missed},
                         {"sites", sites_missed},
                         {"suspects", suspects}};
  }
  j["ranks"] = ranks;

  // ---- efficiency factors (the POP methodology), from one more replay on an ideal network
  {
    const Efficiency e = efficiency(t, base, baseline, *base.marks);
    auto factors_json = [](const EfficiencyFactors& f) {
      return json{{"parallel", f.parallel},
                  {"load_balance", f.load_balance},
                  {"communication", f.communication},
                  {"serialisation", f.serialisation},
                  {"transfer", f.transfer},
                  {"run_ns", f.run_ns},
                  {"model_ns", f.model_ns},
                  {"ideal_ns", f.ideal_ns},
                  {"mean_computation_ns", f.mean_computation_ns},
                  {"max_computation_ns", f.max_computation_ns}};
    };
    j["efficiency"] = factors_json(e);
    j["efficiency"]["slowest_rank"] = e.slowest_rank;
    auto phase_json = [&](const Efficiency::Phase& ph) {
      json x = factors_json(ph);
      x["opened_at"] = nullptr;
      if (ph.opened_by_rank0_op >= 0)
        x["opened_at"] = location_json(a.locate(0, t.op(0, static_cast<uint32_t>(ph.opened_by_rank0_op)).callsite));
      return x;
    };
    json phases = json::array();
    if (e.phases_from == PhaseMarks::Source::Pcontrol)
      for (const auto& ph : e.phases) phases.push_back(phase_json(ph));
    j["efficiency"]["phases"] = phases;
    j["efficiency"]["phases_note"] = e.phases_note;
    j["efficiency"]["iterations"] = nullptr;
    if (e.phases_from == PhaseMarks::Source::Iterations && e.phases.size() == e.iterations + 2) {
      const std::vector<Efficiency::Phase> loop(e.phases.begin() + 1, e.phases.end() - 1);
      auto median = [&](auto field) {
        std::vector<double> v;
        for (const auto& ph : loop) v.push_back(ph.*field);
        std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
        return v[v.size() / 2];
      };
      const auto slowest = std::max_element(loop.begin(), loop.end(), [](const auto& x, const auto& y) { return x.run_ns < y.run_ns; });
      json each = json::array();
      if (loop.size() <= kIterationsListed)
        for (const auto& ph : loop)
          each.push_back({{"run_ns", ph.run_ns}, {"model_ns", ph.model_ns}, {"parallel", ph.parallel}, {"load_balance", ph.load_balance}});
      json it = {{"count", loop.size()},
                 {"opened_at", phase_json(loop.front())["opened_at"]},
                 {"before", phase_json(e.phases.front())},
                 {"after", phase_json(e.phases.back())},
                 {"run_ns_median", median(&Efficiency::Phase::run_ns)},
                 {"model_ns_median", median(&Efficiency::Phase::model_ns)},
                 {"parallel_median", median(&Efficiency::Phase::parallel)},
                 {"load_balance_median", median(&Efficiency::Phase::load_balance)},
                 {"communication_median", median(&Efficiency::Phase::communication)},
                 {"slowest", phase_json(*slowest)},
                 {"each", each}};
      it["slowest"]["iteration"] = slowest - loop.begin() + 1;
      j["efficiency"]["iterations"] = it;
    }
  }

  // ---- a run that did not finish: where each rank was, and who waits for whom
  {
    const HangState h = hang_state(t);
    json ranks = json::array(), deadlocks = json::array();
    auto at = [&](int r) {
      const auto& x = h.ranks[r];
      json o = {{"rank", r}, {"state", hang_state_name(x.state)}};
      if (x.op != kNone && x.state != HangState::State::Finished) {
        const Op& op = t.op(r, x.op);
        o["call"] = call_name_of(op.call);
        o["where"] = location_json(a.locate(r, op.callsite));
        o["for_ns"] = h.end_ns - x.since_ns;
        o["waits_for"] = x.waits_for;
        o["any_source"] = x.any_source;
      }
      return o;
    };
    if (!h.finished) {
      for (size_t r = 0; r < h.ranks.size(); r++)
        if (h.ranks[r].state != HangState::State::Finished) ranks.push_back(at(static_cast<int>(r)));
      for (const auto& cycle : h.deadlocks) {
        json c = json::array();
        for (int r : cycle) c.push_back(at(r));
        deadlocks.push_back(c);
      }
    }
    json held = json::array();
    for (int r : h.waited_for) held.push_back(at(r));
    j["hang"] = {{"finished", h.finished}, {"ranks", ranks}, {"deadlocks", deadlocks}, {"waited_for", held}};
  }

  // ---- why ranks wait: root causes (delay costs) and the critical path, measured; what each
  // computation would save, from what-if replays with it made twice as fast
  {
    auto computation_json = [&](const ComputationKey& k) {
      return json{{"rank", k.rank}, {"before_call", call_name_of(k.call)}, {"where", location_json(a.locate(k.rank, k.callsite))}};
    };
    const DelayCosts dc = delay_costs(t, a.waits);
    json causes = json::array();
    for (size_t i = 0; i < dc.causes.size() && i < static_cast<size_t>(options.top); i++) {
      const RootCause& c = dc.causes[i];
      json x = computation_json(c.where);
      x["direct_ns"] = c.direct_ns, x["indirect_ns"] = c.indirect_ns, x["total_ns"] = c.total();
      x["share_of_waiting"] = dc.waiting_ns > 0 ? c.total() / dc.waiting_ns : 0.0;
      causes.push_back(x);
    }
    j["root_causes"] = {{"waiting_ns", dc.waiting_ns}, {"unattributed_ns", dc.unattributed_ns}, {"causes", causes}};

    const CriticalPath cp = critical_path(t, a.waits);
    json parts = json::array();
    for (size_t i = 0; i < cp.parts.size() && i < static_cast<size_t>(options.top); i++) {
      const auto& part = cp.parts[i];
      json x = computation_json(part.where);
      x["kind"] = part.computation ? "computation" : "mpi";
      if (!part.computation) x["call"] = x["before_call"], x.erase("before_call");
      x["ns"] = part.ns, x["times"] = part.times, x["share"] = cp.length_ns > 0 ? part.ns / cp.length_ns : 0.0;
      parts.push_back(x);
    }
    j["critical_path"] = {{"length_ns", cp.length_ns}, {"computation_ns", cp.computation_ns}, {"mpi_ns", cp.mpi_ns},
                          {"ends_on_rank", cp.last_rank}, {"rank_changes", cp.rank_changes}, {"parts", parts}};

    // targets: the largest computations on the path and the largest off it, each replayed twice as fast
    std::map<ComputationKey, double> path_ns;
    for (const auto& part : cp.parts)
      if (part.computation) path_ns[part.where] += part.ns;
    std::vector<CriticalPath::Part> candidates;
    int on = 0, off = 0;
    for (const auto& c : computations(t)) {
      const bool on_path = path_ns.count(c.where) > 0;
      if (c.ns <= 0 || (on_path ? on : off) >= (on_path ? 3 : 2)) continue;
      (on_path ? on : off)++;
      candidates.push_back(c);
    }
    json targets = json::array();
    for (const auto& c : candidates) {
      ReplayOptions faster = base;
      faster.compute_factor = 0.5;
      faster.compute_ranks = {c.where.rank};
      faster.compute_sites = {t.site(c.where.rank, c.where.callsite)};
      const double saving = baseline.predicted_ns - replay(t, faster).predicted_ns;
      json x = computation_json(c.where);
      auto it = path_ns.find(c.where);
      x["computation_ns"] = c.ns;
      x["on_path_ns"] = it == path_ns.end() ? 0.0 : it->second;
      x["saving_if_halved_ns"] = saving;
      x["saving_if_halved"] = baseline.predicted_ns > 0 ? saving / baseline.predicted_ns : 0.0;
      targets.push_back(x);
    }
    std::sort(targets.begin(), targets.end(), [](const json& x, const json& y) {
      return x["saving_if_halved_ns"].get<double>() > y["saving_if_halved_ns"].get<double>();
    });
    j["targets"] = targets;
  }

  // ---- the receive side (the third source paper's metrics), from the measured times
  {
    const ReceiveSide rs = receive_side(t, model);
    json per_rank = json::array();
    for (const auto& r : rs.ranks)
      per_rank.push_back({{"rank", r.rank},
                          {"receives", r.receives},
                          {"posted_early", r.posted_early},
                          {"unexpected_max", r.unexpected_max},
                          {"unexpected_mean", r.unexpected_mean},
                          {"unexpected_max_bytes", r.unexpected_max_bytes},
                          {"outstanding_sends_max", r.outstanding_sends_max},
                          {"unexpected_by_step", r.unexpected_by_step},
                          {"unexpected_peak_ns", r.unexpected_peak_ns}});
    j["receive_side"] = {{"receives", rs.receives},
                         {"posted_early", rs.posted_early},
                         {"posted_early_share", rs.posted_early_share()},
                         {"step_ns", rs.step_ns},
                         {"ranks", per_rank}};
  }

  // ---- correctness: sends that completed only because the library buffered them (a replay with S = 0)
  {
    const BufferingDependence b = buffering_dependence(t, base, baseline);
    json cycles = json::array();
    for (const auto& d : b.deadlocks) {
      json sends = json::array(), waiting = json::array();
      for (const auto& s : d.sends)
        sends.push_back({{"rank", s.rank}, {"peer", s.peer}, {"where", location_json(a.locate(s.rank, s.callsite))},
                         {"call", call_name_of(s.call)}, {"bytes", s.bytes}});
      for (const auto& p : d.ranks) {
        const Op& op = t.op(p.rank, p.op);
        waiting.push_back({{"rank", p.rank}, {"where", location_json(a.locate(p.rank, op.callsite))},
                           {"call", call_name_of(op.call)}});
      }
      cycles.push_back({{"sends", sends},
                        {"ranks", waiting},
                        {"hangs_below_bytes", d.hangs_below ? json(*d.hangs_below) : json(nullptr)},
                        {"times", d.times}});
    }
    j["buffering"] = {{"checked", b.checked}, {"deadlocks", cycles}};
  }

  // ---- hot spots, by time lost (measured)
  double waited_all = 0;
  for (const auto& [key, w] : a.measured.sites)
    for (const auto& [c, ns] : w.waited_ns) waited_all += ns;
  json hot = json::array();
  for (const auto& h : hot_spots(t, a.measured, options.top)) {
    json sizes = json::array();
    for (const auto& [lg, n] : h.size_log2)
      sizes.push_back({{"min_bytes", lg < 0 ? 0 : uint64_t{1} << lg},
                       {"max_bytes", lg < 0 ? 0 : lg >= 63 ? UINT64_MAX : (uint64_t{1} << (lg + 1)) - 1},
                       {"count", n}});
    json causes = json::object();
    for (const auto& [c, ns] : h.waited_by_cause) causes[wait_cause_name(c)] = ns;
    hot.push_back({{"where", location_json(a.locate(h.rank, h.callsite))},
                   {"call", call_name_of(h.call)},
                   {"ranks", h.ranks},
                   {"peers", h.peers},
                   {"count", h.count},
                   {"waited_ns", h.waited_ns},
                   {"share_of_waiting", waited_all > 0 ? h.waited_ns / waited_all : 0.0},
                   {"caused_ns", h.caused_ns},
                   {"cause", wait_cause_name(h.cause)},
                   {"by_cause", causes},
                   {"sizes", sizes}});
  }
  j["hot_spots"] = hot;

  // ---- every call site's modelled figures (what the gate compares: the same for the same log)
  struct SiteSum {
    int rank = -1;
    uint32_t callsite = 0, call = 0;
    std::set<int> ranks;
    uint64_t calls = 0, rendezvous_messages = 0, rendezvous_bytes = 0, messages = 0, bytes = 0;
    double send_wait = 0, recv_wait = 0, measured_wait = 0;
  };
  std::map<SiteKey, SiteSum> sites;
  for (const auto& sr : baseline.sites) {
    SiteSum& x = sites[t.site(sr.rank, sr.callsite)];
    if (x.rank < 0) x.rank = sr.rank, x.callsite = sr.callsite, x.call = sr.call;
    x.ranks.insert(sr.rank);
    x.calls += sr.calls;
    x.send_wait += sr.predicted.send_wait;
    x.recv_wait += sr.predicted.recv_wait;
    x.measured_wait += a.measured.site_send_wait_ns(sr.rank, sr.callsite) + a.measured.site_recv_wait_ns(sr.rank, sr.callsite);
  }
  for (const auto& m : t.messages) {
    if (!m.matched()) continue;
    auto it = sites.find(t.site(m.src, t.op(m.src, m.send_op).callsite));
    if (it == sites.end()) continue;
    it->second.messages++;
    it->second.bytes += m.bytes;
    if (model.send_waits_for_receive(m.bytes, m.synchronous))
      it->second.rendezvous_messages++, it->second.rendezvous_bytes += m.bytes;
  }
  std::vector<std::pair<SiteKey, SiteSum>> ordered(sites.begin(), sites.end());
  std::stable_sort(ordered.begin(), ordered.end(), [](const auto& x, const auto& y) {
    return x.second.send_wait + x.second.recv_wait > y.second.send_wait + y.second.recv_wait;
  });
  json site_list = json::array();
  for (const auto& [key, x] : ordered) {
    if (x.messages == 0 && x.send_wait + x.recv_wait <= 0) continue;  // only where messages are sent or waited for
    site_list.push_back({{"where", location_json(a.locate(x.rank, x.callsite))},
                         {"call", call_name_of(x.call)},
                         {"ranks", std::vector<int>(x.ranks.begin(), x.ranks.end())},
                         {"calls", x.calls},
                         {"messages_sent", x.messages},
                         {"bytes_sent", x.bytes},
                         {"rendezvous_messages", x.rendezvous_messages},
                         {"rendezvous_bytes", x.rendezvous_bytes},
                         {"predicted_send_wait_ns", x.send_wait},
                         {"predicted_recv_wait_ns", x.recv_wait},
                         {"predicted_wait_ns", x.send_wait + x.recv_wait},
                         {"measured_wait_ns", x.measured_wait}});
  }
  j["sites"] = site_list;
  if (options.gate_figures) j["gate"] = gate::figures_json(gate::run_figures(a));  // what mpiadvise gate compares

  // ---- halo exchanges (the first source paper's stencils): advice at one of their calls names them
  const std::vector<HaloExchange> halos = find_halos(t);
  auto halo_text = [](const HaloExchange& h) {
    const std::string n = h.neighbours_min == h.neighbours_max
                              ? std::to_string(h.neighbours_min)
                              : fmt::format("{} to {}", h.neighbours_min, h.neighbours_max);
    return fmt::format("the halo exchange of {} ranks (each with {} neighbour{}, messages up to {} bytes, {} times)",
                       h.ranks.size(), n, h.neighbours_max == 1 ? "" : "s", h.bytes_max, h.exchanges);
  };
  {
    json list = json::array();
    for (const auto& h : halos) {
      json sends = json::array(), recvs = json::array();
      for (const auto& [key, at] : h.send_sites) sends.push_back(location_json(a.locate(at.first, at.second)));
      for (const auto& [key, at] : h.recv_sites) recvs.push_back(location_json(a.locate(at.first, at.second)));
      // the whole exchange changed at once, with the whatif command that replays the same (where every
      // site has a line to name it by)
      json whatifs = json::array();
      for (const HaloWhatIf& w : halo_whatifs(t, h, base)) {
        std::string command = "mpiadvise whatif";
        auto add = [&](const json& sites, const char* option) {
          for (const auto& s : sites) {
            if (!s.contains("file")) return false;
            command += fmt::format(" {} {}", option, shell_word(fmt::format("{}:{}", s["file"].get<std::string>(), s["line"].get<int>())));
          }
          return true;
        };
        bool named = true;
        if (w.nonblocking) named &= add(sends, "--nonblocking");
        if (w.prepost) named &= add(recvs, "--prepost");
        if (w.split) named &= add(sends, "--split");
        const double saving = baseline.predicted_ns - w.predicted_ns;
        whatifs.push_back({{"change", halo_change_name(w.change)},
                           {"predicted_ns", w.predicted_ns},
                           {"saving_ns", saving},
                           {"saving", baseline.predicted_ns > 0 ? saving / baseline.predicted_ns : 0.0},
                           {"command", named ? json(command + " " + shell_word(a.dir)) : json(nullptr)}});
      }
      list.push_back({{"ranks", h.ranks},
                      {"whatif", whatifs},
                      {"neighbours_min", h.neighbours_min},
                      {"neighbours_max", h.neighbours_max},
                      {"bytes_max", h.bytes_max},
                      {"exchanges", h.exchanges},
                      {"send_sites", sends},
                      {"recv_sites", recvs},
                      {"text", halo_text(h)}});
    }
    j["halos"] = list;
  }

  // ---- advice, each from a what-if replay
  json advice = json::array(), considered = json::array();
  for (const auto& ad : advise(t, a.facts, a.measured, base, baseline, options.top)) {
    std::string where = ad.members.empty() ? std::string() : a.where(ad.members.front().first, ad.members.front().second);
    json x = {{"kind", advice_kind_name(ad.kind)},
              {"title", advice_title(ad, where)},
              {"baseline_ns", ad.baseline_ns},
              {"predicted_ns", ad.predicted_ns},
              {"saving_ns", ad.saving_ns()},
              {"saving", ad.saving()},
              {"model_error", ad.model_error},
              // the model misses the run as measured by more than expected: the saving is not to be trusted
              {"uncertain", !fit.explained},
              {"send_wait_before_ns", ad.before.send_wait},
              {"send_wait_after_ns", ad.after.send_wait},
              {"recv_wait_before_ns", ad.before.recv_wait},
              {"recv_wait_after_ns", ad.after.recv_wait},
              {"messages", ad.messages}};
    if (ad.kind == AdviceKind::RaiseEagerLimit) {
      const RaiseEagerLimit& e = *ad.eager;
      x["setting"] = e.setting;
      x["value"] = e.value;
      x["S"] = e.S;
      x["mca"] = e.mca;
      x["env"] = e.env;
      x["memory_per_rank_bytes"] = e.memory_per_rank_bytes;
      x["senders_per_rank"] = e.senders_per_rank;
      x["caution"] = e.caution;
      json at = json::array();
      std::set<std::string> seen;
      for (const auto& [r, cs] : e.send_sites) {
        SourceLocation loc = a.locate(r, cs);
        if (seen.insert(loc.text()).second) at.push_back(location_json(loc));
      }
      x["sites"] = at;
    } else {
      x["where"] = location_json(a.locate(ad.members.front().first, ad.members.front().second));
      x["call"] = call_name_of(ad.call);
      x["halo"] = nullptr;
      for (size_t h = 0; h < halos.size(); h++)
        if (halos[h].at(ad.site)) {
          x["halo"] = h;
          x["title"] = "in " + halo_text(halos[h]) + ": " + x["title"].get<std::string>();
          break;
        }
      std::set<int> rs;
      for (const auto& [r, cs] : ad.members) rs.insert(r);
      x["ranks"] = std::vector<int>(rs.begin(), rs.end());
    }
    if (ad.kind == AdviceKind::SplitMessages) {
      x["chunk_bytes"] = ad.chunk_bytes;
      x["extra_messages"] = ad.extra_messages;
      x["extra_overhead_ns"] = ad.extra_overhead_ns;
    }
    if (ad.kind == AdviceKind::PrepostReceives) x["buffer_bytes"] = ad.buffer_bytes;
    if (ad.kind == AdviceKind::PersistentRequests) {
      x["identical_calls"] = ad.identical_calls;
      x["saving_per_call_ns"] = *p.persistent_saving;
    }
    (ad.worthwhile ? advice : considered).push_back(x);
  }
  j["advice"] = advice;
  j["considered"] = considered;

  // ---- the pictures' figures, and the text of the hot spots' lines (report --format html draws them)
  if (options.charts) {
    std::optional<uint64_t> advised_S, considered_S;
    for (const auto& x : advice)
      if (x["kind"] == "raise_eager_limit" && !advised_S) advised_S = x["S"].get<uint64_t>();
    for (const auto& x : considered)
      if (x["kind"] == "raise_eager_limit" && !considered_S) considered_S = x["S"].get<uint64_t>();
    j["charts"] = report_charts(a, base, advised_S, considered_S);
    for (auto& h : j["hot_spots"]) {
      const json& w = h["where"];
      if (!w.contains("file")) continue;
      const std::string text = source_line_text(w["file"].get<std::string>(), w["line"].get<int>(), w.value("module", std::string()));
      if (!text.empty()) h["where"]["source"] = text;
    }
  }

  // ---- what a reader should know about this job
  json notes = json::array();
  const size_t logged = a.job->ranks().size();
  if (logged < static_cast<size_t>(t.world_size))
    notes.push_back(fmt::format("{} of {} ranks have no readable log: their part of the run is missing from the analysis",
                                static_cast<size_t>(t.world_size) - logged, t.world_size));
  if (t.unmatched_sends || t.unmatched_recvs)
    notes.push_back(fmt::format("{} sends and {} receives have no partner in the logs (a rank's log missing or cut "
                                "off): a send is modelled as if its receiver were never late, a receive keeps its "
                                "measured time",
                                t.unmatched_sends, t.unmatched_recvs));
  if (t.world_size == 1) notes.push_back("one rank: no messages between ranks, nothing waits for another rank");
  else if (matched == 0 && !t.unmatched_sends && !t.unmatched_recvs)
    notes.push_back("no point-to-point messages: the eager limit and the send and receive advice do not apply");
  if (matched > 0 && baseline.rendezvous_messages == 0)
    notes.push_back(fmt::format("every message is at most S = {} bytes: no send waits for its receiver by protocol",
                                p.S == LogGPSParams::kInfinite ? std::string("inf") : std::to_string(p.S)));
  if (waited_all <= 0 && t.world_size > 1) notes.push_back("no rank waited for another: no hot spots");
  if (!a.facts.eager_setting_futile.empty() && baseline.rendezvous_messages > 0)
    notes.push_back(a.facts.eager_setting_futile +
                    ": no eager limit is advised; the changes to the program (split messages, non-blocking sends, "
                    "earlier receives) are weighed as everywhere else, under advice and considered");
  const auto repeated = repeated_calls(t);
  if (!repeated.empty()) {
    const auto& top = repeated.front();
    std::string first = fmt::format("{} at {} ({} of {} calls alike)", call_name_of(top.call),
                                    a.where(top.members.front().first, top.members.front().second), top.identical, top.calls);
    if (!p.persistent_saving)
      notes.push_back(fmt::format("{} call site{} repeat one call with the same arguments, e.g. {}: persistent requests "
                                  "are not assessed, the parameter set does not say what they save here (mpiadvise "
                                  "calibrate measures it)", repeated.size(), repeated.size() == 1 ? "" : "s", first));
    else if (std::none_of(advice.begin(), advice.end(), [](const json& x) { return x["kind"] == "persistent_requests"; }))
      notes.push_back(fmt::format("{} call site{} repeat one call with the same arguments, e.g. {}; a persistent request "
                                  "saves {:.0f} ns per call with this library: too little to advise (see considered)",
                                  repeated.size(), repeated.size() == 1 ? "" : "s", first, *p.persistent_saving));
  }
  if (advice.empty())
    notes.push_back(fmt::format("no change predicted to save more than the model's error on this run ({:.1f}%) and 1%",
                                100 * std::fabs(baseline.error())));
  bool symbols = false, functions = false;
  for (const auto* list : {&hot, &site_list})
    for (const auto& x : *list) symbols |= x["where"].contains("file"), functions |= x["where"].contains("function");
  if (!symbols && (!hot.empty() || !site_list.empty()))
    notes.push_back(functions ? "no line information for the call sites (build with -g, or give the debug files with "
                                "--debug-dir): they are named by function, the calls in one function counted together"
                              : "no line information for the call sites (build with -g, or give the debug files with "
                                "--debug-dir): they are named by module and offset");
  const bool logs_whole = a.job->ranks().size() == static_cast<size_t>(t.world_size) && t.unmatched_sends == 0 &&
                          t.unmatched_recvs == 0 && t.incomplete_collectives == 0;
  if (baseline.unresolved_ops && !logs_whole)
    notes.push_back(fmt::format("{} operations have a partner missing from the logs: replayed with their measured time",
                                baseline.unresolved_ops));
  else if (baseline.unresolved_ops)
    notes.push_back(fmt::format(
        "{} operations could not be replayed in order: under S = {} bytes their sends wait for receives the partners "
        "post only after them, yet the library completed them{}; replayed with their measured time",
        baseline.unresolved_ops, p.S,
        a.facts.transport == "vader" ? " (Open MPI's shared memory completes a send of up to 4 KiB once its receiver "
                                       "enters MPI, which the model does not follow)"
                                     : ""));
  j["notes"] = notes;
  json problems = json::array();
  for (const auto& pr : t.problems) problems.push_back(pr.text());
  j["problems"] = problems;
  return j;
}

nlohmann::json params_json(const LogGPSParams& p) {
  nlohmann::json j = {{"name", p.name},          {"L_ns", p.L},
                      {"o_ns", p.o},             {"Oss_ns_per_byte", p.Oss},
                      {"Ors_ns_per_byte", p.Ors}, {"Osl_ns_per_byte", p.Osl},
                      {"Orl_ns_per_byte", p.Orl}, {"Gs_ns_per_byte", p.Gs},
                      {"Gl_ns_per_byte", p.Gl},  {"R_ns", p.R},
                      {"s_bytes", bytes_json(p.s)}, {"S_bytes", bytes_json(p.S)}};
  if (p.persistent_saving) j["persistent_saving_ns"] = *p.persistent_saving;
  if (p.reduce_ns_per_byte) j["reduce_ns_per_byte"] = *p.reduce_ns_per_byte;
  if (p.raised_from)
    j["raised"] = {{"from_bytes", *p.raised_from}, {"Oss_ns_per_byte", p.Oss_raised}, {"Ors_ns_per_byte", p.Ors_raised}};
  return j;
}

void check_report(const nlohmann::json& j, const std::string& where) {
  if (!j.is_object() || !j.contains("schema") || !j["schema"].is_string())
    throw std::runtime_error(where + ": not an mpiadvise report (no \"schema\")");
  std::string schema = j["schema"].get<std::string>();
  if (schema != kReportSchema)
    throw std::runtime_error(where + ": schema " + schema + ", this mpiadvise reads " + kReportSchema);
  for (const char* key : {"summary", "model", "params"})
    if (!j.contains(key) || !j[key].is_object())
      throw std::runtime_error(where + ": the report has no \"" + key + "\" object");
  for (const char* key : {"ranks", "hot_spots", "sites", "advice"})
    if (!j.contains(key) || !j[key].is_array()) throw std::runtime_error(where + ": the report has no \"" + key + "\" array");
  auto number = [&](const nlohmann::json& o, const char* key, const std::string& path) {
    if (!o.contains(key) || !o[key].is_number())
      throw std::runtime_error(where + ": " + path + key + " is missing or not a number");
  };
  for (const char* key : {"predicted_ns", "measured_ns", "predicted_send_wait_ns", "predicted_recv_wait_ns",
                          "measured_send_wait_ns", "measured_recv_wait_ns", "rendezvous_messages", "rendezvous_bytes"})
    number(j["model"], key, "model.");
  number(j["summary"], "ranks", "summary.");
  if (!j["params"].contains("name") || !j["params"]["name"].is_string())
    throw std::runtime_error(where + ": params.name is missing or not a string");
  size_t i = 0;
  for (const auto& s : j["sites"]) {
    const std::string at = "sites[" + std::to_string(i++) + "].";
    if (!s.is_object() || !s.contains("where") || !s["where"].is_object() || !s["where"].contains("text") ||
        !s["where"]["text"].is_string() || !s.contains("call") || !s["call"].is_string())
      throw std::runtime_error(where + ": " + at + "where.text or " + at + "call is missing or not a string");
    for (const char* key : {"predicted_wait_ns", "measured_wait_ns", "rendezvous_messages"}) number(s, key, at);
  }
}

}  // namespace mpiadvise

#include "report.hpp"

#include <malloc.h>

#include <algorithm>
#include <cmath>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <stdexcept>

#include <fmt/format.h>

#include "advice.hpp"
#include "buffering.hpp"
#include "causes.hpp"
#include "phases.hpp"
#include "halo.hpp"
#include "hang.hpp"
#include "message_sides.hpp"
#include "efficiency.hpp"
#include "receive_side.hpp"
#include "report_charts.hpp"
#include "gate.hpp"
#include "model_fit.hpp"
#include "parallel.hpp"
#include "replay.hpp"
#include "text_escape.hpp"

#ifndef MPIADVISE_VERSION
#define MPIADVISE_VERSION "0.1.0"
#endif

namespace mpiadvise {

namespace {

using json = nlohmann::json;
using report::Location;

Location location_of(const SourceLocation& loc) {
  Location l;
  l.text = loc.module.empty() && loc.file.empty() ? std::string("?") : loc.text();
  if (!loc.file.empty()) l.file = loc.file, l.line = loc.line;
  if (!loc.function.empty()) l.function = loc.function;
  if (!loc.module.empty()) l.module = loc.module;
  if (!loc.module.empty() && !loc.function_only()) l.offset = loc.offset;  // a function-only site is the whole function
  return l;
}

json bytes_json(uint64_t v) { return v == LogGPSParams::kInfinite ? json("inf") : json(v); }

const char* call_name_of(uint32_t call) { return call_name(static_cast<int>(call)); }

// The measured side of a rank: its window (MPI_Init's exit to MPI_Finalize's entry) split into
// computation, waiting by cause, collectives and the rest of the time inside MPI.
// Its ops read from the trace, or from its op stream where the analysis has them.
report::MeasuredTimes measured_rank(const Analysis& a, int r) {
  report::MeasuredTimes m;
  const ReplayWindow w = a.streams ? (*a.streams)[static_cast<size_t>(r)].window() : replay_window(a.trace.ranks[r]);
  if (w.end <= w.first) return m;
  double mpi = 0, coll = 0;
  auto add = [&](uint64_t duration, OpKind kind) {
    const double d = static_cast<double>(duration);
    mpi += d;
    if (kind == OpKind::Collective) coll += d;
  };
  if (a.streams) {
    OpCursor c((*a.streams)[static_cast<size_t>(r)]);
    c.seek(w.first);
    StreamOp op;
    for (uint32_t i = w.first; i < w.end && c.next(op); i++) add(op.duration, op.kind);
  } else {
    for (uint32_t i = w.first; i < w.end; i++) add(a.trace.ranks[r].ops[i].t_exit() - a.trace.ranks[r].ops[i].t_enter, a.trace.ranks[r].ops[i].kind);
  }
  const double start = static_cast<double>(w.start_ns), stop = static_cast<double>(w.stop_ns);
  m.total_ns = stop - start;
  m.computation_ns = std::max(0.0, stop - start - mpi);
  m.mpi_ns = mpi;
  m.send_wait_ns = a.measured.send_wait_ns(r);
  m.recv_wait_ns = a.measured.recv_wait_ns(r);
  m.collectives_ns = coll;
  m.other_mpi_ns = std::max(0.0, mpi - m.send_wait_ns - m.recv_wait_ns - coll);
  return m;
}

report::PredictedTimes predicted_rank(const RankReplay& rr) {
  const Breakdown& b = rr.predicted;
  report::PredictedTimes p;
  p.total_ns = rr.predicted_ns;
  p.computation_ns = b.computation;
  p.overhead_ns = b.send_overhead + b.recv_overhead;
  p.send_wait_ns = b.send_wait;
  p.recv_wait_ns = b.recv_wait;
  p.synchronisation_ns = b.synchronisation;
  p.collectives_ns = b.collectives;
  p.other_ns = b.other;
  // as measured: the time inside MPI that is neither waiting nor collectives
  p.other_mpi_ns = b.send_overhead + b.recv_overhead + b.synchronisation + b.other;
  return p;
}

report::Factors factors_of(const EfficiencyFactors& f) {
  report::Factors x;
  x.parallel = f.parallel, x.load_balance = f.load_balance, x.communication = f.communication;
  x.serialisation = f.serialisation, x.transfer = f.transfer;
  x.run_ns = f.run_ns, x.model_ns = f.model_ns, x.ideal_ns = f.ideal_ns;
  x.mean_computation_ns = f.mean_computation_ns, x.max_computation_ns = f.max_computation_ns;
  return x;
}

// The report's parts, each from the analysis and the replay of the run as it was (baseline).
struct Builder {
  const Analysis& a;
  const Trace& t;
  const ReportOptions& options;
  // the replays' options; the baseline's and the efficiency's replays alone record the phases (marked):
  // each what-if that did too held 8 bytes a phase of every rank it did not need
  ReplayOptions base, marked;
  ReplayResult baseline;
  report::Report r;

  // the analysis's op streams (docs/streaming.md), where every stage reads the ops from them, or null
  const std::vector<OpStream>* streams = nullptr;

  Builder(const Analysis& analysis, const ReportOptions& o) : a(analysis), t(analysis.trace), options(o) {
    base.params = a.chosen.params;
    base.compute_factor = o.compute_factor;
    replay_library(a.facts, base);
    base.streams = a.streams;  // every replay walks them
    streams = a.streams.get();
    marked = base;
    marked.marks = std::make_shared<const PhaseMarks>(streams ? phase_marks(*streams) : phase_marks(t));
    baseline = replay(t, marked);
  }

  // The run's messages at their posts.
  MessageSides sides() const { return streams ? MessageSides(*streams) : MessageSides(t); }
  // An op's call and call site.
  std::pair<uint32_t, uint32_t> call_at(int rank, uint32_t op) const {
    if (!streams) return {t.op(rank, op).call, t.op(rank, op).callsite};
    OpCursor c((*streams)[static_cast<size_t>(rank)]);
    c.seek(op);
    StreamOp x;
    if (!c.next(x)) throw std::logic_error(fmt::format("rank {} has no op {} in its stream", rank, op));
    return {x.call, x.callsite};
  }

  Location at(int rank, uint32_t callsite) const { return location_of(a.locate(rank, callsite)); }

  void summary_and_ranks() {
    report::Summary& s = r.summary;
    s.ranks = t.world_size;
    s.ranks_logged = a.job->ranks().size();
    s.hosts = a.facts.hosts;
    s.library = a.facts.library;
    s.library_version = a.facts.library_version;
    s.transport = a.facts.transport;
    s.eager_setting = a.facts.eager_setting;
    s.configured_S = a.facts.configured_S;
    if (a.facts.configured_S) s.configured_setting = std::to_string(*a.facts.configured_S);
    else if (!a.facts.configured_text.empty()) s.configured_setting = a.facts.configured_text;
    s.effective_S = a.facts.effective_S;
    s.effective_S_note = a.facts.effective_S_note;
    for (const auto& rr : baseline.ranks) {
      report::Rank x{rr.rank, measured_rank(a, rr.rank), predicted_rank(rr),
                     rr.measured_ns > 0 ? (rr.predicted_ns - rr.measured_ns) / rr.measured_ns : 0.0};
      s.rank_time_ns += x.measured.total_ns;
      x.measured.total_ns = rr.measured_ns;  // from the job's start, as the predicted total is
      s.mpi_ns += x.measured.mpi_ns;
      r.ranks.push_back(x);
    }
    s.traced_ns = baseline.measured_ns;
    s.mpi_share = s.rank_time_ns > 0 ? s.mpi_ns / s.rank_time_ns : 0.0;
    sides().each([&](const MessageSide& x) { s.messages += x.send && x.matched; });
    s.collectives = t.collectives.size();
    if (streams)  // the instances' ids are the trace's: as many as one more than the highest a stream names
      for (const OpStream& st : *streams) s.collectives = std::max<uint64_t>(s.collectives, st.instance_ids());
    s.unmatched_sends = t.unmatched_sends;
    s.unmatched_recvs = t.unmatched_recvs;
    s.incomplete_collectives = t.incomplete_collectives;
  }

  // the model on the measured run: how far off, and whether it explains the run (where and why not)
  void model() {
    const LogGPSParams& p = a.chosen.params;
    r.params = {p, a.chosen.why, p.description, {}};
    if (a.probe)
      r.params.run_speed = report::ProbedSpeed{a.probe->partner, a.probe->factor, a.probe_applied, a.probe->bytes,
                                               a.probe->measured_ns, a.probe->model_ns, a.probe->init,
                                               a.probe->finalize};
    report::Model& m = r.model;
    Breakdown total;
    for (const auto& rr : baseline.ranks) total += rr.predicted;
    for (int k = 0; k < t.world_size; k++)
      m.measured_send_wait_ns += a.measured.send_wait_ns(k), m.measured_recv_wait_ns += a.measured.recv_wait_ns(k);
    m.measured_ns = baseline.measured_ns;
    m.predicted_ns = baseline.predicted_ns;
    m.error = baseline.error();
    m.predicted_send_wait_ns = total.send_wait;
    m.predicted_recv_wait_ns = total.recv_wait;
    m.rendezvous_messages = baseline.rendezvous_messages;
    m.rendezvous_bytes = baseline.rendezvous_bytes;
    m.unresolved_ops = baseline.unresolved_ops;
    const ModelFit fit = streams ? assess_fit(t, *streams, a.facts, p, baseline) : assess_fit(t, a.facts, p, baseline);
    m.fit.explained = fit.explained;
    m.fit.expected_error = kExpectedModelError;
    for (const auto& x : fit.ranks) m.fit.ranks.push_back({x.rank, x.measured_ns, x.predicted_ns, x.error});
    for (const auto& x : fit.sites)
      m.fit.sites.push_back({at(x.rank, x.callsite), call_name_of(x.call), x.measured_ns, x.predicted_ns});
    for (const auto& x : fit.suspects) {
      report::Suspect s{miss_reason_name(x.reason), x.detail, x.share, std::nullopt, std::nullopt};
      if (x.rank >= 0) s.rank = x.rank, s.where = at(x.rank, x.callsite);
      m.fit.suspects.push_back(s);
    }
  }

  // The phases' marks, once the efficiency factors have read them: nothing after reads them, and they are
  // per rank and phase (mpiadvise-synth's halo of 64 x 10^5 calls: 8.4 MB of marks and 10.2 MB of the
  // baseline's times at them, held through the causes, the peak of report --low-memory)
  void let_go_marks() {
    marked.marks.reset();
    std::vector<std::vector<double>>().swap(baseline.marks);
  }

  // efficiency factors (the POP methodology), from one more replay on an ideal network
  void efficiency_factors() {
    const Efficiency e = efficiency(t, marked, baseline, *marked.marks);
    report::Efficiency& x = r.efficiency;
    static_cast<report::Factors&>(x) = factors_of(e);
    x.slowest_rank = e.slowest_rank;
    auto phase = [&](const Efficiency::Phase& ph) {
      report::Phase p;
      static_cast<report::Factors&>(p) = factors_of(ph.factors());
      if (ph.opened_by_rank0_op >= 0) p.opened_at = at(0, call_at(0, static_cast<uint32_t>(ph.opened_by_rank0_op)).second);
      return p;
    };
    if (e.phases_from == PhaseMarks::Source::Pcontrol)
      for (const auto& ph : e.phases) x.phases.push_back(phase(ph));
    x.phases_note = e.phases_note;
    if (e.phases_from != PhaseMarks::Source::Iterations || e.phases.size() != e.iterations + 2) return;
    // the loop's phases, in place (a copy was the report's peak on a loop of one collective call)
    const std::span<const Efficiency::Phase> loop(e.phases.data() + 1, e.phases.size() - 2);
    std::vector<double> v;
    v.reserve(loop.size());
    auto median = [&](auto field) {
      v.clear();
      for (const auto& ph : loop) v.push_back(field(ph));
      std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
      return v[v.size() / 2];
    };
    const auto slowest = std::max_element(loop.begin(), loop.end(), [](const auto& p, const auto& q) { return p.run_ns < q.run_ns; });
    report::Iterations it;
    it.count = loop.size();
    it.opened_at = phase(loop.front()).opened_at;
    it.before = phase(e.phases.front());
    it.after = phase(e.phases.back());
    it.run_ns_median = median([](const Efficiency::Phase& ph) { return ph.run_ns; });
    it.model_ns_median = median([](const Efficiency::Phase& ph) { return ph.model_ns; });
    it.parallel_median = median([](const Efficiency::Phase& ph) { return ph.factors().parallel; });
    it.load_balance_median = median([](const Efficiency::Phase& ph) { return ph.factors().load_balance; });
    it.communication_median = median([](const Efficiency::Phase& ph) { return ph.factors().communication; });
    static_cast<report::Phase&>(it.slowest) = phase(*slowest);
    it.slowest.iteration = static_cast<uint64_t>(slowest - loop.begin() + 1);
    if (loop.size() <= kIterationsListed)
      for (const auto& ph : loop) {
        const EfficiencyFactors f = ph.factors();
        it.each.push_back({ph.run_ns, ph.model_ns, f.parallel, f.load_balance});
      }
    x.iterations = it;
  }

  // a run that did not finish: where each rank was, and who waits for whom
  void hang() {
    const HangState h = streams ? hang_state(t, *streams) : hang_state(t);
    auto rank_at = [&](int k) {
      const auto& x = h.ranks[k];
      report::HangRank o;
      o.rank = k;
      o.state = hang_state_name(x.state);
      if (x.op != kNone && x.state != HangState::State::Finished) {
        const auto [call, callsite] = call_at(k, x.op);
        o.call = call_name_of(call);
        o.where = at(k, callsite);
        o.for_ns = h.end_ns - x.since_ns;
        o.waits_for = x.waits_for;
        o.any_source = x.any_source;
      }
      return o;
    };
    r.hang.finished = h.finished;
    if (!h.finished) {
      for (size_t k = 0; k < h.ranks.size(); k++)
        if (h.ranks[k].state != HangState::State::Finished) r.hang.ranks.push_back(rank_at(static_cast<int>(k)));
      for (const auto& cycle : h.deadlocks) {
        std::vector<report::HangRank> c;
        for (int k : cycle) c.push_back(rank_at(k));
        r.hang.deadlocks.push_back(c);
      }
    }
    for (int k : h.waited_for) r.hang.waited_for.push_back(rank_at(k));
  }

  report::Computation computation(const ComputationKey& k) const {
    return {k.rank, call_name_of(k.call), at(k.rank, k.callsite)};
  }

  // why ranks wait: root causes (delay costs) and the critical path, measured; what each computation
  // would save, from what-if replays with it made twice as fast
  void causes_and_path() {
    // the waits, found again (the analysis keeps them added up only) and freed when this part is done
    const std::vector<Wait> waits = streams ? find_waits(*streams, LogGPS(a.chosen.params)) : find_waits(t, LogGPS(a.chosen.params));
    const DelayCosts dc = streams ? delay_costs(t, *streams, waits) : delay_costs(t, waits);
    r.root_causes.waiting_ns = dc.waiting_ns;
    r.root_causes.unattributed_ns = dc.unattributed_ns;
    for (size_t i = 0; i < dc.causes.size() && i < options.top; i++) {
      const RootCause& c = dc.causes[i];
      report::RootCause x;
      static_cast<report::Computation&>(x) = computation(c.where);
      x.direct_ns = c.direct_ns, x.indirect_ns = c.indirect_ns, x.total_ns = c.total();
      x.share_of_waiting = dc.waiting_ns > 0 ? c.total() / dc.waiting_ns : 0.0;
      r.root_causes.causes.push_back(x);
    }

    const CriticalPath cp = streams ? critical_path(*streams, waits) : critical_path(t, waits);
    report::CriticalPath& path = r.critical_path;
    path.length_ns = cp.length_ns, path.computation_ns = cp.computation_ns, path.mpi_ns = cp.mpi_ns;
    path.ends_on_rank = cp.last_rank, path.rank_changes = cp.rank_changes;
    for (size_t i = 0; i < cp.parts.size() && i < options.top; i++) {
      const auto& part = cp.parts[i];
      path.parts.push_back({part.where.rank, part.computation, call_name_of(part.where.call),
                            at(part.where.rank, part.where.callsite), part.ns,
                            cp.length_ns > 0 ? part.ns / cp.length_ns : 0.0, part.times});
    }

    // targets: the largest computations on the path and the largest off it, each replayed twice as fast
    std::map<ComputationKey, double> path_ns;
    for (const auto& part : cp.parts)
      if (part.computation) path_ns[part.where] += part.ns;
    int on = 0, off = 0;
    std::vector<CriticalPath::Part> picked;
    std::vector<ReplayOptions> whatifs;
    for (const auto& c : streams ? computations(*streams) : computations(t)) {
      const bool on_path = path_ns.count(c.where) > 0;
      if (c.ns <= 0 || (on_path ? on : off) >= (on_path ? 3 : 2)) continue;
      (on_path ? on : off)++;
      ReplayOptions& faster = whatifs.emplace_back(base);
      faster.compute_factor = 0.5 * base.compute_factor;
      faster.compute_ranks = {c.where.rank};
      faster.compute_sites = {t.site(c.where.rank, c.where.callsite)};
      picked.push_back(c);
    }
    std::vector<double> faster_ns(whatifs.size());
    replay_each(t, whatifs, [&](size_t i, const ReplayResult& r) { faster_ns[i] = r.predicted_ns; });
    for (size_t i = 0; i < picked.size(); i++) {
      const auto& c = picked[i];
      const double saving = baseline.predicted_ns - faster_ns[i];
      report::Target x;
      static_cast<report::Computation&>(x) = computation(c.where);
      auto it = path_ns.find(c.where);
      x.computation_ns = c.ns;
      x.on_path_ns = it == path_ns.end() ? 0.0 : it->second;
      x.saving_if_halved_ns = saving;
      x.saving_if_halved = baseline.predicted_ns > 0 ? saving / baseline.predicted_ns : 0.0;
      r.targets.push_back(x);
    }
    std::stable_sort(r.targets.begin(), r.targets.end(),
                     [](const auto& x, const auto& y) { return x.saving_if_halved_ns > y.saving_if_halved_ns; });
  }

  // the receive side (the third source paper's metrics), from the measured times
  void receive_side_metrics() {
    const ReceiveSide rs = streams ? receive_side(*streams, LogGPS(a.chosen.params)) : receive_side(t, LogGPS(a.chosen.params));
    r.receive_side = {rs.receives, rs.posted_early, rs.posted_early_share(), rs.step_ns, {}};
    for (const auto& x : rs.ranks)
      r.receive_side.ranks.push_back({x.rank, x.receives, x.posted_early, x.unexpected_max, x.unexpected_mean,
                                      x.unexpected_max_bytes, x.outstanding_sends_max, x.unexpected_by_step,
                                      x.unexpected_peak_ns});
  }

  // correctness: sends that completed only because the library buffered them (a replay with S = 0)
  void buffering() {
    const BufferingDependence b = buffering_dependence(t, base, baseline);
    r.buffering.checked = b.checked;
    for (const auto& d : b.deadlocks) {
      report::BufferingCycle c;
      for (const auto& s : d.sends) c.sends.push_back({s.rank, s.peer, at(s.rank, s.callsite), call_name_of(s.call), s.bytes});
      for (const auto& p : d.ranks) {
        const auto [call, callsite] = call_at(p.rank, p.op);
        c.ranks.push_back({p.rank, at(p.rank, callsite), call_name_of(call)});
      }
      c.hangs_below_bytes = d.hangs_below;
      c.times = d.times;
      r.buffering.deadlocks.push_back(c);
    }
  }

  // hot spots, by time lost (measured)
  double waited_all = 0;
  void hot_spot_list() {
    for (const auto& [key, w] : a.measured.sites)
      for (const auto& [c, ns] : w.waited_ns) waited_all += ns;
    for (const auto& h : streams ? hot_spots(t, *streams, a.measured, options.top) : hot_spots(t, a.measured, options.top)) {
      report::HotSpot x;
      x.where = at(h.rank, h.callsite);
      x.call = call_name_of(h.call);
      x.ranks = h.ranks, x.peers = h.peers, x.count = h.count;
      x.waited_ns = h.waited_ns;
      x.share_of_waiting = waited_all > 0 ? h.waited_ns / waited_all : 0.0;
      x.caused_ns = h.caused_ns;
      x.cause = wait_cause_name(h.cause);
      for (const auto& [c, ns] : h.waited_by_cause) x.by_cause[wait_cause_name(c)] = ns;
      for (const auto& [lg, n] : h.size_log2)
        x.sizes.push_back({lg < 0 ? 0 : uint64_t{1} << lg, lg < 0 ? 0 : lg >= 63 ? UINT64_MAX : (uint64_t{1} << (lg + 1)) - 1, n});
      r.hot_spots.push_back(x);
    }
  }

  // every call site's modelled figures (what the gate compares: the same for the same log)
  void site_list() {
    const LogGPS model(a.chosen.params);
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
    sides().each([&](const MessageSide& x) {
      if (!x.send || !x.matched) return;
      auto it = sites.find(t.site(x.rank, x.callsite));
      if (it == sites.end()) return;
      const Message& m = *x.fields;
      it->second.messages++;
      it->second.bytes += m.bytes;
      if (model.send_waits_for_receive(m.bytes, m.synchronous))
        it->second.rendezvous_messages++, it->second.rendezvous_bytes += m.bytes;
    });
    std::vector<std::pair<SiteKey, SiteSum>> ordered(sites.begin(), sites.end());
    std::stable_sort(ordered.begin(), ordered.end(), [](const auto& x, const auto& y) {
      return x.second.send_wait + x.second.recv_wait > y.second.send_wait + y.second.recv_wait;
    });
    for (const auto& [key, x] : ordered) {
      if (x.messages == 0 && x.send_wait + x.recv_wait <= 0) continue;  // only where messages are sent or waited for
      r.sites.push_back({at(x.rank, x.callsite), call_name_of(x.call), std::vector<int>(x.ranks.begin(), x.ranks.end()),
                         x.calls, x.messages, x.bytes, x.rendezvous_messages, x.rendezvous_bytes, x.send_wait,
                         x.recv_wait, x.send_wait + x.recv_wait, x.measured_wait});
    }
  }

  // halo exchanges (the first source paper's stencils), each changed as a whole in what-if replays
  std::vector<HaloExchange> halos;
  static std::string halo_text(const HaloExchange& h) {
    const std::string n = h.neighbours_min == h.neighbours_max ? std::to_string(h.neighbours_min)
                                                               : fmt::format("{} to {}", h.neighbours_min, h.neighbours_max);
    return fmt::format("the halo exchange of {} ranks (each with {} neighbour{}, messages up to {} bytes, {} times)",
                       h.ranks.size(), n, h.neighbours_max == 1 ? "" : "s", h.bytes_max, h.exchanges);
  }
  void halo_list() {
    halos = streams ? find_halos(t, *streams) : find_halos(t);
    for (const auto& h : halos) {
      report::Halo x;
      x.ranks = h.ranks;
      x.neighbours_min = h.neighbours_min, x.neighbours_max = h.neighbours_max;
      x.bytes_max = h.bytes_max, x.exchanges = h.exchanges;
      x.text = halo_text(h);
      for (const auto& [key, site] : h.send_sites) x.send_sites.push_back(at(site.first, site.second));
      for (const auto& [key, site] : h.recv_sites) x.recv_sites.push_back(at(site.first, site.second));
      // the whole exchange changed at once, with the whatif command that replays the same (where every
      // site has a line to name it by)
      for (const HaloWhatIf& w : halo_whatifs(t, h, base)) {
        std::string command = "mpiadvise whatif";
        auto add = [&](const std::vector<Location>& sites, const char* option) {
          for (const auto& s : sites) {
            if (!s.file) return false;
            command += fmt::format(" {} {}", option, shell_word(fmt::format("{}:{}", *s.file, *s.line)));
          }
          return true;
        };
        bool named = true;
        if (w.nonblocking) named &= add(x.send_sites, "--nonblocking");
        if (w.prepost) named &= add(x.recv_sites, "--prepost");
        if (w.split) named &= add(x.send_sites, "--split");
        const double saving = baseline.predicted_ns - w.predicted_ns;
        x.whatif.push_back({halo_change_name(w.change), w.predicted_ns, saving,
                            baseline.predicted_ns > 0 ? saving / baseline.predicted_ns : 0.0,
                            named ? std::optional<std::string>(command + " " + shell_word(a.dir)) : std::nullopt});
      }
      r.halos.push_back(x);
    }
  }

  // advice, each from a what-if replay by one of the advisors
  void advice() {
    for (const auto& ad : advise({t, a.facts, a.measured, base, baseline, options.top})) {
      const std::string where = ad.members.empty() ? std::string() : a.where(ad.members.front().first, ad.members.front().second);
      report::Advice x;
      x.kind = advice_kind_name(ad.kind());
      x.title = advisor(ad.kind()).title(ad, where);
      x.baseline_ns = ad.baseline_ns, x.predicted_ns = ad.predicted_ns;
      x.saving_ns = ad.saving_ns(), x.saving = ad.saving(), x.model_error = ad.model_error;
      x.uncertain = !r.model.fit.explained;
      x.send_wait_before_ns = ad.before.send_wait, x.send_wait_after_ns = ad.after.send_wait;
      x.recv_wait_before_ns = ad.before.recv_wait, x.recv_wait_after_ns = ad.after.recv_wait;
      x.messages = ad.messages;
      if (const auto* e = std::get_if<RaiseEagerLimit>(&ad.change)) {
        report::EagerLimitChange c{e->setting, e->value, e->S, e->mca, e->env, e->memory_per_rank_bytes,
                                   e->senders_per_rank, e->caution, {}};
        std::set<std::string> seen;
        for (const auto& [k, cs] : e->send_sites) {
          Location loc = at(k, cs);
          if (seen.insert(loc.text).second) c.sites.push_back(loc);
        }
        x.eager = c;
      } else {
        report::SiteChange c{at(ad.members.front().first, ad.members.front().second), call_name_of(ad.call), std::nullopt, {}};
        for (size_t h = 0; h < halos.size(); h++)
          if (halos[h].at(ad.site)) {
            c.halo = h;
            x.title = "in " + halo_text(halos[h]) + ": " + x.title;
            break;
          }
        std::set<int> rs;
        for (const auto& [k, cs] : ad.members) rs.insert(k);
        c.ranks.assign(rs.begin(), rs.end());
        x.at = c;
      }
      if (const auto* s = std::get_if<SplitMessages>(&ad.change))
        x.split = {s->chunk_bytes, s->extra_messages,
                   (ad.after.send_overhead + ad.after.recv_overhead) - (ad.before.send_overhead + ad.before.recv_overhead)};
      if (const auto* p = std::get_if<PrepostReceives>(&ad.change)) x.prepost = {p->buffer_bytes};
      if (const auto* p = std::get_if<PersistentRequests>(&ad.change))
        x.persistent = {p->identical_calls, *a.chosen.params.persistent_saving};
      (ad.worthwhile ? r.advice : r.considered).push_back(x);
    }
  }

  // the pictures' figures, and the text of the hot spots' lines (report --format html draws them)
  void charts() {
    std::optional<uint64_t> advised_S, considered_S;
    for (const auto& x : r.advice)
      if (x.eager && !advised_S) advised_S = x.eager->S;
    for (const auto& x : r.considered)
      if (x.eager && !considered_S) considered_S = x.eager->S;
    r.charts = report_charts(a, base, advised_S, considered_S);
    for (auto& h : r.hot_spots) {
      if (!h.where.file) continue;
      const std::string text = source_line_text(*h.where.file, *h.where.line, h.where.module.value_or(""));
      if (!text.empty()) h.where.source = text;
    }
  }

  // what a reader should know about this job
  void notes() {
    const LogGPSParams& p = a.chosen.params;
    auto& notes = r.notes;
    const size_t logged = a.job->ranks().size();
    const uint64_t matched = r.summary.messages;
    if (logged < static_cast<size_t>(t.world_size))
      notes.push_back(fmt::format("{} of {} ranks have no readable log: their part of the run is missing from the analysis",
                                  static_cast<size_t>(t.world_size) - logged, t.world_size));
    uint64_t calls = 0;
    for (const auto& rt : t.ranks) calls += rt.calls;
    if (a.until_s || a.from_s)
      notes.push_back(fmt::format("only {} is analysed, its start being MPI_Init's return on rank 0: {} of the logs' {} "
                                  "MPI calls, as if every rank had {} there",
                                  part_text(a.from_s, a.until_s), calls, a.calls_in_logs,
                                  a.from_s && a.until_s ? "started and stopped" : a.from_s ? "started" : "stopped"));
    if (t.unmatched_sends || t.unmatched_recvs)
      notes.push_back(fmt::format("{} sends and {} receives have no partner in the logs ({}): a send is modelled as if "
                                  "its receiver were never late, a receive keeps its measured time",
                                  t.unmatched_sends, t.unmatched_recvs,
                                  a.until_s || a.from_s ? "a partner outside the part analysed, a rank's log missing or cut off"
                                                        : "a rank's log missing or cut off"));
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
    const auto repeated = repeated_calls(t, sides());
    if (!repeated.empty()) {
      const auto& top = repeated.front();
      std::string first = fmt::format("{} at {} ({} of {} calls alike)", call_name_of(top.call),
                                      a.where(top.members.front().first, top.members.front().second), top.identical, top.calls);
      if (!p.persistent_saving)
        notes.push_back(fmt::format("{} call site{} repeat one call with the same arguments, e.g. {}: persistent requests "
                                    "are not assessed, the parameter set does not say what they save here (mpiadvise "
                                    "calibrate measures it)", repeated.size(), repeated.size() == 1 ? "" : "s", first));
      else if (std::none_of(r.advice.begin(), r.advice.end(), [](const report::Advice& x) { return x.persistent.has_value(); }))
        notes.push_back(fmt::format("{} call site{} repeat one call with the same arguments, e.g. {}; a persistent request "
                                    "saves {:.0f} ns per call with this library: too little to advise (see considered)",
                                    repeated.size(), repeated.size() == 1 ? "" : "s", first, *p.persistent_saving));
    }
    if (r.advice.empty())
      notes.push_back(fmt::format("no change predicted to save more than the model's error on this run ({:.1f}%) and 1%",
                                  100 * std::fabs(baseline.error())));
    bool symbols = false, functions = false;
    for (const auto& x : r.hot_spots) symbols |= x.where.file.has_value(), functions |= x.where.function.has_value();
    for (const auto& x : r.sites) symbols |= x.where.file.has_value(), functions |= x.where.function.has_value();
    if (!symbols && (!r.hot_spots.empty() || !r.sites.empty()))
      notes.push_back(functions ? "no line information for the call sites (build with -g, or give the debug files with "
                                  "--debug-dir): they are named by function, the calls in one function counted together"
                                : "no line information for the call sites (build with -g, or give the debug files with "
                                  "--debug-dir): they are named by module and offset");
    const bool logs_whole = logged == static_cast<size_t>(t.world_size) && t.unmatched_sends == 0 &&
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
    for (const auto& pr : t.problems) r.problems.push_back(pr.text());
  }
};

}  // namespace

report::Report make_report(const Analysis& a, const ReportOptions& options) {
  // What a part of the report freed is given back before the next: glibc keeps freed memory in its heaps,
  // and each part's replays found the last part's free memory in other places, so that the parts' peaks
  // added up (mpiadvise-synth's halo of 64 x 10^5 calls: from 348 to 422 MiB resident while 356 MiB were
  // in use). A trim is a walk over the heaps: a dozen of them, not one a replay.
  auto then_trim = [](auto&& part) {
    part();
    malloc_trim(0);
  };
  Builder b(a, options);
  malloc_trim(0);
  b.r.schema = kReportSchema;
  b.r.generator = std::string("mpiadvise ") + MPIADVISE_VERSION;
  b.r.dir = a.dir;
  b.summary_and_ranks();
  then_trim([&] { b.model(); });
  then_trim([&] {
    b.efficiency_factors();
    b.let_go_marks();
  });
  b.hang();
  then_trim([&] { b.causes_and_path(); });
  then_trim([&] { b.receive_side_metrics(); });
  then_trim([&] { b.buffering(); });
  b.hot_spot_list();
  b.site_list();
  if (options.gate_figures) then_trim([&] { b.r.gate = gate::run_figures(a, a.streams); });  // what mpiadvise gate compares
  then_trim([&] { b.halo_list(); });
  then_trim([&] { b.advice(); });
  if (options.charts) b.charts();
  b.notes();
  return std::move(b.r);
}

nlohmann::json build_report(const Analysis& a, const ReportOptions& options) { return make_report(a, options); }

nlohmann::json params_json(const LogGPSParams& p) {
  nlohmann::json j = {{"name", p.name},          {"L_ns", p.L},
                      {"o_ns", p.o},             {"Oss_ns_per_byte", p.Oss},
                      {"Ors_ns_per_byte", p.Ors}, {"Osl_ns_per_byte", p.Osl},
                      {"Orl_ns_per_byte", p.Orl}, {"Gs_ns_per_byte", p.Gs},
                      {"Gl_ns_per_byte", p.Gl},  {"R_ns", p.R},
                      {"s_bytes", bytes_json(p.s)}, {"S_bytes", bytes_json(p.S)}};
  if (p.s_set) j["s_set_bytes"] = bytes_json(*p.s_set);
  if (p.o_r) j["o_r_ns"] = *p.o_r;
  if (p.D != 0) j["D_ns"] = p.D;
  if (p.persistent_saving) j["persistent_saving_ns"] = *p.persistent_saving;
  if (p.reduce_ns_per_byte) j["reduce_ns_per_byte"] = *p.reduce_ns_per_byte;
  if (p.isend_ns) j["isend_ns"] = *p.isend_ns;
  if (p.irecv_ns) j["irecv_ns"] = *p.irecv_ns;
  if (p.raised_from)
  {
    j["raised"] = {{"from_bytes", *p.raised_from}, {"Oss_ns_per_byte", p.Oss_raised}, {"Ors_ns_per_byte", p.Ors_raised}};
    if (p.raised_to) j["raised"]["to_bytes"] = *p.raised_to;
  }
  if (p.large_from)
    j["large"] = {{"from_bytes", *p.large_from}, {"R_ns", p.R_large}, {"Osl_ns_per_byte", p.Osl_large}, {"Orl_ns_per_byte", p.Orl_large}};
  if (p.speeds_ratio)
    j["machine"] = {{"speeds_ratio", *p.speeds_ratio}, {"slow_share", p.slow_share}, {"speeds", p.speeds}};
  if (p.resend_buffered || p.resend_rendezvous) {
    j["resend"] = nlohmann::json::object();
    if (p.resend_buffered) j["resend"]["buffered_factor"] = *p.resend_buffered;
    if (p.resend_rendezvous) j["resend"]["rendezvous_factor"] = *p.resend_rendezvous;
    if (p.resend_cached_bytes) j["resend"]["cached_bytes"] = *p.resend_cached_bytes;
  }
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

// The verdict of mpiadvise gate: candidate runs against baseline runs, figure by figure.
#include "gate.hpp"

#include <algorithm>
#include <cmath>
#include <map>

namespace mpiadvise::gate {

const std::vector<MetricInfo>& metrics() {
  static const std::vector<MetricInfo> table = {
      {Metric::PredictedTime, "predicted_time", true, false, "predicted run time"},
      {Metric::SendWait, "send_wait", true, false, "predicted send-wait, all ranks"},
      {Metric::RecvWait, "recv_wait", true, false, "predicted receive-wait, all ranks"},
      {Metric::Messages, "messages", false, false, "messages sent"},
      {Metric::Bytes, "bytes", false, true, "bytes sent"},
      {Metric::RendezvousMessages, "rendezvous_messages", false, false, "messages sent by rendezvous (above S)"},
      {Metric::RendezvousBytes, "rendezvous_bytes", false, true, "bytes sent by rendezvous (above S)"},
      {Metric::Calls, "calls", false, false, "MPI calls that communicate"},
      {Metric::Sites, "sites", false, false, "per call site: calls, messages, bytes, rendezvous, predicted wait"},
  };
  return table;
}

const MetricInfo* metric_named(std::string_view name) {
  for (const auto& m : metrics())
    if (name == m.name) return &m;
  return nullptr;
}

const char* group_name(CheckGroup g) {
  switch (g) {
    case CheckGroup::Metrics: return "metrics";
    case CheckGroup::Sites: return "sites";
    case CheckGroup::Budgets: return "budgets";
  }
  return "?";
}

namespace {

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

// Median absolute deviation, scaled to a standard deviation for normal noise.
double robust_sd(const std::vector<double>& v) {
  const double m = median(v);
  std::vector<double> d;
  for (double x : v) d.push_back(std::fabs(x - m));
  return 1.4826 * median(d);
}

// A time figure over one side's runs: its median, the standard error of that median, and what pauses
// could have moved it. The spread of one run is the larger of what the run estimated for
// itself and how much the runs differ.
struct TimeSide {
  double center = 0, standard_error = 0, pause = 0;
};

TimeSide time_side(const std::vector<TimeFigure>& runs) {
  std::vector<double> values, noise, pause;
  for (const auto& r : runs) values.push_back(r.ns), noise.push_back(r.noise_ns), pause.push_back(r.pause_ns);
  TimeSide s;
  s.center = median(values);
  s.pause = median(pause);
  const double sd = std::max(median(noise), runs.size() > 1 ? robust_sd(values) : 0.0);
  // the median of n runs: about 1.25 sd / sqrt(n) for normal noise
  s.standard_error = runs.size() > 1 ? 1.2533 * sd / std::sqrt(static_cast<double>(runs.size())) : sd;
  return s;
}

FigureCheck time_check(const char* figure, const std::vector<TimeFigure>& base, const std::vector<TimeFigure>& cand,
                       double allowed, double floor_ns) {
  FigureCheck c;
  c.figure = figure;
  c.time = true;
  const TimeSide b = time_side(base), k = time_side(cand);
  c.baseline = b.center;
  c.candidate = k.center;
  c.band = kBandSigmas * std::hypot(b.standard_error, k.standard_error) + b.pause + k.pause;
  c.limit = b.center + std::max(c.band, allowed * b.center) + floor_ns;
  c.failed = c.candidate > c.limit;
  return c;
}

// Counts are the program's: equal in every run of an unchanged program. Where the baseline's runs
// differ all the same, the largest of them is the limit.
FigureCheck count_check(const char* figure, const std::vector<double>& base, const std::vector<double>& cand) {
  FigureCheck c;
  c.figure = figure;
  c.baseline = median(base);
  c.candidate = median(cand);
  const auto [lo, hi] = std::minmax_element(base.begin(), base.end());
  const auto [clo, chi] = std::minmax_element(cand.begin(), cand.end());
  c.band = *hi - *lo;
  c.varies = *hi != *lo || *chi != *clo;
  c.limit = *hi;
  c.failed = c.candidate > c.limit;
  return c;
}

template <typename Get>
auto each(const std::vector<RunFigures>& runs, Get get) {
  std::vector<decltype(get(runs.front()))> v;
  for (const auto& r : runs) v.push_back(get(r));
  return v;
}

double count_of(const RunFigures& f, Metric m) {
  switch (m) {
    case Metric::Messages: return static_cast<double>(f.messages);
    case Metric::Bytes: return static_cast<double>(f.bytes);
    case Metric::RendezvousMessages: return static_cast<double>(f.rendezvous_messages);
    case Metric::RendezvousBytes: return static_cast<double>(f.rendezvous_bytes);
    case Metric::Calls: return static_cast<double>(f.calls);
    default: return 0;
  }
}

TimeFigure time_of(const RunFigures& f, Metric m) {
  switch (m) {
    case Metric::PredictedTime: return f.predicted;
    case Metric::SendWait: return f.send_wait;
    case Metric::RecvWait: return f.recv_wait;
    default: return {};
  }
}

double measured_of(const RunFigures& f, Metric m) {
  switch (m) {
    case Metric::PredictedTime: return f.measured_ns;
    case Metric::SendWait: return f.measured_send_wait_ns;
    case Metric::RecvWait: return f.measured_recv_wait_ns;
    default: return NAN;
  }
}

// ---- call sites of the two sides, paired ----------------------------------------------------------------
// A site of one side: its figures in each run (nullptr where a run has no such site).
struct SideSite {
  const SiteFigures* any = nullptr;
  std::vector<const SiteFigures*> runs;
};

std::map<std::string, SideSite> side_sites(const std::vector<RunFigures>& runs) {
  std::map<std::string, SideSite> out;
  for (size_t i = 0; i < runs.size(); i++)
    for (const auto& s : runs[i].sites) {
      SideSite& x = out[s.name];
      x.runs.resize(runs.size(), nullptr);
      x.runs[i] = &s;
      if (!x.any) x.any = &s;
    }
  for (auto& [name, x] : out) x.runs.resize(runs.size(), nullptr);
  return out;
}

struct SitePair {
  std::string name;  // the candidate's, or the baseline's where the candidate has none
  const SideSite* base = nullptr;
  const SideSite* cand = nullptr;
};

// Sites of one file, function and call are paired in the order of their lines when both sides have as
// many and every line moved by the same amount (code added or removed above them, or nothing); else,
// and for sites without line information, by name, so that a send removed and another added in the
// same function are not taken for one another.
std::vector<SitePair> pair_sites(const std::map<std::string, SideSite>& base, const std::map<std::string, SideSite>& cand) {
  auto groups = [](const std::map<std::string, SideSite>& side) {
    std::map<std::string, std::vector<std::pair<int, std::string>>> g;
    for (const auto& [name, x] : side)
      if (!x.any->file.empty()) g[x.any->file + "\n" + x.any->function + "\n" + x.any->call].emplace_back(x.any->line, name);
    for (auto& [key, v] : g) std::sort(v.begin(), v.end());
    return g;
  };
  const auto base_groups = groups(base), cand_groups = groups(cand);
  std::map<std::string, SitePair> pairs;  // by name
  std::set<std::string> paired_base, paired_cand;
  for (const auto& [key, cands] : cand_groups) {
    auto b = base_groups.find(key);
    if (b == base_groups.end() || b->second.size() != cands.size()) continue;
    const auto& bases = b->second;
    bool uniform = true;
    for (size_t i = 1; i < cands.size(); i++) uniform &= cands[i].first - bases[i].first == cands[0].first - bases[0].first;
    if (!uniform) continue;
    for (size_t i = 0; i < cands.size(); i++) {
      pairs[cands[i].second] = {cands[i].second, &base.at(bases[i].second), &cand.at(cands[i].second)};
      paired_base.insert(bases[i].second);
      paired_cand.insert(cands[i].second);
    }
  }
  for (const auto& [name, x] : cand) {
    if (paired_cand.count(name)) continue;
    SitePair& p = pairs[name];
    p.name = name;
    p.cand = &x;
    auto b = base.find(name);
    if (b != base.end() && !paired_base.count(name)) p.base = &b->second, paired_base.insert(name);
  }
  for (const auto& [name, x] : base) {
    if (paired_base.count(name)) continue;
    // a baseline site with no partner; its name may be taken by a candidate site paired by line order
    const std::string shown = pairs.count(name) ? name + " (baseline)" : name;
    pairs[shown] = {shown, &x, nullptr};
  }
  std::vector<SitePair> out;
  for (auto& [name, p] : pairs) out.push_back(p);
  return out;
}

template <typename Get>
std::vector<double> site_counts(const SideSite* s, size_t runs, Get get) {
  std::vector<double> v(runs, 0.0);
  if (s)
    for (size_t i = 0; i < runs; i++)
      if (s->runs[i]) v[i] = static_cast<double>(get(*s->runs[i]));
  return v;
}

std::vector<TimeFigure> site_waits(const SideSite* s, size_t runs) {
  std::vector<TimeFigure> v(runs);
  if (s)
    for (size_t i = 0; i < runs; i++)
      if (s->runs[i]) v[i] = s->runs[i]->wait;
  return v;
}

bool any_nonzero(const std::vector<double>& a, const std::vector<double>& b) {
  return std::any_of(a.begin(), a.end(), [](double x) { return x != 0; }) ||
         std::any_of(b.begin(), b.end(), [](double x) { return x != 0; });
}

Check site_check(const SitePair& p, size_t nb, size_t nc, double allowed, double floor_ns) {
  Check c;
  c.group = CheckGroup::Sites;
  c.name = p.name;
  auto timed = [](const SideSite* s) {
    return s && std::any_of(s->runs.begin(), s->runs.end(), [](const SiteFigures* f) { return f && f->calls_timed; });
  };
  auto counts = [&](const char* figure, auto get) {
    const auto b = site_counts(p.base, nb, get), k = site_counts(p.cand, nc, get);
    if (any_nonzero(b, k)) c.figures.push_back(count_check(figure, b, k));
  };
  if (!timed(p.base) && !timed(p.cand)) counts("calls", [](const SiteFigures& f) { return f.calls; });
  counts("messages", [](const SiteFigures& f) { return f.messages(); });
  counts("bytes", [](const SiteFigures& f) { return f.bytes(); });
  counts("rendezvous_messages", [](const SiteFigures& f) { return f.rendezvous_messages; });
  counts("rendezvous_bytes", [](const SiteFigures& f) { return f.rendezvous_bytes; });
  const auto bw = site_waits(p.base, nb), kw = site_waits(p.cand, nc);
  auto waits = [](const TimeFigure& t) { return t.ns > 0 || t.noise_ns > 0 || t.pause_ns > 0; };
  if (std::any_of(bw.begin(), bw.end(), waits) || std::any_of(kw.begin(), kw.end(), waits)) {
    FigureCheck w = time_check("wait", bw, kw, allowed, floor_ns);
    w.measured_baseline = median(site_counts(p.base, nb, [](const SiteFigures& f) { return f.measured_wait_ns; }));
    w.measured_candidate = median(site_counts(p.cand, nc, [](const SiteFigures& f) { return f.measured_wait_ns; }));
    c.figures.push_back(w);
  }
  for (const auto& f : c.figures) c.failed |= f.failed;
  return c;
}

}  // namespace

bool failed_on_times_of_one_run(const Verdict& v) {
  if (!v.failed || v.baseline_runs == 0 || (v.baseline_runs > 1 && v.candidate_runs > 1)) return false;
  for (const auto& k : v.checks)
    for (const auto& f : k.figures)
      if (f.failed && (!f.time || k.group == CheckGroup::Budgets)) return false;
  return true;
}

Verdict compare(const std::vector<RunFigures>& baseline, const std::vector<RunFigures>& candidate,
                const GateOptions& options) {
  Verdict v;
  v.baseline_runs = baseline.size();
  v.candidate_runs = candidate.size();
  v.max_regression = options.max_regression;
  for (const auto& r : baseline) v.baseline_params.insert(r.params), v.intervals += r.intervals, v.replaced_intervals += r.replaced_intervals;
  for (const auto& r : candidate) v.candidate_params.insert(r.params), v.intervals += r.intervals, v.replaced_intervals += r.replaced_intervals;
  if (candidate.empty()) return v;
  auto wanted = [&](Metric m) { return options.metrics.empty() || options.metrics.count(m); };

  if (!baseline.empty()) {
    // a time growing by less than this is no regression (a wait from nothing to a few nanoseconds)
    const double run_ns = median(each(baseline, [](const RunFigures& f) { return f.predicted.ns; }));
    const double floor_ns = kTimeFloorShare * run_ns, wait_floor_ns = kWaitFloorShare * run_ns;
    for (const auto& m : metrics()) {
      if (m.metric == Metric::Sites || !wanted(m.metric)) continue;
      Check c;
      c.group = CheckGroup::Metrics;
      c.name = m.name;
      if (m.time) {
        FigureCheck f = time_check(m.name, each(baseline, [&](const RunFigures& r) { return time_of(r, m.metric); }),
                                   each(candidate, [&](const RunFigures& r) { return time_of(r, m.metric); }),
                                   options.max_regression, m.metric == Metric::PredictedTime ? floor_ns : wait_floor_ns);
        f.measured_baseline = median(each(baseline, [&](const RunFigures& r) { return measured_of(r, m.metric); }));
        f.measured_candidate = median(each(candidate, [&](const RunFigures& r) { return measured_of(r, m.metric); }));
        c.figures.push_back(f);
      } else {
        c.figures.push_back(count_check(m.name, each(baseline, [&](const RunFigures& r) { return count_of(r, m.metric); }),
                                        each(candidate, [&](const RunFigures& r) { return count_of(r, m.metric); })));
      }
      c.failed = c.figures.front().failed;
      v.checks.push_back(c);
    }
    const auto base_sites = side_sites(baseline), cand_sites = side_sites(candidate);  // the pairs point into them
    if (wanted(Metric::Sites))
      for (const auto& p : pair_sites(base_sites, cand_sites)) {
        Check c = site_check(p, baseline.size(), candidate.size(), options.max_regression, wait_floor_ns);
        if (!c.figures.empty()) v.checks.push_back(c);
      }
  }

  // budgets: the candidate alone
  const double ranks = std::max(1.0, median(each(candidate, [](const RunFigures& r) { return static_cast<double>(r.ranks); })));
  const double rank_time = median(each(candidate, [](const RunFigures& r) { return r.predicted.ns; })) * ranks;
  for (const auto& b : options.budgets) {
    const MetricInfo* info = nullptr;
    for (const auto& m : metrics())
      if (m.metric == b.metric) info = &m;
    Check c;
    c.group = CheckGroup::Budgets;
    c.name = b.text;
    FigureCheck f;
    f.figure = info ? info->name : "?";
    f.time = info && info->time;
    f.candidate = f.time ? median(each(candidate, [&](const RunFigures& r) { return time_of(r, b.metric).ns; }))
                         : median(each(candidate, [&](const RunFigures& r) { return count_of(r, b.metric); }));
    if (f.time) f.measured_candidate = median(each(candidate, [&](const RunFigures& r) { return measured_of(r, b.metric); }));
    f.limit = b.share ? b.limit * rank_time : b.limit;
    f.failed = f.candidate > f.limit;
    c.figures.push_back(f);
    c.failed = f.failed;
    v.checks.push_back(c);
  }
  for (const auto& c : v.checks) v.failed |= c.failed;
  return v;
}

}  // namespace mpiadvise::gate

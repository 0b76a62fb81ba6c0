// The figures of one run that mpiadvise gate compares, and their JSON (the "gate" object of a report).
#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

#include "gate.hpp"
#include "log_header.hpp"
#include "parallel.hpp"
#include "replay.hpp"
#include "report.hpp"
#include "steady_trace.hpp"
#include "text_escape.hpp"

namespace mpiadvise::gate {

namespace {

using json = nlohmann::json;

// The time figures of one replay.
struct Sample {
  double predicted = 0, send_wait = 0, recv_wait = 0;
  std::map<SiteKey, double> site_wait;
};

Sample sample_of(const Trace& t, const ReplayResult& r) {
  Sample s;
  s.predicted = r.predicted_ns;
  for (const auto& rr : r.ranks) {
    s.send_wait += rr.predicted.send_wait;
    s.recv_wait += rr.predicted.recv_wait;
  }
  for (const auto& sr : r.sites) s.site_wait[t.site(sr.rank, sr.callsite)] += sr.predicted.send_wait + sr.predicted.recv_wait;
  return s;
}

double standard_deviation(const std::vector<double>& v) {
  if (v.size() < 2) return 0;
  double mean = 0;
  for (double x : v) mean += x;
  mean /= static_cast<double>(v.size());
  double ss = 0;
  for (double x : v) ss += (x - mean) * (x - mean);
  return std::sqrt(ss / static_cast<double>(v.size() - 1));
}

template <typename Get>
TimeFigure time_figure(const Sample& steady, const Sample& floor, const std::vector<Sample>& noisy, Get get) {
  std::vector<double> v;
  for (const auto& s : noisy) v.push_back(get(s));
  return {get(steady), standard_deviation(v), std::fabs(get(steady) - get(floor))};
}

double site_wait(const Sample& s, const SiteKey& key) {
  auto it = s.site_wait.find(key);
  return it == s.site_wait.end() ? 0 : it->second;
}

// Calls whose number the timing decides: how many requests one call completes, or whether a test or
// probe found something.
bool calls_timed(uint32_t call) {
  switch (call) {
    case MPA_CALL_Waitsome: case MPA_CALL_Test: case MPA_CALL_Testall: case MPA_CALL_Testany: case MPA_CALL_Testsome:
    case MPA_CALL_Iprobe: case MPA_CALL_Improbe:
      return true;
    default:
      return false;
  }
}

// Fixed: the same log gives the same noise band.
constexpr uint64_t kNoiseSeed = 0x6d70616761746531;

}  // namespace

RunFigures run_figures(const Analysis& a, std::shared_ptr<const std::vector<OpStream>> streams) {
  const Trace& t = a.trace;
  const size_t P = streams ? streams->size() : t.ranks.size();
  RunFigures f;
  f.source = a.dir;
  f.params = a.set_params.name;
  f.ranks = t.world_size;
  f.until_s = a.part.until_s;
  f.from_s = a.part.from_s;
  ReplayOptions options;
  options.params = a.set_params;
  options.streams = streams;
  const LogGPS model(options.params);

  // The steady replay: the repeated intervals at their steady values, the one-offs at nothing. A one-off
  // (set-up before the first call, a phase run once, the end before MPI_Finalize) cannot be told from a
  // pause of the machine: on a loaded machine the end of examples/halo.c took 2.8 to 7.2 ms in runs of
  // 14 ms, which no band narrower than the run could hold. The gate compares the program's steady
  // state; the report's prediction keeps the one-offs. The floor: every repeated interval cut to its
  // median, what is left when no pause lengthened any; kNoiseReplays in which every repeated interval
  // moves by its noise.
  const SteadyIntervals intervals = streams ? steady_intervals(*streams) : steady_intervals(t);
  f.intervals = intervals.measured;
  f.repeated_intervals = intervals.repeated;
  f.replaced_intervals = intervals.replaced;
  // Replay k: 0 the floor, 1 the steady one, then the noisy ones, each drawing from streams of its own
  // (the same draws whatever the thread count). Each retimes the trace as it goes (Retiming): as many at
  // once as there are threads, each holding its replay's state and no time of any op.
  const size_t replays = 2 + kNoiseReplays;
  std::vector<Sample> samples(replays);
  parallel_for(replays, [&](size_t k) {
    RetimingDraw draw;
    draw.kind = k == 0 ? RetimingDraw::Floor : k == 1 ? RetimingDraw::Steady : RetimingDraw::Noisy;
    draw.seed = kNoiseSeed + k;
    draw.speed_sd = kRankSpeedNoise;
    draw.shift_sd_ns = kIntervalShiftNs;
    ReplayOptions o = options;
    o.retiming = streams ? std::make_shared<const Retiming>(*streams, intervals, draw)
                         : std::make_shared<const Retiming>(t, intervals, draw);
    samples[k] = sample_of(t, replay(t, o));
  });
  const Sample floor = samples[0], steady = samples[1];
  const std::vector<Sample> noisy(samples.begin() + 2, samples.end());
  f.predicted = time_figure(steady, floor, noisy, [](const Sample& s) { return s.predicted; });
  f.send_wait = time_figure(steady, floor, noisy, [](const Sample& s) { return s.send_wait; });
  f.recv_wait = time_figure(steady, floor, noisy, [](const Sample& s) { return s.recv_wait; });

  // measured, for information
  uint64_t t0 = UINT64_MAX, stop = 0;
  for (size_t r = 0; r < P; r++) {
    if (streams ? (*streams)[r].ops() == 0 : t.ranks[r].ops.empty()) continue;
    const ReplayWindow w = streams ? (*streams)[r].window() : replay_window(t.ranks[r]);
    t0 = std::min(t0, w.start_ns);
    stop = std::max(stop, w.stop_ns);
    f.measured_send_wait_ns += a.measured.send_wait_ns(r);
    f.measured_recv_wait_ns += a.measured.recv_wait_ns(r);
  }
  f.measured_ns = stop > t0 && t0 != UINT64_MAX ? static_cast<double>(stop - t0) : 0;

  // per call site: what the program does there, and its waiting
  struct Site {
    int rank = -1;
    uint32_t callsite = 0, call = 0;
    bool communicates = false;
    std::set<std::pair<int, uint32_t>> members;  // (rank, callsite id)
    SiteFigures fig;
  };
  std::map<SiteKey, Site> sites;
  auto called = [&](int r, uint32_t callsite, uint32_t call, OpKind kind) -> Site& {
    Site& s = sites[t.site(r, callsite)];
    if (s.rank < 0) s.rank = r, s.callsite = callsite, s.call = call;
    s.members.insert({r, callsite});
    s.communicates |= kind != OpKind::Other;
    if (kind != OpKind::Polling) s.fig.calls++;
    s.fig.calls_timed |= calls_timed(call);
    return s;
  };
  // a matched message, at its send's site
  auto sent = [&](Site& s, uint64_t bytes, bool synchronous) {
    const bool rendezvous = model.send_waits_for_receive(bytes, synchronous);
    (rendezvous ? s.fig.rendezvous_messages : s.fig.eager_messages)++;
    (rendezvous ? s.fig.rendezvous_bytes : s.fig.eager_bytes) += bytes;
    s.communicates = true;
  };
  if (!streams) {
    for (int r = 0; r < t.world_size; r++)
      for (const Op& op : t.ranks[r].ops) called(r, op.callsite, op.call, op.kind);
    for (const auto& m : t.messages)
      if (m.matched()) sent(sites[t.site(m.src, t.op(m.src, m.send_op).callsite)], m.bytes, m.synchronous);
  } else {
    // a message's fields travel with the op that posted it: a matched one with its send, answered
    StreamOp op;
    for (size_t r = 0; r < P; r++) {
      OpCursor cursor((*streams)[r]);
      while (cursor.next(op)) {
        Site& s = called(static_cast<int>(r), op.callsite, op.call, op.kind);
        for (const StreamOp::Posted& p : op.posted)
          if (p.m->sent && p.m->answered) sent(s, p.m->fields.bytes, p.m->fields.synchronous);
      }
    }
  }
  // sites of one name (one line reached through several return addresses) are one site
  std::map<std::string, SiteFigures> named;
  for (auto& [key, s] : sites) {
    if (!s.communicates) continue;  // MPI_Init, MPI_Comm_rank, sends to MPI_PROC_NULL, ...
    const SourceLocation loc = a.locate(s.rank, s.callsite);
    const std::string where = loc.module.empty() && loc.file.empty() ? std::string("?") : loc.text();
    SiteFigures& x = s.fig;
    x.call = call_name(static_cast<int>(s.call));
    x.name = where + " " + x.call;
    x.file = loc.file;
    x.function = loc.function;
    x.line = loc.line;
    const SiteKey& site_key = key;  // a structured binding: clang before 16 cannot capture it
    x.wait = time_figure(steady, floor, noisy, [&site_key](const Sample& sample) { return site_wait(sample, site_key); });
    for (const auto& [r, cs] : s.members) x.measured_wait_ns += a.measured.site_send_wait_ns(r, cs) + a.measured.site_recv_wait_ns(r, cs);
    auto [it, fresh] = named.try_emplace(x.name, x);
    if (!fresh) {
      SiteFigures& y = it->second;
      y.calls += x.calls;
      y.calls_timed |= x.calls_timed;
      y.eager_messages += x.eager_messages, y.eager_bytes += x.eager_bytes;
      y.rendezvous_messages += x.rendezvous_messages, y.rendezvous_bytes += x.rendezvous_bytes;
      y.wait.ns += x.wait.ns;
      y.wait.noise_ns = std::hypot(y.wait.noise_ns, x.wait.noise_ns);
      y.wait.pause_ns += x.wait.pause_ns;
      y.measured_wait_ns += x.measured_wait_ns;
    }
  }
  for (auto& [name, x] : named) {
    if (!x.calls_timed) f.calls += x.calls;
    f.messages += x.messages();
    f.bytes += x.bytes();
    f.rendezvous_messages += x.rendezvous_messages;
    f.rendezvous_bytes += x.rendezvous_bytes;
    f.sites.push_back(std::move(x));
  }
  return f;
}

// ---- JSON ---------------------------------------------------------------------------------------------------
json figures_json(const RunFigures& f) {
  json sites = json::array();
  for (const auto& s : f.sites)
    sites.push_back({{"name", s.name},
                     {"file", s.file},
                     {"function", s.function},
                     {"line", s.line},
                     {"call", s.call},
                     {"calls", s.calls},
                     {"calls_timed", s.calls_timed},
                     {"eager_messages", s.eager_messages},
                     {"eager_bytes", s.eager_bytes},
                     {"rendezvous_messages", s.rendezvous_messages},
                     {"rendezvous_bytes", s.rendezvous_bytes},
                     {"wait_ns", s.wait.ns},
                     {"wait_noise_ns", s.wait.noise_ns},
                     {"wait_pause_ns", s.wait.pause_ns},
                     {"measured_wait_ns", s.measured_wait_ns}});
  json j = {{"schema", kFiguresSchema},
          {"source", f.source},
          {"params", f.params},
          {"ranks", f.ranks},
          {"calls", f.calls},
          {"messages", f.messages},
          {"bytes", f.bytes},
          {"rendezvous_messages", f.rendezvous_messages},
          {"rendezvous_bytes", f.rendezvous_bytes},
          {"predicted_ns", f.predicted.ns},
          {"predicted_noise_ns", f.predicted.noise_ns},
          {"predicted_pause_ns", f.predicted.pause_ns},
          {"send_wait_ns", f.send_wait.ns},
          {"send_wait_noise_ns", f.send_wait.noise_ns},
          {"send_wait_pause_ns", f.send_wait.pause_ns},
          {"recv_wait_ns", f.recv_wait.ns},
          {"recv_wait_noise_ns", f.recv_wait.noise_ns},
          {"recv_wait_pause_ns", f.recv_wait.pause_ns},
          {"measured_ns", f.measured_ns},
          {"measured_send_wait_ns", f.measured_send_wait_ns},
          {"measured_recv_wait_ns", f.measured_recv_wait_ns},
          {"intervals", {{"measured", f.intervals}, {"repeated", f.repeated_intervals}, {"replaced", f.replaced_intervals}}},
          {"sites", sites}};
  if (f.until_s) j["until_s"] = *f.until_s;
  if (f.from_s) j["from_s"] = *f.from_s;
  return j;
}

namespace {

// Reads typed values out of a JSON object, naming the key's path in errors.
struct Reader {
  const std::string& where;
  const json& field(const json& o, const char* key, const std::string& path) const {
    if (!o.is_object() || !o.contains(key))
      throw FiguresError(fmt::format("{}: {}{} is missing", where, path, key));
    return o[key];
  }
  double number(const json& o, const char* key, const std::string& path) const {
    const json& v = field(o, key, path);
    if (!v.is_number() || !std::isfinite(v.get<double>()) || v.get<double>() < 0)
      throw FiguresError(fmt::format("{}: {}{} is not a number of at least 0", where, path, key));
    return v.get<double>();
  }
  uint64_t count(const json& o, const char* key, const std::string& path) const {
    const json& v = field(o, key, path);
    if (!v.is_number_unsigned() && !(v.is_number_integer() && v.get<int64_t>() >= 0)) throw FiguresError(fmt::format("{}: {}{} is not a count", where, path, key));
    return v.get<uint64_t>();
  }
  std::string text(const json& o, const char* key, const std::string& path) const {
    const json& v = field(o, key, path);
    if (!v.is_string()) throw FiguresError(fmt::format("{}: {}{} is not a string", where, path, key));
    return v.get<std::string>();
  }
  bool flag(const json& o, const char* key, const std::string& path) const {
    const json& v = field(o, key, path);
    if (!v.is_boolean()) throw FiguresError(fmt::format("{}: {}{} is not true or false", where, path, key));
    return v.get<bool>();
  }
};

}  // namespace

RunFigures figures_from_json(const json& j, const std::string& where) {
  const Reader in{where};
  if (!j.is_object()) throw FiguresError(where + ": gate is not an object");
  const std::string p = "gate.";
  const json& schema = in.field(j, "schema", p);
  if (!schema.is_string() || schema.get<std::string>() != kFiguresSchema)
    throw FiguresError(fmt::format("{}: gate.schema is {}, this mpiadvise reads {}", where,
                                   terminal_text(dump_json(schema)), kFiguresSchema));
  RunFigures f;
  f.source = in.text(j, "source", p);
  f.params = in.text(j, "params", p);
  f.ranks = static_cast<int>(std::min<uint64_t>(in.count(j, "ranks", p), INT32_MAX));
  f.calls = in.count(j, "calls", p);
  f.messages = in.count(j, "messages", p);
  f.bytes = in.count(j, "bytes", p);
  f.rendezvous_messages = in.count(j, "rendezvous_messages", p);
  f.rendezvous_bytes = in.count(j, "rendezvous_bytes", p);
  f.predicted = {in.number(j, "predicted_ns", p), in.number(j, "predicted_noise_ns", p), in.number(j, "predicted_pause_ns", p)};
  f.send_wait = {in.number(j, "send_wait_ns", p), in.number(j, "send_wait_noise_ns", p), in.number(j, "send_wait_pause_ns", p)};
  f.recv_wait = {in.number(j, "recv_wait_ns", p), in.number(j, "recv_wait_noise_ns", p), in.number(j, "recv_wait_pause_ns", p)};
  f.measured_ns = in.number(j, "measured_ns", p);
  f.measured_send_wait_ns = in.number(j, "measured_send_wait_ns", p);
  f.measured_recv_wait_ns = in.number(j, "measured_recv_wait_ns", p);
  const json& iv = in.field(j, "intervals", p);
  f.intervals = in.count(iv, "measured", p + "intervals.");
  f.repeated_intervals = in.count(iv, "repeated", p + "intervals.");
  f.replaced_intervals = in.count(iv, "replaced", p + "intervals.");
  const json& sites = in.field(j, "sites", p);
  if (!sites.is_array()) throw FiguresError(where + ": gate.sites is not an array");
  for (size_t i = 0; i < sites.size(); i++) {
    const json& s = sites[i];
    const std::string at = fmt::format("gate.sites[{}].", i);
    SiteFigures x;
    x.name = in.text(s, "name", at);
    x.file = in.text(s, "file", at);
    x.function = in.text(s, "function", at);
    const json& line = in.field(s, "line", at);
    if (!line.is_number_integer() || line.get<int64_t>() < 0 || line.get<int64_t>() > INT32_MAX)
      throw FiguresError(fmt::format("{}: {}line is not a line number", where, at));
    x.line = line.get<int>();
    x.call = in.text(s, "call", at);
    x.calls = in.count(s, "calls", at);
    x.calls_timed = in.flag(s, "calls_timed", at);
    x.eager_messages = in.count(s, "eager_messages", at);
    x.eager_bytes = in.count(s, "eager_bytes", at);
    x.rendezvous_messages = in.count(s, "rendezvous_messages", at);
    x.rendezvous_bytes = in.count(s, "rendezvous_bytes", at);
    x.wait = {in.number(s, "wait_ns", at), in.number(s, "wait_noise_ns", at), in.number(s, "wait_pause_ns", at)};
    x.measured_wait_ns = in.number(s, "measured_wait_ns", at);
    f.sites.push_back(std::move(x));
  }
  for (const auto& [key, s] : {std::pair{"until_s", &f.until_s}, std::pair{"from_s", &f.from_s}})
    if (j.contains(key)) {
      *s = in.number(j, key, p);
      if (!(**s > 0)) throw FiguresError(fmt::format("{}: gate.{} is not a number of seconds above 0", where, key));
    }
  return f;
}

RunFigures figures_from_report(std::string_view text, const std::string& where) {
  json j;
  try {
    j = parse_log_json(text);  // depth-limited, its strings decoded as a log's are
  } catch (const json::parse_error& e) {
    throw FiguresError(fmt::format("{}: not JSON (byte {}): a log directory or a report from mpiadvise report "
                                   "--format json is expected", where, e.byte));
  } catch (const json::exception& e) {  // a number beyond a double's range ("1e999")
    throw FiguresError(fmt::format("{}: not a report from mpiadvise report --format json: {}", where, e.what()));
  } catch (const std::runtime_error& e) {  // nested too deeply
    throw FiguresError(fmt::format("{}: {}: not a report from mpiadvise report --format json", where, e.what()));
  }
  try {
    check_report(j, where);
  } catch (const std::runtime_error& e) {
    throw FiguresError(e.what());
  }
  if (!j.contains("gate"))
    throw FiguresError(where + ": the report has no \"gate\" figures (made by an earlier mpiadvise): make it again "
                               "with mpiadvise report --format json, or give its log directory");
  return figures_from_json(j["gate"], where);
}

}  // namespace mpiadvise::gate

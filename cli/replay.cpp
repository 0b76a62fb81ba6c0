// mpiadvise replay DIR and mpiadvise whatif DIR: the LogGPS replay of a traced run, as measured and
// with parameters changed or the program transformed.
#include <fmt/format.h>

#include <cmath>
#include <iostream>
#include <regex>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "format_units.hpp"
#include "analysis.hpp"
#include "log_reader.hpp"
#include "replay.hpp"
#include "report.hpp"
#include "run_facts.hpp"
#include "symbolizer.hpp"
#include "waits.hpp"

namespace mpiadvise::cli {
namespace {

struct ReplayCommand {
  std::string dir, params, mode = "sim", model = "loggps";
  bool json = false;
  std::vector<std::string> sets;
  std::string sweep;
  double compute_factor = 1.0;
  std::vector<std::string> split, nonblocking, prepost, persistent;
  std::vector<std::string> compute_at;
  std::vector<int> compute_ranks;
  std::vector<std::string> debug_dirs;
  ReplaySpeed speed;
  RunPart part;
};

using Loaded = Analysis;

// a size as given on the command line: bytes, or inf
std::string size_arg(uint64_t bytes) { return bytes == LogGPSParams::kInfinite ? "inf" : std::to_string(bytes); }

// The line a raise of S stopped short by the set's [raised] to_bytes gives.
std::string capped_note(const std::string& asked, const LogGPSParams& p) {
  return fmt::format("mpiadvise: {}: S = {} ([raised] to_bytes of {}: with its limit raised, this library sent no "
                     "message larger than {} bytes without waiting for its receiver)\n",
                     asked, p.S, p.name.empty() ? "the parameter set" : p.name, p.raised_to.value_or(p.S));
}

Loaded load(const ReplayCommand& c) { return analyse(c.dir, c.params, debug_search_dirs(c.debug_dirs), c.speed, c.part); }

double parse_size(const std::string& what, const std::string& v) {
  static const std::regex re(R"(\s*(-?[0-9]*\.?[0-9]+(?:[eE][+-]?[0-9]+)?)\s*([kKmMgG]?)(i?[bB])?\s*)");
  std::smatch m;
  if (v == "inf" || v == "infinity") return std::numeric_limits<double>::infinity();
  if (!std::regex_match(v, m, re)) throw CLI::ValidationError(what, v + " is not a number");
  double x = std::stod(m[1]);
  char unit = m[2].str().empty() ? 0 : static_cast<char>(std::tolower(m[2].str()[0]));
  if (unit == 'k') x *= 1024;
  if (unit == 'm') x *= 1024 * 1024;
  if (unit == 'g') x *= 1024.0 * 1024 * 1024;
  return x;
}

// file:line (or a suffix of the file) -> the call sites of every rank there; "all" -> every site
std::set<SiteKey> sites_at(const Loaded& l, const std::vector<std::string>& specs, bool* everywhere,
                           const std::string& option) {
  std::set<SiteKey> keys;
  for (const auto& spec : specs) {
    if (spec == "all") {
      *everywhere = true;
      continue;
    }
    auto colon = spec.rfind(':');
    if (colon == std::string::npos) throw CLI::ValidationError(option, spec + " is not FILE:LINE or all");
    int line = 0;
    try {
      line = std::stoi(spec.substr(colon + 1));
    } catch (...) {
      throw CLI::ValidationError(option, spec + ": " + spec.substr(colon + 1) + " is not a line number");
    }
    auto found = l.sites_at(spec.substr(0, colon), line);
    if (found.empty()) throw CLI::ValidationError(option, spec + ": no MPI call site of the log is at that line");
    keys.insert(found.begin(), found.end());
  }
  return keys;
}

nlohmann::json breakdown_json(const Breakdown& b) {
  return {{"computation_ns", b.computation}, {"send_overhead_ns", b.send_overhead},
          {"recv_overhead_ns", b.recv_overhead}, {"send_wait_ns", b.send_wait}, {"recv_wait_ns", b.recv_wait},
          {"synchronisation_ns", b.synchronisation}, {"collectives_ns", b.collectives}, {"other_ns", b.other}};
}

nlohmann::json result_json(const Loaded& l, const ReplayResult& r) {
  nlohmann::json j;
  j["schema"] = "mpiadvise-replay/1";
  j["mode"] = r.mode == ReplayMode::Paper ? "paper" : "sim";
  j["model"] = r.model == ModelKind::LogGP ? "loggp" : "loggps";
  j["params"] = params_json(r.params);
  j["params_chosen"] = l.chosen.why;
  j["measured_ns"] = r.measured_ns;
  j["predicted_ns"] = r.predicted_ns;
  j["error"] = r.error();
  j["processes"] = r.processes;
  j["rendezvous_messages"] = r.rendezvous_messages;
  j["handshake_ns"] = LogGPS(r.params).handshake();
  double sync = 0;
  for (const auto& rr : r.ranks) sync += rr.predicted.synchronisation;
  j["synchronisation_ns"] = sync;
  j["rendezvous_bytes"] = r.rendezvous_bytes;
  j["split_messages"] = r.split_messages;
  j["collectives"] = {{"by_algorithm", r.collectives_by_algorithm},
                      {"approximate", r.collectives_approximate},
                      {"closed_formula", r.collectives_closed_formula},
                      {"messages", r.collective_messages},
                      {"rendezvous_messages", r.collective_rendezvous_messages},
                      {"algorithms", r.collective_algorithms},
                      {"approximations", r.collective_approximations}};
  if (l.until_s) j["until_s"] = *l.until_s;
  if (l.from_s) j["from_s"] = *l.from_s;
  j["unmatched"] = {{"sends", l.trace.unmatched_sends},
                    {"receives", l.trace.unmatched_recvs},
                    {"collectives", l.trace.incomplete_collectives},
                    {"ops_replayed_as_measured", r.unresolved_ops}};
  auto& ranks = j["ranks"] = nlohmann::json::array();
  for (const auto& rr : r.ranks) {
    nlohmann::json x = breakdown_json(rr.predicted);
    x["rank"] = rr.rank;
    x["measured_ns"] = rr.measured_ns;
    x["predicted_ns"] = rr.predicted_ns;
    x["measured_send_wait_ns"] = l.measured.send_wait_ns(rr.rank);
    x["measured_recv_wait_ns"] = l.measured.recv_wait_ns(rr.rank);
    ranks.push_back(x);
  }
  auto& sites = j["sites"] = nlohmann::json::array();
  for (const auto& s : r.sites) {
    nlohmann::json x = breakdown_json(s.predicted);
    x["rank"] = s.rank;
    x["callsite"] = s.callsite;
    x["call"] = call_name(static_cast<int>(s.call));
    x["where"] = l.where(s.rank, s.callsite);
    x["calls"] = s.calls;
    x["measured_send_wait_ns"] = l.measured.site_send_wait_ns(s.rank, s.callsite);
    x["measured_recv_wait_ns"] = l.measured.site_recv_wait_ns(s.rank, s.callsite);
    sites.push_back(x);
  }
  return j;
}

void print_text(const Loaded& l, const ReplayResult& r, const std::string& title) {
  fmt::print("{}\n", title);
  fmt::print("  parameters  {}\n", l.chosen.why);
  const std::string receive = r.params.o_r || r.params.D != 0
                                  ? fmt::format(", o_r {} ns, D {} ns", r.params.o_recv(), r.params.D) : std::string();
  fmt::print("  model       {} {} (L {} ns, o' {} ns{}, s {}, S {})\n", r.model == ModelKind::LogGP ? "LogGP" : "LogGPS",
             r.mode == ReplayMode::Paper ? "paper mode (recorded call times)" : "simulation", r.params.L, r.params.o, receive,
             r.params.s == LogGPSParams::kInfinite ? std::string("inf") : std::to_string(r.params.s),
             r.params.S == LogGPSParams::kInfinite ? std::string("inf") : std::to_string(r.params.S));
  if (l.until_s || l.from_s) {
    uint64_t calls = 0;
    for (const auto& rt : l.trace.ranks) calls += rt.calls;
    fmt::print("  part        {}: {} of the logs' {} MPI calls\n", part_text(l.from_s, l.until_s), calls, l.calls_in_logs);
  }
  if (r.processes > 1) fmt::print("  spread      over {} processes, each replaying a share of the ranks\n", r.processes);
  fmt::print("  run time    measured {}  predicted {}  ({:+.1f}%)\n", duration_text(r.measured_ns),
             duration_text(r.predicted_ns), 100 * r.error());
  fmt::print("  rendezvous  {} messages, {}\n", r.rendezvous_messages, bytes_text(r.rendezvous_bytes));
  if (r.collectives_by_algorithm || r.collectives_closed_formula)
    fmt::print("  collectives {} as the library's algorithms ({} of them approximately, {} rendezvous steps), {} by "
               "closed formulas (fallback)\n",
               r.collectives_by_algorithm, r.collectives_approximate, r.collective_rendezvous_messages,
               r.collectives_closed_formula);
  if (l.trace.unmatched_sends || l.trace.unmatched_recvs || l.trace.incomplete_collectives)
    fmt::print("  unmatched   {} sends, {} receives, {} collectives (missing ranks or cut-off logs)\n",
               l.trace.unmatched_sends, l.trace.unmatched_recvs, l.trace.incomplete_collectives);
  // the columns of mpiadvise report, with the rendezvous handshake inside the overheads shown apart
  fmt::print("\n  {:>4} {:>11} {:>11} {:>11} {:>11} {:>13} {:>11} {:>11} {:>11}\n", "rank", "measured", "predicted",
             "computation", "overheads", "of which sync", "send-wait", "recv-wait", "collectives");
  for (const auto& rr : r.ranks) {
    const auto& b = rr.predicted;
    fmt::print("  {:>4} {:>11} {:>11} {:>11} {:>11} {:>13} {:>11} {:>11} {:>11}\n", rr.rank,
               duration_text(rr.measured_ns), duration_text(rr.predicted_ns), duration_text(b.computation),
               duration_text(b.send_overhead + b.recv_overhead + b.synchronisation + b.other),
               duration_text(b.synchronisation), duration_text(b.send_wait), duration_text(b.recv_wait),
               duration_text(b.collectives));
  }
}

ReplayOptions options_for(const ReplayCommand& c, const Loaded& l) {
  ReplayOptions o;
  o.params = l.chosen.params;
  replay_library(l.facts, o);
  o.mode = c.mode == "paper" ? ReplayMode::Paper : ReplayMode::Simulate;
  o.model = c.model == "loggp" ? ModelKind::LogGP : ModelKind::LogGPS;
  o.compute_factor = c.compute_factor;
  bool s_given = false, S_given = false;
  const LogGPSParams before = o.params;
  for (const auto& kv : c.sets) {
    auto eq = kv.find('=');
    if (eq == std::string::npos) throw CLI::ValidationError("--set", kv + " is not KEY=VALUE");
    std::string key = kv.substr(0, eq);
    o.params.set(key, parse_size("--set " + key, kv.substr(eq + 1)), "--set");
    s_given |= key == "s";
    S_given |= key == "S";
  }
  if (S_given) {  // s follows S as move_S says, and S goes no further than the library reaches
    const uint64_t S = o.params.S, s = o.params.s;
    o.params.S = before.S;
    o.params.s = before.s;
    o.params.move_S(S);
    if (s_given) {  // an s given prices every message (within the S the library reaches)
      o.params.s_set.reset();
      o.params.s = o.params.S < S ? std::min(s, o.params.S) : s;
    }
    if (o.params.S < S) fmt::print(stderr, "{}", capped_note(fmt::format("--set S={}", size_arg(S)), o.params));
  }
  o.params.validate("--set");
  bool compute_everywhere = false;
  o.compute_sites = sites_at(l, c.compute_at, &compute_everywhere, "--compute-at");
  if (compute_everywhere) o.compute_sites.clear();
  for (int r : c.compute_ranks) {
    if (r < 0 || r >= l.trace.world_size)
      throw CLI::ValidationError("--compute-rank", fmt::format("{} is not a rank of the job (0 to {})", r, l.trace.world_size - 1));
    o.compute_ranks.insert(r);
  }
  if ((!o.compute_sites.empty() || !o.compute_ranks.empty()) && o.mode == ReplayMode::Paper)
    throw CLI::ValidationError("--mode", "--compute-at and --compute-rank need the simulation (--mode sim)");
  o.split_sites = sites_at(l, c.split, &o.split_everywhere, "--split");
  o.nonblocking_sites = sites_at(l, c.nonblocking, &o.nonblocking_everywhere, "--nonblocking");
  o.prepost_sites = sites_at(l, c.prepost, &o.prepost_everywhere, "--prepost");
  bool persistent_everywhere = false;
  o.persistent_sites = sites_at(l, c.persistent, &persistent_everywhere, "--persistent");
  if (persistent_everywhere)
    for (const auto& keys : l.trace.site_keys)
      for (const auto& [id, key] : keys) o.persistent_sites.insert(key);
  if (!o.persistent_sites.empty() && !o.params.persistent_saving)
    throw CLI::ValidationError("--persistent", "the parameter set " + o.params.name +
                                                   " does not say what a persistent request saves ([mpi] "
                                                   "persistent_saving_ns; mpiadvise calibrate measures it)");
  if ((!o.split_sites.empty() || o.split_everywhere || !o.nonblocking_sites.empty() || o.nonblocking_everywhere ||
       !o.prepost_sites.empty() || o.prepost_everywhere || !o.persistent_sites.empty()) &&
      o.mode == ReplayMode::Paper)
    throw CLI::ValidationError("--mode", "program transformations need the simulation (--mode sim)");
  return o;
}

int run_replay(const ReplayCommand& c, bool whatif) {
  Loaded l = load(c);
  int status = kOk;
  for (const auto& p : l.trace.problems) {
    std::fprintf(stderr, "mpiadvise: %s\n", p.text().c_str());
    if (p.corrupt) status = kProblems;
  }
  ReplayOptions base = options_for(c, l);
  if (!whatif || c.sweep.empty()) {
    ReplayResult r = replay(l.trace, base);
    if (!whatif) {
      if (c.json) std::cout << result_json(l, r).dump(2) << '\n';
      else print_text(l, r, fmt::format("mpiadvise replay {}", c.dir));
      return status;
    }
    // a what-if is read against the replay as the run was: the run time, and the rendezvous handshakes
    // (a far or slow network's L shows in each round trip)
    ReplayCommand as_run = c;
    as_run.sets.clear(), as_run.compute_factor = 1.0, as_run.compute_at.clear(), as_run.compute_ranks.clear();
    as_run.split.clear(), as_run.nonblocking.clear(), as_run.prepost.clear(), as_run.persistent.clear();
    const ReplayResult was = replay(l.trace, options_for(as_run, l));
    auto sync_of = [](const ReplayResult& x) {
      double s = 0;
      for (const auto& rr : x.ranks) s += rr.predicted.synchronisation;
      return s;
    };
    if (c.json) {
      auto j = result_json(l, r);
      j["as_run"] = {{"params", params_json(was.params)},
                     {"predicted_ns", was.predicted_ns},
                     {"rendezvous_messages", was.rendezvous_messages},
                     {"handshake_ns", LogGPS(was.params).handshake()},
                     {"synchronisation_ns", sync_of(was)}};
      std::cout << j.dump(2) << '\n';
      return status;
    }
    print_text(l, r, fmt::format("mpiadvise whatif {}", c.dir));
    fmt::print("\n  against the replay as run: predicted {} -> {} ({:+.1f}%)\n", duration_text(was.predicted_ns),
               duration_text(r.predicted_ns),
               was.predicted_ns > 0 ? 100 * (r.predicted_ns - was.predicted_ns) / was.predicted_ns : 0.0);
    fmt::print("  rendezvous handshakes {} -> {}, each at least {} -> {} (4o' + 2L + R), with the data in flight {} -> {} "
               "in all ranks\n",
               was.rendezvous_messages + was.collective_rendezvous_messages,
               r.rendezvous_messages + r.collective_rendezvous_messages, duration_text(LogGPS(was.params).handshake()),
               duration_text(LogGPS(r.params).handshake()), duration_text(sync_of(was)), duration_text(sync_of(r)));
    if (r.split_messages > 0 && !r.params.speed_bytes.empty())
      fmt::print("  point-to-point messages split into chunks of {} B, priced at x{:.2f} the times of the run's messages: the "
                 "run's own round trips at that size (a collective's parts at the run's)\n",
                 r.params.S, r.params.speed_at(r.params.S));
    return status;
  }
  // --sweep S=FROM..TO: powers of two, the log loaded once
  static const std::regex re(R"(([A-Za-z_]+)=([^.]+)\.\.(.+))");
  std::smatch m;
  if (!std::regex_match(c.sweep, m, re)) throw CLI::ValidationError("--sweep", c.sweep + " is not KEY=FROM..TO");
  std::string key = m[1];
  double from = parse_size("--sweep", m[2]), to = parse_size("--sweep", m[3]);
  if (from <= 0 || to < from) throw CLI::ValidationError("--sweep", c.sweep + ": FROM must be positive and at most TO");
  if (!std::isfinite(to) || ((key == "S" || key == "s") && to > 4611686018427387904.0))
    throw CLI::ValidationError("--sweep", c.sweep + ": TO must be finite (and a size at most 2^62 bytes)");
  if (to / from > 1e12) throw CLI::ValidationError("--sweep", c.sweep + ": too wide a range");
  nlohmann::json all = nlohmann::json::array();
  std::vector<std::pair<double, ReplayResult>> results;
  for (double v = from; v <= to * 1.0000001; v *= 2) {
    ReplayOptions o = base;
    bool capped = false;
    if (key == "S") {  // each point at the S it gets: the last where the library reaches no further
      const auto asked = static_cast<uint64_t>(std::floor(v));
      o.params.move_S(asked);
      capped = o.params.S < asked;
      if (capped) fmt::print(stderr, "{}", capped_note(fmt::format("--sweep {}: from S={}", c.sweep, asked), o.params));
      v = std::min(v, static_cast<double>(o.params.S));
    } else {
      o.params.set(key, std::floor(v), "--sweep");
    }
    o.params.validate("--sweep");
    results.emplace_back(v, replay(l.trace, o));
    if (capped) break;
  }
  if (c.json) {
    for (const auto& [v, r] : results) {
      auto j = result_json(l, r);
      j["sweep"] = {{"key", key}, {"value", v}};
      all.push_back(j);
    }
    std::cout << all.dump(2) << '\n';
  } else {
    fmt::print("mpiadvise whatif {} --sweep {}\n  parameters  {}\n  measured    {}\n\n", c.dir, c.sweep, l.chosen.why,
               duration_text(l.trace.ranks.empty() ? 0.0 : results.front().second.measured_ns));
    fmt::print("  {:>12} {:>12} {:>12} {:>12} {:>12}\n", key, "predicted", "send-wait", "recv-wait", "rendezvous");
    for (const auto& [v, r] : results) {
      double sw = 0, rw = 0;
      for (const auto& rr : r.ranks) sw += rr.predicted.send_wait, rw += rr.predicted.recv_wait;
      fmt::print("  {:>12} {:>12} {:>12} {:>12} {:>12}\n", fmt::format("{:.0f}", v),
                 duration_text(r.predicted_ns), duration_text(sw),
                 duration_text(rw), r.rendezvous_messages);
    }
  }
  return status;
}

void common_options(CLI::App* sub, ReplayCommand& c) {
  sub->add_option("dir", c.dir, "Job directory of rank-NNNNN.mpa logs")->required();
  sub->add_option("--params", c.params, "Parameter set: a NAME in share/params or a FILE (default: chosen for the log)");
  sub->add_option("--mode", c.mode, "sim (default): simulate call times too; paper: Table 4 over the recorded call times")
      ->check(CLI::IsMember({"sim", "paper"}));
  sub->add_option("--model", c.model, "loggps (default) or loggp: the paper's LogGP baseline (S infinite, constant overheads)")
      ->check(CLI::IsMember({"loggps", "loggp"}));
  sub->add_flag("--json", c.json, "Print a JSON object (schema mpiadvise-replay/1)");
  add_speed_options(sub, c.speed);
  add_part_option(sub, c.part);
  add_debug_dir_option(sub, c.debug_dirs);
}

}  // namespace

void add_part_option(CLI::App* sub, RunPart& part) {
  const auto seconds = [](const std::string& v) -> std::string {
    try {
      size_t used = 0;
      const double s = std::stod(v, &used);
      if (used == v.size() && s >= 1e-9 && s <= 1e9) return "";
    } catch (const std::exception&) {
    }
    return v + " is not a number of seconds from 1e-9 (a nanosecond) to 1e9";
  };
  sub->add_option("--until", part.until_s,
                  "S: analyse only the calls entered in the first S seconds of the run (after MPI_Init returned on "
                  "rank 0), as if every rank had stopped there; reads no more of the logs (S from 1e-9 to 1e9)")
      ->check(seconds);
  sub->add_option("--from", part.from_s,
                  "S: analyse only the calls entered S seconds or more after the run's start, as if every rank had "
                  "started there (with --until: the part between); the calls before are read, not held")
      ->check(seconds);
}

void add_speed_options(CLI::App* sub, ReplaySpeed& speed) {
  auto* own = sub->add_flag("--at-set-speed", speed.at_set,
                            "Replay at the parameter set's own speed, not at the one the run's round trips between rank 0 "
                            "and a partner (timed by the tracer at MPI_Init and MPI_Finalize) show");
  sub->add_option("--speed", speed.factor,
                  "F: replay with the parameter set's times multiplied by F (another run's params.run_speed.factor "
                  "replays this one at that run's speed), not at this run's own")
      ->excludes(own)
      ->check(factor_check);
}

std::string factor_check(const std::string& v) {
  try {
    size_t used = 0;
    const double f = std::stod(v, &used);
    if (used != v.size()) return v + " is not a number";
    return f >= 0.01 && f <= 100 ? std::string() : v + " is not a factor from 0.01 to 100";
  } catch (...) {
    return v + " is not a number";
  }
}

std::function<int()> add_replay(CLI::App& app) {
  auto c = std::make_shared<ReplayCommand>();
  auto* sub = app.add_subcommand("replay", "Replay a traced run under LogGPS: predicted time and where it goes");
  common_options(sub, *c);
  return [c] { return run_replay(*c, false); };
}

std::function<int()> add_whatif(CLI::App& app) {
  auto c = std::make_shared<ReplayCommand>();
  auto* sub = app.add_subcommand("whatif", "Replay with parameters changed or the program transformed");
  common_options(sub, *c);
  sub->add_option("--set", c->sets, "KEY=VALUE: change a parameter (L, o, o_r, D, Oss, Ors, Osl, Orl, Gs, Gl, R, s, S); sizes take K, M, G");
  sub->add_option("--sweep", c->sweep, "KEY=FROM..TO: replay for each power of two from FROM to TO, e.g. S=4K..1M");
  sub->add_option("--compute-factor", c->compute_factor, "Multiply computation times by this (0.5: twice as fast)")
      ->check([](const std::string& v) {
        try {
          double f = std::stod(v);
          return f > 0 && f < 1e6 ? std::string() : v + " is not a factor above 0";
        } catch (...) {
          return v + " is not a number";
        }
      });
  sub->add_option("--compute-at", c->compute_at,
                  "FILE:LINE: apply --compute-factor only to the computation before the MPI call there (repeatable)");
  sub->add_option("--compute-rank", c->compute_ranks, "N: apply --compute-factor only to rank N's computation (repeatable)");
  sub->add_option("--split", c->split, "FILE:LINE or all: send messages above S from there as chunks of at most S");
  sub->add_option("--nonblocking", c->nonblocking, "FILE:LINE or all: make the blocking send there an Isend completed at the next MPI call");
  sub->add_option("--prepost", c->prepost,
                  "FILE:LINE or all: make the blocking receive there an Irecv posted as soon as the previous one there completed");
  sub->add_option("--persistent", c->persistent,
                  "FILE:LINE or all: make the point-to-point calls there persistent requests (MPI_Send_init/MPI_Start)");
  return [c] { return run_replay(*c, true); };
}

}  // namespace mpiadvise::cli

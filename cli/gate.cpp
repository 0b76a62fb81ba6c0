// mpiadvise gate: a performance regression gate for CI. Reads the runs of each side (log directories,
// report JSON files, or directories of them), has the analyzer compare them (analyzer/gate.hpp), and
// prints the verdict: a line per figure on standard output, JUnit XML, Markdown and JSON on request.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <regex>
#include <sstream>

#include "analysis.hpp"
#include "commands.hpp"
#include "spread.hpp"
#include "format_units.hpp"
#include "gate.hpp"
#include "text_escape.hpp"

namespace mpiadvise::cli {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;
using gate::Check;
using gate::FigureCheck;
using gate::RunFigures;

struct GateCommand {
  std::vector<std::string> baseline, candidate, metrics, budgets, debug_dirs;
  std::string params, max_regression = "5%", junit, json_out, markdown;
  RunPart part;  // --until, --from: of each log directory, that part
};

std::string metric_names(bool with_sites) {
  std::string s;
  for (const auto& m : gate::metrics())
    if (with_sites || m.metric != gate::Metric::Sites) s += std::string(s.empty() ? "" : ", ") + m.name;
  return s;
}

// ---- the runs of a side ---------------------------------------------------------------------------------------
bool is_log_directory(const fs::path& dir) {
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".mpa") return true;
  return false;
}

// A log directory or a report file is one run; a directory of them is as many runs.
std::vector<fs::path> runs_of(const std::string& path, const std::string& option) {
  std::error_code ec;
  const fs::path p(path);
  if (!fs::exists(p, ec)) throw CLI::ValidationError(option, terminal_text(path) + ": no such log directory or report file");
  if (!fs::is_directory(p, ec) || is_log_directory(p)) return {p};
  std::vector<fs::path> runs;
  for (const auto& e : fs::directory_iterator(p, ec))
    if ((e.is_directory() && is_log_directory(e.path())) || (e.is_regular_file() && e.path().extension() == ".json"))
      runs.push_back(e.path());
  if (ec) throw CLI::ValidationError(option, terminal_text(path) + ": cannot be listed: " + ec.message());
  if (runs.empty())
    throw CLI::ValidationError(option, terminal_text(path) + ": no logs (*.mpa), and no log directories or report "
                                                               "files (*.json) in it");
  std::sort(runs.begin(), runs.end());
  return runs;
}

RunFigures load_run(const fs::path& path, const std::string& option, const GateCommand& c) {
  const std::string& params = c.params;
  const std::string shown = terminal_text(path.string());
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    Analysis a = analyse(path.string(), params, debug_search_dirs(c.debug_dirs), {}, c.part);
    for (const auto& p : a.trace.problems) std::fprintf(stderr, "mpiadvise: %s\n", terminal_text(p.text()).c_str());
    return gate::run_figures(a);
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw CLI::ValidationError(option, shown + ": cannot be read");
  const std::string text{std::istreambuf_iterator<char>(in), {}};
  try {
    RunFigures f = gate::figures_from_report(text, shown);
    f.source = shown;
    if (!params.empty())
      std::fprintf(stderr, "mpiadvise: %s is a report: --params applies only to log directories\n", shown.c_str());
    return f;
  } catch (const gate::FiguresError& e) {
    throw CLI::ValidationError(option, e.what());
  }
}

std::vector<RunFigures> load_side(const std::vector<std::string>& paths, const std::string& option,
                                  const GateCommand& c) {
  std::vector<RunFigures> runs;
  for (const auto& p : paths)
    for (const auto& run : runs_of(p, option)) runs.push_back(load_run(run, option, c));
  return runs;
}

// ---- options ------------------------------------------------------------------------------------------------
// "5%", "0.05" -> 0.05
double parse_fraction(const std::string& option, const std::string& v) {
  static const std::regex re(R"(\s*([0-9]*\.?[0-9]+)\s*(%?)\s*)");
  std::smatch m;
  if (!std::regex_match(v, m, re)) throw CLI::ValidationError(option, v + " is not a percentage (e.g. 5%) or a fraction");
  const double x = std::stod(m[1]);
  return m[2].str().empty() ? x : x / 100;
}

// METRIC<=VALUE; VALUE a share of the ranks' predicted time ("10%", send_wait and recv_wait), a duration
// ("5ms", "2s", "300us", "100ns"), a size ("64K", "1M", bytes metrics) or a count.
gate::Budget parse_budget(const std::string& v) {
  static const std::regex re(R"(\s*([a-z_]+)\s*<=\s*([0-9]*\.?[0-9]+)\s*(%|ns|us|ms|s|[kKmMgG]i?[bB]?|[bB])?\s*)");
  std::smatch m;
  if (!std::regex_match(v, m, re))
    throw CLI::ValidationError("--budget", v + " is not METRIC<=VALUE (e.g. send_wait<=10%, predicted_time<=2s)");
  const std::string name = m[1];
  const gate::MetricInfo* d = gate::metric_named(name);
  if (!d || d->metric == gate::Metric::Sites)
    throw CLI::ValidationError("--budget", v + ": " + name + " is not one of " + metric_names(false));
  gate::Budget b;
  b.text = v;
  b.metric = d->metric;
  double x = std::stod(m[2]);
  const std::string unit = m[3];
  if (unit == "%") {
    if (!d->time) throw CLI::ValidationError("--budget", v + ": a percentage is a share of the ranks' time, for a time metric");
    if (d->metric == gate::Metric::PredictedTime)
      throw CLI::ValidationError("--budget", v + ": give predicted_time as a duration (e.g. 2s)");
    b.share = true;
    x /= 100;
  } else if (unit == "ns" || unit == "us" || unit == "ms" || unit == "s") {
    if (!d->time) throw CLI::ValidationError("--budget", v + ": " + name + " is not a time");
    x *= unit == "ns" ? 1 : unit == "us" ? 1e3 : unit == "ms" ? 1e6 : 1e9;
  } else if (d->time) {
    throw CLI::ValidationError("--budget", v + ": give " + name + " a unit (ns, us, ms, s) or a percentage");
  } else if (!unit.empty()) {
    if (!d->sized) throw CLI::ValidationError("--budget", v + ": " + name + " is a count, without a unit");
    const char u = static_cast<char>(std::tolower(unit[0]));
    x *= u == 'b' ? 1.0 : u == 'k' ? 1024.0 : u == 'm' ? 1024.0 * 1024 : 1024.0 * 1024 * 1024;
  }
  b.limit = x;
  return b;
}

// ---- presentation ----------------------------------------------------------------------------------------------
std::string value_text(double v, bool time) {
  if (std::isnan(v)) return "-";
  return time ? duration_text(static_cast<uint64_t>(std::max(0.0, v))) : fmt::format("{}", static_cast<uint64_t>(std::max(0.0, v)));
}

std::string change_text(const FigureCheck& f) {
  if (std::isnan(f.baseline)) return "";
  if (f.baseline == 0) return f.candidate == 0 ? "0%" : "new";
  return fmt::format("{:+.1f}%", 100 * (f.candidate - f.baseline) / f.baseline);
}

// What the figure is allowed: the noise band of a time, "exact" for a count.
std::string band_text(const FigureCheck& f, const gate::Check& c) {
  if (c.group == gate::CheckGroup::Budgets) return "<= " + value_text(f.limit, f.time);
  if (f.time) return "±" + value_text(f.band, true);
  return f.varies ? "runs differ by " + value_text(f.band, false) : "exact";
}

std::string measured_text(const FigureCheck& f) {
  if (std::isnan(f.measured_candidate)) return "";
  return value_text(f.measured_baseline, f.time) + " -> " + value_text(f.measured_candidate, f.time);
}

std::string check_label(const Check& c) {
  return c.group == gate::CheckGroup::Metrics ? c.name : std::string(gate::group_name(c.group)) + ": " + c.name;
}

// Why a check failed: its failed figures, without the check's name.
std::string failure_parts(const Check& c, const gate::Verdict& v) {
  std::vector<std::string> parts;
  for (const auto& f : c.figures) {
    if (!f.failed) continue;
    if (c.group == gate::CheckGroup::Budgets)
      parts.push_back(fmt::format("{} is {}", f.figure, value_text(f.candidate, f.time)));
    else if (f.time)
      parts.push_back(fmt::format("{} {} -> {} ({}), more than the noise band ±{} and the allowed {:.1f}%", f.figure,
                                  value_text(f.baseline, true), value_text(f.candidate, true), change_text(f),
                                  value_text(f.band, true), 100 * v.max_regression));
    else
      parts.push_back(fmt::format("{} {} -> {}{}", f.figure, value_text(f.baseline, false), value_text(f.candidate, false),
                                  f.varies ? fmt::format(" (above {}, the most of the baseline's runs)", value_text(f.limit, false))
                                           : ""));
  }
  std::string s;
  for (size_t i = 0; i < parts.size(); i++) s += (i ? "; " : "") + parts[i];
  return s;
}

// Why a check failed, in one line.
std::string failure_text(const Check& c, const gate::Verdict& v) { return c.name + ": " + failure_parts(c, v); }

// How the time figures and their band were made, in one sentence.
std::string method_text(const gate::Verdict& v) {
  std::string runs = v.baseline_runs ? fmt::format("{} baseline run{} and {} candidate run{}", v.baseline_runs,
                                                   v.baseline_runs == 1 ? "" : "s", v.candidate_runs,
                                                   v.candidate_runs == 1 ? "" : "s")
                                     : fmt::format("{} candidate run{}", v.candidate_runs, v.candidate_runs == 1 ? "" : "s");
  return fmt::format("{}; counts compared exactly; times from the replay with pauses of the machine taken out ({} of {} "
                     "measured intervals), each allowed the larger of {:.1f}% and a noise band of {:.0f} standard "
                     "deviations, estimated from {} replays per run with every interval moved by its noise{}",
                     runs, v.replaced_intervals, v.intervals, 100 * v.max_regression, gate::kBandSigmas,
                     gate::kNoiseReplays,
                     v.baseline_runs > 1 || v.candidate_runs > 1 ? " and from the spread of each side's runs" : "");
}

// What to do before taking a failure for the program's, where it failed on times alone with a side of one
// run (gate::failed_on_times_of_one_run); empty otherwise.
std::string single_run_note(const gate::Verdict& v) {
  if (!gate::failed_on_times_of_one_run(v)) return "";
  return fmt::format("only times failed, and the {} had one run: a single run's band holds nothing of how the "
                     "machine's speed moves between runs; where the change should not have slowed the program, gate "
                     "two or more runs a side, traced in turn (mpiadvise-gate(1)), before taking this for a regression",
                     v.baseline_runs == 1 && v.candidate_runs == 1 ? "baseline and the candidate each"
                     : v.baseline_runs == 1                        ? "baseline"
                                                                   : "candidate");
}

std::string xml_escape(const std::string& s) {
  std::string o;
  for (char ch : terminal_text(s)) {
    switch (ch) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      case '\'': o += "&apos;"; break;
      default: o += ch;
    }
  }
  return o;
}

std::string md(const std::string& s) { return markdown_text(s, "|*_`<>[]\\"); }

// A check's name in Markdown: a call site (a path, a function, a call) as code, as it is
std::string md_name(const Check& c, bool in_table) {
  return c.group == gate::CheckGroup::Sites ? markdown_code(c.name, in_table) : md(c.name);
}

std::string figure_detail(const FigureCheck& f, const Check& c) {
  std::string d = fmt::format("{}: baseline {}, candidate {}, {}, limit {}", f.figure, value_text(f.baseline, f.time),
                              value_text(f.candidate, f.time), band_text(f, c), value_text(f.limit, f.time));
  if (!measured_text(f).empty()) d += "; measured (for information) " + measured_text(f);
  return d;
}

std::string junit_xml(const gate::Verdict& v, const std::string& info) {
  size_t failures = 0;
  for (const auto& c : v.checks) failures += c.failed;
  std::ostringstream o;
  o << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  o << fmt::format("<testsuites name=\"mpiadvise gate\" tests=\"{}\" failures=\"{}\" errors=\"0\">\n", v.checks.size(), failures);
  o << fmt::format("  <testsuite name=\"mpiadvise gate\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"0\" time=\"0\">\n",
                   v.checks.size(), failures);
  for (const auto& c : v.checks) {
    o << fmt::format("    <testcase classname=\"mpiadvise.gate.{}\" name=\"{}\" time=\"0\">\n", gate::group_name(c.group),
                     xml_escape(c.name));
    std::string detail;
    for (const auto& f : c.figures) detail += figure_detail(f, c) + "\n";
    if (c.failed)
      o << fmt::format("      <failure type=\"{}\" message=\"{}\">{}</failure>\n",
                       c.group == gate::CheckGroup::Budgets ? "budget" : "regression", xml_escape(failure_text(c, v)),
                       xml_escape(detail));
    else
      o << fmt::format("      <system-out>{}</system-out>\n", xml_escape(detail));
    o << "    </testcase>\n";
  }
  o << fmt::format("    <system-out>{}</system-out>\n", xml_escape(info));
  o << "  </testsuite>\n</testsuites>\n";
  return o.str();
}

std::string markdown(const gate::Verdict& v, const std::string& info) {
  std::ostringstream o;
  size_t n = 0;
  for (const auto& c : v.checks) n += c.failed;
  o << (v.failed ? fmt::format("### mpiadvise gate: failed ({} of {} checks)\n\n", n, v.checks.size())
                 : fmt::format("### mpiadvise gate: passed ({} checks)\n\n", v.checks.size()));
  o << md(info) << "\n\n";
  for (const auto& c : v.checks)
    if (c.failed) o << "- **" << md_name(c, false) << "**: " << md(failure_parts(c, v)) << "\n";
  if (n) o << "\n";
  if (const std::string note = single_run_note(v); !note.empty()) o << "Note: " << md(note) << "\n\n";
  o << "| check | figure | baseline | candidate | change | allowed | measured (information) | result |\n"
       "|---|---|---:|---:|---:|---|---|---|\n";
  for (const auto& c : v.checks)
    for (const auto& f : c.figures)
      o << fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} |\n", (c.group == gate::CheckGroup::Metrics ? "" : md(gate::group_name(c.group)) + ": ") + md_name(c, true), md(f.figure),
                       value_text(f.baseline, f.time), value_text(f.candidate, f.time), change_text(f),
                       md(band_text(f, c)), measured_text(f), f.failed ? "**FAIL**" : "pass");
  return o.str();
}

json verdict_json(const gate::Verdict& v, const GateCommand& c) {
  auto num = [](double x) { return std::isnan(x) ? json(nullptr) : json(x); };
  auto paths = [](const std::vector<std::string>& ps) {
    json a = json::array();
    for (const auto& p : ps) a.push_back(p);
    return a;
  };
  json out = {{"schema", "mpiadvise-gate/2"},
              {"passed", !v.failed},
              {"max_regression", v.max_regression},
              {"band_sigmas", gate::kBandSigmas},
              {"noise_replays", gate::kNoiseReplays},
              {"baseline", paths(c.baseline)},
              {"candidate", paths(c.candidate)},
              {"baseline_runs", v.baseline_runs},
              {"candidate_runs", v.candidate_runs},
              {"intervals", v.intervals},
              {"replaced_intervals", v.replaced_intervals},
              {"method", method_text(v)},
              {"note", single_run_note(v)},
              {"checks", json::array()}};
  for (const auto& k : v.checks) {
    json figures = json::array();
    for (const auto& f : k.figures)
      figures.push_back({{"figure", f.figure},
                         {"kind", f.time ? "time" : "count"},
                         {"failed", f.failed},
                         {"baseline", num(f.baseline)},
                         {"candidate", num(f.candidate)},
                         {"band", f.band},
                         {"limit", num(f.limit)},
                         {"varies", f.varies},
                         {"measured_baseline", num(f.measured_baseline)},
                         {"measured_candidate", num(f.measured_candidate)}});
    out["checks"].push_back({{"group", gate::group_name(k.group)},
                             {"name", k.name},
                             {"failed", k.failed},
                             {"message", k.failed ? failure_text(k, v) : std::string()},
                             {"figures", figures}});
  }
  return out;
}

void write_file(const std::string& path, const std::string& text) {
  if (!output_process()) return;  // spread over processes, one writes
  std::ofstream out(path);
  out << text;
  out.close();
  if (!out) throw std::runtime_error(terminal_text(path) + ": cannot be written");
}

// The part of the runs every figure is of (--until, --from, or a report made with them; neither: the whole
// runs). Figures of different parts are not compared: a run's first second against the whole run would be
// taken for a speed-up.
RunPart same_part(const std::vector<RunFigures>& base, const std::vector<RunFigures>& cand) {
  const RunFigures& first = cand.empty() ? base.front() : cand.front();
  for (const auto* side : {&base, &cand})
    for (const RunFigures& f : *side)
      if (f.until_s != first.until_s || f.from_s != first.from_s)
        throw std::runtime_error(fmt::format(
            "{}'s figures are of {} and {}'s of {}: the gate compares the same part of each run (give log directories "
            "with one --from and --until, or reports made with the same)",
            terminal_text(f.source), part_text(f.from_s, f.until_s), terminal_text(first.source),
            part_text(first.from_s, first.until_s)));
  return RunPart{first.until_s, first.from_s};
}

int run_gate(const GateCommand& c) {
  if (c.baseline.empty() && c.budgets.empty())
    throw CLI::ValidationError("--baseline", "give --baseline A to compare with, or --budget METRIC<=VALUE, or both");
  gate::GateOptions options;
  options.max_regression = parse_fraction("--max-regression", c.max_regression);
  for (const auto& b : c.budgets) options.budgets.push_back(parse_budget(b));
  for (const auto& m : c.metrics) {
    const gate::MetricInfo* d = gate::metric_named(m);
    if (!d) throw CLI::ValidationError("--metric", m + " is not one of " + metric_names(true));
    options.metrics.insert(d->metric);
  }
  const std::vector<RunFigures> cand = load_side(c.candidate, "--candidate", c);
  const std::vector<RunFigures> base = load_side(c.baseline, "--baseline", c);
  const RunPart part = same_part(base, cand);
  const gate::Verdict v = gate::compare(base, cand, options);

  std::string info = method_text(v);
  if (part.until_s || part.from_s) info += "; of each, " + part_text(part.from_s, part.until_s);
  std::set<std::string> all_params = v.baseline_params;
  all_params.insert(v.candidate_params.begin(), v.candidate_params.end());
  if (all_params.size() > 1) {
    std::string names;
    for (const auto& p : all_params) names += (names.empty() ? "" : ", ") + p;
    std::fprintf(stderr, "mpiadvise: the runs were modelled with different parameter sets (%s): give --params\n",
                 terminal_text(names).c_str());
    info += "; parameter sets differ (" + names + ")";
  }

  // standard output: a line per figure
  fmt::print("mpiadvise gate: {}\n", terminal_text(info));
  fmt::print("  {:<6} {:<52} {:<20} {:>12} {:>12} {:>8} {:>14}  {}\n", "result", "check", "figure", "baseline",
             "candidate", "change", "allowed", "measured (information)");
  for (const auto& k : v.checks)
    for (const auto& f : k.figures)
      fmt::print("  {:<6} {:<52} {:<20} {:>12} {:>12} {:>8} {:>14}  {}\n", f.failed ? "FAIL" : "pass",
                 terminal_text(check_label(k)), f.figure, value_text(f.baseline, f.time), value_text(f.candidate, f.time),
                 change_text(f), band_text(f, k), measured_text(f));
  for (const auto& k : v.checks)
    if (k.failed) fmt::print("regression: {}\n", terminal_text(failure_text(k, v)));
  if (const std::string note = single_run_note(v); !note.empty()) fmt::print("note: {}\n", note);
  fmt::print("mpiadvise gate: {}\n", v.failed ? "FAILED" : "passed");

  if (!c.junit.empty()) write_file(c.junit, junit_xml(v, info));
  if (!c.markdown.empty()) write_file(c.markdown, markdown(v, info));
  if (!c.json_out.empty()) write_file(c.json_out, dump_json(verdict_json(v, c), 2) + "\n");
  return v.failed ? kProblems : kOk;
}

}  // namespace

std::function<int()> add_gate(CLI::App& app) {
  auto c = std::make_shared<GateCommand>();
  auto* sub = app.add_subcommand("gate", "Performance regression gate for CI: compare the runs of two builds, telling change from noise");
  sub->add_option("--baseline", c->baseline,
                  "Reference run: log directory, report JSON, or a directory of them (several runs); may be repeated");
  sub->add_option("--candidate", c->candidate,
                  "Run to check: log directory, report JSON, or a directory of them (several runs); may be repeated")
      ->required();
  sub->add_option("--params", c->params, "Parameter set for log directories (default: chosen for each log)");
  sub->add_option("--max-regression", c->max_regression,
                  "Growth of a time figure allowed whatever its noise band (default 5%)");
  sub->add_option("--metric", c->metrics, "Check only these: " + metric_names(true));
  sub->add_option("--budget", c->budgets, "METRIC<=VALUE, with or without a baseline: send_wait<=10%, predicted_time<=2s");
  sub->add_option("--junit", c->junit, "Write JUnit XML (a test case per metric, call site and budget)");
  sub->add_option("--json", c->json_out, "Write the verdict as JSON (schema mpiadvise-gate/2)");
  sub->add_option("--markdown", c->markdown, "Write a Markdown summary for a merge-request comment");
  add_part_option(sub, c->part);
  add_debug_dir_option(sub, c->debug_dirs);
  add_threads_option(sub);
  return [c] { return run_gate(*c); };
}

}  // namespace mpiadvise::cli

// mpiadvise gate: a performance regression gate for CI. Compares the modelled figures of two reports
// (log directories or mpiadvise-report/1 JSON files): the same log always gives the same figures, so the
// gate does not flap with the noise of a shared CI machine; measured figures are shown beside them.
#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <regex>
#include <sstream>

#include "analysis.hpp"
#include "commands.hpp"
#include "format_units.hpp"
#include "report.hpp"

namespace mpiadvise::cli {
namespace {

using json = nlohmann::json;
namespace fs = std::filesystem;

struct GateCommand {
  std::string baseline, candidate, params, max_regression = "5%", junit, json_out, markdown;
  std::vector<std::string> metrics, budgets, debug_dirs;
  size_t top = 10;
};

// The metrics of a whole run: name, where it is in the report's "model", and whether it is a time.
struct MetricDef {
  const char* name;
  const char* key;
  bool time;
  const char* what;
};
const MetricDef kMetrics[] = {
    {"predicted_time", "predicted_ns", true, "predicted run time"},
    {"send_wait", "predicted_send_wait_ns", true, "predicted send-wait, all ranks"},
    {"recv_wait", "predicted_recv_wait_ns", true, "predicted receive-wait, all ranks"},
    {"rendezvous_bytes", "rendezvous_bytes", false, "bytes sent by rendezvous (above S)"},
    {"rendezvous_messages", "rendezvous_messages", false, "messages sent by rendezvous (above S)"},
};
const char* const kMeasured[][2] = {{"predicted_time", "measured_ns"},
                                    {"send_wait", "measured_send_wait_ns"},
                                    {"recv_wait", "measured_recv_wait_ns"}};

const MetricDef* metric_def(const std::string& name) {
  for (const auto& m : kMetrics)
    if (name == m.name) return &m;
  return nullptr;
}

std::string metric_names() {
  std::string s;
  for (const auto& m : kMetrics) s += std::string(s.empty() ? "" : ", ") + m.name;
  return s + ", sites";
}

// A report from a log directory (made now) or a report JSON file (checked).
json load_report(const std::string& path, const std::string& option, const GateCommand& c) {
  std::error_code ec;
  if (fs::is_directory(path, ec)) {
    Analysis a = analyse(path, c.params, debug_search_dirs(c.debug_dirs));
    for (const auto& p : a.trace.problems) std::fprintf(stderr, "mpiadvise: %s\n", p.text().c_str());
    ReportOptions o;
    o.top = c.top;
    return build_report(a, o);
  }
  if (!fs::exists(path, ec)) throw CLI::ValidationError(option, path + ": no such log directory or report file");
  std::ifstream in(path);
  if (!in) throw CLI::ValidationError(option, path + ": cannot be read");
  json j;
  try {
    j = json::parse(in);
  } catch (const json::parse_error& e) {
    throw CLI::ValidationError(option, fmt::format("{}: not JSON (byte {}): a log directory or a report from "
                                                   "mpiadvise report --format json is expected", path, e.byte));
  }
  try {
    check_report(j, path);
  } catch (const std::exception& e) {
    throw CLI::ValidationError(option, e.what());
  }
  if (!c.params.empty())
    std::fprintf(stderr, "mpiadvise: %s is a report: --params applies only to log directories\n", path.c_str());
  return j;
}

// "5%", "0.05" -> 0.05
double parse_fraction(const std::string& option, const std::string& v) {
  static const std::regex re(R"(\s*([0-9]*\.?[0-9]+)\s*(%?)\s*)");
  std::smatch m;
  if (!std::regex_match(v, m, re)) throw CLI::ValidationError(option, v + " is not a percentage (e.g. 5%) or a fraction");
  double x = std::stod(m[1]);
  return m[2].str().empty() ? x : x / 100;
}

// A budget: METRIC<=VALUE; VALUE a share of the ranks' predicted time ("10%", time metrics only), a
// duration ("5ms", "2s", "300us", "100ns"), or a count or size ("0", "64K", "1M").
struct Budget {
  std::string text, metric;
  double limit = 0;  // ns, bytes or count; or a fraction when share
  bool share = false;
};

Budget parse_budget(const std::string& v) {
  static const std::regex re(R"(\s*([a-z_]+)\s*<=\s*([0-9]*\.?[0-9]+)\s*(%|ns|us|ms|s|[kKmMgG]i?[bB]?|[bB])?\s*)");
  std::smatch m;
  if (!std::regex_match(v, m, re))
    throw CLI::ValidationError("--budget", v + " is not METRIC<=VALUE (e.g. send_wait<=10%, predicted_time<=2s)");
  Budget b;
  b.text = v;
  b.metric = m[1];
  const MetricDef* d = metric_def(b.metric);
  if (!d) throw CLI::ValidationError("--budget", v + ": " + b.metric + " is not one of " + metric_names().substr(0, metric_names().size() - 7));
  double x = std::stod(m[2]);
  std::string unit = m[3];
  if (unit == "%") {
    if (!d->time) throw CLI::ValidationError("--budget", v + ": a percentage is a share of the ranks' time, for a time metric");
    if (b.metric == "predicted_time") throw CLI::ValidationError("--budget", v + ": give predicted_time as a duration (e.g. 2s)");
    b.share = true;
    x /= 100;
  } else if (unit == "ns" || unit == "us" || unit == "ms" || unit == "s") {
    if (!d->time) throw CLI::ValidationError("--budget", v + ": " + b.metric + " is not a time");
    x *= unit == "ns" ? 1 : unit == "us" ? 1e3 : unit == "ms" ? 1e6 : 1e9;
  } else if (d->time) {
    throw CLI::ValidationError("--budget", v + ": give " + b.metric + " a unit (ns, us, ms, s) or a percentage");
  } else if (!unit.empty()) {
    if (b.metric != "rendezvous_bytes")
      throw CLI::ValidationError("--budget", v + ": " + b.metric + " is a count, without a unit");
    char u = static_cast<char>(std::tolower(unit[0]));
    x *= u == 'b' ? 1.0 : u == 'k' ? 1024.0 : u == 'm' ? 1024.0 * 1024 : 1024.0 * 1024 * 1024;
  }
  b.limit = x;
  return b;
}

struct Check {
  std::string group;     // "metrics", "sites", "budgets"
  std::string name;
  bool time = false;
  double baseline = NAN, candidate = 0, limit = NAN;
  double measured_baseline = NAN, measured_candidate = NAN;
  bool failed = false;
  std::string message;   // why it failed, or what it checked
};

std::string value_text(double v, bool time) {
  if (std::isnan(v)) return "-";
  return time ? duration_text(static_cast<uint64_t>(std::max(0.0, v))) : fmt::format("{}", static_cast<uint64_t>(v));
}

std::string change_text(const Check& c) {
  if (std::isnan(c.baseline)) return "";
  if (c.baseline == 0) return c.candidate == 0 ? "0%" : "new";
  return fmt::format("{:+.1f}%", 100 * (c.candidate - c.baseline) / c.baseline);
}

// A regression: above the baseline by more than the allowed fraction, and (for times) by more than a
// floor of 0.1% of the baseline's predicted run time, so that a wait growing from 0 to a few
// nanoseconds is not one.
void compare(Check& c, double allowed, double floor_ns) {
  const double limit = c.baseline * (1 + allowed);
  c.limit = limit;
  const bool over = c.candidate > limit && (!c.time || c.candidate - c.baseline > floor_ns);
  c.failed = over;
  if (over)
    c.message = fmt::format("{}: {} -> {} ({}), more than the allowed {:.1f}%", c.name, value_text(c.baseline, c.time),
                            value_text(c.candidate, c.time), change_text(c), 100 * allowed);
}

std::string site_name(const json& s) {
  return fmt::format("{} {}", s["where"]["text"].get<std::string>(), s["call"].get<std::string>());
}

// A report's figures of one call site; entries with the same name (the same line reached through
// different call stacks, or sites without symbols) are summed.
struct SiteFigures {
  double wait = 0, rendezvous = 0, measured = 0;
  std::string moved_key;  // file, function and call: to pair a site whose line moved
  int line = 0;
};

std::map<std::string, SiteFigures> site_figures(const json& sites) {
  std::map<std::string, SiteFigures> out;
  for (const auto& s : sites) {
    SiteFigures& f = out[site_name(s)];
    f.wait += s["predicted_wait_ns"].get<double>();
    f.rendezvous += s["rendezvous_messages"].get<double>();
    f.measured += s["measured_wait_ns"].get<double>();
    const json& w = s["where"];
    if (w.contains("line") && w["line"].is_number_integer()) f.line = w["line"].get<int>();
    if (w.contains("file") && w["file"].is_string())
      f.moved_key = w["file"].get<std::string>() + "\n" + w.value("function", std::string()) + "\n" + s["call"].get<std::string>();
  }
  return out;
}

std::string xml_escape(const std::string& s) {
  std::string o;
  for (char ch : s) {
    switch (ch) {
      case '&': o += "&amp;"; break;
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '"': o += "&quot;"; break;
      case '\'': o += "&apos;"; break;
      default:
        if (static_cast<unsigned char>(ch) < 0x20 && ch != '\n' && ch != '\t') o += ' ';
        else o += ch;
    }
  }
  return o;
}

std::string junit_xml(const std::vector<Check>& checks, const std::string& info) {
  size_t failures = 0;
  for (const auto& c : checks) failures += c.failed;
  std::ostringstream o;
  o << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n";
  o << fmt::format("<testsuites name=\"mpiadvise gate\" tests=\"{}\" failures=\"{}\" errors=\"0\">\n", checks.size(), failures);
  o << fmt::format("  <testsuite name=\"mpiadvise gate\" tests=\"{}\" failures=\"{}\" errors=\"0\" skipped=\"0\" time=\"0\">\n",
                   checks.size(), failures);
  for (const auto& c : checks) {
    o << fmt::format("    <testcase classname=\"mpiadvise.gate.{}\" name=\"{}\" time=\"0\">\n", c.group, xml_escape(c.name));
    std::string detail = fmt::format("baseline {}, candidate {}, limit {}; measured (for information) {} -> {}",
                                     value_text(c.baseline, c.time), value_text(c.candidate, c.time),
                                     value_text(c.limit, c.time), value_text(c.measured_baseline, c.time),
                                     value_text(c.measured_candidate, c.time));
    if (c.failed)
      o << fmt::format("      <failure type=\"{}\" message=\"{}\">{}</failure>\n",
                       c.group == "budgets" ? "budget" : "regression", xml_escape(c.message), xml_escape(detail));
    else
      o << fmt::format("      <system-out>{}</system-out>\n", xml_escape(detail));
    o << "    </testcase>\n";
  }
  o << fmt::format("    <system-out>{}</system-out>\n", xml_escape(info));
  o << "  </testsuite>\n</testsuites>\n";
  return o.str();
}

std::string markdown(const std::vector<Check>& checks, bool failed, const std::string& info) {
  std::ostringstream o;
  size_t n = 0;
  for (const auto& c : checks) n += c.failed;
  o << (failed ? fmt::format("### mpiadvise gate: failed ({} of {} checks)\n\n", n, checks.size())
               : fmt::format("### mpiadvise gate: passed ({} checks)\n\n", checks.size()));
  o << markdown_escape(info, "|") << "\n\n";
  o << "| check | baseline | candidate | change | limit | measured (information) | result |\n"
       "|---|---:|---:|---:|---:|---|---|\n";
  for (const auto& c : checks)
    o << fmt::format("| {} | {} | {} | {} | {} | {} | {} |\n", markdown_escape(c.group == "metrics" ? c.name : c.group + ": `" + c.name + "`", "|"),
                     value_text(c.baseline, c.time), value_text(c.candidate, c.time), change_text(c),
                     value_text(c.limit, c.time),
                     std::isnan(c.measured_candidate) ? std::string("")
                                                      : value_text(c.measured_baseline, c.time) + " -> " +
                                                            value_text(c.measured_candidate, c.time),
                     c.failed ? "**FAIL**" : "pass");
  return o.str();
}

void write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path);
  out << text;
  out.close();
  if (!out) throw std::runtime_error(path + ": cannot be written");
}

int run_gate(const GateCommand& c) {
  if (c.baseline.empty() && c.budgets.empty())
    throw CLI::ValidationError("--baseline", "give --baseline A to compare with, or --budget METRIC<=VALUE, or both");
  const double allowed = parse_fraction("--max-regression", c.max_regression);
  std::vector<Budget> budgets;
  for (const auto& b : c.budgets) budgets.push_back(parse_budget(b));
  std::set<std::string> chosen(c.metrics.begin(), c.metrics.end());
  for (const auto& m : chosen)
    if (m != "sites" && !metric_def(m)) throw CLI::ValidationError("--metric", m + " is not one of " + metric_names());
  auto wanted = [&](const std::string& m) { return chosen.empty() || chosen.count(m); };

  const json cand = load_report(c.candidate, "--candidate", c);
  const json base = c.baseline.empty() ? json() : load_report(c.baseline, "--baseline", c);
  std::vector<Check> checks;
  const json& cm = cand["model"];
  auto measured_of = [](const json& model, const std::string& metric) {
    for (const auto& pair : kMeasured)
      if (metric == pair[0] && model.contains(pair[1]) && model[pair[1]].is_number()) return model[pair[1]].get<double>();
    return static_cast<double>(NAN);
  };
  std::string info = fmt::format("candidate {} (parameters {})", c.candidate, cand["params"].value("name", "?"));
  if (!base.is_null()) {
    const json& bm = base["model"];
    info = fmt::format("baseline {} against {}; modelled figures compared, measured ones for information",
                       c.baseline, info);
    std::string bp = base["params"].value("name", "?"), cp = cand["params"].value("name", "?");
    if (bp != cp) {
      std::fprintf(stderr, "mpiadvise: the baseline was modelled with %s, the candidate with %s: give --params\n",
                   bp.c_str(), cp.c_str());
      info += fmt::format("; parameters differ ({} and {})", bp, cp);
    }
    const double floor_ns = 0.001 * bm["predicted_ns"].get<double>();
    for (const auto& d : kMetrics) {
      if (!wanted(d.name)) continue;
      Check k;
      k.group = "metrics";
      k.name = d.name;
      k.time = d.time;
      k.baseline = bm[d.key].get<double>();
      k.candidate = cm[d.key].get<double>();
      k.measured_baseline = measured_of(bm, d.name);
      k.measured_candidate = measured_of(cm, d.name);
      compare(k, allowed, floor_ns);
      checks.push_back(k);
    }
    if (wanted("sites")) {
      // the hot call sites: those of either report that wait (predicted) or send by rendezvous. Sites of
      // one file, function and call are paired in the order of their lines when both sides have as many
      // and every line moved by the same amount (code added or removed above them, or nothing); else,
      // and for sites without line information, by name (source line and call, or module and offset)
      const std::map<std::string, SiteFigures> base_sites = site_figures(base["sites"]), cand_sites = site_figures(cand["sites"]);
      std::map<std::string, std::vector<std::pair<int, std::string>>> base_groups, cand_groups;
      for (const auto& [name, f] : base_sites)
        if (!f.moved_key.empty()) base_groups[f.moved_key].emplace_back(f.line, name);
      for (const auto& [name, f] : cand_sites)
        if (!f.moved_key.empty()) cand_groups[f.moved_key].emplace_back(f.line, name);
      std::map<std::string, std::pair<const SiteFigures*, const SiteFigures*>> sites;  // by the candidate's name
      std::set<std::string> paired_base, paired_cand;
      for (auto& [key, cands] : cand_groups) {
        auto b = base_groups.find(key);
        if (b == base_groups.end() || b->second.size() != cands.size()) continue;
        std::sort(cands.begin(), cands.end());
        std::sort(b->second.begin(), b->second.end());
        bool uniform = true;
        for (size_t i = 1; i < cands.size(); i++)
          uniform &= cands[i].first - b->second[i].first == cands[0].first - b->second[0].first;
        if (!uniform) continue;
        for (size_t i = 0; i < cands.size(); i++) {
          sites[cands[i].second] = {&base_sites.at(b->second[i].second), &cand_sites.at(cands[i].second)};
          paired_base.insert(b->second[i].second);
          paired_cand.insert(cands[i].second);
        }
      }
      for (const auto& [name, f] : cand_sites) {
        if (paired_cand.count(name)) continue;
        auto b = base_sites.find(name);
        sites[name].second = &f;
        if (b != base_sites.end() && !paired_base.count(name)) sites[name].first = &b->second, paired_base.insert(name);
      }
      for (const auto& [name, f] : base_sites) {
        if (paired_base.count(name)) continue;
        // a baseline site with no partner; its name may be taken by a candidate site paired by order
        sites[sites.count(name) ? name + " (baseline)" : name].first = &f;
      }
      for (const auto& [name, pair] : sites) {
        auto wait = [](const SiteFigures* f) { return f ? f->wait : 0.0; };
        auto rndv = [](const SiteFigures* f) { return f ? f->rendezvous : 0.0; };
        bool hot = std::max(wait(pair.first), wait(pair.second)) > floor_ns ||
                   std::max(rndv(pair.first), rndv(pair.second)) > 0;
        if (!hot) continue;
        Check k;
        k.group = "sites";
        k.name = name;
        k.time = true;
        k.baseline = wait(pair.first);
        k.candidate = wait(pair.second);
        k.measured_baseline = pair.first ? pair.first->measured : 0.0;
        k.measured_candidate = pair.second ? pair.second->measured : 0.0;
        compare(k, allowed, floor_ns);
        Check r;
        r.baseline = rndv(pair.first);
        r.candidate = rndv(pair.second);
        r.name = name;
        compare(r, allowed, 0);
        if (r.failed) {
          k.failed = true;
          std::string also = fmt::format("rendezvous messages {} -> {}", static_cast<uint64_t>(r.baseline),
                                         static_cast<uint64_t>(r.candidate));
          k.message = k.message.empty() ? fmt::format("{}: {} (predicted wait {} -> {})", name, also,
                                                      value_text(k.baseline, true), value_text(k.candidate, true))
                                        : k.message + "; " + also;
        }
        checks.push_back(k);
      }
    }
  }
  const double rank_time = cm["predicted_ns"].get<double>() * std::max(1, cand["summary"].value("ranks", 1));
  for (const auto& b : budgets) {
    const MetricDef* d = metric_def(b.metric);
    Check k;
    k.group = "budgets";
    k.name = b.text;
    k.time = d->time;
    k.candidate = cm[d->key].get<double>();
    k.measured_candidate = measured_of(cm, b.metric);
    k.limit = b.share ? b.limit * rank_time : b.limit;
    k.failed = k.candidate > k.limit;
    if (k.failed)
      k.message = b.share && rank_time > 0 ? fmt::format("{}: {} is {:.1f}% of the ranks' predicted time", b.text,
                                                         value_text(k.candidate, k.time), 100 * k.candidate / rank_time)
                          : fmt::format("{}: {}", b.text, value_text(k.candidate, k.time));
    checks.push_back(k);
  }
  bool failed = false;
  for (const auto& k : checks) failed |= k.failed;

  // standard output: one line per check
  fmt::print("mpiadvise gate: {}\n", info);
  fmt::print("  {:<8} {:<48} {:>12} {:>12} {:>8}  {}\n", "result", "check", "baseline", "candidate", "change",
             "measured (information)");
  for (const auto& k : checks)
    fmt::print("  {:<8} {:<48} {:>12} {:>12} {:>8}  {}\n", k.failed ? "FAIL" : "pass",
               k.group == "metrics" ? k.name : k.group + ": " + k.name, value_text(k.baseline, k.time),
               value_text(k.candidate, k.time), change_text(k),
               std::isnan(k.measured_candidate) ? std::string()
                                                : value_text(k.measured_baseline, k.time) + " -> " +
                                                      value_text(k.measured_candidate, k.time));
  for (const auto& k : checks)
    if (k.failed) fmt::print("regression: {}\n", k.message);
  fmt::print("mpiadvise gate: {}\n", failed ? "FAILED" : "passed");

  if (!c.junit.empty()) write_file(c.junit, junit_xml(checks, info));
  if (!c.markdown.empty()) write_file(c.markdown, markdown(checks, failed, info));
  if (!c.json_out.empty()) {
    json out = {{"schema", "mpiadvise-gate/1"}, {"passed", !failed}, {"max_regression", allowed},
                {"baseline", c.baseline}, {"candidate", c.candidate}, {"checks", json::array()}};
    auto num = [](double v) { return std::isnan(v) ? json(nullptr) : json(v); };
    for (const auto& k : checks)
      out["checks"].push_back({{"group", k.group}, {"name", k.name}, {"failed", k.failed}, {"message", k.message},
                               {"baseline", num(k.baseline)}, {"candidate", num(k.candidate)}, {"limit", num(k.limit)},
                               {"measured_baseline", num(k.measured_baseline)},
                               {"measured_candidate", num(k.measured_candidate)}});
    write_file(c.json_out, out.dump(2) + "\n");
  }
  return failed ? kProblems : kOk;
}

}  // namespace

std::function<int()> add_gate(CLI::App& app) {
  auto c = std::make_shared<GateCommand>();
  auto* sub = app.add_subcommand("gate", "Performance regression gate for CI: compare two runs' modelled figures");
  sub->add_option("--baseline", c->baseline, "Log directory or report JSON of the reference run");
  sub->add_option("--candidate", c->candidate, "Log directory or report JSON of the run to check")->required();
  sub->add_option("--params", c->params, "Parameter set for log directories (default: chosen for each log)");
  sub->add_option("--max-regression", c->max_regression, "Allowed growth of each figure over the baseline (default 5%)");
  sub->add_option("--metric", c->metrics,
                  "Check only these: predicted_time, send_wait, recv_wait, rendezvous_bytes, rendezvous_messages, sites");
  sub->add_option("--budget", c->budgets, "METRIC<=VALUE, with or without a baseline: send_wait<=10%, predicted_time<=2s");
  sub->add_option("--junit", c->junit, "Write JUnit XML (a test case per metric, hot call site and budget)");
  sub->add_option("--json", c->json_out, "Write the checks as JSON (schema mpiadvise-gate/1)");
  sub->add_option("--markdown", c->markdown, "Write a Markdown summary for a merge-request comment");
  sub->add_option("--top", c->top, "Candidate sites replayed for advice when a report is made from logs (default 10)")
      ->check(CLI::Range(1, 1000));
  add_debug_dir_option(sub, c->debug_dirs);
  return [c] { return run_gate(*c); };
}

}  // namespace mpiadvise::cli

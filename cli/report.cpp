// mpiadvise report DIR: findings and advice, each with its predicted saving; as text, Markdown or JSON
// (schema mpiadvise-report/1), all rendered from the one JSON document analyzer/report.cpp builds.
#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <set>
#include <sstream>
#include <utility>

#include "analysis.hpp"
#include "commands.hpp"
#include "format_units.hpp"
#include "report.hpp"
#include "text_escape.hpp"

namespace mpiadvise::cli {
namespace {

using json = nlohmann::json;

struct ReportCommand {
  std::string dir, params, format = "text", output;
  size_t top = 10;
  std::vector<std::string> debug_dirs;
};

std::string dur(const json& v) { return duration_text(v.get<double>()); }
std::string pct(double f) { return fmt::format("{:.1f}%", 100 * f); }
std::string signed_pct(double f) { return fmt::format("{:+.1f}%", 100 * f); }

// Ranks in ascending order as runs: "0-3,6".
std::string ranks_text(const json& v) {
  std::vector<int> ranks;
  for (const auto& r : v) ranks.push_back(r.get<int>());
  std::sort(ranks.begin(), ranks.end());
  std::string s;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) j++;
    s += (s.empty() ? "" : ",") + std::to_string(ranks[i]);
    if (j > i) s += (j == i + 1 ? "," : "-") + std::to_string(ranks[j]);
    i = j + 1;
  }
  return s.empty() ? "-" : s;
}

// Who waited at a hot spot and with whom: "ranks 0,1 with each other", "rank 3 with ranks 0-2", "ranks 0-3"
// (a collective: no peers).
std::string who_text(const json& ranks, const json& peers) {
  auto plural = [](const json& v) { return std::string(v.size() == 1 ? "rank " : "ranks ") + ranks_text(v); };
  std::vector<int> a, b;
  for (const auto& r : ranks) a.push_back(r.get<int>());
  for (const auto& r : peers) b.push_back(r.get<int>());
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  if (b.empty()) return plural(ranks);
  if (a == b && a.size() > 1) return plural(ranks) + " with each other";
  return plural(ranks) + " with " + plural(peers);
}

std::string sizes_text(const json& sizes) {
  std::string s;
  for (const auto& b : sizes) {
    uint64_t lo = b["min_bytes"].get<uint64_t>(), hi = b["max_bytes"].get<uint64_t>();
    s += (s.empty() ? "" : ", ") + (hi == 0 ? std::string("0 B") : bytes_text(lo) + ".." + bytes_text(hi + 1)) +
         fmt::format(" x{}", b["count"].get<uint64_t>());
  }
  return s.empty() ? "-" : s;
}

std::string job_line(const json& s) {
  std::string hosts;
  for (const auto& h : s["hosts"]) hosts += (hosts.empty() ? "" : ", ") + h.get<std::string>();
  size_t nhosts = s["hosts"].size();
  std::string lib = s["library"].get<std::string>();
  if (!s["library_version"].get<std::string>().empty()) lib += " " + s["library_version"].get<std::string>();
  return fmt::format("{} ranks on {} host{} ({}); {} over {}", s["ranks"].get<int>(), nhosts, nhosts == 1 ? "" : "s",
                     hosts, lib.empty() ? "an unknown MPI library" : lib, s["transport"].get<std::string>());
}

std::string eager_line(const json& s) {
  if (s["effective_S"].is_null()) return "not in the log (the model's S is the parameter set's)";
  return fmt::format("{} = {}: S = {} bytes ({})", s["eager_setting"].get<std::string>(),
                     s.value("configured_setting", json(nullptr)).is_string() ? s["configured_setting"].get<std::string>()
                                                                              : std::string("?"),
                     s["effective_S"].get<uint64_t>(), s["effective_S_note"].get<std::string>());
}

// Whether the model explains the run: one line when it does; where it misses and the suspected reasons
// when it does not (continuation lines indented under the first).
std::vector<std::string> fit_lines(const json& model) {
  const json& fit = model["fit"];
  const double error = model["error"].get<double>(), expected = fit["expected_error"].get<double>();
  std::vector<std::string> out;
  if (fit["explained"].get<bool>()) {
    out.push_back(fmt::format("fit          the model explains this run: {} against the measured time, within {}",
                              signed_pct(error), pct(expected)));
    return out;
  }
  out.push_back(fmt::format("fit          the model does not explain this run: {} against the measured time, beyond "
                            "the {} it is expected to reach",
                            signed_pct(error), pct(expected)));
  const std::string indent = "             ";
  std::string where;
  for (const auto& r : fit["ranks"])
    where += (where.empty() ? "" : ", ") + fmt::format("rank {} ({})", r["rank"].get<int>(), signed_pct(r["error"].get<double>()));
  if (!where.empty()) out.push_back(indent + "ranks missed: " + where);
  for (const auto& s : fit["sites"])
    out.push_back(indent + fmt::format("at {}, {}: {} inside MPI measured, {} predicted", s["where"]["text"].get<std::string>(),
                                       s["call"].get<std::string>(), dur(s["measured_ns"]), dur(s["predicted_ns"])));
  for (const auto& s : fit["suspects"])
    out.push_back(indent + "suspected: " + s["detail"].get<std::string>() +
                  (s.contains("where") ? " (most at " + s["where"]["text"].get<std::string>() + ")" : std::string()));
  out.push_back(indent + "so every saving below is uncertain");
  return out;
}

// What a piece of advice gives and costs, in one or two lines.
std::vector<std::string> advice_details(const json& a) {
  std::vector<std::string> out;
  out.push_back(fmt::format("predicted run time {} instead of {}: saves {} ({}); the model's error on this run is {}",
                            dur(a["predicted_ns"]), dur(a["baseline_ns"]), dur(a["saving_ns"]),
                            pct(a["saving"].get<double>()), pct(a["model_error"].get<double>())));
  if (a.value("uncertain", false))
    out.push_back("uncertain: the model does not explain the run as measured (see fit), so this saving may not be realised");
  std::string kind = a["kind"];
  if (kind == "raise_eager_limit") {
    std::string how = a["mca"].get<std::string>();
    if (!a["env"].get<std::string>().empty()) how += (how.empty() ? "" : " or ") + std::string("export ") + a["env"].get<std::string>();
    if (!how.empty()) out.push_back("set it: " + how);
    std::string at;
    for (const auto& w : a["sites"]) at += (at.empty() ? "" : ", ") + w["text"].get<std::string>();
    out.push_back(fmt::format("makes {} messages eager (sent at {}); send-wait {} -> {}", a["messages"].get<uint64_t>(),
                              at.empty() ? "?" : at, dur(a["send_wait_before_ns"]), dur(a["send_wait_after_ns"])));
    out.push_back(fmt::format("memory: up to {} of eager buffering per receiving rank ({} sender{} x {})",
                              bytes_text(a["memory_per_rank_bytes"].get<uint64_t>()), a["senders_per_rank"].get<int>(),
                              a["senders_per_rank"].get<int>() == 1 ? "" : "s", bytes_text(a["value"].get<uint64_t>())));
    if (!a.value("caution", std::string()).empty()) out.push_back("caution: " + a["caution"].get<std::string>());
  } else if (kind == "split_messages") {
    const uint64_t n = a["messages"].get<uint64_t>(), extra = a["extra_messages"].get<uint64_t>();
    out.push_back(fmt::format("the {} messages go as {} chunks ({} more); the extra overhead: {} over all ranks", n,
                              n + extra, extra, dur(a["extra_overhead_ns"])));
  } else if (kind == "prepost_receives") {
    out.push_back(fmt::format("a second receive buffer of {} per rank; send-wait {} -> {}, receive-wait {} -> {}",
                              bytes_text(a["buffer_bytes"].get<uint64_t>()), dur(a["send_wait_before_ns"]),
                              dur(a["send_wait_after_ns"]), dur(a["recv_wait_before_ns"]), dur(a["recv_wait_after_ns"])));
  } else if (kind == "nonblocking_send") {
    out.push_back(fmt::format("the send buffer must not be touched until the MPI_Wait; send-wait {} -> {}",
                              dur(a["send_wait_before_ns"]), dur(a["send_wait_after_ns"])));
  }
  return out;
}

// The efficiency factors (the POP methodology), two lines
std::vector<std::string> efficiency_lines(const json& e) {
  return {fmt::format("parallel {} = load balance {} x communication {} (serialisation {} x transfer {})",
                      pct(e["parallel"].get<double>()), pct(e["load_balance"].get<double>()),
                      pct(e["communication"].get<double>()), pct(e["serialisation"].get<double>()),
                      pct(e["transfer"].get<double>())),
          fmt::format("computation: mean {}, most {} (rank {}); the run {}, on an ideal network {} (the model: {})",
                      dur(e["mean_computation_ns"]), dur(e["max_computation_ns"]), e["slowest_rank"].get<int>(),
                      dur(e["run_ns"]), dur(e["ideal_ns"]), dur(e["model_ns"]))};
}

// A run that did not finish: where its ranks were, its deadlocks, the ranks it waited for
std::vector<std::string> hang_lines(const json& h) {
  std::vector<std::string> out;
  auto rank_text = [](const json& x) {
    if (!x.contains("call")) return fmt::format("rank {}: {}", x["rank"].get<int>(), x["state"].get<std::string>());
    if (x["state"] == "computing")
      return fmt::format("rank {}: computing, outside MPI for {} since {} at {} returned", x["rank"].get<int>(),
                         dur(x["for_ns"]), x["call"].get<std::string>(), x["where"]["text"].get<std::string>());
    std::string whom;
    for (const auto& p : x["waits_for"]) whom += (whom.empty() ? "" : ", ") + std::to_string(p.get<int>());
    const char* waiting = x["any_source"].get<bool>()   ? ", waiting for any of ranks "
                          : x["waits_for"].size() > 1 ? ", waiting for ranks "
                                                      : ", waiting for rank ";
    return fmt::format("rank {}: in {} at {} for {}{}", x["rank"].get<int>(), x["call"].get<std::string>(),
                       x["where"]["text"].get<std::string>(), dur(x["for_ns"]), whom.empty() ? std::string() : waiting + whom);
  };
  for (const auto& c : h["deadlocks"]) {
    std::string ring;
    for (const auto& x : c) ring += std::to_string(x["rank"].get<int>()) + " -> ";
    ring += std::to_string(c[0]["rank"].get<int>());
    out.push_back("deadlock: ranks " + ring + " each wait for the next");
    for (const auto& x : c) out.push_back("  " + rank_text(x));
  }
  for (const auto& x : h["waited_for"]) out.push_back("held up by " + rank_text(x));
  for (const auto& x : h["ranks"]) out.push_back(rank_text(x));
  return out;
}

// The unexpected queue over the run of the ranks where it grew deepest (at most `top`), a bar of
// eighths for each step, on one scale
std::vector<std::string> queue_lines(const json& rs, size_t top) {
  std::vector<const json*> deep;
  for (const auto& r : rs["ranks"])
    if (r.contains("unexpected_by_step") && r["unexpected_max"].get<uint64_t>() > 0) deep.push_back(&r);
  std::stable_sort(deep.begin(), deep.end(), [](const json* a, const json* b) {
    return (*a)["unexpected_max"].get<uint64_t>() > (*b)["unexpected_max"].get<uint64_t>();
  });
  if (deep.size() > top) deep.resize(top);
  std::vector<std::string> out;
  if (deep.empty()) return out;
  const uint64_t scale = (*deep.front())["unexpected_max"].get<uint64_t>();
  static const char* const kEighths[] = {" ", "\u2581", "\u2582", "\u2583", "\u2584", "\u2585", "\u2586", "\u2587", "\u2588"};
  out.push_back(fmt::format("unexpected messages over the run, {} steps of {} (a full bar: {})",
                            (*deep.front())["unexpected_by_step"].size(), dur(rs["step_ns"]), scale));
  for (const json* r : deep) {
    std::string bar;
    for (const auto& d : (*r)["unexpected_by_step"]) {
      const uint64_t n = d.get<uint64_t>();
      bar += kEighths[n == 0 ? 0 : std::max<uint64_t>(1, (n * 8 + scale - 1) / scale)];
    }
    out.push_back(fmt::format("rank {:>4} |{}| most {} at {}", (*r)["rank"].get<int>(), bar,
                              (*r)["unexpected_max"].get<uint64_t>(), dur((*r)["unexpected_peak_ns"])));
  }
  return out;
}

// A phase's factors and time
std::string factors_text(const json& ph) {
  return fmt::format("parallel {} = load balance {} x communication {} (serialisation {} x transfer {}); {}",
                     pct(ph["parallel"].get<double>()), pct(ph["load_balance"].get<double>()),
                     pct(ph["communication"].get<double>()), pct(ph["serialisation"].get<double>()),
                     pct(ph["transfer"].get<double>()), dur(ph["run_ns"]));
}

// The factors of each phase MPI_Pcontrol marks, a line each, or those of the main loop's iterations
std::vector<std::string> phase_lines(const json& e) {
  std::vector<std::string> out;
  if (!e.contains("phases")) return out;
  size_t k = 0;
  for (const auto& ph : e["phases"])
    out.push_back(fmt::format("phase {} ({}): {}", k++,
                              ph["opened_at"].is_null() ? std::string("from the start")
                                                        : "from MPI_Pcontrol at " + ph["opened_at"]["text"].get<std::string>(),
                              factors_text(ph)));
  if (!e["phases_note"].get<std::string>().empty()) out.push_back(e["phases_note"].get<std::string>());
  if (e.contains("iterations") && !e["iterations"].is_null()) {
    const json& it = e["iterations"];
    out.push_back(fmt::format("main loop: {} iterations, each opening at {}: median {} measured, {} predicted; "
                              "parallel {} (load balance {}, communication {}) at the median",
                              it["count"].get<size_t>(),
                              it["opened_at"].is_null() ? std::string("?") : it["opened_at"]["text"].get<std::string>(),
                              dur(it["run_ns_median"]), dur(it["model_ns_median"]), pct(it["parallel_median"].get<double>()),
                              pct(it["load_balance_median"].get<double>()), pct(it["communication_median"].get<double>())));
    out.push_back(fmt::format("slowest iteration {}: {}", it["slowest"]["iteration"].get<size_t>(), factors_text(it["slowest"])));
    out.push_back("before the loop: " + factors_text(it["before"]));
    out.push_back("after the loop: " + factors_text(it["after"]));
  }
  return out;
}

// A computation: "rank 3, before MPI_Send at solver.c:120"
std::string computation_text(const json& c) {
  return fmt::format("rank {}, the computation before {} at {}", c["rank"].get<int>(),
                     c.contains("before_call") ? c["before_call"].get<std::string>() : c["call"].get<std::string>(),
                     c["where"]["text"].get<std::string>());
}

// Why ranks wait and what bounds the run: a section title and its lines
std::vector<std::pair<std::string, std::vector<std::string>>> cause_sections(const json& j, size_t top) {
  std::vector<std::pair<std::string, std::vector<std::string>>> out;
  if (j.contains("root_causes") && j["root_causes"]["waiting_ns"].get<double>() > 0) {
    const json& rc = j["root_causes"];
    std::vector<std::string> lines;
    size_t i = 0;
    for (const auto& c : rc["causes"]) {
      if (i++ >= top) break;
      lines.push_back(fmt::format("{}. {} causes {} of all waiting ({}: {} directly, {} through other ranks' waits)", i,
                                  computation_text(c), pct(c["share_of_waiting"].get<double>()), dur(c["total_ns"]),
                                  dur(c["direct_ns"]), dur(c["indirect_ns"])));
    }
    if (rc["unattributed_ns"].get<double>() > 0)
      lines.push_back(fmt::format("{} of waiting has no computation to charge (the late rank neither computed nor "
                                  "waited since the two last met)",
                                  dur(rc["unattributed_ns"])));
    out.emplace_back(fmt::format("Root causes of waiting ({} in all; delay costs, measured)", dur(rc["waiting_ns"])), lines);
  }
  if (j.contains("critical_path") && j["critical_path"]["length_ns"].get<double>() > 0) {
    const json& cp = j["critical_path"];
    std::vector<std::string> lines;
    lines.push_back(fmt::format("{}: {} computation, {} in MPI; it ends on rank {} and changes rank {} times",
                                dur(cp["length_ns"]), dur(cp["computation_ns"]), dur(cp["mpi_ns"]),
                                cp["ends_on_rank"].get<int>(), cp["rank_changes"].get<uint64_t>()));
    size_t i = 0;
    for (const auto& part : cp["parts"]) {
      if (i++ >= top) break;
      lines.push_back(fmt::format("{} {}", pct(part["share"].get<double>()),
                                  part["kind"] == "computation"
                                      ? computation_text(part)
                                      : fmt::format("rank {}, {} at {}", part["rank"].get<int>(), part["call"].get<std::string>(),
                                                    part["where"]["text"].get<std::string>())));
    }
    out.emplace_back("Critical path (measured)", lines);
  }
  if (j.contains("halos") && !j["halos"].empty()) {
    std::vector<std::string> lines;
    for (const auto& h : j["halos"]) {
      auto sites = [](const json& list) {
        std::string s;
        for (const auto& w : list) s += (s.empty() ? "" : ", ") + w["text"].get<std::string>();
        return s.empty() ? std::string("-") : s;
      };
      lines.push_back(fmt::format("{}; sends at {}; receives at {}", h["text"].get<std::string>(), sites(h["send_sites"]),
                                  sites(h["recv_sites"])));
      static const std::map<std::string, std::string> kChange = {
          {"overlap", "its sends and receives made non-blocking and completed together"},
          {"split", "its messages above S split into chunks of at most S"},
          {"overlap_and_split", "both"}};
      for (const auto& w : h.value("whatif", json::array()))
        lines.push_back(fmt::format("  the whole exchange, {}: {} ({}){}", kChange.at(w["change"].get<std::string>()),
                                    dur(w["predicted_ns"]), signed_pct(-w["saving"].get<double>()),
                                    w["command"].is_null() ? std::string() : "; " + w["command"].get<std::string>()));
    }
    out.emplace_back("Halo exchanges (repeated bursts in which each rank sends to and receives from the same neighbours)", lines);
  }
  if (j.contains("targets") && !j["targets"].empty()) {
    std::vector<std::string> lines;
    for (const auto& x : j["targets"])
      lines.push_back(fmt::format("{}: {}, {} of it on the critical path; twice as fast saves {} ({})",
                                  computation_text(x), dur(x["computation_ns"]),
                                  dur(x["on_path_ns"]), dur(x["saving_if_halved_ns"]),
                                  pct(x["saving_if_halved"].get<double>())));
    out.emplace_back("Optimisation targets, by what they save (what-if replays, each computation made twice as fast)", lines);
  }
  return out;
}

// One cycle of sends that completed only because the library buffered them: a title and details
std::pair<std::string, std::vector<std::string>> buffering_text(const json& d) {
  std::string sends;
  std::set<std::string> sites;
  for (const auto& s : d["sends"]) {
    if (!sends.empty()) sends += "; ";
    sends += fmt::format("rank {} to {}, {} bytes", s["rank"].get<int>(), s["peer"].get<int>(), s["bytes"].get<uint64_t>());
    sites.insert(s["where"]["text"].get<std::string>() + " " + s["call"].get<std::string>());
  }
  std::string where;
  for (const auto& x : sites) where += (where.empty() ? "" : ", ") + x;
  std::vector<std::string> lines;
  lines.push_back("every rank of the cycle waits for another once these sends wait for their receives (" + sends + ")");
  if (!d["hangs_below_bytes"].is_null())
    lines.push_back(fmt::format("the program hangs where the eager limit is below {} bytes: another MPI library or "
                                "transport, or larger messages",
                                d["hangs_below_bytes"].get<uint64_t>()));
  if (d["times"].get<uint64_t>() > 1) lines.push_back(fmt::format("{} times in this run", d["times"].get<uint64_t>()));
  lines.push_back("fix: post the receives first (MPI_Irecv, then the send, then MPI_Wait), or exchange with MPI_Sendrecv");
  return {where, lines};
}

std::string render_text(const json& j, size_t top) {
  std::ostringstream o;
  const json& s = j["summary"];
  const json& m = j["model"];
  o << fmt::format("mpiadvise report {}\n", j["dir"].get<std::string>());
  o << fmt::format("  job          {}\n", job_line(s));
  o << fmt::format("  eager limit  {}\n", eager_line(s));
  o << fmt::format("  traced       {}, {} of the ranks' time inside MPI; {} messages, {} collectives\n", dur(s["traced_ns"]),
                   pct(s["mpi_share"].get<double>()), s["messages"].get<uint64_t>(), s["collectives"].get<uint64_t>());
  o << fmt::format("  model        {}\n", j["params"]["why"].get<std::string>());
  o << fmt::format("  predicted    {} ({} against the measured {}); {} rendezvous messages, {}\n", dur(m["predicted_ns"]),
                   signed_pct(m["error"].get<double>()), dur(m["measured_ns"]), m["rendezvous_messages"].get<uint64_t>(),
                   bytes_text(m["rendezvous_bytes"].get<uint64_t>()));
  for (const auto& line : fit_lines(m)) o << "  " << line << "\n";
  if (j.contains("hang") && !j["hang"]["finished"].get<bool>()) {
    o << "\nThe run did not finish (stopped by a signal, or a log cut short): where each rank was at the end\n";
    for (const auto& line : hang_lines(j["hang"])) o << "  " << line << "\n";
  }
  o << "\nPer rank, measured / predicted\n";
  o << fmt::format("  {:>4}  {:^23}  {:^23}  {:^23}  {:^23}  {:^23}  {:^23}  {:>7}\n", "rank", "total", "computation",
                   "overheads", "send-wait", "recv-wait", "collectives", "error");
  for (const auto& r : j["ranks"]) {
    const json &me = r["measured"], &pr = r["predicted"];
    auto pair = [&](const char* mk, const char* pk) {
      return fmt::format("{:>10} / {:<10}", me.contains(mk) ? dur(me[mk]) : std::string("-"), dur(pr[pk]));
    };
    o << fmt::format("  {:>4}  {}  {}  {}  {}  {}  {}  {:>7}\n", r["rank"].get<int>(), pair("total_ns", "total_ns"),
                     pair("computation_ns", "computation_ns"), pair("other_mpi_ns", "other_mpi_ns"),
                     pair("send_wait_ns", "send_wait_ns"),
                     pair("recv_wait_ns", "recv_wait_ns"), pair("collectives_ns", "collectives_ns"),
                     signed_pct(r["error"].get<double>()));
  }
  if (j.contains("efficiency")) {
    o << "\nEfficiency (the POP factors; transfer from a replay on an ideal network)\n";
    for (const auto& line : efficiency_lines(j["efficiency"])) o << "  " << line << "\n";
    for (const auto& line : phase_lines(j["efficiency"])) o << "  " << line << "\n";
  }
  for (const auto& [title, lines] : cause_sections(j, top)) {
    o << "\n" << title << "\n";
    for (const auto& line : lines) o << "  " << line << "\n";
  }
  if (j.contains("receive_side") && j["receive_side"]["receives"].get<uint64_t>() > 0) {
    const json& rs = j["receive_side"];
    o << fmt::format("\nReceive side: {} of {} receives posted before their message arrived ({})\n",
                     rs["posted_early"].get<uint64_t>(), rs["receives"].get<uint64_t>(),
                     pct(rs["posted_early_share"].get<double>()));
    o << fmt::format("  {:>4}  {:>9}  {:>12}  {:>22}  {:>21}  {:>17}\n", "rank", "receives", "posted early",
                     "unexpected: most, mean", "most unexpected bytes", "most sends pending");
    for (const auto& r : rs["ranks"]) {
      if (r["receives"].get<uint64_t>() == 0 && r["outstanding_sends_max"].get<uint64_t>() == 0) continue;
      const uint64_t n = r["receives"].get<uint64_t>();
      o << fmt::format("  {:>4}  {:>9}  {:>12}  {:>14}, {:>5.1f}  {:>21}  {:>17}\n", r["rank"].get<int>(), n,
                       n ? pct(static_cast<double>(r["posted_early"].get<uint64_t>()) / static_cast<double>(n)) : "-",
                       r["unexpected_max"].get<uint64_t>(), r["unexpected_mean"].get<double>(),
                       bytes_text(r["unexpected_max_bytes"].get<uint64_t>()), r["outstanding_sends_max"].get<uint64_t>());
    }
    for (const auto& line : queue_lines(rs, top)) o << "  " << line << "\n";
  }
  if (j.contains("buffering") && !j["buffering"]["deadlocks"].empty()) {
    o << "\nCorrectness: sends that completed only because MPI buffered them (a replay with every send synchronous)\n";
    size_t k = 0;
    for (const auto& d : j["buffering"]["deadlocks"]) {
      auto [where, lines] = buffering_text(d);
      o << fmt::format("  {}. {}\n", ++k, where);
      for (const auto& line : lines) o << "     " << line << "\n";
    }
  }
  o << "\nHot spots, by time lost waiting (measured)\n";
  if (j["hot_spots"].empty()) o << "  none\n";
  size_t i = 0;
  for (const auto& h : j["hot_spots"]) {
    if (i++ >= top) break;
    o << fmt::format("  {}. {}  {}  {}\n", i, h["where"]["text"].get<std::string>(), h["call"].get<std::string>(),
                     who_text(h["ranks"], h["peers"]));
    o << fmt::format("     {} lost in {} waits ({} of all waiting): {}{}\n", dur(h["waited_ns"]), h["count"].get<uint64_t>(),
                     pct(h["share_of_waiting"].get<double>()), h["cause"].get<std::string>(),
                     h["caused_ns"].get<double>() > 0 ? "; it made other ranks wait " + dur(h["caused_ns"]) : std::string());
    o << fmt::format("     sizes: {}\n", sizes_text(h["sizes"]));
  }
  o << "\nAdvice, by predicted run time (each from a what-if replay)\n";
  if (j["advice"].empty()) o << "  none\n";
  i = 0;
  for (const auto& a : j["advice"]) {
    o << fmt::format("  {}. {}\n", ++i, a["title"].get<std::string>());
    for (const auto& line : advice_details(a)) o << "     " << line << "\n";
  }
  if (j.contains("considered") && !j["considered"].empty()) {
    o << fmt::format("\nConsidered, not advised: a predicted saving below the model's error ({}) or 1%\n",
                     pct(std::fabs(j["model"]["error"].get<double>())));
    i = 0;
    for (const auto& a : j["considered"]) {
      if (i++ >= 3) {
        o << fmt::format("  ... and {} more (--format json lists them)\n", j["considered"].size() - 3);
        break;
      }
      o << fmt::format("  - {}: {} ({})\n", a["title"].get<std::string>(), dur(a["predicted_ns"]),
                       signed_pct(-a["saving"].get<double>()));
    }
  }
  if (!j["notes"].empty()) {
    o << "\nNotes\n";
    for (const auto& n : j["notes"]) o << "  - " << n.get<std::string>() << "\n";
  }
  for (const auto& p : j["problems"]) o << "  problem: " << p.get<std::string>() << "\n";
  return o.str();
}

std::string render_markdown(const json& j, size_t top) {
  std::ostringstream o;
  const json& s = j["summary"];
  const json& m = j["model"];
  o << fmt::format("## mpiadvise report: {}\n\n", markdown_code(j["dir"].get<std::string>()));
  o << fmt::format("- **Job**: {}\n", markdown_escape(job_line(s)));
  o << fmt::format("- **Eager limit**: {}\n", markdown_escape(eager_line(s)));
  o << fmt::format("- **Traced**: {}, {} of the ranks' time inside MPI\n", dur(s["traced_ns"]), pct(s["mpi_share"].get<double>()));
  o << fmt::format("- **Model**: {}; predicted {} ({} against the measured {})\n", markdown_escape(j["params"]["why"].get<std::string>()),
                   dur(m["predicted_ns"]), signed_pct(m["error"].get<double>()), dur(m["measured_ns"]));
  const auto fit = fit_lines(m);
  o << "- **Fit**: " << markdown_escape(fit.front().substr(fit.front().find("the model"))) << "\n";
  for (size_t k = 1; k < fit.size(); k++) o << "  - " << markdown_escape(fit[k].substr(fit[k].find_first_not_of(' '))) << "\n";
  if (j.contains("hang") && !j["hang"]["finished"].get<bool>()) {
    o << "\n### The run did not finish\n\n";
    for (const auto& line : hang_lines(j["hang"]))
      o << (line.rfind("  ", 0) == 0 ? "  - " + markdown_escape(line.substr(2)) : "- " + markdown_escape(line)) << "\n";
  }
  o << "\n";
  o << "### Per rank (measured / predicted)\n\n| rank | total | computation | overheads | send-wait | recv-wait | collectives | "
       "error |\n|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const auto& r : j["ranks"]) {
    const json &me = r["measured"], &pr = r["predicted"];
    auto pair = [&](const char* mk, const char* pk) {
      return fmt::format("{} / {}", me.contains(mk) ? dur(me[mk]) : std::string("-"), dur(pr[pk]));
    };
    o << fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} |\n", r["rank"].get<int>(), pair("total_ns", "total_ns"),
                     pair("computation_ns", "computation_ns"), pair("other_mpi_ns", "other_mpi_ns"),
                     pair("send_wait_ns", "send_wait_ns"),
                     pair("recv_wait_ns", "recv_wait_ns"), pair("collectives_ns", "collectives_ns"),
                     signed_pct(r["error"].get<double>()));
  }
  if (j.contains("efficiency")) {
    o << "\n### Efficiency\n\n";
    for (const auto& line : efficiency_lines(j["efficiency"])) o << "- " << markdown_escape(line) << "\n";
    for (const auto& line : phase_lines(j["efficiency"])) o << "- " << markdown_escape(line) << "\n";
  }
  for (const auto& [title, lines] : cause_sections(j, top)) {
    o << "\n### " << title << "\n\n";
    for (const auto& line : lines) o << "- " << markdown_escape(line) << "\n";
  }
  if (j.contains("buffering") && !j["buffering"]["deadlocks"].empty()) {
    o << "\n### Correctness: sends that completed only because MPI buffered them\n\n";
    size_t k = 0;
    for (const auto& d : j["buffering"]["deadlocks"]) {
      auto [where, lines] = buffering_text(d);
      o << fmt::format("{}. **{}**\n", ++k, markdown_escape(where));
      for (const auto& line : lines) o << "   - " << markdown_escape(line) << "\n";
    }
  }
  o << "\n### Hot spots\n\n";
  if (j["hot_spots"].empty()) o << "None.\n";
  else o << "| # | where | call | ranks | peers | lost | waits | cause | sizes |\n|---:|---|---|---|---|---:|---:|---|---|\n";
  size_t i = 0;
  for (const auto& h : j["hot_spots"]) {
    if (i++ >= top) break;
    o << fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", i, markdown_code(h["where"]["text"].get<std::string>(), true),
                     markdown_escape(h["call"].get<std::string>()), ranks_text(h["ranks"]), ranks_text(h["peers"]),
                     dur(h["waited_ns"]), h["count"].get<uint64_t>(), h["cause"].get<std::string>(), sizes_text(h["sizes"]));
  }
  o << "\n### Advice\n\n";
  if (j["advice"].empty()) o << "None.\n";
  i = 0;
  for (const auto& a : j["advice"]) {
    o << fmt::format("{}. **{}**\n", ++i, markdown_escape(a["title"].get<std::string>()));
    for (const auto& line : advice_details(a)) o << "   - " << markdown_escape(line) << "\n";
  }
  if (j.contains("considered") && !j["considered"].empty()) {
    o << fmt::format("\n### Considered, not advised\n\nA predicted saving below the model's error ({}) or 1%:\n\n",
                     pct(std::fabs(j["model"]["error"].get<double>())));
    i = 0;
    for (const auto& a : j["considered"]) {
      if (i++ >= 3) break;
      o << fmt::format("- {}: {} ({})\n", markdown_escape(a["title"].get<std::string>()), dur(a["predicted_ns"]),
                       signed_pct(-a["saving"].get<double>()));
    }
  }
  if (!j["notes"].empty()) {
    o << "\n### Notes\n\n";
    for (const auto& n : j["notes"]) o << "- " << markdown_escape(n.get<std::string>()) << "\n";
  }
  return o.str();
}

int run_report(const ReportCommand& c) {
  Analysis a = analyse(c.dir, c.params, debug_search_dirs(c.debug_dirs));
  int status = kOk;
  for (const auto& p : a.trace.problems) {
    std::fprintf(stderr, "mpiadvise: %s\n", p.text().c_str());
    if (p.corrupt) status = kProblems;
  }
  ReportOptions options;
  options.top = c.top;
  options.gate_figures = c.format == "json";  // only JSON holds them (for mpiadvise gate --baseline report.json)
  options.charts = c.format == "json" || c.format == "html";  // the pictures' figures: JSON holds what HTML draws
  json j = build_report(a, options);
  // names and paths from the job: JSON in the lossless string form, text and Markdown escaped for a terminal
  std::string text = c.format == "json" ? dump_json(j, 2) + "\n"
                     : c.format == "html" ? render_html(j)
                     : c.format == "md" ? terminal_text(render_markdown(j, c.top), true)
                                        : terminal_text(render_text(j, c.top), true);
  if (c.output.empty() || c.output == "-") {
    std::cout << text;
  } else {
    std::ofstream out(c.output);
    out << text;
    out.close();
    if (!out) throw std::runtime_error(c.output + ": cannot write the report");
  }
  return status;
}

}  // namespace

std::function<int()> add_report(CLI::App& app) {
  auto c = std::make_shared<ReportCommand>();
  auto* sub = app.add_subcommand("report", "Findings and advice for a traced run, each with its predicted saving");
  sub->add_option("dir", c->dir, "Job directory of rank-NNNNN.mpa logs")->required();
  sub->add_option("--params", c->params, "Parameter set: a NAME in share/params or a FILE (default: chosen for the log)");
  sub->add_option("--format", c->format,
                  "text (default), json (schema mpiadvise-report/1), md (Markdown) or html (one self-contained page with "
                  "charts; with -o)")
      ->check(CLI::IsMember({"text", "json", "md", "html"}));
  sub->add_option("-o,--output", c->output, "Write the report to FILE instead of standard output");
  sub->add_option("--top", c->top, "Hot spots listed, and candidate sites replayed for each kind of advice (default 10)")
      ->check(CLI::Range(1, 1000));
  add_debug_dir_option(sub, c->debug_dirs);
  return [c] { return run_report(*c); };
}

}  // namespace mpiadvise::cli

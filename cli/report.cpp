// mpiadvise report DIR: findings and advice, each with its predicted saving; as text, Markdown, JSON
// (schema mpiadvise-report/1) or HTML, each presenting the one report value analyzer/report.cpp builds
// (report_types.hpp): a renderer computes no figure.
#include <fmt/format.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <set>
#include <sstream>
#include <utility>

#include "analysis.hpp"
#include "commands.hpp"
#include "spread.hpp"
#include "format_units.hpp"
#include "op_stream.hpp"
#include "replay_peers.hpp"
#include "report.hpp"
#include "text_escape.hpp"

namespace mpiadvise::cli {
namespace {

using json = nlohmann::json;

struct ReportCommand {
  std::string dir, params, format = "text", output;
  size_t top = 10;
  std::vector<std::string> debug_dirs;
  ReplaySpeed speed;
  RunPart part;
  double compute_factor = 1.0;
  bool low_memory = false;
};

// Ranks (or hosts) a line names at most; the JSON lists them all.
constexpr size_t kRanksNamed = 8;

std::string dur(double ns) { return duration_text(ns); }
std::string pct(double f) { return fmt::format("{:.1f}%", 100 * f); }
std::string signed_pct(double f) { return fmt::format("{:+.1f}%", 100 * f); }

// Ranks in ascending order as runs: "0-3,6".
std::string ranks_text(std::vector<int> ranks) {
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
std::string who_text(std::vector<int> ranks, std::vector<int> peers) {
  auto plural = [](const std::vector<int>& v) { return std::string(v.size() == 1 ? "rank " : "ranks ") + ranks_text(v); };
  std::sort(ranks.begin(), ranks.end());
  std::sort(peers.begin(), peers.end());
  if (peers.empty()) return plural(ranks);
  if (ranks == peers && ranks.size() > 1) return plural(ranks) + " with each other";
  return plural(ranks) + " with " + plural(peers);
}

std::string sizes_text(const std::vector<report::SizeBin>& sizes) {
  std::string s;
  for (const auto& b : sizes)
    s += (s.empty() ? "" : ", ") + (b.max_bytes == 0 ? std::string("0 B") : bytes_text(b.min_bytes) + ".." + bytes_text(b.max_bytes + 1)) +
         fmt::format(" x{}", b.count);
  return s.empty() ? "-" : s;
}

std::string job_line(const report::Summary& s) {
  std::string hosts;
  for (size_t k = 0; k < s.hosts.size() && k < kRanksNamed; k++) hosts += (hosts.empty() ? "" : ", ") + s.hosts[k];
  if (s.hosts.size() > kRanksNamed) hosts += fmt::format(" and {} more", s.hosts.size() - kRanksNamed);
  const size_t nhosts = s.hosts.size();
  std::string lib = s.library;
  if (!s.library_version.empty()) lib += " " + s.library_version;
  return fmt::format("{} ranks on {} host{} ({}); {} over {}", s.ranks, nhosts, nhosts == 1 ? "" : "s", hosts,
                     lib.empty() ? "an unknown MPI library" : lib, s.transport);
}

std::string eager_line(const report::Summary& s) {
  if (!s.effective_S) return "not in the log (the model's S is the parameter set's)";
  return fmt::format("{} = {}: S = {} bytes ({})", s.eager_setting, s.configured_setting.value_or("?"), *s.effective_S,
                     s.effective_S_note);
}

// Whether the model explains the run: one line when it does; where it misses and the suspected reasons
// when it does not (continuation lines indented under the first).
std::vector<std::string> fit_lines(const report::Model& model) {
  const report::Fit& fit = model.fit;
  std::vector<std::string> out;
  if (fit.explained) {
    out.push_back(fmt::format("fit          the model explains this run: {} against the measured time, within {}",
                              signed_pct(model.error), pct(fit.expected_error)));
    return out;
  }
  out.push_back(fmt::format("fit          the model does not explain this run: {} against the measured time, beyond "
                            "the {} it is expected to reach",
                            signed_pct(model.error), pct(fit.expected_error)));
  const std::string indent = "             ";
  // the worst few (the list is worst first; JSON has them all)
  std::string where;
  for (size_t k = 0; k < fit.ranks.size() && k < kRanksNamed; k++)
    where += (where.empty() ? "" : ", ") + fmt::format("rank {} ({})", fit.ranks[k].rank, signed_pct(fit.ranks[k].error));
  if (fit.ranks.size() > kRanksNamed) where += fmt::format(" and {} more", fit.ranks.size() - kRanksNamed);
  if (!where.empty()) out.push_back(indent + "ranks missed: " + where);
  for (const auto& s : fit.sites)
    out.push_back(indent + fmt::format("at {}, {}: {} inside MPI measured, {} predicted", s.where.text, s.call,
                                       dur(s.measured_ns), dur(s.predicted_ns)));
  for (const auto& s : fit.suspects)
    out.push_back(indent + "suspected: " + s.detail + (s.where ? " (most at " + s.where->text + ")" : std::string()));
  out.push_back(indent + "so every saving below is uncertain");
  return out;
}

// What a piece of advice gives and costs, in one or two lines.
std::vector<std::string> advice_details(const report::Advice& a) {
  std::vector<std::string> out;
  out.push_back(fmt::format("predicted run time {} instead of {}: saves {} ({}); the model's error on this run is {}",
                            dur(a.predicted_ns), dur(a.baseline_ns), dur(a.saving_ns), pct(a.saving), pct(a.model_error)));
  if (a.uncertain)
    out.push_back("uncertain: the model does not explain the run as measured (see fit), so this saving may not be realised");
  if (a.eager) {
    const report::EagerLimitChange& e = *a.eager;
    std::string how = e.mca;
    if (!e.env.empty()) how += (how.empty() ? "" : " or ") + std::string("export ") + e.env;
    if (!how.empty()) out.push_back("set it: " + how);
    std::string at;
    for (const auto& w : e.sites) at += (at.empty() ? "" : ", ") + w.text;
    out.push_back(fmt::format("makes {} messages eager (sent at {}); send-wait {} -> {}", a.messages, at.empty() ? "?" : at,
                              dur(a.send_wait_before_ns), dur(a.send_wait_after_ns)));
    out.push_back(fmt::format("memory: up to {} of eager buffering per receiving rank ({} sender{} x {})",
                              bytes_text(e.memory_per_rank_bytes), e.senders_per_rank, e.senders_per_rank == 1 ? "" : "s",
                              bytes_text(e.value)));
    if (!e.caution.empty()) out.push_back("caution: " + e.caution);
  } else if (a.split) {
    out.push_back(fmt::format("the {} messages go as {} chunks ({} more); the extra overhead: {} over all ranks", a.messages,
                              a.messages + a.split->extra_messages, a.split->extra_messages, dur(a.split->extra_overhead_ns)));
  } else if (a.prepost) {
    out.push_back(fmt::format("a second receive buffer of {} per rank; send-wait {} -> {}, receive-wait {} -> {}",
                              bytes_text(a.prepost->buffer_bytes), dur(a.send_wait_before_ns), dur(a.send_wait_after_ns),
                              dur(a.recv_wait_before_ns), dur(a.recv_wait_after_ns)));
  } else if (a.kind == "nonblocking_send") {
    out.push_back(fmt::format("the send buffer must not be touched until the MPI_Wait; send-wait {} -> {}",
                              dur(a.send_wait_before_ns), dur(a.send_wait_after_ns)));
  }
  return out;
}

// A phase's factors and time
std::string factors_text(const report::Factors& f) {
  return fmt::format("parallel {} = load balance {} x communication {} (serialisation {} x transfer {}); {}", pct(f.parallel),
                     pct(f.load_balance), pct(f.communication), pct(f.serialisation), pct(f.transfer), dur(f.run_ns));
}

// The efficiency factors (the POP methodology), two lines
std::vector<std::string> efficiency_lines(const report::Efficiency& e) {
  return {fmt::format("parallel {} = load balance {} x communication {} (serialisation {} x transfer {})", pct(e.parallel),
                      pct(e.load_balance), pct(e.communication), pct(e.serialisation), pct(e.transfer)),
          fmt::format("computation: mean {}, most {} (rank {}); the run {}, on an ideal network {} (the model: {})",
                      dur(e.mean_computation_ns), dur(e.max_computation_ns), e.slowest_rank, dur(e.run_ns),
                      dur(e.ideal_ns), dur(e.model_ns))};
}

// A run that did not finish: where its ranks were, its deadlocks, the ranks it waited for
std::vector<std::string> hang_lines(const report::Hang& h) {
  std::vector<std::string> out;
  auto rank_text = [](const report::HangRank& x) {
    if (!x.call) return fmt::format("rank {}: {}", x.rank, x.state);
    const std::string where = x.where ? x.where->text : std::string("?");
    if (x.state == "computing")
      return fmt::format("rank {}: computing, outside MPI for {} since {} at {} returned", x.rank, dur(x.for_ns), *x.call, where);
    std::string whom;
    for (int p : x.waits_for) whom += (whom.empty() ? "" : ", ") + std::to_string(p);
    const char* waiting = x.any_source             ? ", waiting for any of ranks "
                          : x.waits_for.size() > 1 ? ", waiting for ranks "
                                                   : ", waiting for rank ";
    return fmt::format("rank {}: in {} at {} for {}{}", x.rank, *x.call, where, dur(x.for_ns),
                       whom.empty() ? std::string() : waiting + whom);
  };
  for (const auto& c : h.deadlocks) {
    if (c.empty()) continue;
    std::string ring;
    for (const auto& x : c) ring += std::to_string(x.rank) + " -> ";
    ring += std::to_string(c.front().rank);
    out.push_back("deadlock: ranks " + ring + " each wait for the next");
    for (const auto& x : c) out.push_back("  " + rank_text(x));
  }
  for (const auto& x : h.waited_for) out.push_back("held up by " + rank_text(x));
  for (const auto& x : h.ranks) out.push_back(rank_text(x));
  return out;
}

// The unexpected queue over the run of the ranks where it grew deepest (at most `top`), a bar of
// eighths for each step, on one scale
std::vector<std::string> queue_lines(const report::ReceiveSide& rs, size_t top) {
  std::vector<const report::ReceiveRank*> deep;
  for (const auto& r : rs.ranks)
    if (!r.unexpected_by_step.empty() && r.unexpected_max > 0) deep.push_back(&r);
  std::stable_sort(deep.begin(), deep.end(), [](const auto* a, const auto* b) { return a->unexpected_max > b->unexpected_max; });
  if (deep.size() > top) deep.resize(top);
  std::vector<std::string> out;
  if (deep.empty()) return out;
  const uint64_t scale = deep.front()->unexpected_max;
  static const char* const kEighths[] = {" ", "\u2581", "\u2582", "\u2583", "\u2584", "\u2585", "\u2586", "\u2587", "\u2588"};
  out.push_back(fmt::format("unexpected messages over the run, {} steps of {} (a full bar: {})",
                            deep.front()->unexpected_by_step.size(), dur(rs.step_ns), scale));
  for (const auto* r : deep) {
    std::string bar;
    for (const uint64_t n : r->unexpected_by_step)
      bar += kEighths[n == 0 ? 0 : std::min<uint64_t>(8, std::max<uint64_t>(1, (n * 8 + scale - 1) / scale))];
    out.push_back(fmt::format("rank {:>4} |{}| most {} at {}", r->rank, bar, r->unexpected_max, dur(r->unexpected_peak_ns)));
  }
  return out;
}

// The factors of each phase MPI_Pcontrol marks, a line each, or those of the main loop's iterations
std::vector<std::string> phase_lines(const report::Efficiency& e) {
  std::vector<std::string> out;
  size_t k = 0;
  for (const auto& ph : e.phases)
    out.push_back(fmt::format("phase {} ({}): {}", k++,
                              ph.opened_at ? "from MPI_Pcontrol at " + ph.opened_at->text : std::string("from the start"),
                              factors_text(ph)));
  if (!e.phases_note.empty()) out.push_back(e.phases_note);
  if (e.iterations) {
    const report::Iterations& it = *e.iterations;
    out.push_back(fmt::format("main loop: {} iterations, each opening at {}: median {} measured, {} predicted; "
                              "parallel {} (load balance {}, communication {}) at the median",
                              it.count, it.opened_at ? it.opened_at->text : std::string("?"), dur(it.run_ns_median),
                              dur(it.model_ns_median), pct(it.parallel_median), pct(it.load_balance_median),
                              pct(it.communication_median)));
    out.push_back(fmt::format("slowest iteration {}: {}", it.slowest.iteration, factors_text(it.slowest)));
    out.push_back("before the loop: " + factors_text(it.before));
    out.push_back("after the loop: " + factors_text(it.after));
  }
  return out;
}

// A computation: "rank 3, the computation before MPI_Send at solver.c:120"
std::string computation_text(int rank, const std::string& call, const report::Location& where) {
  return fmt::format("rank {}, the computation before {} at {}", rank, call, where.text);
}
std::string computation_text(const report::Computation& c) { return computation_text(c.rank, c.before_call, c.where); }

// Why ranks wait and what bounds the run: a section title and its lines
std::vector<std::pair<std::string, std::vector<std::string>>> cause_sections(const report::Report& j, size_t top) {
  std::vector<std::pair<std::string, std::vector<std::string>>> out;
  if (j.root_causes.waiting_ns > 0) {
    const report::RootCauses& rc = j.root_causes;
    std::vector<std::string> lines;
    size_t i = 0;
    for (const auto& c : rc.causes) {
      if (i++ >= top) break;
      lines.push_back(fmt::format("{}. {} causes {} of all waiting ({}: {} directly, {} through other ranks' waits)", i,
                                  computation_text(c), pct(c.share_of_waiting), dur(c.total_ns), dur(c.direct_ns),
                                  dur(c.indirect_ns)));
    }
    if (rc.unattributed_ns > 0)
      lines.push_back(fmt::format("{} of waiting has no computation to charge (the late rank neither computed nor "
                                  "waited since the two last met)",
                                  dur(rc.unattributed_ns)));
    out.emplace_back(fmt::format("Root causes of waiting ({} in all; delay costs, measured)", dur(rc.waiting_ns)), lines);
  }
  if (j.critical_path.length_ns > 0) {
    const report::CriticalPath& cp = j.critical_path;
    std::vector<std::string> lines;
    lines.push_back(fmt::format("{}: {} computation, {} in MPI; it ends on rank {} and changes rank {} times", dur(cp.length_ns),
                                dur(cp.computation_ns), dur(cp.mpi_ns), cp.ends_on_rank, cp.rank_changes));
    size_t i = 0;
    for (const auto& part : cp.parts) {
      if (i++ >= top) break;
      lines.push_back(fmt::format("{} {}", pct(part.share),
                                  part.computation ? computation_text(part.rank, part.call, part.where)
                                                   : fmt::format("rank {}, {} at {}", part.rank, part.call, part.where.text)));
    }
    out.emplace_back("Critical path (measured)", lines);
  }
  if (!j.halos.empty()) {
    std::vector<std::string> lines;
    auto sites = [](const std::vector<report::Location>& list) {
      std::string s;
      for (const auto& w : list) s += (s.empty() ? "" : ", ") + w.text;
      return s.empty() ? std::string("-") : s;
    };
    static const std::map<std::string, std::string> kChange = {
        {"overlap", "its sends and receives made non-blocking and completed together"},
        {"split", "its messages above S split into chunks of at most S"},
        {"overlap_and_split", "both"}};
    for (const auto& h : j.halos) {
      lines.push_back(fmt::format("{}; sends at {}; receives at {}", h.text, sites(h.send_sites), sites(h.recv_sites)));
      for (const auto& w : h.whatif) {
        auto change = kChange.find(w.change);
        lines.push_back(fmt::format("  the whole exchange, {}: {} ({}){}", change == kChange.end() ? w.change : change->second,
                                    dur(w.predicted_ns), signed_pct(-w.saving), w.command ? "; " + *w.command : std::string()));
      }
    }
    out.emplace_back("Halo exchanges (repeated bursts in which each rank sends to and receives from the same neighbours)", lines);
  }
  if (!j.targets.empty()) {
    std::vector<std::string> lines;
    for (const auto& x : j.targets)
      lines.push_back(fmt::format("{}: {}, {} of it on the critical path; twice as fast saves {} ({})", computation_text(x),
                                  dur(x.computation_ns), dur(x.on_path_ns), dur(x.saving_if_halved_ns),
                                  pct(x.saving_if_halved)));
    out.emplace_back("Optimisation targets, by what they save (what-if replays, each computation made twice as fast)", lines);
  }
  return out;
}

// One cycle of sends that completed only because the library buffered them: a title and details
std::pair<std::string, std::vector<std::string>> buffering_text(const report::BufferingCycle& d) {
  std::string sends;
  std::set<std::string> sites;
  for (const auto& s : d.sends) {
    if (!sends.empty()) sends += "; ";
    sends += fmt::format("rank {} to {}, {} bytes", s.rank, s.peer, s.bytes);
    sites.insert(s.where.text + " " + s.call);
  }
  std::string where;
  for (const auto& x : sites) where += (where.empty() ? "" : ", ") + x;
  std::vector<std::string> lines;
  lines.push_back("every rank of the cycle waits for another once these sends wait for their receives (" + sends + ")");
  if (d.hangs_below_bytes)
    lines.push_back(fmt::format("the program hangs where the eager limit is below {} bytes: another MPI library or "
                                "transport, or larger messages",
                                *d.hangs_below_bytes));
  if (d.times > 1) lines.push_back(fmt::format("{} times in this run", d.times));
  lines.push_back("fix: post the receives first (MPI_Irecv, then the send, then MPI_Wait), or exchange with MPI_Sendrecv");
  return {where, lines};
}

// A rank's times as "measured / predicted" pairs, in the table's column order: total, computation,
// overheads (the rest of the time inside MPI), send-wait, receive-wait, collectives
std::vector<std::pair<double, double>> rank_columns(const report::Rank& r) {
  const report::MeasuredTimes& me = r.measured;
  const report::PredictedTimes& pr = r.predicted;
  return {{me.total_ns, pr.total_ns},         {me.computation_ns, pr.computation_ns}, {me.other_mpi_ns, pr.other_mpi_ns},
          {me.send_wait_ns, pr.send_wait_ns}, {me.recv_wait_ns, pr.recv_wait_ns},     {me.collectives_ns, pr.collectives_ns}};
}

std::string render_text(const report::Report& j, size_t top) {
  std::ostringstream o;
  const auto& s = j.summary;
  const auto& m = j.model;
  o << fmt::format("mpiadvise report {}\n", j.dir);
  o << fmt::format("  job          {}\n", job_line(s));
  o << fmt::format("  eager limit  {}\n", eager_line(s));
  o << fmt::format("  traced       {}, {} of the ranks' time inside MPI; {} messages, {} collectives\n", dur(s.traced_ns),
                   pct(s.mpi_share), s.messages, s.collectives);
  o << fmt::format("  model        {}\n", j.params.why);
  o << fmt::format("  predicted    {} ({} against the measured {}); {} rendezvous messages, {}\n", dur(m.predicted_ns),
                   signed_pct(m.error), dur(m.measured_ns), m.rendezvous_messages, bytes_text(m.rendezvous_bytes));
  for (const auto& line : fit_lines(m)) o << "  " << line << "\n";
  if (!j.hang.finished) {
    o << "\nThe run did not finish (stopped by a signal, or a log cut short): where each rank was at the end\n";
    for (const auto& line : hang_lines(j.hang)) o << "  " << line << "\n";
  }
  o << "\nPer rank, measured / predicted\n";
  o << fmt::format("  {:>4}  {:^23}  {:^23}  {:^23}  {:^23}  {:^23}  {:^23}  {:>7}\n", "rank", "total", "computation",
                   "overheads", "send-wait", "recv-wait", "collectives", "error");
  for (const auto& r : j.ranks) {
    o << fmt::format("  {:>4}", r.rank);
    for (const auto& [me, pr] : rank_columns(r)) o << fmt::format("  {:>10} / {:<10}", dur(me), dur(pr));
    o << fmt::format("  {:>7}\n", signed_pct(r.error));
  }
  o << "\nEfficiency (the POP factors; transfer from a replay on an ideal network)\n";
  for (const auto& line : efficiency_lines(j.efficiency)) o << "  " << line << "\n";
  for (const auto& line : phase_lines(j.efficiency)) o << "  " << line << "\n";
  for (const auto& [title, lines] : cause_sections(j, top)) {
    o << "\n" << title << "\n";
    for (const auto& line : lines) o << "  " << line << "\n";
  }
  if (j.receive_side.receives > 0) {
    const auto& rs = j.receive_side;
    o << fmt::format("\nReceive side: {} of {} receives posted before their message arrived ({})\n", rs.posted_early,
                     rs.receives, pct(rs.posted_early_share));
    o << fmt::format("  {:>4}  {:>9}  {:>12}  {:>22}  {:>21}  {:>17}\n", "rank", "receives", "posted early",
                     "unexpected: most, mean", "most unexpected bytes", "most sends pending");
    for (const auto& r : rs.ranks) {
      if (r.receives == 0 && r.outstanding_sends_max == 0) continue;
      o << fmt::format("  {:>4}  {:>9}  {:>12}  {:>14}, {:>5.1f}  {:>21}  {:>17}\n", r.rank, r.receives,
                       r.receives ? pct(static_cast<double>(r.posted_early) / static_cast<double>(r.receives)) : "-",
                       r.unexpected_max, r.unexpected_mean, bytes_text(r.unexpected_max_bytes), r.outstanding_sends_max);
    }
    for (const auto& line : queue_lines(rs, top)) o << "  " << line << "\n";
  }
  if (!j.buffering.deadlocks.empty()) {
    o << "\nCorrectness: sends that completed only because MPI buffered them (a replay with every send synchronous)\n";
    size_t k = 0;
    for (const auto& d : j.buffering.deadlocks) {
      auto [where, lines] = buffering_text(d);
      o << fmt::format("  {}. {}\n", ++k, where);
      for (const auto& line : lines) o << "     " << line << "\n";
    }
  }
  o << "\nHot spots, by time lost waiting (measured)\n";
  if (j.hot_spots.empty()) o << "  none\n";
  size_t i = 0;
  for (const auto& h : j.hot_spots) {
    if (i++ >= top) break;
    o << fmt::format("  {}. {}  {}  {}\n", i, h.where.text, h.call, who_text(h.ranks, h.peers));
    o << fmt::format("     {} lost in {} waits ({} of all waiting): {}{}\n", dur(h.waited_ns), h.count,
                     pct(h.share_of_waiting), h.cause,
                     h.caused_ns > 0 ? "; it made other ranks wait " + dur(h.caused_ns) : std::string());
    o << fmt::format("     sizes: {}\n", sizes_text(h.sizes));
  }
  o << "\nAdvice, by predicted run time (each from a what-if replay)\n";
  if (j.advice.empty()) o << "  none\n";
  i = 0;
  for (const auto& a : j.advice) {
    o << fmt::format("  {}. {}\n", ++i, a.title);
    for (const auto& line : advice_details(a)) o << "     " << line << "\n";
  }
  if (!j.considered.empty()) {
    o << fmt::format("\nConsidered, not advised: a predicted saving below the model's error ({}) or 1%\n",
                     pct(std::fabs(j.model.error)));
    i = 0;
    for (const auto& a : j.considered) {
      if (i++ >= 3) {
        o << fmt::format("  ... and {} more (--format json lists them)\n", j.considered.size() - 3);
        break;
      }
      o << fmt::format("  - {}: {} ({})\n", a.title, dur(a.predicted_ns), signed_pct(-a.saving));
    }
  }
  if (!j.notes.empty()) {
    o << "\nNotes\n";
    for (const auto& n : j.notes) o << "  - " << n << "\n";
  }
  for (const auto& p : j.problems) o << "  problem: " << p << "\n";
  return o.str();
}

std::string render_markdown(const report::Report& j, size_t top) {
  std::ostringstream o;
  const auto& s = j.summary;
  const auto& m = j.model;
  o << fmt::format("## mpiadvise report: {}\n\n", markdown_code(j.dir));
  o << fmt::format("- **Job**: {}\n", markdown_escape(job_line(s)));
  o << fmt::format("- **Eager limit**: {}\n", markdown_escape(eager_line(s)));
  o << fmt::format("- **Traced**: {}, {} of the ranks' time inside MPI\n", dur(s.traced_ns), pct(s.mpi_share));
  o << fmt::format("- **Model**: {}; predicted {} ({} against the measured {})\n", markdown_escape(j.params.why),
                   dur(m.predicted_ns), signed_pct(m.error), dur(m.measured_ns));
  const auto fit = fit_lines(m);
  o << "- **Fit**: " << markdown_escape(fit.front().substr(fit.front().find("the model"))) << "\n";
  for (size_t k = 1; k < fit.size(); k++) o << "  - " << markdown_escape(fit[k].substr(fit[k].find_first_not_of(' '))) << "\n";
  if (!j.hang.finished) {
    o << "\n### The run did not finish\n\n";
    for (const auto& line : hang_lines(j.hang))
      o << (line.rfind("  ", 0) == 0 ? "  - " + markdown_escape(line.substr(2)) : "- " + markdown_escape(line)) << "\n";
  }
  o << "\n";
  o << "### Per rank (measured / predicted)\n\n| rank | total | computation | overheads | send-wait | recv-wait | collectives | "
       "error |\n|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const auto& r : j.ranks) {
    o << fmt::format("| {} |", r.rank);
    for (const auto& [me, pr] : rank_columns(r)) o << fmt::format(" {} / {} |", dur(me), dur(pr));
    o << fmt::format(" {} |\n", signed_pct(r.error));
  }
  o << "\n### Efficiency\n\n";
  for (const auto& line : efficiency_lines(j.efficiency)) o << "- " << markdown_escape(line) << "\n";
  for (const auto& line : phase_lines(j.efficiency)) o << "- " << markdown_escape(line) << "\n";
  for (const auto& [title, lines] : cause_sections(j, top)) {
    o << "\n### " << title << "\n\n";
    for (const auto& line : lines) o << "- " << markdown_escape(line) << "\n";
  }
  if (!j.buffering.deadlocks.empty()) {
    o << "\n### Correctness: sends that completed only because MPI buffered them\n\n";
    size_t k = 0;
    for (const auto& d : j.buffering.deadlocks) {
      auto [where, lines] = buffering_text(d);
      o << fmt::format("{}. **{}**\n", ++k, markdown_escape(where));
      for (const auto& line : lines) o << "   - " << markdown_escape(line) << "\n";
    }
  }
  o << "\n### Hot spots\n\n";
  if (j.hot_spots.empty()) o << "None.\n";
  else o << "| # | where | call | ranks | peers | lost | waits | cause | sizes |\n|---:|---|---|---|---|---:|---:|---|---|\n";
  size_t i = 0;
  for (const auto& h : j.hot_spots) {
    if (i++ >= top) break;
    o << fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", i, markdown_code(h.where.text, true),
                     markdown_escape(h.call), ranks_text(h.ranks), ranks_text(h.peers), dur(h.waited_ns), h.count, h.cause,
                     sizes_text(h.sizes));
  }
  o << "\n### Advice\n\n";
  if (j.advice.empty()) o << "None.\n";
  i = 0;
  for (const auto& a : j.advice) {
    o << fmt::format("{}. **{}**\n", ++i, markdown_escape(a.title));
    for (const auto& line : advice_details(a)) o << "   - " << markdown_escape(line) << "\n";
  }
  if (!j.considered.empty()) {
    o << fmt::format("\n### Considered, not advised\n\nA predicted saving below the model's error ({}) or 1%:\n\n",
                     pct(std::fabs(j.model.error)));
    i = 0;
    for (const auto& a : j.considered) {
      if (i++ >= 3) break;
      o << fmt::format("- {}: {} ({})\n", markdown_escape(a.title), dur(a.predicted_ns), signed_pct(-a.saving));
    }
  }
  if (!j.notes.empty()) {
    o << "\n### Notes\n\n";
    for (const auto& n : j.notes) o << "- " << markdown_escape(n) << "\n";
  }
  return o.str();
}

int run_report(const ReportCommand& c) {
  // --low-memory: the calls kept as packed op streams once read, the trace's ops let go rank by rank
  // (docs/streaming.md): the analysis and every part of the report read them, and give the same report
  Analysis a = analyse(c.dir, c.params, debug_search_dirs(c.debug_dirs), c.speed, c.part, c.low_memory);
  int status = kOk;
  for (const auto& p : a.trace.problems) {
    std::fprintf(stderr, "mpiadvise: %s\n", p.text().c_str());
    if (p.corrupt) status = kProblems;
  }
  ReportOptions options;
  options.top = c.top;
  if (c.compute_factor != 1.0) {
    options.compute_factor = c.compute_factor;
    a.chosen.why += fmt::format("; computation x{:.3g} (--compute-factor)", c.compute_factor);
  }
  options.gate_figures = c.format == "json";  // only JSON holds them (for mpiadvise gate --baseline report.json)
  options.charts = c.format == "json" || c.format == "html";  // the pictures' figures: JSON holds what HTML draws
  const report::Report r = make_report(a, options);
  // names and paths from the job: JSON in the lossless string form, text and Markdown escaped for a terminal
  // JSON is written as it is made: its text, 2 KiB a rank, is never held whole beside the document
  const auto write = [&](std::ostream& out) {
    if (c.format == "json") {
      out << std::setw(2) << json_safe(r) << "\n";  // as dump(2)
      return;
    }
    out << (c.format == "html" ? render_html(r)
            : c.format == "md" ? terminal_text(render_markdown(r, c.top), true)
                               : terminal_text(render_text(r, c.top), true));
  };
  if (c.output.empty() || c.output == "-") {
    write(std::cout);
  } else if (output_process()) {  // spread over processes, one writes
    std::ofstream out(c.output);
    write(out);
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
  add_speed_options(sub, c->speed);
  add_part_option(sub, c->part);
  sub->add_option("--compute-factor", c->compute_factor,
                  "F: replay, and make the what-ifs, with every computation between MPI calls taking F times its "
                  "measured time (another run's computation against this one's sets this run beside it)")
      ->check(factor_check);
  sub->add_flag("--low-memory", c->low_memory,
               "Keep the calls, once read and matched, as compressed op streams in place of the whole trace: the "
               "same report in less memory, a third to a half slower");
  add_debug_dir_option(sub, c->debug_dirs);
  add_threads_option(sub);
  return [c] { return run_report(*c); };
}

}  // namespace mpiadvise::cli

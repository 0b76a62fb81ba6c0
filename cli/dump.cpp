// mpiadvise dump DIR: one line per event (text or JSON Lines) and a summary of the log.
#include <fmt/format.h>

#include <cstdio>
#include <iostream>
#include <optional>

#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "format_units.hpp"
#include "log_reader.hpp"
#include "log_summary.hpp"
#include "text_escape.hpp"

extern "C" {
#include "format.h"
}

namespace mpiadvise::cli {
namespace {

struct DumpOptions {
  std::string dir;
  std::optional<int> rank;
  std::string format = "text";
  bool summary_only = false;
  bool events_only = false;
  std::vector<std::string> debug_dirs;
};

nlohmann::json event_json(const Event& ev) {
  nlohmann::json j;
  j["rank"] = ev.rank;
  j["thread"] = ev.thread;
  j["call"] = ev.call_name;
  j["t_enter_ns"] = ev.t_enter_ns;
  j["t_exit_ns"] = ev.t_exit_ns;
  j["peer"] = ev.has(MPA_F_PEER) ? nlohmann::json(ev.peer) : nlohmann::json(nullptr);
  j["tag"] = ev.has(MPA_F_TAG) ? nlohmann::json(ev.tag) : nlohmann::json(nullptr);
  j["comm"] = ev.has(MPA_F_COMM) ? nlohmann::json(ev.comm) : nlohmann::json(nullptr);
  j["bytes"] = ev.has(MPA_F_BYTES) ? nlohmann::json(ev.bytes) : nlohmann::json(nullptr);
  j["request"] = ev.requests.empty() ? nlohmann::json(nullptr) : nlohmann::json(ev.requests.back());
  j["callsite"] = ev.callsite;
  if (ev.requests.size() > 1 || (ev.has(MPA_F_REQS) && ev.requests.size() != 1)) j["requests"] = ev.requests;
  if (ev.has(MPA_F_PEER2)) j["recv_peer"] = ev.peer2;
  if (ev.has(MPA_F_TAG2)) j["recv_tag"] = ev.tag2;
  if (ev.has(MPA_F_BYTES2)) j["recv_bytes"] = ev.bytes2;
  if (ev.has(MPA_F_STATUS)) {
    auto& arr = j["statuses"] = nlohmann::json::array();
    for (const auto& s : ev.statuses)
      arr.push_back({{"index", s.index}, {"source", s.source}, {"tag", s.tag}, {"bytes", s.bytes}});
  }
  if (ev.has(MPA_F_COUNT)) {
    j["count"] = ev.count;
    j["incall_ns"] = ev.incall_ns;
  }
  if (ev.has(MPA_F_NEWCOMM)) j["newcomm"] = ev.newcomm;
  if (ev.has(MPA_F_PAPI)) j["papi"] = ev.papi;
  if (ev.has(MPA_F_VALUE)) j["value"] = ev.value;
  if (ev.refused()) j["refused"] = true;
  if (ev.unfinished) j["unfinished"] = true;  // in progress when a signal ended the rank
  if (ev.resent) j["resent"] = true;          // the buffer and bytes of the thread's previous send
  return j;
}

std::string rank_text(int32_t r) {
  switch (r) {
    case kAnySource: return "ANY_SOURCE";
    case kProcNull: return "PROC_NULL";
    case kRoot: return "ROOT";
    case kUndefinedRank: return "?";
    default: return std::to_string(r);
  }
}

std::string event_text(const Event& ev, uint64_t t0) {
  std::string s = fmt::format("{:>4} {:>2} {:>14} {:>10}  {:<22}", ev.rank, ev.thread,
                              seconds_text(ev.t_enter_ns - std::min(t0, ev.t_enter_ns)),
                              duration_text(ev.t_exit_ns - ev.t_enter_ns), ev.call_name);
  if (ev.has(MPA_F_PEER)) s += " peer=" + rank_text(ev.peer);
  if (ev.has(MPA_F_TAG)) s += fmt::format(" tag={}", ev.tag == kAnyTag ? std::string("ANY") : std::to_string(ev.tag));
  if (ev.has(MPA_F_COMM)) s += fmt::format(" comm={}", ev.comm);
  if (ev.has(MPA_F_BYTES)) s += fmt::format(" bytes={}", ev.bytes);
  if (ev.has(MPA_F_PEER2)) s += " recv_peer=" + rank_text(ev.peer2);
  if (ev.has(MPA_F_TAG2)) s += fmt::format(" recv_tag={}", ev.tag2);
  if (ev.has(MPA_F_BYTES2)) s += fmt::format(" recv_bytes={}", ev.bytes2);
  if (!ev.requests.empty()) s += fmt::format(" req={}", fmt::join(ev.requests, ","));
  for (const auto& st : ev.statuses)
    s += fmt::format(" [{}: from {} tag {} {} B]", st.index, rank_text(st.source), st.tag, st.bytes);
  if (ev.has(MPA_F_COUNT)) s += fmt::format(" x{} unsuccessful", ev.count);
  if (ev.has(MPA_F_NEWCOMM)) s += fmt::format(" newcomm={}", ev.newcomm);
  if (ev.refused()) s += fmt::format(" refused={}", ev.value);
  else if (ev.has(MPA_F_VALUE)) s += fmt::format(" value={}", ev.value);
  if (ev.has(MPA_F_PAPI)) s += fmt::format(" papi={}", fmt::join(ev.papi, ","));
  if (ev.unfinished) s += " unfinished";
  if (ev.resent) s += " resent";
  s += fmt::format(" site={}", ev.callsite);
  return s;
}

// Names and paths in it come from the job: printed escaped for the terminal.
void print_summary(const JobSummary& s) {
  std::string o;
  size_t complete = 0;
  std::map<std::string, int> hosts;
  for (const auto& r : s.ranks) {
    complete += r.complete;
    hosts[r.hostname]++;
  }
  o += fmt::format("mpiadvise log {}\n", s.dir);
  o += fmt::format("  ranks      {} of {} ({} reached MPI_Finalize) on {} host{}\n", s.ranks.size(), s.world_size,
                   complete == s.ranks.size() ? std::string("all") : std::to_string(complete), hosts.size(),
                   hosts.size() == 1 ? "" : "s");
  o += fmt::format("  MPI        {}\n", s.mpi_library.substr(0, s.mpi_library.find('\n')));
  if (!s.thread_level.empty()) o += fmt::format("  threads    {}\n", s.thread_level);
  if (!s.eager_cvars.empty()) {
    std::vector<std::string> kv;
    for (const auto& [k, v] : s.eager_cvars) kv.push_back(k + "=" + v);
    o += fmt::format("  MPI_T      {}\n", fmt::join(kv, " "));
  }
  o += fmt::format("  events     {} for {} MPI calls over {}\n", s.events, s.calls_total, seconds_text(s.last_ns - s.first_ns));
  o += fmt::format("  log        {} ({:.2f} bytes per call)\n", bytes_text(s.log_bytes),
                   s.calls_total ? static_cast<double>(s.log_bytes) / static_cast<double>(s.calls_total) : 0.0);
  o += fmt::format("\n  {:<28} {:>10} {:>10} {:>12} {:>12} {:>12}\n", "call", "calls", "events", "time in", "bytes sent",
                   "bytes recv");
  for (const auto& [name, t] : s.calls)
    o += fmt::format("  {:<28} {:>10} {:>10} {:>12} {:>12} {:>12}\n", name, t.calls, t.events, duration_text(t.time_ns),
                     t.bytes ? bytes_text(t.bytes) : "", t.bytes2 ? bytes_text(t.bytes2) : "");
  o += fmt::format("\n  call sites, by time inside MPI ({} in all)\n", s.callsites.size());
  o += fmt::format("  {:>4} {:>4} {:<22} {:>9} {:>12}  {}\n", "rank", "site", "call", "calls", "time in", "where");
  size_t shown = 0;
  for (const auto& c : s.callsites) {
    if (++shown > 20) break;
    o += fmt::format("  {:>4} {:>4} {:<22} {:>9} {:>12}  {}\n", c.rank, c.id, c.call, c.calls, duration_text(c.time_ns),
                     c.where.text());
  }
  std::fputs(terminal_text(o, true).c_str(), stdout);
}

nlohmann::json summary_json(const JobSummary& s) {
  nlohmann::json j;
  j["summary"] = s.dir;
  j["world_size"] = s.world_size;
  j["mpi_library"] = s.mpi_library;
  j["thread_level"] = s.thread_level;
  j["eager_cvars"] = s.eager_cvars;
  j["events"] = s.events;
  j["calls"] = s.calls_total;
  j["span_ns"] = s.last_ns - s.first_ns;
  j["log_bytes"] = s.log_bytes;
  auto& ranks = j["ranks"] = nlohmann::json::array();
  for (const auto& r : s.ranks)
    ranks.push_back({{"rank", r.rank}, {"hostname", r.hostname}, {"complete", r.complete}, {"events", r.events},
                     {"file_bytes", r.file_bytes}});
  auto& calls = j["per_call"] = nlohmann::json::object();
  for (const auto& [name, t] : s.calls)
    calls[name] = {{"calls", t.calls}, {"events", t.events}, {"bytes", t.bytes}, {"recv_bytes", t.bytes2},
                   {"time_ns", t.time_ns}};
  auto& sites = j["callsites"] = nlohmann::json::array();
  for (const auto& c : s.callsites)
    sites.push_back({{"rank", c.rank}, {"callsite", c.id}, {"call", c.call}, {"calls", c.calls}, {"time_ns", c.time_ns},
                     {"where", c.where.text()}});
  return j;
}

int run_dump(const DumpOptions& o) {
  const std::vector<std::string> debug_dirs = debug_search_dirs(o.debug_dirs);
  JobLog job(o.dir);
  if (o.rank && !job.rank(*o.rank))
    throw std::runtime_error(fmt::format("{}: no log of rank {} (the job has {} ranks)", o.dir, *o.rank, job.world_size()));
  if (!o.summary_only) {
    uint64_t t0 = UINT64_MAX;
    if (o.format == "text")
      for (const auto& log : job.ranks())
        log->for_each_event([&](const Event& ev) { t0 = std::min(t0, ev.t_enter_ns); });
    for (const auto& log : job.ranks()) {
      if (o.rank && log->rank() != *o.rank) continue;
      log->for_each_event([&](const Event& ev) {
        if (o.format == "jsonl") std::cout << dump_json(event_json(ev)) << '\n';
        else std::cout << terminal_text(event_text(ev, t0)) << '\n';
      });
    }
    std::cout.flush();
  }
  int status = kOk;
  if (!o.events_only) {
    auto summary = summarize(job, o.rank, debug_dirs);
    if (o.format == "text") {
      if (!o.summary_only) fmt::print("\n");
      print_summary(summary);
    } else if (o.summary_only) {
      std::cout << dump_json(summary_json(summary)) << '\n';  // one more line of JSON: the summary
    }
  }
  for (const auto& p : job.problems()) {
    std::fprintf(stderr, "mpiadvise: %s\n", p.text().c_str());
    if (p.corrupt) status = kProblems;
  }
  return status;
}

}  // namespace

std::function<int()> add_dump(CLI::App& app) {
  auto o = std::make_shared<DumpOptions>();
  auto* sub = app.add_subcommand("dump", "Print the events of a log, one per line, and a summary");
  sub->add_option("dir", o->dir, "Job directory of rank-NNNNN.mpa logs (or one log file)")->required();
  sub->add_option("--rank", o->rank, "Only this rank")->check(CLI::NonNegativeNumber);
  sub->add_option("--format", o->format, "text (default) or jsonl: one JSON object per event")
      ->check(CLI::IsMember({"text", "jsonl"}));
  auto* s = sub->add_flag("--summary", o->summary_only, "Only the summary, no events");
  sub->add_flag("--events", o->events_only, "Only the events, no summary")->excludes(s);
  add_debug_dir_option(sub, o->debug_dirs);
  return [o] { return run_dump(*o); };
}

}  // namespace mpiadvise::cli

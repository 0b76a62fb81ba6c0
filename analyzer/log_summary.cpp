#include "log_summary.hpp"

#include <algorithm>
#include <limits>

namespace mpiadvise {

JobSummary summarize(const JobLog& job, std::optional<int> only_rank, const std::vector<std::string>& debug_dirs) {
  JobSummary s;
  s.dir = job.dir().string();
  s.world_size = job.world_size();
  s.first_ns = std::numeric_limits<uint64_t>::max();
  if (!job.ranks().empty()) {
    const nlohmann::json h = job.ranks().front()->header();
    s.mpi_library = h.value("mpi_library", "");
    s.thread_level = h.value("thread_level", "");
    const nlohmann::json cvars = h.value("cvars", nlohmann::json::object());
    for (const auto& [name, value] : cvars.items())
      s.eager_cvars[name] = value.is_string() ? value.get<std::string>() : value.dump();
  }
  auto symbols = std::make_shared<ModuleSymbols>(debug_dirs);  // the ranks' files read once
  for (const auto& log : job.ranks()) {
    if (only_rank && log->rank() != *only_rank) continue;
    RankFacts facts;
    facts.rank = log->rank();
    facts.hostname = log->hostname();
    facts.complete = log->complete();
    facts.file_bytes = log->file_bytes();
    facts.first_ns = std::numeric_limits<uint64_t>::max();
    std::map<uint32_t, std::map<std::string, uint64_t>> site_calls;
    std::map<uint32_t, uint64_t> site_time;
    log->for_each_event([&](const Event& ev) {
      auto& t = s.calls[std::string(ev.call_name)];
      t.events++;
      t.calls += ev.count;
      t.bytes += ev.bytes;
      t.bytes2 += ev.bytes2;
      uint64_t inside = ev.has(MPA_F_INCALL) ? ev.incall_ns : ev.t_exit_ns - ev.t_enter_ns;
      t.time_ns += inside;
      facts.events++;
      s.calls_total += ev.count;
      facts.first_ns = std::min(facts.first_ns, ev.t_enter_ns);
      facts.last_ns = std::max(facts.last_ns, ev.t_exit_ns);
      site_calls[ev.callsite][std::string(ev.call_name)] += ev.count;
      site_time[ev.callsite] += inside;
    });
    if (facts.events == 0) facts.first_ns = 0;
    Symbolizer rank_symbols(log->modules(), symbols);
    for (const auto& [id, calls] : site_calls) {
      CallSiteTotals c;
      c.rank = log->rank();
      c.id = id;
      auto top = std::max_element(calls.begin(), calls.end(), [](auto& a, auto& b) { return a.second < b.second; });
      c.call = top->first;
      for (const auto& [name, n] : calls) c.calls += n;
      c.time_ns = site_time[id];
      auto site = log->callsites().find(id);
      if (site != log->callsites().end() && !site->second.frames.empty())
        c.where = rank_symbols.locate_return_address(site->second.frames.front());
      s.callsites.push_back(std::move(c));
    }
    s.events += facts.events;
    s.log_bytes += facts.file_bytes;
    if (facts.events) {
      s.first_ns = std::min(s.first_ns, facts.first_ns);
      s.last_ns = std::max(s.last_ns, facts.last_ns);
    }
    s.ranks.push_back(facts);
  }
  if (s.events == 0) s.first_ns = 0;
  std::sort(s.callsites.begin(), s.callsites.end(), [](const auto& a, const auto& b) { return a.time_ns > b.time_ns; });
  s.problems = job.problems();
  return s;
}

}  // namespace mpiadvise

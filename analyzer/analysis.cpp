#include "analysis.hpp"

#include <map>

namespace mpiadvise {

SourceLocation Analysis::locate(int rank, uint32_t callsite) const {
  const RankLog* log = job->rank(rank);
  if (!log || rank < 0 || static_cast<size_t>(rank) >= symbols.size() || !symbols[rank]) return {};
  auto it = log->callsites().find(callsite);
  if (it == log->callsites().end() || it->second.frames.empty()) return {};
  return symbols[rank]->locate_return_address(it->second.frames[0]);
}

std::string Analysis::where(int rank, uint32_t callsite) const {
  SourceLocation loc = locate(rank, callsite);
  return loc.module.empty() && loc.file.empty() ? "?" : loc.text();
}

std::set<SiteKey> Analysis::sites_at(const std::string& file, int line) const {
  std::set<SiteKey> keys;
  for (const auto& log : job->ranks()) {
    int r = log->rank();
    if (r < 0 || r >= trace.world_size || !symbols[r]) continue;
    for (const auto& [id, site] : log->callsites()) {
      if (site.frames.empty()) continue;
      auto loc = symbols[r]->locate_return_address(site.frames[0]);
      bool file_ok = loc.file == file || (loc.file.size() > file.size() &&
                                          loc.file.compare(loc.file.size() - file.size(), file.size(), file) == 0 &&
                                          loc.file[loc.file.size() - file.size() - 1] == '/');
      if (file_ok && loc.line == line) {
        auto k = trace.site_keys[r].find(id);
        if (k != trace.site_keys[r].end()) keys.insert(k->second);
      }
    }
  }
  return keys;
}

void group_sites_by_function(Analysis& a) {
  // one lookup per site key: ranks running the same binaries share the answer
  std::map<SiteKey, SiteKey> grouped;
  for (size_t r = 0; r < a.trace.site_keys.size(); r++)
    for (auto& [id, key] : a.trace.site_keys[r]) {
      auto it = grouped.find(key);
      if (it == grouped.end()) {
        SiteKey to = key;
        SourceLocation loc = a.locate(static_cast<int>(r), id);
        if (loc.function_only() && !loc.module.empty()) {
          to.module = loc.module;
          to.offset = loc.function_offset;
          to.function = loc.function;
        }
        it = grouped.emplace(key, to).first;
      }
      key = it->second;
    }
}

Analysis analyse(const std::string& dir, const std::string& params, const std::vector<std::string>& debug_dirs) {
  Analysis a;
  a.dir = dir;
  a.job = std::make_unique<JobLog>(dir);
  a.trace = build_trace(*a.job);
  a.facts = run_facts(*a.job);
  a.chosen = choose_params(a.facts, params, default_params_dir());
  a.waits = find_waits(a.trace, LogGPS(a.chosen.params));
  a.measured = measure_waits(a.trace, a.waits);
  a.symbols.resize(static_cast<size_t>(a.trace.world_size));
  for (const auto& r : a.job->ranks())
    if (r->rank() >= 0 && r->rank() < a.trace.world_size)
      a.symbols[r->rank()] = std::make_unique<Symbolizer>(r->modules(), debug_dirs);
  group_sites_by_function(a);
  return a;
}

}  // namespace mpiadvise

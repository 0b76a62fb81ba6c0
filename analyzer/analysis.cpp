#include "analysis.hpp"

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

Analysis analyse(const std::string& dir, const std::string& params) {
  Analysis a;
  a.dir = dir;
  a.job = std::make_unique<JobLog>(dir);
  a.trace = build_trace(*a.job);
  a.facts = run_facts(*a.job);
  a.chosen = choose_params(a.facts, params, default_params_dir());
  a.measured = measure_waits(a.trace, a.chosen.params.S);
  a.symbols.resize(static_cast<size_t>(a.trace.world_size));
  for (const auto& r : a.job->ranks())
    if (r->rank() >= 0 && r->rank() < a.trace.world_size) a.symbols[r->rank()] = std::make_unique<Symbolizer>(r->modules());
  return a;
}

}  // namespace mpiadvise

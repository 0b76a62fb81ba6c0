#include "request_table.hpp"

#include <algorithm>

namespace mpiadvise {

void RequestTable::add(uint64_t handle, uint16_t thread, const Request& r) {
  auto& entries = live_[handle];
  if (entries.empty() && entries.capacity()) empty_--;  // a kept handle reused
  if (entries.size() >= kMaxPerHandle) {
    entries.erase(entries.begin());
    size_--;
  }
  entries.push_back(Entry{thread, r});
  size_++;
}

std::vector<size_t> RequestTable::preference(const std::vector<Entry>& entries, uint16_t thread) {
  std::vector<size_t> order;
  order.reserve(entries.size());
  for (size_t i = entries.size(); i-- > 0;)
    if (entries[i].thread == thread) order.push_back(i);
  for (size_t i = entries.size(); i-- > 0;)
    if (entries[i].thread != thread) order.push_back(i);
  return order;
}

std::optional<Request> RequestTable::find(uint64_t handle, uint16_t thread) const {
  auto it = live_.find(handle);
  if (it == live_.end() || it->second.empty()) return std::nullopt;
  const auto& entries = it->second;
  for (size_t i = entries.size(); i-- > 0;)
    if (entries[i].thread == thread) return entries[i].request;
  return entries.back().request;
}

void RequestTable::resolve(const std::vector<uint64_t>& handles, uint16_t thread,
                           std::vector<std::optional<Request>>& out) const {
  out.assign(handles.size(), std::nullopt);
  // handles all different (as a rule): each names its newest live request, the thread's own first
  bool distinct = true;
  if (handles.size() <= 16) {
    for (size_t i = 1; i < handles.size() && distinct; i++)
      for (size_t j = 0; j < i && distinct; j++) distinct = handles[i] != handles[j];
  } else {
    std::vector<uint64_t> sorted = handles;
    std::sort(sorted.begin(), sorted.end());
    distinct = std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end();
  }
  if (distinct) {
    for (size_t i = 0; i < handles.size(); i++) out[i] = find(handles[i], thread);
    return;
  }
  std::unordered_map<uint64_t, std::vector<size_t>> occurrences;  // positions of each handle in the call
  for (size_t i = 0; i < handles.size(); i++) occurrences[handles[i]].push_back(i);
  for (const auto& [handle, positions] : occurrences) {
    auto it = live_.find(handle);
    if (it == live_.end()) continue;
    const auto& entries = it->second;
    std::vector<size_t> chosen = preference(entries, thread);
    if (chosen.size() > positions.size()) chosen.resize(positions.size());
    // the chosen requests in the order they were made, to the occurrences in array order
    std::sort(chosen.begin(), chosen.end(),
              [&entries](size_t a, size_t b) { return entries[a].request.id < entries[b].request.id; });
    for (size_t k = 0; k < chosen.size(); k++) out[positions[k]] = entries[chosen[k]].request;
  }
}

void RequestTable::erase(uint64_t handle, uint64_t id) {
  auto it = live_.find(handle);
  if (it == live_.end()) return;
  auto& entries = it->second;
  auto e = std::find_if(entries.begin(), entries.end(), [&](const Entry& x) { return x.request.id == id; });
  if (e == entries.end()) return;
  entries.erase(e);
  size_--;
  if (!entries.empty()) return;
  if (empty_ < kKeptEmpty) empty_++;
  else live_.erase(it);
}

}  // namespace mpiadvise

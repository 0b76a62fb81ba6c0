// One copy of each distinct value, shared by all that hold an equal one. The logs of a run's ranks repeat
// the same tables (the call names of the tracer's build, the members of MPI_COMM_WORLD): held once per
// rank they would grow with the ranks, or with the ranks squared, where held once they do not.
#pragma once

#include <algorithm>
#include <cstddef>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <utility>

namespace mpiadvise {

// The value held once: the copy already held by someone, equal to `value` (T's ==), or `value` itself,
// held from now on for those that intern an equal one while it lives. Thread-safe.
template <class T, class Hash>
std::shared_ptr<const T> interned(T value) {
  static std::mutex lock;
  static std::unordered_multimap<size_t, std::weak_ptr<const T>> held;
  static size_t sweep_at = 64;
  const size_t h = Hash{}(value);
  std::lock_guard guard(lock);
  const auto [first, last] = held.equal_range(h);
  for (auto it = first; it != last; ++it)
    if (auto p = it->second.lock(); p && *p == value) return p;
  if (held.size() >= sweep_at) {  // forget the values no one holds any more
    std::erase_if(held, [](const auto& entry) { return entry.second.expired(); });
    sweep_at = std::max<size_t>(64, 2 * held.size());
  }
  auto p = std::make_shared<const T>(std::move(value));
  held.emplace(h, p);
  return p;
}

}  // namespace mpiadvise

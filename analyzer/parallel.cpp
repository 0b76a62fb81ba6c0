#include "parallel.hpp"
#include "replay_peers.hpp"

#include <sched.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>

namespace mpiadvise {

namespace {

std::atomic<unsigned> g_threads{0};

unsigned cpus() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return static_cast<unsigned>(std::max(1, CPU_COUNT(&set)));
  return std::max(1u, std::thread::hardware_concurrency());
}

}  // namespace

unsigned analysis_threads() {
  // spread over processes, every replay is a collective operation of them: one at a time, in order
  if (ReplayPeers* peers = replay_peers(); peers && peers->size() > 1) return 1;
  const unsigned n = g_threads.load();
  return n ? n : cpus();
}

void set_analysis_threads(unsigned n) { g_threads = n; }

void parallel_for(size_t n, const std::function<void(size_t)>& fn) {
  const size_t workers = std::min<size_t>(analysis_threads(), n);
  if (workers <= 1) {
    for (size_t i = 0; i < n; i++) fn(i);
    return;
  }
  std::atomic<size_t> next{0};
  std::exception_ptr failed;
  std::mutex failed_mutex;
  auto work = [&] {
    for (size_t i; (i = next.fetch_add(1)) < n;) {
      try {
        fn(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(failed_mutex);
        if (!failed) failed = std::current_exception();
        next = n;  // no new index after a failure
      }
    }
  };
  std::vector<std::thread> threads;
  threads.reserve(workers - 1);
  try {
    for (size_t k = 1; k < workers; k++) threads.emplace_back(work);
  } catch (const std::system_error&) {
    // no more threads to be had: the ones started and this one do the work
  }
  work();
  for (auto& t : threads) t.join();
  if (failed) std::rethrow_exception(failed);
}

std::vector<ReplayResult> replay_all(const Trace& trace, const std::vector<ReplayOptions>& options) {
  std::vector<ReplayResult> out(options.size());
  replay_each(trace, options, [&](size_t i, ReplayResult& r) { out[i] = std::move(r); });
  return out;
}

void replay_each(const Trace& trace, const std::vector<ReplayOptions>& options,
                 const std::function<void(size_t, ReplayResult&)>& take) {
  parallel_for(options.size(), [&](size_t i) {
    ReplayResult r = replay(trace, options[i]);
    take(i, r);
  });
}

}  // namespace mpiadvise

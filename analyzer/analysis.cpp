#include "analysis.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <stdexcept>

#include <fmt/format.h>

#include "model_fit.hpp"
#include "parallel.hpp"
#include "replay_peers.hpp"

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

namespace {

// Peak bytes of an analysis per MPI call in the logs, measured with /usr/bin/time on mpiadvise report of
// mpiadvise-synth's logs: 78.2 for a halo of 64 ranks x 1e5 calls (83.8 before the report's timeline kept
// only the calls it shows, 88.9 before the ops of one link held it, 91
// before its waits took 32 bytes, 95-97
// before the trace's ops took 24 bytes, 97 before the trace's messages took 32 bytes, 103 before its links took
// 5 bytes and its waits 40, 106 before its messages took 40 bytes, 115 before the replays held the state of the
// messages in flight only, 134 before the gate's replays made their ops' times as they went, 164 before its
// intervals took their times from the trace, 220 before the ranks' symbolizers shared the module files), 214 for an alltoall of 16 ranks x 1e5 (220, 243, 258
// before). Less than either: only a run that cannot fit is refused.
constexpr double kBytesPerCall = 76;
// And for each replay run beside the first (analysis_threads): its state; mpiadvise report --format json
// of a halo of 64 ranks x 2e4 calls peaked at 132 MiB with one thread and 146 MiB with two, 11-14
// bytes a call more from one run to the next (where the two replays' peaks meet); 4 is below any seen (25
// while each replay held a state for every message, 48 while the gate's replays held their ops' times).
constexpr double kBytesPerCallPerThread = 4;

uint64_t meminfo_available() {
  std::ifstream in("/proc/meminfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("MemAvailable:", 0) == 0) return std::strtoull(line.c_str() + 13, nullptr, 10) * 1024;
  return UINT64_MAX;
}

uint64_t read_u64_file(const char* path) {
  std::ifstream in(path);
  std::string s;
  if (!(in >> s) || s == "max") return UINT64_MAX;
  return std::strtoull(s.c_str(), nullptr, 10);
}

// Memory this process may still take: what the system has available, its cgroup's limit less what the
// cgroup uses, and its address-space limit less its size.
uint64_t memory_available() {
  uint64_t avail = meminfo_available();
  uint64_t limit = read_u64_file("/sys/fs/cgroup/memory.max"), used = read_u64_file("/sys/fs/cgroup/memory.current");
  if (limit != UINT64_MAX && used != UINT64_MAX) avail = std::min(avail, limit > used ? limit - used : 0);
  struct rlimit rl;
  if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
    std::ifstream in("/proc/self/statm");
    uint64_t pages = 0;
    in >> pages;
    const uint64_t size = pages * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
    avail = std::min<uint64_t>(avail, rl.rlim_cur > size ? rl.rlim_cur - size : 0);
  }
  return avail;
}

std::string gib(double bytes) {
  if (bytes < 1024.0 * 1024 * 1024) return fmt::format("{:.0f} MiB", bytes / (1024.0 * 1024));
  return fmt::format("{:.1f} GiB", bytes / (1024.0 * 1024 * 1024));
}

}  // namespace

void check_memory(const JobLog& job, uint64_t until_ns) {
  uint64_t calls = 0;
  for (const auto& r : job.ranks()) calls += until_ns == UINT64_MAX ? r->calls_estimate() : r->calls_estimate(until_ns);
  double need = static_cast<double>(calls) * kBytesPerCall;
  uint64_t avail = memory_available();
  int here = 1;  // processes of the analysis on this node
  if (ReplayPeers* peers = replay_peers(); peers && peers->size() > 1) {
    here = peers->on_node();
    // spread over processes: each holds the whole trace, those of a node share its memory, and all take
    // the same verdict (the most any of them saw available: before the others took theirs)
    need *= here;
    std::vector<uint8_t> mine(sizeof avail);
    std::memcpy(mine.data(), &avail, sizeof avail);
    for (const auto& theirs : peers->allgather(mine)) {
      uint64_t a = 0;
      if (theirs.size() == sizeof a) std::memcpy(&a, theirs.data(), sizeof a);
      avail = avail == UINT64_MAX || a == UINT64_MAX ? UINT64_MAX : std::max(avail, a);
    }
  }
  if (avail == UINT64_MAX) return;
  // replays at once: as many as fit beside the analysis itself
  const unsigned threads = analysis_threads();
  if (threads > 1 && calls > 0 && need <= static_cast<double>(avail)) {
    const double per_thread = static_cast<double>(calls) * kBytesPerCallPerThread;
    const double fit = (static_cast<double>(avail) - need) / per_thread + 1;
    if (fit < threads) {
      const unsigned n = static_cast<unsigned>(std::max(1.0, fit));
      std::fprintf(stderr, "mpiadvise: %s: %u replays at once would need about %s where %s is available: %u at once\n",
                   job.dir().c_str(), threads, gib(need + (threads - 1) * per_thread).c_str(),
                   gib(static_cast<double>(avail)).c_str(), n);
      set_analysis_threads(n);
    }
  }
  if (need <= static_cast<double>(avail)) return;
  // the part of the run that fits: as long a share of the part asked for (the whole run by default) as the
  // memory is of the need, the calls taken as spread evenly over the time
  std::string part;
  if (const auto start = run_start_ns(job)) {
    uint64_t end = 0;
    for (const auto& r : job.ranks()) end = std::max(end, r->last_chunk_ns());
    end = std::min(end, until_ns);
    const double fit_s = end > *start ? static_cast<double>(end - *start) * 1e-9 * static_cast<double>(avail) / need : 0;
    if (fit_s >= 0.001)
      part = fmt::format(", or analyse {} part of it: --until {:.3g} takes about the first {:.3g} s of the run, which fit",
                         until_ns == UINT64_MAX ? "a" : "a shorter", fit_s * 0.9, fit_s * 0.9);
  }
  throw MemoryError(fmt::format(
      "{}: the logs of {} ranks hold {} MPI calls{}, and their analysis needs about {} ({:.0f} bytes a call{}) where "
      "{} is available; analyse them on a machine with that memory{}{}, or trace only the part of the run that "
      "matters (MPI_Pcontrol(0) pauses tracing, MPI_Pcontrol(1) resumes it)",
      job.dir().string(), job.ranks().size(), calls, until_ns == UINT64_MAX ? "" : " in the part asked for (--until)",
      gib(need), kBytesPerCall, here > 1 ? fmt::format(", in each of the {} processes of the analysis on this node", here) : "",
      gib(static_cast<double>(avail)), here > 1 ? " or with fewer processes on it" : "", part));
}

// Spread over processes, every process must have read the same logs (a path that names other files on
// another node, logs still being written): a replay of different traces would not be one.
void check_same_trace(const Trace& t, const std::string& dir) {
  ReplayPeers* peers = replay_peers();
  if (!peers || peers->size() < 2) return;
  std::array<uint64_t, 6> digest{static_cast<uint64_t>(t.world_size), 0, t.messages.size(), t.collectives.size(),
                                 t.links.size(), 0};
  for (const auto& r : t.ranks) {
    digest[1] += r.ops.size();
    for (const auto& op : r.ops) digest[5] += op.t_enter * 31 + op.t_exit();
  }
  std::vector<uint8_t> mine(sizeof digest);
  std::memcpy(mine.data(), digest.data(), sizeof digest);
  const auto all = peers->allgather(mine);
  for (size_t p = 0; p < all.size(); p++)
    if (all[p] != all.front())
      throw std::runtime_error(fmt::format("{}: process {} of the analysis read other logs than process 0 ({} ranks, {} "
                                           "MPI calls here): every process must read the same run's logs",
                                           dir, p, t.world_size, digest[1]));
}

Analysis analyse(const std::string& dir, const std::string& params, const std::vector<std::string>& debug_dirs,
                 const ReplaySpeed& speed, const RunPart& part) {
  Analysis a;
  a.dir = dir;
  a.job = std::make_unique<JobLog>(dir);
  uint64_t until_ns = UINT64_MAX;
  if (part.until_s) {
    if (!(*part.until_s > 0) || *part.until_s > 1e9)
      throw std::invalid_argument(fmt::format("--until {}: not a time in seconds above 0", *part.until_s));
    if (const auto start = run_start_ns(*a.job)) until_ns = *start + static_cast<uint64_t>(*part.until_s * 1e9 + 0.5);
  }
  check_memory(*a.job, until_ns);
  a.trace = build_trace(*a.job, until_ns);
  if (a.trace.cut()) {
    a.until_s = part.until_s;
    for (const auto& r : a.job->ranks()) a.calls_in_logs += r->calls_estimate();
  }
  check_same_trace(a.trace, dir);
  a.facts = run_facts(*a.job);
  a.chosen = choose_params(a.facts, params, default_params_dir());
  a.set_params = a.chosen.params;
  if (const auto probe = message_probe(*a.job)) a.probe = probe_speed(*probe, a.chosen.params, a.trace);
  const bool probe_plausible = a.probe && a.probe->factor >= kProbeFactorMin && a.probe->factor <= kProbeFactorMax;
  if (a.probe && !probe_plausible)
    a.chosen.why += fmt::format("; the run's own round trips between ranks 0 and {} went at x{:.3g} the set's times, "
                                "beyond {} to {}: not a speed of the machine the set was measured on, not applied",
                                a.probe->partner, a.probe->factor, kProbeFactorMin, kProbeFactorMax);
  if (speed.at_set) {
    a.chosen.why += "; at the set's speed (--at-set-speed)";
  } else if (speed.factor) {
    a.chosen.params = a.chosen.params.scaled(*speed.factor);
    for (double& f : a.chosen.params.speeds) f /= *speed.factor;
    a.chosen.why += fmt::format("; its times x{:.3f} (--speed)", *speed.factor);
  } else if (probe_plausible) {
    a.probe_applied = true;
    a.chosen.params = a.chosen.params.scaled(a.probe->factor);
    for (double& f : a.chosen.params.speeds) f /= a.probe->factor;
    std::string sizes;
    for (size_t i = 0; i < a.probe->bytes.size(); i++)
      sizes += fmt::format("{}{} B x{:.2f}", i ? ", " : "", a.probe->bytes[i], a.probe->measured_ns[i] / a.probe->model_ns[i]);
    a.chosen.why += fmt::format("; its times x{:.3f}: the run's own round trips between ranks 0 and {} ({}) against the "
                                "set's",
                                a.probe->factor, a.probe->partner, sizes);
  } else if (const auto speed = run_speed(a.trace, a.facts, a.chosen.params)) {
    a.chosen.params = a.chosen.params.scaled(speed->factor);
    for (double& f : a.chosen.params.speeds) f /= speed->factor;  // now on the scaled set's times
    a.chosen.why += fmt::format(
        "; its times x{:.2f}: the run went at a {} speed of the machine, one its calibration saw (replayed "
        "{:+.1f}% off at the set's, {:+.1f}% at that one)",
        speed->factor, speed->faster ? "faster" : "slower", 100 * speed->error_set, 100 * speed->error_run);
  }
  a.waits = find_waits(a.trace, LogGPS(a.chosen.params));
  a.measured = measure_waits(a.trace, a.waits);
  a.symbols.resize(static_cast<size_t>(a.trace.world_size));
  auto shared = std::make_shared<ModuleSymbols>(debug_dirs);
  for (const auto& r : a.job->ranks())
    if (r->rank() >= 0 && r->rank() < a.trace.world_size)
      a.symbols[r->rank()] = std::make_unique<Symbolizer>(r->modules(), shared);
  group_sites_by_function(a);
  return a;
}

}  // namespace mpiadvise

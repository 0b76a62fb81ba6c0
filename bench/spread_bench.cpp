// The replay spread over MPI processes against the replay alone, side by side in one run (asserts nothing):
//   mpirun -np K spread_bench [ranks] [events per rank]      (defaults 64 and 300000)
//   mpirun -np K spread_bench DIR                             (the logs of a run, e.g. mpiadvise-synth's)
// Every process builds the ring trace of bench/ring_trace.hpp in memory, or reads the logs. Process 0 replays it alone while
// the others wait, then all K replay it spread (analyzer/replay_peers.hpp); each twice, the faster kept.
// Prints both times, the speed-up, the rounds of exchange and updates sent, each process's resident memory
// (the trace is whole in each), and whether the two results are the same.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "log_reader.hpp"
#include "replay_peers.hpp"
#include "ring_trace.hpp"
#include "spread.hpp"

using namespace mpiadvise;

static long status_kib(const char* key) {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind(key, 0) == 0) return std::atol(line.c_str() + std::string(key).size());
  return 0;
}

int main(int argc, char** argv) {
  cli::SpreadSession session(&argc, &argv);  // process 0 alone prints
  int K = 1, me = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &K);
  MPI_Comm_rank(MPI_COMM_WORLD, &me);
  const bool logs = argc > 1 && std::filesystem::is_directory(argv[1]);
  const int P = argc > 1 && !logs ? std::atoi(argv[1]) : 64;
  const long rounds = (argc > 2 ? std::atol(argv[2]) : 300000) / 3;
  const Trace t = logs ? build_trace(JobLog(argv[1])) : bench::ring_trace(P, rounds);
  const long trace_kib = status_kib("VmRSS:");
  double events = 0;
  for (const auto& r : t.ranks) events += static_cast<double>(r.ops.size());
  ReplayOptions o;
  o.params = find_params("openmpi-tcp-loopback", default_params_dir());
  ReplayPeers* peers = replay_peers();
  auto timed = [&](ReplayResult* out) {
    const auto t0 = std::chrono::steady_clock::now();
    *out = replay(t, o);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  };
  ReplayResult alone, spread;
  double alone_s = 1e30, spread_s = 1e30;
  for (int rep = 0; rep < 2; rep++) {
    set_replay_peers(nullptr);
    if (me == 0) alone_s = std::min(alone_s, timed(&alone));
    MPI_Barrier(MPI_COMM_WORLD);
    set_replay_peers(peers);
    MPI_Barrier(MPI_COMM_WORLD);
    spread_s = std::min(spread_s, timed(&spread));
  }
  std::vector<long> hwm(static_cast<size_t>(K));
  long mine = status_kib("VmHWM:");
  MPI_Gather(&mine, 1, MPI_LONG, hwm.data(), 1, MPI_LONG, 0, MPI_COMM_WORLD);
  if (me == 0) {
    const bool same = alone.predicted_ns == spread.predicted_ns && alone.ranks.size() == spread.ranks.size() &&
                      std::equal(alone.ranks.begin(), alone.ranks.end(), spread.ranks.begin(),
                                 [](const RankReplay& a, const RankReplay& b) {
                                   return a.predicted_ns == b.predicted_ns && a.predicted.send_wait == b.predicted.send_wait;
                                 });
    if (logs)
      std::printf("replay spread over %d processes: the logs of %s, %zu ranks, %.0f events\n", K, argv[1], t.ranks.size(), events);
    else
      std::printf("replay spread over %d processes: %d ranks x %ld events = %.0f events (the ring of bench/ring_trace.hpp)\n", K,
                  P, rounds * 3, events);
    std::printf("  alone   %7.2f s  %6.2f M events/s\n", alone_s, events / alone_s / 1e6);
    std::printf("  spread  %7.2f s  %6.2f M events/s   speed-up %.2f [K = %d]   %llu rounds of exchange, %llu updates "
                "(%.1f per round)\n",
                spread_s, events / spread_s / 1e6, alone_s / spread_s, K, static_cast<unsigned long long>(spread.exchange_rounds),
                static_cast<unsigned long long>(spread.exchanged_updates),
                spread.exchange_rounds ? static_cast<double>(spread.exchanged_updates) / spread.exchange_rounds : 0.0);
    std::printf("  memory  the trace %.1f MiB in each process; peak resident by process:", trace_kib / 1024.0);
    for (long h : hwm) std::printf(" %.1f", h / 1024.0);
    std::printf(" MiB\n  result  %s\n", same ? "the same as alone" : "DIFFERS from the replay alone");
  }
  return 0;
}

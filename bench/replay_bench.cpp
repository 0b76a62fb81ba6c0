// Replay throughput: a synthetic trace of RANKS ranks x EVENTS operations each, built in memory (a
// ring exchange: Irecv from the left, Isend to the right, Waitall, computation; every fourth message
// above S so that a quarter are rendezvous), replayed in the simulation and in the paper's mode.
// Prints events per second, memory per million events (the trace's, and the peak of its replays), and what
// the report's advice costs in replays of the trace, with its own peak. Asserts nothing.
//   replay_bench [ranks] [events per rank] [repeats]   (defaults 64, 1000000 and 3)
// Each mode is replayed `repeats` times: the median and the range (a machine shared with other jobs moved
// one simulation of the same trace between 6 and 10 M events/s from one run to the next).
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "advice.hpp"
#include "replay.hpp"
#include "ring_trace.hpp"

using namespace mpiadvise;

static long vm_hwm_kib() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmHWM:", 0) == 0) return std::atol(line.c_str() + 6);
  return 0;
}

static long vm_rss_kib() {
  std::ifstream in("/proc/self/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmRSS:", 0) == 0) return std::atol(line.c_str() + 6);
  return 0;
}

int main(int argc, char** argv) {
  int P = argc > 1 ? std::atoi(argv[1]) : 64;
  long per_rank = argc > 2 ? std::atol(argv[2]) : 1000000;
  const int repeats = std::max(1, argc > 3 ? std::atoi(argv[3]) : 3);
  long rounds = per_rank / 3;  // Irecv, Isend, Waitall
  long before = vm_rss_kib();
  auto t_build = std::chrono::steady_clock::now();
  Trace t = bench::ring_trace(P, rounds);
  double build_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_build).count();
  long trace_kib = vm_rss_kib() - before;
  double events = static_cast<double>(P) * rounds * 3;

  ReplayOptions o;
  o.params = find_params("openmpi-tcp-loopback", default_params_dir());
  std::printf("replay bench: %d ranks x %ld events = %.0f events (a ring of Irecv/Isend/Waitall, 1 in 4 messages above S)\n",
              P, rounds * 3, events);
  std::printf("  trace built in memory in %.1f s: %.1f MiB, %.1f MiB per million events\n", build_s, trace_kib / 1024.0,
              trace_kib / 1024.0 / (events / 1e6));
  double simulate_s = 0;
  uint64_t held = 0, messages = t.messages.size();
  for (auto mode : {ReplayMode::Simulate, ReplayMode::Paper}) {
    o.mode = mode;
    std::vector<double> took;
    double predicted = 0;
    for (int k = 0; k < repeats; k++) {
      auto t0 = std::chrono::steady_clock::now();
      auto r = replay(t, o);
      took.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
      predicted = r.predicted_ns;
      if (mode == ReplayMode::Simulate) held = r.messages_held;
    }
    std::sort(took.begin(), took.end());
    const double s = took[took.size() / 2];
    if (mode == ReplayMode::Simulate) simulate_s = s;
    std::printf("  %-10s %6.2f s   %6.2f M events/s (%.2f..%.2f over %d replays)   [target at least 20 M events/s on one "
                "core; LogGOPSim claims ~1 M]   predicted %.3f s\n",
                mode == ReplayMode::Simulate ? "simulation" : "paper", s, events / s / 1e6, events / took.back() / 1e6,
                events / took.front() / 1e6, repeats, predicted / 1e9);
  }
  const long replay_hwm = vm_hwm_kib();
  std::printf("  peak memory %.1f MiB: %.1f bytes per event, of which the trace %.1f and the replays' state %.1f "
              "[target at most 16; LogGOPSim 33]\n",
              replay_hwm / 1024.0, replay_hwm * 1024.0 / events, trace_kib * 1024.0 / events,
              (replay_hwm - before - trace_kib) * 1024.0 / events);
  std::printf("  the simulation held at most %llu of the %llu messages' states at once (those in flight)\n",
              static_cast<unsigned long long>(held), static_cast<unsigned long long>(messages));
  // the report's advice: wait states, then every what-if it tries (the eager-limit sweep and the
  // candidate sites), in units of one simulation of the trace as measured
  {
    o.mode = ReplayMode::Simulate;
    RunFacts facts;
    facts.library = "Open MPI";
    facts.transport = "tcp";
    facts.eager_setting = "btl_tcp_eager_limit";
    auto seconds_since = [](auto t) { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count(); };
    auto t0 = std::chrono::steady_clock::now();
    WaitStates waits = measure_waits(t, LogGPS(o.params));
    const double waits_s = seconds_since(t0);
    ReplayResult baseline = replay(t, o);
    auto t1 = std::chrono::steady_clock::now();
    auto advice = advise({t, facts, waits, o, baseline, 10});
    const double s = seconds_since(t1);
    std::printf("  report advice %6.2f s   = %.1f simulations [target at most 2]: the S sweep and the what-ifs of %zu "
                "pieces of advice (before them: wait states %.2f s, the replay of the run as it was %.2f s)\n",
                s, s / simulate_s, advice.size(), waits_s, seconds_since(t0) - s - waits_s);
  }
  std::printf("  peak memory with the advice %.1f MiB: %.1f bytes per event (the wait states and the advice's replays "
              "besides the trace)\n",
              vm_hwm_kib() / 1024.0, vm_hwm_kib() * 1024.0 / events);
  return 0;
}

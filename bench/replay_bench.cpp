// Replay throughput: a synthetic trace of RANKS ranks x EVENTS operations each, built in memory (a
// ring exchange: Irecv from the left, Isend to the right, Waitall, computation; every fourth message
// above S so that a quarter are rendezvous), replayed in the simulation and in the paper's mode.
// Prints events per second, memory per million events, and what the report's advice costs in replays of
// the trace. Asserts nothing.
//   replay_bench [ranks] [events per rank]          (defaults 64 and 1000000)
#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

#include "advice.hpp"
#include "replay.hpp"

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
  long rounds = per_rank / 3;  // Irecv, Isend, Waitall
  long before = vm_rss_kib();
  auto t_build = std::chrono::steady_clock::now();
  Trace t;
  t.world_size = P;
  t.ranks.resize(P);
  t.comms.push_back(TraceComm{1, {}});
  t.site_keys.resize(P);
  t.messages.reserve(static_cast<size_t>(P) * rounds);
  t.links.reserve(static_cast<size_t>(P) * rounds * 4);
  for (int r = 0; r < P; r++) t.ranks[r].ops.reserve(static_cast<size_t>(rounds) * 3);
  // message i of round k from rank r to r+1: id = k * P + r
  for (long k = 0; k < rounds; k++)
    for (int r = 0; r < P; r++) {
      Message m;
      m.src = r;
      m.dst = (r + 1) % P;
      m.bytes = (k % 4 == 0) ? 131072 : 1024;
      m.send_op = static_cast<uint32_t>(3 * k + 1);
      m.recv_op = static_cast<uint32_t>(3 * k);
      m.send_done_op = m.recv_done_op = static_cast<uint32_t>(3 * k + 2);
      t.messages.push_back(m);
    }
  for (int r = 0; r < P; r++) {
    auto& ops = t.ranks[r].ops;
    uint64_t now = 1000;
    for (long k = 0; k < rounds; k++) {
      uint32_t in = static_cast<uint32_t>(k * P + (r + P - 1) % P), out = static_cast<uint32_t>(k * P + r);
      auto add = [&](uint32_t call, OpKind kind, std::initializer_list<Link> links, uint64_t gap) {
        Op op;
        op.t_enter = now + gap;
        op.t_exit = op.t_enter + 2000;
        now = op.t_exit;
        op.call = call;
        op.kind = kind;
        op.callsite = kind == OpKind::Completion ? 3 : 1;
        op.first_link = static_cast<uint32_t>(t.links.size());
        op.n_links = static_cast<uint32_t>(links.size());
        for (const auto& l : links) t.links.push_back(l);
        ops.push_back(op);
      };
      add(MPA_CALL_Irecv, OpKind::PostRecv, {Link{Link::PostRecv, in}}, 50000 + (r * 7919 + k * 104729) % 20000);
      add(MPA_CALL_Isend, OpKind::PostSend, {Link{Link::PostSend, out}}, 100);
      add(MPA_CALL_Waitall, OpKind::Completion, {Link{Link::DoneRecv, in}, Link{Link::DoneSend, out}}, 100);
    }
  }
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
  for (auto mode : {ReplayMode::Simulate, ReplayMode::Paper}) {
    o.mode = mode;
    auto t0 = std::chrono::steady_clock::now();
    auto r = replay(t, o);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (mode == ReplayMode::Simulate) simulate_s = s;
    std::printf("  %-10s %6.2f s   %6.2f M events/s   [target > 10 M events/s on one core; LogGOPSim claims ~1 M]"
                "   predicted %.3f s\n",
                mode == ReplayMode::Simulate ? "simulation" : "paper", s, events / s / 1e6, r.predicted_ns / 1e9);
  }
  // the report's advice: wait states, then every what-if it tries (the eager-limit sweep and the
  // candidate sites), in units of one simulation of the trace as measured
  {
    o.mode = ReplayMode::Simulate;
    RunFacts facts;
    facts.library = "Open MPI";
    facts.transport = "tcp";
    facts.eager_setting = "btl_tcp_eager_limit";
    auto t0 = std::chrono::steady_clock::now();
    WaitStates waits = measure_waits(t, LogGPS(o.params));
    ReplayResult baseline = replay(t, o);
    auto advice = advise({t, facts, waits, o, baseline, 10});
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("  report advice %6.2f s   = %.1f simulations (wait states, the S sweep and %zu what-ifs at call sites)\n", s,
                s / simulate_s, advice.size());
  }
  std::printf("  peak memory %.1f MiB: %.1f MiB per million events (trace and replay state)\n", vm_hwm_kib() / 1024.0,
              vm_hwm_kib() / 1024.0 / (events / 1e6));
  return 0;
}

// Replay throughput: a synthetic trace of RANKS ranks x EVENTS operations each, built in memory (a
// ring exchange: Irecv from the left, Isend to the right, Waitall, computation; every fourth message
// above S so that a quarter are rendezvous), replayed in the simulation and in the paper's mode.
// Prints events per second, memory per million events (the trace's, and the peak of its replays), and what
// the report's advice costs in replays of the trace, with its own peak; and the trace's ops as compact op
// streams (analyzer/op_stream.hpp, docs/streaming.md), unpacked and packed: their bytes an op, how fast a cursor reads them,
// the simulation walking each beside the trace's, the wait states found walking them by entry beside the
// trace's (the same waits, held in flight), and the simulation's peak with the trace let go. Asserts nothing.
//   replay_bench [ranks] [events per rank] [repeats]   (defaults 64, 1000000 and 3)
//   replay_bench LOGDIR [- repeats]                     the trace of a traced run's logs in place of the ring
// Each mode is replayed `repeats` times: the median and the range (a machine shared with other jobs moved
// one simulation of the same trace between 6 and 10 M events/s from one run to the next).
#include <malloc.h>
#include <sys/resource.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "advice.hpp"
#include "causes.hpp"
#include "halo.hpp"
#include "message_sides.hpp"
#include "op_stream.hpp"
#include "phases.hpp"
#include "receive_side.hpp"
#include "report.hpp"
#include "replay.hpp"
#include "steady_trace.hpp"
#include "waits.hpp"
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
  // a directory: its logs read and matched (build_trace) in place of the ring
  const bool logs = argc > 1 && std::filesystem::is_directory(argv[1]);
  int P = argc > 1 && !logs ? std::atoi(argv[1]) : 64;
  long per_rank = argc > 2 && !logs ? std::atol(argv[2]) : 1000000;
  const int repeats = std::max(1, argc > 3 ? std::atoi(argv[3]) : 3);
  long rounds = per_rank / 3;  // Irecv, Isend, Waitall
  long before = vm_rss_kib();
  auto t_build = std::chrono::steady_clock::now();
  Trace t = logs ? build_trace(JobLog(argv[1])) : bench::ring_trace(P, rounds);
  double build_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_build).count();
  long trace_kib = vm_rss_kib() - before;
  double events = static_cast<double>(P) * rounds * 3;
  if (logs) {
    P = t.world_size;
    events = 0;
    for (const RankTrace& r : t.ranks) events += static_cast<double>(r.ops.size());
  }

  ReplayOptions o;
  o.params = find_params("openmpi-tcp-loopback", default_params_dir());
  if (logs)
    std::printf("replay bench: the logs of %s, %d ranks, %.0f events\n", argv[1], P, events);
  else
    std::printf("replay bench: %d ranks x %ld events = %.0f events (a ring of Irecv/Isend/Waitall, 1 in 4 messages above S)\n",
                P, rounds * 3, events);
  std::printf("  trace %s in %.1f s: %.1f MiB, %.1f MiB per million events\n", logs ? "read and matched" : "built in memory",
              build_s, trace_kib / 1024.0, trace_kib / 1024.0 / (events / 1e6));
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
  // the ops as compact streams (before the advice, whose peak would hide theirs): bytes an op against the
  // trace's Op and links, encoding once, and reading every rank's stream through a cursor, best of 3
  std::shared_ptr<const std::vector<OpStream>> shared, shared_packed;
  double streams_bytes = 0, packed_bytes = 0;
  {
    auto t0 = std::chrono::steady_clock::now();
    if (!t.receives_together) t.receives_together = receives_together(t);  // as build_trace counts them
    std::vector<OpStream> streams = OpStream::encode_all(t);
    size_t stream_bytes = 0;
    for (const OpStream& s : streams) stream_bytes += s.bytes();
    const size_t instances_bytes = streams.empty() ? 0 : streams.front().instance_table().bytes();  // shared
    stream_bytes += instances_bytes;
    const double encode_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    // every rank's stream read through a cursor, three times: the best time, the ops read and a sum of what
    // they say (that the reads are not optimised away, and that packed and unpacked read the same)
    struct Read {
      double best = 1e300;
      uint64_t ops = 0, sum = 0;
    };
    auto read_all = [](const std::vector<OpStream>& all) {
      Read r;
      for (int k = 0; k < 3; k++) {
        auto t1 = std::chrono::steady_clock::now();
        StreamOp op;
        for (const OpStream& s : all)
          for (OpCursor c(s); c.next(op); r.ops++) r.sum += op.duration + op.links().size();
        r.best = std::min(r.best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count());
      }
      return r;
    };
    const Read unpacked = read_all(streams);
    // packed as the logs are, zstd level 1 in frames of 64 KiB of whole ops (OpStream::pack,
    // docs/streaming.md's step 3), and read back through a cursor unpacking a frame at a time
    auto t2 = std::chrono::steady_clock::now();
    std::vector<OpStream> packed_streams = OpStream::encode_all(t, OpStream::kChunk);
    const double pack_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t2).count();
    size_t packed = instances_bytes;
    for (const OpStream& s : packed_streams) packed += s.bytes();
    const Read unpacking = read_all(packed_streams);
    const double links_bytes = static_cast<double>(t.links.capacity_bytes());
    const double messages_bytes = static_cast<double>(t.messages.capacity() * sizeof(Message));
    const double collectives_bytes = static_cast<double>(t.collectives.capacity_bytes());
    std::printf("  compact op streams %.2f bytes an op with the messages' and collectives' fields (their shared table of "
                "instances %.2f; the trace's ops %.1f, links %.1f, messages %.1f and collectives %.1f) [docs/streaming.md: "
                "6-9]; encoded at %.1f M ops/s, read through a cursor at %.1f M ops/s on one core (best of 3; %s)\n",
                stream_bytes / events, instances_bytes / events, sizeof(Op) * 1.0, links_bytes / events, messages_bytes / events,
                collectives_bytes / events,
                events / encode_s / 1e6, events / unpacked.best / 1e6,
                unpacked.ops == 3 * static_cast<uint64_t>(events) && unpacked.sum ? "every op read" : "OPS MISSING");
    std::printf("  the streams packed (zstd level 1, frames of 64 KiB of whole ops; their table of instances counted) %.2f "
                "bytes an op, encoded and packed at %.1f M ops/s, read through a cursor unpacking them at %.1f M ops/s (best "
                "of 3; %s)\n",
                packed / events, events / pack_s / 1e6, events / unpacking.best / 1e6,
                unpacking.ops == unpacked.ops && unpacking.sum == unpacked.sum ? "every op read" : "OPS MISSING");
    // the simulation walking the streams instead of the trace's ops (ReplayOptions::streams), each way in
    // turn, the median of each: the same prediction, at what speed beside the trace's
    o.mode = ReplayMode::Simulate;
    shared = std::make_shared<const std::vector<OpStream>>(std::move(streams));
    shared_packed = std::make_shared<const std::vector<OpStream>>(std::move(packed_streams));
    streams_bytes = static_cast<double>(stream_bytes);
    packed_bytes = static_cast<double>(packed);
    std::vector<double> from_trace, from_streams, from_packed;
    bool same = true;
    double first = 0;  // the trace's prediction
    for (int k = 0; k < repeats; k++) {
      for (int walk : {0, 1, 2}) {  // the trace's ops, the streams, the streams packed
        o.streams = walk == 0 ? nullptr : walk == 1 ? shared : shared_packed;
        auto t1 = std::chrono::steady_clock::now();
        const ReplayResult r = replay(t, o);
        (walk == 0 ? from_trace : walk == 1 ? from_streams : from_packed)
            .push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count());
        if (walk == 0) first = r.predicted_ns;
        else same = same && r.predicted_ns == first;
      }
    }
    o.streams = nullptr;
    for (auto* v : {&from_trace, &from_streams, &from_packed}) std::sort(v->begin(), v->end());
    const double a = from_trace[from_trace.size() / 2], b = from_streams[from_streams.size() / 2],
                 c = from_packed[from_packed.size() / 2];
    std::printf("  simulation walking the streams %.2f M events/s (%.2f..%.2f), the streams packed %.2f (%.2f..%.2f), from "
                "the trace's ops %.2f (%.2f..%.2f) in the same %d rounds: x%.2f and x%.2f; %s\n",
                events / b / 1e6, events / from_streams.back() / 1e6, events / from_streams.front() / 1e6, events / c / 1e6,
                events / from_packed.back() / 1e6, events / from_packed.front() / 1e6, events / a / 1e6,
                events / from_trace.back() / 1e6, events / from_trace.front() / 1e6, repeats, a / b, a / c,
                same ? "the same prediction" : "PREDICTIONS DIFFER");
    // a cursor's seek to a random op of a random rank's packed stream (OpCursor::seek: one frame
    // unpacked, its ops read on to the one asked), what the causes' searches back and forth will cost
    {
      std::mt19937_64 rng(13);
      constexpr int kSeeks = 2000;
      std::vector<double> each;
      StreamOp op;
      for (int k = 0; k < kSeeks; k++) {
        const OpStream& s = (*shared_packed)[rng() % shared_packed->size()];
        if (s.ops() == 0) continue;
        OpCursor c(s);
        const uint64_t i = rng() % s.ops();
        auto t1 = std::chrono::steady_clock::now();
        c.seek(i);
        c.next(op);
        each.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - t1).count());
      }
      std::sort(each.begin(), each.end());
      if (!each.empty())
        std::printf("  a seek to a random op of a packed stream (and reading it): median %.1f us, 90th percentile %.1f (%zu seeks)\n",
                    each[each.size() / 2] * 1e6, each[each.size() * 9 / 10] * 1e6, each.size());
    }
  }
  // the report's advice: wait states, then every what-if it tries (the eager-limit sweep and the
  // candidate sites), in units of one simulation of the trace as measured
  {
    o.mode = ReplayMode::Simulate;
    RunFacts facts;
    facts.library = "Open MPI";
    facts.transport = "tcp";
    facts.eager_setting = "btl_tcp_eager_limit";
    auto seconds_since = [](auto t) { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count(); };
    {
      // the waits found walking the streams by entry (walk_by_entry), what they need of a message or an
      // instance held only in flight, beside the trace's: the same waits, at what speed, holding how much
      const LogGPS model(o.params);
      std::vector<double> from_trace, from_streams, from_packed;
      bool same = true;
      WaitsHeld held_by, held_packed;
      size_t found = 0;
      for (int k = 0; k < repeats; k++) {
        auto t1 = std::chrono::steady_clock::now();
        const std::vector<Wait> want = find_waits(t, model);
        from_trace.push_back(seconds_since(t1));
        t1 = std::chrono::steady_clock::now();
        const std::vector<Wait> got = find_waits(*shared, model, &held_by);
        from_streams.push_back(seconds_since(t1));
        t1 = std::chrono::steady_clock::now();
        const std::vector<Wait> got_packed = find_waits(*shared_packed, model, &held_packed);
        from_packed.push_back(seconds_since(t1));
        auto key = [](const Wait& w) { return std::make_tuple(static_cast<int>(w.rank), w.op, w.from, w.to, static_cast<int>(w.culprit), w.culprit_op, static_cast<int>(w.size_bits), w.cause); };
        same = same && got.size() == want.size() && got_packed.size() == want.size() &&
               std::equal(want.begin(), want.end(), got.begin(), [&](const Wait& a, const Wait& b) { return key(a) == key(b); }) &&
               std::equal(want.begin(), want.end(), got_packed.begin(), [&](const Wait& a, const Wait& b) { return key(a) == key(b); });
        found = want.size();
      }
      for (auto* v : {&from_trace, &from_streams, &from_packed}) std::sort(v->begin(), v->end());
      const double a = from_trace[from_trace.size() / 2], b = from_streams[from_streams.size() / 2],
                   c = from_packed[from_packed.size() / 2];
      std::printf("  wait states walking the streams by entry %.2f M events/s, packed %.2f, from the trace %.2f (medians of %d "
                  "rounds); %zu waits, %s; held at most %zu messages and %zu collective instances of %zu and %zu "
                  "(packed: %zu and %zu)\n",
                  events / b / 1e6, events / c / 1e6, events / a / 1e6, repeats, found,
                  same ? "the same waits" : "WAITS DIFFER", held_by.messages, held_by.instances, t.messages.size(),
                  t.collectives.size(), held_packed.messages, held_packed.instances);
      // what is made of the waits and the ops beside them: the waits added up by site (their ops' call
      // sites read from the streams, one walk of each rank's) and every computation of the run
      const std::vector<Wait> found_waits = find_waits(t, model);
      std::vector<double> sums_trace, sums_streams, comp_trace, comp_streams, marks_trace, marks_streams, hot_trace,
          hot_streams;
      bool same_sums = true;
      for (int k = 0; k < repeats; k++) {
        auto t1 = std::chrono::steady_clock::now();
        const WaitStates want = measure_waits(t, found_waits);
        sums_trace.push_back(seconds_since(t1));
        t1 = std::chrono::steady_clock::now();
        const WaitStates got = measure_waits(*shared_packed, found_waits);
        sums_streams.push_back(seconds_since(t1));
        t1 = std::chrono::steady_clock::now();
        const auto parts = computations(t);
        comp_trace.push_back(seconds_since(t1));
        t1 = std::chrono::steady_clock::now();
        const auto parts_got = computations(*shared_packed);
        comp_streams.push_back(seconds_since(t1));
        t1 = std::chrono::steady_clock::now();
        const PhaseMarks marks = phase_marks(t);
        marks_trace.push_back(seconds_since(t1));
        t1 = std::chrono::steady_clock::now();
        const PhaseMarks marks_got = phase_marks(*shared_packed);
        marks_streams.push_back(seconds_since(t1));
        t1 = std::chrono::steady_clock::now();
        const std::vector<HotSpot> hot = hot_spots(t, want, 10);
        hot_trace.push_back(seconds_since(t1));
        t1 = std::chrono::steady_clock::now();
        const std::vector<HotSpot> hot_got = hot_spots(t, *shared_packed, got, 10);
        hot_streams.push_back(seconds_since(t1));
        same_sums = same_sums && want.rank_ns == got.rank_ns && want.sites.size() == got.sites.size() &&
                    std::equal(want.sites.begin(), want.sites.end(), got.sites.begin(), [](const auto& x, const auto& y) {
                      return x.first == y.first && x.second.call == y.second.call && x.second.waited_ns == y.second.waited_ns &&
                             x.second.caused_ns == y.second.caused_ns && x.second.count == y.second.count;
                    }) &&
                    parts.size() == parts_got.size() &&
                    std::equal(parts.begin(), parts.end(), parts_got.begin(), [](const auto& x, const auto& y) {
                      return x.where.rank == y.where.rank && x.where.callsite == y.where.callsite && x.ns == y.ns && x.times == y.times;
                    }) &&
                    marks.opens == marks_got.opens && marks.at_entry == marks_got.at_entry && hot.size() == hot_got.size() &&
                    std::equal(hot.begin(), hot.end(), hot_got.begin(), [](const HotSpot& x, const HotSpot& y) {
                      return x.key == y.key && x.waited_ns == y.waited_ns && x.peers == y.peers;
                    });
      }
      auto median = [](std::vector<double>& v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; };
      std::printf("  from the packed streams: the waits by site %.2f M events/s, from the trace %.2f; the run's computations "
                  "%.2f, from the trace %.2f; the phases' marks %.2f, from the trace %.2f; the hot spots %.2f, from the trace %.2f "
                  "(medians of %d rounds); %s\n",
                  events / median(sums_streams) / 1e6, events / median(sums_trace) / 1e6, events / median(comp_streams) / 1e6,
                  events / median(comp_trace) / 1e6, events / median(marks_streams) / 1e6, events / median(marks_trace) / 1e6,
                  events / median(hot_streams) / 1e6, events / median(hot_trace) / 1e6, repeats,
                  same_sums ? "the same sums, computations, marks and hot spots" : "SUMS DIFFER");
      // the gate's figures (gate::run_figures): its measured intervals, and one of its retimed replays (it
      // runs 2 + kNoiseReplays), from the packed streams and from the trace
      std::vector<double> steady_trace, steady_streams, retimed_trace, retimed_streams;
      bool same_gate = true;
      for (int k = 0; k < repeats; k++) {
        auto t1 = std::chrono::steady_clock::now();
        const SteadyIntervals want = steady_intervals(t);
        steady_trace.push_back(seconds_since(t1));
        t1 = std::chrono::steady_clock::now();
        const SteadyIntervals got = steady_intervals(*shared_packed);
        steady_streams.push_back(seconds_since(t1));
        const RetimingDraw draw{RetimingDraw::Noisy, 7, 0.03, 250};
        ReplayOptions r = o;
        r.retiming = std::make_shared<const Retiming>(t, want, draw);
        t1 = std::chrono::steady_clock::now();
        const double on_trace = replay(t, r).predicted_ns;
        retimed_trace.push_back(seconds_since(t1));
        r.streams = shared_packed;
        r.retiming = std::make_shared<const Retiming>(*shared_packed, got, draw);
        t1 = std::chrono::steady_clock::now();
        const double on_streams = replay(t, r).predicted_ns;
        retimed_streams.push_back(seconds_since(t1));
        same_gate = same_gate && want.measured == got.measured && want.replaced == got.replaced &&
                    want.repeated == got.repeated && on_trace == on_streams;
      }
      std::printf("  the gate's figures from the packed streams: its intervals %.2f M events/s, from the trace %.2f; a retimed "
                  "replay %.2f, from the trace %.2f (medians of %d rounds); %s\n",
                  events / median(steady_streams) / 1e6, events / median(steady_trace) / 1e6,
                  events / median(retimed_streams) / 1e6, events / median(retimed_trace) / 1e6, repeats,
                  same_gate ? "the same intervals and prediction" : "GATE FIGURES DIFFER");
      // the causes (the delay costs and the critical path) from the packed streams, their ops read out of
      // order a frame at a time (OpFrames: 2 decoded frames a rank kept), beside the trace's
      std::vector<double> causes_trace, causes_streams;
      bool same_causes = true;
      FramesRead read_costs, read_path;
      size_t n_causes = 0;
      for (int k = 0; k < repeats; k++) {
        auto t1 = std::chrono::steady_clock::now();
        const DelayCosts dw = delay_costs(t, found_waits);
        const CriticalPath pw = critical_path(t, found_waits);
        causes_trace.push_back(seconds_since(t1));
        t1 = std::chrono::steady_clock::now();
        const DelayCosts dg = delay_costs(t, *shared_packed, found_waits, &read_costs);
        const CriticalPath pg = critical_path(*shared_packed, found_waits, &read_path);
        causes_streams.push_back(seconds_since(t1));
        n_causes = dw.causes.size();
        same_causes = same_causes && dw.waiting_ns == dg.waiting_ns && dw.unattributed_ns == dg.unattributed_ns &&
                      std::equal(dw.causes.begin(), dw.causes.end(), dg.causes.begin(), dg.causes.end(), [](const auto& x, const auto& y) {
                        return x.where.rank == y.where.rank && x.where.callsite == y.where.callsite && x.where.call == y.where.call &&
                               x.direct_ns == y.direct_ns && x.indirect_ns == y.indirect_ns;
                      }) &&
                      pw.length_ns == pg.length_ns && pw.computation_ns == pg.computation_ns && pw.mpi_ns == pg.mpi_ns &&
                      pw.last_rank == pg.last_rank && pw.rank_changes == pg.rank_changes &&
                      std::equal(pw.parts.begin(), pw.parts.end(), pg.parts.begin(), pg.parts.end(), [](const auto& x, const auto& y) {
                        return x.where.rank == y.where.rank && x.where.callsite == y.where.callsite && x.where.call == y.where.call &&
                               x.computation == y.computation && x.ns == y.ns && x.times == y.times;
                      });
      }
      std::printf("  the causes from the packed streams (the delay costs and the critical path): %.2f M events/s, from the "
                  "trace %.2f (medians of %d rounds); %zu waits, %zu causes; each frame decoded %.2f times for the delay "
                  "costs, %.2f for the path (%llu frames); the decoded frames kept held %.1f MiB; %s\n",
                  events / median(causes_streams) / 1e6, events / median(causes_trace) / 1e6, repeats, found_waits.size(),
                  n_causes, static_cast<double>(read_costs.decoded) / static_cast<double>(std::max<uint64_t>(read_costs.frames, 1)),
                  static_cast<double>(read_path.decoded) / static_cast<double>(std::max<uint64_t>(read_path.frames, 1)),
                  static_cast<unsigned long long>(read_costs.frames),
                  static_cast<double>(std::max(read_costs.held_bytes, read_path.held_bytes)) / (1 << 20),
                  same_causes ? "the same causes and path" : "CAUSES DIFFER");
      // the halo exchanges from the packed streams, each rank's read alone (the analysis's threads taking
      // ranks in turn, as the trace's reader does), beside the trace's
      std::vector<double> halos_trace, halos_streams;
      bool same_halos = true;
      size_t n_halos = 0;
      for (int k = 0; k < repeats; k++) {
        auto t1 = std::chrono::steady_clock::now();
        const std::vector<HaloExchange> hw = find_halos(t);
        halos_trace.push_back(seconds_since(t1));
        t1 = std::chrono::steady_clock::now();
        const std::vector<HaloExchange> hg = find_halos(t, *shared_packed);
        halos_streams.push_back(seconds_since(t1));
        n_halos = hw.size();
        same_halos = same_halos && std::equal(hw.begin(), hw.end(), hg.begin(), hg.end(), [](const auto& x, const auto& y) {
                       return x.ranks == y.ranks && x.neighbours_min == y.neighbours_min && x.neighbours_max == y.neighbours_max &&
                              x.bytes_max == y.bytes_max && x.exchanges == y.exchanges && x.send_sites == y.send_sites &&
                              x.recv_sites == y.recv_sites;
                     });
      }
      std::printf("  the halo exchanges from the packed streams: %.2f M events/s, from the trace %.2f (medians of %d "
                  "rounds, on the analysis's threads); %zu exchanges; %s\n",
                  events / median(halos_streams) / 1e6, events / median(halos_trace) / 1e6, repeats, n_halos,
                  same_halos ? "the same exchanges" : "HALOS DIFFER");
      // every message at its send's and its receive's posts (MessageSides: the report's messages by size
      // and by site, the advice's sites), each rank's packed stream read alone, beside the trace's
      // messages; their sites of repeated calls (persistent requests' candidates) from each
      std::vector<double> sides_trace, sides_streams;
      bool same_sides = true;
      uint64_t n_sides = 0;
      for (int k = 0; k < repeats; k++) {
        uint64_t bytes_trace = 0, bytes_streams = 0, n = 0;
        auto t1 = std::chrono::steady_clock::now();
        MessageSides(t).each([&](const MessageSide& x) { bytes_trace += x.fields->bytes + x.send; });
        const std::vector<RepeatedCalls> rw = repeated_calls(t);
        sides_trace.push_back(seconds_since(t1));
        t1 = std::chrono::steady_clock::now();
        const MessageSides from(*shared_packed);
        from.each([&](const MessageSide& x) { bytes_streams += x.fields->bytes + x.send, n++; });
        const std::vector<RepeatedCalls> rg = repeated_calls(t, from);
        sides_streams.push_back(seconds_since(t1));
        n_sides = n;
        same_sides = same_sides && bytes_trace == bytes_streams &&
                     std::equal(rw.begin(), rw.end(), rg.begin(), rg.end(), [](const auto& x, const auto& y) {
                       return x.site == y.site && x.members == y.members && x.calls == y.calls && x.identical == y.identical;
                     });
      }
      std::printf("  the messages at their posts from the packed streams (and their sites of repeated calls): %.2f M "
                  "events/s, from the trace %.2f (medians of %d rounds); %llu sides; %s\n",
                  events / median(sides_streams) / 1e6, events / median(sides_trace) / 1e6, repeats,
                  static_cast<unsigned long long>(n_sides), same_sides ? "the same sides and sites" : "SIDES DIFFER");
      // the receive side (receives posted early, the queues of unexpected messages and outstanding sends)
      // from the packed streams walked by entry, each rank's queues folded as the walk goes, beside the
      // trace's (rank by rank, a table of every matched message's id)
      std::vector<double> receive_trace, receive_streams;
      bool same_receive = true;
      ReceiveSideHeld receive_held;
      uint64_t n_receives = 0;
      for (int k = 0; k < repeats; k++) {
        auto t1 = std::chrono::steady_clock::now();
        const ReceiveSide rw = receive_side(t, LogGPS(o.params));
        receive_trace.push_back(seconds_since(t1));
        t1 = std::chrono::steady_clock::now();
        const ReceiveSide rg = receive_side(*shared_packed, LogGPS(o.params), &receive_held);
        receive_streams.push_back(seconds_since(t1));
        n_receives = rw.receives;
        same_receive = same_receive && rw.receives == rg.receives && rw.posted_early == rg.posted_early &&
                       std::equal(rw.ranks.begin(), rw.ranks.end(), rg.ranks.begin(), rg.ranks.end(), [](const auto& x, const auto& y) {
                         return x.unexpected_max == y.unexpected_max && x.unexpected_max_bytes == y.unexpected_max_bytes &&
                                x.unexpected_mean == y.unexpected_mean && x.outstanding_sends_max == y.outstanding_sends_max &&
                                x.unexpected_by_step == y.unexpected_by_step && x.unexpected_peak_ns == y.unexpected_peak_ns;
                       });
      }
      std::printf("  the receive side from the packed streams: %.2f M events/s, from the trace %.2f (medians of %d "
                  "rounds); %llu receives; held at most %zu messages and %zu changes of the queues; %s\n",
                  events / median(receive_streams) / 1e6, events / median(receive_trace) / 1e6, repeats,
                  static_cast<unsigned long long>(n_receives), receive_held.messages, receive_held.changes,
                  same_receive ? "the same receive side" : "RECEIVE SIDE DIFFERS");
    }
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
  // the simulation walking the streams with the trace's ops, links, messages, receives together and
  // collective instances let go: the process's peak during the replay, reset once they are gone
  // (clear_refs), as the first replays' peak above is the process's
  {
    const double predicted = replay(t, o).predicted_ns;
    const double collectives_bytes = static_cast<double>(t.collectives.capacity_bytes());
    t.let_go_calls();
    malloc_trim(0);
    std::ofstream("/proc/self/clear_refs") << "5";
    o.streams = shared;
    const ReplayResult r = replay(t, o);
    const double held = static_cast<double>(vm_hwm_kib()) * 1024.0;
    std::printf("  walking the streams, the trace's ops, links, messages and collectives (%.1f) let go: peak memory %.1f "
                "bytes per event [target at most 16], of which the streams %.1f with their table of instances, the "
                "messages in flight (at most %llu states of 64 bytes) %.2f, the collective instances in flight at most "
                "%llu; %s\n",
                collectives_bytes / events, held / events, streams_bytes / events,
                static_cast<unsigned long long>(r.messages_held), static_cast<double>(r.messages_held) * 64 / events,
                static_cast<unsigned long long>(r.collectives_held),
                r.predicted_ns == predicted ? "the same prediction" : "PREDICTIONS DIFFER");
    // the same, walking the packed streams, the unpacked ones let go
    o.streams = shared_packed;
    shared.reset();
    malloc_trim(0);
    std::ofstream("/proc/self/clear_refs") << "5";
    const ReplayResult p = replay(t, o);
    const double held_packed = static_cast<double>(vm_hwm_kib()) * 1024.0;
    std::printf("  walking the packed streams, the unpacked ones let go too: peak memory %.1f bytes per event [target at "
                "most 16], of which the packed streams %.2f with their table of instances; %s\n",
                held_packed / events, packed_bytes / events,
                p.predicted_ns == predicted ? "the same prediction" : "PREDICTIONS DIFFER");
  }
  if (logs) {
    // the whole report (mpiadvise report's JSON, without charts) from the analysis of the logs, then from
    // its packed op streams with the trace's ops, links, messages and collectives let go: its time and the
    // process's peak while it runs (reset before each), and whether the two are the same
    t = Trace{};
    malloc_trim(0);
    const auto seconds_since = [](std::chrono::steady_clock::time_point from) {
      return std::chrono::duration<double>(std::chrono::steady_clock::now() - from).count();
    };
    Analysis a = analyse(argv[1], "");
    std::ofstream("/proc/self/clear_refs") << "5";
    const long analysed_kib = vm_rss_kib();
    auto t1 = std::chrono::steady_clock::now();
    const std::string want = build_report(a, ReportOptions{}).dump();
    const double trace_s = seconds_since(t1);
    const double trace_mib = vm_hwm_kib() / 1024.0;
    t1 = std::chrono::steady_clock::now();
    // as mpiadvise report --low-memory takes them
    a.streams = std::make_shared<const std::vector<OpStream>>(OpStream::take_all(a.trace));
    const double encode_s = seconds_since(t1);
    malloc_trim(0);
    std::ofstream("/proc/self/clear_refs") << "5";
    const long bare_kib = vm_rss_kib();
    t1 = std::chrono::steady_clock::now();
    const std::string got = build_report(a, ReportOptions{}).dump();
    const double streams_s = seconds_since(t1);
    std::printf("  the whole report: from the trace %.2f s, peak %.0f MiB (the analysis holding %.0f); from the packed "
                "streams %.2f s (x%.2f; encoding them %.2f s before), peak %.0f MiB (the analysis holding %.0f, its "
                "trace's ops let go); %s\n",
                trace_s, trace_mib, analysed_kib / 1024.0, streams_s, streams_s / trace_s, encode_s, vm_hwm_kib() / 1024.0,
                bare_kib / 1024.0, got == want ? "the same report" : "REPORTS DIFFER");
    // what of it still grows with the run: the waits found again for the causes, and the causes' reader
    malloc_trim(0);
    std::ofstream("/proc/self/clear_refs") << "5";
    const long before_waits_kib = vm_rss_kib();
    std::vector<Wait> waits = find_waits(*a.streams, LogGPS(a.chosen.params));
    const double waits_mib = vm_hwm_kib() / 1024.0;
    std::ofstream("/proc/self/clear_refs") << "5";
    const long before_causes_kib = vm_rss_kib();
    {
      const DelayCosts dc = delay_costs(a.trace, *a.streams, waits);
      const CriticalPath cp = critical_path(*a.streams, waits);
    }
    std::printf("  of which the waits from the packed streams (%zu) peak at %.0f MiB, from %.0f before (%.0f bytes a "
                "wait); the causes and the path from them at %.0f MiB, from %.0f\n",
                waits.size(), waits_mib, before_waits_kib / 1024.0,
                (waits_mib * 1024 - static_cast<double>(before_waits_kib)) * 1024 / static_cast<double>(std::max<size_t>(waits.size(), 1)),
                vm_hwm_kib() / 1024.0, before_causes_kib / 1024.0);
  }
  return 0;
}

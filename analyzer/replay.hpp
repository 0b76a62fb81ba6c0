// Replaying a matched trace under LogGPS: the paper's mode (Table 4 over the recorded call times, section
// 4.3) and a discrete-event simulation in which the call times are simulated too (what a what-if needs).
#pragma once

#include <cstdint>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "loggps.hpp"
#include "phases.hpp"
#include "trace.hpp"

namespace mpiadvise {


class Retiming;  // steady_trace.hpp
class OpStream;  // op_stream.hpp
class ReplayPeers;  // replay_peers.hpp

enum class ReplayMode { Simulate, Paper };
enum class ModelKind { LogGPS, LogGP };

struct ReplayOptions {
  LogGPSParams params;
  ReplayMode mode = ReplayMode::Simulate;
  ModelKind model = ModelKind::LogGPS;
  double compute_factor = 1.0;  // computation gaps are multiplied by it (0.5: twice as fast)
  // ... only those of these ranks and those before a call at these sites (empty: every rank, every site)
  std::set<int> compute_ranks;
  std::set<SiteKey> compute_sites;
  // program transformations (simulation mode), by call site
  std::set<SiteKey> split_sites;        // messages above S sent as chunks of at most S
  std::set<SiteKey> nonblocking_sites;  // a blocking send made an Isend completed at the next MPI call
  // a blocking receive made an Irecv into a second buffer, posted as soon as the previous receive at
  // the same call site completed (the first one stays where it is), and waited for where it was
  std::set<SiteKey> prepost_sites;
  // point-to-point calls made on persistent requests: each costs params.persistent_saving less
  std::set<SiteKey> persistent_sites;
  bool split_everywhere = false;
  bool nonblocking_everywhere = false;
  bool prepost_everywhere = false;
  // The MPI library the run used ("Open MPI", "MPICH", as RunFacts names it): its algorithms replay the
  // collectives (analyzer/collectives.hpp). Empty: the parameter set's library.
  std::string mpi_library;
  // MPICH built with ch4's POSIX shared-memory module (RunFacts::mpich_shm_collectives, replay_library)
  bool mpich_shm_collectives = true;
  // The phases of the run (analyzer/phases.hpp): the replay records the simulated time at which each
  // opens on each rank (ReplayResult::marks). Null: none.
  std::shared_ptr<const PhaseMarks> marks;
  // Simulation mode: record when each op was entered and left in the simulation (ReplayResult::spans),
  // for a predicted timeline (mpiadvise export --predicted, the report's timeline).
  bool record_spans = false;
  // ... of the first span_ops[r] ops of each rank r (none of a rank past its end), where a timeline shows
  // a few: 16 bytes an op where every op is recorded. Empty: every op of every rank.
  std::vector<uint32_t> span_ops;
  // Simulation mode: the ops' times to replay instead of the measured ones, made as the replay reaches
  // each op (the gate's retimed runs, analyzer/steady_trace.hpp: nothing held for each op, where a retimed
  // copy of the trace took 32 bytes an op, and the times alone 16). Null: as measured.
  std::shared_ptr<const Retiming> retiming;
  // Simulation mode: each rank's ops read in order from its op stream (analyzer/op_stream.hpp,
  // OpStream::encode of this trace, one a rank) instead of from Trace::ranks[r].ops; the results are the
  // same. The walk touches no rank's ops or links in the trace, nor its messages (Trace::messages: each
  // message's fields travel in the stream of the op that posted it, with what the replay asks of its other
  // side, and the simulation holds them only while the message is in flight): a trace may let them go,
  // a retimed replay's too where its retiming reads these streams (Retiming's constructor of streams).
  // Null: the trace's ops.
  std::shared_ptr<const std::vector<OpStream>> streams;
  // Simulation mode: the processes this replay is spread over, this process's part of them; null: the
  // process's (replay_peers(), set by the command under a launcher), none alone. Every process replays the
  // same trace under the same options but these.
  ReplayPeers* peers = nullptr;
  // Simulation mode: the most steps the collectives' schedules kept for reuse may hold (the replay
  // builds a schedule again once emptied; the results are the same). 0: twice max_schedule_steps of the
  // trace's world: 2^23 steps (256 MiB), 8 x ranks^2 past 1024 ranks, 2^26 (2 GiB) at most.
  size_t schedule_cache_steps = 0;
};

// Time split by cause, ns. The parts add up to the total.
struct Breakdown {
  double computation = 0, send_overhead = 0, recv_overhead = 0, send_wait = 0, recv_wait = 0,
         synchronisation = 0, collectives = 0, other = 0;
  double total() const {
    return computation + send_overhead + recv_overhead + send_wait + recv_wait + synchronisation + collectives + other;
  }
  Breakdown& operator+=(const Breakdown& b);
};

struct RankReplay {
  int rank = 0;
  double predicted_ns = 0, measured_ns = 0;
  Breakdown predicted;
};

struct SiteReplay {
  int rank = 0;
  uint32_t callsite = 0;
  uint32_t call = 0;  // the MPI call made there (the first seen)
  uint64_t calls = 0;
  Breakdown predicted;  // of the MPI calls made there (computation is zero)
};

struct ReplayResult {
  ReplayMode mode = ReplayMode::Simulate;
  ModelKind model = ModelKind::LogGPS;
  LogGPSParams params;
  double measured_ns = 0, predicted_ns = 0;
  std::vector<RankReplay> ranks;
  std::vector<SiteReplay> sites;   // by (rank, callsite)
  uint64_t rendezvous_messages = 0, rendezvous_bytes = 0, split_messages = 0;
  uint64_t unresolved_ops = 0;     // replayed with their measured time (a partner missing from the logs)
  // Collective instances (simulation mode): replayed step by step as the library's algorithm runs them,
  // of which approximately (the log lacked what the algorithm needs), and by the closed formulas (the
  // fallback where no algorithm could be followed: another library, missing members, an intercommunicator).
  uint64_t collectives_by_algorithm = 0, collectives_approximate = 0, collectives_closed_formula = 0;
  uint64_t collective_messages = 0, collective_rendezvous_messages = 0;  // the algorithms' steps
  std::map<std::string, uint64_t> collective_algorithms;      // algorithm -> instances
  std::map<std::string, uint64_t> collective_approximations;  // why approximate -> instances
  // Where the simulation could not go on: every unfinished rank parked in a call that waits for what no
  // other rank will provide before it (a partner missing from the logs; under S = 0, a program that only
  // ran because its MPI library buffered a send, analyzer/buffering.hpp). Each time the earliest rank
  // is released with its measured time.
  struct Stall {
    struct Parked {
      int rank = 0;
      uint32_t op = 0;  // the op it was in (Trace::ranks[rank].ops)
      double at_ns = 0;  // its simulated time
    };
    std::vector<Parked> ranks;
    int released = -1;
  };
  std::vector<Stall> stalls;
  // Simulation mode: by rank, the simulated time at which each phase of ReplayOptions::marks opened
  std::vector<std::vector<double>> marks;
  // With ReplayOptions::record_spans: by rank and op (Trace::ranks[r].ops; the first span_ops[r] where
  // given), the simulated entry and exit, ns after origin_ns; NaN for the ops outside the replay window
  // (MPI_Init, MPI_Finalize and after).
  struct Span {
    double enter = std::numeric_limits<double>::quiet_NaN(), exit = std::numeric_limits<double>::quiet_NaN();
  };
  std::vector<std::vector<Span>> spans;
  uint64_t origin_ns = 0;  // the simulation's time 0 on the measured clock: the earliest window's start
  // the processes the simulation was spread over (analyzer/replay_peers.hpp), each stepping a share of the
  // ranks: 1 when it ran in one process (and in paper mode, which every process computes whole)
  int processes = 1;
  // spread: the rounds in which the processes exchanged, and the updates they sent each other in all
  uint64_t exchange_rounds = 0, exchanged_updates = 0;
  // Simulation mode: the most messages whose state the simulation held at once (in one process, spread):
  // those in flight, from the first call asking about one until both its sides are done and the receiver
  // took it from its eager buffer. Each of the trace's messages costs the simulation 8 bytes besides.
  uint64_t messages_held = 0;
  // Simulation mode: the most collective instances whose state the simulation held at once (in one
  // process, spread): from the first word of one until each of its members here took its completion.
  // Each of the trace's instances costs the simulation 4 bytes besides.
  uint64_t collectives_held = 0;
  // Simulation mode: the most steps the collectives' cached schedules held at once (32 bytes each, and
  // their pairings 4 to 8 more), and how often the caches were emptied to stay within
  // ReplayOptions::schedule_cache_steps (in one process, spread)
  uint64_t schedule_steps_held = 0, schedule_cache_clears = 0;
  double error() const { return measured_ns > 0 ? (predicted_ns - measured_ns) / measured_ns : 0; }
};

ReplayResult replay(const Trace& trace, const ReplayOptions& options);

}  // namespace mpiadvise

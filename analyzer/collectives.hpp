// Collectives as the MPI library runs them: for one collective call, the point-to-point steps of the
// algorithm the library selects for that communicator size and message size, rank by rank, in the order
// the library performs them. The replay prices each step as a message under the model (eager or
// rendezvous against S), so that what-ifs on S, splitting and L reach collectives and a late member
// delays only the ranks the algorithm makes wait for it.
//
// Mirrored (each algorithm says which source file and function it follows):
//   Open MPI 4.1  blocking: coll/tuned's fixed decision rules (ompi/mca/coll/tuned/coll_tuned_decision_fixed.c)
//                 over the algorithms of ompi/mca/coll/base/coll_base_*.c, and coll/basic for the calls tuned
//                 leaves to it (Gatherv, Scatterv, Scan, Exscan, Alltoallw); non-blocking: coll/libnbc
//                 (ompi/mca/coll/libnbc/nbc_i*.c).
//   MPICH 4.0     ch4's composition selection (maint/tuning/coll/ch4/generic.json, src/mpid/ch4/src/
//                 ch4_coll_impl.h) over the MPIR algorithms of src/mpi/coll/*/ chosen by
//                 maint/tuning/coll/mpir/generic.json.
// The neighbourhood collectives are not in the logs (the tracer does not intercept them).
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "trace.hpp"

namespace mpiadvise {

enum class MpiLibrary : uint8_t { OpenMPI, MPICH, Other };

// "Open MPI" and "MPICH" (as RunFacts and the parameter files name them); anything else is Other.
MpiLibrary mpi_library(const std::string& name);
const char* library_name(MpiLibrary library);

// One step of one rank's part of a collective.
struct CollStep {
  enum Kind : uint8_t {
    Send,    // blocking send to peer
    Recv,    // blocking receive from peer
    Isend,   // non-blocking send: a request, completed by a later Wait
    Irecv,   // non-blocking receive
    Wait,    // waits for this rank's requests [first_request, first_request + requests)
    Reduce,  // local reduction of `bytes`
    // MPICH's POSIX release/gather collectives synchronise through per-rank counters in shared memory
    // (flags) instead of messages, and a counter may lag the rank waiting on it by a few calls:
    FlagSet,   // this rank's counter of `stream` goes up by one, now
    FlagWait,  // waits until peer's counter of `stream` is at least this rank's own plus one, less `lag`
  };
  Kind kind = Send;
  bool synchronous = false;  // a synchronous send: waits for the receive whatever its size
  uint16_t round = 0;        // the algorithm's round (phase) the step belongs to, counted from 0
  int32_t peer = -1;         // position in the communicator (Send, Recv, Isend, Irecv)
  uint64_t bytes = 0;        // message bytes (as the sender sends them), or bytes reduced
  uint32_t first_request = 0, requests = 0;  // Wait: requests numbered per rank in Isend/Irecv order
  uint8_t stream = 0, lag = 0;               // FlagSet, FlagWait: which counter (a FlagStream), how far behind
  bool operator==(const CollStep&) const = default;
};

// The counters of MPICH's release/gather framework (release_gather.h): one per rank and communicator each,
// counting the release and the gather steps of every Bcast, Reduce, Allreduce and Barrier on it.
enum FlagStream : uint8_t { kReleaseFlag = 0, kGatherFlag = 1 };

// What the schedule of one collective call depends on, as the log records it.
struct CollectiveCall {
  MpiLibrary library = MpiLibrary::OpenMPI;
  uint32_t call = 0;    // mpa_call_id, blocking or I- form
  int size = 0;         // communicator size
  int root = -1;        // position of the root in the communicator, or -1
  // The size the library's decision rules read:
  //   Bcast, Reduce, Allreduce, Scan, Exscan: the whole buffer;
  //   Gather, Scatter, Allgather: one rank's block; Alltoall: the block for one peer;
  //   Reduce_scatter_block: one rank's block.
  uint64_t bytes = 0;
  // Gatherv, Scatterv, Allgatherv: each rank's block; Reduce_scatter: each rank's part of the result;
  // Alltoallv, Alltoallw: what each rank sends in all. By position; empty when not known.
  std::vector<uint64_t> rank_bytes;
  // Alltoallv, Alltoallw: peer_bytes[i][j], what position i sends to position j; empty when not known
  // (then each rank's total is spread evenly over the peers, and the schedule says so).
  std::vector<std::vector<uint64_t>> peer_bytes;
  // Host of each position (any numbering), for MPICH's node-aware compositions; empty: one host.
  std::vector<int> host;
  // MPI_IN_PLACE (at the root of Reduce, Gather(v), Scatter(v); everywhere for the others): the libraries
  // run other algorithms for Alltoall(v,w), and libnbc for Iallreduce.
  bool in_place = false;
  // MPICH: the Bcast, Reduce, Allreduce and Barrier calls that reached its POSIX collectives on this
  // communicator before this one; they run release/gather from the MPIR_CVAR_POSIX_NUM_COLLS_THRESHOLD-th
  // (5th) on, point-to-point algorithms before. The replay counts them; the default is "long past".
  uint32_t node_calls_before = UINT32_MAX;
  static constexpr uint32_t kNodeCallsFallingBack = 4;  // from this many on, every call runs alike
  // MPICH: built with ch4's POSIX shared-memory module (RunFacts::mpich_shm_collectives)
  bool mpich_shm = true;
};

struct CollSchedule {
  std::string algorithm;      // the library's algorithm and the source function it mirrors
  std::string approximation;  // why it only approximates what the library did; empty when it does not
  std::vector<std::vector<CollStep>> ranks;  // by position in the communicator
  uint32_t node_calls = 0;  // MPICH: calls it made to the POSIX collectives (see node_calls_before)
};

// The most steps a schedule of `size` ranks holds, over all its ranks (32 bytes each): 2^22 (128 MiB), or
// 4 x size^2 where that is more, since the all-to-all algorithms take about 3 x size^2 steps at any buffer;
// never more than 2^25 (1 GiB), which those reach at 3344 ranks (10,000 ranks would take 9.6 GB for one
// Alltoall). A buffer of many GiB cut in the algorithm's segments, or an all-to-all of more ranks, is
// replayed by the closed formulas.
inline constexpr size_t kMaxScheduleSteps = size_t{1} << 22;
inline constexpr size_t kMostScheduleSteps = size_t{1} << 25;
inline size_t max_schedule_steps(int size) {
  const size_t p = size > 0 ? static_cast<size_t>(size) : 0;
  return std::min(kMostScheduleSteps, std::max(kMaxScheduleSteps, 4 * p * p));
}

// The schedule of the library's default algorithm, or nullopt where there is none to follow: another
// library, an intercommunicator, more than max_schedule_steps steps, or counts whose sends and receives
// do not pair (an MPI_IN_PLACE Alltoallv where a rank logged a count for a peer that logged none for it:
// the run, whose MPI would have waited for ever, did not do that; a damaged log). The replay then uses
// its closed formulas, reported as the fallback with why_not (where given) saying why.
// Every send of the schedule has its receive: the k-th send from a to b meets the k-th receive at b
// from a, and a receive's bytes are those of its send.
std::optional<CollSchedule> collective_schedule(const CollectiveCall& call, std::string* why_not = nullptr);

// One collective instance of a log as the schedule needs it.
struct LoggedCollective {
  CollectiveCall call;
  std::vector<int> member_position;  // by member (CollectiveInstance::members): its position in the comm
  std::string approximation;         // what the log did not say, where it matters; empty when it said all
};

// A communicator's members as its collectives place them: each member's position, found by its world
// rank, and the host of each position (numbered in their order). The same for every instance on it: a
// replay makes it once (for a communicator of P ranks, made at each instance it cost a map of P entries
// and P hostnames looked up).
struct CommLayout {
  std::vector<std::pair<int, int>> by_rank;  // (world rank, position), in rank order
  std::vector<int> host;                     // by position
  // the positions by world rank from dense_from, where the members' ranks are about as many as the ranks
  // between the least and the greatest (a world, a split of it into blocks): each instance of a
  // communicator's collective asks every member's place, which by_rank's bisection made 5% of a report
  // of an allreduce on 1024 ranks
  std::vector<int> dense;
  int dense_from = 0;
  // a world rank's position in the communicator; -1 where it is not a member
  int position(int rank) const {
    if (!dense.empty()) {
      const int64_t k = static_cast<int64_t>(rank) - dense_from;
      return k >= 0 && k < static_cast<int64_t>(dense.size()) ? dense[static_cast<size_t>(k)] : -1;
    }
    return position_by_bisection(rank);
  }
  int position_by_bisection(int rank) const;
};
CommLayout comm_layout(const Trace& trace, uint32_t comm);

// nullopt when the instance's members are not its whole communicator (a rank's log missing, an
// intercommunicator) or its root is not one of them. layout: its communicator's (comm_layout), made here
// where none is given.
std::optional<LoggedCollective> logged_collective(const Trace& trace, uint32_t instance, MpiLibrary library,
                                                  const CommLayout* layout = nullptr);
// the same of an instance given apart (the op streams', which the trace need not hold): the trace gives
// the communicators and the ranks' hosts
std::optional<LoggedCollective> logged_collective(const Trace& trace, const CollectiveInstance& instance,
                                                  MpiLibrary library, const CommLayout* layout = nullptr);

// One rank's steps as text, e.g. "irecv 1 8; send 1 8; wait 0+1; reduce 8", a new round starting with
// "| ": what the tests compare against hand-computed schedules.
std::string describe_steps(const std::vector<CollStep>& steps);

// The element size the byte count most likely holds (8, 4, 2 or 1: the largest that divides it): the log
// has bytes, and an algorithm that splits a vector splits it between elements.
uint64_t likely_element_bytes(uint64_t bytes);

}  // namespace mpiadvise

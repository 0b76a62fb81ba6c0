// The replay spread over processes: `mpirun -np K mpiadvise replay|whatif|report ...`. Every process reads
// the same logs and runs the same analysis; each simulation (analyzer/replay.hpp, simulation mode) steps
// only the ranks this process owns, a contiguous block of them, and tells the others what its ranks made
// known that theirs may wait for: a message's send or receive posted, an eager message's start (computed
// where its receiver is), a collective member's arrival, a step of a collective's algorithm posted, an
// MPICH release/gather flag raised. It is a conservative parallel discrete-event simulation without
// rollback: a rank goes on only once every time its next op needs is known, so no process runs ahead of
// what it may compute, and the result is the serial one bit for bit (the model's equations are causal;
// the order in which ranks run does not change them). The processes exchange in rounds; a round in which
// no process had anything to tell ends the simulation or, with ranks still parked, releases the earliest
// of them as the serial replay does. docs/parallel-replay.md says how this scales.
//
// The transport is MPI, in the command built against each MPI (cli/mpi_peers.cpp); the analyzer itself
// links no MPI and sees only this interface.
#pragma once

#include <cstdint>
#include <cstring>
#include <vector>

namespace mpiadvise {

// One thing a process's ranks made known, for another process (24 bytes).
struct PeerUpdate {
  enum Kind : uint8_t {
    SendPosted,      // id: message; t: its send posted (ts); a, b: its sender and receiver; flag: kSplit and
                     // its fields' flags below
    SendBytes,       // walking op streams, just before its SendPosted: id: message; bytes(); a: the receives
                     // completing together with it (the receiver's process reads only its own ranks' streams)
    RecvPosted,      // id: message; t: its receive posted (tr)
    EagerStart,      // id: message; t: when the eager send started (the receiver's process computes it)
    CollArrived,     // id: collective instance; a: the member's index; b: its members; t: its arrival (closed formula)
    CollSendPosted,  // id: instance; a, b: the sending position and step; t: posted
    CollRecvPosted,  // id: instance; a, b: the sending position and step of the message received; t: posted
    FlagRaised,      // id: communicator; a: position; flag: stream; t: raised
  };
  Kind kind = SendPosted;
  uint8_t flag = 0;
  uint8_t unused[2] = {};  // every byte set: they travel as they are
  uint32_t id = 0, a = 0, b = 0;
  double t = 0;
  // SendPosted's flags
  static constexpr uint8_t kSplit = 1, kSynchronous = 2, kCached = 4, kAnswered = 8;  // kAnswered: it has a receive
  // SendBytes: the message's bytes, in t's room
  uint64_t bytes() const {
    uint64_t n;
    std::memcpy(&n, &t, sizeof n);
    return n;
  }
  void set_bytes(uint64_t n) { std::memcpy(&t, &n, sizeof n); }
};

class ReplayPeers {
 public:
  virtual ~ReplayPeers() = default;
  virtual int size() const = 0;   // processes
  virtual int index() const = 0;  // this one, 0 .. size() - 1
  // Sends out[p] to process p (and clears out), appends what the others sent this one to `in`; returns how
  // many updates all processes sent together in this round (the same figure on every process).
  virtual uint64_t exchange(std::vector<std::vector<PeerUpdate>>& out, std::vector<PeerUpdate>& in) = 0;
  // Every process's bytes, in process order (the same on every process).
  virtual std::vector<std::vector<uint8_t>> allgather(const std::vector<uint8_t>& mine) = 0;
  // The processes on this one's node (each holds the whole trace: the memory the analysis needs there).
  virtual int on_node() const = 0;
};
static_assert(sizeof(PeerUpdate) == 24);

// The process's peers while the analysis runs spread over processes; null (the default): every replay
// runs here alone. Set once, before any replay, by the command built against an MPI.
void set_replay_peers(ReplayPeers* peers);
ReplayPeers* replay_peers();

// The process owning a rank: ranks split into `processes` contiguous blocks, the first ones one larger.
inline int replay_owner(int rank, int ranks, int processes) {
  const int base = ranks / processes, extra = ranks % processes;
  const int big = extra * (base + 1);
  return rank < big ? rank / (base + 1) : extra + (base ? (rank - big) / base : 0);
}

}  // namespace mpiadvise

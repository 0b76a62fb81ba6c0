// Writing a collective's schedule the way the library's C code runs on each rank (internal to
// collectives*.cpp): an algorithm is a loop over ranks whose body follows the library's function for one
// rank, calling send/recv/isend/irecv/wait/reduce where the library calls the PML (Open MPI) or MPIC
// (MPICH).
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "collectives.hpp"

namespace mpiadvise::coll {

// Thrown by Builder::add past max_schedule_steps; collective_schedule answers nullopt.
struct TooManySteps {};

// A size x size matrix of bytes, value in each: an all-to-all's counts, from and to each rank. The
// algorithms that read one exchange with each peer, two steps a pair or more, but for those that skip
// zero counts; one past max_schedule_steps is refused before it is made (100,000 ranks: 80 GB), zeros
// too (an Alltoallv of a log before format 3, of fewer bytes a rank than ranks, at 5793 ranks or more).
inline std::vector<std::vector<uint64_t>> square(int size, uint64_t value) {
  const uint64_t p = size > 0 ? static_cast<uint64_t>(size) : 0;
  if (p * p > max_schedule_steps(size)) throw TooManySteps{};
  return std::vector<std::vector<uint64_t>>(p, std::vector<uint64_t>(p, value));
}

// The programs of every rank of the collective's communicator, under construction.
class Builder {
 public:
  explicit Builder(int size) : ranks_(static_cast<size_t>(size)), requests_(static_cast<size_t>(size), 0),
                               round_(static_cast<size_t>(size), 0), max_steps_(max_schedule_steps(size)) {}
  int size() const { return static_cast<int>(ranks_.size()); }
  // An algorithm about to add at least `steps` (every pair of ranks exchanging: size x (size - 1)) stops
  // here where that is past the bound, before it has taken the memory and time of building up to it
  void expect(uint64_t steps) const {
    if (steps > max_steps_) throw TooManySteps{};
  }
  // ... every rank of a group of n (the communicator, or a part: a node's ranks) with every other
  void expect_pairs(int n) const {
    const uint64_t p = static_cast<uint64_t>(std::max(n, 0));
    expect(p * (p > 0 ? p - 1 : 0));
  }
  // ... every one of n ranks taking `each` steps or more (a pipeline's cells or fragments)
  void expect_each(int n, uint64_t each) const {
    const uint64_t p = static_cast<uint64_t>(std::max(n, 0));
    if (p && each > max_steps_ / p) throw TooManySteps{};
    expect(p * each);
  }
  void add(int pos, CollStep step) {
    if (++steps_ > max_steps_) throw TooManySteps{};
    step.round = round_[pos];
    ranks_[pos].push_back(step);
  }
  uint32_t new_request(int pos) { return requests_[pos]++; }
  uint32_t requests(int pos) const { return requests_[pos]; }
  void next_round(int pos) { round_[pos]++; }
  std::vector<std::vector<CollStep>> take() { return std::move(ranks_); }

 private:
  std::vector<std::vector<CollStep>> ranks_;
  std::vector<uint32_t> requests_;
  std::vector<uint16_t> round_;
  size_t steps_ = 0, max_steps_;
};

// The communicator an algorithm runs on: the collective's own, or a part of it (MPICH's node_comm and
// node_roots_comm). Rank i of the group is position pos[i] of the collective's communicator.
struct Group {
  std::vector<int> pos;
  int size() const { return static_cast<int>(pos.size()); }
  static Group whole(int size) {
    Group g;
    for (int i = 0; i < size; i++) g.pos.push_back(i);
    return g;
  }
};

// One rank's program as the library's code for that rank writes it; peers are ranks of the group.
class Proc {
 public:
  Proc(Builder& b, const Group& g, int rank) : b_(b), g_(g), rank_(rank), pos_(g.pos[rank]) {}
  int rank() const { return rank_; }
  int size() const { return g_.size(); }

  void send(int peer, uint64_t bytes, bool synchronous = false) {
    b_.add(pos_, step(CollStep::Send, peer, bytes, synchronous));
  }
  void recv(int peer, uint64_t bytes) { b_.add(pos_, step(CollStep::Recv, peer, bytes, false)); }
  uint32_t isend(int peer, uint64_t bytes, bool synchronous = false) {
    b_.add(pos_, step(CollStep::Isend, peer, bytes, synchronous));
    return b_.new_request(pos_);
  }
  uint32_t irecv(int peer, uint64_t bytes) {
    b_.add(pos_, step(CollStep::Irecv, peer, bytes, false));
    return b_.new_request(pos_);
  }
  // the number the next request will get
  uint32_t next_request() const { return b_.requests(pos_); }
  void wait(uint32_t first, uint32_t n = 1) {
    if (n == 0) return;
    CollStep s;
    s.kind = CollStep::Wait;
    s.first_request = first;
    s.requests = n;
    b_.add(pos_, s);
  }
  // every request posted from `first` on (ompi_request_wait_all over them)
  void wait_since(uint32_t first) { wait(first, next_request() - first); }
  // Open MPI's ompi_coll_base_sendrecv (coll_base_util.h): with itself a local copy, else
  // ompi_coll_base_sendrecv_actual (coll_base_util.c): irecv, blocking send, wait for the receive.
  void sendrecv(int dest, uint64_t send_bytes, int source, uint64_t recv_bytes) {
    if (dest == rank_ && source == rank_) return;
    uint32_t r = irecv(source, recv_bytes);
    send(dest, send_bytes);
    wait(r);
  }
  void reduce(uint64_t bytes) {
    if (bytes == 0) return;
    CollStep s;
    s.kind = CollStep::Reduce;
    s.bytes = bytes;
    b_.add(pos_, s);
  }
  void next_round() { b_.next_round(pos_); }
  // MPICH's release/gather counters (FlagStream): raise this rank's; wait for peer's to reach this
  // rank's next value less lag
  void flag_set(FlagStream stream) {
    CollStep s;
    s.kind = CollStep::FlagSet;
    s.stream = stream;
    b_.add(pos_, s);
  }
  void flag_wait(int peer, FlagStream stream, uint8_t lag) {
    CollStep s;
    s.kind = CollStep::FlagWait;
    s.peer = g_.pos.at(static_cast<size_t>(peer));
    s.stream = stream;
    s.lag = lag;
    b_.add(pos_, s);
  }

 private:
  CollStep step(CollStep::Kind kind, int peer, uint64_t bytes, bool synchronous) const {
    CollStep s;
    s.kind = kind;
    s.peer = g_.pos.at(static_cast<size_t>(peer));
    s.bytes = bytes;
    s.synchronous = synchronous;
    return s;
  }
  Builder& b_;
  const Group& g_;
  int rank_, pos_;
};

// One rank's libnbc schedule (ompi/mca/coll/libnbc/nbc.c): rounds of sends, receives and local
// operations, separated by barriers. NBC_Start_round posts a round's sends and receives and performs its
// operations in the order they were scheduled; the next round starts once every request of the round
// has completed. NBC_Sched_commit ends the last round.
class NbcSchedule {
 public:
  explicit NbcSchedule(Proc& p) : p_(p), first_(p.next_request()) {}
  void send(int peer, uint64_t bytes, bool barrier_after = false) {
    p_.isend(peer, bytes);
    if (barrier_after) barrier();
  }
  void recv(int peer, uint64_t bytes, bool barrier_after = false) {
    p_.irecv(peer, bytes);
    if (barrier_after) barrier();
  }
  void op(uint64_t bytes, bool barrier_after = false) {
    p_.reduce(bytes);
    if (barrier_after) barrier();
  }
  void barrier() {
    p_.wait_since(first_);
    first_ = p_.next_request();
    p_.next_round();
  }
  void commit() { p_.wait_since(first_); }

 private:
  Proc& p_;
  uint32_t first_;
};

// ---- arithmetic the libraries share ------------------------------------------------------------------
// opal_next_poweroftwo (opal/util/bit_ops.h): the smallest power of two strictly above value
inline int next_pow2_above(int value) {
  int p = 1;
  while (p <= value) p <<= 1;
  return p;
}
// the largest power of two not above value (value >= 1)
inline int pow2_floor(int value) { return next_pow2_above(value) >> 1; }
// ceil(log2(value)): libnbc's ceil_of_log2, opal_cube_dim
inline int ceil_log2(int value) {
  int r = 0;
  while ((1 << r) < value) r++;
  return r;
}
inline bool is_pow2(int value) { return value > 0 && (value & (value - 1)) == 0; }
// ompi_mirror_perm (coll_base_util.c): the nbits low bits of x reversed
inline int mirror_perm(unsigned x, int nbits) {
  unsigned r = 0;
  for (int i = 0; i < nbits; i++)
    if (x & (1u << i)) r |= 1u << (nbits - 1 - i);
  return static_cast<int>(r);
}

// The per-library algorithm choosers (collectives_ompi.cpp, collectives_mpich.cpp). Both fill b and
// return the algorithm's name with its source, or "" where there is no schedule to follow.
struct Chosen {
  std::string algorithm, approximation;
  uint32_t node_calls = 0;  // CollSchedule::node_calls
};
Chosen ompi_schedule(const CollectiveCall& c, Builder& b);
Chosen mpich_schedule(const CollectiveCall& c, Builder& b);

// Alltoallv, Alltoallw: what each position sends to each. From the log's counts (c.peer_bytes) when it
// has them; otherwise each rank's total (c.rank_bytes, or c.bytes for every rank) spread evenly over the
// communicator, its block for itself included, and *approximation says so.
std::vector<std::vector<uint64_t>> alltoallv_matrix(const CollectiveCall& c, std::string* approximation);

// A vector of `bytes` as the library holds it: `count` elements of `element_bytes`.
struct Vec {
  uint64_t count = 0, element_bytes = 1;
  uint64_t bytes(uint64_t n) const { return n * element_bytes; }
  uint64_t total() const { return count * element_bytes; }
  static Vec of(uint64_t bytes) {
    Vec v;
    v.element_bytes = likely_element_bytes(bytes);
    v.count = bytes / v.element_bytes;
    return v;
  }
};

}  // namespace mpiadvise::coll

// The ranks' op streams walked together in the order their ops were entered, as the logs timed them: a
// merge of the ranks' streams by their next op's entry (ties by rank), each rank's ops in its own order
// (a rank of several threads may enter an op before its previous one). A stage that pairs the two sides
// of a message, or the members of a collective, holds what it needs of one from the first of its ops the
// walk meets to the last: the messages and instances in flight, where a table by id holds the whole
// run's (docs/streaming.md). The walk itself holds a cursor and an op for each rank.
#pragma once

#include <algorithm>
#include <cstdint>
#include <tuple>
#include <vector>

#include "op_stream.hpp"

namespace mpiadvise {

// The states of the messages a walk holds in flight: each in a pool, its room taken again by the next once
// let go, found by the message's slot (4 bytes a message id, as the simulation's MsgInfo): faster than a
// hash table. ids: one more than the highest message id the streams name (OpStream::message_ids).
template <class State>
class HeldMessages {
 public:
  explicit HeldMessages(uint32_t ids) : slot_(ids, kNone) {}
  // the message's state, made (value-initialised) where it has none
  State& at(uint32_t id) {
    uint32_t& at = slot_[id];
    if (at == kNone) {
      if (free_.empty()) {
        at = static_cast<uint32_t>(pool_.size());
        pool_.emplace_back();
      } else {
        at = free_.back();
        free_.pop_back();
        pool_[at] = State{};
      }
      most_ = std::max(most_, ++held_);
    }
    return pool_[at];
  }
  bool held(uint32_t id) const { return slot_[id] != kNone; }
  const State& operator[](uint32_t id) const { return pool_[slot_[id]]; }  // a message held
  void let_go(uint32_t id) {
    free_.push_back(slot_[id]);
    slot_[id] = kNone;
    held_--;
  }
  size_t ids() const { return slot_.size(); }
  size_t held() const { return held_; }
  size_t most() const { return most_; }  // held at once
  // f(id, state) for every message still held, by id
  template <class F>
  void each_held(F&& f) const {
    for (uint32_t id = 0, left = static_cast<uint32_t>(held_); id < slot_.size() && left; id++)
      if (slot_[id] != kNone) f(id, pool_[slot_[id]]), left--;
  }

 private:
  std::vector<uint32_t> slot_;
  std::vector<State> pool_;
  std::vector<uint32_t> free_;
  size_t held_ = 0, most_ = 0;
};

// f(rank, the op's index in its rank's ops, the op) for every op of every stream.
template <class F>
void walk_by_entry(const std::vector<OpStream>& streams, F&& f) {
  struct Next {
    uint64_t t_enter;
    int rank;
    bool operator<(const Next& o) const { return std::tie(t_enter, rank) < std::tie(o.t_enter, o.rank); }
  };
  std::vector<OpCursor> cursors;
  cursors.reserve(streams.size());
  std::vector<StreamOp> ops(streams.size());
  std::vector<uint32_t> index(streams.size(), 0);
  // the ranks by their next op's entry, the earliest first: a binary heap whose top is replaced in place
  // by the same rank's next op (one sift where a pop and a push take two)
  std::vector<Next> heap;
  heap.reserve(streams.size());
  for (int r = 0; r < static_cast<int>(streams.size()); r++) {
    cursors.emplace_back(streams[r]);
    if (cursors[r].next(ops[r])) heap.push_back({ops[r].t_enter, r});
  }
  auto later = [](const Next& a, const Next& b) { return b < a; };
  std::make_heap(heap.begin(), heap.end(), later);
  while (!heap.empty()) {
    const int r = heap.front().rank;
    f(r, index[r]++, ops[r]);
    if (!cursors[r].next(ops[r])) {
      std::pop_heap(heap.begin(), heap.end(), later);
      heap.pop_back();
      continue;
    }
    // the top's key grows (or goes down, on a rank of threads: the sift leaves it at the top): sift it down
    const Next moved{ops[r].t_enter, r};
    size_t at = 0;
    for (const size_t n = heap.size();;) {
      size_t child = 2 * at + 1;
      if (child >= n) break;
      if (child + 1 < n && heap[child + 1] < heap[child]) child++;
      if (!(heap[child] < moved)) break;
      heap[at] = heap[child];
      at = child;
    }
    heap[at] = moved;
  }
}

}  // namespace mpiadvise

// The ranks' ops read out of order from their streams, as the causes read them (causes.cpp: the last call
// two ranks shared, up to 4096 ops back; the computations within an interval, found by the entries; the
// critical path walked backwards across ranks): the op at any index of any rank.
//
// A packed stream is read a frame at a time: the frame that holds the op asked is unpacked (OpCursor::seek
// starts at its head) and decoded whole into the ops' times, call sites and links' other ends, and the
// last `kept` frames a rank used stay decoded. The causes ask for ops near the ones they asked last, going
// back in time, so that each frame is decoded about once (but on a rank whose entries go down: each search
// of an entry then decodes up to a frame a probe); what is held is the ranks times `kept` frames, not the
// run's ops. An unpacked stream is decoded whole at its first op asked (it is held whole
// already).
#pragma once

#include <climits>
#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

#include "op_stream.hpp"

namespace mpiadvise {

class OpFrames {
 public:
  // An op's times and call site, as the trace's Op has them.
  struct Op {
    uint64_t t_enter = 0, t_exit = 0;
    uint32_t callsite = 0;
    uint8_t call = 0;
  };

  explicit OpFrames(const std::vector<OpStream>& streams, size_t kept = 2);
  OpFrames(std::vector<OpStream>&&, size_t = 2) = delete;  // the streams must outlive it

  size_t ranks() const { return streams_.size(); }
  const OpStream& stream(int r) const { return streams_[r]; }
  // op k of rank r (k below the stream's ops)
  Op op(int r, uint64_t k);
  // Whether op k of rank r exchanged a message with rank b (b the message's Message::src or dst; where the
  // rank's stream holds a receive some send matched, its sender is found in the streams' runs of sent ids
  // and its receiver is the rank) or took part in a collective instance with b among its members. A link
  // of no id, or of a message or instance its stream does not name, shares nothing.
  bool shares(int r, uint64_t k, int b);
  // The first op of rank r in [first, end) entered after `from` (end where none): what std::upper_bound
  // finds by halving, probe for probe (first_entered_after), so that ops whose entries go down (a rank's
  // overlapping threads) give the trace's answer; where its entries never go down (OpStream::
  // entries_sorted), found by the frames' first entries and one frame.
  uint64_t entered_after(int r, uint64_t first, uint64_t end, double from);
  // the rank that sent message `id`, -1 where no stream's runs of sent ids hold it
  int sender(uint32_t id) const { return senders_.of(id); }
  uint64_t decoded() const { return decoded_; }  // frames decoded so far (an unpacked stream: one)
  size_t held_bytes() const;                     // what its decoded frames hold

 private:
  // a link's other end: a message's ranks, or (src kInstance) a collective instance's index in instances_
  struct End {
    int32_t src = -1, dst = -1;
  };
  static constexpr int32_t kInstance = INT32_MIN;
  // a frame's ops decoded, a column a field: 25 bytes an op and 8 a link
  struct Block {
    uint64_t first = 0, end = 0;  // its ops [first, end) of the rank
    std::vector<uint64_t> enter, exit;
    std::vector<uint32_t> callsite;
    std::vector<uint8_t> call;
    std::vector<uint32_t> ends_at;  // op i's ends are ends[ends_at[i], ends_at[i + 1])
    std::vector<End> ends;
    uint64_t used = 0;
  };
  const Block& block(int r, uint64_t k);
  void decode(int r, size_t frame, Block& b);
  uint32_t instance_index(const StreamInstance* i);
  const std::vector<OpStream>& streams_;
  size_t kept_;
  std::vector<std::vector<Block>> blocks_;  // by rank, up to kept_
  Senders senders_;
  std::vector<const StreamInstance*> instances_;  // the instances the decoded ops entered or completed
  std::unordered_map<const StreamInstance*, uint32_t> instance_at_;
  uint64_t clock_ = 0, decoded_ = 0;
  StreamOp op_;  // decoding's, kept for its vectors
};

// The first index in [first, end) whose entry(k) is above `from`, found by halving as std::upper_bound
// does (libstdc++'s loop): on entries that go down somewhere, the answer depends on the probes, which the
// trace's and the streams' readers share through this.
template <typename Entry>
uint64_t first_entered_after(uint64_t first, uint64_t end, double from, Entry entry) {
  uint64_t len = end > first ? end - first : 0;
  while (len > 0) {
    const uint64_t half = len >> 1, middle = first + half;
    if (from < entry(middle)) {
      len = half;
    } else {
      first = middle + 1;
      len = len - half - 1;
    }
  }
  return first;
}

}  // namespace mpiadvise

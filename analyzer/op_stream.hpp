// A rank's ops as a compact stream of bytes, and the cursor that reads them back in order (or from any
// op on: OpCursor::seek): the first step of docs/streaming.md's design, measured by `make bench` (d)
// beside the trace's 24-byte Op.
//
// Most of a rank's ops repeat a few shapes: the call, its call site, the op's kind and its links' kinds
// (a halo's MPI_Isend from one line, the MPI_Waitall after it). The stream numbers each shape once, in
// the rank's table, and writes an op as a varint of its shape, its entry as the zigzag varint of ns since
// the previous op's exit (negative where a rank's threads overlap), its duration as a varint of ns, and
// each link's id as the zigzag varint of its difference from the id the same link of the op's shape had
// last: build_trace numbers messages by sender, each sender's in its order of sending, so that a halo's
// MPI_Irecv from its left neighbour at one line names the next message of that neighbour each time,
// one more than the last, and most links take a byte. An op of more than kShapeLinks links spells its
// count and kinds out after its times, and its ids as differences from the rank's previous link of the
// same kind.
//
// A message's own fields (its ranks, communicator, tag, bytes and flags, and what the simulation needs of
// its other side before reaching it: whether a receive of the trace matched a send, and how many receives
// its receiver's completing op completes together) travel in the stream of the op that posted it, as a
// varint of their number in the rank's second table: the sender's for a send, the receiver's for a receive
// (a receive some send matched carries the sender's fields: its receiver's envelope, StreamOp::received).
// A halo's messages take a byte each there. The link that carries them says so in its
// kind (kCarries). The owner's completions carry the same entry again (a DoneSend of the rank's send, a
// DoneRecv of its receive no send matched), and a DoneColl its member's entry: a reader that starts at any
// frame (the causes, which look ops up out of order) knows each link's other end without the post, which
// may lie frames back; zstd packs the repeated entries to little. Each stream also keeps the ids of the messages its rank sent, as runs of consecutive
// ids (build_trace numbers them by sender: one run a rank), which names a message's sender where only its
// receive has been read.
//
// A collective instance's members travel the same way, each in its own rank's stream: the op that
// entered the collective carries, after its link's id, a varint of its number in the rank's third table:
// its place among the instance's members and the instance's entry in a table of instances the streams of
// a trace share (InstanceTable). An allreduce on the world at one call site takes a byte a member there,
// where the trace holds 24 bytes a member and 24 an instance.
//
// Whichever member of an instance the replay meets first must know the whole instance (its members, what
// each logged, the largest bytes, a v-collective's counts arrays) to choose the library's algorithm, and
// the call site of its first member's op, which the replay asks about (a split to S at that site,
// ReplayOptions::split_sites). The shared table holds each different instance once: the instances of a
// loop calling the same collective alike are one entry, where the trace holds each. A member's own bytes
// and counts are the entry's at its place; the stream repeats none of them.
//
// Nothing is lost: the cursor gives back every field of the op and its links as the trace held them.
#pragma once

#include <algorithm>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <set>
#include <span>
#include <tuple>
#include <vector>

#include "trace.hpp"

namespace mpiadvise {

// A message's fields as the stream of the op that posted it carries them.
struct StreamMessage {
  Message fields;           // but its ops: send_op and recv_op kNone, which the two next say
  bool sent = false;        // the trace has its send (else it is a receive's no send of the trace matched)
  bool answered = false;    // sent, and a receive of the trace matched it
  int32_t together = 1;     // the receives its receiver's completing op completes together (receives_together)
  auto key() const {
    return std::make_tuple(fields.src, fields.dst, fields.comm, fields.synchronous, fields.resent, fields.cached,
                           fields.tag, fields.bytes, sent, answered, together);
  }
};

// A collective instance's fields as every member's entry names them: the trace's CollectiveInstance but
// its members' ops (kNone: the streams' ops are theirs).
struct StreamInstance {
  uint32_t call = 0, comm = 0;
  uint32_t head_site = 0;  // the call site of its first member's op (in that member's rank's numbering)
  int32_t root = -1;
  uint64_t bytes = 0;
  std::vector<std::pair<int, uint32_t>> members;  // (rank, kNone)
  std::vector<uint64_t> sent, received;           // by member, MemberBytes::held
  std::vector<std::vector<uint64_t>> each;        // CollectiveInstance::each
  // the trace's instance, its ops aside: a view into this one, which must outlive it
  CollectiveInstance view() const {
    return {call, comm, root, bytes, members, HeldBytes(sent.data(), static_cast<uint32_t>(sent.size())),
            HeldBytes(received.data(), static_cast<uint32_t>(received.size())), each};
  }
  auto key() const { return std::tie(call, comm, head_site, root, bytes, members, sent, received, each); }
};

// The instances the streams of a trace name, each different one once (OpStream::encode_all shares one).
class InstanceTable {
 public:
  InstanceTable() = default;
  InstanceTable(const InstanceTable&) = delete;  // its index refers to its entries
  InstanceTable& operator=(const InstanceTable&) = delete;
  // the instance's entry, added where no equal one is yet
  uint32_t add(StreamInstance i);
  const StreamInstance& operator[](uint32_t k) const { return all_[k]; }
  size_t size() const { return all_.size(); }
  size_t bytes() const;

 private:
  struct ByFields {
    const std::deque<StreamInstance>* all;
    bool operator()(uint32_t a, uint32_t b) const { return (*all)[a].key() < (*all)[b].key(); }
  };
  std::deque<StreamInstance> all_;  // a deque: an entry stays where it is while more are added
  std::set<uint32_t, ByFields> index_{ByFields{&all_}};  // all_'s entries by their fields
};

// An op as the cursor gives it back: the trace's Op fields, its links as the trace's links_of gives them.
struct StreamOp {
  uint64_t t_enter = 0, duration = 0;
  uint32_t callsite = 0;
  uint8_t call = 0;
  OpKind kind = OpKind::Other;
  bool unfinished = false;
  // its links' ids and kinds, kept from op to op by the caller's StreamOp: no allocation once large enough
  std::vector<uint32_t> link_ids;
  std::vector<uint8_t> link_kinds;
  OpLinks links() const { return {link_ids.data(), link_kinds.data(), static_cast<uint32_t>(link_ids.size())}; }
  // the messages the op posted as their owner (its sends, its receives no send matched): the id and its
  // fields, in the stream's table
  struct Posted {
    uint32_t id;
    const StreamMessage* m;
  };
  std::vector<Posted> posted;
  // the messages some send matched that the op's receives posted: the id and the sender's fields (the
  // receiver's envelope: its source, tag, communicator and bytes), in the order of its links; what the
  // stages that weigh a message at its receive read from the receiver's stream alone
  std::vector<Posted> received;
  // the collective instances the op entered as a member (its PostColl links'): the trace's id, the op's
  // place among the members, and the whole instance (InstanceTable), of which its own bytes and counts
  struct Joined {
    uint32_t instance = 0;
    uint32_t k = 0;                          // CollectiveInstance::members[k] is this op's
    const StreamInstance* fields = nullptr;  // the whole instance's fields (InstanceTable)
  };
  std::vector<Joined> joined;
  // what its completions name where its rank owns it (docs/streaming.md, the causes' reader): the messages
  // its DoneSend and DoneRecv links complete, as `posted` (a send of the rank's, a receive no send
  // matched), and the instances its DoneColl links complete, as `joined` (k: the rank's place among the
  // members). No stage that walks the ops in order needs them: it met them at their posts.
  std::vector<Posted> completed;
  std::vector<Joined> left;
  uint64_t t_exit() const { return t_enter + duration; }
};

class OpStream {
 public:
  static constexpr uint32_t kShapeLinks = 4;  // links whose kinds a shape holds; more are in the stream
  // The rank's ops, in order, with their links as the trace gives them.
  // The receives together are the trace's (Trace::receives_together), or counted from its ops where it
  // has none: encode_all counts them once for all ranks.
  // Its collective instances' fields go to its own table, or to `instances` (encode_all: one table for all
  // streams, by_instance its entries by the trace's instance, kNone where not made yet).
  static OpStream encode(const Trace& t, int rank);
  static OpStream encode(const Trace& t, int rank, const std::vector<int32_t>& together,
                         std::shared_ptr<InstanceTable> instances = nullptr, std::vector<uint32_t>* by_instance = nullptr);
  // packed_chunk nonzero: each stream packed (pack) once encoded, so that one rank's bytes at a time are
  // held unpacked
  static std::vector<OpStream> encode_all(const Trace& t, size_t packed_chunk = 0);
  // encode_all's streams, packed, taken from the trace: each rank's ops let go once its stream is written,
  // and the trace's links, messages, receives together and collective instances once every rank's is (its
  // ranks, communicators, call sites and problems stay), so that the trace and its streams are never held
  // whole together (mpiadvise report --low-memory; docs/streaming.md's plan, step 1). Ops the reading
  // packed (Trace::packed_ops) are unpacked a rank at a time, each let go once its stream is written.
  // Its frames hold at most kDecodedOps / (2 x ranks) ops (kMinFrameOps at least): the causes keep two
  // frames of each rank decoded (OpFrames, about 35 bytes an op), which at 1024 ranks of 5000 calls, each
  // rank's stream one frame of kChunk, held every op of the run decoded (docs/streaming.md, session 80).
  static constexpr uint64_t kDecodedOps = uint64_t{1} << 20, kMinFrameOps = 256;
  static std::vector<OpStream> take_all(Trace& t, size_t packed_chunk = kChunk);
  // Packs its bytes as zstd frames (level 1, as the logs' chunks) of whole ops, a frame at least `chunk`
  // bytes unpacked but where the ops end first: a cursor gives back the same ops, unpacking a frame at a
  // time into a buffer of its own (docs/streaming.md's step 3). Each frame starts with the cursor's state
  // at its first op, so that a cursor can seek to any op unpacking one frame. Packed again, it stays as
  // it is.
  static constexpr size_t kChunk = size_t{1} << 16;
  void pack(size_t chunk = kChunk);
  bool packed() const { return !frames_.empty(); }
  size_t frames() const { return frames_.size(); }
  uint64_t frame_first_op(size_t k) const { return frames_[k].first_op; }  // the index of frame k's first op
  // the frame that holds op i: the last whose first op is at most i (0 where the stream is not packed)
  size_t frame_of(uint64_t i) const;
  uint64_t frame_first_enter(size_t k) const { return frames_[k].first_enter; }  // and its entry
  // whether its ops' entries never go down from one op to the next (a rank whose threads' calls overlap
  // may): then the op entered first after a time is found by the frames' first entries
  bool entries_sorted() const { return entries_sorted_; }
  uint64_t links() const { return links_; }  // its ops' links, all
  // the call of its first op at a call site (the shapes are numbered in the order of the ops that made
  // them), none where no op is there
  std::optional<uint8_t> first_call(uint32_t callsite) const;
  uint64_t ops() const { return ops_; }
  // the ops a replay runs and when they start and stop (replay_window of the rank's trace): a replay
  // reading the stream knows them before it reaches the last op
  const ReplayWindow& window() const { return window_; }
  // what it holds: its bytes and its tables of shapes, messages and members; the instances' table, which
  // encode_all's streams share, apart (instance_table)
  size_t bytes() const {
    return bytes_.size() + packed_.size() + frames_.size() * sizeof(Frame) + shapes_.size() * sizeof(Shape) +
           messages_.size() * sizeof(StreamMessage) + members_.size() * sizeof(Member) + sent_.size() * sizeof(sent_[0]);
  }
  // one more than the highest id of a message of the trace its links name (0: none): what a table by
  // message id holds (a link of a hand-made trace may name an id beyond its messages, and no message)
  uint32_t message_ids() const { return message_ids_; }
  // one more than the highest collective instance its links name (0: none)
  uint32_t instance_ids() const { return instance_ids_; }
  const InstanceTable& instance_table() const {
    static const InstanceTable none;  // (a stream moved from)
    return instances_ ? *instances_ : none;
  }
  // the ids of the messages its rank sent, as runs [first, end) in the order of its sends
  const std::vector<std::pair<uint32_t, uint32_t>>& sent() const { return sent_; }
  // its table of messages' fields: each different message posted or received by this rank's ops, once
  std::span<const StreamMessage> message_table() const { return messages_; }
  size_t shapes() const { return shapes_.size(); }
  size_t message_shapes() const { return messages_.size(); }
  size_t member_shapes() const { return members_.size(); }
  // on a link's kind: the message's fields follow its id (PostSend, PostRecv, and the owner's DoneSend
  // and DoneRecv), or the member's (PostColl, DoneColl)
  static constexpr uint8_t kCarries = 8;
  std::span<const uint8_t> data() const { return bytes_; }  // the ops' bytes, without the shapes; none once packed

 private:
  friend class OpCursor;
  struct Shape {
    uint32_t callsite;
    uint8_t call;
    OpKind kind;
    bool unfinished;
    uint8_t n_links;  // kShapeLinks + 1: more, count and kinds in the stream
    uint8_t link_kinds[kShapeLinks];
  };
  std::vector<uint8_t> bytes_;  // unpacked
  // A packed frame unpacks to the state a cursor has at its first op (state bytes: the previous exit and
  // the ids each shape's links and each kind of link had last, as varints), then its ops' bytes: a cursor
  // can start at any frame (OpCursor::seek).
  struct Frame {
    uint32_t packed = 0, bytes = 0, state = 0;  // its size in packed_; unpacked, and of that its state's
    uint64_t at = 0, first_op = 0;              // where it starts in packed_; the index of its first op
    uint64_t first_enter = 0;                   // its first op's entry
  };
  std::vector<uint8_t> packed_;  // packed: the frames in order
  std::vector<Frame> frames_;
  std::vector<Shape> shapes_;
  std::vector<StreamMessage> messages_;  // the messages' fields, each different once
  std::vector<std::pair<uint32_t, uint32_t>> sent_;
  uint32_t message_ids_ = 0, instance_ids_ = 0;
  std::shared_ptr<InstanceTable> instances_ = std::make_shared<InstanceTable>();
  struct Member {
    uint32_t k, instance;  // its place among the members; the instance's entry in instances_
    auto key() const { return std::make_pair(k, instance); }
  };
  std::vector<Member> members_;  // the collectives' members: each different (place, instance) once
  uint64_t ops_ = 0, links_ = 0;
  bool entries_sorted_ = true;
  ReplayWindow window_;
};

// The ranks that sent the streams' messages: every stream's runs of sent ids (OpStream::sent), by first
// id. A reader that has met only a message's id (at a completion, which carries no fields where the rank
// does not own the message) names its sender by them.
class Senders {
 public:
  Senders() = default;
  explicit Senders(const std::vector<OpStream>& streams);
  // the rank whose sends name message `id`, -1 where no stream's do
  int of(uint32_t id) const {
    auto it = std::upper_bound(runs_.begin(), runs_.end(), id, [](uint32_t x, const Run& r) { return x < r.first; });
    if (it == runs_.begin() || id >= (--it)->end) return -1;
    return it->rank;
  }
  size_t bytes() const { return runs_.capacity() * sizeof(Run); }

 private:
  struct Run {
    uint32_t first, end;
    int rank;
  };
  std::vector<Run> runs_;
};

// Reads an OpStream's ops in order, from its first or from any op it seeks. The stream must outlive it.
class OpCursor {
 public:
  explicit OpCursor(const OpStream& s)
      : s_(&s),
        p_(s.bytes_.data()),
        end_(s.bytes_.data() + s.bytes_.size()),
        prev_slot_(s.shapes_.size() * OpStream::kShapeLinks) {}
  explicit OpCursor(const OpStream&&) = delete;  // a temporary would not outlive it
  OpCursor(const OpCursor&) = delete;  // where packed, it reads from a buffer of its own
  OpCursor& operator=(const OpCursor&) = delete;
  OpCursor(OpCursor&&) = default;  // (the buffer's bytes stay where they are)
  OpCursor& operator=(OpCursor&&) = default;
  // the next op into `op`; false, `op` unchanged, past the last
  bool next(StreamOp& op) {
    while (p_ == end_)
      if (!unpack()) return false;
    op_++;
    const uint64_t shape = varint();
    const OpStream::Shape& sh = s_->shapes_[shape];
    op.callsite = sh.callsite;
    op.call = sh.call;
    op.kind = sh.kind;
    op.unfinished = sh.unfinished;
    op.t_enter = static_cast<uint64_t>(static_cast<int64_t>(prev_exit_) + unzigzag(varint()));
    op.duration = varint();
    prev_exit_ = op.t_enter + op.duration;
    op.link_ids.clear();
    op.link_kinds.clear();
    op.posted.clear();
    op.received.clear();
    op.joined.clear();
    op.completed.clear();
    op.left.clear();
    if (sh.n_links <= OpStream::kShapeLinks) {
      uint32_t* prev = &prev_slot_[shape * OpStream::kShapeLinks];
      for (uint32_t k = 0; k < sh.n_links; k++) {
        prev[k] = step(prev[k]);
        link(op, sh.link_kinds[k], prev[k]);
      }
    } else {
      const uint64_t n = varint();
      for (uint64_t k = 0; k < n; k++) {
        const uint8_t kind = *p_++;
        uint32_t& prev = prev_kind_[kind & (OpStream::kCarries - 1)];
        prev = step(prev);
        link(op, kind, prev);
      }
    }
    return true;
  }
  // the index of the op next() gives next (the stream's number of ops past the last)
  uint64_t op() const { return op_; }
  // Makes op i the next one next() gives (i at or past the stream's ops: none). Packed, it unpacks the
  // frame that holds op i (but where it reads that frame already, at or before op i) and reads on to op
  // i from the frame's first; unpacked, it reads on from where it is, or from the first op where op i is
  // behind it.
  void seek(uint64_t i);

 private:
  friend class OpStream;
  // a packed stream's next frame into buf_, the state at its head skipped; false past the last (or
  // unpacked), its buffer let go
  bool unpack();
  // frame k into buf_, the cursor's state read from its head
  void unpack_at(size_t k);
  void restart();  // at the first op, as constructed
  // its state before the next op, as a frame's head holds it
  void save_state(std::vector<uint8_t>& out) const;
  size_t offset() const { return static_cast<size_t>(p_ - s_->bytes_.data()); }  // unpacked: where it reads
  uint64_t varint() {
    uint64_t v = *p_++;
    if (v < 0x80) return v;  // most: a shape, a gap, a duration, a link's step
    v &= 0x7f;
    for (int shift = 7;; shift += 7) {
      const uint64_t b = *p_++;
      v |= (b & 0x7f) << shift;
      if (b < 0x80) return v;
    }
  }
  static int64_t unzigzag(uint64_t v) { return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1); }
  void link(StreamOp& op, uint8_t kind, uint32_t id) {
    const auto k = static_cast<Link::Kind>(kind & (OpStream::kCarries - 1));
    op.link_ids.push_back(id);
    op.link_kinds.push_back(k);
    if (!(kind & OpStream::kCarries)) return;
    if (k != Link::PostColl && k != Link::DoneColl) {
      const StreamMessage* m = &s_->messages_[varint()];
      (k == Link::PostSend || (k == Link::PostRecv && !m->sent) ? op.posted
       : k == Link::PostRecv                                  ? op.received
                                                              : op.completed)
          .push_back({id, m});
      return;
    }
    const OpStream::Member& m = s_->members_[varint()];
    (k == Link::PostColl ? op.joined : op.left).push_back({id, m.k, &(*s_->instances_)[m.instance]});
  }
  uint32_t step(uint32_t prev) { return static_cast<uint32_t>(static_cast<int64_t>(prev) + unzigzag(varint())); }
  const OpStream* s_;
  const uint8_t* p_;
  const uint8_t* end_;
  std::vector<uint8_t> buf_;      // packed: the frame it reads
  size_t frame_ = 0;              // packed: the next frame
  uint64_t prev_exit_ = 0;
  uint64_t op_ = 0;                                // the ops read
  std::vector<uint32_t> prev_slot_;                // by shape and link: the id it had last (0 at first)
  uint32_t prev_kind_[Link::DoneColl + 1] = {};  // by kind, for the ops of more links than a shape holds
};

// A rank's ops' times by their index, from the trace's array or from the rank's stream (a cursor that
// keeps the last two ops read): asked in the order of the ops, each at most one op behind the last asked
// (std::logic_error otherwise). What the stages that read a rank's times in order share, whichever they
// are given (efficiency's phases, the gate's retiming).
class RankTimes {
 public:
  explicit RankTimes(const std::vector<Op>& ops) : ops_(&ops) {}
  explicit RankTimes(const OpStream& s) : cursor_(std::in_place, s) {}
  explicit RankTimes(const OpStream&&) = delete;  // a temporary would not outlive it
  uint64_t enter(uint32_t i) { return at(i).first; }
  uint64_t exit(uint32_t i) { return at(i).second; }
  // the computation before op i (i > 0): from the exit of the op before to its entry, none where they overlap
  double gap(uint32_t i) {
    const uint64_t e = enter(i), x = exit(i - 1);
    return e > x ? static_cast<double>(e - x) : 0;
  }
  double duration(uint32_t i) {
    const auto [e, x] = at(i);
    return x > e ? static_cast<double>(x - e) : 0;
  }

 private:
  std::pair<uint64_t, uint64_t> at(uint32_t i);
  const std::vector<Op>* ops_ = nullptr;
  std::optional<OpCursor> cursor_;
  StreamOp op_;
  std::pair<uint64_t, uint64_t> before_, last_;  // ops read_ - 2 and read_ - 1
  uint32_t read_ = 0;                            // ops read
};

}  // namespace mpiadvise

// A job's logs as the analysis needs them: per rank the list of MPI operations, every message matched
// send to receive by MPI's rules, every collective matched across its communicator.
#pragma once

#include <algorithm>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <iterator>
#include <map>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <vector>

#include "log_reader.hpp"
#include "mapped_list.hpp"

namespace mpiadvise {

enum class OpKind : uint8_t {
  Send,          // blocking standard, buffered or ready send
  SyncSend,      // MPI_Ssend: completes only once the receive is posted
  Recv,          // blocking receive (Recv, Mrecv)
  SendRecv,      // Sendrecv(_replace): a send and a receive, both blocking
  PostSend,      // Isend family, or Start of a persistent send: completed by a later completion op
  PostRecv,      // Irecv, Imrecv, or Start of a persistent receive
  Completion,    // Wait/Test family (successful part)
  Probe,         // blocking probe: waits for a message to arrive
  Collective,    // blocking collective
  PostCollective,// non-blocking collective
  Polling,       // a run of unsuccessful tests or probes: the rank polled for its measured time
  Other,         // everything else: not modelled, replayed with its measured duration
};

inline constexpr uint32_t kNone = UINT32_MAX;

// A call site as the same on every rank: module and offset of the return address (load addresses differ
// between processes). Where there is no line information but a function, every call in the function is
// one site: module, the function's entry offset and its name (see group_sites_by_function).
struct SiteKey {
  std::string module;
  uint64_t offset = 0;
  std::string function;  // empty: one return address
  bool operator<(const SiteKey& o) const {
    return std::tie(module, offset, function) < std::tie(o.module, o.offset, o.function);
  }
  bool operator==(const SiteKey& o) const { return module == o.module && offset == o.offset && function == o.function; }
};

// How an op takes part in messages and collectives. The trace holds its links in LinkList, 5 bytes each,
// and hands them out by value.
struct Link {
  enum Kind : uint8_t {
    PostSend,   // posts the send side of a message (blocking sends post and complete it)
    PostRecv,   // posts the receive side
    DoneSend,   // completes the send side
    DoneRecv,   // completes the receive side
    PostColl,   // enters a collective (blocking ones also complete it)
    DoneColl,   // completes a non-blocking collective
  } kind;
  uint32_t id;  // message or collective instance
  bool operator==(const Link&) const = default;
};

// An op's links: n ids and their kinds, [first, first + n) of the trace's, or its one link held in the op
// (Op::inline_link). Read while the op and the trace are.
class OpLinks {
 public:
  OpLinks(const uint32_t* ids, const uint8_t* kinds, uint32_t n) : ids_(ids), kinds_(kinds), n_(n) {}
  Link operator[](uint32_t k) const { return Link{static_cast<Link::Kind>(kinds_[k]), ids_[k]}; }
  uint32_t size() const { return n_; }

 private:
  const uint32_t* ids_;
  const uint8_t* kinds_;
  uint32_t n_;
};

// The trace's links as two arrays, ids and kinds: 5 bytes a link where a Link takes 8, about 1.5 links a
// call. A link is read by value: links[i], or an op's through Trace::links_of. (Packed into one 5-byte
// struct instead, a link's id was bound misaligned to the const references that take it, which UBSan
// rejects.) Held apart from the heap (mapped_list.hpp), so that compact_links cuts the table in place and
// gives back what it no longer holds.
class LinkList {
 public:
  LinkList() = default;
  LinkList(LinkList&&) noexcept = default;
  LinkList& operator=(LinkList&&) noexcept = default;
  LinkList(const LinkList& o) { *this = o; }
  LinkList& operator=(const LinkList& o) {
    if (this == &o) return *this;
    *this = LinkList{};
    reserve(o.size());
    for (size_t i = 0; i < o.size(); i++) push_back(o[i]);
    return *this;
  }
  Link operator[](size_t i) const { return Link{static_cast<Link::Kind>(kind_[i]), id_[i]}; }
  size_t size() const { return id_.size(); }
  size_t capacity_bytes() const { return id_.capacity_bytes() + kind_.capacity_bytes(); }
  void push_back(Link l) {
    id_.push_back(l.id);
    kind_.push_back(l.kind);
  }
  void set(size_t i, Link l) {
    id_[i] = l.id;
    kind_[i] = l.kind;
  }
  void reserve(size_t n) {
    id_.reserve(n);
    kind_.reserve(n);
  }
  void shrink_to_fit() { truncate(size()); }
  // the first n links kept, the memory beyond given back
  void truncate(size_t n) {
    id_.truncate(n);
    kind_.truncate(n);
  }
  void set_id(size_t i, uint32_t id) { id_[i] = id; }
  OpLinks of(uint32_t first, uint32_t n) const { return OpLinks(id_.begin() + first, kind_.begin() + first, n); }

 private:
  MappedList<uint32_t> id_;
  MappedList<uint8_t> kind_;
};

// 24 bytes: one per MPI call of the run, the bulk of a trace in memory. Its times, measured in ns on rank
// 0's clock (CLOCK_MONOTONIC's, counted from the node's boot), are exact: the entry below 2^56 ns (2.28
// years), the call's duration below 2^48 ns (78 hours); set_times refuses others. Its links are
// [first_link, first_link + n) of Trace::links, n as Trace::n_links says: held in the op below
// kSpilledLinks, in Trace::spilled_links from there (a Waitall of hundreds of requests). An op of one link
// (an Isend, an Irecv, a Wait, a collective: most ops with any) holds it itself once the trace is built
// (compact_links): its kind in inline_link, its id in first_link, 5 bytes less in Trace::links.
inline constexpr uint64_t kMaxOpEnter = (uint64_t{1} << 56) - 1;
inline constexpr uint64_t kMaxOpDuration = (uint64_t{1} << 48) - 1;
inline constexpr uint32_t kSpilledLinks = (uint32_t{1} << 8) - 1;
struct Op {
  uint64_t t_enter : 56 = 0;
  uint8_t call = 0;            // mpa_call_id (the entry's word's last byte)
  uint64_t duration : 48 = 0;  // t_exit() - t_enter
  uint64_t links_here : 8 = 0;   // the number of links, or kSpilledLinks: Trace::n_links
  uint64_t inline_link : 3 = 0;  // 0, or its one link's kind + 1, the link's id being first_link
  OpKind kind : 4 = OpKind::Other;
  // The call had not returned when a signal ended the rank (Event::unfinished): t_exit is the signal's
  // time. It posts what it posts (a receive, a send, its entry into a collective) but completes nothing:
  // no Done link, no status, so a receive in progress has received nothing. Where a hung rank was waiting.
  bool unfinished : 1 = false;
  uint32_t callsite = 0;
  uint32_t first_link = 0;
  uint64_t t_exit() const { return t_enter + duration; }
  bool has_links() const { return links_here != 0; }
  // false, the op unchanged, where enter or exit - enter is out of range; exit before enter is enter
  [[nodiscard]] bool set_times(uint64_t enter, uint64_t exit) {
    const uint64_t d = exit > enter ? exit - enter : 0;
    if (enter > kMaxOpEnter || d > kMaxOpDuration) return false;
    t_enter = enter;
    duration = d;
    return true;
  }
};
static_assert(sizeof(Op) == 24);
static_assert(MPA_CALL_COUNT <= 255);
static_assert(static_cast<int>(OpKind::Other) < 16);
static_assert(Link::DoneColl + 1 < 8);  // Op::inline_link

// The link counts of ops with kSpilledLinks or more links, by the op's first link.
using SpilledLinks = std::unordered_map<uint32_t, uint32_t>;
inline uint32_t n_links(const Op& op, const SpilledLinks& spilled) {
  return op.links_here == kSpilledLinks ? spilled.at(op.first_link) : static_cast<uint32_t>(op.links_here);
}
// The op's links become [first, first + n); first is 0 where n is.
inline void set_links(Op& op, uint32_t first, uint32_t n, SpilledLinks& spilled) {
  if (op.links_here == kSpilledLinks) spilled.erase(op.first_link);
  op.inline_link = 0;
  op.first_link = n ? first : 0;
  op.links_here = std::min(n, kSpilledLinks);
  if (n >= kSpilledLinks) spilled[op.first_link] = n;
}
// The op's one link becomes its own (Op::inline_link), as compact_links leaves a built trace's.
inline void set_one_link(Op& op, Link l, SpilledLinks& spilled) {
  set_links(op, l.id, 1, spilled);
  op.inline_link = static_cast<uint8_t>(l.kind + 1);
}

// 32 bytes: the flags share the communicator's word. A trace numbers fewer than kMaxComms communicators:
// kMaxComms - 1 (kNone cut to the field) is a communicator the log does not know. The ops that completed
// each side are the trace's Done links (done_ops).
inline constexpr uint32_t kMaxComms = uint32_t{1} << 29;
struct Message {
  int src = -1, dst = -1;             // world ranks
  uint32_t comm : 29 = 0;             // index into Trace::comms; kMaxComms - 1: unknown
  bool synchronous : 1 = false;       // Ssend / Issend: waits for the receive whatever its size
  bool resent : 1 = false;            // sent from the buffer and of the bytes of the sender's previous send
                                      // (log format 5, RESENT): the same data again unless rewritten
  bool cached : 1 = false;            // resent, with too little computation between to have rewritten it
                                      // (mark_cached_resends): priced by LogGPSParams::resend_*
  int32_t tag = 0;
  uint64_t bytes = 0;                 // as sent
  uint32_t send_op = kNone, recv_op = kNone;  // the ops that posted each side
  bool matched() const { return send_op != kNone && recv_op != kNone; }
};
static_assert(sizeof(Message) == 32);

// Each member's bytes of a collective as its call logged them, or none (MPI_IN_PLACE, or a side significant
// only at the root): 8 bytes a member where a vector of optionals takes 16, as a new instance gives them
// (NewCollective) and the trace holds them (CollectiveList). 2^64 - 1 (kNoBytes) stands for none: a logged
// count of 2^64 - 1 bytes, which no buffer holds, is kept as 2^64 - 2.
class MemberBytes {
 public:
  MemberBytes() = default;
  MemberBytes(std::initializer_list<std::optional<uint64_t>> bytes) {
    for (const auto& b : bytes) push_back(b);
  }
  // const: an assignment to it would compile and change nothing (set() changes one)
  const std::optional<uint64_t> operator[](size_t i) const {
    return v_[i] == kNoBytes ? std::nullopt : std::optional(v_[i]);
  }
  size_t size() const { return v_.size(); }
  void reserve(size_t n) { v_.reserve(n); }
  void push_back(std::optional<uint64_t> b) { v_.push_back(held(b)); }
  void set(size_t i, std::optional<uint64_t> b) { v_[i] = held(b); }
  void push_held(uint64_t b) { v_.push_back(b); }  // as held(): kNoBytes for none
  bool operator==(const MemberBytes&) const = default;
  static constexpr uint64_t kNoBytes = UINT64_MAX;
  static uint64_t held(std::optional<uint64_t> b) { return b ? std::min(*b, kNoBytes - 1) : kNoBytes; }

 private:
  std::vector<uint64_t> v_;
};

// A member's bytes of a collective as the trace holds them: a view of MemberBytes' held values, one per member.
class HeldBytes {
 public:
  HeldBytes() = default;
  HeldBytes(const uint64_t* v, uint32_t n) : v_(v), n_(n) {}
  std::optional<uint64_t> operator[](size_t i) const {
    return v_[i] == MemberBytes::kNoBytes ? std::nullopt : std::optional(v_[i]);
  }
  size_t size() const { return n_; }
  bool operator==(const HeldBytes& o) const { return std::equal(v_, v_ + n_, o.v_, o.v_ + o.n_); }

 private:
  const uint64_t* v_ = nullptr;
  uint32_t n_ = 0;
};

// A collective instance of the trace, read by value while the trace is (Trace::collectives[c]): what its
// members' calls said, and each member, world rank and op, build_trace's in rank order.
struct CollectiveInstance {
  uint32_t call = 0;
  uint32_t comm = 0;
  int root = -1;     // world rank, or -1
  uint64_t bytes = 0;  // largest per-rank send bytes
  std::span<const std::pair<int, uint32_t>> members;  // (rank, op)
  // each member's bytes as its call logged them (parallel to members); nullopt where the call had none
  // (MPI_IN_PLACE, or a side significant only at the root)
  HeldBytes sent, received;
  // each member's bytes for every rank of the communicator (MPA_F_VCOUNTS, log format 3: what a
  // v-collective's counts arrays said), parallel to members once any member has them; empty otherwise
  std::span<const std::vector<uint64_t>> each;
  // the same instance: its fields and what the spans hold
  bool operator==(const CollectiveInstance& o) const {
    return std::tie(call, comm, root, bytes, sent, received) == std::tie(o.call, o.comm, o.root, o.bytes, o.sent, o.received) &&
           std::ranges::equal(members, o.members) && std::ranges::equal(each, o.each);
  }
};

// An instance as a trace is given one (CollectiveList::push_back): the tests' hand-made traces'.
struct NewCollective {
  uint32_t call = 0;
  uint32_t comm = 0;
  int root = -1;
  uint64_t bytes = 0;
  std::vector<std::pair<int, uint32_t>> members;
  MemberBytes sent, received;  // shorter than members: none for the rest
  std::vector<std::vector<uint64_t>> each;
};

// The trace's collective instances, packed: 24 bytes an instance and 24 a member (rank and op, the bytes
// sent and received) in four arrays, where an instance of its own with three vectors took 120 bytes and
// three heap blocks (216 bytes an instance of 2 ranks, the bulk of an allreduce-heavy run of 2 ranks).
// The v-collectives' counts arrays, rare, are held apart by instance.
class CollectiveList {
 public:
  size_t size() const { return head_.size(); }
  bool empty() const { return head_.empty(); }
  CollectiveInstance operator[](size_t c) const {
    const Head& h = head_[c];
    const uint32_t n = members_of(c);
    CollectiveInstance i;
    i.call = h.call;
    i.comm = h.comm;
    i.root = h.root;
    i.bytes = h.bytes;
    i.members = {members_.data() + h.first, n};
    i.sent = {sent_.data() + h.first, n};
    i.received = {received_.data() + h.first, n};
    if (h.counted) {
      const auto& e = each_.at(static_cast<uint32_t>(c));
      i.each = {e.data(), e.size()};
    }
    return i;
  }
  CollectiveInstance at(size_t c) const {
    if (c >= size()) throw std::out_of_range("collective instance " + std::to_string(c) + " of " + std::to_string(size()));
    return (*this)[c];
  }
  // parts of one, for the replay's inner loops
  std::span<const std::pair<int, uint32_t>> members(size_t c) const { return {members_.data() + head_[c].first, members_of(c)}; }
  uint32_t comm(size_t c) const { return head_[c].comm; }
  uint32_t call(size_t c) const { return head_[c].call; }
  uint32_t members_of(size_t c) const {
    return (c + 1 < head_.size() ? head_[c + 1].first : static_cast<uint32_t>(members_.size())) - head_[c].first -
           head_[c].padded;
  }
  void push_back(const NewCollective& c);
  void clear() { *this = CollectiveList(); }

  class iterator {
   public:
    using value_type = CollectiveInstance;
    using reference = CollectiveInstance;
    using pointer = void;
    using difference_type = std::ptrdiff_t;
    using iterator_category = std::input_iterator_tag;
    iterator(const CollectiveList* l, size_t i) : l_(l), i_(i) {}
    CollectiveInstance operator*() const { return (*l_)[i_]; }
    iterator& operator++() { return ++i_, *this; }
    iterator operator++(int) { return iterator(l_, i_++); }
    bool operator==(const iterator& o) const { return i_ == o.i_; }

   private:
    const CollectiveList* l_;
    size_t i_;
  };
  iterator begin() const { return {this, 0}; }
  iterator end() const { return {this, size()}; }

  // build_trace's, in two passes over the ranks' memberships: the instances, then each instance's number
  // of members (layout), then every member in its place (set_member: k of the instance's) and its counts
  uint32_t add(uint32_t call, uint32_t comm) {
    head_.push_back(Head{0, comm, -1, 0, static_cast<uint16_t>(call), false, false});
    return static_cast<uint32_t>(head_.size() - 1);
  }
  void note(uint32_t c, int root, uint64_t bytes) {
    if (root >= 0) head_[c].root = root;
    head_[c].bytes = std::max(head_[c].bytes, bytes);
  }
  void layout(const std::vector<uint32_t>& members);  // by instance: its number of members
  static constexpr uint32_t kPadFrom = 16;  // instances of this many members or more are Head::padded
  void set_member(uint32_t c, uint32_t k, int rank, uint32_t op, uint64_t sent_held, uint64_t received_held) {
    const size_t at = head_[c].first + k;
    members_[at] = {rank, op};
    sent_[at] = sent_held;
    received_[at] = received_held;
  }
  // member k's counts array; the instance's others have none until given theirs
  void set_each(uint32_t c, uint32_t k, std::vector<uint64_t> counts) {
    auto& e = each_[c];
    e.resize(members_of(c));
    e[k] = std::move(counts);
    head_[c].counted = true;
  }
  size_t capacity_bytes() const {
    return head_.capacity() * sizeof(Head) + members_.capacity() * sizeof(members_[0]) +
           (sent_.capacity() + received_.capacity()) * sizeof(uint64_t);
  }

 private:
  struct Head {
    uint64_t bytes;
    uint32_t comm;
    int32_t root;
    uint32_t first;  // its members' place in the arrays
    uint16_t call;
    bool counted;    // has counts arrays (each_)
    // one place left empty after its members (layout): build_trace fills the instances' members rank by
    // rank, each rank's collectives one after the other, a write an instance apart; where the instances
    // were 2^k members apart (1024 ranks) those writes fell in the same few sets of the cache, which evicted
    // each other, and joining the ranks took 2.5 times as long
    bool padded;
  };
  static_assert(sizeof(Head) == 24);
  std::vector<Head> head_;
  std::vector<std::pair<int, uint32_t>> members_;
  std::vector<uint64_t> sent_, received_;  // MemberBytes::held
  std::unordered_map<uint32_t, std::vector<std::vector<uint64_t>>> each_;
};

struct TraceComm {
  uint64_t gid = 0;
  std::vector<int32_t> members;       // world ranks
  // an intercommunicator's other group, world ranks (members: the group of the first rank seen using
  // it); empty for an intracommunicator
  std::vector<int32_t> remote;
};

struct RankTrace {
  int rank = 0;
  std::string hostname;
  uint32_t host_cpus = 0;  // CPUs online on its host (0: not in the log)
  std::vector<Op> ops;
  bool cut = false;    // its log holds calls entered at or after Trace::cut_ns, left out
  uint64_t calls_before = 0;  // calls of its log entered before Trace::from_ns, left out
  // the last of those: how the rank ended where the part holds none of its calls (returned from
  // MPI_Finalize; inside a call when a signal stopped it; else computing), and when it entered and left it
  struct LastBefore {
    bool finalized = false, unfinished = false;
    uint64_t enter_ns = 0, exit_ns = 0;
  } last_before;
  uint64_t calls = 0;  // MPI calls its ops stand for (a run of unsuccessful polls is one op)
};

// The fastest a rank rewrites data it sends again, where the run's log does not say (rewrite_bytes_per_ns,
// message_probe.hpp): twice the fastest memcpy of 128 KiB measured on these machines (115 B/ns, its source
// in cache, as a pack buffer is refilled). It was 64 B/ns, below what a memcpy reaches on a machine of
// this kind: the packed halo's refills then counted as data sent again unchanged.
inline constexpr double kRewriteBytesPerNs = 256;

// Values of a trivially copyable type held packed: one zstd frame (level 1) of their bytes, transposed
// first (each byte of a value beside the same byte of the next, as Blosc's shuffle filter does) and each
// such byte kept as its difference from the one before (Blosc's bytedelta). An array of structs whose
// fields change little from one to the next (a rank's ops: the same calls, call sites and links' kinds,
// entries growing) so packs in far fewer bytes than as it is: mpiadvise-synth's halo of 64 ranks x 10^5
// calls, 6.30 bytes an op as the ops are, 1.21 so; a traced halo of Open MPI, 4 ranks x 120000 calls,
// 9.71 and 4.11; a traced loop of MPI_Isend, MPI_Irecv and MPI_Waitall, 7.28 and 2.00. pack_bytes and
// unpack_bytes (trace.cpp) do the packing of `count` values of `width` bytes; `unpack` gives back exactly
// what was packed.
std::vector<uint8_t> pack_bytes(const void* data, size_t count, size_t width);
void unpack_bytes(const std::vector<uint8_t>& packed, void* data, size_t count, size_t width);

template <class T>
class Packed {
  static_assert(std::is_trivially_copyable_v<T>);

 public:
  void pack(const T* values, size_t n) { bytes_ = pack_bytes(values, n, sizeof(T)), n_ = n; }
  void pack(std::vector<T>& values) {  // and `values` emptied, its memory freed
    pack(values.data(), values.size());
    std::vector<T>().swap(values);
  }
  std::vector<T> unpack() const {
    std::vector<T> values(n_);
    unpack_bytes(bytes_, values.data(), n_, sizeof(T));
    return values;
  }
  size_t size() const { return n_; }  // values
  size_t bytes() const { return bytes_.capacity(); }
  void clear() { std::vector<uint8_t>().swap(bytes_), n_ = 0; }

 private:
  std::vector<uint8_t> bytes_;
  size_t n_ = 0;
};

// A rank's ops packed: 1-4 bytes an op where an Op takes 24 (mpiadvise-synth's halo of 64 ranks x 10^5
// calls: 154 MB of ops in 8 MB, where their bytes packed as they are took 40). What a reading for
// mpiadvise report --low-memory holds in place of the ranks' ops while it joins and matches them.
using PackedOps = Packed<Op>;

struct Trace {
  int world_size = 0;
  std::vector<RankTrace> ranks;       // by world rank (empty ops where a log is missing)
  // build_trace's: one for each send (but those MPI_Cancel undid), by sender (world rank) and each rank's
  // order of sending; then one for each receive no send matched, by receiver and in its order
  std::vector<Message> messages;
  CollectiveList collectives;
  std::vector<TraceComm> comms;
  LinkList links;
  SpilledLinks spilled_links;
  std::vector<std::map<uint32_t, SiteKey>> site_keys;  // per rank: callsite id -> key
  // what could not be matched, and why
  uint64_t unmatched_sends = 0, unmatched_recvs = 0, incomplete_collectives = 0;
  uint64_t largest_message = 0;
  // by message: the receives the op completing its receive completes together, where two or more share
  // the receiver's bandwidth (LogGPS's senders); empty where no op completes two. build_trace's
  // (receives_together()): a replay of a trace without it (nullopt), or whose messages it does not
  // match, counts them itself.
  std::optional<std::vector<int32_t>> receives_together;
  // the fastest its ranks may have rewritten a buffer (mark_cached_resends); build_trace's from the run's
  // probe (rewrite_bytes_per_ns)
  double rewrite_bytes_per_ns = kRewriteBytesPerNs;
  std::vector<ReadProblem> problems;
  // The ops are the calls entered before this instant (ns on rank 0's clock; UINT64_MAX: every call):
  // build_trace's until_ns, the part of the run mpiadvise --until names.
  uint64_t cut_ns = UINT64_MAX;
  // ... and entered at or after this one (0: from the first): build_trace's from_ns, mpiadvise --from
  uint64_t from_ns = 0;
  // By world rank, the ranks' ops packed where build_trace was asked to (pack_ops): ranks[r].ops is empty
  // while packed_ops[r] holds them, until OpStream::take_all writes each rank's stream from them. Empty:
  // the ops are in ranks[r].ops.
  std::vector<PackedOps> packed_ops;
  size_t ops_of(int rank) const {  // the rank's ops, packed or not
    return packed_ops.empty() ? ranks[rank].ops.size() : packed_ops[rank].size() + ranks[rank].ops.size();
  }
  // Lets go of what op streams carry (OpStream::take_all): each rank's ops, packed or not, the links, the
  // messages, the receives together and the collective instances, their memory freed. The ranks and their
  // counts, the communicators, the call sites, the problems and the unmatched counts stay.
  void let_go_calls();
  // calls of the logs left out of the part: after it (cut_ns), or before it (from_ns)
  bool cut() const {
    return std::any_of(ranks.begin(), ranks.end(), [](const RankTrace& r) { return r.cut || r.calls_before; });
  }
  const Op& op(int rank, uint32_t i) const { return ranks[rank].ops[i]; }
  // The site of a rank's call site id (the same for every call stack through one return address); a
  // site the logs have no definition for is keyed by rank and id.
  SiteKey site(int rank, uint32_t callsite) const;
  uint32_t n_links(const Op& op) const { return mpiadvise::n_links(op, spilled_links); }
  // Read several times for each op a replay steps: inlined, the spilled count's lookup kept out of line
  // (with it inline, links_of was not, and took a seventh of a simulation)
  OpLinks links_of(const Op& op) const {
    static constexpr uint8_t kKinds[] = {Link::PostSend, Link::PostRecv, Link::DoneSend, Link::DoneRecv, Link::PostColl, Link::DoneColl};
    if (op.inline_link) return OpLinks(&op.first_link, &kKinds[op.inline_link - 1], 1);
    if (op.links_here != kSpilledLinks) return links.of(op.first_link, static_cast<uint32_t>(op.links_here));
    return spilled_links_of(op);
  }
  [[gnu::noinline]] OpLinks spilled_links_of(const Op& op) const { return links.of(op.first_link, n_links(op)); }
  void set_links(Op& op, uint32_t first, uint32_t n) { mpiadvise::set_links(op, first, n, spilled_links); }
};

// The ops a replay runs, [first, end): after MPI_Init, before MPI_Finalize; and when they start and stop
// as measured (MPI_Init's exit, MPI_Finalize's entry).
struct ReplayWindow {
  uint32_t first = 0, end = 0;
  uint64_t start_ns = 0, stop_ns = 0;
};
ReplayWindow replay_window(const RankTrace& rank);

// The op that completed one side of each message (side: Link::DoneSend or Link::DoneRecv), by message:
// its index in the sender's ops (DoneSend) or the receiver's (DoneRecv), kNone where no op did (a
// request never completed, a message with no partner's side). The trace keeps them in its Done links
// only, 8 bytes a message less than in each message; a reader that needs them makes this table, 4 bytes
// a message, and lets it go.
std::vector<uint32_t> done_ops(const Trace& t, Link::Kind side);

// Reads every rank and matches. Streams the logs once. With until_ns, only the calls entered before it (ns
// on rank 0's clock) and no chunk beyond: the part of the run up to that instant, as if every rank had
// stopped there; a message or collective with a side after it has lost that side. With from_ns, only the
// calls entered at or after it, as if every rank had started there: the calls before are read and counted,
// not held (a channel's sends and receives, each communicator's collectives), so that the part's messages
// pair as they did in the whole run, and one whose other side is before the part has lost that side.
// after_read: told what the ranks read hold before they join (where a check of the memory the rest needs
// may refuse them, by throwing); true: the ops packed from there on, as pack_ops packs them (the check
// found they fit only so).
struct ReadCounts {
  uint64_t calls = 0;             // the MPI calls read (RankTrace::calls)
  uint64_t collective_calls = 0;  // of them, calls of collectives: each a member of an instance
  uint64_t instances = 0;         // the collective instances they make, about (each communicator's span of them)
};
// pack_ops: each rank's ops packed as soon as its log is read (Trace::packed_ops), and unpacked a rank at a
// time, by one thread, where the joining and matching change or read them: the reading's peak holds
// the ops packed, not the ops (OpStream::take_all writes the streams from them; docs/streaming.md).
Trace build_trace(const JobLog& job, uint64_t until_ns = UINT64_MAX, uint64_t from_ns = 0,
                  const std::function<bool(const ReadCounts&)>& after_read = {}, bool pack_ops = false);
// Where a run starts: MPI_Init's return (the first call's entry without one) on the lowest rank whose log
// has an event, rank 0 in a whole run; ns on rank 0's clock; nullopt without any event. --until counts from there.
std::optional<uint64_t> run_start_ns(const JobLog& job);
// Sets Message::cached (build_trace does): a RESENT message whose sender computed less between the two
// sends' calls than writing its bytes at Trace::rewrite_bytes_per_ns takes. A pack buffer refilled before each
// send is RESENT by its address, and its copy shows as computation. Each send is paired with the rank's
// previous compared send (libtrace/calls.py: sendbuf), which on a multi-threaded rank may be another
// thread's, as the tracer's comparison is not.
void mark_cached_resends(Trace& t);
// Trace::receives_together, from the trace's links: one pass over every op.
std::vector<int32_t> receives_together(const Trace& t);
// Lays the trace's links out again, as build_trace does once messages are matched: the links of cancelled
// operations (no message: their id is kNone) go, and an op left with no link is replayed as what it was
// measured to be (Other), as a completion of nothing is; the link of an op with one moves into the op
// (Op::inline_link). Trace::links then holds those of ops with two or more, in the ranks' order.
void compact_links(Trace& t);

OpKind op_kind(int call, uint32_t count);
bool is_collective_call(int call);

}  // namespace mpiadvise

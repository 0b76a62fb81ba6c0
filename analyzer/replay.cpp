#include "replay.hpp"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <deque>
#include <limits>
#include <memory>
#include <numeric>
#include <span>
#include <stdexcept>
#include <type_traits>
#include <unordered_map>

#include <fmt/format.h>

#include "collectives.hpp"
#include "op_stream.hpp"
#include "replay_peers.hpp"
#include "steady_trace.hpp"

namespace mpiadvise {

namespace {

// Breakdown::operator+=, inlined where the replays add an op's parts (twice an op): a call per addition
// kept the parts in memory, each field stored and loaded again. b's fields are read one at a time (the
// volatile reads): an op's parts were just stored field by field, and gcc's vectoriser read them two at a
// time, a 16-byte load that cannot take its data from two 8-byte stores still in the store buffer and
// waits for them to reach the cache: a quarter of the simulation loop's time (perf).
inline void accumulate(Breakdown& into, const Breakdown& b) {
  auto field = [](const double& v) { return static_cast<const volatile double&>(v); };
  into.computation += field(b.computation);
  into.send_overhead += field(b.send_overhead);
  into.recv_overhead += field(b.recv_overhead);
  into.send_wait += field(b.send_wait);
  into.recv_wait += field(b.recv_wait);
  into.synchronisation += field(b.synchronisation);
  into.collectives += field(b.collectives);
  into.other += field(b.other);
}

}  // namespace

Breakdown& Breakdown::operator+=(const Breakdown& b) {
  accumulate(*this, b);
  return *this;
}

namespace {

constexpr double kUnknown = -1;
// Call site ids below this are kept in tables by rank and id (the tracer numbers them from 0 on each
// rank); a larger one, as a damaged log may hold, is looked up instead.
constexpr uint32_t kDenseCallsites = 1 << 16;

// The computation after a rank's last replayed call, up to MPI_Finalize (output, freeing, a last step).
double tail_gap(const ReplayWindow& w, uint64_t last_exit) {
  if (w.end <= w.first) return 0;
  return std::max(0.0, static_cast<double>(w.stop_ns) - static_cast<double>(last_exit));
}

LogGPSParams effective_params(const ReplayOptions& o) {
  LogGPSParams p = o.params;
  if (o.model == ModelKind::LogGP) {
    // the paper's LogGP baseline: no protocol switch (S infinite) and constant overheads, one o' for
    // sending and receiving, early or late
    p.S = LogGPSParams::kInfinite;
    p.Oss = p.Ors = p.Osl = p.Orl = 0;
    p.o_r.reset();
    p.D = 0;
    p.raised_from.reset();
    p.raised_to.reset();
    p.large_from.reset();
    p.resend_buffered.reset();
    p.resend_rendezvous.reset();
    p.resend_cached_bytes.reset();
  }
  return p;
}

int ceil_log2(size_t n) {
  int r = 0;
  while ((size_t{1} << r) < n) r++;
  return r;
}

// Bytes of plain values, as the processes of a spread replay exchange their parts of the result.
struct ByteWriter {
  std::vector<uint8_t> bytes;
  template <typename T>
  void pod(const T& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    const auto* p = reinterpret_cast<const uint8_t*>(&v);
    bytes.insert(bytes.end(), p, p + sizeof(T));
  }
  template <typename T>
  void pods(const std::vector<T>& v) {
    static_assert(std::is_trivially_copyable_v<T>);
    pod(static_cast<uint64_t>(v.size()));
    const auto* p = reinterpret_cast<const uint8_t*>(v.data());
    bytes.insert(bytes.end(), p, p + v.size() * sizeof(T));
  }
  void text(const std::string& s) {
    pod(static_cast<uint64_t>(s.size()));
    bytes.insert(bytes.end(), s.begin(), s.end());
  }
};
struct ByteReader {
  const std::vector<uint8_t>& bytes;
  size_t at = 0;
  explicit ByteReader(const std::vector<uint8_t>& b) : bytes(b) {}
  const uint8_t* take(size_t n) {
    if (n > bytes.size() - at) throw std::runtime_error("replay: a process's part of the result is cut short");
    const uint8_t* p = bytes.data() + at;
    at += n;
    return p;
  }
  template <typename T>
  T pod() {
    T v;
    std::memcpy(&v, take(sizeof(T)), sizeof(T));
    return v;
  }
  template <typename T>
  void append(std::vector<T>& v) {
    const uint64_t n = pod<uint64_t>();
    if (n > (bytes.size() - at) / sizeof(T)) throw std::runtime_error("replay: a process's part of the result is cut short");
    const size_t old = v.size();
    v.resize(old + n);
    if (n) std::memcpy(static_cast<void*>(v.data() + old), take(n * sizeof(T)), n * sizeof(T));
  }
  std::string text() {
    const uint64_t n = pod<uint64_t>();
    const uint8_t* p = take(n);
    return std::string(reinterpret_cast<const char*>(p), n);
  }
  bool done() const { return at == bytes.size(); }
};

// The messages are numbered by sender, each rank's sends in its order (build_trace): a rank's ops, walked
// in order, meet its receives in their senders' parts, far apart in memory, a cache miss each. A walk that reads them (the paper's replay, the
// simulation's eager channels) asks for those of the op this many ahead while it is at the op in hand.
constexpr uint32_t kPrefetchOps = 8;
void prefetch_messages(const Trace& t, const Op& op) {
  const OpLinks links = t.links_of(op);
  for (uint32_t k = 0; k < links.size(); k++) {
    const Link l = links[k];
    if (l.id == kNone || l.kind == Link::PostColl || l.kind == Link::DoneColl) continue;
    __builtin_prefetch(&t.messages[l.id]);
  }
}

// ---- the discrete-event replay ------------------------------------------------------------------------
// Every rank runs its own ops on its own clock. An op that needs a time another rank has not reached yet
// (the receive post of a rendezvous send, the send of a receive, the last arrival at a collective) parks
// its rank until that time is known. The model's equations are causal, so the order in which ranks run
// does not change the result.
class Simulation {
  struct CollState;  // a collective instance in flight (below, with the collectives)

 public:
  Simulation(const Simulation&) = delete;  // together_ may point into it
  Simulation& operator=(const Simulation&) = delete;
  Simulation(const Trace& t, const ReplayOptions& o)
      : t_(t), o_(o), model_(effective_params(o)), p_(model_.params()), resent_(p_),
        chunk_model_(p_.scaled(p_.speed_at(p_.S))), chunk_resent_(chunk_model_.params()) {
    if (o.streams) {
      // the messages are the streams': as many as their links name, their senders by their runs of ids
      uint32_t ids = 0;
      for (const OpStream& s : *o.streams) ids = std::max(ids, s.message_ids());
      info_.resize(ids);
      senders_ = Senders(*o.streams);
    } else {
      info_.resize(t.messages.size());
    }
    marks_.resize(t.ranks.size());
    forget_mask_ = std::clamp(std::bit_floor(RankState::kSpansHeld / std::max<size_t>(t.ranks.size(), 1)),
                              RankState::kForgetSpansLeast, RankState::kForgetSpansEvery) - 1;
    size_t instances = t.collectives.size();
    if (o.streams)  // the instances are the streams': as many as their links name
      for (const OpStream& s : *o.streams) instances = std::max<size_t>(instances, s.instance_ids());
    coll_slot_.assign(instances, kNoColl);
    next_msg_waiter_.assign(t.ranks.size(), -1);
    last_member_pos_.assign(t.ranks.size(), {kNone, -1});
    waits_on_msg_.assign(t.ranks.size(), kNone);
    ranks_.resize(t.ranks.size());
    site_index_.resize(t.ranks.size());
    library_ = mpi_library(o.mpi_library.empty() ? o.params.library : o.mpi_library);
    if (ReplayPeers* peers = o.peers ? o.peers : replay_peers(); peers && peers->size() > 1 && !t.ranks.empty()) {
      peers_ = peers;
      me_ = peers->index();
      owner_.resize(t.ranks.size());
      for (size_t r = 0; r < t.ranks.size(); r++)
        owner_[r] = replay_owner(static_cast<int>(r), static_cast<int>(t.ranks.size()), peers->size());
      out_.resize(static_cast<size_t>(peers->size()));
      comm_owners_.resize(t.comms.size());
    }
    if (const auto& counted = t.receives_together; counted && (counted->empty() || counted->size() == t.messages.size()))
      together_ = &*counted;
    else if (!o.streams)
      own_together_ = receives_together(t);
    if (model_.eager_buffer_limited()) scan_channels();
    if (o.marks)  // at their number: grown by doubling they took up to twice as much, in every what-if's replay
      for (size_t r = 0; r < marks_.size() && r < o.marks->opens.size(); r++)
        if (mine(static_cast<int>(r))) marks_[r].reserve(o.marks->opens[r].size());
  }

  ReplayResult run() {
    ReplayResult res;
    res.mode = ReplayMode::Simulate;
    res.model = o_.model;
    res.params = p_;
    uint64_t t0 = std::numeric_limits<uint64_t>::max();
    if (o_.retiming) {
      retimed_.reserve(t_.ranks.size());
      for (size_t r = 0; r < t_.ranks.size(); r++) retimed_.push_back(o_.retiming->rank(r));
    }
    for (size_t r = 0; r < t_.ranks.size(); r++) {
      ranks_[r].w = window(static_cast<int>(r));
      if (ranks_[r].w.end > ranks_[r].w.first) t0 = std::min(t0, ranks_[r].w.start_ns);
    }
    next_op_.resize(t_.ranks.size());
    if (o_.streams) streamed_.resize(t_.ranks.size());
    for (size_t r = 0; r < t_.ranks.size(); r++) {
      RankState& s = ranks_[r];
      s.i = s.w.first;
      if (!o_.streams) {
        next_op_[r] = t_.ranks[r].ops.data() + s.i;
      } else if (mine(static_cast<int>(r))) {
        StreamedRank& q = streamed_[r].emplace((*o_.streams)[r]);
        for (uint32_t i = 0; i < s.w.first; i++) q.advance();
      }
      s.now = s.w.end > s.w.first ? static_cast<double>(s.w.start_ns - t0) : 0;
      if (mine(static_cast<int>(r))) ready_.push_back(static_cast<int>(r));
    }
    res.origin_ns = t0 == std::numeric_limits<uint64_t>::max() ? 0 : t0;
    if (o_.record_spans) {
      spans_.resize(t_.ranks.size());
      for (size_t r = 0; r < t_.ranks.size(); r++) {
        const size_t n = ops_of(static_cast<int>(r));
        spans_[r].resize(o_.span_ops.empty() ? n : r < o_.span_ops.size() ? std::min<size_t>(o_.span_ops[r], n) : 0);
      }
    }
    for (;;) {
      while (!ready_.empty() && !round_full()) {
        int r = ready_.back();
        ready_.pop_back();
        while (step(r)) {
          if (round_full()) {  // spread: the others are told before this rank goes on
            ready_.push_back(r);
            break;
          }
        }
      }
      // spread over processes: what this one's ranks made known goes to the others; a round in which no
      // process sent anything is the serial replay's empty queue
      if (peers_) {
        send_eager_starts();
        if (exchange()) continue;
      }
      // every rank done, or some wait for what never comes (a partner missing from the logs): release
      // the earliest parked rank with its measured time
      ReplayResult::Stall stall;
      for (size_t r = 0; r < ranks_.size(); r++)
        if (mine(static_cast<int>(r)) && ranks_[r].i < ranks_[r].w.end)
          stall.ranks.push_back({static_cast<int>(r), ranks_[r].i, ranks_[r].now});
      if (peers_) stall.ranks = all_parked(stall.ranks);
      if (stall.ranks.empty()) break;
      double best = std::numeric_limits<double>::max();
      int stuck = -1;
      for (const auto& p : stall.ranks)
        if (p.at_ns < best) best = p.at_ns, stuck = p.rank;
      stall.released = stuck;
      res.stalls.push_back(std::move(stall));
      if (mine(stuck)) {
        ranks_[stuck].force = true;
        ready_.push_back(stuck);
      }
    }
    double measured_end = 0;
    for (const SiteReplay& site : sites_) accumulate(ranks_[site.rank].b, site.predicted);
    for (size_t r = 0; r < ranks_.size(); r++) {
      if (!mine(static_cast<int>(r))) continue;
      RankState& s = ranks_[r];
      mark(static_cast<int>(r), s.w.end, false);  // phases opening at the window's end, about its tail
      const double tail = tail_of(static_cast<int>(r), s.w) * computation_factor(static_cast<int>(r), s.w.end);
      s.now += tail;
      s.b.computation += tail;
      mark(static_cast<int>(r), s.w.end, true);
      if (s.deferred_send_done != kUnknown && s.deferred_send_done > s.now) {  // completed by MPI_Finalize
        s.b.send_wait += s.deferred_send_done - s.now;
        s.now = s.deferred_send_done;
      }
      RankReplay rr;
      rr.rank = static_cast<int>(r);
      rr.predicted_ns = s.now;
      rr.predicted = s.b;
      if (s.w.end > s.w.first) {
        rr.measured_ns = static_cast<double>(s.w.stop_ns - t0);
        measured_end = std::max(measured_end, rr.measured_ns);
      }
      res.predicted_ns = std::max(res.predicted_ns, s.now);
      res.ranks.push_back(rr);
    }
    res.measured_ns = measured_end;
    res.sites = std::move(sites_);
    std::sort(res.sites.begin(), res.sites.end(),
              [](const SiteReplay& a, const SiteReplay& b) { return std::tie(a.rank, a.callsite) < std::tie(b.rank, b.callsite); });
    res.rendezvous_messages = rendezvous_messages_;
    res.rendezvous_bytes = rendezvous_bytes_;
    res.split_messages = split_messages_;
    res.unresolved_ops = unresolved_;
    res.messages_held = msg_pool_.most_held();
    res.collectives_held = most_colls_held_;
    res.schedule_steps_held = most_cached_steps_;
    res.schedule_cache_clears = cache_clears_;
    res.collectives_by_algorithm = coll_by_algorithm_;
    res.collectives_approximate = coll_approximate_;
    res.collectives_closed_formula = coll_closed_formula_;
    res.collective_messages = coll_messages_;
    res.collective_rendezvous_messages = coll_rendezvous_;
    res.collective_algorithms = coll_algorithms_;
    res.collective_approximations = coll_approximations_;
    res.marks = std::move(marks_);
    res.spans = std::move(spans_);
    if (peers_) gather(res);
    return res;
  }

 private:
  // The ranks parked on a message, first parked first: a list through the ranks (a rank is parked on one
  // thing at a time), 8 bytes a message where a list of its own took 24 and an allocation.
  struct Waiters {
    int32_t head = -1, tail = -1;
  };
  // A message's state while it is in flight: from the first time the replay asks for it (mostly its send's
  // or its receive's post) until both its sides' ops are done and, eager under a limited buffer, its
  // receiver took it out of the buffer (Channel::head passed it). Then no call reads it again, and its
  // room goes to the next message posted (MsgPool): the simulation holds the messages in flight, where a
  // state for every message of the trace took 40 bytes a message.
  enum : uint8_t { kSentSide = 1, kReceivedSide = 2, kBothSides = 3 };
  //
  // It holds the message's own fields, beside the times: from the trace's table as it is made (fill), or
  // walking op streams from the stream of the op that posted it (the sender's; the receiver's where no send
  // matched it), a receive's post saying only that its send is in the trace, and its sender where asked
  // (sender_of). No call reads a field before the post that fills it: a sender's calls follow its post, a
  // receiver's wait for the send's (ts).
  struct alignas(64) MsgState {
    double ts = kUnknown, tr = kUnknown;  // send and receive post times
    double start = kUnknown;              // an eager send's start: ts, or later when the eager buffer was full
    uint64_t bytes = 0;
    int32_t src = -1, dst = -1;           // src -1 where only a receive of it was read yet (sender_of)
    int32_t senders = 1;                  // messages sharing the receiver's bandwidth (receives together)
    bool split = false, counted = false;
    uint8_t done = 0;                     // the sides whose ops are done (kSentSide, kReceivedSide)
    bool synchronous : 1 = false, cached : 1 = false;
    bool has_send : 1 = false, has_recv : 1 = false;  // the trace has its send, its receive
    Waiters waiters;                      // beside the times they wait for: one cache line to post and wake
    // eager under a limited eager buffer, its receiver here: its sender-receiver pair's channel and its
    // place in it, from its post (kNone: none)
    uint32_t channel = kNone, pos = 0;
  };
  static_assert(sizeof(MsgState) == 64);
  // The states' room, in chunks that never move (a state is referred to while others are made) and reused
  // once freed.
  class MsgPool {
   public:
    MsgState& operator[](uint32_t k) { return chunks_[k >> kChunkBits][k & (kChunk - 1)]; }
    uint32_t take() {
      if (!free_.empty()) {
        const uint32_t k = free_.back();
        free_.pop_back();
        return k;
      }
      if (used_ == chunks_.size() * kChunk) chunks_.push_back(std::make_unique<MsgState[]>(kChunk));
      return used_++;
    }
    void give(uint32_t k) { free_.push_back(k); }
    uint32_t most_held() const { return used_; }  // given back ones are taken again first

   private:
    static constexpr uint32_t kChunkBits = 10, kChunk = uint32_t{1} << kChunkBits;
    std::vector<std::unique_ptr<MsgState[]>> chunks_;
    std::vector<uint32_t> free_;
    uint32_t used_ = 0;
  };
  struct RankState {
    ReplayWindow w;
    uint32_t i = 0;
    double now = 0;
    bool gap_done = false, posted = false, force = false;
    double op_start = 0;
    double deferred_send_done = kUnknown;  // a send made non-blocking: completed at the next MPI call
    std::map<SiteKey, double> preposted;   // call site -> when its next receive is posted (made an Irecv)
    std::set<SiteKey> preposting;          // posted, but matched only at the rank's next MPI call
    bool preposted_now = false;
    // what is the rank's alone: its computation, and a deferred send's wait at the end; its calls' parts are
    // its sites' (SiteReplay::predicted), added in when the replay ends
    Breakdown b;
    // when the rank was in MPI (each replayed call's start and end), kept while the eager buffer is
    // limited: a message reaching it is taken out of the buffer then. Those before first_span ended
    // before any message still to be asked about can arrive.
    std::vector<std::pair<double, double>> in_mpi;
    size_t first_span = 0;
    // the spans forgotten, where they may be, every this many calls at most: every 4096, a replay of 1024
    // ranks of 5000 calls each held nearly every call's span, 16 bytes a call (its peak 90 MB above the
    // trace, now 23), and the spans read in taken() were further out of the cache (the ring of
    // bench/ring_trace.hpp, 64 x 100000, replays at 18.8-20.4 M events/s where it did at 17.6-19.3,
    // mpiadvise-synth's halo at 16.7-17.7 where it did at 15.8-16.2). Every kSpansHeld / ranks calls where
    // that is fewer, down to kForgetSpansLeast (Simulation::forget_mask_): 256 spans a rank, doubled, were
    // 8 MB of a report's peak at 4096 ranks.
    static constexpr size_t kForgetSpansEvery = 256, kForgetSpansLeast = 16, kSpansHeld = size_t{1} << 16;
    // what the rank waits for while parked in its current call (none: it runs, or is ready to)
    enum class Parked { None, Message, Rank, Collective } parked = Parked::None;
    uint32_t parked_id = 0;
  };
  // The op a rank is at, as a step reads it: the trace's, or its op stream's (ReplayOptions::streams).
  struct Here {
    uint64_t t_enter, t_exit;
    uint32_t callsite;
    uint8_t call;
    OpKind kind;
    OpLinks links;
    const StreamOp* streamed;  // streamed: the op with what its links carry; null from the trace
  };
  // A rank's ops read from its op stream: the op it is at (the last once past it) and the exit of the one
  // before.
  struct StreamedRank {
    explicit StreamedRank(const OpStream& s) : cursor(s) { cursor.next(op); }
    OpCursor cursor;
    StreamOp op;
    uint64_t exit_before = 0;
    // to the next op; at the last, it stays (its exit the one before)
    void advance() {
      exit_before = op.t_exit();
      cursor.next(op);
    }
  };
  // The eager messages from one rank to another, in the sender's order as it posts them, and the first of
  // them that may still be in the receiver's eager buffer. A message's place counts from the channel's
  // first; those before head go from the list now and then (base: the place of its first entry).
  struct Channel {
    int src = -1;
    std::vector<uint32_t> messages;  // the messages at places [base, base + size)
    size_t base = 0;
    uint32_t at(size_t pos) const { return messages[pos - base]; }
    size_t end() const { return base + messages.size(); }
    size_t head = 0, computed = 0;   // [head, computed): started, maybe still in the buffer
    uint64_t bytes = 0, count = 0;   // what [head, computed) takes in the buffer
    double head_taken = 0, last_start = 0;  // when the last message before head was taken; the last start
  };
  // What a rank that cannot go on waits for: a message's other side, or another rank's progress.
  struct Block {
    bool on_rank = false;
    uint32_t id = 0;
  };

  const Trace& t_;
  const ReplayOptions& o_;
  // by rank, where ReplayOptions::retiming sets the times: each rank's cursor over its ops' times
  mutable std::vector<Retiming::Rank> retimed_;
  LogGPS model_;
  const LogGPSParams& p_;
  const ResentModels resent_;
  // a split message's chunks, at the run's speed for messages of S bytes (LogGPSParams::speed_at)
  const LogGPS chunk_model_;
  const ResentModels chunk_resent_;
  const LogGPS& model_of(const MsgState& s) const {
    if (splits(s)) return s.cached ? chunk_resent_.of(chunk_model_, s.bytes, true, true) : chunk_model_;
    return s.cached ? resent_.of(model_, s.bytes, true) : model_;
  }
  // every computation gap takes ReplayOptions::compute_factor (no ranks or sites chosen): asked once a gap
  const bool uniform_compute_ = o_.compute_ranks.empty() && o_.compute_sites.empty();
  // What the simulation keeps of every message: where its state is while it is in flight.
  static constexpr uint32_t kFreedMsg = kNone - 1;
  struct MsgInfo {
    // its state's place in msg_pool_: kNone before the replay first asks for it, kFreedMsg once freed. In a
    // spread replay, only the messages between two ranks of the process are: the others' sides are done in
    // two processes, and the updates they exchange (PeerUpdate) are of those alone.
    uint32_t slot = kNone;
  };
  // MsgState::senders by message: the trace's receives_together, or counted here for a trace without it
  // (empty: 1 for every message); walking op streams, none (the senders' streams carry it)
  std::vector<int32_t> own_together_;
  const std::vector<int32_t>* together_ = &own_together_;
  mutable std::vector<MsgInfo> info_;
  mutable MsgPool msg_pool_;
  [[gnu::always_inline]] MsgState& msg(uint32_t m) const {
    MsgInfo& i = info_[m];
    if (__builtin_expect(i.slot >= kFreedMsg, 0)) new_msg_state(i, m);
    return msg_pool_[i.slot];
  }
  [[gnu::noinline]] void new_msg_state(MsgInfo& i, uint32_t m) const {
    if (i.slot == kFreedMsg)
      throw std::logic_error("replay: message " + std::to_string(m) + " asked for after both its sides were done");
    i.slot = msg_pool_.take();
    MsgState& s = msg_pool_[i.slot];
    s = MsgState{};
    if (!o_.streams) fill(s, t_.messages[m], together_->empty() ? 1 : (*together_)[m]);
  }
  static void fill(MsgState& s, const Message& m, int32_t senders) {
    s.bytes = m.bytes, s.src = m.src, s.dst = m.dst, s.senders = senders;
    s.synchronous = m.synchronous, s.cached = m.cached;
    s.has_send = m.send_op != kNone, s.has_recv = m.recv_op != kNone;
  }
  // Walking op streams, the message's fields from the op that posted it (its send; its receive where no
  // send matched it), or where the op is a receive some send matched (whose fields are in `received`, not
  // read here), what it says: its send is in the trace.
  void fill_posted(MsgState& s, int r, uint32_t id, const Here& op, bool send) {
    for (const StreamOp::Posted& p : op.streamed->posted)
      if (p.id == id) {
        fill(s, p.m->fields, p.m->together);
        s.has_send = p.m->sent, s.has_recv = !p.m->sent || p.m->answered;
        return;
      }
    if (send)
      throw std::runtime_error(fmt::format("replay: message {} is posted by a send of rank {} whose op stream does not "
                                           "carry its fields", id, r));
    s.has_send = s.has_recv = true;
    s.dst = r;
  }
  // The sender of message id, of its state s: the state's, or walking op streams where only its receive
  // was read, the rank whose stream's sends name it (OpStream::sent; -1: none).
  int sender_of(uint32_t id, const MsgState& s) const {
    if (s.src >= 0 || streamed_.empty() || !s.has_send) return s.src;
    return senders_.of(id);
  }
  Senders senders_;  // walking op streams: the ranks that sent the messages
  // The op completing a side of message m is done: no call of that side reads the message again. Freed
  // once both are, unless it is eager and its receiver has not taken it yet as far as the replay worked
  // out (Channel::head not past it): the sender's next messages still ask when it was taken (eager_start).
  void side_done(uint32_t m, uint8_t side) {
    const MsgInfo& i = info_[m];
    if (i.slot >= kFreedMsg) return;  // never asked for: an op gone on with its measured time (kept then)
    MsgState& s = msg_pool_[i.slot];
    s.done |= side;
    if (peers_ && s.done != kBothSides && other_side_elsewhere(m, s, side)) s.done = kBothSides;
    if (s.done == kBothSides && (s.channel == kNone || channels_[s.channel].head > s.pos)) free_msg(m);
  }
  // Spread, whether the other side of a message whose `side` is done here is another process's and
  // nothing here asks for the message again: the send's side, its receiver elsewhere (what that process
  // tells of it later, a receive's post, is dropped: apply); the receive's side, its sender elsewhere,
  // its send's post told already and no eager start of it to compute here (a limited eager buffer's
  // messages stay). Else a message crossing processes was held to the end of the replay on both.
  bool other_side_elsewhere(uint32_t m, const MsgState& s, uint8_t side) const {
    if (side == kSentSide) return remote(s.dst);
    return s.ts != kUnknown && s.channel == kNone && remote(sender_of(m, s));
  }
  void free_msg(uint32_t m) {
    uint32_t& k = info_[m].slot;
    // kept where a rank is still listed as waiting for it (a serial replay lists none by then: a rank
    // waits for a message's post, and posting it emptied the list)
    if (msg_pool_[k].waiters.head >= 0) return;
    msg_pool_.give(k);
    k = kFreedMsg;
  }
  std::vector<std::vector<int>> waiting_rank_;
  std::vector<int32_t> next_msg_waiter_;  // by rank: the next rank in its message's list
  mutable std::vector<std::pair<uint32_t, int>> last_member_pos_;  // by rank: its last instance and place in it (member_pos)
  std::vector<uint32_t> waits_on_msg_;    // by rank: the message whose list it is in, or kNone
  std::vector<Channel> channels_;
  std::vector<std::vector<uint32_t>> channels_into_;  // per receiver
  size_t forget_mask_ = 0;  // a rank's spans are forgotten where they may be each time it has this + 1 more
  std::vector<std::vector<std::pair<int, uint32_t>>> channels_from_;
  const std::vector<std::pair<int, uint32_t>> no_channels_;  // per sender: (receiver, channel), by receiver
  // An eager message under a limited eager buffer: it goes through its pair's channel, where its receiver is.
  bool channelled(const MsgState& m) const {
    return !channels_from_.empty() && !rendezvous(m) && m.dst >= 0 && m.dst < static_cast<int>(t_.ranks.size());
  }
  // The channel's list keeps what is not taken yet (out of line: eager_start's pop inlines without it).
  [[gnu::noinline]] static void forget_taken(Channel& c) {
    c.messages.erase(c.messages.begin(), c.messages.begin() + static_cast<std::ptrdiff_t>(c.head - c.base));
    c.base = c.head;
  }
  // Message m joins its pair's channel, in the order its sender posts: before its post time is set. Its
  // channel is there when the message is a send of its sender (src), as build_trace's are.
  void join_channel(uint32_t m_id, MsgState& s) {
    const auto& from = s.src >= 0 && static_cast<size_t>(s.src) < channels_from_.size() ? channels_from_[s.src] : no_channels_;
    const auto it = std::lower_bound(from.begin(), from.end(), std::pair<int, uint32_t>{s.dst, 0});
    if (it == from.end() || it->first != s.dst)
      throw std::logic_error(fmt::format("replay: message {} from rank {} to {} is posted, but no send of its sender's "
                                         "names it", m_id, s.src, s.dst));
    const uint32_t c_id = it->second;
    Channel& c = channels_[c_id];
    s.channel = c_id;
    s.pos = static_cast<uint32_t>(c.end());
    c.messages.push_back(m_id);
  }
  Block blocked_on_;
  int running_ = -1;  // the rank being stepped
  std::vector<RankState> ranks_;
  std::vector<std::vector<double>> marks_;
  std::vector<std::vector<ReplayResult::Span>> spans_;  // with ReplayOptions::record_spans
  // The ranks that may go on, last made ready first: a rank woken by the one that just ran finds its
  // message, and the waker's state, still in the cache (first made ready first, 64 ranks of the ring in
  // bench/replay_bench.cpp ran 11.5 M events/s instead of 13.5). The order does not change a time.
  std::vector<int> ready_;
  std::vector<const Op*> next_op_;  // by rank: its op ranks_[r].i, for make_ready to prefetch (the trace's ops)
  // with ReplayOptions::streams: by rank (this process's ranks only), its walk through its stream
  std::vector<std::optional<StreamedRank>> streamed_;
  Here here(int r, uint32_t i) const {
    if (streamed_.empty()) {
      const Op& op = t_.ranks[r].ops[i];
      return {op.t_enter, op.t_exit(), op.callsite, op.call, op.kind, t_.links_of(op), nullptr};
    }
    const StreamOp& op = streamed_[r]->op;
    return {op.t_enter, op.t_exit(), op.callsite, op.call, op.kind, op.links(), &op};
  }
  size_t ops_of(int r) const { return o_.streams ? (*o_.streams)[r].ops() : t_.ranks[r].ops.size(); }
  // the sites' figures, in the order first met; by rank, a call site id's index into them (ids are
  // numbered from 0 on each rank: a dense table, but an id far beyond the sites met goes to the map)
  std::vector<SiteReplay> sites_;
  struct SiteMemo {
    const std::set<SiteKey>* sites = nullptr;
    std::vector<std::vector<int8_t>> known;  // by rank and call site id: -1 not asked yet, 0 no, 1 yes
  };
  mutable std::deque<SiteMemo> site_memos_;  // one for each of the options' sets asked about
  std::vector<std::vector<uint32_t>> site_index_;
  std::map<std::pair<int, uint32_t>, uint32_t> sparse_sites_;
  uint64_t rendezvous_messages_ = 0, rendezvous_bytes_ = 0, split_messages_ = 0, unresolved_ = 0;

  // ---- spread over processes (analyzer/replay_peers.hpp) ------------------------------------------------
  ReplayPeers* peers_ = nullptr;  // null: every rank here
  int me_ = 0;
  uint64_t rounds_ = 0, updates_ = 0, outgoing_ = 0;
  std::vector<int> owner_;                         // by rank: its process
  std::vector<std::vector<PeerUpdate>> out_;       // by process: what to tell it at the next exchange
  std::vector<std::vector<int>> comm_owners_;      // by communicator: the other processes owning members
  std::vector<uint32_t> eager_starts_;  // eager messages from another process's rank to ours, start unknown
  // instantiate's scratch, kept between instances
  std::vector<uint32_t> scratch_ids_;

  bool mine(int r) const { return !peers_ || (r >= 0 && static_cast<size_t>(r) < owner_.size() && owner_[r] == me_); }
  // whether rank r is in the logs and another process steps it
  bool remote(int r) const { return peers_ && r >= 0 && static_cast<size_t>(r) < owner_.size() && owner_[r] != me_; }
  void tell(int rank, const PeerUpdate& u) {
    out_[static_cast<size_t>(owner_[rank])].push_back(u);
    outgoing_++;
  }
  // A round ends once this many updates wait to be told (a process whose ranks need nothing from the others
  // would otherwise hold its whole trace's): the result is the same with more rounds.
  static constexpr uint64_t kRoundUpdates = uint64_t{1} << 20;
  bool round_full() const { return outgoing_ >= kRoundUpdates; }
  // the other processes owning members of the instance's communicator
  const std::vector<int>& coll_owners(const CollState& c) {
    const uint32_t comm = c.inst.comm;
    auto& owners = comm_owners_[comm];
    if (owners.empty()) {
      std::vector<char> seen(static_cast<size_t>(peers_->size()), 0);
      auto add_rank = [&](int r) {
        if (r >= 0 && static_cast<size_t>(r) < owner_.size() && owner_[r] != me_ && !seen[owner_[r]]) {
          seen[owner_[r]] = 1;
          owners.push_back(owner_[r]);
        }
      };
      for (int r : t_.comms[comm].members) add_rank(r);
      for (int r : t_.comms[comm].remote) add_rank(r);
      for (const auto& m : c.inst.members) add_rank(m.first);
      if (owners.empty()) owners.push_back(-1);  // none: computed once
    }
    return owners;
  }
  void tell_members(const CollState& c, const PeerUpdate& u) { tell_processes(coll_owners(c), u); }
  void tell_processes(const std::vector<int>& processes, const PeerUpdate& u) {
    for (int p : processes)
      if (p >= 0) {
        out_[static_cast<size_t>(p)].push_back(u);
        outgoing_++;
      }
  }
  // The other processes owning the instance's members: those its closed formula's arrivals are for (a
  // process owning only the communicator's ranks missing from it would hold the instance to the end). Its
  // communicator's, where its members are the communicator's.
  const std::vector<int>& arrival_owners(const CollState& c) {
    const TraceComm& comm = t_.comms[c.inst.comm];
    if (comm.remote.empty() && c.inst.members.size() == comm.members.size()) return coll_owners(c);
    std::vector<int>& owners = scratch_owners_;
    owners.clear();
    for (const auto& m : c.inst.members)
      if (remote(m.first) && std::ranges::find(owners, owner_[m.first]) == owners.end()) owners.push_back(owner_[m.first]);
    return owners;
  }
  std::vector<int> scratch_owners_;
  // Whether this process counts the instance in the result's figures (each instance once over processes:
  // where its first member is).
  bool counts_here(const CollState& c) const { return mine(c.inst.members.front().first); }

  // One round: returns whether any process told another anything (then ranks may have been woken here).
  bool exchange() {
    std::vector<PeerUpdate> in;
    const uint64_t sent = peers_->exchange(out_, in);
    outgoing_ = 0;
    rounds_++;
    updates_ += sent;
    for (const PeerUpdate& u : in) apply(u);
    return sent > 0;
  }

  void apply(const PeerUpdate& u) {
    switch (u.kind) {
      case PeerUpdate::SendBytes:  // walking op streams, before its SendPosted
        if (info_[u.id].slot == kFreedMsg) break;  // its side here is done (side_done): nothing asks for it
        msg(u.id).bytes = u.bytes();
        msg(u.id).senders = static_cast<int32_t>(u.a);
        break;
      case PeerUpdate::SendPosted: {  // to the receiver's process
        if (info_[u.id].slot == kFreedMsg) break;
        MsgState& s = msg(u.id);
        s.split = u.flag & PeerUpdate::kSplit;
        s.synchronous = (u.flag & PeerUpdate::kSynchronous) != 0, s.cached = (u.flag & PeerUpdate::kCached) != 0;
        s.has_send = true, s.has_recv = (u.flag & PeerUpdate::kAnswered) != 0;
        s.src = static_cast<int32_t>(u.a), s.dst = static_cast<int32_t>(u.b);
        const bool channel = channelled(s);
        if (channel) join_channel(u.id, s);
        set_ts(s, u.t);
        if (channel) eager_starts_.push_back(u.id);
        break;
      }
      case PeerUpdate::RecvPosted:
        if (info_[u.id].slot == kFreedMsg) break;
        set_tr(u.id, u.t);
        break;
      case PeerUpdate::EagerStart:
        if (info_[u.id].slot == kFreedMsg) break;
        msg(u.id).start = u.t;
        wake_msg(u.id);
        break;
      case PeerUpdate::CollArrived: {
        CollState* c = coll_of(u.id, true);
        // done here, or timed: its arrivals are its members' completions now
        if (!c || c->state == RunState::Timed) break;
        if (!c->known && c->member_t.size() < u.b) c->member_t.resize(u.b, kUnknown);  // b: its members
        const std::span<double> a = c->member_t;
        if (u.a >= a.size() || a[u.a] != kUnknown) break;
        a[u.a] = u.t;
        // (every arrival known: its members here arrived, and it is known)
        if (c->known && std::none_of(a.begin(), a.end(), [](double x) { return x == kUnknown; })) finish_collective(*c);
        break;
      }
      case PeerUpdate::CollSendPosted:
      case PeerUpdate::CollRecvPosted: {
        CollState* c = coll_of(u.id, true);
        if (!c) break;  // its members here are done
        if (c->state == RunState::Undecided) c->pending.push_back(u);
        else if (c->run) apply_coll_post(*c->run, u);
        break;  // a closed formula's, or a run whose members here are done: nothing waits for it
      }
      case PeerUpdate::FlagRaised: {  // id: the communicator
        FlagLine& f = flag_line(u.id, u.flag, static_cast<int>(u.a));
        f.at[++f.raised % kFlagRing] = u.t;
        for (int r : f.waiting) make_ready(r);
        f.waiting.clear();
        break;
      }
    }
  }

  // An eager message from another process's rank to one of ours whose start this process computes (where
  // the receiver's eager buffer and its time in MPI are), told to the sender's process once known.
  void send_eager_starts() {
    size_t keep = 0;
    for (uint32_t m : eager_starts_) {
      running_ = -1;  // asked for the sender, as the sender's own step asks in the serial replay
      const double start = eager_start(m);
      if (start == kUnknown) {
        eager_starts_[keep++] = m;
        continue;
      }
      PeerUpdate u;
      u.kind = PeerUpdate::EagerStart;
      u.id = m;
      u.t = start;
      tell(msg(m).src, u);
    }
    eager_starts_.resize(keep);
  }

  // The parked ranks of every process, in rank order (the processes own contiguous blocks in order).
  std::vector<ReplayResult::Stall::Parked> all_parked(const std::vector<ReplayResult::Stall::Parked>& mine) {
    std::vector<uint8_t> bytes(mine.size() * sizeof(ReplayResult::Stall::Parked));
    if (!mine.empty()) std::memcpy(bytes.data(), mine.data(), bytes.size());
    std::vector<ReplayResult::Stall::Parked> all;
    for (const auto& part : peers_->allgather(bytes)) {
      const size_t n = part.size() / sizeof(ReplayResult::Stall::Parked);
      all.resize(all.size() + n);
      if (n) std::memcpy(all.data() + all.size() - n, part.data(), n * sizeof(ReplayResult::Stall::Parked));
    }
    return all;
  }

  // Every process's part of the result, merged into the serial one on every process.
  void gather(ReplayResult& res) {
    ByteWriter w;
    w.pod(res.predicted_ns);
    w.pod(res.measured_ns);
    w.pod(res.messages_held);
    w.pod(res.collectives_held);
    w.pod(res.schedule_steps_held);
    w.pod(res.schedule_cache_clears);
    w.pods(res.ranks);
    w.pods(res.sites);
    for (uint64_t x : {res.rendezvous_messages, res.rendezvous_bytes, res.split_messages, res.unresolved_ops,
                       res.collectives_by_algorithm, res.collectives_approximate, res.collectives_closed_formula,
                       res.collective_messages, res.collective_rendezvous_messages})
      w.pod(x);
    for (const auto* counts : {&res.collective_algorithms, &res.collective_approximations}) {
      w.pod(static_cast<uint64_t>(counts->size()));
      for (const auto& [name, n] : *counts) {
        w.text(name);
        w.pod(n);
      }
    }
    // the ranks' phase marks and spans, each rank of ours with its number
    w.pod(static_cast<uint64_t>(res.marks.size()));
    for (size_t r = 0; r < res.marks.size(); r++)
      if (mine(static_cast<int>(r))) {
        w.pod(static_cast<uint64_t>(r));
        w.pods(res.marks[r]);
      }
    w.pod(static_cast<uint64_t>(res.spans.size()));
    for (size_t r = 0; r < res.spans.size(); r++)
      if (mine(static_cast<int>(r))) {
        w.pod(static_cast<uint64_t>(r));
        w.pods(res.spans[r]);
      }
    ReplayResult all;
    all.mode = res.mode, all.model = res.model, all.params = res.params, all.origin_ns = res.origin_ns;
    all.processes = peers_->size();
    all.exchange_rounds = rounds_, all.exchanged_updates = updates_;
    all.stalls = std::move(res.stalls);
    all.marks.resize(res.marks.size());
    all.spans.resize(res.spans.size());
    const auto parts = peers_->allgather(w.bytes);
    for (size_t p = 0; p < parts.size(); p++) {
      ByteReader rd(parts[p]);
      auto theirs = [&](uint64_t r) {
        return replay_owner(static_cast<int>(r), static_cast<int>(owner_.size()), peers_->size()) == static_cast<int>(p);
      };
      all.predicted_ns = std::max(all.predicted_ns, rd.pod<double>());
      all.measured_ns = std::max(all.measured_ns, rd.pod<double>());
      all.messages_held = std::max(all.messages_held, rd.pod<uint64_t>());
      all.collectives_held = std::max(all.collectives_held, rd.pod<uint64_t>());
      all.schedule_steps_held = std::max(all.schedule_steps_held, rd.pod<uint64_t>());
      all.schedule_cache_clears = std::max(all.schedule_cache_clears, rd.pod<uint64_t>());
      rd.append(all.ranks);
      rd.append(all.sites);
      for (uint64_t* x : {&all.rendezvous_messages, &all.rendezvous_bytes, &all.split_messages, &all.unresolved_ops,
                          &all.collectives_by_algorithm, &all.collectives_approximate, &all.collectives_closed_formula,
                          &all.collective_messages, &all.collective_rendezvous_messages})
        *x += rd.pod<uint64_t>();
      for (auto* counts : {&all.collective_algorithms, &all.collective_approximations})
        for (uint64_t n = rd.pod<uint64_t>(); n > 0; n--) {
          std::string name = rd.text();
          (*counts)[name] += rd.pod<uint64_t>();
        }
      for (uint64_t r = 0, n = rd.pod<uint64_t>(); r < n; r++)
        if (theirs(r)) rd.append(all.marks.at(rd.pod<uint64_t>()));
      for (uint64_t r = 0, n = rd.pod<uint64_t>(); r < n; r++)
        if (theirs(r)) rd.append(all.spans.at(rd.pod<uint64_t>()));
      if (!rd.done()) throw std::runtime_error("replay: a process's part of the result does not read back whole");
    }
    std::sort(all.ranks.begin(), all.ranks.end(), [](const RankReplay& a, const RankReplay& b) { return a.rank < b.rank; });
    std::sort(all.sites.begin(), all.sites.end(),
              [](const SiteReplay& a, const SiteReplay& b) { return std::tie(a.rank, a.callsite) < std::tie(b.rank, b.callsite); });
    res = std::move(all);
  }

  // With a limited eager buffer: the sender-receiver pairs with eager messages, each a channel (its
  // messages join it as they are posted: join_channel), by sender. One pass over the messages, which a
  // built trace numbers by sender and its order of sending (those no send posted, after them, have none);
  // a trace made otherwise is taken by sender all the same: the pass starts over in that order at the
  // first message out of it (a first pass only to find out took most of a simulation's set-up). Walking
  // op streams, the pairs are those of the messages' fields each sender's stream carries (its table).
  void scan_channels() {
    waiting_rank_.resize(t_.ranks.size());
    if (o_.streams) {
      scan_stream_channels();
    } else if (!scan_channels_in({})) {
      std::vector<uint32_t> order(t_.messages.size());  // the messages by sender
      std::iota(order.begin(), order.end(), 0u);
      std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return t_.messages[a].src < t_.messages[b].src; });
      scan_channels_in(order);
    }
  }
  // The channels, the messages taken in `order` (empty: by id, which must be by sender: false, and
  // nothing made, where one is not).
  bool scan_channels_in(const std::vector<uint32_t>& order) {
    const int world = static_cast<int>(t_.ranks.size());
    channels_.clear();
    channels_into_.assign(t_.ranks.size(), {});
    channels_from_.assign(t_.ranks.size(), {});
    // by receiver, the channel from the sender at hand (reset after each sender: its receivers only)
    std::vector<uint32_t> to(t_.ranks.size(), kNone);
    std::vector<int> receivers;
    int sender = -1, last = -1;
    const auto sender_done = [&] {
      if (sender < 0) return;
      auto& from = channels_from_[sender];
      for (int d : receivers) from.emplace_back(d, to[d]), to[d] = kNone;
      std::sort(from.begin(), from.end());
      receivers.clear();
    };
    for (size_t i = 0; i < t_.messages.size(); i++) {
      const Message& m = t_.messages[order.empty() ? i : order[i]];
      if (m.send_op == kNone) continue;
      if (order.empty()) {
        if (m.src < last) {
          channels_.clear();
          return false;
        }
        last = m.src;
      }
      if (m.src < 0 || m.src >= world) continue;
      if (m.src != sender) {
        sender_done();
        sender = m.src;
      }
      if (rendezvous(m) || m.dst < 0 || m.dst >= world) continue;
      uint32_t& c = to[m.dst];
      if (c == kNone) {
        c = static_cast<uint32_t>(channels_.size());
        channels_.emplace_back().src = sender;
        channels_into_[m.dst].push_back(c);
        receivers.push_back(m.dst);
      }
    }
    sender_done();
    return true;
  }

  void scan_stream_channels() {
    const int world = static_cast<int>(t_.ranks.size());
    channels_.clear();
    channels_into_.assign(t_.ranks.size(), {});
    channels_from_.assign(t_.ranks.size(), {});
    // a sender's receivers, sorted once: each put in place in the sorted list as met, a table listing
    // them backwards took R^2 moves
    std::vector<int> receivers;
    for (int src = 0; src < world; src++) {
      receivers.clear();
      for (const StreamMessage& m : (*o_.streams)[src].message_table()) {
        const Message& f = m.fields;
        if (m.sent && f.src == src && !rendezvous(f) && f.dst >= 0 && f.dst < world) receivers.push_back(f.dst);
      }
      std::sort(receivers.begin(), receivers.end());
      receivers.erase(std::unique(receivers.begin(), receivers.end()), receivers.end());
      auto& from = channels_from_[src];
      for (int d : receivers) {
        const auto c = static_cast<uint32_t>(channels_.size());
        channels_.emplace_back().src = src;
        channels_into_[d].push_back(c);
        from.emplace_back(d, c);
      }
    }
  }

  // When an eager message is taken out of the receiver's buffer: the receiver drains it whenever it is
  // in MPI, so at its arrival if the receiver is in a call then, else at the receiver's next call. kUnknown
  // (and blocked_on_ set) while the receiver's replay has not reached that time. A receiver parked in a
  // call since before the arrival, for a message this sender has yet to post or in a collective, is in
  // that call when the message arrives (it cannot leave it before the sender goes on).
  double taken(uint32_t m_id) {
    const MsgState& m = msg(m_id);
    const double arrival = model_of(m).eager_arrival(m.bytes, m.start, m.senders);
    if (!m.has_recv) return arrival;  // no receiver in the logs
    const RankState& d = ranks_[m.dst];
    // the first span ending at or after the arrival: the spans end in order, and an arrival is mostly
    // among the last few, so the search goes back from the end in doubling steps before it bisects (a
    // bisection of the whole took a cache miss for each of a dozen steps)
    auto lo = d.in_mpi.begin() + static_cast<std::ptrdiff_t>(d.first_span), hi = d.in_mpi.end();
    for (std::ptrdiff_t back = 1; hi != lo; back *= 2) {
      const auto probe = hi - std::min(back, hi - lo);
      if (probe->second < arrival) {
        lo = probe + 1;
        break;
      }
      hi = probe;
    }
    auto it = std::lower_bound(lo, hi, arrival, [](const std::pair<double, double>& span, double t) { return span.second < t; });
    if (it != d.in_mpi.end()) return std::max(arrival, it->first);  // spans end in order
    if (d.i >= d.w.end) return arrival;  // past its last call: MPI_Finalize drains it
    if (d.gap_done && d.op_start >= arrival) return d.op_start;
    if (d.gap_done && m.dst == running_) return arrival;  // the receiver asks, in a call that needs this message or a later one
    if (d.gap_done && (d.parked == RankState::Parked::Collective ||
                       (d.parked == RankState::Parked::Message && msg(d.parked_id).ts == kUnknown &&
                        sender_of(d.parked_id, msg(d.parked_id)) == m.src)))
      return arrival;
    blocked_on_ = {true, static_cast<uint32_t>(m.dst)};
    return kUnknown;
  }

  // When an eager send starts: when posted, unless the receiver's eager buffer holds no room for it then;
  // it then waits until the receiver took enough of the earlier ones, in order (and it never starts before
  // an earlier message of the pair). kUnknown (blocked_on_ set) while that needs a time not replayed yet.
  // The earlier messages' starts come first; the buffer's content is kept as running sums.
  double eager_start(uint32_t m_id) {
    MsgState& s = msg(m_id);
    if (s.start != kUnknown) return s.start;
    if (s.ts == kUnknown) {
      blocked_on_ = {false, m_id};
      return kUnknown;
    }
    if (!channelled(s)) return s.start = s.ts;
    if (remote(s.dst)) {  // computed where the receiver is, and told (PeerUpdate::EagerStart)
      blocked_on_ = {false, m_id};
      return kUnknown;
    }
    Channel& c = channels_[s.channel];
    const size_t pos = s.pos;
    while (c.computed < pos)
      if (eager_start(c.at(c.computed)) == kUnknown) return kUnknown;
    auto pop = [&](double when) {
      const uint32_t taken_id = c.at(c.head);
      c.bytes -= model_.buffered_bytes(msg(taken_id).bytes);
      c.count--;
      c.head_taken = std::max(c.head_taken, when);
      c.head++;
      if (msg(taken_id).done == kBothSides) free_msg(taken_id);  // its sides were done before it left
      if (c.head - c.base >= 1024 && c.head - c.base >= c.messages.size() / 2) forget_taken(c);
    };
    while (c.head < pos) {  // what the receiver took by the time this one is posted
      double when = taken(c.at(c.head));
      if (when == kUnknown || when > s.ts) break;
      pop(when);
    }
    const uint64_t own = model_.buffered_bytes(s.bytes);
    while (c.head < pos && !model_.eager_buffer_holds(c.bytes + own, c.count + 1)) {  // room made by waiting
      double when = taken(c.at(c.head));
      if (when == kUnknown) return kUnknown;
      pop(when);
    }
    s.start = std::max({s.ts, c.last_start, c.head_taken});
    c.bytes += own, c.count++, c.computed++;
    c.last_start = s.start;
    return s.start;
  }

  // The factor of the computation before op i of rank r (MPI_Finalize's, or past the last op, for the tail).
  double computation_factor(int r, uint32_t i) const {
    return uniform_compute_ ? o_.compute_factor : chosen_computation_factor(r, i);
  }
  [[gnu::noinline]] double chosen_computation_factor(int r, uint32_t i) const {
    if (!o_.compute_ranks.empty() && !o_.compute_ranks.count(r)) return 1.0;
    if (o_.compute_sites.empty()) return o_.compute_factor;
    const size_t n = ops_of(r);
    if (n == 0) return 1.0;
    // streamed, the op it is at: op i, or the last past the last
    const uint32_t callsite = streamed_.empty() ? t_.ranks[r].ops[std::min<size_t>(i, n - 1)].callsite : streamed_[r]->op.callsite;
    return at(o_.compute_sites, r, callsite) ? o_.compute_factor : 1.0;
  }

  // An op's entry and exit as replayed: the retiming's where given (ReplayOptions::retiming: a rank's ops
  // asked in their order, the one before at most once behind), else as measured.
  uint64_t enter_ns(int r, uint32_t i) const {
    if (!o_.retiming) return t_.ranks[r].ops[i].t_enter;
    Retiming::Rank& c = retimed_[r];
    c.at(i);
    return c.enter();
  }
  uint64_t exit_ns(int r, uint32_t i) const {
    if (!o_.retiming) return t_.ranks[r].ops[i].t_exit();
    Retiming::Rank& c = retimed_[r];
    if (c.op() == i + 1) return c.exit_before();
    c.at(i);
    return c.exit();
  }
  // The rank's replay window; retimed, its start as retimed, and its stop once the replay is past its ops
  // (tail_of())
  ReplayWindow window(int r) const {
    ReplayWindow w = o_.streams ? (*o_.streams)[r].window() : replay_window(t_.ranks[r]);
    if (o_.retiming && ops_of(r) != 0) w.start_ns = w.first ? exit_ns(r, 0) : enter_ns(r, 0);
    return w;
  }
  // The computation after the rank's last replayed call (its window's stop set first where retimed).
  double tail_of(int r, ReplayWindow& w) const {
    const size_t n = ops_of(r);
    if (n == 0) return 0;
    // streamed, the rank is past its window's last op: the exit before the op it is at is that op's
    const uint64_t last_exit = w.end > w.first ? exit_before(r, w.end) : 0;
    if (o_.retiming) w.stop_ns = w.end < n ? enter_ns(r, w.end) : exit_ns(r, static_cast<uint32_t>(n - 1));
    return tail_gap(w, last_exit);
  }
  double measured(int r, uint32_t i) const { return static_cast<double>(exit_ns(r, i) - enter_ns(r, i)); }
  // The same of the op a rank is at (op i, h): read from h where not retimed, streamed from the stream.
  uint64_t entered(int r, uint32_t i, const Here& h) const { return o_.retiming ? enter_ns(r, i) : h.t_enter; }
  uint64_t exit_before(int r, uint32_t i) const {
    return o_.retiming || streamed_.empty() ? exit_ns(r, i - 1) : streamed_[r]->exit_before;
  }
  double took(int r, uint32_t i, const Here& h) const {
    return o_.retiming ? measured(r, i) : static_cast<double>(h.t_exit - h.t_enter);
  }

  // Whether a rank's call site is one of the option's sites. A site's key holds strings: each answer is
  // kept by rank and call site id, for each of the options' sets. Asked several times an op, mostly of
  // empty sets: that answer inlined.
  bool at(const std::set<SiteKey>& sites, int rank, uint32_t callsite) const {
    return !sites.empty() && at_site(sites, rank, callsite);
  }
  bool at_site(const std::set<SiteKey>& sites, int rank, uint32_t callsite) const {
    if (callsite >= kDenseCallsites) return sites.count(t_.site(rank, callsite)) > 0;
    SiteMemo* memo = nullptr;
    for (auto& m : site_memos_)
      if (m.sites == &sites) memo = &m;
    if (!memo) {
      memo = &site_memos_.emplace_back();
      memo->sites = &sites;
      memo->known.resize(t_.ranks.size());
    }
    auto& known = memo->known[rank];
    if (callsite >= known.size()) known.resize(callsite + 1, -1);
    int8_t& k = known[callsite];
    if (k < 0) k = sites.count(t_.site(rank, callsite)) > 0;
    return k > 0;
  }

  void wake_msg(uint32_t m) { wake(msg(m).waiters); }
  void wake(Waiters& w) {
    for (int32_t r = w.head; r >= 0;) {
      const int32_t next = next_msg_waiter_[r];
      make_ready(r);
      next_msg_waiter_[r] = -1;
      waits_on_msg_[r] = kNone;
      r = next;
    }
    w = {};
  }
  void set_ts(uint32_t m, double ts) { set_ts(msg(m), ts); }
  void set_ts(MsgState& s, double ts) {
    s.ts = ts;
    wake(s.waiters);
  }
  void set_tr(uint32_t m, double tr) { set_tr(msg(m), tr); }
  void set_tr(MsgState& s, double tr) {
    s.tr = tr;
    wake(s.waiters);
  }

  bool rendezvous(const MsgState& m) const { return model_.send_waits_for_receive(m.bytes, m.synchronous); }
  bool rendezvous(const Message& m) const { return model_.send_waits_for_receive(m.bytes, m.synchronous); }
  bool splits(const MsgState& s) const { return s.split && !s.synchronous && !model_.eager(s.bytes) && p_.S > 0; }

  static void add(Breakdown* parts, const SideCost& c, bool send) {
    if (!parts) return;
    (send ? parts->send_overhead : parts->recv_overhead) += c.overhead;
    (send ? parts->send_wait : parts->recv_wait) += c.wait;
    parts->synchronisation += c.synchronisation;
  }

  // Time the send side completes (the blocking send had it been called at ts), or kUnknown (and
  // blocked_on_ says what it needs). Fills the parts of that time when asked.
  double send_done(uint32_t m_id, Breakdown* parts) {
    MsgState& s = msg(m_id);
    blocked_on_ = {false, m_id};
    if (s.ts == kUnknown) return kUnknown;  // a completion whose post was not replayed: the fields below neither
    const LogGPS& model = model_of(s);
    if (splits(s)) {
      if (model.split_waits_for_receive(s.bytes, p_.S) && s.has_recv && s.tr == kUnknown) return kUnknown;
      SideCost c = model.split_send_side(s.bytes, p_.S, s.ts, s.has_recv ? s.tr : s.ts, s.senders);
      add(parts, c, true);
      return c.done;
    }
    if (!rendezvous(s)) {
      double start = eager_start(m_id);
      if (start == kUnknown) return kUnknown;
      SideCost c = model.send_side(s.bytes, start, kUnknown, s.senders, false);  // (4)
      c.wait += start - s.ts;  // for room in the receiver's eager buffer
      add(parts, c, true);
      return c.done;
    }
    if (!s.has_recv) return s.ts + model.T1p(s.bytes, s.senders);  // no receiver in the logs
    if (s.tr == kUnknown) return kUnknown;
    SideCost c = model.send_side(s.bytes, s.ts, s.tr, s.senders, s.synchronous);  // (5)
    add(parts, c, true);
    return c.done;
  }

  // Time the receive side completes (the blocking receive had it been called at tr), or kUnknown.
  double recv_done(uint32_t m_id, Breakdown* parts) {
    MsgState& s = msg(m_id);
    blocked_on_ = {false, m_id};
    if (!s.has_send) return kUnknown;
    if (s.ts == kUnknown) return kUnknown;  // the fields below are known from the send's post
    const LogGPS& model = model_of(s);
    SideCost c;
    if (splits(s)) {
      c = model.split_recv_side(s.bytes, p_.S, s.ts, s.tr, s.senders);
    } else if (!rendezvous(s)) {
      double start = eager_start(m_id);
      if (start == kUnknown) return kUnknown;
      c = model.recv_side(s.bytes, start, s.tr, s.senders, false);  // (7), (8)
    } else {
      c = model.recv_side(s.bytes, s.ts, s.tr, s.senders, s.synchronous);  // (9)
    }
    add(parts, c, false);
    return c.done;
  }

  // The closed-formula fallback, for the instances no algorithm could be followed for (another
  // library, members missing from the logs, an intercommunicator), reported as such in
  // ReplayResult::collectives_closed_formula. Completion times of a collective for each member, once all
  // have arrived; each round costs one message of the round's size under the model (equation (1)/(2)/(3)
  // without waits):
  //   Barrier: recursive doubling, ceil(log2 P) rounds of 0 bytes
  //   Bcast: binomial tree, a rank completes after its depth in the tree
  //   Reduce: binomial tree towards the root; Gather, Scatter: binomial, root after ceil(log2 P) rounds
  //   Allreduce: recursive doubling below 10 kB, ring above (2(P-1) rounds of k/P)
  //   Allgather(v), Alltoall(v,w): P-1 pairwise rounds; Reduce_scatter: reduce then scatter
  //   Scan, Exscan: a linear chain
  void finish_collective(CollState& state) {
    const CollectiveInstance& c = state.inst;
    const std::span<double> arrive = state.member_t;
    size_t P = c.members.size();
    double last = *std::max_element(arrive.begin(), arrive.end());
    auto msg = [&](uint64_t k) { return model_.communication(k, 0, 0, 1); };
    uint32_t base_call = c.call >= MPA_CALL_Ibarrier ? c.call - (MPA_CALL_Ibarrier - MPA_CALL_Barrier) : c.call;
    // the tracer logs a vector collective's bytes summed over the peers: each round moves a share
    bool vector = base_call == MPA_CALL_Gatherv || base_call == MPA_CALL_Scatterv || base_call == MPA_CALL_Allgatherv ||
                  base_call == MPA_CALL_Alltoallv || base_call == MPA_CALL_Alltoallw;
    const uint64_t k = vector && P > 0 ? c.bytes / P : c.bytes;
    std::vector<double> done(P, last);
    int rounds = ceil_log2(P);
    int root_pos = 0;
    for (size_t i = 0; i < P; i++)
      if (c.members[i].first == c.root) root_pos = static_cast<int>(i);
    switch (base_call) {
      case MPA_CALL_Barrier:
        for (auto& d : done) d = last + rounds * msg(0);
        break;
      case MPA_CALL_Bcast:
      case MPA_CALL_Scatter:
      case MPA_CALL_Scatterv: {
        double root_at = arrive[root_pos];
        for (size_t i = 0; i < P; i++) {
          size_t rel = (i + P - root_pos) % P;
          int depth = rel ? ceil_log2(rel + 1) : 0;
          done[i] = std::max(arrive[i] + p_.o, root_at + depth * msg(k));
        }
        break;
      }
      case MPA_CALL_Reduce:
      case MPA_CALL_Gather:
      case MPA_CALL_Gatherv:
        for (size_t i = 0; i < P; i++)
          done[i] = static_cast<int>(i) == root_pos ? last + rounds * msg(k) : arrive[i] + model_.T1(k);
        break;
      case MPA_CALL_Allreduce: {
        double t = k < 10000 || P < 2 ? rounds * msg(k) : 2.0 * (P - 1) * msg(k / P);
        for (auto& d : done) d = last + t;
        break;
      }
      case MPA_CALL_Reduce_scatter:
      case MPA_CALL_Reduce_scatter_block:
        for (auto& d : done) d = last + 2 * rounds * msg(k);
        break;
      case MPA_CALL_Scan:
      case MPA_CALL_Exscan: {
        double prev = 0;
        for (size_t i = 0; i < P; i++) {
          done[i] = std::max(arrive[i], prev) + msg(k);
          prev = done[i];
        }
        break;
      }
      default:  // Allgather(v), Alltoall(v,w)
        for (auto& d : done) d = last + (P - 1) * msg(k);
    }
    std::copy(done.begin(), done.end(), arrive.begin());
    state.state = RunState::Timed;
    for (int r : state.waiting) make_ready(r);
    state.waiting.clear();
  }

  // A rank's place among an instance's members, or -1. build_trace joins the members in rank order, so
  // a bisection finds it (asked each time a member resumes, a search through them made an instance of
  // P ranks cost P^2); where the members are in another order, the search through them.
  int member_pos(uint32_t c_id, const CollState& c, int rank) const {
    // asked again each time the rank resumes in the same instance (at 1024 ranks a tenth of a replay's
    // time went to the bisection): the rank's last answer first
    std::pair<uint32_t, int>& last = last_member_pos_[static_cast<size_t>(rank)];
    if (last.first == c_id) return last.second;
    last = {c_id, find_member_pos(c, rank)};
    return last.second;
  }
  static int find_member_pos(const CollState& c, int rank) {
    const auto m = c.inst.members;
    const auto it = std::lower_bound(m.begin(), m.end(), rank, [](const auto& a, int r) { return a.first < r; });
    if (it != m.end() && it->first == rank) return static_cast<int>(it - m.begin());
    for (size_t i = 0; i < m.size(); i++)
      if (m[i].first == rank) return static_cast<int>(i);
    return -1;
  }

  // The entries from step() into a collective are kept out of it (noinline, as are collective_done,
  // wait_for_collective and posted_until): inlined, how much of them step() took in moved with their size,
  // and the ring of bench/replay_bench.cpp, which has no collective, replayed at 19.5 M events/s instead of
  // 21.5 after member_pos kept its last answer.
  [[gnu::noinline]] void arrive_collective(uint32_t c_id, int rank, double at, const StreamOp* streamed) {
    const StreamInstance* fields = nullptr;
    if (streamed) {
      // a member's op carries its place in the instance (OpStream::encode): an op that does not is none
      const auto j = std::ranges::find(streamed->joined, c_id, &StreamOp::Joined::instance);
      if (j == streamed->joined.end() || !j->fields) return;
      fields = j->fields;
    }
    CollState* c = coll_of(c_id, true);
    if (!c) return;  // (its members here are done: each arrives once)
    if (!c->known) know(*c, c_id, fields);
    int pos = member_pos(c_id, *c, rank);
    if (pos < 0) return;
    if (by_algorithm(c_id, *c, streamed)) {
      start_member(c_id, *c, pos, rank, at);
      return;
    }
    if (c->state == RunState::Timed) return;  // (each member arrives once)
    const std::span<double> a = c->member_t;
    a[pos] = at;
    if (peers_) {
      PeerUpdate u;
      u.kind = PeerUpdate::CollArrived;
      u.id = c_id;
      u.a = static_cast<uint32_t>(pos);
      u.b = static_cast<uint32_t>(c->member_t.size());
      u.t = at;
      tell_processes(arrival_owners(*c), u);
    }
    if (std::none_of(a.begin(), a.end(), [](double x) { return x == kUnknown; })) finish_collective(*c);
  }

  // When rank's part of the collective completes, walking its steps from `now` (the call, or the Wait of
  // a non-blocking one); kUnknown while it waits for another rank.
  [[gnu::noinline]] double collective_done(uint32_t c_id, int rank, double now) {
    CollState* c = coll_of(c_id, false);
    if (!c) return kUnknown;  // no member arrived here (its call missing from the log)
    int pos = member_pos(c_id, *c, rank);
    if (pos < 0) return kUnknown;
    const double t = c->member_t[static_cast<size_t>(pos)];
    if (c->state == RunState::Algorithm) {
      if (t != kUnknown) return t;
      return walk(c_id, *c, pos, rank, now, false) == Walk::Done ? c->member_t[static_cast<size_t>(pos)] : kUnknown;
    }
    if (c->state != RunState::Timed) return kUnknown;
    return t;
  }

  // A rank whose collective is not done yet: an algorithm's rank is parked on the message it waits for
  // already; the closed formula's waits for the last arrival.
  [[gnu::noinline]] void wait_for_collective(uint32_t c_id, int rank) {
    ranks_[rank].parked = RankState::Parked::Collective;
    if (CollState* c = coll_of(c_id, false); c && c->state != RunState::Algorithm) c->waiting.push_back(rank);
    wake_rank(rank);  // a sender waiting for its progress may tell now when it takes a message (taken)
  }

  // ---- collectives as the library runs them (analyzer/collectives.hpp) --------------------------------
  // Each step of the algorithm is a message under the model (eager or rendezvous against S); a rank walks
  // its own steps and parks where one needs a time another rank has not reached, as point-to-point calls
  // do. A non-blocking collective posts its first steps at the I- call and walks on at the call that
  // completes it: Open MPI (libnbc) and MPICH progress a schedule only inside MPI calls.
  // ClosedFormula: its members' arrivals are being gathered; Timed: the closed formula timed it
  enum class RunState : uint8_t { Undecided, Algorithm, ClosedFormula, Timed };
  enum class Walk : uint8_t { Done, Parked, Posted };
  struct CollMsg {
    uint64_t bytes = 0;
    bool synchronous = false;
    int senders = 1;  // receives its receiver waits for together
    double ts = kUnknown, tr = kUnknown;
    uint32_t send_pos = 0, send_step = 0;  // its send step: how processes name it to each other
    std::vector<int> waiting;  // ranks parked on it
  };
  struct CollMember {
    size_t step = 0;
    double t = kUnknown;        // the rank's clock inside the collective
    bool step_posted = false;   // the blocking Send or Recv it is at has been posted
    // at a Wait step it parked in: the next request to look at, and when those before it completed (a
    // request's completion, once known, stays as it is: the rank resumes where it stopped, not from the
    // Wait's first request, which made an all-to-all's walks quadratic in its requests)
    uint32_t wait_next = 0;
    double wait_done = -std::numeric_limits<double>::infinity();
  };
  struct Pairing;
  struct CollRun {
    std::shared_ptr<const CollSchedule> schedule;
    std::shared_ptr<const Pairing> pairing;       // the schedule's (pairing_of)
    std::vector<std::vector<uint32_t>> step_msg;  // by position and step: its message, or kNone
    std::vector<CollMember> members;              // by position
    std::vector<int> position;                    // by member (CollectiveInstance::members): its position
    std::vector<int> rank_at;                     // by position: its rank
    std::vector<uint32_t> messages;               // every message, freed when the last member is done
    size_t unfinished = 0;
  };
  // An instance in flight: from the first word of it here (a member's arrival, or another process's
  // update) until every member here has taken its completion (coll_taken). Its slot in the pool is all
  // an instance holds before and after: 4 bytes, where tables by instance held 25 bytes an instance
  // and 8 a member to the end of the replay.
  struct CollState {
    // its fields, once a member here arrived (known): the trace's, or walking streams, those its member's
    // entry names (StreamInstance::view)
    CollectiveInstance inst;
    bool known = false;
    RunState state = RunState::Undecided;
    uint32_t left = 0;  // members here yet to take their completion
    // by member: when its part completed (an algorithm's, as its walk ends; the closed formula's, all at
    // once when it times the instance), and before that, at an instance the closed formula times, when
    // each arrived
    std::vector<double> member_t;
    std::unique_ptr<CollRun> run;   // while its algorithm runs
    std::vector<PeerUpdate> pending;  // spread: its steps posted elsewhere before it was set up here
    std::vector<int> waiting;         // the closed formula's: ranks waiting for the last arrival
  };
  static constexpr uint32_t kNoColl = UINT32_MAX, kFreedColl = UINT32_MAX - 1;
  std::vector<uint32_t> coll_slot_;  // by instance: its state's place in coll_pool_, or one of the two above
  std::deque<CollState> coll_pool_;  // a deque: a state is referred to while another is made
  std::vector<uint32_t> coll_free_;
  uint64_t colls_held_ = 0, most_colls_held_ = 0;
  // The instance's state; made where `make` and none is yet (its fields not known); null once its
  // members here are done.
  CollState* coll_of(uint32_t c_id, bool make) {
    if (c_id >= coll_slot_.size()) return nullptr;  // (a stream naming more instances than the others)
    uint32_t& slot = coll_slot_[c_id];
    if (slot == kFreedColl) return nullptr;
    if (slot != kNoColl) return &coll_pool_[slot];
    if (!make) return nullptr;
    if (!coll_free_.empty()) {
      slot = coll_free_.back();
      coll_free_.pop_back();
    } else {
      slot = static_cast<uint32_t>(coll_pool_.size());
      coll_pool_.emplace_back();
    }
    CollState& c = coll_pool_[slot];
    c.known = false;
    c.state = RunState::Undecided;
    c.member_t.clear();
    c.left = 0;
    most_colls_held_ = std::max(most_colls_held_, ++colls_held_);
    return &c;
  }
  // A member here arrives at an instance whose fields are not known yet: they are the trace's, or those
  // its op's entry names (`fields`: every member's names the whole instance)
  void know(CollState& c, uint32_t c_id, const StreamInstance* fields) {
    c.inst = fields ? fields->view() : t_.collectives[c_id];
    c.known = true;
    // arrivals told before (CollArrived) kept
    c.member_t.resize(std::max(c.member_t.size(), c.inst.members.size()), kUnknown);
    for (const auto& m : c.inst.members) c.left += mine(m.first);
  }
  const CollState* coll_of(uint32_t c_id) const {
    if (c_id >= coll_slot_.size()) return nullptr;
    const uint32_t slot = coll_slot_[c_id];
    return slot == kFreedColl || slot == kNoColl ? nullptr : &coll_pool_[slot];
  }
  // The instances whose completion the op took: a blocking collective's, a completion's of a non-blocking
  // one (as analyzer/export.cpp reads them)
  [[gnu::noinline]] void colls_taken(int rank, const Here& op) {
    for (uint32_t k = 0; k < op.links.size(); k++) {
      const Link l = op.links[k];
      if (l.id != kNone && (l.kind == Link::DoneColl || (l.kind == Link::PostColl && op.kind == OpKind::Collective)))
        coll_taken(l.id, rank);
    }
  }
  // A member here took its completion (its op is done, or went on with its measured time): the state is
  // given back after the last, its run done (a run some member here never walked to its end, its rank
  // forced on, stays).
  void coll_taken(uint32_t c_id, int rank) {
    if (c_id >= coll_slot_.size()) return;
    uint32_t& slot = coll_slot_[c_id];
    if (slot == kFreedColl || slot == kNoColl) return;
    CollState& c = coll_pool_[slot];
    // no member here arrived (its call missing from the log), or the op's rank is none of its members
    if (!c.known || member_pos(c_id, c, rank) < 0) return;
    if (c.left > 0) c.left--;
    if (c.left > 0 || c.run) return;
    c.pending.clear();
    c.waiting.clear();
    coll_free_.push_back(slot);
    slot = kFreedColl;
    colls_held_--;
  }
  // runs done, kept for the next instances with their vectors' room: an instance would otherwise allocate
  // a vector for each position's steps
  static constexpr size_t kFreeRuns = 64;
  std::vector<std::unique_ptr<CollRun>> free_runs_;

  // A run as a new one is, from the kept ones where there is one.
  std::unique_ptr<CollRun> new_run() {
    if (free_runs_.empty()) return std::make_unique<CollRun>();
    std::unique_ptr<CollRun> run = std::move(free_runs_.back());
    free_runs_.pop_back();
    auto step_msg = std::move(run->step_msg);
    auto members = std::move(run->members);
    auto rank_at = std::move(run->rank_at);
    auto messages = std::move(run->messages);
    *run = CollRun{};
    for (auto& m : members) m = CollMember{};
    messages.clear();
    run->step_msg = std::move(step_msg);
    run->members = std::move(members);
    run->rank_at = std::move(rank_at);
    run->messages = std::move(messages);
    return run;
  }
  std::vector<CollMsg> cmsg_;
  std::vector<uint32_t> cmsg_free_;
  struct CachedSchedule {
    std::shared_ptr<const CollSchedule> schedule;
    std::string why_not;  // where there is none: collective_schedule's why_not
  };
  std::unordered_map<std::string, CachedSchedule> schedule_cache_;
  // a call's schedule split to S (ReplayOptions::split_sites), by the call's schedule_key; where it was
  // not split (its parts too many steps, a part without a schedule), the unsplit one and why
  struct CachedSplit {
    std::shared_ptr<const CollSchedule> schedule;
    std::string not_split;
  };
  std::unordered_map<std::string, CachedSplit> split_cache_;
  // The steps the schedule and split caches hold (their pairings take 4 to 12 bytes a step more), and the
  // most they held at once. Loops repeat a few calls, so the caches keep what they made; a run of many
  // distinct large calls (counts varying from call to call) would keep GiBs: past the budget
  // (ReplayOptions::schedule_cache_steps) or 4097 entries in a cache, all three are emptied.
  size_t cached_steps_ = 0, most_cached_steps_ = 0;
  uint64_t cache_clears_ = 0;
  size_t cache_budget() const {
    return o_.schedule_cache_steps ? o_.schedule_cache_steps : 2 * max_schedule_steps(t_.world_size);
  }
  // Makes room for a schedule of `steps` steps about to enter a cache, and counts it there.
  void make_room(size_t steps) {
    constexpr size_t kMaxEntries = 4096;
    if (cached_steps_ + steps > cache_budget() || schedule_cache_.size() > kMaxEntries ||
        split_cache_.size() > kMaxEntries || pairings_.size() > kMaxEntries) {
      if (!schedule_cache_.empty() || !split_cache_.empty() || !pairings_.empty()) cache_clears_++;
      schedule_cache_.clear();
      split_cache_.clear();
      pairings_.clear();
      cached_steps_ = 0;
    }
    cached_steps_ += steps;
    most_cached_steps_ = std::max(most_cached_steps_, cached_steps_);
  }
  static size_t steps_of(const CollSchedule& s) {
    size_t n = 0;
    for (const auto& r : s.ranks) n += r.size();
    return n;
  }
  // MPICH's release/gather flags (CollStep::FlagSet, FlagWait): per communicator, counter and position,
  // how often the flag was raised and when, the last kFlagRing times (a wait reaches back at most
  // NUM_CELLS - 1 raises, and a rank cannot run further ahead of the one it waits on)
  static constexpr size_t kFlagRing = 16;
  struct FlagLine {
    uint64_t raised = 0;
    std::array<double, kFlagRing> at{};
    std::vector<int> waiting;  // ranks parked until it is raised again
  };
  std::unordered_map<uint64_t, FlagLine> flags_;
  std::unordered_map<uint32_t, uint32_t> node_calls_;  // per communicator: CollectiveCall::node_calls_before
  std::vector<std::unique_ptr<const CommLayout>> layouts_;  // per communicator, once one of its instances is scheduled
  MpiLibrary library_ = MpiLibrary::Other;
  uint64_t coll_by_algorithm_ = 0, coll_approximate_ = 0, coll_closed_formula_ = 0, coll_messages_ = 0,
           coll_rendezvous_ = 0;
  std::map<std::string, uint64_t> coll_algorithms_, coll_approximations_;

  // Decides once per instance whether its algorithm can be followed, and sets up its messages. Streamed:
  // the op of the member arriving first, which carries the call site of the first member's op.
  bool by_algorithm(uint32_t c_id, CollState& state, const StreamOp* streamed) {
    if (state.state == RunState::Undecided) {
      const CollectiveInstance& c = state.inst;
      uint32_t first_site = 0;
      if (!streamed) {
        first_site = t_.op(c.members.front().first, c.members.front().second).callsite;
      } else {
        const auto j = std::ranges::find(streamed->joined, c_id, &StreamOp::Joined::instance);
        if (j == streamed->joined.end())  // a member's op carries its place in the instance (OpStream::encode)
          throw std::logic_error(fmt::format("replay: collective instance {} entered by an op of its stream that does "
                                             "not carry it", c_id));
        first_site = j->fields->head_site;
      }
      std::string approximation, why_not;  // empty: "no algorithm to follow"
      std::vector<int> positions;
      auto schedule = schedule_of(c, o_.split_everywhere || at(o_.split_sites, c.members.front().first, first_site),
                                  &approximation, &positions, &why_not);
      const bool count = counts_here(state);
      if (!schedule) {
        state.state = RunState::ClosedFormula;
        if (count) {
          coll_closed_formula_++;
          coll_algorithms_[fmt::format("closed formula ({})", why_not.empty() ? "no algorithm to follow" : why_not)]++;
        }
      } else {
        state.state = RunState::Algorithm;
        if (count) {
          coll_by_algorithm_++;
          count_algorithm(schedule);
          if (!approximation.empty()) {
            coll_approximate_++;
            coll_approximations_[approximation]++;
          }
        }
        instantiate(state, schedule, std::move(positions));
      }
    }
    return state.state == RunState::Algorithm;
  }

  // The schedule of an instance (cached: loops repeat the same calls). Where the program is to split its
  // messages to at most S (a what-if), a collective whose algorithm sends more than S at once is split
  // into as many calls of a part of the buffer as that takes, one after the other.
  // Where there is none, why_not says why (left as it was where the log gives no call to schedule).
  std::shared_ptr<const CollSchedule> schedule_of(const CollectiveInstance& inst, bool split,
                                                  std::string* approximation, std::vector<int>* positions,
                                                  std::string* why_not) {
    if (library_ == MpiLibrary::Other) return nullptr;
    const uint32_t comm = inst.comm;
    if (layouts_.size() <= comm) layouts_.resize(comm + 1);
    if (!layouts_[comm]) layouts_[comm] = std::make_unique<const CommLayout>(comm_layout(t_, comm));
    auto logged = logged_collective(t_, inst, library_, layouts_[comm].get());
    if (!logged) return nullptr;
    *positions = logged->member_position;
    uint32_t& node_calls = node_calls_[comm];
    // calls past the threshold all run alike: one schedule in the cache for them
    constexpr uint32_t kPast = CollectiveCall::kNodeCallsFallingBack;
    logged->call.node_calls_before = node_calls < kPast ? node_calls : UINT32_MAX;
    logged->call.mpich_shm = o_.mpich_shm_collectives;
    auto one = cached_schedule(logged->call, why_not);
    if (!one) return nullptr;
    node_calls = std::min<uint32_t>(node_calls + one->node_calls, kPast);
    std::string why = logged->approximation;
    if (!one->approximation.empty()) why = why.empty() ? one->approximation : why + "; " + one->approximation;
    *approximation = why;
    if (!split || p_.S == 0 || p_.S == LogGPSParams::kInfinite || !logged->call.rank_bytes.empty()) return one;
    uint64_t largest = 0;
    for (const auto& steps : one->ranks)
      for (const auto& st : steps)
        if (st.kind == CollStep::Send || st.kind == CollStep::Isend) largest = std::max(largest, st.bytes);
    if (largest <= p_.S || logged->call.bytes == 0) return one;
    std::string key = schedule_key(logged->call, key_);
    const auto answer = [&](const CachedSplit& c) {
      if (!c.not_split.empty()) {
        *approximation += fmt::format("{}{}", approximation->empty() ? "" : "; ", c.not_split);
      } else if (mine(inst.members.front().first)) {  // counted where its first member is (counts_here)
        split_messages_++;
      }
      return c.schedule;
    };
    if (auto it = split_cache_.find(key); it != split_cache_.end()) return answer(it->second);
    // (the unsplit schedule counted again: the caches may have been emptied since it was made)
    const auto keep = [&](CachedSplit c) {
      make_room(steps_of(*c.schedule));
      return answer(split_cache_.emplace(std::move(key), std::move(c)).first->second);
    };
    const uint64_t parts = (largest + p_.S - 1) / p_.S, chunk = (logged->call.bytes + parts - 1) / parts;
    const size_t steps = steps_of(*one);
    // the parts' schedules together, at most max_schedule_steps (as one schedule)
    const size_t max_steps = max_schedule_steps(logged->call.size);
    const auto unsplit = [&] {
      return keep({one, fmt::format("not split: {} parts of its buffer take more than {} steps", parts, max_steps)});
    };
    if (parts > max_steps / std::max<size_t>(steps, 1)) return unsplit();
    size_t whole_steps = 0;
    auto whole = std::make_shared<CollSchedule>();
    whole->ranks.resize(one->ranks.size());
    std::vector<uint32_t> requests(one->ranks.size(), 0);
    for (uint64_t done = 0; done < logged->call.bytes; done += chunk) {
      CollectiveCall part = logged->call;
      part.bytes = std::min(chunk, logged->call.bytes - done);
      std::string why;
      auto sched = cached_schedule(part, &why);
      if (!sched) return keep({one, fmt::format("not split: a part of {} bytes has no schedule ({})", part.bytes, why)});
      whole_steps += steps_of(*sched);
      if (whole_steps > max_steps) return unsplit();
      whole->node_calls += sched->node_calls;
      whole->algorithm = fmt::format("{} parts of {} bytes: {}", parts, chunk, sched->algorithm);
      for (size_t pos = 0; pos < sched->ranks.size(); pos++) {
        uint32_t posted = 0;
        for (CollStep st : sched->ranks[pos]) {
          if (st.kind == CollStep::Isend || st.kind == CollStep::Irecv) posted++;
          if (st.kind == CollStep::Wait) st.first_request += requests[pos];
          whole->ranks[pos].push_back(st);
        }
        requests[pos] += posted;
      }
    }
    return keep({std::move(whole), ""});
  }

  // Every field of the call the library's decision reads, as bytes: calls with the same key run the same
  // schedule. Written into `key` (its memory kept from call to call: an instance's lookup allocates and
  // formats nothing; a formatted key, with the lookups by name, made the report of 2 ranks x 6e5 small
  // MPI_Allreduce calls take 37-49 s where it now takes 27-32).
  static const std::string& schedule_key(const CollectiveCall& call, std::string& key) {
    key.clear();
    const auto put = [&key](const auto& v) { key.append(reinterpret_cast<const char*>(&v), sizeof v); };
    const auto put_all = [&](const auto& values) {
      put(values.size());
      key.append(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(values[0]));
    };
    put(call.library), put(call.call), put(call.size), put(call.root), put(call.bytes);
    put_all(call.rank_bytes), put_all(call.host);
    put(call.node_calls_before), put(call.mpich_shm), put(call.in_place);
    put(call.peer_bytes.size());
    for (const auto& row : call.peer_bytes) put_all(row);
    return key;
  }
  std::string key_;

  // An instance run by `schedule` counted by its algorithm's name; the last schedule's count is kept at
  // hand (a loop's instances run the same one: no lookup by name for each)
  void count_algorithm(const std::shared_ptr<const CollSchedule>& schedule) {
    if (schedule != last_counted_) {
      last_counted_ = schedule;
      last_count_ = &coll_algorithms_[schedule->algorithm];
    }
    ++*last_count_;
  }
  std::shared_ptr<const CollSchedule> last_counted_;
  uint64_t* last_count_ = nullptr;

  std::shared_ptr<const CollSchedule> cached_schedule(const CollectiveCall& call, std::string* why_not = nullptr) {
    const std::string& key = schedule_key(call, key_);
    auto it = schedule_cache_.find(key);
    if (it == schedule_cache_.end()) {
      CachedSchedule c;
      if (auto s = collective_schedule(call, &c.why_not)) c.schedule = std::make_shared<const CollSchedule>(std::move(*s));
      make_room(c.schedule ? steps_of(*c.schedule) : 0);
      it = schedule_cache_.emplace(std::move(key), std::move(c)).first;
    }
    if (!it->second.schedule && why_not) *why_not = it->second.why_not;
    return it->second.schedule;
  }

  // a position's flag of a stream on the instance's communicator
  FlagLine& flag_line(uint32_t comm, uint8_t stream, int pos) {
    const uint64_t key = (uint64_t{comm} << 24) | (uint64_t{stream} << 23) | static_cast<uint64_t>(pos);
    return flags_[key];
  }

  uint32_t new_coll_msg() {
    if (!cmsg_free_.empty()) {
      uint32_t id = cmsg_free_.back();
      cmsg_free_.pop_back();
      // as a new one, with its waiting list's room kept
      std::vector<int> waiting = std::move(cmsg_[id].waiting);
      waiting.clear();
      cmsg_[id] = CollMsg{};
      cmsg_[id].waiting = std::move(waiting);
      return id;
    }
    cmsg_.emplace_back();
    return static_cast<uint32_t>(cmsg_.size() - 1);
  }

  // Which send each receive step of a schedule meets (the k-th receive at b from a meets the k-th send
  // from a to b), worked out once per schedule: loops repeat the same calls, and their instances share
  // it. Sends are numbered in the order the steps send (positions in turn, steps in order).
  struct Pairing {
    std::shared_ptr<const CollSchedule> schedule;  // held: its address names it in the cache
    std::vector<std::vector<uint32_t>> send_of;    // by position and step: a receive's send, else kNone
    std::vector<int> senders;                      // by send: the receives its receiver waits for together
    // by position and request number (CollStep::first_request): its Isend or Irecv step
    std::vector<std::vector<uint32_t>> request_step;
  };
  // held by the runs too: a cache emptied while an instance runs leaves its pairing to it
  std::unordered_map<const CollSchedule*, std::shared_ptr<const Pairing>> pairings_;

  const std::shared_ptr<const Pairing>& pairing_of(const std::shared_ptr<const CollSchedule>& schedule) {
    if (auto it = pairings_.find(schedule.get()); it != pairings_.end()) return it->second;
    auto made = std::make_shared<Pairing>();
    Pairing& p = *made;
    p.schedule = schedule;
    const auto& ranks = schedule->ranks;
    const size_t n = ranks.size();
    // (from, to) and send number, sorted by pair; each pair's sends stay in order
    std::vector<std::pair<uint64_t, uint32_t>> sends;
    auto pair_key = [n](size_t from, size_t to) { return static_cast<uint64_t>(from) * n + to; };
    for (size_t pos = 0; pos < n; pos++)
      for (const CollStep& st : ranks[pos])
        if (st.kind == CollStep::Send || st.kind == CollStep::Isend)
          sends.emplace_back(pair_key(pos, static_cast<size_t>(st.peer)), static_cast<uint32_t>(sends.size()));
    p.senders.assign(sends.size(), 1);
    std::stable_sort(sends.begin(), sends.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    std::vector<uint32_t> received(sends.size(), 0);  // by a pair's first place in sends: its sends met so far
    std::vector<uint32_t> irecvs;                     // request number -> send, for the receives' contention
    p.send_of.resize(n);
    p.request_step.resize(n);
    for (size_t pos = 0; pos < n; pos++) {
      p.send_of[pos].assign(ranks[pos].size(), kNone);
      irecvs.clear();
      for (size_t k = 0; k < ranks[pos].size(); k++) {
        const CollStep& st = ranks[pos][k];
        if (st.kind == CollStep::Recv || st.kind == CollStep::Irecv) {
          const uint64_t key = pair_key(static_cast<size_t>(st.peer), pos);
          const size_t first = static_cast<size_t>(
              std::lower_bound(sends.begin(), sends.end(), key, [](const auto& s, uint64_t k) { return s.first < k; }) -
              sends.begin());
          const size_t at = first + (first < sends.size() ? received[first]++ : 0);
          if (at >= sends.size() || sends[at].first != key)  // a schedule's receive no send of it matches
            throw std::out_of_range("collective schedule: a receive without its send");
          p.send_of[pos][k] = sends[at].second;
        }
        if (st.kind == CollStep::Isend || st.kind == CollStep::Irecv) {
          irecvs.push_back(st.kind == CollStep::Irecv ? p.send_of[pos][k] : kNone);
          p.request_step[pos].push_back(static_cast<uint32_t>(k));
        }
        if (st.kind == CollStep::Wait) {
          int together = 0;
          for (uint32_t q = st.first_request; q < st.first_request + st.requests; q++) together += irecvs[q] != kNone;
          if (together > 1)
            for (uint32_t q = st.first_request; q < st.first_request + st.requests; q++)
              if (irecvs[q] != kNone) p.senders[irecvs[q]] = together;
        }
      }
    }
    return pairings_.emplace(schedule.get(), std::move(made)).first->second;
  }

  // One message per send step, met by the receive step that matches it (the k-th from a to b).
  void instantiate(CollState& state, std::shared_ptr<const CollSchedule> schedule, std::vector<int> positions) {
    std::unique_ptr<CollRun> run = new_run();
    run->position = std::move(positions);
    const auto& ranks = schedule->ranks;
    const size_t n = ranks.size();
    run->schedule = std::move(schedule);
    run->step_msg.resize(n);
    run->members.resize(n);
    run->rank_at.assign(n, -1);
    const auto members = state.inst.members;
    for (size_t i = 0; i < run->position.size() && i < members.size(); i++)
      if (run->position[i] >= 0 && static_cast<size_t>(run->position[i]) < n) run->rank_at[run->position[i]] = members[i].first;
    // the members this process walks: the run is freed when they are done
    run->unfinished = n;
    if (peers_) {
      run->unfinished = 0;
      for (size_t i = 0; i < members.size(); i++) run->unfinished += mine(members[i].first);
    }
    const bool count = counts_here(state);
    run->pairing = pairing_of(run->schedule);
    const Pairing& pairing = *run->pairing;
    // a message for each send step, in the order the steps send
    auto& ids = scratch_ids_;
    ids.clear();
    for (size_t pos = 0; pos < n; pos++) {
      run->step_msg[pos].assign(ranks[pos].size(), kNone);
      for (size_t k = 0; k < ranks[pos].size(); k++) {
        const CollStep& st = ranks[pos][k];
        if (st.kind != CollStep::Send && st.kind != CollStep::Isend) continue;
        uint32_t id = new_coll_msg();
        cmsg_[id].bytes = st.bytes;
        cmsg_[id].synchronous = st.synchronous;
        cmsg_[id].send_pos = static_cast<uint32_t>(pos);
        cmsg_[id].send_step = static_cast<uint32_t>(k);
        cmsg_[id].senders = pairing.senders[ids.size()];
        run->step_msg[pos][k] = id;
        run->messages.push_back(id);
        ids.push_back(id);
        if (count) {
          coll_messages_++;
          if (model_.send_waits_for_receive(st.bytes, st.synchronous)) coll_rendezvous_++;
        }
      }
    }
    // each receive step meets its send's message
    for (size_t pos = 0; pos < n; pos++) {
      for (size_t k = 0; k < ranks[pos].size(); k++)
        if (ranks[pos][k].kind == CollStep::Recv || ranks[pos][k].kind == CollStep::Irecv)
          run->step_msg[pos][k] = ids[pairing.send_of[pos][k]];
    }
    state.run = std::move(run);
    if (peers_ && !state.pending.empty()) {  // told before it was set up here
      for (const PeerUpdate& u : state.pending) apply_coll_post(*state.run, u);
      state.pending.clear();
    }
  }

  // A step of a collective's algorithm another process's rank posted.
  void apply_coll_post(CollRun& run, const PeerUpdate& u) {
    if (u.a >= run.step_msg.size() || u.b >= run.step_msg[u.a].size() || run.step_msg[u.a][u.b] == kNone) return;
    const uint32_t id = run.step_msg[u.a][u.b];
    u.kind == PeerUpdate::CollSendPosted ? post_coll_send(id, u.t) : post_coll_recv(id, u.t);
  }
  // Tells the process of the step's peer that a send or receive step was posted.
  void tell_coll_post(uint32_t c_id, const CollRun& run, const CollStep& st, uint32_t id, bool send, double t) {
    if (!peers_ || st.peer < 0 || static_cast<size_t>(st.peer) >= run.rank_at.size()) return;
    const int peer = run.rank_at[st.peer];
    if (!remote(peer)) return;
    PeerUpdate u;
    u.kind = send ? PeerUpdate::CollSendPosted : PeerUpdate::CollRecvPosted;
    u.id = c_id;
    u.a = cmsg_[id].send_pos;
    u.b = cmsg_[id].send_step;
    u.t = t;
    tell(peer, u);
  }

  void post_coll_send(uint32_t id, double t) {
    cmsg_[id].ts = t;
    wake_coll(id);
  }
  void post_coll_recv(uint32_t id, double t) {
    cmsg_[id].tr = t;
    wake_coll(id);
  }
  void wake_coll(uint32_t id) {
    for (int r : cmsg_[id].waiting) make_ready(r);
    cmsg_[id].waiting.clear();
  }
  void park_coll(uint32_t id, int rank) { add_waiter(cmsg_[id].waiting, rank); }
  static void add_waiter(std::vector<int>& waiting, int rank) {
    if (std::find(waiting.begin(), waiting.end(), rank) == waiting.end()) waiting.push_back(rank);
  }
  // when the send side of a collective's message completes, or kUnknown (its receive not posted yet)
  double coll_send_done(uint32_t id) const {
    const CollMsg& m = cmsg_[id];
    if (model_.send_waits_for_receive(m.bytes, m.synchronous) && m.tr == kUnknown) return kUnknown;
    return model_.send_completion(m.bytes, m.ts, m.tr, m.senders, m.synchronous);
  }
  double coll_recv_done(uint32_t id) const {
    const CollMsg& m = cmsg_[id];
    if (m.ts == kUnknown) return kUnknown;
    return model_.recv_completion(m.bytes, m.ts, m.tr, m.senders, m.synchronous);
  }

  // A member arrives: a blocking call waits for collective_done to walk it; a non-blocking one posts its
  // first steps now.
  void start_member(uint32_t c_id, CollState& c, int pos, int rank, double at) {
    CollRun& run = *c.run;
    run.members[run.position[pos]].t = at;
    if (c.inst.call >= MPA_CALL_Ibarrier) walk(c_id, c, pos, rank, at, true);
  }

  // when a non-blocking collective's I- call returns: after posting its first steps
  [[gnu::noinline]] double posted_until(uint32_t c_id, int rank) const {
    const CollState* c = coll_of(c_id);
    if (!c) return kUnknown;
    int pos = member_pos(c_id, *c, rank);
    if (pos < 0 || c->state != RunState::Algorithm) return kUnknown;
    if (c->member_t[static_cast<size_t>(pos)] != kUnknown) return c->member_t[static_cast<size_t>(pos)];
    return c->run ? c->run->members[c->run->position[pos]].t : kUnknown;
  }

  // Walks a member's steps from `from` as far as they go. Posted: stopped before the first step that
  // waits (start_only, the I- call returning); Parked: a step needs another rank's time.
  Walk walk(uint32_t c_id, CollState& c, int member, int rank, double from, bool start_only) {
    CollRun& run = *c.run;
    const int pos = run.position[member];
    CollMember& m = run.members[pos];
    m.t = m.t == kUnknown ? from : std::max(m.t, from);
    const auto& steps = run.schedule->ranks[pos];
    for (; m.step < steps.size(); m.step++) {
      const CollStep& st = steps[m.step];
      const uint32_t id = run.step_msg[pos][m.step];
      switch (st.kind) {
        case CollStep::Isend:  // (6)
          post_coll_send(id, m.t);
          tell_coll_post(c_id, run, st, id, true, m.t);
          m.t += model_.isend();
          break;
        case CollStep::Irecv:  // (10)
          post_coll_recv(id, m.t);
          tell_coll_post(c_id, run, st, id, false, m.t);
          m.t += model_.irecv();
          break;
        case CollStep::Reduce:
          m.t += model_.reduction(st.bytes);
          break;
        case CollStep::FlagSet: {
          FlagLine& own = flag_line(c.inst.comm, st.stream, pos);
          own.at[++own.raised % kFlagRing] = m.t;
          for (int r : own.waiting) make_ready(r);
          own.waiting.clear();
          if (peers_) {
            PeerUpdate u;
            u.kind = PeerUpdate::FlagRaised;
            u.id = c.inst.comm;
            u.a = static_cast<uint32_t>(pos);
            u.flag = st.stream;
            u.t = m.t;
            tell_members(c, u);
          }
          break;
        }
        case CollStep::FlagWait: {
          if (start_only) return Walk::Posted;
          const int64_t want = static_cast<int64_t>(flag_line(c.inst.comm, st.stream, pos).raised) + 1 - st.lag;
          FlagLine& peer = flag_line(c.inst.comm, st.stream, st.peer);
          if (want <= 0 || static_cast<uint64_t>(want) + kFlagRing <= peer.raised) break;  // long since raised
          if (peer.raised < static_cast<uint64_t>(want)) {
            add_waiter(peer.waiting, rank);
            return Walk::Parked;
          }
          m.t = std::max(m.t, model_.flag_seen(peer.at[static_cast<uint64_t>(want) % kFlagRing]));
          break;
        }
        case CollStep::Send:
        case CollStep::Recv: {
          if (start_only) return Walk::Posted;
          const bool send = st.kind == CollStep::Send;
          if (!m.step_posted) {
            send ? post_coll_send(id, m.t) : post_coll_recv(id, m.t);
            tell_coll_post(c_id, run, st, id, send, m.t);
            m.step_posted = true;
          }
          double done = send ? coll_send_done(id) : coll_recv_done(id);
          if (done == kUnknown) {
            park_coll(id, rank);
            return Walk::Parked;
          }
          m.t = done;
          m.step_posted = false;
          break;
        }
        case CollStep::Wait: {
          if (start_only) return Walk::Posted;
          for (uint32_t q = std::max(m.wait_next, st.first_request); q < st.first_request + st.requests; q++) {
            const uint32_t k = run.pairing->request_step[pos][q];  // the request's step: its message
            const uint32_t req = run.step_msg[pos][k];
            double done = steps[k].kind == CollStep::Isend ? coll_send_done(req) : coll_recv_done(req);
            if (done == kUnknown) {
              m.wait_next = q;
              park_coll(req, rank);
              return Walk::Parked;
            }
            m.wait_done = std::max(m.wait_done, done);
          }
          m.t = std::max(m.t, m.wait_done);
          m.wait_next = 0;
          m.wait_done = -std::numeric_limits<double>::infinity();
          break;
        }
      }
    }
    c.member_t[static_cast<size_t>(member)] = m.t;
    if (--run.unfinished == 0) {  // every member done: its messages are free again
      for (uint32_t id : run.messages) cmsg_free_.push_back(id);
      if (free_runs_.size() < kFreeRuns) free_runs_.push_back(std::move(c.run));
      c.run.reset();
    }
    return Walk::Done;
  }

  void post_links(int r, const Here& op, double when) {
    const OpLinks& links = op.links;
    for (uint32_t k = 0; k < links.size(); k++) {
      const Link l = links[k];
      if (l.id == kNone) continue;
      if (l.kind == Link::PostSend) {
        MsgState& m = msg(l.id);
        if (op.streamed) fill_posted(m, r, l.id, op, true);
        m.split = o_.split_everywhere || at(o_.split_sites, r, op.callsite);
        if (!m.counted) {
          m.counted = true;
          if (splits(m)) split_messages_++;
          else if (rendezvous(m)) {
            rendezvous_messages_++;
            rendezvous_bytes_ += m.bytes;
          }
        }
        const bool channel = channelled(m);
        if (channel && !remote(m.dst)) join_channel(l.id, m);
        set_ts(m, when);
        // the receiver's process: where its receive is, or where the message's eager start is computed;
        // walking op streams, with the fields its process cannot read in its own ranks' streams
        if (remote(m.dst) && (m.has_recv || channel)) {
          PeerUpdate u;
          u.id = l.id;
          if (op.streamed) {
            u.kind = PeerUpdate::SendBytes;
            u.set_bytes(m.bytes);
            u.a = static_cast<uint32_t>(m.senders);
            tell(m.dst, u);
          }
          u.kind = PeerUpdate::SendPosted;
          u.flag = static_cast<uint8_t>((m.split ? PeerUpdate::kSplit : 0) | (m.synchronous ? PeerUpdate::kSynchronous : 0) |
                                        (m.cached ? PeerUpdate::kCached : 0) | (m.has_recv ? PeerUpdate::kAnswered : 0));
          u.a = static_cast<uint32_t>(m.src), u.b = static_cast<uint32_t>(m.dst);
          u.t = when;
          tell(m.dst, u);
        }
      } else if (l.kind == Link::PostRecv) {
        MsgState& m = msg(l.id);
        if (op.streamed) fill_posted(m, r, l.id, op, false);
        set_tr(m, when);
        if (peers_ && m.has_send) {
          if (const int src = sender_of(l.id, m); remote(src)) {
            PeerUpdate u;
            u.kind = PeerUpdate::RecvPosted;
            u.id = l.id;
            u.t = when;
            tell(src, u);
          }
        }
      } else if (l.kind == Link::PostColl) {
        arrive_collective(l.id, r, when, op.streamed);
      }
    }
  }

  // The rank's simulated time for each phase opening at an op up to `op` not recorded yet, where the
  // rank is about to compute before `op` (entry: false) or about to enter it (true).
  void mark(int r, uint32_t op, bool entry) {
    const PhaseMarks* m = o_.marks.get();
    if (!m || static_cast<size_t>(r) >= m->opens.size()) return;
    if (entry != (static_cast<size_t>(r) < m->at_entry.size() && m->at_entry[r])) return;
    const auto& opens = m->opens[r];
    auto& got = marks_[r];
    while (got.size() < opens.size() && opens[got.size()] <= op) got.push_back(ranks_[r].now);
  }

  // Advances rank r by one op; false when it is done or must wait.
  bool step(int r) {
    RankState& s = ranks_[r];
    if (s.i >= s.w.end) return false;
    s.parked = RankState::Parked::None;
    running_ = r;
    const Here op = here(r, s.i);
    if (!s.gap_done) {
      if (o_.marks) mark(r, s.i, false);
      double prev_exit = s.i > s.w.first ? static_cast<double>(exit_before(r, s.i)) : static_cast<double>(s.w.start_ns);
      double gap = static_cast<double>(entered(r, s.i, op)) - prev_exit;
      gap = std::max(gap, 0.0) * computation_factor(r, s.i);
      s.now += gap;
      s.b.computation += gap;
      if (o_.marks) mark(r, s.i, true);
      s.gap_done = true;
      // Open MPI (ob1 over TCP or shared memory) has no asynchronous progress: a receive posted early
      // takes part in the handshake of a rendezvous only once the rank calls MPI again, here
      if (!s.preposting.empty()) {
        for (const auto& key : s.preposting) s.preposted[key] = s.now;
        s.preposting.clear();
      }
      // a send made non-blocking completes here, at the next MPI call
      if (s.deferred_send_done != kUnknown) {
        if (s.deferred_send_done > s.now) {
          site(r, op, false).predicted.send_wait += s.deferred_send_done - s.now;
          s.now = s.deferred_send_done;
        }
        s.deferred_send_done = kUnknown;
      }
      s.op_start = s.now;
      wake_rank(r);  // in MPI from now: a sender waiting for room in its buffer may go on
    }
    Breakdown parts;
    double end = kUnknown;
    bool nonblocking_now = false;
    switch (op.kind) {
      case OpKind::Send:
      case OpKind::SyncSend:
      case OpKind::Recv:
      case OpKind::SendRecv:
      case OpKind::Completion: {
        if (!s.posted) {
          // a receive made an Irecv: posted when the previous one at this site completed
          auto pre = op.call == MPA_CALL_Recv && !s.preposted.empty() ? s.preposted.find(t_.site(r, op.callsite))
                                                                       : s.preposted.end();
          s.preposted_now = pre != s.preposted.end() && pre->second < s.now;
          post_links(r, op, s.preposted_now ? pre->second : s.now);
          s.posted = true;
        }
        const bool as_wait = op.kind == OpKind::Completion || s.preposted_now;
        nonblocking_now = (op.kind == OpKind::Send || op.kind == OpKind::SyncSend) &&
                          (o_.nonblocking_everywhere || at(o_.nonblocking_sites, r, op.callsite));
        end = s.now + (as_wait ? p_.o : 0);
        if (as_wait) parts.recv_overhead += p_.o;
        const OpLinks& links = op.links;
        for (uint32_t k = 0; k < links.size() && end != kUnknown; k++) {
          const Link l = links[k];
          if (l.id == kNone) continue;
          double done = kUnknown;
          // a blocking call's parts are its links' (each adds its own once it completes); a wait's are its
          // overhead and what it waits beyond it, below
          Breakdown* const p = as_wait ? nullptr : &parts;
          if (l.kind == Link::DoneSend) {
            if (nonblocking_now) {
              double d = send_done(l.id, nullptr);
              if (d == kUnknown && !s.force) {
                park(r);
                return false;
              }
              s.deferred_send_done = d == kUnknown ? s.now : d;
              done = s.now + model_.isend();
              if (p) p->send_overhead += model_.isend();
            } else {
              done = send_done(l.id, p);
            }
          } else if (l.kind == Link::DoneRecv) {
            done = recv_done(l.id, p);
          } else if (l.kind == Link::DoneColl) {
            done = collective_done(l.id, r, s.now);
            if (done != kUnknown && p) p->collectives += std::max(0.0, done - s.now);
          } else {
            continue;
          }
          if (done == kUnknown) {
            if (!s.force) {
              if (l.kind == Link::DoneColl) wait_for_collective(l.id, r);
              else park(r);
              return false;
            }
            end = kUnknown;
            break;
          }
          if (as_wait) {
            // (11): the wait returns at max(ti + Tblk, tw + o'); what is beyond tw + o' is waiting
            double beyond = std::max(0.0, done - (s.now + p_.o));
            if (l.kind == Link::DoneSend) parts.send_wait += beyond;
            else if (l.kind == Link::DoneRecv) parts.recv_wait += beyond;
            else parts.collectives += beyond;
          }
          end = std::max(end, done);
        }
        // the op is done, or goes on with its measured time: its sides of its messages read them no more
        for (uint32_t k = 0; k < links.size(); k++) {
          const Link l = links[k];
          if (l.id != kNone && (l.kind == Link::DoneSend || l.kind == Link::DoneRecv))
            side_done(l.id, l.kind == Link::DoneSend ? kSentSide : kReceivedSide);
        }
        if (as_wait && end != kUnknown) {
          // the parts of a wait are its overhead and its waiting, which may overlap: keep the sum exact
          double sum = parts.total();
          double dur = end - s.now;
          if (sum > dur && sum > 0) {
            double excess = sum - dur;
            double w = parts.send_wait + parts.recv_wait + parts.collectives;
            if (w > 0) {
              double f = std::max(0.0, (w - excess) / w);
              parts.send_wait *= f;
              parts.recv_wait *= f;
              parts.collectives *= f;
            }
          }
        } else if (end != kUnknown) {
          double dur = end - s.now, sum = parts.total();
          if (sum > dur + 1e-6 && sum > 0) {  // a send and a receive together (Sendrecv) overlap
            double f = dur / sum;
            parts.send_overhead *= f, parts.recv_overhead *= f, parts.send_wait *= f, parts.recv_wait *= f;
            parts.synchronisation *= f, parts.collectives *= f, parts.other *= f;
          } else if (sum < dur) {
            parts.synchronisation += dur - sum;
          }
        }
        break;
      }
      case OpKind::PostSend:
      case OpKind::PostRecv: {
        if (!s.posted) {
          post_links(r, op, s.now);
          s.posted = true;
        }
        const double post = op.kind == OpKind::PostSend ? model_.isend() : model_.irecv();  // (6), (10)
        end = s.now + post;
        (op.kind == OpKind::PostSend ? parts.send_overhead : parts.recv_overhead) += post;
        break;
      }
      case OpKind::PostCollective: {
        if (!s.posted) {
          post_links(r, op, s.now);
          s.posted = true;
        }
        // (6): o', or the time to post the algorithm's first steps
        uint32_t c = op.links.size() ? op.links[0].id : kNone;
        double posted = c == kNone ? kUnknown : posted_until(c, r);
        end = std::max(s.now + p_.o, posted == kUnknown ? 0.0 : posted);
        parts.collectives += end - s.now;
        break;
      }
      case OpKind::Collective: {
        if (!s.posted) {
          post_links(r, op, s.now);
          s.posted = true;
        }
        uint32_t c = op.links.size() ? op.links[0].id : kNone;
        double done = c == kNone ? kUnknown : collective_done(c, r, s.now);
        if (done == kUnknown && !s.force && c != kNone) {
          wait_for_collective(c, r);
          return false;
        }
        end = done;
        if (end != kUnknown) parts.collectives += end - s.now;
        break;
      }
      case OpKind::Probe:
      case OpKind::Polling:
      case OpKind::Other:
        end = s.now + took(r, s.i, op);
        parts.other += end - s.now;
        break;
    }
    if (end == kUnknown) {  // forced: a partner is missing from the logs; keep the measured time
      unresolved_++;
      parts = Breakdown{};
      end = s.now + took(r, s.i, op);
      parts.other += end - s.now;
    }
    if (!o_.persistent_sites.empty() && p_.persistent_saving &&
        (op.kind == OpKind::Send || op.kind == OpKind::SyncSend || op.kind == OpKind::Recv ||
         op.kind == OpKind::PostSend || op.kind == OpKind::PostRecv) &&
        at_site(o_.persistent_sites, r, op.callsite)) {
      // the request set up once instead of at every call: its overhead less the saving (or more, where
      // the library's persistent path is the slower one)
      double& overhead = op.kind == OpKind::Send || op.kind == OpKind::SyncSend || op.kind == OpKind::PostSend
                             ? parts.send_overhead
                             : parts.recv_overhead;
      double change = std::min(*p_.persistent_saving, overhead);
      overhead -= change;
      end -= change;
    }
    if (op.call == MPA_CALL_Recv && (o_.prepost_everywhere || at(o_.prepost_sites, r, op.callsite))) {
      // the Irecv of the next receive at this site, right after this one completes (an MPI_Mrecv is
      // not: its message comes from the MPI_Mprobe before it)
      end += model_.irecv();
      parts.recv_overhead += model_.irecv();
      s.preposting.insert(t_.site(r, op.callsite));
    }
    SiteReplay& sr = site(r, op, true);  // the rank's figures are its sites' (added up at the end) and its b
    accumulate(sr.predicted, parts);
    s.now = std::max(end, s.now);
    if (!spans_.empty() && s.i < spans_[r].size()) spans_[r][s.i] = {s.op_start, s.now};
    if (!channels_.empty()) {
      s.in_mpi.emplace_back(s.op_start, s.now);
      if (((s.in_mpi.size() - s.first_span) & forget_mask_) == 0) forget_spans(r);
      wake_rank(r);
    }
    if (colls_held_ && (op.kind == OpKind::Collective || op.kind == OpKind::Completion)) colls_taken(r, op);
    s.i++;
    s.gap_done = s.posted = s.force = s.preposted_now = false;
    if (!streamed_.empty()) {
      streamed_[r]->advance();
      return true;
    }
    const auto& ops = t_.ranks[r].ops;
    next_op_[r] = ops.data() + s.i;
    prefetch_ahead(ops, s.i, s.w.end);
    return true;
  }

  // Drops the spans of rank d that no message still to be asked about can arrive in: every such message
  // starts no earlier than the first one still in its pair's buffer, or the next one to start, or its
  // sender's clock.
  void forget_spans(int d) {
    double low = std::numeric_limits<double>::max();
    for (uint32_t c_id : channels_into_[d]) {
      const Channel& c = channels_[c_id];
      const int src = c.src;
      const RankState& q = ranks_[src];
      // a sender on another process: its clock is not here; a message still to start starts no earlier
      // than the last one did
      double b = remote(src) ? c.last_start : q.i < q.w.end ? q.now : std::numeric_limits<double>::max();
      if (c.head < c.computed) b = std::min(b, msg(c.at(c.head)).start);
      else if (c.computed < c.end() && msg(c.at(c.computed)).ts != kUnknown)  // posted, so in the list
        b = std::min(b, msg(c.at(c.computed)).ts);
      low = std::min(low, b);
    }
    RankState& s = ranks_[d];
    // the spans end in order: the first to keep is found by bisection (a walk over the spans since the last
    // call, 4096 then, took a twentieth of a simulation)
    const auto keep = std::partition_point(s.in_mpi.begin() + static_cast<std::ptrdiff_t>(s.first_span), s.in_mpi.end(),
                                           [low](const std::pair<double, double>& span) { return span.second < low; });
    s.first_span = static_cast<size_t>(keep - s.in_mpi.begin());
    if (s.first_span > s.in_mpi.size() / 2) {
      s.in_mpi.erase(s.in_mpi.begin(), s.in_mpi.begin() + static_cast<std::ptrdiff_t>(s.first_span));
      s.first_span = 0;
    }
  }

  // What the ops ahead of op i of a rank will read, in the trace and here, fetched in two stages so that
  // neither waits on memory: the op 2K ahead (its bytes, nothing read), then the messages of the op K
  // ahead (its op fetched by then; its links read). The ranks take turns, a few ops each, so memory has a
  // whole round of the other ranks to answer. Reading the op K ahead itself to find its messages, as this
  // did before, stalled on it: a sixth of a simulation of the ring (replay_bench's ring, 64 x 300000
  // calls, interleaved runs: 10.9-12.1 -> 13.6-14.4 M events/s). Fetching the link ids of the op between as a third stage
  // gained nothing measurable: their lines hold a dozen ops' links.
  void prefetch_ahead(const std::vector<Op>& ops, uint32_t i, uint32_t end) const {
    if (i + 2 * kPrefetchOps < end) {
      const char* far = reinterpret_cast<const char*>(&ops[i + 2 * kPrefetchOps]);
      __builtin_prefetch(far);
      __builtin_prefetch(far + sizeof(Op) - 1);  // an op may straddle two cache lines
    }
    if (i + kPrefetchOps < end) prefetch_messages_of(ops[i + kPrefetchOps]);
  }

  void prefetch_messages_of(const Op& op) const {
    const OpLinks links = t_.links_of(op);
    for (uint32_t k = 0; k < links.size(); k++) {
      const Link l = links[k];
      if (l.id == kNone || l.kind == Link::PostColl || l.kind == Link::DoneColl) continue;
      __builtin_prefetch(&t_.messages[l.id]);
      __builtin_prefetch(&info_[l.id]);
      if (!together_->empty()) __builtin_prefetch(&(*together_)[l.id]);
    }
  }

  void park(int r) {
    ranks_[r].parked = blocked_on_.on_rank ? RankState::Parked::Rank : RankState::Parked::Message;
    ranks_[r].parked_id = blocked_on_.id;
    if (blocked_on_.on_rank) {
      auto& w = waiting_rank_[blocked_on_.id];
      if (std::find(w.begin(), w.end(), r) == w.end()) w.push_back(r);
      return;  // no wake here: two ranks each waiting for the other's progress would wake each other for ever
    }
    const uint32_t m = blocked_on_.id;
    if (waits_on_msg_[r] != m) {
      if (waits_on_msg_[r] != kNone) leave_msg_list(r);  // released by a stall, it waits on another now
      Waiters& w = msg(m).waiters;
      if (w.tail < 0) w.head = r;
      else next_msg_waiter_[w.tail] = r;
      w.tail = r;
      waits_on_msg_[r] = m;
    }
    wake_rank(r);  // a sender waiting for its progress may tell now when it takes a message (taken)
  }
  // A rank that may go on is no longer parked where it was: taken() reads where a rank is parked, and a
  // rank made ready may have left that call already (its collective done, its message come); until it
  // runs again, a sender asking about it waits for it. The answer then does not depend on which rank the
  // replay happened to run first.
  void make_ready(int r) {
    ranks_[r].parked = RankState::Parked::None;
    ready_.push_back(r);
    // It runs soon (the ready ranks are a stack): its op, which it has not touched since it parked, is
    // fetched meanwhile. A walk through an instance of 1024 members takes more than the cache holds, and
    // in a report of an allreduce on 1024 ranks the load of the op a rank resumed at took half of step()'s
    // time. (Its state and the op step() looks ahead to, fetched here too, gained nothing measurable.)
    if (streamed_.empty()) __builtin_prefetch(next_op_[r]);
  }
  void leave_msg_list(int r) {
    Waiters& w = msg(waits_on_msg_[r]).waiters;
    int32_t prev = -1;
    for (int32_t q = w.head; q >= 0 && q != r; q = next_msg_waiter_[q]) prev = q;
    (prev < 0 ? w.head : next_msg_waiter_[prev]) = next_msg_waiter_[r];
    if (w.tail == r) w.tail = prev;
    next_msg_waiter_[r] = -1;
    waits_on_msg_[r] = kNone;
  }
  // asked at every op of a rank with eager buffers limited: the test inlined, the waking out of line
  void wake_rank(int r) {
    if (!waiting_rank_.empty() && !waiting_rank_[r].empty()) wake_waiting(r);
  }
  [[gnu::noinline]] void wake_waiting(int r) {
    for (int q : waiting_rank_[r]) make_ready(q);
    waiting_rank_[r].clear();
  }

  // An op's site's figures: met before, but for an op's first call there (inlined: asked once an op).
  SiteReplay& site(int r, const Here& op, bool count_call) {
    const auto& index = site_index_[r];
    SiteReplay& s = op.callsite < index.size() && index[op.callsite] != kNone ? sites_[index[op.callsite]] : site_by_lookup(r, op);
    if (count_call) s.calls++;
    return s;
  }
  // the others (kept out of line, so that the path above inlines): an op's first call at its site, or a
  // call site id beyond the dense tables
  [[gnu::noinline]] SiteReplay& site_by_lookup(int r, const Here& op) {
    uint32_t* slot = nullptr;
    if (op.callsite < kDenseCallsites) {
      auto& index = site_index_[r];
      if (op.callsite >= index.size()) index.resize(op.callsite + 1, kNone);
      slot = &index[op.callsite];
    } else {
      slot = &sparse_sites_.try_emplace({r, op.callsite}, kNone).first->second;
    }
    if (*slot == kNone) {
      *slot = static_cast<uint32_t>(sites_.size());
      SiteReplay& fresh = sites_.emplace_back();
      fresh.rank = r;
      fresh.callsite = op.callsite;
      fresh.call = op.call;
    }
    return sites_[*slot];
  }
};

// ---- the paper's replay (section 4.3) ---------------------------------------------------------------
// Per rank, the Table 4 time of each routine from the recorded call times ts and tr, plus the
// computation gaps; the predicted run time is the largest sum. Collectives and calls the paper does not
// model keep their measured time.
ReplayResult paper_replay(const Trace& t, const ReplayOptions& o) {
  LogGPS model(effective_params(o));
  const LogGPSParams& p = model.params();
  const ResentModels resent(p);
  auto model_of = [&](const Message& m) -> const LogGPS& { return resent.of(model, m.bytes, m.cached); };
  ReplayResult res;
  res.mode = ReplayMode::Paper;
  res.model = o.model;
  res.params = p;
  uint64_t t0 = std::numeric_limits<uint64_t>::max();
  std::vector<ReplayWindow> w(t.ranks.size());
  for (size_t r = 0; r < t.ranks.size(); r++) {
    w[r] = replay_window(t.ranks[r]);
    if (w[r].end > w[r].first) t0 = std::min(t0, w[r].start_ns);
  }
  // each rank's sites in the order first met, and a call site id's index into them (dense below
  // kDenseCallsites, as the simulation keeps them); sorted by id when the rank is done
  std::vector<SiteReplay> rank_sites;
  std::vector<uint32_t> site_index;
  std::map<uint32_t, uint32_t> sparse_sites;
  auto post_time = [&](uint32_t op_rank, uint32_t op) { return static_cast<double>(t.op(op_rank, op).t_enter); };
  auto blocking_send = [&](const Message& m, double ts, double tr) {  // (4), (5)
    const LogGPS& mm = model_of(m);
    return m.synchronous ? mm.synchronous_send(m.bytes, ts, tr) : mm.send(m.bytes, ts, tr);
  };
  for (size_t r = 0; r < t.ranks.size(); r++) {
    const auto& ops = t.ranks[r].ops;
    RankReplay rr;
    rr.rank = static_cast<int>(r);
    if (w[r].end <= w[r].first) {
      res.ranks.push_back(rr);
      continue;
    }
    double total = static_cast<double>(w[r].start_ns - t0);
    for (uint32_t i = w[r].first; i < w[r].end; i++) {
      const Op& op = ops[i];
      if (i + kPrefetchOps < w[r].end) prefetch_messages(t, ops[i + kPrefetchOps]);
      Breakdown b;
      double prev_exit = i > w[r].first ? static_cast<double>(ops[i - 1].t_exit()) : static_cast<double>(w[r].start_ns);
      b.computation = std::max(0.0, static_cast<double>(op.t_enter) - prev_exit) * o.compute_factor;
      double routine = 0;
      bool modelled = false;
      const OpLinks links = t.links_of(op);
      for (uint32_t k = 0; k < links.size(); k++) {
        const Link l = links[k];
        // a collective's links name a collective instance, not a message: its time stays as measured
        if (l.id == kNone || l.kind == Link::PostColl || l.kind == Link::DoneColl) continue;
        const Message& m = t.messages[l.id];
        if (!m.matched()) continue;
        double ts = post_time(m.src, m.send_op), tr = post_time(m.dst, m.recv_op);
        double tw = static_cast<double>(op.t_enter);
        if (l.kind == Link::DoneSend && (op.kind == OpKind::Send || op.kind == OpKind::SyncSend || op.kind == OpKind::SendRecv)) {
          routine = std::max(routine, blocking_send(m, ts, tr));
          b.send_wait += model_of(m).send_wait(m.bytes, ts, tr, m.synchronous);
          modelled = true;
        } else if (l.kind == Link::DoneRecv && (op.kind == OpKind::Recv || op.kind == OpKind::SendRecv)) {
          routine = std::max(routine, model_of(m).recv(m.bytes, ts, tr));
          b.recv_wait += model_of(m).recv_wait(m.bytes, ts, tr, m.synchronous);
          modelled = true;
        } else if (l.kind == Link::DoneSend || l.kind == Link::DoneRecv) {  // (11)
          double ti = l.kind == Link::DoneSend ? ts : tr;
          double blocking = l.kind == Link::DoneSend ? blocking_send(m, ts, tr) : model_of(m).recv(m.bytes, ts, tr);
          double d = model.wait(blocking, tw - ti);
          routine = std::max(routine, d);
          (l.kind == Link::DoneSend ? b.send_wait : b.recv_wait) += std::max(0.0, d - p.o);
          modelled = true;
        } else if (l.kind == Link::PostSend || l.kind == Link::PostRecv) {
          if (op.kind == OpKind::PostSend || op.kind == OpKind::PostRecv) {
            routine = std::max(routine, op.kind == OpKind::PostSend ? model.isend() : model.irecv());  // (6), (10)
            modelled = true;
          }
        }
      }
      if (!modelled) {
        routine = static_cast<double>(op.t_exit() - op.t_enter);
        (op.kind == OpKind::Collective || op.kind == OpKind::PostCollective ? b.collectives : b.other) += routine;
      } else {
        double waits = b.send_wait + b.recv_wait;
        double rest = std::max(0.0, routine - waits);
        if (waits > routine) b.send_wait *= routine / waits, b.recv_wait *= routine / waits, rest = 0;
        (op.kind == OpKind::PostSend || op.kind == OpKind::Send || op.kind == OpKind::SyncSend ? b.send_overhead
                                                                                             : b.recv_overhead) += rest;
      }
      total += b.computation + routine;
      accumulate(rr.predicted, b);
      uint32_t* slot = nullptr;
      if (op.callsite < kDenseCallsites) {
        if (op.callsite >= site_index.size()) site_index.resize(op.callsite + 1, kNone);
        slot = &site_index[op.callsite];
      } else {
        slot = &sparse_sites.try_emplace(op.callsite, kNone).first->second;
      }
      if (*slot == kNone) {
        *slot = static_cast<uint32_t>(rank_sites.size());
        SiteReplay& fresh = rank_sites.emplace_back();
        fresh.rank = static_cast<int>(r), fresh.callsite = op.callsite, fresh.call = op.call;
      }
      SiteReplay& site = rank_sites[*slot];
      site.calls++;
      Breakdown site_part = b;
      site_part.computation = 0;
      accumulate(site.predicted, site_part);
    }
    std::sort(rank_sites.begin(), rank_sites.end(), [](const SiteReplay& a, const SiteReplay& b) { return a.callsite < b.callsite; });
    for (const SiteReplay& site : rank_sites)
      if (site.callsite < kDenseCallsites) site_index[site.callsite] = kNone;
    res.sites.insert(res.sites.end(), rank_sites.begin(), rank_sites.end());
    rank_sites.clear();
    sparse_sites.clear();
    const double tail = tail_gap(w[r], w[r].end > w[r].first ? t.ranks[r].ops[w[r].end - 1].t_exit() : 0) * o.compute_factor;
    total += tail;
    rr.predicted.computation += tail;
    rr.predicted_ns = total;
    rr.measured_ns = static_cast<double>(w[r].stop_ns - t0);
    res.predicted_ns = std::max(res.predicted_ns, total);
    res.measured_ns = std::max(res.measured_ns, rr.measured_ns);
    res.ranks.push_back(rr);
  }
  for (const auto& m : t.messages)
    if (m.matched() && model.send_waits_for_receive(m.bytes, m.synchronous)) res.rendezvous_messages++, res.rendezvous_bytes += m.bytes;
  return res;
}

}  // namespace

ReplayResult replay(const Trace& trace, const ReplayOptions& options) {
  if (options.retiming && options.mode == ReplayMode::Paper)
    throw std::invalid_argument("replay: retimed ops (ReplayOptions::retiming) are for the simulation mode");
  if (options.retiming && !options.retiming->retimes(trace, options.streams.get()))
    throw std::invalid_argument("replay: ReplayOptions::retiming retimes another trace, or other streams");
  if (options.streams && options.mode == ReplayMode::Paper)
    throw std::invalid_argument("replay: op streams (ReplayOptions::streams) are for the simulation mode");
  if (options.streams && options.streams->size() != trace.ranks.size())
    throw std::invalid_argument(fmt::format("replay: {} op streams (ReplayOptions::streams) for a trace of {} ranks",
                                            options.streams->size(), trace.ranks.size()));
  if (options.streams) {
    // a rank's ops in the trace, where it still has them, are its stream's
    for (size_t r = 0; r < trace.ranks.size(); r++) {
      const uint64_t n = (*options.streams)[r].ops(), held = trace.ranks[r].ops.size();
      if (held != 0 && held != n)
        throw std::invalid_argument(fmt::format("replay: the op stream of rank {} holds {} ops where the trace holds {}", r, n, held));
    }
  }
  if (options.mode == ReplayMode::Paper) return paper_replay(trace, options);
  Simulation sim(trace, options);
  return sim.run();
}

}  // namespace mpiadvise

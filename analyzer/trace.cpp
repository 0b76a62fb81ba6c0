#include "trace.hpp"

#include "mapped_list.hpp"
#include "message_probe.hpp"
#include "parallel.hpp"

#include <malloc.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <set>
#include <stdexcept>
#include <tuple>
#include <unordered_map>
#include <utility>

#include <fmt/format.h>
#include <zstd.h>

namespace mpiadvise {

bool is_collective_call(int call) {
  switch (call) {
    case MPA_CALL_Barrier: case MPA_CALL_Bcast: case MPA_CALL_Reduce: case MPA_CALL_Allreduce:
    case MPA_CALL_Gather: case MPA_CALL_Gatherv: case MPA_CALL_Scatter: case MPA_CALL_Scatterv:
    case MPA_CALL_Allgather: case MPA_CALL_Allgatherv: case MPA_CALL_Alltoall: case MPA_CALL_Alltoallv:
    case MPA_CALL_Alltoallw: case MPA_CALL_Reduce_scatter: case MPA_CALL_Reduce_scatter_block:
    case MPA_CALL_Scan: case MPA_CALL_Exscan:
    case MPA_CALL_Ibarrier: case MPA_CALL_Ibcast: case MPA_CALL_Ireduce: case MPA_CALL_Iallreduce:
    case MPA_CALL_Igather: case MPA_CALL_Igatherv: case MPA_CALL_Iscatter: case MPA_CALL_Iscatterv:
    case MPA_CALL_Iallgather: case MPA_CALL_Iallgatherv: case MPA_CALL_Ialltoall: case MPA_CALL_Ialltoallv:
    case MPA_CALL_Ialltoallw: case MPA_CALL_Ireduce_scatter: case MPA_CALL_Ireduce_scatter_block:
    case MPA_CALL_Iscan: case MPA_CALL_Iexscan:
      return true;
    default:
      return false;
  }
}

static bool is_nonblocking_collective(int call) { return is_collective_call(call) && call >= MPA_CALL_Ibarrier; }

OpKind op_kind(int call, uint32_t count) {
  if (count > 1) return OpKind::Polling;
  switch (call) {
    case MPA_CALL_Send: case MPA_CALL_Bsend: case MPA_CALL_Rsend: return OpKind::Send;
    case MPA_CALL_Ssend: return OpKind::SyncSend;
    case MPA_CALL_Recv: case MPA_CALL_Mrecv: return OpKind::Recv;
    case MPA_CALL_Sendrecv: case MPA_CALL_Sendrecv_replace: return OpKind::SendRecv;
    case MPA_CALL_Isend: case MPA_CALL_Issend: case MPA_CALL_Ibsend: case MPA_CALL_Irsend: return OpKind::PostSend;
    case MPA_CALL_Irecv: case MPA_CALL_Imrecv: return OpKind::PostRecv;
    case MPA_CALL_Wait: case MPA_CALL_Waitall: case MPA_CALL_Waitany: case MPA_CALL_Waitsome:
    case MPA_CALL_Test: case MPA_CALL_Testall: case MPA_CALL_Testany: case MPA_CALL_Testsome:
      return OpKind::Completion;
    case MPA_CALL_Probe: case MPA_CALL_Mprobe: return OpKind::Probe;
    case MPA_CALL_Start: case MPA_CALL_Startall: return OpKind::PostSend;  // refined per request
    default:
      if (is_collective_call(call)) return is_nonblocking_collective(call) ? OpKind::PostCollective : OpKind::Collective;
      return OpKind::Other;
  }
}

std::vector<uint8_t> pack_bytes(const void* data, size_t count, size_t width) {
  const size_t bytes = count * width;
  // byte b of value i at b * count + i, less byte b of value i - 1
  // (read in order, written to `width` planes each in order: one pass over the values)
  std::vector<uint8_t> planes(bytes), prev(width);
  const auto* in = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < count; i++, in += width)
    for (size_t b = 0; b < width; b++) {
      planes[b * count + i] = static_cast<uint8_t>(in[b] - prev[b]);
      prev[b] = in[b];
    }
  std::vector<uint8_t> out(ZSTD_compressBound(bytes));
  const size_t z = ZSTD_compress(out.data(), out.size(), planes.data(), bytes, 1);
  if (ZSTD_isError(z)) throw std::runtime_error(fmt::format("packing {} bytes: zstd: {}", bytes, ZSTD_getErrorName(z)));
  out.resize(z);
  out.shrink_to_fit();
  return out;
}

void unpack_bytes(const std::vector<uint8_t>& packed, void* data, size_t count, size_t width) {
  const size_t bytes = count * width;
  if (!bytes) return;
  std::vector<uint8_t> planes(bytes);
  const size_t got = ZSTD_decompress(planes.data(), bytes, packed.data(), packed.size());
  if (ZSTD_isError(got) || got != bytes)
    throw std::logic_error(fmt::format("unpacking {} bytes: {}", bytes, ZSTD_isError(got) ? ZSTD_getErrorName(got) : "not what was packed"));
  std::vector<uint8_t> prev(width);
  auto* out = static_cast<uint8_t*>(data);
  for (size_t i = 0; i < count; i++, out += width)
    for (size_t b = 0; b < width; b++) out[b] = prev[b] = static_cast<uint8_t>(prev[b] + planes[b * count + i]);
}

namespace {

// f(RankTrace&) on rank r, its ops unpacked from Trace::packed_ops where they are packed and packed again
// after it (f may change them).
template <class F>
void change_rank(Trace& t, size_t r, F&& f) {
  if (t.packed_ops.empty()) {
    f(t.ranks[r]);
    return;
  }
  t.ranks[r].ops = t.packed_ops[r].unpack();
  f(t.ranks[r]);
  t.packed_ops[r].pack(t.ranks[r].ops);
}

// change_rank on each rank in order: one rank's ops unpacked at a time.
template <class F>
void change_each_rank(Trace& t, F&& f) {
  for (size_t r = 0; r < t.ranks.size(); r++) change_rank(t, r, f);
}

// f(ops) on each rank's ops in order, unpacked from Trace::packed_ops a rank at a time where they are packed.
template <class F>
void read_each_rank(const Trace& t, F&& f) {
  for (size_t r = 0; r < t.ranks.size(); r++) {
    if (t.packed_ops.empty()) {
      f(std::as_const(t.ranks[r].ops));
      continue;
    }
    const std::vector<Op> ops = t.packed_ops[r].unpack();
    f(ops);
  }
}

// A send is its message from the start: the reading makes one Message for each send, in the ranks' order
// and each rank's order of sending, and the matching fills in the receive's side. A message is so named by
// its sender and the sender's count of sends, the same whatever the other ranks' logs hold.
// recv_op before matching: kNone, or this where MPI_Cancel succeeded on the send (no message).
inline constexpr uint32_t kCancelledSend = kNone - 1;
// The unknown communicator as Message::comm keeps it, and both ends before matching.
inline constexpr uint32_t kUnknownComm = kMaxComms - 1;

// The receive side of a message before matching: 24 bytes each, one per receive of the run, held packed
// from the end of its log's reading to its receiver's turn in the matching (PackedRecvs). Its rank is its
// part's (Builder::Receives::rank).
struct RecvEnd {
  uint64_t bytes;
  int src;      // resolved from the status where there is one
  uint32_t op;
  int32_t tag;
  uint32_t comm : 31;      // kUnknownComm where the log names none
  bool cancelled : 1;      // MPI_Cancel succeeded: no message
};
static_assert(sizeof(RecvEnd) == 24);

// A rank's receive ends once its log is read, held packed until the matching reaches its receiver (as
// PackedOps holds ops): 1.1 bytes a receive on mpiadvise-synth's halos of 64 and 1024 ranks and its pipeline
// (a synthetic run's, regular: a real one's vary more) where a RecvEnd takes 24.
using PackedRecvs = Packed<RecvEnd>;

// The one link an op holds itself (Op::inline_link set).
Link own_link(const Op& op) { return Link{static_cast<Link::Kind>(op.inline_link - 1), op.first_link}; }

// A channel of MPI's matching: communicator (a part's index or the trace's, kUnknownComm where the log names
// none), sender, receiver (world ranks) and tag. Messages on one channel pair in order (non-overtaking).
struct Channel {
  uint32_t comm;
  int src, dst;
  int32_t tag;
  bool operator<(const Channel& o) const { return std::tie(comm, src, dst, tag) < std::tie(o.comm, o.src, o.dst, o.tag); }
};

// Pending::id of a request posted before the part read (--from): its completion completes nothing in the part.
inline constexpr uint32_t kBeforePart = kNone - 2;

// A request as the rank made it: what a completion completes.
struct Pending {
  enum Kind : uint8_t { Send, Recv, Coll, PersistentSend, PersistentRecv } kind;
  uint32_t id;          // send end, recv end or collective member slot
  // persistent requests: the arguments each Start reuses
  int peer = 0;
  uint32_t comm = 0;
  int32_t tag = 0;
  uint64_t bytes = 0;
  bool sync = false;
};

// One rank's log as read, before it joins the trace: its sends, receives, collective memberships and the
// links to them numbered within the rank, and the communicators it names in the order it first named
// them. Ranks are read side by side and join the trace one after another in the job's order of its
// logs, so the trace is the one a reading of the logs one after the other makes, whatever the threads.
struct RankPart {
  // The rank's part in one collective: 48 bytes, one per collective call, and a v-collective's counts in
  // vcounts besides (88 bytes with its bytes as optionals and its counts array held in it: with the
  // instances' optionals, mpiadvise-synth's all-to-all of 16 ranks x 1e5 calls needed 294 MiB of address
  // space beside the program's 14, where it needs 208; analysis.cpp's kAddressBytesPerCall).
  struct Membership {
    uint32_t comm, seq;  // the part's communicator; the rank's how-manieth collective on it
    uint32_t op;
    uint16_t call;
    int root;            // world rank, or -1 where the call names none
    uint64_t bytes;      // the larger of its send and receive bytes
    uint64_t sent, received;  // as the call logged them, MemberBytes::kNoBytes where it did not
  };
  static_assert(sizeof(Membership) == 48);
  // The part's links, as Trace::links holds them (ids: the part's sends, receives or memberships).
  struct Links {
    MappedList<uint32_t> id;
    MappedList<uint8_t> kind;
    void push_back(Link l) {
      id.push_back(l.id);
      kind.push_back(l.kind);
    }
    Link operator[](size_t i) const { return Link{static_cast<Link::Kind>(kind[i]), id[i]}; }
    size_t size() const { return id.size(); }
    size_t capacity_bytes() const { return id.capacity_bytes() + kind.capacity_bytes(); }
    void fit() { id.fit(), kind.fit(); }
    void release() { id.release(), kind.release(); }
  } links;
  SpilledLinks spilled;  // by the ops' first links in the part's
  // held apart from the heap (mapped_list.hpp): the reading's peak of address space is where they are all
  // held, at their size, beside the trace's arrays they join
  MappedList<Message> sends;  // comm: the part's index, kUnknownComm where the log names none
  MappedList<RecvEnd> recvs;  // while the log is read; then packed, in received
  PackedRecvs received;
  MappedList<Membership> colls;
  // a v-collective's counts array (MPA_F_VCOUNTS), by its membership's index in colls, in order
  std::vector<std::pair<uint32_t, std::vector<uint64_t>>> vcounts;
  std::vector<const Communicator*> comms;  // by the part's index: the log's definition
  // before the part read (--from): the rank's sends and receives by channel (comm: the part's index), counted;
  // and its wildcard receives whose status is never read (comm: the part's index; source -1: any), which
  // leave the receives behind them that they could have matched unmatched, as in the whole run
  std::map<Channel, uint64_t> sent_before, received_before;
  std::set<std::pair<uint32_t, int>> unresolved_before;
  size_t bytes() const {
    return sends.capacity_bytes() + recvs.capacity_bytes() + received.bytes() + links.capacity_bytes() + colls_bytes();
  }
  size_t colls_bytes() const { return colls.capacity_bytes() + vcounts.capacity() * sizeof(vcounts[0]); }
  // read: its lists cut to their size, its receives packed
  void fit() {
    sends.fit();
    received.pack(recvs.begin(), recvs.size());
    recvs.release();
    links.fit();
    colls.fit();
  }
};

// The memory the reading frees, given back to the system as it goes. glibc keeps a freed block of up to 32
// MiB in its heaps once one of that size was freed: the parts' vectors, doubled as a rank's log is read
// and freed as the parts join the trace, stayed there, and building a trace peaked at 1.66 times the trace
// built (mpiadvise-synth's halo of 64 ranks x 10^5 calls: 457 MB at the peak of mpiadvise replay, the trace
// 274), now 1.54 (422 MB; 1024 ranks x 5000 calls: 569 -> 427 MB). Given back each time the parts made or
// freed kGiveBackBytes more, which keeps the cost of malloc_trim (a walk over the heaps) to a few calls,
// where one after each of 1024 ranks made mpiadvise replay 52% slower.
class GiveBack {
 public:
  static constexpr size_t kGiveBackBytes = size_t{64} << 20;
  // a part of `bytes` was made (its vectors doubled to their size: about as much freed) or freed
  void made(size_t bytes) {
    if (since_.fetch_add(bytes) + bytes < kGiveBackBytes) return;
    since_ = 0;  // what another thread added meanwhile is not counted: a trim comes a little later
    malloc_trim(0);
  }

 private:
  std::atomic<size_t> since_{0};
};

// Reads one rank's log: its ops into the rank's trace, the rest into its part.
class RankReader {
 public:
  RankReader(const RankLog& log, RankTrace& rt, RankPart& part, uint64_t until_ns, uint64_t from_ns)
      : log_(log), rt_(rt), part_(part), until_ns_(until_ns), from_ns_(from_ns) {}

  void read() {
    rt_.hostname = log_.hostname();
    if (auto c = log_.header_key("host_cpus"); c && c->is_number_unsigned())
      rt_.host_cpus = static_cast<uint32_t>(std::min<uint64_t>(c->get<uint64_t>(), UINT32_MAX));
    const int rank = log_.rank();
    reserve_ops();
    std::unordered_map<uint64_t, Pending> pending;  // request id -> what it stands for
    std::unordered_map<uint32_t, uint32_t> coll_seq; // comm -> collectives so far
    rt_.cut = log_.for_each_event_until(until_ns_, [&](const Event& ev) {
      if (ev.t_enter_ns < from_ns_) {
        rt_.calls_before += ev.count;
        rt_.last_before = {ev.call == MPA_CALL_Finalize && !ev.unfinished, ev.unfinished, ev.t_enter_ns, ev.t_exit_ns};
        before_part(rank, ev, pending, coll_seq);
        return true;
      }
      Op op;
      rt_.calls += ev.count;
      // a call still in progress when a signal ended the rank is kept up to the op's 78 hours (a hang)
      const uint64_t exit = ev.unfinished && ev.t_exit_ns > ev.t_enter_ns && ev.t_exit_ns - ev.t_enter_ns > kMaxOpDuration
                                ? ev.t_enter_ns + kMaxOpDuration
                                : ev.t_exit_ns;
      if (!op.set_times(ev.t_enter_ns, exit))
        throw LogError(log_.path().string(), std::nullopt,
                       fmt::format("{} entered at {} ns and returned at {} ns: a trace holds calls entered "
                                   "before 2^56 ns and lasting less than 2^48 ns (78 hours)",
                                   ev.call_name, ev.t_enter_ns, ev.t_exit_ns));
      op.call = static_cast<uint8_t>(ev.call < 0 ? 0 : ev.call);  // the reader's ids: below MPA_CALL_COUNT
      op.callsite = ev.callsite;
      op.kind = op_kind(ev.call, ev.count);
      op.unfinished = ev.unfinished;
      const uint32_t idx = static_cast<uint32_t>(rt_.ops.size());
      const uint32_t comm = ev.has(MPA_F_COMM) ? comm_of(ev.comm) : kNone;
      if (ev.refused()) op.kind = OpKind::Other;
      if (op.kind == OpKind::Polling || ev.refused()) {
        rt_.ops.push_back(op);
        return true;
      }
      switch (ev.call) {
        case MPA_CALL_Send: case MPA_CALL_Bsend: case MPA_CALL_Rsend: case MPA_CALL_Ssend:
        case MPA_CALL_Isend: case MPA_CALL_Ibsend: case MPA_CALL_Irsend: case MPA_CALL_Issend: {
          if (ev.peer < 0) {  // MPI_PROC_NULL: no message
            op.kind = OpKind::Other;
            break;
          }
          bool sync = ev.call == MPA_CALL_Ssend || ev.call == MPA_CALL_Issend;
          uint32_t s = add_send(rank, idx, comm, ev.peer, ev.tag, ev.bytes, sync);
          part_.sends[s].resent = ev.resent;
          link(op, Link::PostSend, s);
          if (op.kind == OpKind::PostSend) {
            if (!ev.requests.empty()) pending[ev.requests.back()] = Pending{Pending::Send, s};
          } else if (!ev.unfinished) {  // a send in progress is posted, not done
            link(op, Link::DoneSend, s);
          }
          break;
        }
        case MPA_CALL_Recv: case MPA_CALL_Irecv: case MPA_CALL_Mrecv: case MPA_CALL_Imrecv: {
          if (ev.peer == kProcNull) {
            op.kind = OpKind::Other;
            break;
          }
          // Mrecv and Imrecv name no communicator: the reader gives them their message's (from the
          // probe that made it) in ev.comm, without the COMM field bit, which says what was recorded
          uint32_t c = comm;
          if ((ev.call == MPA_CALL_Mrecv || ev.call == MPA_CALL_Imrecv) && ev.comm != 0) c = comm_of(ev.comm);
          uint32_t r = add_recv(idx, c, ev.peer, ev.tag, ev.bytes2);
          link(op, Link::PostRecv, r);
          if (op.kind == OpKind::PostRecv) {
            if (!ev.requests.empty()) pending[ev.requests.back()] = Pending{Pending::Recv, r};
          } else if (!ev.unfinished) {  // a receive in progress has received nothing: no status
            link(op, Link::DoneRecv, r);
            if (!ev.statuses.empty()) resolve(r, ev.statuses[0]);
          }
          break;
        }
        case MPA_CALL_Sendrecv: case MPA_CALL_Sendrecv_replace: {
          if (ev.peer >= 0) {
            uint32_t s = add_send(rank, idx, comm, ev.peer, ev.tag, ev.bytes, false);
            part_.sends[s].resent = ev.resent;
            link(op, Link::PostSend, s);
            if (!ev.unfinished) {
              link(op, Link::DoneSend, s);
            }
          }
          if (ev.peer2 != kProcNull) {
            uint32_t r = add_recv(idx, comm, ev.peer2, ev.tag2, ev.bytes2);
            link(op, Link::PostRecv, r);
            if (!ev.unfinished) {
              link(op, Link::DoneRecv, r);
              if (!ev.statuses.empty()) resolve(r, ev.statuses[0]);
            }
          }
          if (!op.has_links()) op.kind = OpKind::Other;
          break;
        }
        case MPA_CALL_Send_init: case MPA_CALL_Ssend_init: case MPA_CALL_Bsend_init: case MPA_CALL_Rsend_init:
        case MPA_CALL_Recv_init: {
          if (!ev.requests.empty()) pending[ev.requests.back()] = persistent(ev, comm);
          op.kind = OpKind::Other;
          break;
        }
        case MPA_CALL_Start: case MPA_CALL_Startall: {
          bool any_recv = false, any_send = false;
          for (uint64_t id : ev.requests) {
            auto it = pending.find(id);
            if (it == pending.end()) continue;
            Pending& p = it->second;
            if (p.kind == Pending::PersistentSend && p.peer >= 0) {
              p.id = add_send(rank, idx, p.comm, p.peer, p.tag, p.bytes, p.sync);
              link(op, Link::PostSend, p.id);
              any_send = true;
            } else if (p.kind == Pending::PersistentRecv && p.peer != kProcNull) {
              p.id = add_recv(idx, p.comm, p.peer, p.tag, p.bytes);
              link(op, Link::PostRecv, p.id);
              any_recv = true;
            }
          }
          op.kind = any_send ? OpKind::PostSend : any_recv ? OpKind::PostRecv : OpKind::Other;
          break;
        }
        case MPA_CALL_Wait: case MPA_CALL_Waitall: case MPA_CALL_Waitany: case MPA_CALL_Waitsome:
        case MPA_CALL_Test: case MPA_CALL_Testall: case MPA_CALL_Testany: case MPA_CALL_Testsome: {
          // an unfinished one has no status: it completes nothing, and its requests stay pending
          for (const auto& st : ev.statuses) {
            if (st.index < 0 || static_cast<size_t>(st.index) >= ev.requests.size()) continue;
            auto it = pending.find(ev.requests[st.index]);
            if (it == pending.end()) continue;
            Pending& p = it->second;
            if (p.id == kBeforePart) {
              done_before_part(rank, p, st);
            } else if ((p.kind == Pending::Send || p.kind == Pending::PersistentSend) && p.id != kNone) {
              link(op, Link::DoneSend, p.id);
              if (st.cancelled) part_.sends[p.id].recv_op = kCancelledSend;
            } else if ((p.kind == Pending::Recv || p.kind == Pending::PersistentRecv) && p.id != kNone) {
              link(op, Link::DoneRecv, p.id);
              if (st.cancelled) part_.recvs[p.id].cancelled = true;  // its status says nothing of a message
              else resolve(p.id, st);
            } else if (p.kind == Pending::Coll) {
              link(op, Link::DoneColl, p.id);
            }
            if (p.kind == Pending::PersistentSend || p.kind == Pending::PersistentRecv) p.id = kNone;
            else pending.erase(it);
          }
          if (!op.has_links()) op.kind = OpKind::Other;
          break;
        }
        case MPA_CALL_Probe: case MPA_CALL_Mprobe:
          op.kind = OpKind::Other;  // the receive that follows carries the message
          break;
        default:
          if (is_collective_call(ev.call) && comm != kNone) {
            const uint32_t m = static_cast<uint32_t>(part_.colls.size());
            part_.colls.push_back(RankPart::Membership{
                comm, coll_seq[comm]++, idx, op.call, ev.has(MPA_F_PEER) && ev.peer >= 0 ? ev.peer : -1,
                std::max(ev.bytes, ev.bytes2),
                MemberBytes::held(ev.has(MPA_F_BYTES) ? std::optional<uint64_t>(ev.bytes) : std::nullopt),
                MemberBytes::held(ev.has(MPA_F_BYTES2) ? std::optional<uint64_t>(ev.bytes2) : std::nullopt)});
            if (!ev.vcounts.empty()) part_.vcounts.emplace_back(m, ev.vcounts);
            link(op, Link::PostColl, m);
            if (op.kind == OpKind::PostCollective && !ev.requests.empty())
              pending[ev.requests.back()] = Pending{Pending::Coll, m};
          } else {
            op.kind = OpKind::Other;
          }
      }
      rt_.ops.push_back(op);
      return true;
    });
    // the wildcard receives posted before the part whose status the reading never met (a completion after
    // --until, or none: a hang, MPI_Request_free)
    for (const auto& [id, p] : pending)
      if (p.id == kBeforePart && (p.kind == Pending::Recv || p.kind == Pending::PersistentRecv) && (p.peer < 0 || p.tag < 0))
        part_.unresolved_before.insert({std::min(p.comm, kUnknownComm), p.peer < 0 ? -1 : p.peer});
    // the vectors grow by doubling: kept at their size, the trace holds up to twice its ops
    rt_.ops.shrink_to_fit();
  }

 private:
  const RankLog& log_;
  RankTrace& rt_;
  RankPart& part_;
  const uint64_t until_ns_;  // the ops are the calls entered before (UINT64_MAX: all)
  const uint64_t from_ns_;   // ... and at or after (0: all)
  std::unordered_map<uint64_t, uint32_t> comm_index_;  // gid -> the part's index
  uint32_t last_local_ = kNone, last_comm_ = kNone;    // the last one asked for: most calls name the same

  // The rank's ops at their number where the log bounds it: grown by doubling on several threads they
  // held up to 700 MiB more at the peak of a 12.8 M-call replay. A complete log's trailer counts its calls
  // and their raw bytes, and every event takes at least 5 of those (call, mask, gap, duration, call site),
  // which bounds the events where polls were folded. A reservation that cannot be had is left out.
  // A persistent request as its MPI_*_init made it: the arguments each MPI_Start reuses.
  static Pending persistent(const Event& ev, uint32_t comm) {
    const bool is_recv = ev.call == MPA_CALL_Recv_init;
    Pending p{is_recv ? Pending::PersistentRecv : Pending::PersistentSend, kNone};
    p.peer = ev.peer;
    p.comm = comm;
    p.tag = ev.tag;
    p.bytes = is_recv ? ev.bytes2 : ev.bytes;
    p.sync = ev.call == MPA_CALL_Ssend_init;
    return p;
  }

  // A call before the part read (--from): its sends and receives counted by channel, its collectives by
  // communicator (coll_seq, which numbers the part's), its requests kept as posted before the part
  // (kBeforePart), so that a completion in the part completes nothing there. What MPI refused and polls
  // that found nothing pair nothing.
  void before_part(int rank, const Event& ev, std::unordered_map<uint64_t, Pending>& pending,
                   std::unordered_map<uint32_t, uint32_t>& coll_seq) {
    const OpKind kind = op_kind(ev.call, ev.count);
    if (ev.refused() || kind == OpKind::Polling) return;
    const uint32_t comm = ev.has(MPA_F_COMM) ? comm_of(ev.comm) : kNone;
    const auto posted = [&](Pending::Kind k, int peer, uint32_t c, int32_t tag) {
      if (!ev.requests.empty()) pending[ev.requests.back()] = Pending{k, kBeforePart, peer, c, tag};
    };
    const Status* status = ev.statuses.empty() ? nullptr : &ev.statuses[0];
    switch (ev.call) {
      case MPA_CALL_Send: case MPA_CALL_Bsend: case MPA_CALL_Rsend: case MPA_CALL_Ssend:
      case MPA_CALL_Isend: case MPA_CALL_Ibsend: case MPA_CALL_Irsend: case MPA_CALL_Issend:
        if (ev.peer < 0) return;
        part_.sent_before[{std::min(comm, kUnknownComm), rank, ev.peer, ev.tag}]++;
        if (kind == OpKind::PostSend) posted(Pending::Send, ev.peer, comm, ev.tag);
        return;
      case MPA_CALL_Recv: case MPA_CALL_Irecv: case MPA_CALL_Mrecv: case MPA_CALL_Imrecv: {
        if (ev.peer == kProcNull) return;
        uint32_t c = comm;
        if ((ev.call == MPA_CALL_Mrecv || ev.call == MPA_CALL_Imrecv) && ev.comm != 0) c = comm_of(ev.comm);
        if (kind == OpKind::PostRecv) {
          posted(Pending::Recv, ev.peer, c, ev.tag);
          posted_before(rank, c, ev.peer, ev.tag);
        } else {
          received_before(rank, c, ev.peer, ev.tag, ev.unfinished ? nullptr : status);
        }
        return;
      }
      case MPA_CALL_Sendrecv: case MPA_CALL_Sendrecv_replace:
        if (ev.peer >= 0) part_.sent_before[{std::min(comm, kUnknownComm), rank, ev.peer, ev.tag}]++;
        if (ev.peer2 != kProcNull) received_before(rank, comm, ev.peer2, ev.tag2, ev.unfinished ? nullptr : status);
        return;
      case MPA_CALL_Send_init: case MPA_CALL_Ssend_init: case MPA_CALL_Bsend_init: case MPA_CALL_Rsend_init:
      case MPA_CALL_Recv_init:
        if (!ev.requests.empty()) pending[ev.requests.back()] = persistent(ev, comm);
        return;
      case MPA_CALL_Start: case MPA_CALL_Startall:
        for (uint64_t id : ev.requests) {
          auto it = pending.find(id);
          if (it == pending.end()) continue;
          Pending& p = it->second;
          if (p.kind == Pending::PersistentSend && p.peer >= 0) {
            part_.sent_before[{std::min(p.comm, kUnknownComm), rank, p.peer, p.tag}]++;
            p.id = kBeforePart;
          } else if (p.kind == Pending::PersistentRecv && p.peer != kProcNull) {
            p.id = kBeforePart;
            posted_before(rank, p.comm, p.peer, p.tag);
          }
        }
        return;
      case MPA_CALL_Wait: case MPA_CALL_Waitall: case MPA_CALL_Waitany: case MPA_CALL_Waitsome:
      case MPA_CALL_Test: case MPA_CALL_Testall: case MPA_CALL_Testany: case MPA_CALL_Testsome:
        for (const auto& st : ev.statuses) {
          if (st.index < 0 || static_cast<size_t>(st.index) >= ev.requests.size()) continue;
          auto it = pending.find(ev.requests[st.index]);
          if (it == pending.end()) continue;
          Pending& p = it->second;
          if (p.id == kBeforePart) done_before_part(rank, p, st);
          if (p.kind == Pending::PersistentSend || p.kind == Pending::PersistentRecv) p.id = kNone;
          else pending.erase(it);
        }
        return;
      default:
        if (is_collective_call(ev.call) && comm != kNone) {
          coll_seq[comm]++;
          if (kind == OpKind::PostCollective) posted(Pending::Coll, -1, comm, 0);
        }
    }
  }
  // A request posted before the part completed (before it or in it): a wildcard receive counted on the
  // channel its status names (a named one was where it was posted); what MPI_Cancel undid no longer counted.
  void done_before_part(int rank, const Pending& p, const Status& st) {
    if (p.kind == Pending::Recv || p.kind == Pending::PersistentRecv) {
      const bool named = p.peer >= 0 && p.tag >= 0;
      if (st.cancelled && named) uncount(part_.received_before, {std::min(p.comm, kUnknownComm), p.peer, rank, p.tag});
      else if (!st.cancelled && !named) received_before(rank, p.comm, p.peer, p.tag, &st);
    } else if ((p.kind == Pending::Send || p.kind == Pending::PersistentSend) && st.cancelled) {
      uncount(part_.sent_before, {std::min(p.comm, kUnknownComm), rank, p.peer, p.tag});
    }
  }
  static void uncount(std::map<Channel, uint64_t>& counts, const Channel& c) {
    auto it = counts.find(c);
    if (it != counts.end() && it->second) it->second--;
  }
  // A receive posted before the part: one that names its source and tag on that channel now, as the
  // matching queues it where it is posted; a wildcard once its status resolves it (done_before_part).
  void posted_before(int rank, uint32_t comm, int src, int32_t tag) {
    if (src >= 0 && tag >= 0) part_.received_before[{std::min(comm, kUnknownComm), src, rank, tag}]++;
  }
  // A blocking receive before the part, on the channel its status resolved (where it posted without one: a
  // call that never returned); a wildcard it never resolved leaves the receives behind it unmatched.
  void received_before(int rank, uint32_t comm, int src, int32_t tag, const Status* st) {
    if (st) {
      if (st->source >= 0) src = st->source;
      tag = st->tag;
    }
    if (src >= 0 && tag >= 0) part_.received_before[{std::min(comm, kUnknownComm), src, rank, tag}]++;
    else part_.unresolved_before.insert({std::min(comm, kUnknownComm), src < 0 ? -1 : src});
  }

  void reserve_ops() {
    if (!log_.complete()) return;
    uint64_t n = until_ns_ == UINT64_MAX && from_ns_ == 0 ? log_.calls_estimate() : log_.calls_estimate(until_ns_, from_ns_);
    const auto raw = log_.trailer().find("raw_bytes");
    if (raw != log_.trailer().end() && raw->is_number_unsigned()) n = std::min<uint64_t>(n, raw->get<uint64_t>() / 5);
    try {
      rt_.ops.reserve(static_cast<size_t>(std::min<uint64_t>(n, UINT32_MAX)));
    } catch (const std::exception&) {
    }
  }

  uint32_t comm_of(uint32_t local) {
    if (local == last_local_ && local != kNone) return last_comm_;
    auto it = log_.comms().find(local);
    if (it == log_.comms().end()) return kNone;
    auto [pos, fresh] = comm_index_.try_emplace(it->second.gid, static_cast<uint32_t>(part_.comms.size()));
    if (fresh) part_.comms.push_back(&it->second);
    last_local_ = local;
    return last_comm_ = pos->second;
  }

  // An op's first link is held in the op (Op::inline_link), as a built trace holds it; at its second both
  // go to the part's list. Most ops have one link at most: the list holds a Waitall's, a Sendrecv's.
  void link(Op& op, Link::Kind kind, uint32_t id) {
    if (!op.has_links()) {
      set_one_link(op, Link{kind, id}, part_.spilled);
      return;
    }
    if (op.inline_link) {
      const Link one = own_link(op);
      const uint32_t first = static_cast<uint32_t>(part_.links.size());
      part_.links.push_back(one);
      part_.links.push_back(Link{kind, id});
      set_links(op, first, 2, part_.spilled);
      return;
    }
    const uint32_t n = n_links(op, part_.spilled);
    part_.links.push_back(Link{kind, id});
    set_links(op, op.first_link, n + 1, part_.spilled);
  }

  uint32_t add_send(int rank, uint32_t op, uint32_t comm, int dst, int32_t tag, uint64_t bytes, bool sync) {
    Message m;
    m.src = rank;
    m.dst = dst;
    m.comm = std::min(comm, kUnknownComm);
    m.tag = tag;
    m.bytes = bytes;
    m.synchronous = sync;
    m.send_op = op;
    part_.sends.push_back(m);
    return static_cast<uint32_t>(part_.sends.size() - 1);
  }
  uint32_t add_recv(uint32_t op, uint32_t comm, int src, int32_t tag, uint64_t bytes) {
    part_.recvs.push_back(RecvEnd{bytes, src, op, tag, std::min(comm, kUnknownComm), false});
    return static_cast<uint32_t>(part_.recvs.size() - 1);
  }
  void resolve(uint32_t recv, const Status& st) {
    RecvEnd& r = part_.recvs[recv];
    if (st.source >= 0) r.src = st.source;
    r.tag = st.tag;
    r.bytes = st.bytes;
  }
};

struct Builder {
  Trace& t;
  GiveBack& give_back;
  // each part's receives, packed, in the parts' order: a receive's id in the trace is its place among them
  struct Receives {
    PackedRecvs ends;
    int rank;                    // the receiver
    std::vector<uint32_t> comm;  // the part's communicators, as the trace's
    // the ends unpacked, their communicators the trace's
    std::vector<RecvEnd> unpack() const {
      std::vector<RecvEnd> all = ends.unpack();
      for (RecvEnd& e : all)
        if (e.comm != kUnknownComm) e.comm = comm[e.comm];
      return all;
    }
  };
  std::vector<Receives> recvs;
  size_t n_recvs = 0;
  std::unordered_map<uint64_t, uint32_t> comm_index;  // gid -> index
  // --from: the ranks' sends and receives before the part, by channel (comm: the trace's index), and their
  // wildcard receives never resolved: (comm, receiver, source or -1), as match() keeps its own
  std::map<Channel, uint64_t> sent_before, received_before;
  std::set<std::tuple<uint32_t, int, int>> unresolved_before;
  // collectives: by communicator and sequence, the instance (kNone: none yet)
  std::vector<std::vector<uint32_t>> coll_index;

  Builder(Trace& tr, GiveBack& g) : t(tr), give_back(g) {}

  // The ranks' parts join the trace, one after the other: their communicators and collectives (a
  // collective's members in the parts' order), then their sends, receives and links, numbered as the
  // trace's; each part is freed once it has joined. ranks[i]: part i's world rank.
  void join(std::vector<RankPart>& parts, const std::vector<int>& ranks) {
    struct Place {
      std::vector<uint32_t> comm, instance;  // the part's communicators and memberships, as the trace's
      uint32_t sends = 0, recvs = 0, links = 0;  // where the part's start in the trace's
    };
    std::vector<Place> at(parts.size());
    size_t n_sends = 0, n_links = 0;
    for (size_t p = 0; p < parts.size(); p++)
      for (const Communicator* c : parts[p].comms) {
        auto [pos, fresh] = comm_index.try_emplace(c->gid, static_cast<uint32_t>(t.comms.size()));
        if (fresh) t.comms.push_back(TraceComm{c->gid, c->members, c->inter ? c->remote.list() : std::vector<int32_t>{}});
        at[p].comm.push_back(pos->second);
      }
    // a communicator's collectives are numbered from the run's start (--from: the part's from the first in
    // it), so that the instances are indexed by what the part holds, not by what the run made before it
    std::vector<uint32_t> first_seq(t.comms.size(), UINT32_MAX);
    for (size_t p = 0; p < parts.size(); p++)
      for (const RankPart::Membership& m : parts[p].colls)
        first_seq[at[p].comm[m.comm]] = std::min(first_seq[at[p].comm[m.comm]], m.seq);
    // the instances, and how many members each has; then each member in its place
    std::vector<uint32_t> n_members;
    for (size_t p = 0; p < parts.size(); p++) {
      Place& place = at[p];
      place.instance.reserve(parts[p].colls.size());
      for (const RankPart::Membership& m : parts[p].colls) {
        const uint32_t comm = place.comm[m.comm], seq = m.seq - first_seq[comm];
        if (coll_index.size() <= comm) coll_index.resize(comm + 1);
        std::vector<uint32_t>& seqs = coll_index[comm];
        if (seqs.size() <= seq) seqs.resize(seq + 1, kNone);
        uint32_t& id = seqs[seq];
        if (id == kNone) {
          id = t.collectives.add(m.call, comm);
          n_members.push_back(0);
        }
        t.collectives.note(id, m.root, m.bytes);
        n_members[id]++;
        place.instance.push_back(id);
      }
    }
    t.collectives.layout(n_members);
    std::fill(n_members.begin(), n_members.end(), 0);  // now: the members in place
    for (size_t p = 0; p < parts.size(); p++) {
      RankPart& part = parts[p];
      Place& place = at[p];
      auto vcounts = part.vcounts.begin();
      for (uint32_t k = 0; k < part.colls.size(); k++) {
        const RankPart::Membership& m = part.colls[k];
        const uint32_t id = place.instance[k], member = n_members[id]++;
        t.collectives.set_member(id, member, ranks[p], m.op, m.sent, m.received);
        if (vcounts != part.vcounts.end() && vcounts->first == k) t.collectives.set_each(id, member, std::move((vcounts++)->second));
      }
      give_back.made(part.colls_bytes());
      part.colls.release();
      decltype(part.vcounts)().swap(part.vcounts);
      place.sends = static_cast<uint32_t>(n_sends);
      place.recvs = static_cast<uint32_t>(n_recvs);
      place.links = static_cast<uint32_t>(n_links);
      n_sends += part.sends.size();
      n_recvs += part.received.size();
      n_links += part.links.size();
    }
    if (n_links > UINT32_MAX || n_sends > UINT32_MAX || n_recvs > UINT32_MAX)
      throw std::length_error(fmt::format("{} links, {} sends, {} receives: more than a trace can number",
                                          n_links, n_sends, n_recvs));
    if (t.comms.size() >= kMaxComms)  // indices below kMaxComms - 1, which says unknown
      throw std::length_error(
          fmt::format("{} communicators: more than a trace can number ({})", t.comms.size(), kMaxComms - 1));
    // The trace's arrays at their size, one after the other, each filled from the parts' lists, which are
    // freed (unmapped) as they are read: the parts beside the trace's messages, then what is left of them
    // beside its links; never the parts and both. The sends are the trace's first messages. The receives
    // stay packed, part by part, for the matching.
    const auto comm_of = [&](size_t p) {
      return [&place = at[p]](uint32_t c) { return c == kUnknownComm ? kUnknownComm : place.comm[c]; };
    };
    t.messages.reserve(n_sends);
    for (size_t p = 0; p < parts.size(); p++) {
      const auto comm = comm_of(p);
      for (Message e : parts[p].sends) {
        e.comm = comm(e.comm);
        t.messages.push_back(e);
      }
      give_back.made(parts[p].sends.capacity_bytes());
      parts[p].sends.release();
    }
    recvs.reserve(parts.size());
    for (size_t p = 0; p < parts.size(); p++) recvs.push_back(Receives{std::move(parts[p].received), ranks[p], at[p].comm});
    t.links.reserve(n_links);
    for (size_t p = 0; p < parts.size(); p++) {
      RankPart& part = parts[p];
      const Place& place = at[p];
      const auto comm = comm_of(p);
      for (const auto& [c, n] : part.sent_before) sent_before[{comm(c.comm), c.src, c.dst, c.tag}] += n;
      for (const auto& [c, n] : part.received_before) received_before[{comm(c.comm), c.src, c.dst, c.tag}] += n;
      for (const auto& [c, src] : part.unresolved_before) unresolved_before.insert({comm(c), ranks[p], src});
      // a link's id: the part's send, receive or membership, as the trace numbers them
      auto id = [&](Link e) {
        if (e.kind == Link::PostSend || e.kind == Link::DoneSend) return e.id + place.sends;
        if (e.kind == Link::PostRecv || e.kind == Link::DoneRecv) return e.id + place.recvs;
        return place.instance[e.id];
      };
      for (size_t i = 0; i < part.links.size(); i++) {
        Link e = part.links[i];
        e.id = id(e);
        t.links.push_back(e);
      }
      change_rank(t, static_cast<size_t>(ranks[p]), [&](RankTrace& rt) {
        for (Op& op : rt.ops) {
          if (op.inline_link) op.first_link = id(own_link(op));
          else if (op.has_links()) op.first_link += place.links;
        }
      });
      for (const auto& [first, n] : part.spilled) t.spilled_links.emplace(first + place.links, n);
      const size_t bytes = part.bytes();
      part = RankPart{};
      give_back.made(bytes);
    }
  }


  // MPI's matching: per communicator, sender, receiver and tag, sends and receives pair in order
  // (non-overtaking); receives with wildcards match by the source and tag their status resolved. A send
  // is already its message (join); a receive no send matched becomes one of its own, after them. A
  // wildcard never resolved (its completion is past the logs' end or the cut of --until) took a message
  // that is not known: the receives its rank posted after it that it could have matched (its source's,
  // or any source's) are left unmatched, where pairing them in order would give them its message.
  void match() {
    // the reading's vectors at their size before the queues are made beside them: the reading's peak
    t.links.shrink_to_fit();
    // each channel's sends in order, and how many of them receives took: a receive takes the first one
    // left. Their ids are in one array, by channel, at its size (a vector a channel, grown by doubling, held
    // up to twice as many).
    struct Sends {
      size_t first = 0, n = 0;  // in send_ids
      size_t taken = 0;
    };
    std::map<Channel, Sends> send_q;
    const uint32_t n_sends = static_cast<uint32_t>(t.messages.size());
    const auto channel = [](const Message& m) { return Channel{m.comm, m.src, m.dst, m.tag}; };
    for (const Message& m : t.messages)
      if (m.recv_op != kCancelledSend) send_q[channel(m)].n++;
    size_t queued = 0;
    for (auto& [c, q] : send_q) q.first = queued, queued += q.n;
    std::vector<uint32_t> send_ids(queued);
    for (uint32_t i = 0; i < n_sends; i++) {
      const Message& m = t.messages[i];
      if (m.recv_op == kCancelledSend) continue;
      Sends& q = send_q.find(channel(m))->second;
      send_ids[q.first + q.taken++] = i;
    }
    for (auto& [c, q] : send_q) q.taken = 0;
    // --from: on each channel, the sends and receives before the part paired as many as the fewer of them
    // did; the others' partners are the part's first receives there (which so lose theirs) or its first
    // sends (taken before the part)
    std::map<Channel, uint64_t> lost_recvs;  // the part's first receives on the channel whose send was before it
    uint64_t lost_sends = 0;
    for (const auto& [c, sent] : sent_before) {
      const auto r = received_before.find(c);
      const uint64_t received = r == received_before.end() ? 0 : r->second;
      if (sent > received) lost_recvs[c] = sent - received;
    }
    for (const auto& [c, received] : received_before) {
      const auto s = sent_before.find(c);
      const uint64_t sent = s == sent_before.end() ? 0 : s->second;
      const auto q = send_q.find(c);
      if (received <= sent || q == send_q.end()) continue;
      q->second.taken = static_cast<size_t>(std::min<uint64_t>(received - sent, q->second.n));
      lost_sends += q->second.taken;
    }
    sent_before.clear();
    received_before.clear();
    std::set<std::tuple<uint32_t, int, int>> unresolved = std::move(unresolved_before);  // comm, receiver, source (-1: any) of such wildcards
    std::vector<uint32_t> recv_msg(n_recvs, kNone);
    size_t unmatched_recvs = 0;
    uint32_t next = 0;  // the trace's id of the next receive
    for (const Receives& part : recvs) {
      const int rank = part.rank;
      for (const RecvEnd& r : part.unpack()) {
        const uint32_t id = next++;
        if (r.cancelled) continue;  // no message, neither matched nor missing a partner
        unmatched_recvs++;  // unless matched below
        if (r.src < 0 || r.tag < 0) {
          unresolved.emplace(r.comm, rank, r.src < 0 ? -1 : r.src);
          continue;
        }
        if (!unresolved.empty() && (unresolved.count({r.comm, rank, -1}) || unresolved.count({r.comm, rank, r.src})))
          continue;
        if (!lost_recvs.empty())
          if (auto lost = lost_recvs.find({r.comm, r.src, rank, r.tag}); lost != lost_recvs.end() && lost->second) {
            lost->second--;
            continue;
          }
        auto it = send_q.find({r.comm, r.src, rank, r.tag});
        if (it == send_q.end() || it->second.taken == it->second.n) continue;
        const uint32_t m = send_ids[it->second.first + it->second.taken++];
        t.messages[m].recv_op = r.op;
        recv_msg[id] = m;
        unmatched_recvs--;
      }
    }
    t.unmatched_sends += lost_sends;
    for (const auto& [key, sq] : send_q) t.unmatched_sends += sq.n - sq.taken;
    send_q.clear();
    std::vector<uint32_t>().swap(send_ids);
    // the cancelled sends go, the messages after them move down; send_msg: old id -> new (kNone: none)
    std::vector<uint32_t> send_msg;
    const auto cancelled = [](const Message& m) { return m.recv_op == kCancelledSend; };
    if (std::any_of(t.messages.begin(), t.messages.end(), cancelled)) {
      send_msg.assign(n_sends, kNone);
      uint32_t kept = 0;
      for (uint32_t i = 0; i < n_sends; i++)
        if (!cancelled(t.messages[i])) {
          send_msg[i] = kept;
          t.messages[kept++] = t.messages[i];
        }
      t.messages.resize(kept);
      for (uint32_t& m : recv_msg)
        if (m != kNone) m = send_msg[m];
    }
    // at its size, not doubled; the messages are copied while they move, two copies held as the sends and
    // the messages made of them were before (a run with receives no send matched: a missing log, a hang)
    if (unmatched_recvs) t.messages.reserve(t.messages.size() + unmatched_recvs);
    for (const Message& m : t.messages) t.largest_message = std::max(t.largest_message, m.bytes);
    if (unmatched_recvs) {
      next = 0;
      for (const Receives& part : recvs)
        for (const RecvEnd& r : part.unpack()) {
          const uint32_t id = next++;
          if (recv_msg[id] != kNone || r.cancelled) continue;
          Message m;
          m.src = r.src;
          m.dst = part.rank;
          m.comm = r.comm;
          m.tag = r.tag;
          m.bytes = r.bytes;
          m.recv_op = r.op;
          recv_msg[id] = static_cast<uint32_t>(t.messages.size());
          t.messages.push_back(m);
          t.unmatched_recvs++;
        }
    }
    std::vector<Receives>().swap(recvs);
    // the links name messages now: a send's (after those cancelled went), a receive's
    auto message = [&](Link l) {
      if ((l.kind == Link::PostSend || l.kind == Link::DoneSend) && !send_msg.empty()) return send_msg[l.id];
      if (l.kind == Link::PostRecv || l.kind == Link::DoneRecv) return recv_msg[l.id];
      return l.id;
    };
    for (size_t i = 0; i < t.links.size(); i++) t.links.set_id(i, message(t.links[i]));
    change_each_rank(t, [&](RankTrace& rt) {
      for (Op& op : rt.ops)
        if (op.inline_link) op.first_link = message(own_link(op));
    });
    for (const auto& c : t.collectives)
      if (c.members.size() != t.comms[c.comm].members.size()) t.incomplete_collectives++;
  }
};

}  // namespace

std::optional<uint64_t> run_start_ns(const JobLog& job) {
  std::vector<const RankLog*> logs;
  for (const auto& log : job.ranks())
    if (log->rank() >= 0) logs.push_back(log.get());
  std::sort(logs.begin(), logs.end(), [](const RankLog* a, const RankLog* b) { return a->rank() < b->rank(); });
  std::optional<uint64_t> start;
  for (const RankLog* log : logs) {
    log->for_each_event_until(UINT64_MAX, [&](const Event& ev) {
      start = ev.call == MPA_CALL_Init || ev.call == MPA_CALL_Init_thread ? ev.t_exit_ns : ev.t_enter_ns;
      return false;
    });
    if (start) break;
  }
  return start;
}

Trace build_trace(const JobLog& job, uint64_t until_ns, uint64_t from_ns, const std::function<bool(const ReadCounts&)>& after_read,
                  bool pack_ops) {
  Trace t;
  t.cut_ns = until_ns;
  t.from_ns = from_ns;
  t.world_size = job.world_size();
  t.ranks.resize(static_cast<size_t>(t.world_size));
  for (int r = 0; r < t.world_size; r++) t.ranks[r].rank = r;
  std::vector<const RankLog*> logs;
  for (const auto& log : job.ranks())
    if (log->rank() >= 0 && log->rank() < t.world_size) logs.push_back(log.get());
  // the ranks are read on the analysis's threads, and join the trace in their order
  std::vector<RankPart> parts(logs.size());
  std::vector<int> ranks(logs.size());
  GiveBack give_back;
  if (pack_ops) t.packed_ops.resize(t.ranks.size());
  parallel_for(logs.size(), [&](size_t i) {
    ranks[i] = logs[i]->rank();
    RankReader(*logs[i], t.ranks[ranks[i]], parts[i], until_ns, from_ns).read();
    parts[i].fit();
    give_back.made(parts[i].bytes());
    if (pack_ops) {
      std::vector<Op>& ops = t.ranks[ranks[i]].ops;
      give_back.made(ops.capacity() * sizeof(Op));
      t.packed_ops[ranks[i]].pack(ops);
    }
  });
  if (after_read) {
    ReadCounts n;
    std::unordered_map<uint64_t, std::pair<uint32_t, uint32_t>> seqs;  // by communicator: its collectives' span
    for (size_t i = 0; i < parts.size(); i++) {
      n.calls += t.ranks[ranks[i]].calls;
      n.collective_calls += parts[i].colls.size();
      std::vector<std::pair<uint32_t, uint32_t>> span(parts[i].comms.size(), {UINT32_MAX, 0});  // by the part's communicator
      for (size_t k = 0; k < parts[i].colls.size(); k++) {
        const RankPart::Membership& m = parts[i].colls[k];
        span[m.comm] = {std::min(span[m.comm].first, m.seq), std::max(span[m.comm].second, m.seq)};
      }
      for (size_t c = 0; c < span.size(); c++) {
        if (span[c].first == UINT32_MAX) continue;
        auto [it, fresh] = seqs.try_emplace(parts[i].comms[c]->gid, span[c]);
        if (!fresh) it->second = {std::min(it->second.first, span[c].first), std::max(it->second.second, span[c].second)};
      }
    }
    for (const auto& [gid, span] : seqs) n.instances += uint64_t{span.second} - span.first + 1;
    if (after_read(n) && !pack_ops) {
      t.packed_ops.resize(t.ranks.size());
      parallel_for(t.ranks.size(), [&](size_t r) {
        give_back.made(t.ranks[r].ops.capacity() * sizeof(Op));
        t.packed_ops[r].pack(t.ranks[r].ops);
      });
    }
  }
  Builder b(t, give_back);
  b.join(parts, ranks);
  b.match();
  compact_links(t);  // once the matching's queues are gone
  t.rewrite_bytes_per_ns = rewrite_bytes_per_ns(message_probe(job));
  mark_cached_resends(t);
  t.receives_together = receives_together(t);
  t.site_keys.resize(t.ranks.size());
  for (const auto& log : job.ranks()) {
    if (log->rank() < 0 || log->rank() >= t.world_size) continue;
    for (const auto& [id, site] : log->callsites()) {
      if (site.frames.empty()) continue;
      SiteKey key;
      key.offset = site.frames[0];
      for (const auto& m : log->modules())
        if (site.frames[0] > m.start && site.frames[0] <= m.end) {
          key.module = m.path;
          key.offset = site.frames[0] - m.base;
        }
      t.site_keys[log->rank()][id] = key;
    }
  }
  t.problems = job.problems();
  return t;
}

void Trace::let_go_calls() {
  for (RankTrace& rank : ranks) std::vector<Op>().swap(rank.ops);
  std::vector<PackedOps>().swap(packed_ops);
  links = LinkList{};
  spilled_links = SpilledLinks{};
  std::vector<Message>().swap(messages);
  receives_together.reset();
  collectives = CollectiveList{};
}

std::vector<int32_t> receives_together(const Trace& t) {
  std::vector<int32_t> together;
  read_each_rank(t, [&](const std::vector<Op>& ops) {
    for (const Op& op : ops) {
      if (op.links_here < 2) continue;
      const OpLinks links = t.links_of(op);
      int32_t receives = 0;
      for (uint32_t k = 0; k < links.size(); k++) receives += links[k].kind == Link::DoneRecv;
      if (receives < 2) continue;
      if (together.empty()) together.assign(t.messages.size(), 1);
      for (uint32_t k = 0; k < links.size(); k++)
        if (const Link l = links[k]; l.kind == Link::DoneRecv && l.id < together.size()) together[l.id] = receives;
    }
  });
  return together;
}

void mark_cached_resends(Trace& t) {
  if (std::none_of(t.messages.begin(), t.messages.end(), [](const Message& m) { return m.resent; })) return;
  // the calls whose send the tracer compares with the thread's previous one, to MPI_PROC_NULL and refused
  // ones too
  auto compared = [](uint32_t call) {
    switch (call) {
      case MPA_CALL_Send: case MPA_CALL_Ssend: case MPA_CALL_Bsend: case MPA_CALL_Rsend:
      case MPA_CALL_Isend: case MPA_CALL_Issend: case MPA_CALL_Ibsend: case MPA_CALL_Irsend:
      case MPA_CALL_Sendrecv:
        return true;
      default:
        return false;
    }
  };
  read_each_rank(t, [&](const std::vector<Op>& ops) {
    size_t previous = ops.size();  // the rank's previous compared send
    double computation = 0;        // on the rank since its call
    for (size_t i = 0; i < ops.size(); i++) {
      if (i > 0 && ops[i].t_enter > ops[i - 1].t_exit()) computation += static_cast<double>(ops[i].t_enter - ops[i - 1].t_exit());
      if (!compared(ops[i].call)) continue;
      if (previous < ops.size()) {
        const OpLinks links = t.links_of(ops[i]);
        for (uint32_t l = 0; l < links.size(); l++) {
          if (links[l].kind != Link::PostSend) continue;
          Message& m = t.messages[links[l].id];
          m.cached = m.resent && m.bytes > 0 && computation < static_cast<double>(m.bytes) / t.rewrite_bytes_per_ns;
        }
      }
      previous = i;
      computation = 0;
    }
  });
}

void compact_links(Trace& t) {
  auto kept_of = [](const OpLinks& links) {
    uint32_t n = 0;
    for (uint32_t k = 0; k < links.size(); k++) n += links[k].id != kNone;
    return n;
  };
  // The table is cut in place where each op's list lies at or after the lists before it in the order the
  // ranks are walked, as build_trace joins the ranks' parts: every link then goes to a place at or before
  // its own, read before anything is written there. Else a new table is made beside it (a hand-made
  // trace's). In place, the table is never held twice (mpiadvise-synth's halo of 64 ranks x 10^5 calls:
  // 20 MB each).
  size_t listed = 0, next = 0;
  bool in_order = true;
  read_each_rank(t, [&](const std::vector<Op>& ops) {
    for (const Op& op : ops) {
      if (const uint32_t n = kept_of(t.links_of(op)); n > 1) listed += n;
      if (!op.has_links() || op.inline_link) continue;
      in_order = in_order && op.first_link >= next;
      next = size_t{op.first_link} + t.n_links(op);
    }
  });
  LinkList kept;
  if (!in_order) kept.reserve(listed);
  size_t written = 0;
  SpilledLinks spilled;
  change_each_rank(t, [&](RankTrace& rt) {
    for (Op& op : rt.ops) {
      const OpLinks links = t.links_of(op);
      const uint32_t n = kept_of(links);
      op.links_here = 0;  // counted afresh, in the new table
      if (n == 1) {
        for (uint32_t k = 0; k < links.size(); k++)
          if (links[k].id != kNone) set_one_link(op, links[k], spilled);
      } else if (n > 1) {
        const uint32_t first = static_cast<uint32_t>(written);
        for (uint32_t k = 0; k < links.size(); k++) {
          if (links[k].id == kNone) continue;
          if (in_order) t.links.set(written, links[k]);
          else kept.push_back(links[k]);
          written++;
        }
        set_links(op, first, n, spilled);
      } else {
        set_links(op, 0, 0, spilled);
      }
      if (!n && (op.kind == OpKind::PostSend || op.kind == OpKind::PostRecv || op.kind == OpKind::Completion))
        op.kind = OpKind::Other;
    }
  });
  if (in_order) t.links.truncate(written);
  else t.links = std::move(kept);
  t.spilled_links = std::move(spilled);
}

std::vector<uint32_t> done_ops(const Trace& t, Link::Kind side) {
  if (side != Link::DoneSend && side != Link::DoneRecv) throw std::invalid_argument("done_ops: a side is DoneSend or DoneRecv");
  std::vector<uint32_t> done(t.messages.size(), kNone);
  for (const RankTrace& r : t.ranks)
    for (uint32_t i = 0; i < r.ops.size(); i++) {
      const OpLinks links = t.links_of(r.ops[i]);
      for (uint32_t k = 0; k < links.size(); k++) {
        const Link l = links[k];
        if (l.kind == side && l.id < done.size()) done[l.id] = i;
      }
    }
  return done;
}

void CollectiveList::push_back(const NewCollective& c) {
  if (members_.size() + c.members.size() > UINT32_MAX)
    throw std::length_error(fmt::format("{} members of collectives: more than a trace can number", members_.size() + c.members.size()));
  const uint32_t id = add(c.call, c.comm);
  head_[id].root = c.root;
  head_[id].bytes = c.bytes;
  head_[id].first = static_cast<uint32_t>(members_.size());
  for (size_t k = 0; k < c.members.size(); k++) {
    members_.push_back(c.members[k]);
    sent_.push_back(k < c.sent.size() ? MemberBytes::held(c.sent[k]) : MemberBytes::kNoBytes);
    received_.push_back(k < c.received.size() ? MemberBytes::held(c.received[k]) : MemberBytes::kNoBytes);
  }
  if (!c.each.empty()) {
    auto& e = each_[id];
    e = c.each;
    e.resize(c.members.size());
    head_[id].counted = true;
  }
}

void CollectiveList::layout(const std::vector<uint32_t>& members) {
  uint64_t n = 0;
  for (size_t c = 0; c < head_.size(); c++) {
    head_[c].first = static_cast<uint32_t>(n);
    head_[c].padded = members[c] >= kPadFrom;
    n += members[c] + head_[c].padded;
    if (n > UINT32_MAX) throw std::length_error(fmt::format("{} members of collectives: more than a trace can number", n));
  }
  members_.assign(n, {-1, kNone});
  sent_.assign(n, MemberBytes::kNoBytes);
  received_.assign(n, MemberBytes::kNoBytes);
}

SiteKey Trace::site(int rank, uint32_t callsite) const {
  if (rank >= 0 && static_cast<size_t>(rank) < site_keys.size()) {
    auto it = site_keys[rank].find(callsite);
    if (it != site_keys[rank].end()) return it->second;
  }
  SiteKey unknown;
  unknown.module = "rank " + std::to_string(rank) + " site";
  unknown.offset = callsite;
  return unknown;
}

ReplayWindow replay_window(const RankTrace& r) {
  ReplayWindow w;
  w.end = static_cast<uint32_t>(r.ops.size());
  if (r.ops.empty()) return w;
  if (r.ops.front().call == MPA_CALL_Init || r.ops.front().call == MPA_CALL_Init_thread) w.first = 1;
  if (w.end > w.first && r.ops[w.end - 1].call == MPA_CALL_Finalize) w.end--;
  w.start_ns = w.first ? r.ops[0].t_exit() : r.ops[0].t_enter;
  w.stop_ns = w.end < r.ops.size() ? r.ops[w.end].t_enter : r.ops.back().t_exit();
  return w;
}

}  // namespace mpiadvise

#include "op_stream.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>

#include <fmt/format.h>
#include <zstd.h>

#include "codec.h"

namespace mpiadvise {

namespace {

// a shape as one word, for the table's index: call site (32 bits), call (8), kind (4), unfinished (1),
// the number of links up to kShapeLinks + 1 (3) and their kinds with kCarries (4 bits each, 16)
uint64_t shape_word(uint32_t callsite, uint8_t call, OpKind kind, bool unfinished, uint32_t n, const uint8_t* kinds) {
  static_assert(OpStream::kShapeLinks + 1 < 8);
  static_assert(Link::DoneColl < OpStream::kCarries && (Link::DoneColl | OpStream::kCarries) < 16);
  uint64_t w = uint64_t{callsite} | uint64_t{call} << 32 | uint64_t{static_cast<uint8_t>(kind)} << 40 |
               uint64_t{unfinished} << 44 | uint64_t{std::min(n, OpStream::kShapeLinks + 1)} << 45;
  if (n <= OpStream::kShapeLinks)
    for (uint32_t k = 0; k < n; k++) w |= uint64_t{kinds[k]} << (48 + 4 * k);
  return w;
}

// op `i` of `rank`'s place among the members of collective instance c, if it is one: build_trace lists
// them in rank order (bisected), a trace made otherwise is searched through
std::optional<uint32_t> member_place(const Trace& t, int rank, uint32_t i, uint32_t c) {
  if (c >= t.collectives.size()) return std::nullopt;
  const auto ms = t.collectives.members(c);
  auto it = std::lower_bound(ms.begin(), ms.end(), rank, [](const auto& m, int r) { return m.first < r; });
  for (; it != ms.end() && it->first == rank; ++it)
    if (it->second == i) return static_cast<uint32_t>(it - ms.begin());
  for (it = ms.begin(); it != ms.end(); ++it)
    if (it->first == rank && it->second == i) return static_cast<uint32_t>(it - ms.begin());
  return std::nullopt;
}

// `rank`'s place among the members of collective instance c (the first, of a hand-made trace's rank
// listed twice), if it is one: what a DoneColl link carries
std::optional<uint32_t> rank_place(const Trace& t, int rank, uint32_t c) {
  if (c >= t.collectives.size()) return std::nullopt;
  const auto ms = t.collectives.members(c);
  auto it = std::lower_bound(ms.begin(), ms.end(), rank, [](const auto& m, int r) { return m.first < r; });
  if (it == ms.end() || it->first != rank) it = std::find_if(ms.begin(), ms.end(), [&](const auto& m) { return m.first == rank; });
  if (it == ms.end()) return std::nullopt;
  return static_cast<uint32_t>(it - ms.begin());
}

// whether the op `i` of `rank` carries the fields of the message its link names: posted its send or its
// receive (a receive some send matched carries them as its receiver's envelope: StreamOp::received), or
// completes one the rank posted alone (a send of the rank's, a receive no send matched)
bool carries(const Trace& t, int rank, uint32_t i, Link l) {
  if (l.id >= t.messages.size()) return false;
  const Message& m = t.messages[l.id];
  switch (l.kind) {
    case Link::PostSend: return m.src == rank && m.send_op == i;
    case Link::DoneSend: return m.src == rank && m.send_op != kNone;
    case Link::PostRecv: return m.dst == rank && m.recv_op == i;
    case Link::DoneRecv: return m.send_op == kNone && m.dst == rank && m.recv_op != kNone;
    default: return false;
  }
}

}  // namespace

uint32_t InstanceTable::add(StreamInstance i) {
  all_.push_back(std::move(i));
  const auto [at, added] = index_.insert(static_cast<uint32_t>(all_.size() - 1));
  if (!added) all_.pop_back();
  return *at;
}

size_t InstanceTable::bytes() const {
  size_t n = all_.size() * sizeof(StreamInstance) + index_.size() * 48;  // a set's node: 32 bytes and its key, allocated 48
  for (const StreamInstance& i : all_) {
    n += i.members.capacity() * sizeof(i.members[0]) + (i.sent.capacity() + i.received.capacity()) * sizeof(uint64_t);
    n += i.each.capacity() * sizeof(i.each[0]);
    for (const auto& e : i.each) n += e.capacity() * sizeof(uint64_t);
  }
  return n;
}

OpStream OpStream::encode(const Trace& t, int rank) {
  if (t.receives_together && (t.receives_together->empty() || t.receives_together->size() == t.messages.size()))
    return encode(t, rank, *t.receives_together);
  return encode(t, rank, receives_together(t));
}

namespace {

// encode_all, and with `taken` each rank's ops let go once encoded. An instance's entry is made at its
// first member met and reads the op of its head member (its first): every member's op links to its
// instance, so the instance is met at the latest in the head's own rank, whose ops are not let go yet
// (encode refuses an instance whose head op is gone).
std::vector<OpStream> encode_ranks(const Trace& t, size_t packed_chunk, Trace* taken, uint64_t frame_ops = UINT64_MAX) {
  std::vector<int32_t> counted;
  const std::vector<int32_t>* together = &counted;
  if (t.receives_together && (t.receives_together->empty() || t.receives_together->size() == t.messages.size()))
    together = &*t.receives_together;
  else
    counted = receives_together(t);
  std::vector<OpStream> all;
  all.reserve(t.ranks.size());
  auto instances = std::make_shared<InstanceTable>();
  std::vector<uint32_t> by_instance;
  for (int r = 0; r < static_cast<int>(t.ranks.size()); r++) {
    // ops the reading packed (Trace::packed_ops), unpacked a rank at a time
    if (taken && !taken->packed_ops.empty()) {
      taken->ranks[static_cast<size_t>(r)].ops = taken->packed_ops[static_cast<size_t>(r)].unpack();
      taken->packed_ops[static_cast<size_t>(r)].clear();
    }
    all.push_back(OpStream::encode(t, r, *together, instances, &by_instance));
    if (packed_chunk) {
      // frames of about frame_ops ops at most, by the rank's bytes an op
      OpStream& s = all.back();
      size_t chunk = packed_chunk;
      if (s.ops() > frame_ops)
        chunk = std::min<size_t>(chunk, std::max<uint64_t>(1, s.data().size() * frame_ops / s.ops()));
      s.pack(chunk);
    }
    if (taken) std::vector<Op>().swap(taken->ranks[static_cast<size_t>(r)].ops);
  }
  return all;
}

}  // namespace

std::vector<OpStream> OpStream::encode_all(const Trace& t, size_t packed_chunk) {
  if (!t.packed_ops.empty()) throw std::logic_error("encode_all: the trace's ops are packed (take_all unpacks them)");
  return encode_ranks(t, packed_chunk, nullptr);
}

std::vector<OpStream> OpStream::take_all(Trace& t, size_t packed_chunk) {
  const uint64_t ranks = std::max<uint64_t>(t.ranks.size(), 1);
  std::vector<OpStream> all = encode_ranks(t, packed_chunk, &t, std::max(kMinFrameOps, kDecodedOps / (2 * ranks)));
  t.let_go_calls();
  return all;
}

namespace {

struct FreeCCtx {
  void operator()(ZSTD_CCtx* c) const { ZSTD_freeCCtx(c); }
};
struct FreeDCtx {
  void operator()(ZSTD_DCtx* c) const { ZSTD_freeDCtx(c); }
};

}  // namespace

void OpStream::pack(size_t chunk) {
  if (packed() || bytes_.empty()) return;
  chunk = std::clamp<size_t>(chunk, 1, size_t{1} << 30);
  static thread_local std::unique_ptr<ZSTD_CCtx, FreeCCtx> cctx(ZSTD_createCCtx());
  if (!cctx) throw std::bad_alloc();
  // made apart and swapped in whole: a stream is packed or as it was
  std::vector<uint8_t> packed, frame, unpacked;
  std::vector<Frame> frames;
  // the frame of bytes_ [from, to), the cursor's state at its first op at its head
  size_t from = 0;
  uint64_t first_op = 0, first_enter = 0;
  std::vector<uint8_t> state;
  auto put = [&](size_t to) {
    // a frame's sizes fit 32 bits: its ops' no more than chunk's clamp and one op, its head 4 or more
    // bytes a shape
    if (state.size() + (to - from) >= (size_t{1} << 32))
      throw std::length_error(fmt::format("op stream: a frame of {} bytes of ops and a head of {}, beyond 4 GiB",
                                          to - from, state.size()));
    unpacked.assign(state.begin(), state.end());
    unpacked.insert(unpacked.end(), bytes_.begin() + static_cast<std::ptrdiff_t>(from), bytes_.begin() + static_cast<std::ptrdiff_t>(to));
    frame.resize(ZSTD_compressBound(unpacked.size()));
    const size_t z = ZSTD_compressCCtx(cctx.get(), frame.data(), frame.size(), unpacked.data(), unpacked.size(), 1);
    if (ZSTD_isError(z)) throw std::runtime_error(fmt::format("op stream: zstd: {}", ZSTD_getErrorName(z)));
    Frame f;
    f.packed = static_cast<uint32_t>(z);
    f.bytes = static_cast<uint32_t>(unpacked.size());  // checked above
    f.state = static_cast<uint32_t>(state.size());
    f.at = packed.size();
    f.first_op = first_op;
    f.first_enter = first_enter;
    frames.push_back(f);
    packed.insert(packed.end(), frame.begin(), frame.begin() + static_cast<std::ptrdiff_t>(z));
  };
  // the frames' cuts, where an op begins at least `chunk` bytes after the last cut
  OpCursor c(*this);
  c.save_state(state);
  StreamOp op;
  bool at_first = true;  // the op read is its frame's first
  while (c.next(op)) {
    if (at_first) first_enter = op.t_enter, at_first = false;
    if (c.offset() - from >= chunk && c.offset() < bytes_.size()) {
      put(c.offset());
      from = c.offset(), first_op = c.op(), at_first = true;
      c.save_state(state);
    }
  }
  put(bytes_.size());
  packed.shrink_to_fit();
  frames.shrink_to_fit();
  packed_.swap(packed);
  frames_.swap(frames);
  std::vector<uint8_t>().swap(bytes_);
}

namespace {
void put_varint(std::vector<uint8_t>& out, uint64_t v) {
  while (v >= 0x80) out.push_back(static_cast<uint8_t>(v | 0x80)), v >>= 7;
  out.push_back(static_cast<uint8_t>(v));
}
}  // namespace

void OpCursor::save_state(std::vector<uint8_t>& out) const {
  out.clear();
  put_varint(out, prev_exit_);
  for (const uint32_t id : prev_slot_) put_varint(out, id);
  for (const uint32_t id : prev_kind_) put_varint(out, id);
}

bool OpCursor::unpack() {
  if (frame_ >= s_->frames_.size()) {
    std::vector<uint8_t>().swap(buf_);  // a replay keeps a finished rank's cursor to its end
    p_ = end_ = nullptr;
    return false;
  }
  static thread_local std::unique_ptr<ZSTD_DCtx, FreeDCtx> dctx(ZSTD_createDCtx());
  if (!dctx) throw std::bad_alloc();
  const OpStream::Frame& f = s_->frames_[frame_];
  buf_.resize(std::max<size_t>(buf_.size(), f.bytes));
  const size_t n = ZSTD_decompressDCtx(dctx.get(), buf_.data(), buf_.size(), s_->packed_.data() + f.at, f.packed);
  if (ZSTD_isError(n) || n != f.bytes)
    throw std::logic_error(fmt::format("op stream: frame {} unpacked to {} where it holds {} bytes", frame_,
                                       ZSTD_isError(n) ? std::string(ZSTD_getErrorName(n)) : std::to_string(n), f.bytes));
  frame_++;
  p_ = buf_.data() + f.state;  // read in order, the cursor's state is the head's already
  end_ = buf_.data() + n;
  return true;
}

void OpCursor::unpack_at(size_t k) {
  frame_ = k;
  if (!unpack()) return;
  p_ = buf_.data();
  prev_exit_ = varint();
  for (uint32_t& id : prev_slot_) id = static_cast<uint32_t>(varint());
  for (uint32_t& id : prev_kind_) id = static_cast<uint32_t>(varint());
  if (p_ != buf_.data() + s_->frames_[k].state)
    throw std::logic_error(fmt::format("op stream: frame {}'s state read as {} bytes where it holds {}", k,
                                       p_ - buf_.data(), s_->frames_[k].state));
  op_ = s_->frames_[k].first_op;
}

void OpCursor::restart() {
  p_ = s_->bytes_.data(), end_ = s_->bytes_.data() + s_->bytes_.size();
  std::vector<uint8_t>().swap(buf_);
  frame_ = 0, op_ = 0, prev_exit_ = 0;
  std::fill(prev_slot_.begin(), prev_slot_.end(), 0u);
  std::fill(std::begin(prev_kind_), std::end(prev_kind_), 0u);
}

size_t OpStream::frame_of(uint64_t i) const {
  if (frames_.empty()) return 0;
  const auto f = std::upper_bound(frames_.begin(), frames_.end(), i,
                                  [](uint64_t x, const Frame& fr) { return x < fr.first_op; });
  return f == frames_.begin() ? 0 : static_cast<size_t>(f - frames_.begin()) - 1;
}

void OpCursor::seek(uint64_t i) {
  if (i == op_) return;
  if (!s_->packed()) {
    if (i < op_) restart();
  } else {
    const size_t k = s_->frame_of(i);
    const bool in_it = frame_ == k + 1 && p_ != nullptr && op_ <= i;  // the frame it reads, not past op i
    if (!in_it) unpack_at(k);
  }
  StreamOp skipped;
  while (op_ < i && next(skipped)) {}
}

OpStream OpStream::encode(const Trace& t, int rank, const std::vector<int32_t>& together,
                          std::shared_ptr<InstanceTable> instances, std::vector<uint32_t>* by_instance) {
  OpStream s;
  if (instances) s.instances_ = std::move(instances);
  std::vector<uint32_t> own_by_instance;
  if (!by_instance) by_instance = &own_by_instance;
  by_instance->resize(std::max(by_instance->size(), t.collectives.size()), kNone);
  // the instance's entry in the table, made at its first member met
  auto instance_entry = [&](uint32_t c_id) {
    uint32_t& e = (*by_instance)[c_id];
    if (e != kNone) return e;
    const CollectiveInstance c = t.collectives[c_id];
    StreamInstance i;
    i.call = c.call, i.comm = c.comm, i.root = c.root, i.bytes = c.bytes;
    const auto [head_rank, head_op] = c.members.front();
    if (head_op >= t.ranks[static_cast<size_t>(head_rank)].ops.size())  // take_all let its rank's ops go
      throw std::logic_error(fmt::format("OpStream::encode: instance {}'s head member, op {} of rank {}, is not in the "
                                         "trace (rank {} met the instance first)",
                                         c_id, head_op, head_rank, rank));
    i.head_site = t.op(head_rank, head_op).callsite;
    for (const auto& m : c.members) i.members.emplace_back(m.first, kNone);
    for (size_t k = 0; k < c.members.size(); k++) {
      i.sent.push_back(k < c.sent.size() ? MemberBytes::held(c.sent[k]) : MemberBytes::kNoBytes);
      i.received.push_back(k < c.received.size() ? MemberBytes::held(c.received[k]) : MemberBytes::kNoBytes);
    }
    i.each.assign(c.each.begin(), c.each.end());
    return e = s.instances_->add(std::move(i));
  };
  const std::vector<Op>& ops = t.ranks[rank].ops;
  s.window_ = replay_window(t.ranks[rank]);
  std::unordered_map<uint64_t, uint32_t> index;
  std::map<decltype(std::declval<StreamMessage>().key()), uint32_t> message_index;  // keys into messages_
  std::map<decltype(std::declval<Member>().key()), uint32_t> member_index;  // keys into members_
  std::vector<uint8_t> kinds;  // the op's links' kinds, with kCarries
  std::vector<std::optional<uint32_t>> places;  // by link: the op's place among a collective's members
  std::vector<uint32_t> prev_slot;  // as OpCursor's
  uint32_t prev_kind[Link::DoneColl + 1] = {};
  uint64_t prev_exit = 0;
  uint8_t buf[16];
  auto put = [&](uint64_t v) { s.bytes_.insert(s.bytes_.end(), buf, mpa_put_varint(buf, v)); };
  auto put_signed = [&](int64_t v) { put(mpa_zigzag(v)); };
  s.bytes_.reserve(ops.size() * 6);
  for (uint32_t i = 0; i < ops.size(); i++) {
    const Op& op = ops[i];
    const OpLinks links = t.links_of(op);
    const uint32_t n = links.size();
    kinds.clear(), places.clear();
    for (uint32_t k = 0; k < n; k++) {
      const bool message = links[k].kind != Link::PostColl && links[k].kind != Link::DoneColl;
      if (links[k].id == kNone) {
      } else if (!message) {
        s.instance_ids_ = std::max(s.instance_ids_, links[k].id + 1);
      } else if (links[k].id < t.messages.size()) {  // (beyond: a hand-made trace's link to no message)
        s.message_ids_ = std::max(s.message_ids_, links[k].id + 1);
      }
      places.push_back(links[k].kind == Link::PostColl   ? member_place(t, rank, i, links[k].id)
                       : links[k].kind == Link::DoneColl ? rank_place(t, rank, links[k].id)
                                                         : std::nullopt);
      const bool carried = message ? carries(t, rank, i, links[k]) : places.back().has_value();
      kinds.push_back(static_cast<uint8_t>(links[k].kind | (carried ? kCarries : 0)));
    }
    const uint64_t word = shape_word(op.callsite, op.call, op.kind, op.unfinished, n, kinds.data());
    auto [at, added] = index.try_emplace(word, static_cast<uint32_t>(s.shapes_.size()));
    const uint32_t shape = at->second;
    if (added) {
      prev_slot.resize(prev_slot.size() + kShapeLinks);
      Shape sh{op.callsite, op.call, op.kind, static_cast<bool>(op.unfinished),
               static_cast<uint8_t>(std::min(n, kShapeLinks + 1)), {}};
      if (n <= kShapeLinks)
        for (uint32_t k = 0; k < n; k++) sh.link_kinds[k] = kinds[k];
      s.shapes_.push_back(sh);
    }
    put(shape);
    if (i > 0 && op.t_enter < ops[i - 1].t_enter) s.entries_sorted_ = false;
    s.links_ += n;
    put_signed(static_cast<int64_t>(op.t_enter) - static_cast<int64_t>(prev_exit));
    put(op.duration);
    prev_exit = op.t_exit();
    // a link's id as its step from the previous, then the message it carries
    auto put_link = [&](uint32_t& prev, uint32_t k) {
      const uint32_t id = links[k].id;
      put_signed(static_cast<int64_t>(id) - static_cast<int64_t>(prev));
      prev = id;
      if (!(kinds[k] & kCarries)) return;
      if (links[k].kind == Link::PostColl || links[k].kind == Link::DoneColl) {
        const Member m{*places[k], instance_entry(id)};
        auto [at, added_m] = member_index.try_emplace(m.key(), static_cast<uint32_t>(s.members_.size()));
        if (added_m) s.members_.push_back(m);
        put(at->second);
        return;
      }
      StreamMessage carried;
      carried.fields = t.messages[id];
      carried.sent = carried.fields.send_op != kNone;  // (a carried DoneRecv's: never)
      carried.answered = carried.sent && carried.fields.recv_op != kNone;
      if (id < together.size()) carried.together = together[id];
      carried.fields.send_op = carried.fields.recv_op = kNone;
      auto [m, added_m] = message_index.try_emplace(carried.key(), static_cast<uint32_t>(s.messages_.size()));
      if (added_m) s.messages_.push_back(carried);
      put(m->second);
      if (links[k].kind != Link::PostSend) return;
      if (!s.sent_.empty() && s.sent_.back().second == id) s.sent_.back().second++;
      else s.sent_.emplace_back(id, id + 1);
    };
    if (n <= kShapeLinks) {
      for (uint32_t k = 0; k < n; k++) put_link(prev_slot[shape * kShapeLinks + k], k);
    } else {
      put(n);
      for (uint32_t k = 0; k < n; k++) {
        s.bytes_.push_back(kinds[k]);
        put_link(prev_kind[links[k].kind], k);
      }
    }
  }
  s.ops_ = ops.size();
  s.bytes_.shrink_to_fit();
  s.sent_.shrink_to_fit();
  return s;
}

Senders::Senders(const std::vector<OpStream>& streams) {
  for (size_t r = 0; r < streams.size(); r++)
    for (const auto& [first, end] : streams[r].sent()) runs_.push_back({first, end, static_cast<int>(r)});
  std::sort(runs_.begin(), runs_.end(), [](const Run& a, const Run& b) { return a.first < b.first; });
}

std::optional<uint8_t> OpStream::first_call(uint32_t callsite) const {
  for (const Shape& sh : shapes_)
    if (sh.callsite == callsite) return sh.call;
  return std::nullopt;
}

std::pair<uint64_t, uint64_t> RankTimes::at(uint32_t i) {
  if (ops_) {
    if (i >= ops_->size()) throw std::logic_error(fmt::format("op {} asked of a rank of {} ops", i, ops_->size()));
    return {(*ops_)[i].t_enter, (*ops_)[i].t_exit()};
  }
  for (; read_ <= i; read_++) {
    if (!cursor_->next(op_)) throw std::logic_error(fmt::format("op {} asked past the stream's {} ops", i, read_));
    before_ = last_, last_ = {op_.t_enter, op_.t_exit()};
  }
  if (i + 1 == read_) return last_;
  if (i + 2 == read_) return before_;
  throw std::logic_error(fmt::format("op {} asked after op {}: a rank's times are read in order", i, read_ - 1));
}

}  // namespace mpiadvise

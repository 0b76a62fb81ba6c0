#include "op_frames.hpp"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

namespace mpiadvise {

bool OpFrames::End::with(int rank) const {
  if (!instance) return src == rank || dst == rank;
  return std::any_of(instance->members.begin(), instance->members.end(), [&](const auto& m) { return m.first == rank; });
}

OpFrames::OpFrames(const std::vector<OpStream>& streams, size_t kept)
    : streams_(streams), kept_(std::max<size_t>(kept, 1)), blocks_(streams.size()) {
  for (size_t r = 0; r < streams.size(); r++)
    for (const auto& [first, end] : streams[r].sent()) sent_.push_back({first, end, static_cast<int>(r)});
  std::sort(sent_.begin(), sent_.end(), [](const Run& a, const Run& b) { return a.first < b.first; });
}

int OpFrames::sender(uint32_t id) const {
  // the last run starting at or before id
  auto it = std::upper_bound(sent_.begin(), sent_.end(), id, [](uint32_t x, const Run& r) { return x < r.first; });
  if (it == sent_.begin()) return -1;
  --it;
  return id < it->end ? it->rank : -1;
}

size_t OpFrames::held_bytes() const {
  size_t n = sent_.capacity() * sizeof(Run);
  for (const auto& rank : blocks_)
    for (const Block& b : rank) n += b.ops.capacity() * sizeof(Op) + b.ends.capacity() * sizeof(End);
  return n;
}

void OpFrames::decode(int r, size_t frame, Block& b) {
  const OpStream& s = streams_[r];
  b.first = s.packed() ? s.frame_first_op(frame) : 0;
  b.end = s.packed() && frame + 1 < s.frames() ? s.frame_first_op(frame + 1) : s.ops();
  b.ops.clear(), b.ends.clear();
  b.ops.reserve(b.end - b.first);
  OpCursor c(s);
  c.seek(b.first);
  for (uint64_t k = b.first; k < b.end; k++) {
    if (!c.next(op_))
      throw std::logic_error(fmt::format("op stream of rank {}: {} ops where it counts {}", r, k, s.ops()));
    Op o;
    o.t_enter = op_.t_enter, o.t_exit = op_.t_exit(), o.callsite = op_.callsite, o.call = op_.call;
    o.ends_at = static_cast<uint32_t>(b.ends.size());
    // the carried fields are listed in the order of their links: each list is matched by its id in turn
    size_t posted = 0, completed = 0, joined = 0, left = 0;
    const OpLinks links = op_.links();
    for (uint32_t l = 0; l < links.size(); l++) {
      const Link link = links[l];
      if (link.id == kNone) continue;
      End e;
      if (link.kind == Link::PostColl || link.kind == Link::DoneColl) {
        auto& list = link.kind == Link::PostColl ? op_.joined : op_.left;
        size_t& at = link.kind == Link::PostColl ? joined : left;
        if (at < list.size() && list[at].instance == link.id) e.instance = list[at++].fields;
        else continue;  // (a hand-made trace's instance it is no member of)
      } else {
        auto& list = link.kind == Link::PostSend || link.kind == Link::PostRecv ? op_.posted : op_.completed;
        size_t& at = link.kind == Link::PostSend || link.kind == Link::PostRecv ? posted : completed;
        if (at < list.size() && list[at].id == link.id) {
          e.src = list[at].m->fields.src, e.dst = list[at].m->fields.dst;
          at++;
        } else if (const int from = sender(link.id); from >= 0) {
          e.src = from, e.dst = r;  // a receive some send matched: the receiver is the rank
        } else {
          continue;
        }
      }
      b.ends.push_back(e);
    }
    o.n_ends = static_cast<uint32_t>(b.ends.size()) - o.ends_at;
    b.ops.push_back(o);
  }
  decoded_++;
}

const OpFrames::Block& OpFrames::block(int r, uint64_t k) {
  std::vector<Block>& held = blocks_[r];
  for (Block& b : held)
    if (k >= b.first && k < b.end) {
      b.used = ++clock_;
      return b;
    }
  const OpStream& s = streams_[r];
  if (k >= s.ops()) throw std::logic_error(fmt::format("op {} asked of rank {}'s stream of {} ops", k, r, s.ops()));
  size_t frame = 0;
  if (s.packed()) {
    size_t lo = 0, hi = s.frames();  // the last frame whose first op is at most k
    while (hi - lo > 1) {
      const size_t mid = (lo + hi) / 2;
      (s.frame_first_op(mid) <= k ? lo : hi) = mid;
    }
    frame = lo;
  }
  Block* b = nullptr;
  if (held.size() < kept_) {
    b = &held.emplace_back();
  } else {
    b = &*std::min_element(held.begin(), held.end(), [](const Block& x, const Block& y) { return x.used < y.used; });
  }
  decode(r, frame, *b);
  b->used = ++clock_;
  return *b;
}

OpFrames::View OpFrames::at(int r, uint64_t k) {
  const Block& b = block(r, k);
  const Op& o = b.ops[k - b.first];
  return {&o, std::span<const End>(b.ends.data() + o.ends_at, o.n_ends)};
}

uint64_t OpFrames::entered_after(int r, uint64_t first, uint64_t end, double from) {
  const OpStream& s = streams_[r];
  end = std::min(end, s.ops());
  if (first >= end) return first;
  if (!s.entries_sorted())
    return first_entered_after(first, end, from, [&](uint64_t k) { return static_cast<double>(op(r, k).t_enter); });
  // entries that never go down: the first op of the rank entered after `from`, then kept within [first, end)
  uint64_t at = 0;
  if (s.packed()) {
    // the last frame whose first op entered at or before `from`: the answer is in it or starts the next
    size_t lo = 0, hi = s.frames();
    if (from < static_cast<double>(s.frame_first_enter(0))) return first;
    while (hi - lo > 1) {
      const size_t mid = (lo + hi) / 2;
      (static_cast<double>(s.frame_first_enter(mid)) <= from ? lo : hi) = mid;
    }
    at = s.frame_first_op(lo);
  }
  const Block& b = block(r, at);
  const auto it = std::upper_bound(b.ops.begin(), b.ops.end(), from,
                                   [](double x, const Op& o) { return x < static_cast<double>(o.t_enter); });
  const uint64_t g = b.first + static_cast<uint64_t>(it - b.ops.begin());  // b.end where none in it
  return std::clamp(g, first, end);
}

}  // namespace mpiadvise

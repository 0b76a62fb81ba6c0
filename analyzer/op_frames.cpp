#include "op_frames.hpp"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

namespace mpiadvise {

OpFrames::OpFrames(const std::vector<OpStream>& streams, size_t kept)
    : streams_(streams), kept_(std::max<size_t>(kept, 1)), blocks_(streams.size()), senders_(streams) {}

size_t OpFrames::held_bytes() const {
  size_t n = senders_.bytes() + instances_.capacity() * sizeof(instances_[0]) + instance_at_.size() * 32;
  for (const auto& rank : blocks_)
    for (const Block& b : rank)
      n += (b.enter.capacity() + b.exit.capacity()) * sizeof(uint64_t) +
           (b.callsite.capacity() + b.ends_at.capacity()) * sizeof(uint32_t) + b.call.capacity() + b.ends.capacity() * sizeof(End);
  return n;
}

uint32_t OpFrames::instance_index(const StreamInstance* i) {
  const auto [at, added] = instance_at_.try_emplace(i, static_cast<uint32_t>(instances_.size()));
  if (added) instances_.push_back(i);
  return at->second;
}

void OpFrames::decode(int r, size_t frame, Block& b) {
  const OpStream& s = streams_[r];
  b.first = s.packed() ? s.frame_first_op(frame) : 0;
  b.end = s.packed() && frame + 1 < s.frames() ? s.frame_first_op(frame + 1) : s.ops();
  for (auto* v : {&b.enter, &b.exit}) v->clear(), v->reserve(b.end - b.first);
  for (auto* v : {&b.callsite, &b.ends_at}) v->clear(), v->reserve(b.end - b.first + 1);
  b.call.clear(), b.call.reserve(b.end - b.first);
  b.ends.clear();
  OpCursor c(s);
  c.seek(b.first);
  for (uint64_t k = b.first; k < b.end; k++) {
    if (!c.next(op_))
      throw std::logic_error(fmt::format("op stream of rank {}: {} ops where it counts {}", r, k, s.ops()));
    b.enter.push_back(op_.t_enter), b.exit.push_back(op_.t_exit());
    b.callsite.push_back(op_.callsite), b.call.push_back(op_.call);
    b.ends_at.push_back(static_cast<uint32_t>(b.ends.size()));
    // the carried fields are listed in the order of their links: each list is matched by its id in turn
    size_t posted = 0, completed = 0, joined = 0, left = 0;
    const OpLinks links = op_.links();
    for (uint32_t l = 0; l < links.size(); l++) {
      const Link link = links[l];
      if (link.id == kNone) continue;
      End e;
      if (link.kind == Link::PostColl || link.kind == Link::DoneColl) {
        const auto& list = link.kind == Link::PostColl ? op_.joined : op_.left;
        size_t& at = link.kind == Link::PostColl ? joined : left;
        if (at >= list.size() || list[at].instance != link.id) continue;  // (a hand-made trace's instance it is no member of)
        e.src = kInstance, e.dst = static_cast<int32_t>(instance_index(list[at++].fields));
      } else {
        const bool post = link.kind == Link::PostSend || link.kind == Link::PostRecv;
        const auto& list = post ? op_.posted : op_.completed;
        size_t& at = post ? posted : completed;
        if (at < list.size() && list[at].id == link.id) {
          e.src = list[at].m->fields.src, e.dst = list[at].m->fields.dst;
          at++;
        } else if (const int from = link.kind == Link::PostRecv || link.kind == Link::DoneRecv ? sender(link.id) : -1;
                   from >= 0) {
          e.src = from, e.dst = r;  // a receive some send matched: the receiver is the rank
        } else {
          continue;
        }
      }
      b.ends.push_back(e);
    }
  }
  b.ends_at.push_back(static_cast<uint32_t>(b.ends.size()));
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
  const size_t frame = s.frame_of(k);
  // a frame more while fewer than kept_ are, else in place of the one used least lately
  Block& b = held.size() < kept_ ? held.emplace_back()
                                 : *std::min_element(held.begin(), held.end(),
                                                     [](const Block& x, const Block& y) { return x.used < y.used; });
  decode(r, frame, b);
  b.used = ++clock_;
  return b;
}

OpFrames::Op OpFrames::op(int r, uint64_t k) {
  const Block& b = block(r, k);
  const uint64_t i = k - b.first;
  return {b.enter[i], b.exit[i], b.callsite[i], b.call[i]};
}

bool OpFrames::shares(int r, uint64_t k, int rank) {
  const Block& b = block(r, k);
  const uint64_t i = k - b.first;
  for (uint32_t e = b.ends_at[i]; e < b.ends_at[i + 1]; e++) {
    const End& end = b.ends[e];
    if (end.src != kInstance) {
      if (end.src == rank || end.dst == rank) return true;
      continue;
    }
    const auto& members = instances_[static_cast<uint32_t>(end.dst)]->members;
    if (std::any_of(members.begin(), members.end(), [&](const auto& m) { return m.first == rank; })) return true;
  }
  return false;
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
  const auto it = std::upper_bound(b.enter.begin(), b.enter.end(), from,
                                   [](double x, uint64_t enter) { return x < static_cast<double>(enter); });
  const uint64_t g = b.first + static_cast<uint64_t>(it - b.enter.begin());  // b.end where none in it
  return std::clamp(g, first, end);
}

}  // namespace mpiadvise

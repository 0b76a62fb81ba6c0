#include "op_stream.hpp"

#include <cstring>
#include <unordered_map>

#include "codec.h"

namespace mpiadvise {

namespace {

// a shape as one word, for the table's index: call site (32 bits), call (8), kind (4), unfinished (1),
// the number of links up to kShapeLinks + 1 (3) and their kinds (3 bits each, 12)
uint64_t shape_word(uint32_t callsite, uint8_t call, OpKind kind, bool unfinished, uint32_t n, OpLinks links) {
  static_assert(OpStream::kShapeLinks + 1 < 8 && Link::DoneColl < 8);
  uint64_t w = uint64_t{callsite} | uint64_t{call} << 32 | uint64_t{static_cast<uint8_t>(kind)} << 40 |
               uint64_t{unfinished} << 44 | uint64_t{std::min(n, OpStream::kShapeLinks + 1)} << 45;
  if (n <= OpStream::kShapeLinks)
    for (uint32_t k = 0; k < n; k++) w |= uint64_t{links[k].kind} << (48 + 3 * k);
  return w;
}

}  // namespace

OpStream OpStream::encode(const Trace& t, int rank) {
  OpStream s;
  const std::vector<Op>& ops = t.ranks[rank].ops;
  std::unordered_map<uint64_t, uint32_t> index;
  std::vector<uint32_t> prev_slot;  // as OpCursor's
  uint32_t prev_kind[Link::DoneColl + 1] = {};
  uint64_t prev_exit = 0;
  uint8_t buf[16];
  auto put = [&](uint64_t v) { s.bytes_.insert(s.bytes_.end(), buf, mpa_put_varint(buf, v)); };
  auto put_signed = [&](int64_t v) { put(mpa_zigzag(v)); };
  s.bytes_.reserve(ops.size() * 6);
  for (const Op& op : ops) {
    const OpLinks links = t.links_of(op);
    const uint32_t n = links.size();
    const uint64_t word = shape_word(op.callsite, op.call, op.kind, op.unfinished, n, links);
    auto [at, added] = index.try_emplace(word, static_cast<uint32_t>(s.shapes_.size()));
    const uint32_t shape = at->second;
    if (added) {
      prev_slot.resize(prev_slot.size() + kShapeLinks);
      Shape sh{op.callsite, op.call, op.kind, static_cast<bool>(op.unfinished),
               static_cast<uint8_t>(std::min(n, kShapeLinks + 1)), {}};
      if (n <= kShapeLinks)
        for (uint32_t k = 0; k < n; k++) sh.link_kinds[k] = links[k].kind;
      s.shapes_.push_back(sh);
    }
    put(shape);
    put_signed(static_cast<int64_t>(op.t_enter) - static_cast<int64_t>(prev_exit));
    put(op.duration);
    prev_exit = op.t_exit();
    auto put_step = [&](uint32_t& prev, uint32_t id) {
      put_signed(static_cast<int64_t>(id) - static_cast<int64_t>(prev));
      prev = id;
    };
    if (n <= kShapeLinks) {
      for (uint32_t k = 0; k < n; k++) put_step(prev_slot[shape * kShapeLinks + k], links[k].id);
    } else {
      put(n);
      for (uint32_t k = 0; k < n; k++) {
        s.bytes_.push_back(links[k].kind);
        put_step(prev_kind[links[k].kind], links[k].id);
      }
    }
  }
  s.ops_ = ops.size();
  s.bytes_.shrink_to_fit();
  return s;
}

}  // namespace mpiadvise

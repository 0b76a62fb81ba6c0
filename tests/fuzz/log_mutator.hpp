// The log mutator the libFuzzer targets share (fuzz_log_reader.cpp, fuzz_analysis.cpp).
//
// A log's chunks are zstd frames with checksums: flipping their bytes only ever tests the checksum.
// structured_mutation takes a log apart, mutates the decompressed payload of one chunk (events,
// definitions, trailer) or the header JSON with libFuzzer's own mutations, and puts it together again with
// sizes and frames right, so that the decoder behind the checksum, and what reads the events after it, are
// fuzzed too.
#pragma once

#include <zstd.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "format.h"

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

namespace mpa_fuzz {

struct Piece {
  mpa_chunk_header head{};
  std::vector<uint8_t> raw;  // decompressed, or the stored bytes when they do not decompress
  bool compressed = false;
};

// Mutates v in place with libFuzzer's own mutations, letting it grow by up to `room` bytes.
inline void mutate(std::vector<uint8_t>& v, size_t room) {
  size_t size = v.size();
  v.resize(size + room + 1);
  v.resize(LLVMFuzzerMutate(v.data(), size, v.size()));
}

// Mutates the log in data[0, size) in place (up to max_size bytes); returns its new size, or 0 where the
// bytes are not a log's (then mutate them as bytes).
inline size_t structured_mutation(uint8_t* data, size_t size, size_t max_size, std::minstd_rand& rng) {
  uint32_t json_bytes;
  std::memcpy(&json_bytes, data + 12, 4);
  if (16 + uint64_t{json_bytes} > size) return 0;
  std::vector<uint8_t> json(data + 16, data + 16 + json_bytes);
  std::vector<Piece> pieces;
  size_t off = 16 + json_bytes;
  while (off + sizeof(mpa_chunk_header) <= size) {
    Piece p;
    std::memcpy(&p.head, data + off, sizeof p.head);
    off += sizeof p.head;
    if (p.head.stored_bytes > size - off) break;
    const uint8_t* stored = data + off;
    off += p.head.stored_bytes;
    unsigned long long n = ZSTD_getFrameContentSize(stored, p.head.stored_bytes);
    if (n != ZSTD_CONTENTSIZE_ERROR && n != ZSTD_CONTENTSIZE_UNKNOWN && n <= (1u << 20)) {
      p.raw.resize(n);
      size_t got = ZSTD_decompress(p.raw.data(), p.raw.size(), stored, p.head.stored_bytes);
      p.compressed = !ZSTD_isError(got) && got == n;
    }
    if (!p.compressed) p.raw.assign(stored, stored + p.head.stored_bytes);
    pieces.push_back(std::move(p));
  }
  const size_t room = max_size > size ? std::min<size_t>(max_size - size, 256) : 0;
  size_t pick = rng() % (pieces.size() + 1);
  if (pick == pieces.size()) {
    mutate(json, room);
    json_bytes = static_cast<uint32_t>(json.size());
  } else {
    mutate(pieces[pick].raw, room);
    if (rng() % 8 == 0 && pieces.size() > 1) std::swap(pieces[pick], pieces[rng() % pieces.size()]);
  }
  std::vector<uint8_t> out(data, data + 12);
  out.resize(16);
  std::memcpy(out.data() + 12, &json_bytes, 4);
  out.insert(out.end(), json.begin(), json.end());
  for (auto& p : pieces) {
    std::vector<uint8_t> stored = p.raw;
    if (p.compressed) {
      stored.resize(ZSTD_compressBound(p.raw.size()));
      ZSTD_CCtx* cctx = ZSTD_createCCtx();
      ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1);
      ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, 1);
      size_t z = ZSTD_compress2(cctx, stored.data(), stored.size(), p.raw.data(), p.raw.size());
      ZSTD_freeCCtx(cctx);
      if (ZSTD_isError(z)) return 0;
      stored.resize(z);
      p.head.raw_bytes = static_cast<uint32_t>(p.raw.size());
    }
    p.head.stored_bytes = static_cast<uint32_t>(stored.size());
    const auto* h = reinterpret_cast<const uint8_t*>(&p.head);
    out.insert(out.end(), h, h + sizeof p.head);
    out.insert(out.end(), stored.begin(), stored.end());
  }
  out.insert(out.end(), data + off, data + size);  // what follows the last whole chunk
  if (out.size() > max_size) return 0;
  std::memcpy(data, out.data(), out.size());
  return out.size();
}

}  // namespace mpa_fuzz

// The event codec (libtrace/codec.h, codec.c) on its own: random event streams encoded as the tracer
// encodes them decode to the same events, field by field, in chunks of any length; the bytes follow
// mpiadvise-log(5); damaged bytes give an error and never a wrong event.
#include <catch2/catch.hpp>

#include <cstring>
#include <limits>
#include <random>
#include <vector>

extern "C" {
#include "codec.h"
}

namespace {

// One event with its own storage, and what the encoder is given besides it.
struct Sample {
  mpa_event ev{};
  uint32_t callsite = 0, count = 0;
  uint64_t incall = 0;
  std::vector<uint64_t> reqs;
  std::vector<mpa_status> stats;
  std::vector<long long> papi;
  std::vector<uint32_t> cancelled;
  std::vector<uint64_t> vcounts;
  void point() {  // ev's arrays at this sample's storage
    ev.reqs = reqs.data(), ev.nreq = static_cast<uint32_t>(reqs.size());
    ev.stats = stats.data(), ev.nstat = static_cast<uint32_t>(stats.size());
    ev.cancelled = cancelled.data(), ev.ncancelled = static_cast<uint32_t>(cancelled.size());
    ev.vcounts = vcounts.data(), ev.nvcounts = static_cast<uint32_t>(vcounts.size());
  }
};

// Values a field can take: the extremes of its type, the small ones, anything.
template <class T>
T pick(std::mt19937_64& rng) {
  constexpr T lo = std::numeric_limits<T>::min(), hi = std::numeric_limits<T>::max();
  switch (rng() % 8) {
    case 0: return lo;
    case 1: return hi;
    case 2: return 0;
    case 3: return static_cast<T>(rng() % 5) - (std::is_signed_v<T> ? static_cast<T>(4) : static_cast<T>(0));  // -4..0: special ranks
    case 4: return static_cast<T>(rng() % 200);
    case 5: return static_cast<T>(hi - static_cast<T>(rng() % 3));
    default: return static_cast<T>(rng());
  }
}

// A stream of events with every field, call id and mask bit; handles from a small pool (so that
// slots are hit, collide and are reused, and one event may name a handle twice) and anywhere. One event
// in three takes the call, call site and arguments of an earlier one (a loop's calls: the format 5
// repeats), a few of them with one argument changed. Call ids are below MPA_CALL_REPEAT (format 5).
std::vector<Sample> random_stream(std::mt19937_64& rng, size_t n) {
  std::vector<uint64_t> pool;
  for (int i = 0; i < 40; i++) pool.push_back(i < 4 ? static_cast<uint64_t>(i) : pick<uint64_t>(rng));
  std::vector<Sample> out(n);
  uint64_t t = pick<uint64_t>(rng);
  for (auto& s : out) {
    mpa_event& e = s.ev;
    e.call = static_cast<uint32_t>(rng() % MPA_CALL_REPEAT);
    // COUNT, INCALL and PAPI are the encoder's to set, from count and papi
    e.mask = static_cast<uint32_t>(rng()) & MPA_F_DEFINED & ~(MPA_F_COUNT | MPA_F_INCALL | MPA_F_PAPI);
    // enter before or after the previous exit (threads, clock steps), durations up to the whole range
    t += rng() % 4 == 0 ? pick<uint64_t>(rng) : rng() % 100000;
    e.t_enter = t;
    e.t_exit = t + (rng() % 4 == 0 ? pick<uint64_t>(rng) : rng() % 100000);
    t = e.t_exit;
    e.peer = pick<int32_t>(rng), e.tag = pick<int32_t>(rng), e.peer2 = pick<int32_t>(rng), e.tag2 = pick<int32_t>(rng);
    e.comm = pick<uint32_t>(rng), e.newcomm = pick<uint32_t>(rng);
    e.bytes = pick<uint64_t>(rng), e.bytes2 = pick<uint64_t>(rng);
    e.value = pick<int64_t>(rng);
    s.callsite = pick<uint32_t>(rng);
    if (rng() % 3 == 0) s.count = 1 + static_cast<uint32_t>(rng() % 1000), s.incall = pick<uint64_t>(rng);
    if (e.mask & MPA_F_REQS) {
      size_t k = rng() % 6 == 0 ? rng() % 300 : rng() % 5;
      for (size_t i = 0; i < k; i++) s.reqs.push_back(rng() % 4 ? pool[rng() % pool.size()] : pick<uint64_t>(rng));
      if (!s.reqs.empty() && rng() % 2) s.reqs.push_back(s.reqs.front());  // a handle named twice
    }
    if (e.mask & MPA_F_STATUS)
      for (size_t i = 0, k = rng() % 5; i < k; i++)
        s.stats.push_back({pick<int32_t>(rng), pick<int32_t>(rng), pick<int32_t>(rng), pick<uint64_t>(rng)});
    if (rng() % 4 == 0)
      for (size_t i = 0, k = 1 + rng() % 8; i < k; i++) s.papi.push_back(static_cast<long long>(rng() >> 1));
    if (e.mask & MPA_F_CANCELLED)
      for (size_t i = 0; i < s.stats.size(); i++)
        if (rng() % 2) s.cancelled.push_back(static_cast<uint32_t>(i));
    if (e.mask & MPA_F_VCOUNTS)  // a communicator's worth of counts, now and then a large one
      for (size_t i = 0, k = rng() % 8 == 0 ? rng() % 2000 : rng() % 9; i < k; i++) s.vcounts.push_back(pick<uint64_t>(rng));
    const size_t at = static_cast<size_t>(&s - out.data());
    if (at > 0 && rng() % 3 == 0) {  // as an earlier event, but for its times and requests
      const Sample& was = out[rng() % at];
      const uint64_t enter = e.t_enter, exit = e.t_exit;
      const auto reqs = s.reqs;
      s = was;
      s.ev.t_enter = enter, s.ev.t_exit = exit;
      if (s.ev.mask & MPA_F_REQS) s.reqs = reqs;
      switch (rng() % 8) {  // now and then one argument differs
        case 0: s.ev.tag ^= 1; break;
        case 1: s.ev.bytes += 1; break;
        case 2: if (!s.stats.empty()) s.stats.back().bytes ^= 2; break;
        default: break;
      }
    }
    s.point();
  }
  return out;
}

// The interleaved layout's chunk start (MPA_CODEC_ZSTD): its events end where the chunk does.
int decode_start(mpa_codec_state* st, const uint8_t** p, const uint8_t* end) {
  return mpa_decode_chunk_start(st, p, &end, MPA_CODEC_ZSTD);
}

// Encodes samples [first, last) as one chunk of the codec's layout (MPA_CODEC_ZSTD: each event's times among
// its fields; MPA_CODEC_ZSTD_TIMES: after the events, as the tracer writes), checking each event against its
// bounds.
std::vector<uint8_t> encode_chunk(std::vector<Sample>& samples, size_t first, size_t last, int codec = MPA_CODEC_ZSTD) {
  size_t bound = 10 + 4;
  for (size_t i = first; i < last; i++)
    bound += mpa_event_bound(&samples[i].ev, static_cast<int>(samples[i].papi.size())) + MPA_TIMES_BOUND;
  std::vector<uint8_t> buf(bound), times((last - first) * MPA_TIMES_BOUND + 1);
  uint8_t* const t = codec == MPA_CODEC_ZSTD_TIMES ? times.data() : nullptr;
  mpa_codec_state st;
  uint8_t* p = mpa_encode_chunk_start(&st, buf.data(), samples[first].ev.t_enter, t);
  for (size_t i = first; i < last; i++) {
    Sample& s = samples[i];
    const uint8_t* t_before = st.times;
    uint8_t* end = mpa_encode_event(&st, p, &s.ev, s.callsite, s.count, s.incall, s.papi.data(), static_cast<int>(s.papi.size()));
    REQUIRE(static_cast<size_t>(end - p) <= mpa_event_bound(&s.ev, static_cast<int>(s.papi.size())));
    if (t) REQUIRE(static_cast<size_t>(st.times - t_before) <= MPA_TIMES_BOUND);
    p = end;
  }
  p = mpa_encode_chunk_end(&st, p, t);
  buf.resize(static_cast<size_t>(p - buf.data()));
  return buf;
}

// A decoder whose arrays start small and grow on MPA_DECODE_ROOM, as the reader's do.
struct Decoder {
  std::vector<uint64_t> reqs = std::vector<uint64_t>(1), papi = std::vector<uint64_t>(1);
  std::vector<mpa_status> stats = std::vector<mpa_status>(1);
  std::vector<uint32_t> cancelled = std::vector<uint32_t>(1);
  std::vector<uint64_t> vcounts = std::vector<uint64_t>(1);
  mpa_decoded d{};
  int decode(mpa_codec_state* st, const uint8_t** p, const uint8_t* end) {
    for (;;) {
      d.reqs = reqs.data(), d.reqs_cap = static_cast<uint32_t>(reqs.size());
      d.stats = stats.data(), d.stats_cap = static_cast<uint32_t>(stats.size());
      d.papi = papi.data(), d.papi_cap = static_cast<uint32_t>(papi.size());
      d.cancelled = cancelled.data(), d.cancelled_cap = static_cast<uint32_t>(cancelled.size());
      d.vcounts = vcounts.data(), d.vcounts_cap = static_cast<uint32_t>(vcounts.size());
      int rc = mpa_decode_event(st, p, end, &d);
      if (rc != MPA_DECODE_ROOM) return rc;
      reqs.resize(std::max<size_t>(reqs.size(), d.nreq));
      stats.resize(std::max<size_t>(stats.size(), d.nstat));
      papi.resize(std::max<size_t>(papi.size(), d.npapi));
      cancelled.resize(std::max<size_t>(cancelled.size(), d.ncancelled));
      vcounts.resize(std::max<size_t>(vcounts.size(), d.nvcounts));
    }
  }
};

void check_same(const Sample& s, const mpa_decoded& d) {
  const mpa_event& e = s.ev;
  uint32_t mask = e.mask | (s.count ? MPA_F_COUNT | MPA_F_INCALL : 0) | (s.papi.empty() ? 0 : MPA_F_PAPI);
  CHECK(d.call == e.call);
  CHECK(d.mask == mask);
  CHECK(d.t_enter == e.t_enter);
  CHECK(d.t_exit == e.t_exit);
  CHECK(d.callsite == s.callsite);
  CHECK(d.peer == (mask & MPA_F_PEER ? e.peer : 0));
  CHECK(d.tag == (mask & MPA_F_TAG ? e.tag : 0));
  CHECK(d.comm == (mask & MPA_F_COMM ? e.comm : 0));
  CHECK(d.bytes == (mask & MPA_F_BYTES ? e.bytes : 0));
  CHECK(d.peer2 == (mask & MPA_F_PEER2 ? e.peer2 : 0));
  CHECK(d.tag2 == (mask & MPA_F_TAG2 ? e.tag2 : 0));
  CHECK(d.bytes2 == (mask & MPA_F_BYTES2 ? e.bytes2 : 0));
  CHECK(d.newcomm == (mask & MPA_F_NEWCOMM ? e.newcomm : 0));
  CHECK(d.value == (mask & MPA_F_VALUE ? e.value : 0));
  CHECK(d.count == s.count);
  CHECK(d.incall == (s.count ? s.incall : 0));
  REQUIRE(d.nreq == (mask & MPA_F_REQS ? s.reqs.size() : 0));
  for (uint32_t i = 0; i < d.nreq; i++) CHECK(d.reqs[i] == s.reqs[i]);
  REQUIRE(d.nstat == (mask & MPA_F_STATUS ? s.stats.size() : 0));
  for (uint32_t i = 0; i < d.nstat; i++) {
    CHECK(d.stats[i].index == s.stats[i].index);
    CHECK(d.stats[i].source == s.stats[i].source);
    CHECK(d.stats[i].tag == s.stats[i].tag);
    CHECK(d.stats[i].bytes == s.stats[i].bytes);
  }
  REQUIRE(d.npapi == s.papi.size());
  for (uint32_t i = 0; i < d.npapi; i++) CHECK(d.papi[i] == static_cast<uint64_t>(s.papi[i]));
  REQUIRE(d.ncancelled == (mask & MPA_F_CANCELLED ? s.cancelled.size() : 0));
  for (uint32_t i = 0; i < d.ncancelled; i++) CHECK(d.cancelled[i] == s.cancelled[i]);
  REQUIRE(d.nvcounts == (mask & MPA_F_VCOUNTS ? s.vcounts.size() : 0));
  for (uint32_t i = 0; i < d.nvcounts; i++) CHECK(d.vcounts[i] == s.vcounts[i]);
}

// Decodes a whole chunk; returns the number of events, checking each against samples from `first`.
size_t decode_chunk(const std::vector<uint8_t>& chunk, const std::vector<Sample>& samples, size_t first,
                    int codec = MPA_CODEC_ZSTD) {
  mpa_codec_state st{};  // version 0: this format
  const uint8_t* p = chunk.data();
  const uint8_t* end = p + chunk.size();
  REQUIRE(mpa_decode_chunk_start(&st, &p, &end, codec) == MPA_DECODE_OK);
  Decoder dec;
  size_t n = 0;
  while (p < end) {
    uint64_t peeked = 0;
    REQUIRE(mpa_decode_peek_enter(&st, p, end, &peeked) == MPA_DECODE_OK);
    REQUIRE(dec.decode(&st, &p, end) == MPA_DECODE_OK);
    CHECK(peeked == dec.d.t_enter);
    check_same(samples[first + n], dec.d);
    n++;
  }
  CHECK(mpa_decode_chunk_done(&st) == MPA_DECODE_OK);
  return n;
}

std::vector<uint8_t> bytes(std::initializer_list<int> b) {
  std::vector<uint8_t> v;
  for (int x : b) v.push_back(static_cast<uint8_t>(x));
  return v;
}

}  // namespace

TEST_CASE("random event streams decode to the events encoded, in chunks of any length", "[codec]") {
  for (int codec : {MPA_CODEC_ZSTD, MPA_CODEC_ZSTD_TIMES}) {
    INFO("codec " << codec);
    for (uint64_t seed = 1; seed <= 200; seed++) {
      std::mt19937_64 rng(seed);
      auto samples = random_stream(rng, 1 + rng() % 120);
      INFO("seed " << seed);
      for (size_t first = 0; first < samples.size();) {
        size_t last = std::min(samples.size(), first + 1 + rng() % 40);
        auto chunk = encode_chunk(samples, first, last, codec);
        REQUIRE(decode_chunk(chunk, samples, first, codec) == last - first);
        first = last;
      }
    }
  }
}

// format.h, MPA_CODEC_ZSTD_TIMES: payload := varint base_tick, Event* without times, Times, u32 times_bytes
TEST_CASE("a chunk of MPA_CODEC_ZSTD_TIMES has its events' times after them and their length at its end", "[codec]") {
  mpa_event e{};
  e.call = 3;
  e.t_enter = 1005;
  e.t_exit = 1012;
  std::vector<uint8_t> buf(64), times(64);
  mpa_codec_state st;
  uint8_t* p = mpa_encode_chunk_start(&st, buf.data(), 1000, times.data());
  p = mpa_encode_event(&st, p, &e, 2, 0, 0, nullptr, 0);
  e.t_enter = 1020, e.t_exit = 1021;
  p = mpa_encode_event(&st, p, &e, 2, 0, 0, nullptr, 0);  // a repeat of call site 2's event
  p = mpa_encode_chunk_end(&st, p, times.data());
  buf.resize(static_cast<size_t>(p - buf.data()));
  // base 1000; call 3, mask 0, site 2; call 3 | repeat, site 2; times: gap 5 (zigzag 10), 7; gap 8 (16), 1
  CHECK(buf == bytes({0xe8, 0x07, 3, 0, 2, 0x83, 2, 10, 7, 16, 1, 4, 0, 0, 0}));

  auto start = [&](const std::vector<uint8_t>& chunk, const uint8_t** p, const uint8_t** end, mpa_codec_state* s) {
    *p = chunk.data();
    *end = chunk.data() + chunk.size();
    return mpa_decode_chunk_start(s, p, end, MPA_CODEC_ZSTD_TIMES);
  };
  {
    mpa_codec_state s{};
    const uint8_t *q, *end;
    REQUIRE(start(buf, &q, &end, &s) == MPA_DECODE_OK);
    CHECK(end == buf.data() + 7);  // the events end where the times begin
    Decoder dec;
    REQUIRE(dec.decode(&s, &q, end) == MPA_DECODE_OK);
    CHECK(dec.d.t_enter == 1005);
    CHECK(dec.d.t_exit == 1012);
    CHECK(mpa_decode_chunk_done(&s) == MPA_DECODE_TIMES);  // the second event's times not read yet
    uint64_t peeked = 0;
    REQUIRE(mpa_decode_peek_enter(&s, q, end, &peeked) == MPA_DECODE_OK);
    CHECK(peeked == 1020);
    REQUIRE(dec.decode(&s, &q, end) == MPA_DECODE_OK);
    CHECK(dec.d.t_enter == 1020);
    CHECK(dec.d.t_exit == 1021);
    CHECK(q == end);
    CHECK(mpa_decode_chunk_done(&s) == MPA_DECODE_OK);
  }
  // a length beyond the chunk, or a chunk too short to hold one
  for (auto bad : {bytes({0xe8, 0x07, 3, 0, 2, 10, 7, 9, 0, 0, 0}), bytes({0xe8, 0x07, 0}), bytes({})}) {
    mpa_codec_state s{};
    const uint8_t *q, *end;
    CHECK(start(bad, &q, &end, &s) == MPA_DECODE_TIMES);
  }
  // times for fewer events than the chunk has: the event without them is refused, the state left
  {
    auto short_times = bytes({0xe8, 0x07, 3, 0, 2, 0x83, 2, 10, 7, 2, 0, 0, 0});
    mpa_codec_state s{};
    const uint8_t *q, *end;
    REQUIRE(start(short_times, &q, &end, &s) == MPA_DECODE_OK);
    Decoder dec;
    REQUIRE(dec.decode(&s, &q, end) == MPA_DECODE_OK);
    const uint8_t* before = q;
    uint64_t peeked = 0;
    CHECK(mpa_decode_peek_enter(&s, q, end, &peeked) == MPA_DECODE_TIMES);
    CHECK(dec.decode(&s, &q, end) == MPA_DECODE_TIMES);
    CHECK(q == before);
  }
  // times for more events than the chunk has: every event decodes, and the chunk's end says so
  {
    auto extra = bytes({0xe8, 0x07, 3, 0, 2, 10, 7, 16, 1, 4, 0, 0, 0});
    mpa_codec_state s{};
    const uint8_t *q, *end;
    REQUIRE(start(extra, &q, &end, &s) == MPA_DECODE_OK);
    Decoder dec;
    REQUIRE(dec.decode(&s, &q, end) == MPA_DECODE_OK);
    CHECK(q == end);
    CHECK(mpa_decode_chunk_done(&s) == MPA_DECODE_TIMES);
  }
}

TEST_CASE("a chunk cut anywhere inside an event gives an error, never an event, and leaves the state", "[codec]") {
  for (uint64_t seed = 1; seed <= 30; seed++) {
    std::mt19937_64 rng(seed);
    auto samples = random_stream(rng, 12);
    auto chunk = encode_chunk(samples, 0, samples.size());
    // where each event begins
    std::vector<size_t> starts;
    {
      mpa_codec_state st{};  // version 0: this format
      const uint8_t* p = chunk.data();
      const uint8_t* end = p + chunk.size();
      decode_start(&st, &p, end);
      Decoder dec;
      while (p < end) {
        starts.push_back(static_cast<size_t>(p - chunk.data()));
        REQUIRE(dec.decode(&st, &p, end) == MPA_DECODE_OK);
      }
      starts.push_back(chunk.size());
    }
    for (size_t cut = starts.front(); cut < chunk.size(); cut++) {
      mpa_codec_state st{};  // version 0: this format
      const uint8_t* p = chunk.data();
      const uint8_t* end = chunk.data() + cut;
      REQUIRE(decode_start(&st, &p, end) == MPA_DECODE_OK);
      Decoder dec;
      size_t whole = 0;
      while (p < end && dec.decode(&st, &p, end) == MPA_DECODE_OK) check_same(samples[whole++], dec.d);
      // every event that ends by the cut decodes; the one cut in the middle does not
      size_t expect = std::upper_bound(starts.begin(), starts.end(), cut) - starts.begin() - 1;
      CHECK(whole == expect);
      if (p < end) {
        const uint8_t* before = p;
        mpa_codec_state kept = st;
        CHECK(dec.decode(&st, &p, end) == MPA_DECODE_TRUNCATED);
        CHECK(p == before);
        CHECK(std::memcmp(&kept, &st, sizeof st) == 0);
      }
    }
  }
}

TEST_CASE("the bytes of an event are those mpiadvise-log(5) describes", "[codec]") {
  // call id 17 to rank 3, tag -1, comm 1, 8 bytes, one request handle 0x120; entered 5 ticks after
  // the chunk's base tick 1000, lasting 300 ticks, at call site 2; then the same event again, a repeat of
  // its call site's arguments (format 5)
  const uint64_t handle = 0x120;
  mpa_event e{};
  e.call = 17;
  e.mask = MPA_F_PEER | MPA_F_TAG | MPA_F_COMM | MPA_F_BYTES | MPA_F_REQS;
  e.t_enter = 1005, e.t_exit = 1305;
  e.peer = 3, e.tag = -1, e.comm = 1, e.bytes = 8;
  e.reqs = &handle, e.nreq = 1;
  std::vector<uint8_t> buf(mpa_event_bound(&e, 0) * 2 + 10);
  mpa_codec_state st;
  uint8_t* p = mpa_encode_chunk_start(&st, buf.data(), 1000, nullptr);
  p = mpa_encode_event(&st, p, &e, 2, 0, 0, nullptr, 0);
  p = mpa_encode_event(&st, p, &e, 2, 0, 0, nullptr, 0);
  buf.resize(static_cast<size_t>(p - buf.data()));
  // (0x120 * 0x9E3779B97F4A7C15) mod 2^64, its top 4 bits: 15
  REQUIRE(mpa_handle_slot(handle, MPA_FORMAT_VERSION) == 15);
  const auto expected = bytes({
      0xe8, 0x07,              // base tick 1000
      17, 0x8f, 0x01,          // call; mask 0x8f = PEER | TAG | COMM | BYTES | REQS
      0x0a, 0xac, 0x02, 0x02,  // gap zigzag(5) = 10, duration 300, call site 2
      0x06, 0x01, 0x01, 0x08,  // peer zigzag(3), tag zigzag(-1), comm 1, bytes 8
      0x01, 0x80, 0x09,        // one handle: zigzag(0x120 - 0) << 1 = 0x480, lowest bit clear
      17 | 0x80,               // the second event: call 17 repeating call site 2's mask and arguments
      0xd7, 0x04, 0xac, 0x02, 0x02,  // gap 1005 - 1305 = -300: zigzag 599; duration; call site
      0x01, 0x1f,              // its requests: the handle is in slot 15, code 15 << 1 | 1, one byte
  });
  CHECK(buf == expected);
  // and back
  std::vector<Sample> two(2);
  for (auto& s : two) {
    s.ev = e;
    s.callsite = 2;
    s.reqs = {handle};
    s.point();
  }
  CHECK(decode_chunk(buf, two, 0) == 2);
}

TEST_CASE("format 5: a loop's repeated calls are written as repeats; a format 4 chunk has none; a repeat of "
          "nothing is refused", "[codec]") {
  // a receive completed with its status, 50 times from the same call site, and between them an Isend
  // from another site whose tag changes every fourth time: the status's source, tag and bytes, the
  // peer, comm and bytes are written once per chunk, and again only where they change
  const uint64_t handles[2] = {0x5000, 0x5040};
  const mpa_status status{0, 1, 7, 4096};
  std::vector<Sample> loop;
  for (int i = 0; i < 50; i++) {
    Sample recv, send;
    recv.ev.call = 9, recv.ev.mask = MPA_F_REQS | MPA_F_STATUS;
    recv.ev.t_enter = 1000 + 40 * i, recv.ev.t_exit = recv.ev.t_enter + 5;
    recv.callsite = 3, recv.reqs = {handles[0]}, recv.stats = {status};
    send.ev.call = 4, send.ev.mask = MPA_F_PEER | MPA_F_TAG | MPA_F_COMM | MPA_F_BYTES | MPA_F_REQS;
    send.ev.t_enter = recv.ev.t_exit + 10, send.ev.t_exit = send.ev.t_enter + 3;
    send.ev.peer = 1, send.ev.tag = i / 4, send.ev.comm = 1, send.ev.bytes = 4096;
    send.callsite = 67, send.reqs = {handles[1]};  // 67 and 3 share template slot 3 (67 mod 64)
    loop.push_back(recv), loop.push_back(send);
  }
  for (auto& s : loop) s.point();  // the event's arrays point into the sample, now in its place
  const auto chunk = encode_chunk(loop, 0, loop.size());
  REQUIRE(decode_chunk(chunk, loop, 0) == loop.size());
  // two call sites in one slot evict each other: every event whole
  size_t repeats = 0;
  for (uint8_t b : chunk) repeats += b == (9 | MPA_CALL_REPEAT);  // an upper bound on the repeats found
  CHECK(repeats == 0);
  // at call site 2 instead the receive repeats 49 times (every event after the first), the send 37 times
  // (the tag changes 12 times after its first)
  for (auto& s : loop)
    if (s.callsite == 67) s.callsite = 2;
  const auto apart = encode_chunk(loop, 0, loop.size());
  REQUIRE(decode_chunk(apart, loop, 0) == loop.size());
  // a whole receive is 11 bytes here (call, mask 2, gap, duration, call site, 1 request, a status of
  // 4), its repeat 6; a whole send 12, its repeat 6
  CHECK(apart.size() < chunk.size() * 6 / 10);

  // the same events from a tracer of format 4: no repeats, and they decode as format 4
  std::vector<uint8_t> buf(chunk.size() * 2);
  mpa_codec_state st;
  uint8_t* p = mpa_encode_chunk_start(&st, buf.data(), loop.front().ev.t_enter, nullptr);
  st.version = 4;
  for (const auto& s : loop) p = mpa_encode_event(&st, p, &s.ev, s.callsite, 0, 0, nullptr, 0);
  buf.resize(static_cast<size_t>(p - buf.data()));
  CHECK(buf.size() > apart.size());
  {
    mpa_codec_state dst{};
    dst.version = 4;
    const uint8_t* q = buf.data();
    REQUIRE(decode_start(&dst, &q, buf.data() + buf.size()) == MPA_DECODE_OK);
    Decoder dec;
    for (size_t i = 0; i < loop.size(); i++) {
      REQUIRE(dec.decode(&dst, &q, buf.data() + buf.size()) == MPA_DECODE_OK);
      CHECK(dec.d.call == loop[i].ev.call);
      CHECK(dec.d.bytes == loop[i].ev.bytes);
    }
    CHECK(q == buf.data() + buf.size());
  }

  // RESENT (no payload) is of format 5: a chunk of format 4 cannot hold it
  {
    std::vector<Sample> just{loop[1]};
    just[0].ev.mask |= MPA_F_RESENT;
    just[0].point();
    const auto chunk5 = encode_chunk(just, 0, 1);
    REQUIRE(decode_chunk(chunk5, just, 0) == 1);
    mpa_codec_state v4{};
    v4.version = 4;
    const uint8_t* q = chunk5.data();
    REQUIRE(decode_start(&v4, &q, chunk5.data() + chunk5.size()) == MPA_DECODE_OK);
    Decoder dec;
    CHECK(dec.decode(&v4, &q, chunk5.data() + chunk5.size()) == MPA_DECODE_MASK);
  }

  // a repeat whose call site has had no event in the chunk: refused, the state unchanged
  const auto bad = bytes({0xe8, 0x07, 9 | MPA_CALL_REPEAT, 0x0a, 0x05, 0x03, 0x01, 0x00});
  mpa_codec_state dst{};
  const uint8_t* q = bad.data();
  REQUIRE(decode_start(&dst, &q, bad.data() + bad.size()) == MPA_DECODE_OK);
  Decoder dec;
  const uint8_t* before = q;
  CHECK(dec.decode(&dst, &q, bad.data() + bad.size()) == MPA_DECODE_RANGE);
  CHECK(q == before);
  // nor at the largest call site, whose slot is empty too (a slot's emptiness is not a call site value)
  const auto widest = bytes({0xe8, 0x07, 0 | MPA_CALL_REPEAT, 0x00, 0x00, 0xff, 0xff, 0xff, 0xff, 0x0f});
  q = widest.data();
  REQUIRE(decode_start(&dst, &q, widest.data() + widest.size()) == MPA_DECODE_OK);
  CHECK(dec.decode(&dst, &q, widest.data() + widest.size()) == MPA_DECODE_RANGE);
}

TEST_CASE("MPICH's Irecv and Isend requests take their own slots; a format 1 chunk still decodes", "[codec]") {
  // MPICH's handles are ints: an Irecv's request 0xac000000 and an Isend's 0x6c000001 (measured, a loop
  // of MPI_Irecv, MPI_Isend, MPI_Waitall). Format 1 put both in slot 0, so that in a loop each evicted
  // the other and was coded as a 5-byte delta; format 2 gives them slots 10 and 13.
  CHECK(mpa_handle_slot(0xac000000, 1) == mpa_handle_slot(0x6c000001, 1));
  CHECK(mpa_handle_slot(0xac000000, 2) == 10);
  CHECK(mpa_handle_slot(0x6c000001, 2) == 13);
  const uint64_t reqs[2] = {0xac000000, 0x6c000001};
  mpa_event e{};
  e.call = 5;
  e.mask = MPA_F_REQS;
  e.t_enter = 1000, e.t_exit = 1001;
  e.reqs = reqs, e.nreq = 2;
  auto encoded = [&](uint32_t version) {
    std::vector<uint8_t> buf(mpa_event_bound(&e, 0) * 3 + 10);
    mpa_codec_state st;
    uint8_t* p = mpa_encode_chunk_start(&st, buf.data(), 1000, nullptr);
    st.version = version;  // as a tracer of that format wrote it
    for (int n = 0; n < 3; n++) p = mpa_encode_event(&st, p, &e, 1, 0, 0, nullptr, 0);
    buf.resize(static_cast<size_t>(p - buf.data()));
    return buf;
  };
  const auto v1_bytes = encoded(1), v2_bytes = encoded(2);
  // the second and third rounds: 2 one-byte codes each in format 2, two 5-byte deltas each in format 1
  CHECK(v1_bytes.size() - v2_bytes.size() == 2 * 2 * 4);
  // each decodes with its own version's slots, and both give the handles back
  for (uint32_t version : {1u, 2u}) {
    INFO("format " << version);
    const auto& buf = version == 1 ? v1_bytes : v2_bytes;
    mpa_codec_state st{};
    st.version = version;
    const uint8_t* p = buf.data();
    REQUIRE(decode_start(&st, &p, buf.data() + buf.size()) == MPA_DECODE_OK);
    for (int n = 0; n < 3; n++) {
      uint64_t out[2] = {0, 0};
      mpa_decoded d{};
      d.reqs = out, d.reqs_cap = 2;
      REQUIRE(mpa_decode_event(&st, &p, buf.data() + buf.size(), &d) == MPA_DECODE_OK);
      REQUIRE(d.nreq == 2);
      CHECK(out[0] == reqs[0]);
      CHECK(out[1] == reqs[1]);
    }
  }
}

TEST_CASE("damaged bytes are refused with the error that names them", "[codec]") {
  Decoder dec;
  auto decode = [&](std::vector<uint8_t> b) {
    mpa_codec_state st{};
    const uint8_t* p = b.data();
    return dec.decode(&st, &p, b.data() + b.size());
  };
  // call 1, mask 0, gap 0, duration 0, site 0: the smallest event
  CHECK(decode(bytes({1, 0, 0, 0, 0})) == MPA_DECODE_OK);
  CHECK(decode(bytes({1, 0, 0, 0})) == MPA_DECODE_TRUNCATED);
  CHECK(decode(bytes({})) == MPA_DECODE_TRUNCATED);
  // a mask bit past MPA_F_RESENT (2^18); RESENT itself (2^17) has no payload
  CHECK(decode(bytes({1, 0x80, 0x80, 0x10, 0, 0, 0})) == MPA_DECODE_MASK);
  CHECK(decode(bytes({1, 0x80, 0x80, 0x08, 0, 0, 0})) == MPA_DECODE_OK);
  // VCOUNTS with more members than a reader accepts
  CHECK(decode(bytes({1, 0x80, 0x80, 0x02, 0, 0, 0, 0x81, 0x80, 0x04})) == MPA_DECODE_RANGE);
  // a varint of eleven bytes, and one whose tenth byte holds more than bit 63
  CHECK(decode(bytes({1, 0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00, 0, 0})) == MPA_DECODE_OVERLONG);
  CHECK(decode(bytes({1, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0, 0})) == MPA_DECODE_OVERLONG);
  CHECK(decode(bytes({1, 0, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0, 0})) == MPA_DECODE_OK);
  // a call site wider than 32 bits; a peer outside int32 (zigzag 2^32)
  CHECK(decode(bytes({1, 0, 0, 0, 0x80, 0x80, 0x80, 0x80, 0x10})) == MPA_DECODE_RANGE);
  CHECK(decode(bytes({1, MPA_F_PEER, 0, 0, 0, 0x80, 0x80, 0x80, 0x80, 0x10})) == MPA_DECODE_RANGE);
  // a handle code naming slot 17 of 16 (slot 16, code 33, says a whole handle follows)
  CHECK(decode(bytes({1, 0x80, 0x01, 0, 0, 0, 1, 17 << 1 | 1})) == MPA_DECODE_RANGE);
  CHECK(decode(bytes({1, 0x80, 0x01, 0, 0, 0, 1, 33, 0x7f})) == MPA_DECODE_OK);
  CHECK(dec.d.reqs[0] == 0x7f);
  CHECK(decode(bytes({1, 0x80, 0x01, 0, 0, 0, 1, 33})) == MPA_DECODE_TRUNCATED);
  // more handles, statuses or counters than the chunk has bytes for
  CHECK(decode(bytes({1, 0x80, 0x01, 0, 0, 0, 5, 1, 1})) == MPA_DECODE_TRUNCATED);
  CHECK(decode(bytes({1, 0x80, 0x02, 0, 0, 0, 2, 0, 0, 0, 0})) == MPA_DECODE_TRUNCATED);  // STATUS: 2 x 4 bytes, 4 left
  CHECK(decode(bytes({1, 0x80, 0x10, 0, 0, 0, 65, 1, 1})) == MPA_DECODE_TRUNCATED);
}

TEST_CASE("a handle seen again in a chunk costs one byte; the table starts again with each chunk", "[codec]") {
  // 40 handles whose slots collide, each named twice in a row, then the first again
  std::vector<uint64_t> handles;
  for (uint64_t i = 0; i < 40; i++) handles.push_back(0x7f0000001000ull + (i << 20));
  std::vector<Sample> samples(handles.size() * 2 + 1);
  for (size_t i = 0; i < samples.size(); i++) {
    Sample& s = samples[i];
    s.ev.call = 3;
    s.ev.mask = MPA_F_REQS;
    s.ev.t_enter = 100 * i, s.ev.t_exit = 100 * i + 10;
    s.reqs = {handles[i < samples.size() - 1 ? i / 2 : 0]};
    s.point();
  }
  auto chunk = encode_chunk(samples, 0, samples.size());
  REQUIRE(decode_chunk(chunk, samples, 0) == samples.size());
  // the second naming of a handle, a repeat of its call site's mask: call 1, gap 2 (zigzag 90 = 180),
  // duration 1, call site 1, count 1, and one byte of handle code
  std::vector<Sample> pair(samples.begin(), samples.begin() + 2);
  auto two = encode_chunk(pair, 0, 2);
  auto one = encode_chunk(pair, 0, 1);
  CHECK(two.size() - one.size() == 7);
}

TEST_CASE("an unfinished call round-trips; a file before format 4 cannot hold one", "[codec]") {
  // MPI_Recv-like (call 9) from rank 1, tag 10, comm 3, in progress from tick 2000 until the signal at
  // tick 9000; then MPI_Wait-like (call 26) on a request, unfinished too, on another chunk
  const uint64_t handle = 0xac000000;
  Sample recv, wait;
  recv.ev.call = 9;
  recv.ev.mask = MPA_F_PEER | MPA_F_TAG | MPA_F_COMM | MPA_F_UNFINISHED;
  recv.ev.t_enter = 2000, recv.ev.t_exit = 9000;
  recv.ev.peer = 1, recv.ev.tag = 10, recv.ev.comm = 3;
  recv.callsite = 4;
  recv.point();
  wait.ev.call = 26;
  wait.ev.mask = MPA_F_REQS | MPA_F_UNFINISHED;
  wait.ev.t_enter = 3000, wait.ev.t_exit = 9000;
  wait.reqs = {handle};
  wait.callsite = 5;
  wait.point();
  // a completed event before the unfinished one, as in a log: the flag is the event's alone
  std::vector<Sample> stream(3);
  stream[0].ev.call = 9;
  stream[0].ev.mask = MPA_F_PEER | MPA_F_TAG | MPA_F_COMM;
  stream[0].ev.t_enter = 1000, stream[0].ev.t_exit = 1500;
  stream[0].ev.peer = 1, stream[0].ev.tag = 3, stream[0].ev.comm = 1;
  stream[1] = recv;
  stream[2] = wait;
  for (auto& s : stream) s.point();
  auto chunk = encode_chunk(stream, 0, 2);
  REQUIRE(decode_chunk(chunk, stream, 0) == 2);
  auto other = encode_chunk(stream, 2, 3);
  REQUIRE(decode_chunk(other, stream, 2) == 1);
  // the flag is one bit of the mask, no payload: the event is one byte longer than without it only
  // where the mask needs a third byte
  {
    Sample plain = recv;
    plain.ev.mask &= ~MPA_F_UNFINISHED;
    plain.point();
    std::vector<Sample> a{plain}, b{recv};
    CHECK(encode_chunk(b, 0, 1).size() == encode_chunk(a, 0, 1).size() + 2);  // mask 0x07: 1 byte; 0x10007: 3
  }
  // decoded as a file of each version says: refused before format 4, read from 4 on (0: this format)
  for (uint32_t version : {1u, 2u, 3u, 4u, 0u}) {
    INFO("format " << version);
    mpa_codec_state st{};
    const uint8_t* p = chunk.data();
    const uint8_t* end = p + chunk.size();
    st.version = version;
    REQUIRE(decode_start(&st, &p, end) == MPA_DECODE_OK);
    Decoder dec;
    REQUIRE(dec.decode(&st, &p, end) == MPA_DECODE_OK);  // the completed event
    const uint8_t* before = p;
    int rc = dec.decode(&st, &p, end);
    if (version != 0 && version < 4) {
      CHECK(rc == MPA_DECODE_MASK);
      CHECK(p == before);
    } else {
      REQUIRE(rc == MPA_DECODE_OK);
      CHECK((dec.d.mask & MPA_F_UNFINISHED) != 0);
      CHECK(dec.d.t_enter == 2000);
      CHECK(dec.d.t_exit == 9000);
      CHECK(dec.d.peer == 1);
      CHECK(dec.d.tag == 10);
      CHECK(dec.d.comm == 3);
      CHECK(dec.d.nstat == 0);
      CHECK(p == end);
    }
  }
  CHECK(MPA_FORMAT_VERSION == 6u);
  CHECK((MPA_F_DEFINED & MPA_F_UNFINISHED) != 0);
}

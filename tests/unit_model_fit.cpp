// Whether the model explains a run, on traces written by hand: the replay of each is known from the
// model's equations, the measured times are set to miss it in one known way, and the assessment must
// name the way and the place.
#include <cmath>
#include <memory>
#include <tuple>

#include <catch2/catch.hpp>

#include "model_fit.hpp"
#include "op_stream.hpp"
#include "support.hpp"

using namespace mpiadvise;
using Catch::Detail::Approx;

namespace {

LogGPSParams tcp_params() {
  LogGPSParams p;
  p.name = "test-tcp";
  p.library = "Open MPI";
  p.transport = "tcp";
  p.L = 10'000;
  p.o = 1'000;
  p.s = p.S = 65536;
  return p;
}

RunFacts tcp_facts() {
  RunFacts f;
  f.library = "Open MPI";
  f.transport = "tcp";
  return f;
}

// Rank 0 posts 20 Isends of 0 bytes (site 1) to rank 1, which posts the receives (site 2) and waits for
// all (site 3); every call is 1 us, 100 us of computation between them. post_us[i]: the i-th Isend's
// measured time instead.
Trace isend_run(const std::vector<std::pair<int, uint64_t>>& slow_posts) {
  Trace t;
  t.world_size = 2;
  t.ranks.resize(2);
  t.site_keys.resize(2);
  t.comms.push_back(TraceComm{0, {0, 1}, {}});
  for (int r = 0; r < 2; r++) {
    t.ranks[r].rank = r;
    for (uint32_t s = 1; s <= 3; s++) t.site_keys[r][s] = SiteKey{"app", s, ""};
  }
  auto add = [&](int r, uint64_t& now, uint64_t took, uint32_t call, OpKind kind, uint32_t site, std::vector<Link> links) {
    Op op;
    REQUIRE(op.set_times(now, now + took));
    op.call = call, op.kind = kind, op.callsite = site;
    t.set_links(op, static_cast<uint32_t>(t.links.size()), static_cast<uint32_t>(links.size()));
    for (const Link& l : links) t.links.push_back(l);
    t.ranks[r].ops.push_back(op);
    now = op.t_exit() + 100'000;
    return static_cast<uint32_t>(t.ranks[r].ops.size() - 1);
  };
  uint64_t now0 = 0, now1 = 0;
  std::vector<Link> waits;
  for (uint32_t i = 0; i < 20; i++) {
    uint64_t took = 1'000;
    for (const auto& [which, us] : slow_posts)
      if (static_cast<uint32_t>(which) == i) took = us * 1'000;
    Message m;
    m.src = 0, m.dst = 1;
    m.send_op = add(0, now0, took, MPA_CALL_Isend, OpKind::PostSend, 1, {{Link::PostSend, i}});
    t.links.push_back({Link::DoneSend, i});  // completed by the Isend itself here: a 0-byte eager send
    t.set_links(t.ranks[0].ops.back(), t.ranks[0].ops.back().first_link, 2);
    m.recv_op = add(1, now1, 1'000, MPA_CALL_Irecv, OpKind::PostRecv, 2, {{Link::PostRecv, i}});
    waits.push_back({Link::DoneRecv, i});
    t.messages.push_back(m);
  }
  add(1, now1, 1'000, MPA_CALL_Waitall, OpKind::Completion, 3, waits);  // its DoneRecv links: every receive
  return t;
}

ReplayResult replayed(const Trace& t, const LogGPSParams& p) {
  ReplayOptions o;
  o.params = p;
  return replay(t, o);
}

bool has(const ModelFit& f, MissReason r) {
  for (const auto& s : f.suspects)
    if (s.reason == r) return true;
  return false;
}

}  // namespace

TEST_CASE("a run the model explains: within 10%, nothing suspected", "[fit]") {
  Trace t = isend_run({});
  ModelFit f = assess_fit(t, tcp_facts(), tcp_params(), replayed(t, tcp_params()));
  CHECK(f.explained);
  CHECK(std::fabs(f.error) <= kExpectedModelError);
  CHECK(f.ranks.empty());
  CHECK(f.suspects.empty());
}

TEST_CASE("non-blocking posts far slower than the rest of their site are named as slow calls, with the site",
          "[fit]") {
  // three Isends of 20 of rank 0 took 200 ms each (the rank descheduled): the model, which prices an
  // Isend at o' = 1 us, cannot follow, and the rank's run is 600 ms longer than predicted
  Trace t = isend_run({{3, 200'000}, {9, 200'000}, {15, 200'000}});
  ModelFit f = assess_fit(t, tcp_facts(), tcp_params(), replayed(t, tcp_params()));
  CHECK_FALSE(f.explained);
  REQUIRE(!f.ranks.empty());
  CHECK(f.ranks.front().rank == 0);
  REQUIRE(!f.sites.empty());
  CHECK(f.sites.front().callsite == 1);  // the Isend site
  CHECK(f.sites.front().measured_ns - f.sites.front().predicted_ns == Approx(3 * (200e6 - 1'000)));
  REQUIRE(has(f, MissReason::SlowCalls));
  for (const auto& s : f.suspects)
    if (s.reason == MissReason::SlowCalls) {
      CHECK(s.rank == 0);
      CHECK(s.callsite == 1);
      CHECK(s.detail.find("up to 200000 us") != std::string::npos);
    }
}

TEST_CASE("a parameter set measured for another library or transport is suspected", "[fit]") {
  Trace t = isend_run({});
  LogGPSParams other = tcp_params();
  other.library = "MPICH-SCore";
  other.transport = "myrinet";
  ModelFit f = assess_fit(t, tcp_facts(), other, replayed(t, other));
  REQUIRE(has(f, MissReason::ParameterSet));
  CHECK(f.suspects.front().detail.find("MPICH-SCore over myrinet") != std::string::npos);
  CHECK(f.suspects.front().detail.find("Open MPI over tcp") != std::string::npos);
}

TEST_CASE("a run at another of the machine's speeds than the set's is replayed at that speed", "[fit][speeds]") {
  // the run as tcp_params prices it (1 us calls); a set calibrated at a speed 60 times slower, which its
  // calibration saw beside this one: speeds [1/60, 1]
  Trace t = isend_run({});
  LogGPSParams slow = tcp_params().scaled(60);
  CHECK(slow.o == 60'000);
  CHECK(slow.L == 600'000);
  CHECK(slow.S == tcp_params().S);
  CHECK(std::abs(replayed(t, slow).error()) > kExpectedModelError);
  // without [machine], the set as it is
  CHECK_FALSE(run_speed(t, tcp_facts(), slow));
  slow.speeds_ratio = 60, slow.slow_share = 0.5, slow.speeds = {1.0 / 60, 1};
  auto s = run_speed(t, tcp_facts(), slow);
  REQUIRE(s);
  CHECK(s->faster);
  CHECK(s->factor == Approx(1.0 / 60));
  CHECK(std::abs(s->error_run) < 0.01);
  CHECK(s->error_set == Approx(replayed(t, slow).error()));
  // the same set, its run explained at the set's own speed: nothing to choose
  CHECK_FALSE(run_speed(t, tcp_facts(), tcp_params().scaled(1.0)));
  LogGPSParams fast = tcp_params();
  fast.speeds_ratio = 2, fast.speeds = {1, 2};
  CHECK_FALSE(run_speed(t, tcp_facts(), fast));
  // a set at the faster speed whose run went at the slower: scaled up by that speed's factor
  Trace slower = isend_run({});
  for (auto& r : slower.ranks)  // every call 60 times as long, the computation between them the same
    for (auto& op : r.ops) op.duration *= 60;
  for (auto& r : slower.ranks)
    for (size_t i = 1; i < r.ops.size(); i++) {
      const uint64_t gap = 100'000, shift = r.ops[i - 1].t_exit() + gap - r.ops[i].t_enter;
      r.ops[i].t_enter += shift;  // the duration kept
    }
  fast.speeds_ratio = 60, fast.speeds = {1, 20, 60, 90};  // 60 the closest of the three
  // 20 Isends of 60 us measured against 1 us priced, 100 us apart: about a third of rank 0's time
  REQUIRE(replayed(slower, fast).error() < -kExpectedModelError);
  s = run_speed(slower, tcp_facts(), fast);
  REQUIRE(s);
  CHECK_FALSE(s->faster);
  CHECK(s->factor == Approx(60));
  // closer, not exact: the trace's calls were stretched, not its latencies (600 us at the slower speed)
  CHECK(std::abs(s->error_run) < std::abs(s->error_set) / 2);
  // the replays reading the ranks' ops from their op streams, the trace's let go (analyse's low_memory): the
  // same speed and errors, to the bit
  for (const Trace* run : {&t, &slower}) {
    for (const LogGPSParams& set : {slow, fast}) {
      const auto want = run_speed(*run, tcp_facts(), set);
      const auto streams = std::make_shared<const std::vector<OpStream>>(OpStream::encode_all(*run, 256));
      const auto got = run_speed(mpa_test::bare_of(*run), streams, tcp_facts(), set);
      REQUIRE(got.has_value() == want.has_value());
      if (want)
        CHECK(std::tie(got->factor, got->faster, got->error_set, got->error_run) ==
              std::tie(want->factor, want->faster, want->error_set, want->error_run));
    }
  }
}

TEST_CASE("a set that prices the messages above what they took is suspected when the prediction is too long",
          "[fit]") {
  // the same run priced with o' = 60 us, where every call took 1 us: the 20 Isends alone are predicted
  // 20 x 59 us longer than they took, about a quarter of the two ranks' 4.2 ms
  Trace t = isend_run({});
  LogGPSParams slow = tcp_params();
  slow.o = 60'000;
  ModelFit f = assess_fit(t, tcp_facts(), slow, replayed(t, slow));
  CHECK(f.error > kExpectedModelError);
  CHECK_FALSE(f.explained);
  REQUIRE(has(f, MissReason::FastMessages));
  CHECK_FALSE(has(f, MissReason::SlowMessages));
  for (const auto& s : f.suspects)
    if (s.reason == MissReason::FastMessages) {
      CHECK(s.share > 20 * 59e3 / (2 * 4.2e6));
      CHECK(s.detail.find("less than the parameter set prices them") != std::string::npos);
      CHECK(s.detail.find("two speeds") == std::string::npos);
    }
  // a set whose calibration saw the machine at two speeds says so where it suspects the messages' prices
  slow.speeds_ratio = 2.2, slow.slow_share = 0.4;
  bool named = false;
  for (const auto& s : assess_fit(t, tcp_facts(), slow, replayed(t, slow)).suspects)
    if (s.reason == MissReason::FastMessages)
      named = s.detail.find("two speeds, the slower 2.2 times the faster and 40% of what it measured: a run at another speed") != std::string::npos;
  CHECK(named);
  // priced as it ran, nothing of the kind
  CHECK_FALSE(has(assess_fit(t, tcp_facts(), tcp_params(), replayed(t, tcp_params())), MissReason::FastMessages));
}

TEST_CASE("where the prediction is too long, data sent again unchanged is named, with what the set makes of it",
          "[fit][resend]") {
  // the run above priced with o' = 60 us, its 20 messages of 1000 bytes each (the set has no per-byte
  // terms: the replay is the same); the share of the bytes sent again unchanged, and whether the set prices
  // them, follow the suspicion
  Trace t = isend_run({});
  for (auto& m : t.messages) m.bytes = 1000;
  LogGPSParams slow = tcp_params();
  slow.o = 60'000;
  auto detail = [&](const LogGPSParams& p) {
    for (const auto& s : assess_fit(t, tcp_facts(), p, replayed(t, p)).suspects)
      if (s.reason == MissReason::FastMessages) return s.detail;
    return std::string("(not suspected)");
  };
  // 1 message of 20 cached: 5% of the bytes, below the tenth that is worth naming
  t.messages[3].resent = t.messages[3].cached = true;
  CHECK(detail(slow).find("sent again unchanged") == std::string::npos);
  for (uint32_t i = 0; i < 10; i++) t.messages[2 * i].resent = t.messages[2 * i].cached = true;
  const std::string unpriced = detail(slow);
  CHECK(unpriced.find("less than the parameter set prices them") != std::string::npos);
  CHECK(unpriced.find("; 55% of the bytes sent were sent again unchanged") != std::string::npos);
  CHECK(unpriced.find("which this set does not price (no [resend] table: calibrate measures it)") != std::string::npos);
  slow.resend_buffered = 0.9, slow.resend_rendezvous = 0.4;
  const std::string priced = detail(slow);
  CHECK(priced.find("; 55% of the bytes sent were sent again unchanged") != std::string::npos);
  CHECK(priced.find("which the replay prices at 0.90 times what data just written costs copied through the library's "
                    "buffers and 0.40 times by its rendezvous ([resend])") != std::string::npos);
  CHECK(priced.find("does not price") == std::string::npos);
}

namespace {

// A probe of 12 rounds at each size, every round `ratio[i]` times the set's round trip of that size.
std::vector<std::vector<double>> rounds_at(const std::vector<uint64_t>& bytes, const std::vector<double>& ratio,
                                           const LogGPSParams& p) {
  std::vector<std::vector<double>> r;
  for (size_t i = 0; i < bytes.size(); i++) r.emplace_back(12, ratio[i] * LogGPS(p).round_trip(bytes[i], 0));
  return r;
}

Trace sending(const std::vector<std::pair<uint64_t, int>>& sizes) {
  Trace t;
  for (const auto& [k, n] : sizes)
    for (int i = 0; i < n; i++) {
      Message m;
      m.src = 0, m.dst = 1, m.bytes = k;
      t.messages.push_back(m);
    }
  return t;
}

}  // namespace

TEST_CASE("the run's own round trips scale the set by the speed of the sizes the run sends", "[fit][probe]") {
  const LogGPSParams p = tcp_params();  // L 10 us, o 1 us, S 64 KiB
  const std::vector<uint64_t> bytes = {0, 8192, 65536};
  MessageProbe probe{bytes, rounds_at(bytes, {2, 2, 2}, p), {}, {}};
  // every size twice the set's: twice, whatever the run sends
  auto s = probe_speed(probe, p, sending({{100, 5}, {1 << 20, 1}}));
  REQUIRE(s);
  CHECK(s->factor == Approx(2));
  CHECK(s->model_ns[1] == Approx(LogGPS(p).round_trip(8192, 0)));
  CHECK(s->measured_ns[1] == Approx(2 * s->model_ns[1]));
  CHECK(*s->init == Approx(2));
  CHECK_FALSE(s->finalize);
  // a round trip the machine stalled in moves the median, not the factor
  auto stalled = probe;
  for (auto& size : stalled.init) size.back() *= 50;
  CHECK(probe_speed(stalled, p, sending({{8192, 1}}))->factor == Approx(2));
  // a finalize probe at four times: each size's median over both probes' 24 rounds is the mean of the
  // two middle ones, 3 times the set's; each probe alone gives its own
  probe.finalize = rounds_at(bytes, {4, 4, 4}, p);
  s = probe_speed(probe, p, sending({{8192, 1}}));
  REQUIRE(s);
  CHECK(s->factor == Approx(3));
  CHECK(*s->init == Approx(2));
  CHECK(*s->finalize == Approx(4));

  // 8 KiB at the set's speed, 64 KiB twice as slow: a run of 8 KiB messages goes at the set's speed, one
  // of 64 KiB messages twice as slow, and 16 KiB (a third of the way from 8 to 64 KiB over
  // log(1 + size)) at 2^(1/3)
  probe = MessageProbe{bytes, rounds_at(bytes, {1, 1, 2}, p), {}, {}};
  CHECK(probe_speed(probe, p, sending({{8192, 10}}))->factor == Approx(1));
  CHECK(probe_speed(probe, p, sending({{65536, 10}}))->factor == Approx(2));
  CHECK(probe_speed(probe, p, sending({{1 << 20, 10}}))->factor == Approx(2));  // held beyond the largest
  const double third = (std::log1p(16384.0) - std::log1p(8192.0)) / (std::log1p(65536.0) - std::log1p(8192.0));
  CHECK(third == Approx(1.0 / 3).epsilon(0.001));
  CHECK(probe_speed(probe, p, sending({{16384, 10}}))->factor == Approx(std::pow(2, third)));
  // messages of both sizes: each weighed by the time the set gives them (count x round trip / 2)
  const double w8 = 30 * LogGPS(p).round_trip(8192, 0), w64 = 10 * LogGPS(p).round_trip(65536, 0);
  CHECK(probe_speed(probe, p, sending({{8192, 30}, {65536, 10}}))->factor ==
        Approx(std::exp(w64 * std::log(2) / (w8 + w64))));
  // no point-to-point message: the geometric mean of the sizes' ratios
  CHECK(probe_speed(probe, p, Trace{})->factor == Approx(std::cbrt(2)));

  // nothing to scale by: no rounds, a size with none, a round trip of 0
  CHECK_FALSE(probe_speed(MessageProbe{bytes, {}, {}, {}}, p, Trace{}));
  CHECK_FALSE(probe_speed(MessageProbe{bytes, {{1000}, {1000}}, {}, {}}, p, Trace{}));
  CHECK_FALSE(probe_speed(MessageProbe{bytes, {{1000}, {0}, {1000}}, {}, {}}, p, Trace{}));
}

TEST_CASE("the run's own copies set how fast a rank may have rewritten what it sends again", "[fit][probe][resend]") {
  // the partner's copies of 0, 8 KiB and 64 KiB: medians of 200 ns (41 B/ns) and 800 ns (82 B/ns), a
  // copy of nothing left out; twice the fastest size's median rate
  const std::vector<uint64_t> bytes = {0, 8192, 65536};
  MessageProbe probe{bytes, {}, {}, {}};
  probe.copies = {{30, 30, 30}, {150, 200, 900}, {800, 700, 5000}};
  CHECK(rewrite_bytes_per_ns(probe) == Approx(2 * 65536 / 800.0));
  // a copy slower at 64 KiB (out of the cache): 8 KiB's rate
  probe.copies[2] = {4000, 4000, 4000};
  CHECK(rewrite_bytes_per_ns(probe) == Approx(2 * 8192 / 200.0));
  // no probe, or one without copies (an older log): the constant
  CHECK(rewrite_bytes_per_ns(std::nullopt) == kRewriteBytesPerNs);
  probe.copies.clear();
  CHECK(rewrite_bytes_per_ns(probe) == kRewriteBytesPerNs);
  // copies timed at 0 ns (a clock too coarse): no rate from them
  probe.copies = {{0}, {0, 0, 0}, {}};
  CHECK(rewrite_bytes_per_ns(probe) == kRewriteBytesPerNs);
}

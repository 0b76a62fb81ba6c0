// The compact op streams (analyzer/op_stream.hpp): a rank's ops read back through the cursor are the
// trace's, every field and link, on the benches' ring, on the logs of real traced runs and of
// mpiadvise-synth, and on the edges a hand-made trace reaches (times at their limits, threads whose calls
// overlap, a Waitall of hundreds of requests, a call a signal interrupted).
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <barrier>
#include <map>
#include <cmath>
#include <numeric>
#include <random>
#include <set>
#include <cstdio>
#include <cstring>
#include <memory>
#include <thread>

#include "../bench/ring_trace.hpp"
#include "advice.hpp"
#include "buffering.hpp"
#include "causes.hpp"
#include "efficiency.hpp"
#include "gate.hpp"
#include "halo.hpp"
#include "message_sides.hpp"
#include "model_fit.hpp"
#include "op_frames.hpp"
#include "op_stream.hpp"
#include "phases.hpp"
#include "receive_side.hpp"
#include "report.hpp"
#include "report_charts.hpp"
#include "replay.hpp"
#include "replay_peers.hpp"
#include "steady_trace.hpp"
#include "text_escape.hpp"
#include "waits.hpp"
#include "support.hpp"

using namespace mpiadvise;
using namespace mpa_test;

namespace {

fs::path fixture(const std::string& name) { return fs::path(MPA_SOURCE_DIR) / "tests" / "fixtures" / name; }

// The same op, as two cursors give it (the stream and a copy of it, packed): the messages' fields alike in
// their tables, the same instances (the copy shares the table)
void require_same_op(const StreamOp& a, const StreamOp& b) {
  REQUIRE(std::tie(a.t_enter, a.duration, a.callsite, a.call, a.kind, a.unfinished, a.link_ids, a.link_kinds) ==
          std::tie(b.t_enter, b.duration, b.callsite, b.call, b.kind, b.unfinished, b.link_ids, b.link_kinds));
  REQUIRE(a.posted.size() == b.posted.size());
  for (size_t k = 0; k < a.posted.size(); k++)
    REQUIRE((a.posted[k].id == b.posted[k].id && a.posted[k].m->key() == b.posted[k].m->key()));
  REQUIRE(a.completed.size() == b.completed.size());
  for (size_t k = 0; k < a.completed.size(); k++)
    REQUIRE((a.completed[k].id == b.completed[k].id && a.completed[k].m->key() == b.completed[k].m->key()));
  for (const auto* v : {&a.joined, &a.left}) {
    const auto& w = v == &a.joined ? b.joined : b.left;
    REQUIRE(v->size() == w.size());
    for (size_t k = 0; k < v->size(); k++)
      REQUIRE(std::tie((*v)[k].instance, (*v)[k].k, (*v)[k].fields) == std::tie(w[k].instance, w[k].k, w[k].fields));
  }
}

// The waits added up by rank and call site from the streams are the trace's, to the bit.
void require_same_states(const WaitStates& a, const WaitStates& b) {
  REQUIRE(a.rank_ns == b.rank_ns);
  REQUIRE(a.sites.size() == b.sites.size());
  for (auto i = a.sites.begin(), j = b.sites.begin(); i != a.sites.end(); ++i, ++j) {
    INFO("rank " << i->second.rank << " site " << i->second.callsite);
    const SiteWaits &x = i->second, &y = j->second;
    REQUIRE(i->first == j->first);
    REQUIRE(std::tie(x.rank, x.callsite, x.call, x.waited_ns, x.caused_ns, x.count, x.size_log2) ==
            std::tie(y.rank, y.callsite, y.call, y.waited_ns, y.caused_ns, y.count, y.size_log2));
  }
}

// Peers of hot spots check_stream_waits compared, over all its calls.
size_t peers_compared = 0;

// A hand-made op of `rank` from enter to exit, with its links, appended to t; its index in the rank's ops.
uint32_t append_op(Trace& t, int rank, uint64_t enter, uint64_t exit, uint8_t call, OpKind kind, uint32_t site,
                   const std::vector<Link>& links) {
  Op op;
  REQUIRE(op.set_times(enter, exit));
  op.call = call, op.kind = kind, op.callsite = site;
  const auto first = static_cast<uint32_t>(t.links.size());
  for (Link l : links) t.links.push_back(l);
  t.set_links(op, first, static_cast<uint32_t>(links.size()));
  t.ranks[rank].ops.push_back(op);
  return static_cast<uint32_t>(t.ranks[rank].ops.size() - 1);
}

// Every site of the trace as if each of its ranks had waited there 1 ns: hot spots whose peers are every
// site's, not only those the run waited at.
WaitStates every_site(const Trace& t) {
  WaitStates w;
  w.rank_ns.resize(t.ranks.size());
  for (int r = 0; r < static_cast<int>(t.ranks.size()); r++)
    for (const Op& op : t.ranks[r].ops) {
      SiteWaits& s = w.sites[{r, op.callsite}];
      s.rank = r, s.callsite = op.callsite, s.call = op.call;
      s.waited_ns[WaitCause::LateSender] = 1;
      s.count[WaitCause::LateSender] = 1;
    }
  return w;
}

// Whether every message a rank's op completes is one of that rank's sides, as build_trace makes them: a
// send it posted, or a receive of it that was matched (a hand-made trace may complete a receive of a
// message no receive matched, whose sender the streams' peers would name).
bool completes_own_sides(const Trace& t) {
  for (int r = 0; r < static_cast<int>(t.ranks.size()); r++)
    for (const Op& op : t.ranks[r].ops) {
      const OpLinks links = t.links_of(op);
      for (uint32_t k = 0; k < links.size(); k++) {
        const Link l = links[k];
        if ((l.kind != Link::DoneSend && l.kind != Link::DoneRecv) || l.id >= t.messages.size()) continue;
        const Message& m = t.messages[l.id];
        if (l.kind == Link::DoneSend ? m.src != r || m.send_op == kNone : m.dst != r || m.recv_op == kNone) return false;
      }
    }
  return true;
}

// The hot spots with their peers read from the streams are the trace's, field for field.
void require_same_hot_spots(const Trace& t, const std::vector<OpStream>& streams, const WaitStates& states) {
  const std::vector<HotSpot> want = hot_spots(t, states, SIZE_MAX), got = hot_spots(t, streams, states, SIZE_MAX);
  REQUIRE(got.size() == want.size());
  for (size_t k = 0; k < want.size(); k++) {
    INFO("hot spot " << k);
    const HotSpot &a = want[k], &b = got[k];
    REQUIRE(std::tie(a.key, a.rank, a.callsite, a.ranks, a.members, a.call, a.cause, a.waited_by_cause, a.waited_ns,
                     a.caused_ns, a.count, a.peers, a.size_log2) ==
            std::tie(b.key, b.rank, b.callsite, b.ranks, b.members, b.call, b.cause, b.waited_by_cause, b.waited_ns,
                     b.caused_ns, b.count, b.peers, b.size_log2));
    peers_compared += a.peers.size();
  }
}

// Two doubles the same bit for bit (NaN, an op outside the window's span, too)
bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

// What the causes compared from the streams found, over all check_stream_waits' calls: the causes named,
// the waits they were found for, the critical paths' changes of rank.
struct CausesCompared {
  uint64_t causes = 0, waits = 0, rank_changes = 0;
} causes_compared;

// The delay costs and the critical path from the streams are the trace's, to the bit, the trace's ops let
// go; read a frame at a time, 2 kept a rank (packed in frames of 256 bytes: many, and the causes' reader
// decodes some of them again).
void require_same_causes(const Trace& t, const std::vector<OpStream>& streams, const std::vector<Wait>& waits) {
  const Trace bare = bare_of(t);
  const DelayCosts want = delay_costs(t, waits), got = delay_costs(bare, streams, waits);
  REQUIRE(same_bits(got.waiting_ns, want.waiting_ns));
  REQUIRE(same_bits(got.unattributed_ns, want.unattributed_ns));
  REQUIRE(got.causes.size() == want.causes.size());
  for (size_t k = 0; k < want.causes.size(); k++) {
    INFO("cause " << k);
    const RootCause &a = want.causes[k], &b = got.causes[k];
    REQUIRE(std::make_tuple(a.where.rank, a.where.callsite, a.where.call) ==
            std::make_tuple(b.where.rank, b.where.callsite, b.where.call));
    REQUIRE(same_bits(a.direct_ns, b.direct_ns));
    REQUIRE(same_bits(a.indirect_ns, b.indirect_ns));
  }
  const CriticalPath pw = critical_path(t, waits), pg = critical_path(streams, waits);
  REQUIRE(std::make_tuple(pg.last_rank, pg.rank_changes, pg.parts.size()) ==
          std::make_tuple(pw.last_rank, pw.rank_changes, pw.parts.size()));
  REQUIRE(same_bits(pg.length_ns, pw.length_ns));
  REQUIRE(same_bits(pg.computation_ns, pw.computation_ns));
  REQUIRE(same_bits(pg.mpi_ns, pw.mpi_ns));
  for (size_t k = 0; k < pw.parts.size(); k++) {
    INFO("part " << k);
    const CriticalPath::Part &a = pw.parts[k], &b = pg.parts[k];
    REQUIRE(std::make_tuple(a.where.rank, a.where.callsite, a.where.call, a.computation, a.times) ==
            std::make_tuple(b.where.rank, b.where.callsite, b.where.call, b.computation, b.times));
    REQUIRE(same_bits(a.ns, b.ns));
  }
  causes_compared.causes += want.causes.size();
  causes_compared.waits += waits.size();
  causes_compared.rank_changes += pw.rank_changes;
}

// Whether every message's posts are its sender's send and its receiver's receive, as build_trace makes
// them (a hand-made trace may post a message from another rank's op, whose fields no stream of the posting
// rank carries), every link naming a message of the trace.
bool posts_own_sides(const Trace& t) {
  for (int r = 0; r < static_cast<int>(t.ranks.size()); r++)
    for (uint32_t i = 0; i < t.ranks[r].ops.size(); i++) {
      const OpLinks links = t.links_of(t.ranks[r].ops[i]);
      for (uint32_t k = 0; k < links.size(); k++) {
        const Link l = links[k];
        if ((l.kind != Link::PostSend && l.kind != Link::PostRecv) || l.id == kNone) continue;
        if (l.id >= t.messages.size()) return false;
        const Message& m = t.messages[l.id];
        if (l.kind == Link::PostSend ? m.src != r || m.send_op != i : m.dst != r || m.recv_op != i) return false;
      }
    }
  return true;
}

// A hand-made trace's op at `enter`, of 5 ns, with its links: its index in the rank's ops.
uint32_t add_hand_op(Trace& t, int rank, uint64_t enter, uint8_t call, OpKind kind, uint32_t site,
                     const std::vector<Link>& links) {
  return append_op(t, rank, enter, enter + 5, call, kind, site, links);
}

// A hand-made trace's message on communicator 0, its ops to be set: its id.
uint32_t add_hand_message(Trace& t, int src, int dst, uint64_t bytes) {
  Message m;
  m.src = src, m.dst = dst, m.bytes = bytes, m.comm = 0, m.tag = 1;
  t.messages.push_back(m);
  return static_cast<uint32_t>(t.messages.size() - 1);
}

// Halo exchanges found from the streams over all check_stream_waits' calls
uint64_t halos_compared = 0;

// The halo exchanges found reading each rank's stream are the trace's, field for field, the trace's ops let go.
void require_same_halos(const Trace& t, const std::vector<OpStream>& streams) {
  const std::vector<HaloExchange> want = find_halos(t), got = find_halos(bare_of(t), streams);
  REQUIRE(got.size() == want.size());
  for (size_t k = 0; k < want.size(); k++) {
    INFO("halo " << k);
    const HaloExchange &a = want[k], &b = got[k];
    REQUIRE(std::tie(a.ranks, a.neighbours_min, a.neighbours_max, a.bytes_max, a.exchanges, a.send_sites, a.recv_sites) ==
            std::tie(b.ranks, b.neighbours_min, b.neighbours_max, b.bytes_max, b.exchanges, b.send_sites, b.recv_sites));
  }
  halos_compared += want.size();
}

// Messages' sides and repeated calls' sites compared over all check_stream_waits' calls
struct SidesCompared {
  uint64_t sides = 0, received = 0, repeated = 0;
};
SidesCompared sides_compared;

// Every message's posts read from the streams, each rank's alone, are the trace's: its send's and its
// receive's, at the op's call, call site and kind, with the message's fields and whether the trace matched
// it; and so are the sites of repeated calls they make (the trace's ops and messages let go).
void require_same_sides(const Trace& t, const std::vector<OpStream>& streams) {
  using Side = std::tuple<uint32_t, bool, int, uint32_t, uint8_t, OpKind, bool, int, int, uint32_t, int32_t, uint64_t,
                          bool, bool, bool>;
  auto sides_of = [](const MessageSides& from) {
    std::vector<Side> out;
    from.each([&](const MessageSide& x) {
      const Message& m = *x.fields;
      out.emplace_back(x.id, x.send, x.rank, x.callsite, x.call, x.kind, x.matched, m.src, m.dst, uint32_t{m.comm}, m.tag,
                       m.bytes, m.synchronous, m.resent, m.cached);
    });
    std::sort(out.begin(), out.end());
    return out;
  };
  const std::vector<Side> want = sides_of(MessageSides(t)), got = sides_of(MessageSides(streams));
  REQUIRE(got.size() == want.size());
  for (size_t k = 0; k < want.size(); k++) {
    INFO("side " << k << ": message " << std::get<0>(want[k]) << (std::get<1>(want[k]) ? ", its send" : ", its receive"));
    REQUIRE(got[k] == want[k]);
  }
  sides_compared.sides += want.size();
  sides_compared.received += std::count_if(want.begin(), want.end(), [](const Side& x) { return !std::get<1>(x) && std::get<6>(x); });
  const std::vector<RepeatedCalls> a = repeated_calls(t), b = repeated_calls(bare_of(t), MessageSides(streams));
  REQUIRE(a.size() == b.size());
  for (size_t k = 0; k < a.size(); k++)
    REQUIRE(std::tie(a[k].site, a[k].members, a[k].call, a[k].calls, a[k].identical) ==
            std::tie(b[k].site, b[k].members, b[k].call, b[k].calls, b[k].identical));
  sides_compared.repeated += a.size();
}

// Receives compared from the streams over all require_same_receive_side's calls: every matched one, those
// posted before their message arrived, and the ranks whose queue of unexpected messages and of outstanding
// sends grew
struct ReceiveSideCompared {
  uint64_t receives = 0, posted_early = 0, unexpected = 0, outstanding = 0;
};
ReceiveSideCompared receive_side_compared;

// The receive side from the streams, walked by entry, is the trace's, rank for rank and bit for bit (the
// streams' reader asks nothing of the trace); held: what the walk held at most.
void require_same_receive_side(const Trace& t, const std::vector<OpStream>& streams, const LogGPS& model,
                               ReceiveSideHeld* held = nullptr) {
  const ReceiveSide a = receive_side(t, model), b = receive_side(streams, model, held);
  REQUIRE(std::tie(a.start_ns, a.step_ns, a.receives, a.posted_early) == std::tie(b.start_ns, b.step_ns, b.receives, b.posted_early));
  REQUIRE(a.ranks.size() == b.ranks.size());
  for (size_t r = 0; r < a.ranks.size(); r++) {
    INFO("rank " << r);
    const ReceiveSide::Rank &x = a.ranks[r], &y = b.ranks[r];
    REQUIRE(std::tie(x.rank, x.receives, x.posted_early, x.unexpected_max, x.unexpected_max_bytes, x.outstanding_sends_max) ==
            std::tie(y.rank, y.receives, y.posted_early, y.unexpected_max, y.unexpected_max_bytes, y.outstanding_sends_max));
    // the sums over time, made in the same order: equal to the bit
    REQUIRE(std::tie(x.unexpected_mean, x.unexpected_by_step, x.unexpected_peak_ns) ==
            std::tie(y.unexpected_mean, y.unexpected_by_step, y.unexpected_peak_ns));
    receive_side_compared.unexpected += x.unexpected_max > 0;
    receive_side_compared.outstanding += x.outstanding_sends_max > 0;
  }
  receive_side_compared.receives += a.receives;
  receive_side_compared.posted_early += a.posted_early;
}

// Advice compared, by kind (AdviceKind's order), over all require_same_advice's calls
std::array<uint64_t, 5> advice_compared{};

// The advice from the op streams (packed in frames of 256 bytes, the replays walking them too) is the
// trace's, change for change with its figures, the trace's ops, links and messages let go: at an S that
// makes some sends rendezvous, with a persistent request's saving priced so that repeated calls are
// proposed too.
std::vector<Advice> require_same_advice(const Trace& t) {
  LogGPSParams p;
  p.s = p.S = 4096;
  p.persistent_saving = 200;
  ReplayOptions base;
  base.params = p;
  const LogGPS model(p);
  const RunFacts facts;
  const WaitStates waits = measure_waits(t, find_waits(t, model));
  const ReplayResult baseline = replay(t, base);
  const std::vector<Advice> want = advise({t, facts, waits, base, baseline, 10});
  const auto streams = std::make_shared<const std::vector<OpStream>>(OpStream::encode_all(t, 256));
  const Trace bare = bare_of(t);
  ReplayOptions from = base;
  from.streams = streams;
  const WaitStates waits_from = measure_waits(*streams, find_waits(*streams, model));
  const ReplayResult baseline_from = replay(bare, from);
  const std::vector<Advice> got = advise({bare, facts, waits_from, from, baseline_from, 10});
  REQUIRE(got.size() == want.size());
  for (size_t k = 0; k < want.size(); k++) {
    INFO("advice " << k << ": " << advice_kind_name(want[k].kind()));
    const Advice &a = want[k], &b = got[k];
    REQUIRE(std::tie(a.site, a.members, a.call, a.messages, a.baseline_ns, a.predicted_ns, a.worthwhile) ==
            std::tie(b.site, b.members, b.call, b.messages, b.baseline_ns, b.predicted_ns, b.worthwhile));
    REQUIRE(a.change.index() == b.change.index());
    if (const auto* x = std::get_if<RaiseEagerLimit>(&a.change)) {
      const auto& y = std::get<RaiseEagerLimit>(b.change);
      REQUIRE(std::tie(x->value, x->S, x->messages_made_eager, x->send_sites, x->senders_per_rank, x->caution) ==
              std::tie(y.value, y.S, y.messages_made_eager, y.send_sites, y.senders_per_rank, y.caution));
    } else if (const auto* x = std::get_if<SplitMessages>(&a.change)) {
      const auto& y = std::get<SplitMessages>(b.change);
      REQUIRE(std::tie(x->chunk_bytes, x->extra_messages) == std::tie(y.chunk_bytes, y.extra_messages));
    } else if (const auto* x = std::get_if<PrepostReceives>(&a.change)) {
      REQUIRE(x->buffer_bytes == std::get<PrepostReceives>(b.change).buffer_bytes);
    } else if (const auto* x = std::get_if<PersistentRequests>(&a.change)) {
      REQUIRE(x->identical_calls == std::get<PersistentRequests>(b.change).identical_calls);
    }
    advice_compared[static_cast<size_t>(a.kind())]++;
  }
  return want;
}

// The waits found walking the streams by entry (packed or not) are the trace's, wait for wait and in its
// order, at an eager limit S that makes some sends rendezvous, none and all, and so are their sums by
// site and the run's computations; returns how many waits were compared, and the most messages the walk
// held at once, in held.
size_t check_stream_waits(const Trace& t, WaitsHeld* held = nullptr) {
  const std::vector<OpStream> streams = OpStream::encode_all(t), packed = OpStream::encode_all(t, 256);
  size_t compared = 0;
  for (uint64_t S : {uint64_t{0}, uint64_t{4096}, UINT64_MAX}) {
    INFO("S " << S);
    LogGPSParams p;
    p.s = p.S = S;
    const LogGPS model(p);
    const std::vector<Wait> want = find_waits(t, model);
    // the analysis's sums, each wait added as found, none held: the sums of the waits found
    require_same_states(measure_waits(t, model), measure_waits(t, want));
    for (const auto* from : {&streams, &packed}) {
      INFO((from == &packed ? "packed" : "unpacked"));
      WaitsHeld h;
      const std::vector<Wait> got = find_waits(*from, model, &h);
      REQUIRE(got.size() == want.size());
      for (size_t k = 0; k < want.size(); k++) {
        INFO("wait " << k);
        const Wait &a = want[k], &b = got[k];
        REQUIRE(std::make_tuple(static_cast<int>(a.rank), a.op, a.from, a.to, static_cast<int>(a.culprit), a.culprit_op, static_cast<int>(a.size_bits), a.cause) ==
                std::make_tuple(static_cast<int>(b.rank), b.op, b.from, b.to, static_cast<int>(b.culprit), b.culprit_op, static_cast<int>(b.size_bits), b.cause));
        // its start is its op's entry
        REQUIRE(a.from == static_cast<double>(t.op(a.rank, a.op).t_enter));
      }
      require_same_states(measure_waits(t, want), measure_waits(*from, got));
      if (posts_own_sides(t) && completes_own_sides(t)) require_same_receive_side(t, *from, model);
      if (S == 4096 && posts_own_sides(t)) require_same_halos(t, *from), require_same_sides(t, *from);
      if (S == 4096 && from == &packed && posts_own_sides(t) && completes_own_sides(t)) require_same_hang_state(t);
      if (S == 4096) {
        require_same_causes(t, *from, want);
        require_same_hot_spots(t, *from, measure_waits(t, want));
        if (completes_own_sides(t)) require_same_hot_spots(t, *from, every_site(t));
      }
      if (held) *held = h;
      compared += got.size();
    }
  }
  const std::vector<CriticalPath::Part> want = computations(t);
  for (const auto* from : {&streams, &packed}) {
    const std::vector<CriticalPath::Part> got = computations(*from);
    REQUIRE(got.size() == want.size());
    for (size_t k = 0; k < want.size(); k++) {
      const CriticalPath::Part &a = want[k], &b = got[k];
      REQUIRE(std::make_tuple(a.where.rank, a.where.callsite, a.where.call, a.computation, a.ns, a.times) ==
              std::make_tuple(b.where.rank, b.where.callsite, b.where.call, b.computation, b.ns, b.times));
    }
  }
  return compared;
}

// Every rank's stream gives back its ops as the trace holds them, each message's fields once, in the
// stream of the op that posted it (its send; its receive where no send matched), and each collective
// instance's members in their own ops at their places, each naming the whole instance; the ops compared.
uint64_t check_streams(const Trace& t) {
  uint64_t compared = 0;
  StreamOp got;
  std::vector<int> posted(t.messages.size()), received(t.messages.size());
  std::vector<int> sent_by(t.messages.size(), -1);  // as the streams' posts say
  const std::vector<int32_t> together = receives_together(t);
  uint32_t message_ids = 0;
  // the instances' members as the streams give them: each (rank, op) by its place
  struct Rebuilt {
    std::vector<std::pair<int, uint32_t>> members;
    std::vector<int> seen;
  };
  std::vector<Rebuilt> rebuilt(t.collectives.size());
  for (size_t c = 0; c < t.collectives.size(); c++) {
    const size_t n = t.collectives.members_of(c);
    rebuilt[c].members.resize(n), rebuilt[c].seen.resize(n);
  }
  for (int r = 0; r < static_cast<int>(t.ranks.size()); r++) {
    const OpStream s = OpStream::encode(t, r);
    const std::vector<Op>& ops = t.ranks[r].ops;
    REQUIRE(s.ops() == ops.size());
    // packed in frames of 256 bytes or more: many on a rank of more than a few dozen ops
    OpStream packed = s;
    packed.pack(256);
    CHECK(packed.data().empty());
    CHECK(packed.frames() <= (s.data().size() + 255) / 256);
    CHECK(packed.frames() > (s.data().size() > 4096 ? 1u : 0u));
    OpCursor c(s), unpacking(packed);
    StreamOp also;
    for (size_t i = 0; i < ops.size(); i++) {
      INFO("rank " << r << ", op " << i << " of " << ops.size());
      REQUIRE(c.next(got));
      REQUIRE(unpacking.next(also));
      require_same_op(got, also);
      const Op& op = ops[i];
      CHECK(got.t_enter == op.t_enter);
      CHECK(got.duration == op.duration);
      CHECK(got.callsite == op.callsite);
      CHECK(got.call == op.call);
      CHECK(got.kind == op.kind);
      CHECK(got.unfinished == op.unfinished);
      const OpLinks links = t.links_of(op);
      REQUIRE(got.links().size() == links.size());
      for (uint32_t k = 0; k < links.size(); k++) CHECK(got.links()[k] == links[k]);
      for (const StreamOp::Posted& p : got.posted) {
        REQUIRE(p.id < t.messages.size());
        const Message& m = t.messages[p.id];
        // its owner's op: the sender's, or the receiver's where there is no send
        const bool owner = m.send_op == kNone ? m.recv_op == i && m.dst == r : m.send_op == i && m.src == r;
        CHECK(owner);
        const Message& f = p.m->fields;
        CHECK(std::tie(f.src, f.dst, f.tag, f.bytes) == std::tie(m.src, m.dst, m.tag, m.bytes));
        CHECK((f.comm == m.comm && f.synchronous == m.synchronous && f.resent == m.resent && f.cached == m.cached));
        // what the simulation asks of its other side before it reaches it
        CHECK(p.m->sent == (m.send_op != kNone));
        CHECK(p.m->answered == (m.send_op != kNone && m.recv_op != kNone));
        CHECK(p.m->together == (together.empty() ? 1 : together[p.id]));
        if (p.m->sent) sent_by[p.id] = r;
        posted[p.id]++;
      }
      // a receive some send matched carries the sender's fields at the receiver's op that posted it
      for (const StreamOp::Posted& p : got.received) {
        REQUIRE(p.id < t.messages.size());
        const Message& m = t.messages[p.id];
        CHECK((m.send_op != kNone && m.dst == r && m.recv_op == i));
        const Message& f = p.m->fields;
        CHECK(std::tie(f.src, f.dst, f.tag, f.bytes) == std::tie(m.src, m.dst, m.tag, m.bytes));
        CHECK((f.comm == m.comm && f.synchronous == m.synchronous && f.resent == m.resent && f.cached == m.cached));
        CHECK((p.m->sent && p.m->answered));
        CHECK(p.m->together == (together.empty() ? 1 : together[p.id]));
        received[p.id]++;
      }
      // an owner's completions carry its entry again: a send of the rank's, a receive no send matched; in
      // the order of their links (what the causes' reader matches them by)
      std::vector<uint32_t> owned_done, done_colls;
      for (uint32_t k = 0; k < links.size(); k++) {
        if (links[k].kind == Link::DoneColl && links[k].id < t.collectives.size()) done_colls.push_back(links[k].id);
        if (links[k].id >= t.messages.size()) continue;
        const Message& m = t.messages[links[k].id];
        if ((links[k].kind == Link::DoneSend && m.src == r && m.send_op != kNone) ||
            (links[k].kind == Link::DoneRecv && m.send_op == kNone && m.dst == r))
          owned_done.push_back(links[k].id);
      }
      REQUIRE(got.completed.size() == owned_done.size());
      for (size_t k = 0; k < owned_done.size(); k++) CHECK(got.completed[k].id == owned_done[k]);
      REQUIRE(got.left.size() == done_colls.size());
      for (size_t k = 0; k < done_colls.size(); k++) CHECK(got.left[k].instance == done_colls[k]);
      for (const StreamOp::Posted& p : got.completed) {
        REQUIRE(p.id < t.messages.size());
        const Message& m = t.messages[p.id];
        CHECK((m.send_op == kNone ? m.dst == r : m.src == r));
        const Message& f = p.m->fields;
        CHECK(std::tie(f.src, f.dst, f.tag, f.bytes, f.comm) == std::tie(m.src, m.dst, m.tag, m.bytes, m.comm));
        CHECK(p.m->sent == (m.send_op != kNone));
      }
      for (const StreamOp::Joined& j : got.left) {
        REQUIRE(j.instance < t.collectives.size());
        const CollectiveInstance want = t.collectives[j.instance];
        REQUIRE(j.k < want.members.size());
        CHECK(want.members[j.k].first == r);
        CHECK(j.fields->members.size() == want.members.size());
      }
      for (const StreamOp::Joined& j : got.joined) {
        REQUIRE(j.instance < rebuilt.size());
        {
          // the whole instance, as every member's entry names it: the trace's, but its members' ops
          REQUIRE(j.fields != nullptr);
          const CollectiveInstance want = t.collectives[j.instance], named = j.fields->view();
          CHECK(std::tie(named.call, named.comm, named.root, named.bytes, named.sent, named.received) ==
                std::tie(want.call, want.comm, want.root, want.bytes, want.sent, want.received));
          CHECK(std::ranges::equal(named.each, want.each));
          REQUIRE(named.members.size() == want.members.size());
          for (size_t k = 0; k < want.members.size(); k++)  // (clang 14 cannot take std::views::keys of a span)
            CHECK(named.members[k] == std::pair<int, uint32_t>{want.members[k].first, kNone});
          CHECK(s.instance_ids() > j.instance);
          // the call site the replay asks about: its first member's op's
          CHECK(j.fields->head_site == t.op(want.members.front().first, want.members.front().second).callsite);
        }
        Rebuilt& b = rebuilt[j.instance];
        REQUIRE(j.k < b.members.size());
        b.members[j.k] = {r, static_cast<uint32_t>(i)};
        b.seen[j.k]++;
      }
      compared++;
    }
    StreamOp after = got;
    CHECK_FALSE(c.next(got));  // the end, and the op left as it was
    CHECK_FALSE(unpacking.next(also));
    CHECK(got.t_enter == after.t_enter);
    // the runs of its sends' ids name each message it sent, once
    for (const auto& [first, end] : s.sent()) {
      REQUIRE(first < end);
      for (uint32_t id = first; id < end; id++) {
        REQUIRE(id < t.messages.size());
        CHECK(sent_by[id] == r);
        sent_by[id] = -2;
      }
    }
    message_ids = std::max(message_ids, s.message_ids());
  }
  CHECK(std::count(sent_by.begin(), sent_by.end(), -2) ==
        std::count_if(t.messages.begin(), t.messages.end(), [](const Message& m) { return m.send_op != kNone; }));
  // the highest id of a message a link names, over the streams: the trace's last message where a link
  // names it (not an id beyond its messages: a table by id of the messages would hold up to 2^32 entries)
  uint32_t named = 0;
  for (const RankTrace& rank : t.ranks)
    for (const Op& op : rank.ops) {
      const OpLinks links = t.links_of(op);
      for (uint32_t k = 0; k < links.size(); k++)
        if (links[k].kind != Link::PostColl && links[k].kind != Link::DoneColl && links[k].id < t.messages.size())
          named = std::max(named, links[k].id + 1);
    }
  CHECK(message_ids == named);
  // each matched message's receive once, where its receiver's op posted it (a hand-made trace may post it
  // from another rank's op: none there)
  const bool own_sides = posts_own_sides(t);
  for (size_t id = 0; id < t.messages.size(); id++) {
    INFO("message " << id << ": send op " << t.messages[id].send_op << ", receive op " << t.messages[id].recv_op);
    CHECK(posted[id] == 1);
    if (own_sides) CHECK(received[id] == int{t.messages[id].matched()});
    else CHECK(received[id] <= 1);
  }
  for (size_t c = 0; c < t.collectives.size(); c++) {
    INFO("collective instance " << c);
    const CollectiveInstance want = t.collectives[c];
    const Rebuilt& b = rebuilt[c];
    CHECK(std::count(b.seen.begin(), b.seen.end(), 1) == static_cast<long>(b.seen.size()));  // each member once
    // at its own place: the op the trace lists there
    CHECK(std::ranges::equal(b.members, want.members));
  }
  check_stream_waits(t);
  return compared;
}

// mpiadvise-synth's logs of a pattern, `ranks` x `events`, in a fresh directory
fs::path synth(const std::string& pattern, int ranks, int events, const std::string& more = "") {
  const fs::path dir = fresh_dir("op-stream-" + pattern + more);
  auto r = run_command(fmt::format("'{}' --ranks {} --events {} --pattern {} {} -o '{}'",
                                   (build_dir() / "bin" / "mpiadvise-synth").string(), ranks, events, pattern, more,
                                   dir.string()));
  INFO(r.err);
  REQUIRE(r.status == 0);
  return dir;
}

bool same(const Breakdown& a, const Breakdown& b) {
  return same_bits(a.computation, b.computation) && same_bits(a.send_overhead, b.send_overhead) &&
         same_bits(a.recv_overhead, b.recv_overhead) && same_bits(a.send_wait, b.send_wait) &&
         same_bits(a.recv_wait, b.recv_wait) && same_bits(a.synchronisation, b.synchronisation) &&
         same_bits(a.collectives, b.collectives) && same_bits(a.other, b.other);
}

// Every figure of two replays' results the same, bit for bit: the ranks', the sites', the counts, the
// stalls, the phases' marks, the spans and what the simulation held (held: false, a spread replay's, the
// most any process held).
void require_same(const ReplayResult& a, const ReplayResult& b, bool held = true) {
  CHECK(same_bits(a.predicted_ns, b.predicted_ns));
  CHECK(same_bits(a.measured_ns, b.measured_ns));
  CHECK(a.origin_ns == b.origin_ns);
  REQUIRE(a.ranks.size() == b.ranks.size());
  for (size_t r = 0; r < a.ranks.size(); r++) {
    INFO("rank " << r);
    CHECK(a.ranks[r].rank == b.ranks[r].rank);
    CHECK(same_bits(a.ranks[r].predicted_ns, b.ranks[r].predicted_ns));
    CHECK(same_bits(a.ranks[r].measured_ns, b.ranks[r].measured_ns));
    CHECK(same(a.ranks[r].predicted, b.ranks[r].predicted));
  }
  REQUIRE(a.sites.size() == b.sites.size());
  for (size_t k = 0; k < a.sites.size(); k++) {
    INFO("site " << k);
    CHECK(std::tie(a.sites[k].rank, a.sites[k].callsite, a.sites[k].call, a.sites[k].calls) ==
          std::tie(b.sites[k].rank, b.sites[k].callsite, b.sites[k].call, b.sites[k].calls));
    CHECK(same(a.sites[k].predicted, b.sites[k].predicted));
  }
  CHECK(std::tie(a.rendezvous_messages, a.rendezvous_bytes, a.split_messages, a.unresolved_ops) ==
        std::tie(b.rendezvous_messages, b.rendezvous_bytes, b.split_messages, b.unresolved_ops));
  CHECK(std::tie(a.collectives_by_algorithm, a.collectives_approximate, a.collectives_closed_formula,
                 a.collective_messages, a.collective_rendezvous_messages) ==
        std::tie(b.collectives_by_algorithm, b.collectives_approximate, b.collectives_closed_formula,
                 b.collective_messages, b.collective_rendezvous_messages));
  CHECK(a.collective_algorithms == b.collective_algorithms);
  CHECK(a.collective_approximations == b.collective_approximations);
  REQUIRE(a.stalls.size() == b.stalls.size());
  for (size_t k = 0; k < a.stalls.size(); k++) {
    CHECK(a.stalls[k].released == b.stalls[k].released);
    REQUIRE(a.stalls[k].ranks.size() == b.stalls[k].ranks.size());
    for (size_t q = 0; q < a.stalls[k].ranks.size(); q++)
      CHECK((a.stalls[k].ranks[q].rank == b.stalls[k].ranks[q].rank && a.stalls[k].ranks[q].op == b.stalls[k].ranks[q].op &&
             same_bits(a.stalls[k].ranks[q].at_ns, b.stalls[k].ranks[q].at_ns)));
  }
  CHECK(a.marks == b.marks);
  REQUIRE(a.spans.size() == b.spans.size());
  for (size_t r = 0; r < a.spans.size(); r++) {
    REQUIRE(a.spans[r].size() == b.spans[r].size());
    for (size_t i = 0; i < a.spans[r].size(); i++)
      if (!same_bits(a.spans[r][i].enter, b.spans[r][i].enter) || !same_bits(a.spans[r][i].exit, b.spans[r][i].exit))
        FAIL_CHECK("rank " << r << ", op " << i << ": span " << a.spans[r][i].enter << ".." << a.spans[r][i].exit
                           << " where the other replay's is " << b.spans[r][i].enter << ".." << b.spans[r][i].exit);
  }
  if (held)
    CHECK(std::tie(a.messages_held, a.collectives_held, a.schedule_steps_held, a.schedule_cache_clears) ==
          std::tie(b.messages_held, b.collectives_held, b.schedule_steps_held, b.schedule_cache_clears));
}

// The processes of a spread replay as threads of this one (ReplayOptions::peers): each exchange and
// allgather meets the others at a barrier, where the command's MPI processes meet in their collectives
// (cli/mpi_peers.cpp); what a process tells another reaches it in the order told.
class ThreadPeers final : public ReplayPeers {
 public:
  struct Shared {
    explicit Shared(int k) : k(k), sync(k), box(k, std::vector<std::vector<PeerUpdate>>(k)), counts(k), parts(k) {}
    const int k;
    std::barrier<> sync;
    std::vector<std::vector<std::vector<PeerUpdate>>> box;  // [to][from]: a round's updates
    std::vector<uint64_t> counts;                           // by process: the updates it told in the round
    std::vector<std::vector<uint8_t>> parts;                // allgather's
  };
  ThreadPeers(Shared& s, int me) : s_(s), me_(me) {}
  int size() const override { return s_.k; }
  int index() const override { return me_; }
  int on_node() const override { return s_.k; }
  uint64_t exchange(std::vector<std::vector<PeerUpdate>>& out, std::vector<PeerUpdate>& in) override {
    uint64_t told = 0;
    for (int p = 0; p < s_.k; p++) {
      told += out[p].size();
      s_.box[p][me_] = std::move(out[p]);
      out[p].clear();
    }
    s_.counts[me_] = told;
    s_.sync.arrive_and_wait();
    uint64_t all = 0;
    for (uint64_t n : s_.counts) all += n;
    for (const auto& part : s_.box[me_]) in.insert(in.end(), part.begin(), part.end());
    s_.sync.arrive_and_wait();  // every process has read its box before the next round fills it
    return all;
  }
  std::vector<std::vector<uint8_t>> allgather(const std::vector<uint8_t>& mine) override {
    s_.parts[me_] = mine;
    s_.sync.arrive_and_wait();
    std::vector<std::vector<uint8_t>> all = s_.parts;
    s_.sync.arrive_and_wait();
    return all;
  }

 private:
  Shared& s_;
  int me_;
};

// The measured intervals found on the streams are the trace's: each rank's, instance for instance, and
// their intervals' statistics.
void require_same_intervals(const SteadyIntervals& want, const SteadyIntervals& got) {
  REQUIRE(std::tie(want.measured, want.repeated, want.replaced) == std::tie(got.measured, got.repeated, got.replaced));
  REQUIRE(want.ranks.size() == got.ranks.size());
  for (size_t r = 0; r < want.ranks.size(); r++) {
    INFO("rank " << r);
    REQUIRE(want.ranks[r].size() == got.ranks[r].size());
    for (size_t k = 0; k < want.ranks[r].size(); k++) {
      const MeasuredInterval &a = want.ranks[r][k], &b = got.ranks[r][k];
      REQUIRE(std::make_tuple(a.op, uint32_t{a.interval}, uint32_t{a.duration}, uint32_t{a.replaced}) ==
              std::make_tuple(b.op, uint32_t{b.interval}, uint32_t{b.duration}, uint32_t{b.replaced}));
    }
    REQUIRE(want.stats[r].size() == got.stats[r].size());
    for (size_t i = 0; i < want.stats[r].size(); i++) {
      const IntervalStats &a = want.stats[r][i], &b = got.stats[r][i];
      REQUIRE(std::tie(a.median_ns, a.noise_ns, a.repeated) == std::tie(b.median_ns, b.noise_ns, b.repeated));
    }
  }
}

// t replayed under o spread over k processes, threads here: each gives the whole result (the first's).
// A process that throws ends the test where the others would wait for it forever.
ReplayResult spread_replay(const Trace& t, const ReplayOptions& o, int k) {
  ThreadPeers::Shared shared(k);
  std::vector<ReplayResult> results(static_cast<size_t>(k));
  std::vector<std::thread> processes;
  for (int p = 0; p < k; p++)
    processes.emplace_back([&, p] {
      ThreadPeers peers(shared, p);
      ReplayOptions mine = o;
      mine.peers = &peers;
      try {
        results[static_cast<size_t>(p)] = replay(t, mine);
      } catch (const std::exception& e) {
        std::fprintf(stderr, "spread replay, process %d of %d: %s\n", p, k, e.what());
        std::abort();
      }
    });
  for (std::thread& p : processes) p.join();
  for (int p = 1; p < k; p++) require_same(results[0], results[static_cast<size_t>(p)], false);
  CHECK(results[0].processes == k);
  return results[0];
}

// t with its messages numbered in a shuffled order instead of by sender (build_trace's): each stream's
// sends are then runs of one id or a few (OpStream::sent), which the replay reads to find a matched
// receive's sender.
Trace renumbered(const Trace& t, unsigned seed) {
  Trace u = t;
  std::vector<uint32_t> to(t.messages.size());
  std::iota(to.begin(), to.end(), 0u);
  std::shuffle(to.begin(), to.end(), std::mt19937(seed));
  for (size_t id = 0; id < t.messages.size(); id++) u.messages[to[id]] = t.messages[id];
  auto message = [](uint8_t kind) { return kind <= Link::DoneRecv; };
  for (RankTrace& rank : u.ranks)
    for (Op& op : rank.ops) {
      if (op.inline_link) {
        if (message(static_cast<uint8_t>(op.inline_link - 1)) && op.first_link != kNone) op.first_link = to[op.first_link];
        continue;
      }
      const OpLinks links = u.links_of(op);
      for (uint32_t k = 0; k < links.size(); k++)
        if (message(links[k].kind) && links[k].id != kNone) u.links.set_id(op.first_link + k, to[links[k].id]);
    }
  if (u.receives_together && !u.receives_together->empty()) u.receives_together = receives_together(u);
  return u;
}

// The efficiency factors of two ways of reading the run, bit for bit, phase for phase.
void require_same(const Efficiency& a, const Efficiency& b) {
  auto factors = [](const EfficiencyFactors& f) {
    return std::make_tuple(f.load_balance, f.communication, f.parallel, f.transfer, f.serialisation, f.run_ns, f.model_ns,
                           f.ideal_ns, f.mean_computation_ns, f.max_computation_ns);
  };
  CHECK(factors(a) == factors(b));
  CHECK(std::tie(a.phases_from, a.iterations, a.phases_note, a.slowest_rank, a.computation_ns) ==
        std::tie(b.phases_from, b.iterations, b.phases_note, b.slowest_rank, b.computation_ns));
  REQUIRE(a.phases.size() == b.phases.size());
  for (size_t k = 0; k < a.phases.size(); k++) {
    INFO("phase " << k);
    const Efficiency::Phase &x = a.phases[k], &y = b.phases[k];
    CHECK(std::tie(x.run_ns, x.model_ns, x.ideal_ns, x.mean_computation_ns, x.max_computation_ns, x.opened_by_rank0_op) ==
          std::tie(y.run_ns, y.model_ns, y.ideal_ns, y.mean_computation_ns, y.max_computation_ns, y.opened_by_rank0_op));
  }
}

// Phases whose efficiency factors check_streamed_replays compared, over all its calls, and ranks whose
// phases open at a call's entry among them.
size_t phases_compared = 0, at_entry_compared = 0;

// The simulation of t under o, and under o walking t's op streams, figure for figure; under every
// transformation, with the ops' times retimed, the phases marked and every span recorded. Returns the
// replays compared.
int check_streamed_replays(const Trace& t, ReplayOptions o) {
  auto streams = std::make_shared<std::vector<OpStream>>(OpStream::encode_all(t));
  // packed in frames of 512 bytes or more, a few a rank
  auto packed = std::make_shared<std::vector<OpStream>>(OpStream::encode_all(t, 512));
  for (size_t r = 0; r < packed->size(); r++) {  // a frame or more a rank of ops, two or more where it has 8 KiB
    const size_t n = (*streams)[r].data().size();
    REQUIRE((*packed)[r].data().empty());
    CHECK((*packed)[r].frames() >= (n >= 8192 ? 2u : n ? 1u : 0u));
  }
  // the transformations' sites: every call site of rank 0, one of every rank, and the sites of the
  // collectives' first members (the replay splits an instance where its first member's site is chosen)
  std::set<SiteKey> rank0, one_each, first_members, last_two;  // last_two: each rank's last two ops' sites
  for (int r = 0; r < static_cast<int>(t.ranks.size()); r++)
    for (size_t i = 0; i < t.ranks[r].ops.size(); i++) {
      if (r == 0) rank0.insert(t.site(r, t.ranks[r].ops[i].callsite));
      if (i == t.ranks[r].ops.size() / 2) one_each.insert(t.site(r, t.ranks[r].ops[i].callsite));
      if (i + 2 >= t.ranks[r].ops.size()) last_two.insert(t.site(r, t.ranks[r].ops[i].callsite));
    }
  for (const CollectiveInstance c : t.collectives)
    first_members.insert(t.site(c.members.front().first, t.op(c.members.front().first, c.members.front().second).callsite));
  const SteadyIntervals steady = steady_intervals(t);
  const RetimingDraw draw{RetimingDraw::Noisy, 7, 0.03, 250};
  const Trace bare = bare_of(t);
  int compared = 0;
  for (int variant = 0; variant < 12; variant++) {
    ReplayOptions v = o;
    switch (variant) {
      case 1: v.split_everywhere = true, v.params.S = std::min<double>(v.params.S, 512); break;
      case 2: v.nonblocking_everywhere = true; break;
      case 3: v.prepost_everywhere = true; break;
      case 4: v.persistent_sites = rank0, v.params.persistent_saving = 40; break;
      case 5: v.compute_factor = 0.5, v.compute_ranks = {0, 2}, v.compute_sites = one_each; break;
      case 6: v.model = ModelKind::LogGP, v.split_sites = one_each, v.nonblocking_sites = rank0; break;
      case 7:
        v.marks = std::make_shared<const PhaseMarks>(phase_marks(t));
        v.record_spans = true;
        break;
      case 8:
        v.record_spans = true;
        for (const RankTrace& rank : t.ranks) v.span_ops.push_back(static_cast<uint32_t>(rank.ops.size() / 3));
        break;
      case 9:
        if (steady.measured == 0) continue;  // no steady intervals to retime
        v.retiming = std::make_shared<const Retiming>(t, steady, draw);
        v.prepost_sites = one_each;
        break;
      case 10:
        if (first_members.empty()) continue;
        v.split_sites = first_members, v.params.S = std::min<double>(v.params.S, 512);
        break;
      case 11:  // the computation before the last op replayed, and the tail's (before MPI_Finalize, or after the last op)
        v.compute_factor = 0.25, v.compute_sites = last_two;
        break;
      default: break;
    }
    INFO("variant " << variant);
    const ReplayResult from_trace = replay(t, v);
    v.streams = streams;
    const ReplayResult from_streams = replay(t, v);
    require_same(from_trace, from_streams);
    if (v.marks && v.mode == ReplayMode::Simulate) {
      // the factors and their phases from the streams (the ideal replay and the phases' walk), the trace's
      // ops let go
      INFO("the efficiency factors");
      // the phases' marks from the streams, one rank's ops read at a time
      for (const auto& s : {streams, packed}) {
        const PhaseMarks m = phase_marks(*s), &want = *v.marks;
        REQUIRE(std::tie(m.source, m.opens, m.at_entry, m.iterations, m.rank0_names, m.note) ==
                std::tie(want.source, want.opens, want.at_entry, want.iterations, want.rank0_names, want.note));
      }
      ReplayOptions of_trace = v;
      of_trace.streams = nullptr;
      const Efficiency want = efficiency(t, of_trace, from_trace, *v.marks);
      for (const auto& s : {streams, packed}) {
        v.streams = s;
        require_same(want, efficiency(bare, v, from_trace, *v.marks));
      }
      v.streams = streams;
      phases_compared += want.phases.size();
      at_entry_compared += static_cast<size_t>(std::count(v.marks->at_entry.begin(), v.marks->at_entry.end(), true));
    }
    {
      INFO("the streams packed");
      v.streams = packed;
      require_same(from_trace, replay(t, v));
      if (!v.retiming) require_same(from_trace, replay(bare, v));
      v.streams = streams;
    }
    // Spread, one way a variant, the three in turn: a spread replay here takes about two rounds an event,
    // each round two meetings of its threads, and three for every variant took most of the suite's time
    // under the sanitizers (420 spread replays, 4.7 M rounds for the patterns' section alone).
    const int spread_way = v.retiming ? 1 : variant % 3;
    if (spread_way == 0) {
      INFO("the streams packed, spread over 2 processes");  // a cursor on each process's thread
      v.streams = packed;
      require_same(from_trace, spread_replay(t, v, 2), false);
      v.streams = streams;
    } else if (spread_way == 1) {
      INFO("spread over 2 processes");
      require_same(from_trace, spread_replay(t, v, 2), false);
    }
    if (!v.retiming) {  // a retiming of the trace makes its times from the trace's ops
      INFO("the trace without its ops");
      require_same(from_trace, replay(bare, v));
      if (spread_way == 2) {
        INFO("spread over 3 processes");
        require_same(from_trace, spread_replay(bare, v, 3), false);
      }
    } else {
      // the intervals and the retiming from the streams: the trace's ops let go
      for (const auto& s : {streams, packed}) {
        INFO((s == packed ? "retimed from the packed streams" : "retimed from the streams"));
        ReplayOptions w = v;
        w.streams = s;
        const SteadyIntervals from = steady_intervals(*s);
        require_same_intervals(steady, from);
        w.retiming = std::make_shared<const Retiming>(*s, from, draw);
        CHECK(w.retiming->all_values() == v.retiming->all_values());
        require_same(from_trace, replay(bare, w));
        if (s == packed) require_same(from_trace, spread_replay(bare, w, 3), false);
        w.streams = s == packed ? streams : packed;  // streams of the same trace, but not these
        CHECK_THROWS_WITH(replay(bare, w), Catch::Contains("retimes another trace, or other streams"));
      }
    }
    compared++;
  }
  return compared;
}

}  // namespace

TEST_CASE("the gate's figures from the streams are the trace's, the trace's ops let go", "[op_stream][gate]") {
  // traced runs (point to point and collectives of every kind, a rank of several threads, a damaged log),
  // and mpiadvise-synth's patterns, whose loops repeat their intervals (the noisy replays retime them)
  std::vector<fs::path> dirs;
  for (const char* name : {"p2p-all", "coll-all", "threads", "halo-procnull", "halo-damaged"}) dirs.push_back(fixture(name));
  for (const char* pattern : {"halo", "pipeline", "imbalance"}) {
    const fs::path dir = fresh_dir(std::string("op-stream-gate-") + pattern);
    auto r = run_command(fmt::format("'{}' --ranks 4 --events 2000 --pattern {} -o '{}'",
                                     (build_dir() / "bin" / "mpiadvise-synth").string(), pattern, dir.string()));
    INFO(r.err);
    REQUIRE(r.status == 0);
    dirs.push_back(dir);
  }
  uint64_t repeated = 0, messages = 0;
  for (const fs::path& dir : dirs) {
    INFO(dir.filename().string());
    Analysis a = analyse(dir.string(), "");
    const gate::RunFigures f = gate::run_figures(a);
    const std::string want = dump_json(gate::figures_json(f));
    repeated += f.repeated_intervals, messages += f.messages;
    auto streams = std::make_shared<const std::vector<OpStream>>(OpStream::encode_all(a.trace));
    auto packed = std::make_shared<const std::vector<OpStream>>(OpStream::encode_all(a.trace, 256));
    a.trace = bare_of(a.trace);
    CHECK(dump_json(gate::figures_json(gate::run_figures(a, streams))) == want);
    CHECK(dump_json(gate::figures_json(gate::run_figures(a, packed))) == want);
  }
  CHECK(repeated > 0);
  CHECK(messages > 0);
}

TEST_CASE("the report's charts and the model's fit from the streams are the trace's, the trace's ops let go",
          "[op_stream][charts]") {
  // the S sweep (its largest message and collective, its replays), the messages by size and protocol, and
  // the timeline (the first calls of the shown ranks, sought in their streams, their spans replayed and
  // the messages between them), as the report's JSON gives them; traced runs of point to point and
  // collectives of every kind, a rank of several threads, and mpiadvise-synth's halo
  std::vector<fs::path> dirs;
  for (const char* name : {"p2p-all", "coll-all", "threads", "halo-procnull"}) dirs.push_back(fixture(name));
  const fs::path halo = fresh_dir("op-stream-charts-halo");
  auto r = run_command(fmt::format("'{}' --ranks 4 --events 2000 --pattern halo -o '{}'",
                                   (build_dir() / "bin" / "mpiadvise-synth").string(), halo.string()));
  INFO(r.err);
  REQUIRE(r.status == 0);
  dirs.push_back(halo);
  // an allreduce of 256 KiB, no message as large: the S sweep reaches up to its collective's bytes
  const fs::path allreduce = fresh_dir("op-stream-charts-allreduce");
  r = run_command(fmt::format("'{}' --ranks 4 --events 200 --pattern allreduce --bytes 262144 -o '{}'",
                              (build_dir() / "bin" / "mpiadvise-synth").string(), allreduce.string()));
  INFO(r.err);
  REQUIRE(r.status == 0);
  dirs.push_back(allreduce);
  uint64_t calls = 0, messages = 0, sweep_top = 0;  // the sweep's largest S but the advised one
  uint64_t fit_sites = 0, fit_suspects = 0;
  bool truncated = false;
  for (const fs::path& dir : dirs) {
    INFO(dir.filename().string());
    Analysis a = analyse(dir.string(), "");
    ReplayOptions base;
    base.params = a.chosen.params;
    const report::Charts want = report_charts(a, base, uint64_t{1} << 20, std::nullopt);
    const ModelFit fit_want = assess_fit(a.trace, a.facts, base.params, replay(a.trace, base));
    const double resent_want = cached_resend_share(a.trace);
    calls += want.timeline.calls.size(), messages += want.timeline.messages.size();
    truncated |= want.timeline.truncated;
    for (const auto& point : want.s_sweep.points)
      if (point.S != uint64_t{1} << 20) sweep_top = std::max(sweep_top, point.S);  // but the advised S given
    const auto streams = std::make_shared<const std::vector<OpStream>>(OpStream::encode_all(a.trace, 256));
    a.trace = bare_of(a.trace);
    ReplayOptions from = base;
    from.streams = streams;
    const report::Charts got = report_charts(a, from, uint64_t{1} << 20, std::nullopt);
    {
      // the model's fit: where the replay misses the run and what the trace suggests as the reason
      const ModelFit fit = assess_fit(a.trace, *streams, a.facts, from.params, replay(a.trace, from));
      CHECK(std::tie(fit.error, fit.explained) == std::tie(fit_want.error, fit_want.explained));
      REQUIRE(fit.ranks.size() == fit_want.ranks.size());
      for (size_t k = 0; k < fit.ranks.size(); k++)
        CHECK(std::tie(fit.ranks[k].rank, fit.ranks[k].measured_ns, fit.ranks[k].predicted_ns) ==
              std::tie(fit_want.ranks[k].rank, fit_want.ranks[k].measured_ns, fit_want.ranks[k].predicted_ns));
      REQUIRE(fit.sites.size() == fit_want.sites.size());
      for (size_t k = 0; k < fit.sites.size(); k++)
        CHECK(std::tie(fit.sites[k].rank, fit.sites[k].callsite, fit.sites[k].call, fit.sites[k].measured_ns, fit.sites[k].predicted_ns) ==
              std::tie(fit_want.sites[k].rank, fit_want.sites[k].callsite, fit_want.sites[k].call, fit_want.sites[k].measured_ns,
                       fit_want.sites[k].predicted_ns));
      REQUIRE(fit.suspects.size() == fit_want.suspects.size());
      for (size_t k = 0; k < fit.suspects.size(); k++)
        CHECK(std::tie(fit.suspects[k].reason, fit.suspects[k].share, fit.suspects[k].detail, fit.suspects[k].rank,
                       fit.suspects[k].callsite) == std::tie(fit_want.suspects[k].reason, fit_want.suspects[k].share,
                                                             fit_want.suspects[k].detail, fit_want.suspects[k].rank,
                                                             fit_want.suspects[k].callsite));
      fit_sites += fit_want.sites.size(), fit_suspects += fit_want.suspects.size();
      CHECK(cached_resend_share(*streams) == resent_want);
    }
    // as the report's JSON has them
    const auto json_of = [](const report::Charts& c) {
      report::Report rep;
      rep.charts = c;
      return nlohmann::json(rep).at("charts").dump();
    };
    CHECK(json_of(got) == json_of(want));
  }
  // calls and messages were shown, and the synthetic halo's were more than the timeline's cap
  CHECK(calls > kTimelineCalls);
  CHECK(messages > 100);
  CHECK(truncated);
  CHECK(sweep_top >= 262144);
  // and the fit named some call sites the replay missed, and some suspects
  CHECK(fit_sites > 0);
  CHECK(fit_suspects > 0);
}

TEST_CASE("the whole report from the analysis's op streams is the trace's, the trace's ops let go", "[op_stream][report]") {
  // and the analysis made from the streams, the trace taken as soon as it is read (analyse's low_memory):
  // the run's speed from its own round trips, and the measured waits, the same to the bit
  // every part of the report (the summary and ranks, the model's fit, the efficiency and its phases, the
  // hang, the causes and path, the receive side, the buffering, the hot spots and sites, the gate's
  // figures, the halos, the advice, the charts, the notes) read from the streams where the analysis has
  // them, as mpiadvise report's JSON gives it; traced runs of point to point and collectives of every kind,
  // a rank of several threads, a halo, and mpiadvise-synth's halo and pipeline
  std::vector<fs::path> dirs;
  for (const char* name : {"p2p-all", "coll-all", "threads", "halo-procnull", "halo-damaged"}) dirs.push_back(fixture(name));
  for (const char* pattern : {"halo", "pipeline"}) {
    const fs::path dir = fresh_dir(std::string("op-stream-report-") + pattern);
    auto r = run_command(fmt::format("'{}' --ranks 4 --events 2000 --pattern {} -o '{}'",
                                     (build_dir() / "bin" / "mpiadvise-synth").string(), pattern, dir.string()));
    INFO(r.err);
    REQUIRE(r.status == 0);
    dirs.push_back(dir);
  }
  uint64_t advice = 0, hot_spots = 0, causes = 0, probed = 0, waits = 0;
  for (const fs::path& dir : dirs) {
    INFO(dir.filename().string());
    Analysis a = analyse(dir.string(), "");
    ReportOptions options;
    options.charts = true;
    const nlohmann::json want = build_report(a, options);
    advice += want.at("advice").size() + want.at("considered").size();
    hot_spots += want.at("hot_spots").size();
    causes += want.at("root_causes").at("causes").size();
    // as mpiadvise report --low-memory: the trace taken into streams as soon as it is read, the run's speed
    // and the measured waits found from them
    const Analysis b = analyse(dir.string(), "", {}, {}, {}, true);
    REQUIRE(b.streams);
    CHECK(b.trace.messages.empty());
    CHECK(std::all_of(b.trace.ranks.begin(), b.trace.ranks.end(), [](const RankTrace& r) { return r.ops.empty(); }));
    CHECK(b.chosen.why == a.chosen.why);
    CHECK(b.chosen.params.o == a.chosen.params.o);
    CHECK(b.chosen.params.L == a.chosen.params.L);
    REQUIRE(b.probe.has_value() == a.probe.has_value());
    if (a.probe) {
      probed++;
      CHECK(b.probe->factor == a.probe->factor);
      CHECK(b.probe->init == a.probe->init);
      CHECK(b.probe->finalize == a.probe->finalize);
    }
    CHECK(b.measured.rank_ns == a.measured.rank_ns);
    REQUIRE(b.measured.sites.size() == a.measured.sites.size());
    for (const auto& [key, s] : a.measured.sites) {
      const SiteWaits& t = b.measured.sites.at(key);
      CHECK(std::tie(t.call, t.waited_ns, t.caused_ns, t.count, t.size_log2) ==
            std::tie(s.call, s.waited_ns, s.caused_ns, s.count, s.size_log2));
    }
    waits += a.measured.sites.size();
    a.streams = std::make_shared<const std::vector<OpStream>>(OpStream::take_all(a.trace, 256));  // as the report takes them
    for (const nlohmann::json& got : {build_report(a, options), build_report(b, options)}) {
      for (const auto& [key, value] : want.items()) {
        INFO("the report's " << key);
        CHECK(got.at(key).dump() == value.dump());
      }
      CHECK(got.size() == want.size());
    }
  }
  CHECK(probed > 0);
  CHECK(waits > 0);
  CHECK(advice > 0);
  CHECK(hot_spots > 0);
  CHECK(causes > 0);
}

TEST_CASE("streams taken from a trace rank by rank are encode_all's, and the trace's ops are let go", "[op_stream]") {
  // what mpiadvise report --low-memory keeps: each rank's stream written and packed, then its ops let go,
  // before the next rank's; the collectives' instances are made at their first member met, which reads the
  // op of the instance's head member, in that rank or a later one (coll-all: heads on every rank)
  // And the same streams taken from a reading that packed each rank's ops as soon as it read them
  // (build_trace's pack_ops, as --low-memory reads), on the whole runs and on a part (--from, --until).
  std::vector<fs::path> dirs;
  for (const char* name : {"p2p-all", "coll-all", "threads", "halo-procnull"}) dirs.push_back(fixture(name));
  dirs.push_back(synth("alltoall", 6, 600));
  dirs.push_back(synth("pipeline", 5, 900));
  struct Reading {
    Trace t, packed;
  };
  std::vector<Reading> traces;
  for (const fs::path& dir : dirs) {
    const JobLog job(dir);
    traces.push_back({build_trace(job), build_trace(job, UINT64_MAX, 0, {}, true)});
  }
  {
    // the pipeline's middle third, by rank 0's entries
    const JobLog job(dirs.back());
    const auto& ops = traces.back().t.ranks[0].ops;
    REQUIRE(ops.size() > 30);
    const uint64_t from = ops[ops.size() / 3].t_enter, until = ops[2 * ops.size() / 3].t_enter;
    traces.push_back({build_trace(job, until, from), build_trace(job, until, from, {}, true)});
    REQUIRE(traces.back().t.cut());
  }
  uint64_t ops = 0, joined = 0, received = 0, packed_ops = 0;
  for (const auto& [t, packed] : traces)
    for (const bool from_packed : {false, true}) {
      INFO((from_packed ? "the reading's ops packed" : "the trace's ops"));
      const std::vector<OpStream> want = OpStream::encode_all(t, 256);
      if (from_packed) {
        REQUIRE(packed.packed_ops.size() == t.ranks.size());
        for (size_t r = 0; r < t.ranks.size(); r++) {
          CHECK(packed.ranks[r].ops.empty());
          CHECK(packed.packed_ops[r].size() == t.ranks[r].ops.size());
          CHECK(packed.ops_of(static_cast<int>(r)) == t.ranks[r].ops.size());
          packed_ops += packed.packed_ops[r].size();
        }
        CHECK_THROWS_AS(OpStream::encode_all(packed), std::logic_error);  // its ops are not in its ranks
      }
      Trace taken = from_packed ? packed : t;
      const std::vector<OpStream> got = OpStream::take_all(taken, 256);
      CHECK(taken.packed_ops.empty());
      REQUIRE(got.size() == want.size());
      for (size_t r = 0; r < want.size(); r++) {
        INFO("rank " << r);
        REQUIRE(got[r].packed());
        REQUIRE(got[r].ops() == want[r].ops());
        REQUIRE(got[r].ops() == t.ranks[r].ops.size());
        CHECK(taken.ranks[r].ops.empty());
        CHECK(taken.ranks[r].ops.capacity() == 0);
        REQUIRE(std::tie(got[r].window().first, got[r].window().end) == std::tie(want[r].window().first, want[r].window().end));
        OpCursor a(want[r]), b(got[r]);
        StreamOp x, y;
        while (a.next(x)) {
          REQUIRE(b.next(y));
          REQUIRE(std::tie(x.t_enter, x.duration, x.callsite, x.call, x.kind, x.unfinished, x.link_ids, x.link_kinds) ==
                  std::tie(y.t_enter, y.duration, y.callsite, y.call, y.kind, y.unfinished, y.link_ids, y.link_kinds));
          for (const auto* v : {&x.posted, &x.completed, &x.received}) {
            const auto& w = v == &x.posted ? y.posted : v == &x.completed ? y.completed : y.received;
            REQUIRE(v->size() == w.size());
            for (size_t k = 0; k < v->size(); k++) REQUIRE(((*v)[k].id == w[k].id && (*v)[k].m->key() == w[k].m->key()));
            if (v == &x.received) received += v->size();
          }
          for (const auto* v : {&x.joined, &x.left}) {
            const auto& w = v == &x.joined ? y.joined : y.left;
            REQUIRE(v->size() == w.size());
            for (size_t k = 0; k < v->size(); k++)
              REQUIRE((std::tie((*v)[k].instance, (*v)[k].k) == std::tie(w[k].instance, w[k].k) &&
                       (*v)[k].fields->key() == w[k].fields->key()));
            joined += v->size();
          }
          ops++;
        }
        REQUIRE_FALSE(b.next(y));
      }
      // the rest of the trace's calls let go; what else the report asks of it stays
      CHECK(taken.messages.capacity() == 0);
      CHECK(taken.collectives.size() == 0);
      CHECK(!taken.receives_together);
      CHECK(taken.spilled_links.empty());
      CHECK(taken.links.size() == 0);
      CHECK(std::make_tuple(taken.world_size, taken.comms.size(), taken.site_keys.size(), taken.problems.size(),
                            taken.unmatched_recvs, taken.unmatched_sends, taken.incomplete_collectives, taken.largest_message) ==
            std::make_tuple(t.world_size, t.comms.size(), t.site_keys.size(), t.problems.size(), t.unmatched_recvs,
                            t.unmatched_sends, t.incomplete_collectives, t.largest_message));
      REQUIRE(taken.ranks.size() == t.ranks.size());
      for (size_t r = 0; r < t.ranks.size(); r++)
        CHECK(std::tie(taken.ranks[r].rank, taken.ranks[r].calls, taken.ranks[r].cut, taken.ranks[r].calls_before) ==
              std::tie(t.ranks[r].rank, t.ranks[r].calls, t.ranks[r].cut, t.ranks[r].calls_before));
    }
  CHECK(ops > 5000);
  CHECK(joined > 1000);
  CHECK(received > 1000);
  CHECK(packed_ops > 2500);
  {
    // many ranks: frames of at most about kDecodedOps / (2 x ranks) ops, so that the two frames of each rank
    // the causes keep decoded (OpFrames) are not the whole run (1024 ranks x 2000 calls: 512 ops a frame,
    // where each rank's 2000 ops fit one frame of kChunk bytes)
    Trace t = build_trace(JobLog(synth("halo", 1024, 2000)), UINT64_MAX, 0, {}, true);
    const uint64_t frame_ops = std::max(OpStream::kMinFrameOps, OpStream::kDecodedOps / (2 * 1024));
    const std::vector<OpStream> got = OpStream::take_all(t);
    uint64_t most = 0, frames = 0;
    for (const OpStream& s : got) {
      REQUIRE(s.packed());
      frames += s.frames();
      for (size_t k = 0; k < s.frames(); k++)
        most = std::max(most, (k + 1 < s.frames() ? s.frame_first_op(k + 1) : s.ops()) - s.frame_first_op(k));
    }
    CHECK(frames >= got.size() * 3);
    CHECK(most <= 2 * frame_ops);
  }
  // an instance whose head member's op does not link to it (no trace build_trace makes): met first in a
  // later rank than the head's, whose ops are gone; refused, not read from freed memory
  Trace odd;
  odd.world_size = 2;
  odd.ranks.resize(2);
  odd.comms.push_back(TraceComm{1, {0, 1}, {}});
  for (int r : {0, 1}) odd.ranks[r].rank = r;
  append_op(odd, 0, 100, 200, MPA_CALL_Barrier, OpKind::Collective, 1, {});
  append_op(odd, 1, 100, 200, MPA_CALL_Barrier, OpKind::Collective, 1, {{Link::PostColl, 0}});
  NewCollective c;
  c.call = MPA_CALL_Barrier;
  c.members = {{0, 0}, {1, 0}};
  c.sent = c.received = {std::nullopt, std::nullopt};
  odd.collectives.push_back(c);
  REQUIRE(OpStream::encode_all(odd).size() == 2);
  CHECK_THROWS_AS(OpStream::take_all(odd), std::logic_error);
}

TEST_CASE("a hot spot's peers from the streams: a send no receive took names none", "[op_stream]") {
  // rank 0: MPI_Isend (site 1) of message 0 to rank 1, which never receives it, completed by MPI_Wait (site
  // 2); then MPI_Send (site 3) of message 1, which rank 1's MPI_Recv (site 4) takes
  Trace t;
  t.world_size = 2;
  t.ranks.resize(2);
  uint64_t now[2] = {0, 0};
  auto add = [&](int rank, uint8_t call, OpKind kind, uint32_t site, std::vector<Link> links) {
    now[rank] += 200;
    return append_op(t, rank, now[rank] - 100, now[rank], call, kind, site, links);
  };
  for (int r : {0, 1}) t.ranks[r].rank = r, add(r, MPA_CALL_Init, OpKind::Other, 0, {});
  Message unanswered, answered;
  unanswered.src = answered.src = 0, unanswered.dst = answered.dst = 1, unanswered.bytes = answered.bytes = 8;
  unanswered.send_op = add(0, MPA_CALL_Isend, OpKind::PostSend, 1, {{Link::PostSend, 0}});
  add(0, MPA_CALL_Wait, OpKind::Completion, 2, {{Link::DoneSend, 0}});
  answered.send_op = add(0, MPA_CALL_Send, OpKind::Send, 3, {{Link::PostSend, 1}, {Link::DoneSend, 1}});
  answered.recv_op = add(1, MPA_CALL_Recv, OpKind::Recv, 4, {{Link::PostRecv, 1}, {Link::DoneRecv, 1}});
  t.messages = {unanswered, answered};
  for (int r : {0, 1}) add(r, MPA_CALL_Finalize, OpKind::Other, 5, {});
  const WaitStates every = every_site(t);
  for (size_t chunk : {size_t{0}, size_t{64}}) {
    const std::vector<OpStream> streams = OpStream::encode_all(t, chunk);
    require_same_hot_spots(t, streams, every);
    std::map<std::pair<int, uint32_t>, std::vector<int>> peers;
    for (const HotSpot& h : hot_spots(t, streams, every, SIZE_MAX)) peers[{h.rank, h.callsite}] = h.peers;
    CHECK(peers.at({0, 2}).empty());  // the MPI_Wait completed a send no receive took
    CHECK(peers.at({0, 3}) == std::vector<int>{1});
    CHECK(peers.at({1, 4}) == std::vector<int>{0});
  }
}

TEST_CASE("the benches' ring reads back op for op, in fewer bytes than the trace's ops", "[op_stream]") {
  const Trace t = bench::ring_trace(8, 2000);
  CHECK(check_streams(t) == 8u * 2000 * 3);
  {
    // the waits' walk holds the messages in flight, not the run's: on the ring, a few a rank
    WaitsHeld held;
    const size_t peers_before = peers_compared;
    CHECK(check_stream_waits(t, &held) > 1000);
    CHECK(peers_compared > peers_before);  // its hot spots name the ranks they exchanged with
    INFO(held.messages << " messages held of " << t.messages.size());
    CHECK(held.messages <= 4u * 8);
  }
  {
    // the receive side's walk folds each rank's queues as it goes: it holds the messages in flight and the
    // changes of the last few thousand ops, not the run's (every send is outstanding until its Waitall:
    // two changes a message, and more for those that arrive before their receive)
    LogGPSParams p;
    p.s = p.S = 4096;
    ReceiveSideHeld held;
    const uint64_t outstanding_before = receive_side_compared.outstanding;
    require_same_receive_side(t, OpStream::encode_all(t, 256), LogGPS(p), &held);
    CHECK(receive_side_compared.outstanding == outstanding_before + 8);
    INFO(held.messages << " messages and " << held.changes << " changes held, of " << t.messages.size() << " messages");
    CHECK(held.messages <= 4u * 8);
    CHECK(held.changes > 0);
    CHECK(held.changes < t.messages.size() / 2);
  }
  {
    // packed in frames about the stream's whole size: its last op ends where a frame could be cut, the
    // one frame a cursor reads alike
    const OpStream s = OpStream::encode(t, 3);
    const size_t n = s.data().size();
    for (size_t chunk : {n - 1, n, n + 1, n / 2}) {
      INFO("frames of " << chunk << " bytes of " << n);
      OpStream packed = s;
      packed.pack(chunk);
      CHECK(packed.frames() == (chunk == n / 2 ? 2u : 1u));
      OpCursor a(s), b(packed);
      StreamOp x, y;
      uint64_t read = 0;
      for (; a.next(x); read++) {
        REQUIRE(b.next(y));
        require_same_op(x, y);
      }
      CHECK_FALSE(b.next(y));
      CHECK(read == s.ops());
    }
  }
  // an Irecv, an Isend and a Waitall a round, each one shape: their times and links' steps take a few
  // bytes where an Op takes 24 (and its Waitall's two links 10 more in Trace::links)
  for (int r = 0; r < 8; r++) {
    const OpStream s = OpStream::encode(t, r);
    CHECK(s.shapes() == 3);
    CHECK(s.bytes() < s.ops() * sizeof(Op) / 2);
  }
}

TEST_CASE("a cursor seeks to any op and reads on from there as from the first", "[op_stream]") {
  // the ring, and traced runs of every kind of point to point and collective and of a rank of threads
  std::vector<Trace> traces;
  traces.push_back(bench::ring_trace(4, 3000));
  for (const char* name : {"p2p-all", "coll-all", "threads"}) traces.push_back(build_trace(JobLog(fixture(name))));
  std::mt19937_64 rng(73);
  uint64_t seeks = 0, cuts = 0, wide = 0;
  for (const Trace& t : traces) {
    for (const OpStream& whole : OpStream::encode_all(t)) {
      std::vector<StreamOp> all;  // every op, read in order from the first
      {
        OpCursor c(whole);
        for (StreamOp op; c.next(op);) all.push_back(op);
      }
      // ops of more links than a shape holds: their ids' steps from the rank's last of each kind, which
      // a frame's head holds too
      for (const StreamOp& op : all) wide += op.link_ids.size() > OpStream::kShapeLinks;
      const uint64_t n = all.size();
      OpStream packed = whole;
      packed.pack(256);
      // the first and the last op, past the last, each frame's first op and the op before it (a seek
      // across a cut), at random, and back and forth: each read on for up to 3 ops
      std::vector<uint64_t> targets = {0, n, n + 5, n > 0 ? n - 1 : 0, 0};
      for (size_t k = 1; k < packed.frames(); k++) {
        const uint64_t first = packed.frame_first_op(k);
        REQUIRE(first > packed.frame_first_op(k - 1));
        targets.insert(targets.end(), {first, first - 1, first + 1, first - 1, first});
        cuts++;
      }
      for (int k = 0; k < 100; k++) targets.push_back(rng() % (n + 1));
      for (const OpStream* s : {&whole, static_cast<const OpStream*>(&packed)}) {
        INFO((s == &packed ? "packed" : "unpacked") << ", " << n << " ops");
        OpCursor c(*s);
        StreamOp got;
        for (const uint64_t i : targets) {
          INFO("op " << i);
          c.seek(i);
          REQUIRE(c.op() == std::min(i, n));
          for (uint64_t j = i; j < std::min(n, i + 3); j++) {
            REQUIRE(c.next(got));
            require_same_op(all[j], got);
          }
          if (i + 3 >= n) CHECK_FALSE(c.next(got));
          seeks++;
        }
      }
    }
  }
  CHECK(cuts > 100);
  CHECK(seeks > 1000);
  CHECK(wide > 0);
  // a stream of no ops: nothing to seek to, nothing packed
  OpStream none;
  none.pack();
  CHECK(none.frames() == 0);
  OpCursor c(none);
  c.seek(3);
  CHECK(c.op() == 0);
  StreamOp op;
  CHECK_FALSE(c.next(op));
}

TEST_CASE("the causes' reader gives any op of any rank, its links' other ends, and the op entered after a time",
          "[op_stream][causes]") {
  // the ring, and traced runs of every kind of point to point and collective (non-blocking ones among
  // them), of a rank of threads and of a damaged log (receives no send matched)
  std::vector<Trace> traces;
  traces.push_back(bench::ring_trace(4, 3000));
  for (const char* name : {"p2p-all", "coll-all", "threads", "halo-damaged"}) traces.push_back(build_trace(JobLog(fixture(name))));
  std::mt19937_64 rng(74);
  {
    // a hand-made rank whose entries go down and up (a trace read otherwise than build_trace sorts it), a
    // thousand ops
    Trace t;
    t.world_size = 1;
    t.ranks.resize(1);
    for (uint32_t k = 0; k < 1000; k++) {
      const uint64_t enter = 1000 + 10 * k + (k % 7 == 3 ? 0 : rng() % 40);
      append_op(t, 0, enter, enter + 5, MPA_CALL_Barrier, OpKind::Other, k % 5, {});
    }
    traces.push_back(std::move(t));
  }
  uint64_t asked = 0, shared = 0, unsorted = 0, searched = 0, in_frames = 0;
  for (const Trace& t : traces) {
    const int n_ranks = static_cast<int>(t.ranks.size());
    // whether op k of rank a links with rank b: a message between them, a collective with b a member
    auto shares = [&](int a, uint32_t k, int b) {
      const OpLinks links = t.links_of(t.op(a, k));
      for (uint32_t l = 0; l < links.size(); l++) {
        if (links[l].id == kNone) continue;
        if (links[l].kind == Link::PostColl || links[l].kind == Link::DoneColl) {
          for (const auto& [m, o] : t.collectives[links[l].id].members)
            if (m == b) return true;
        } else if (t.messages[links[l].id].src == b || t.messages[links[l].id].dst == b) {
          return true;
        }
      }
      return false;
    };
    const std::vector<OpStream> whole = OpStream::encode_all(t), packed = OpStream::encode_all(t, 256);
    for (const auto* streams : {&whole, &packed})
      for (const size_t kept : {size_t{1}, size_t{3}}) {
        INFO((streams == &packed ? "packed" : "unpacked") << ", " << kept << " kept");
        OpFrames frames(*streams, kept);
        for (int r = 0; r < n_ranks; r++) {
          INFO("rank " << r);
          const std::vector<Op>& ops = t.ranks[r].ops;
          const OpStream& s = (*streams)[r];
          uint64_t links = 0;
          for (const Op& op : ops) links += t.n_links(op);
          CHECK(s.links() == links);
          unsorted += !s.entries_sorted();
          for (size_t f = 0; f < s.frames(); f++) CHECK(s.frame_first_enter(f) == ops[s.frame_first_op(f)].t_enter);
          if (ops.empty()) continue;
          // backwards from the last op, then at random
          std::vector<uint32_t> order(ops.size());
          std::iota(order.rbegin(), order.rend(), 0u);
          for (int k = 0; k < 300; k++) order.push_back(static_cast<uint32_t>(rng() % ops.size()));
          const uint64_t decoded = frames.decoded();
          for (size_t at = 0; at < order.size(); at++) {
            const uint32_t k = order[at];
            INFO("op " << k);
            const OpFrames::Op v = frames.op(r, k);
            REQUIRE(std::make_tuple(v.t_enter, v.t_exit, v.callsite, v.call) ==
                    std::make_tuple(ops[k].t_enter, ops[k].t_exit(), ops[k].callsite, uint8_t{ops[k].call}));
            for (int b = -1; b <= n_ranks; b++) {
              const bool want = shares(r, k, b);
              CHECK(frames.shares(r, k, b) == want);
              shared += want;
            }
            asked++;
            // walked backwards, each frame is decoded once
            if (at + 1 == ops.size()) CHECK(frames.decoded() - decoded == std::max<size_t>(s.frames(), 1));
          }
          // the op entered after a time: the trace's entries halved the same way, within windows of the
          // rank's ops, at its entries, next to them, and before and after all
          for (int k = 0; k < 200; k++) {
            const uint64_t first = rng() % (ops.size() + 1), end = first + rng() % (ops.size() + 1 - first);
            const uint64_t near = ops[rng() % ops.size()].t_enter;
            for (const double from : {static_cast<double>(near), static_cast<double>(near) - 1, static_cast<double>(near) + 0.5,
                                      -1.0, static_cast<double>(ops.back().t_exit()) + 1e9}) {
              const uint64_t want = first_entered_after(first, end, from, [&](uint64_t i) { return static_cast<double>(ops[i].t_enter); });
              REQUIRE(frames.entered_after(r, first, end, from) == want);
              // (on entries that never go down, the first op of the whole rank entered after it, kept in the window)
              if (s.entries_sorted()) {
                const auto it = std::upper_bound(ops.begin(), ops.end(), from, [](double x, const Op& op) { return x < static_cast<double>(op.t_enter); });
                CHECK(want == std::clamp<uint64_t>(static_cast<uint64_t>(it - ops.begin()), first, end));
              }
              searched++;
              in_frames += s.packed() && s.entries_sorted();
            }
          }
          // the call that ends a computation at a call site: its first op's there
          std::map<uint32_t, uint8_t> first_call;
          for (const Op& op : ops) first_call.try_emplace(op.callsite, op.call);
          for (const auto& [site, call] : first_call) CHECK(s.first_call(site) == std::optional<uint8_t>(call));
          CHECK_FALSE(s.first_call(UINT32_MAX - 1).has_value());
        }
        // a message's sender, by the runs of sent ids
        for (uint32_t id = 0; id < t.messages.size(); id++)
          CHECK(frames.sender(id) == (t.messages[id].send_op != kNone ? t.messages[id].src : -1));
        CHECK(frames.sender(static_cast<uint32_t>(t.messages.size()) + 7) == -1);
        // what is held: the ranks' kept frames, not their ops (packed; the ring's 12000 ops)
        uint64_t all_ops = 0;
        for (const RankTrace& rank : t.ranks) all_ops += rank.ops.size();
        if (streams == &packed && all_ops >= 10000) CHECK(frames.held_bytes() < all_ops * 25 / 4);
      }
  }
  CHECK(asked > 20000);
  CHECK(shared > 1000);
  CHECK(unsorted > 0);  // the hand-made rank
  // streams of another trace than the one named
  CHECK_THROWS_WITH(delay_costs(traces.front(), std::vector<OpStream>(1), {}),
                    Catch::Contains("1 ranks' op streams for a trace of 4 ranks"));
  CHECK(searched > 10000);
  CHECK(in_frames > 1000);
}

TEST_CASE("the logs of traced runs read back op for op", "[op_stream]") {
  // point to point of every kind, collectives of every kind, a rank of several threads, a damaged log
  const CausesCompared before = causes_compared;
  const uint64_t halos_before = halos_compared;
  const SidesCompared sides_before = sides_compared;
  const auto advice_before = advice_compared;
  const ReceiveSideCompared receive_before = receive_side_compared;
  for (const char* name : {"p2p-all", "coll-all", "threads", "halo-procnull", "halo-damaged"}) {
    INFO(name);
    const Trace t = build_trace(JobLog(fixture(name)));
    CHECK(check_streams(t) > 0);
    if (posts_own_sides(t)) require_same_advice(t);
  }
  // the causes compared were some: waits found, their causes named
  CHECK(causes_compared.waits > before.waits);
  CHECK(causes_compared.causes > before.causes);
  // and the halos' runs' exchanges found, the messages' sides compared, matched receives among them
  CHECK(halos_compared > halos_before);
  CHECK(sides_compared.sides > sides_before.sides);
  CHECK(sides_compared.received > sides_before.received);
  // and advice from the streams at blocking sites (p2p-all's receives preposted, sends made non-blocking)
  CHECK(advice_compared[static_cast<size_t>(AdviceKind::PrepostReceives)] > advice_before[static_cast<size_t>(AdviceKind::PrepostReceives)]);
  CHECK(advice_compared[static_cast<size_t>(AdviceKind::NonblockingSend)] > advice_before[static_cast<size_t>(AdviceKind::NonblockingSend)]);
  // and the receive side: receives posted early and late, unexpected messages queued, sends outstanding
  CHECK(receive_side_compared.posted_early > receive_before.posted_early);
  CHECK(receive_side_compared.receives - receive_before.receives >
        receive_side_compared.posted_early - receive_before.posted_early);
  CHECK(receive_side_compared.unexpected > receive_before.unexpected);
  CHECK(receive_side_compared.outstanding > receive_before.outstanding);
}

TEST_CASE("mpiadvise-synth's logs read back op for op, and the parts --from and --until name", "[op_stream]") {
  const CausesCompared before = causes_compared;
  const uint64_t halos_before = halos_compared;
  const SidesCompared sides_before = sides_compared;
  const auto advice_before = advice_compared;
  const ReceiveSideCompared receive_before = receive_side_compared;
  for (const char* pattern : {"halo", "pipeline", "alltoall", "allreduce", "imbalance"}) {
    INFO(pattern);
    const fs::path dir = fresh_dir(std::string("op-stream-") + pattern);
    auto r = run_command(fmt::format("'{}' --ranks 6 --events 3000 --pattern {} -o '{}'",
                                     (build_dir() / "bin" / "mpiadvise-synth").string(), pattern, dir.string()));
    INFO(r.err);
    REQUIRE(r.status == 0);
    const JobLog job(dir);
    const Trace whole = build_trace(job);
    CHECK(check_streams(whole) >= 6u * 1000);  // a run of unsuccessful polls is one op
    require_same_advice(whole);
    {
      // the streams share one table of instances, each different instance once
      const std::vector<OpStream> all = OpStream::encode_all(whole);
      std::set<std::tuple<uint32_t, uint32_t, uint32_t, int, uint64_t, std::vector<int>, std::vector<uint64_t>,
                          std::vector<uint64_t>, std::vector<std::vector<uint64_t>>>>
          different;
      for (const CollectiveInstance c : whole.collectives) {
        std::vector<int> ranks;
        std::vector<uint64_t> sent, received;
        for (size_t k = 0; k < c.members.size(); k++)
          ranks.push_back(c.members[k].first), sent.push_back(MemberBytes::held(c.sent[k])),
              received.push_back(MemberBytes::held(c.received[k]));
        const uint32_t head_site = whole.op(c.members.front().first, c.members.front().second).callsite;
        different.emplace(c.call, c.comm, head_site, c.root, c.bytes, ranks, sent, received,
                          std::vector<std::vector<uint64_t>>(c.each.begin(), c.each.end()));
      }
      for (const OpStream& s : all) CHECK(&s.instance_table() == &all.front().instance_table());
      INFO(whole.collectives.size() << " instances");
      CHECK(all.front().instance_table().size() == different.size());
    }
    // the run's middle half: its first op's entry is far from 0, its messages' ids start where it does
    const uint64_t start = *run_start_ns(job);
    uint64_t end = start;
    for (const RankTrace& rank : whole.ranks)
      if (!rank.ops.empty()) end = std::max(end, rank.ops.back().t_exit());
    const Trace part = build_trace(job, start + (end - start) * 3 / 4, start + (end - start) / 4);
    CHECK(check_streams(part) >= 6u * 300);
  }
  // the causes compared were some, and the critical paths went from rank to rank
  CHECK(causes_compared.causes > before.causes);
  CHECK(causes_compared.rank_changes > before.rank_changes);
  // the halo pattern's exchange found, whole and in part; sites of repeated calls among the sides compared
  CHECK(halos_compared >= halos_before + 2);
  CHECK(sides_compared.received > sides_before.received);
  CHECK(sides_compared.repeated > sides_before.repeated);
  // advice of every kind compared (the eager limit and the splits at the halo's and pipeline's 8192-byte
  // messages above S 4096, the persistent requests at the loops' repeated calls)
  for (size_t k = 0; k < advice_compared.size(); k++) {
    INFO(advice_kind_name(static_cast<AdviceKind>(k)));
    CHECK(advice_compared[k] > advice_before[k]);
  }
  // the receive side compared with unexpected messages queued
  CHECK(receive_side_compared.receives > receive_before.receives);
  CHECK(receive_side_compared.unexpected > receive_before.unexpected);
}

TEST_CASE("a halo's largest message from the streams may be one received from a rank outside the exchange, its send "
          "met before, during or after the receiving burst", "[op_stream][halo]") {
  // Each iteration ranks 1 and 2 exchange 8 bytes; rank 0 exchanges with rank 1 too, rank 0's message of
  // the last iteration the largest (4096 bytes; 16 before: its bytes must reach the burst that received
  // it, which no later burst follows), but also sends to rank 3, which never answers: rank 0's bursts are no exchange
  // (not every peer both ways), and the exchange is ranks 1 and 2, its largest message the one rank 1
  // received from rank 0, whose fields only rank 0's stream carries. A barrier ends each iteration's burst.
  // The walk by entry meets rank 0's send before rank 1's receive, while rank 1's burst is open, or after
  // it closed: each way in a trace of its own (a largest message is the max of the ways).
  const int way = GENERATE(0, 1, 2);
  INFO("rank 0's send " << (way == 0 ? "before rank 1's burst" : way == 1 ? "inside it" : "after it"));
  Trace t;
  t.world_size = 4;
  t.ranks.resize(4);
  auto add = [&](int rank, uint64_t enter, uint8_t call, OpKind kind, uint32_t site, std::vector<Link> links) {
    return add_hand_op(t, rank, enter, call, kind, site, links);
  };
  auto message = [&](int src, int dst, uint64_t bytes) { return add_hand_message(t, src, dst, bytes); };
  auto isend = [&](int r, uint64_t at, uint32_t site, uint32_t id) {
    t.messages[id].send_op = add(r, at, MPA_CALL_Isend, OpKind::PostSend, site, {{Link::PostSend, id}});
  };
  auto irecv = [&](int r, uint64_t at, uint32_t site, uint32_t id) {
    t.messages[id].recv_op = add(r, at, MPA_CALL_Irecv, OpKind::PostRecv, site, {{Link::PostRecv, id}});
  };
  for (uint64_t k = 0; k < 6; k++) {
    const uint64_t T = 1000 + k * 10'000;
    const uint32_t a = message(0, 1, k == 5 ? 4096 : 16), b = message(1, 0, 8), c = message(1, 2, 8), d = message(2, 1, 8),
                   e = message(0, 3, 8);
    // rank 0's send of a: before rank 1's burst, inside it, after its barrier
    const uint64_t send_a = T + (way == 0 ? 0 : way == 1 ? 300 : 2000);
    isend(0, send_a, 1, a);
    irecv(0, send_a + 10, 2, b);
    isend(0, send_a + 20, 3, e);
    add(0, send_a + 30, MPA_CALL_Waitall, OpKind::Completion, 4, {{Link::DoneSend, a}, {Link::DoneRecv, b}, {Link::DoneSend, e}});
    add(0, T + 5000, MPA_CALL_Barrier, OpKind::Collective, 5, {});
    irecv(1, T + 200, 2, a);
    isend(1, T + 210, 1, b);
    isend(1, T + 220, 1, c);
    irecv(1, T + 230, 2, d);
    add(1, T + 600, MPA_CALL_Waitall, OpKind::Completion, 4, {{Link::DoneRecv, a}, {Link::DoneSend, b}, {Link::DoneSend, c}, {Link::DoneRecv, d}});
    add(1, T + 1000, MPA_CALL_Barrier, OpKind::Collective, 5, {});
    isend(2, T + 200, 1, d);
    irecv(2, T + 210, 2, c);
    add(2, T + 220, MPA_CALL_Waitall, OpKind::Completion, 4, {{Link::DoneSend, d}, {Link::DoneRecv, c}});
    add(2, T + 1000, MPA_CALL_Barrier, OpKind::Collective, 5, {});
    irecv(3, T + 100, 2, e);
    add(3, T + 9000, MPA_CALL_Wait, OpKind::Completion, 4, {{Link::DoneRecv, e}});
  }
  // the messages numbered by sender, as build_trace numbers them: here in the order made, ids of a rank
  // apart, which the streams' runs of sent ids hold as runs of one
  REQUIRE(posts_own_sides(t));
  const std::vector<HaloExchange> want = find_halos(t);
  REQUIRE(want.size() == 1);
  CHECK(want[0].ranks == std::vector<int>{1, 2});
  CHECK(want[0].bytes_max == 4096);
  CHECK(want[0].exchanges == 6);
  for (const size_t chunk : {size_t{0}, size_t{64}}) {
    INFO("packed in frames of " << chunk);
    const uint64_t before = halos_compared;
    require_same_halos(t, OpStream::encode_all(t, chunk));
    CHECK(halos_compared == before + 1);
  }
}

TEST_CASE("a rank's MPI_Sendrecv to itself beside a halo exchange: the same exchange from the streams",
          "[op_stream][halo]") {
  // Ranks 0 and 1 exchange with MPI_Sendrecv each iteration; after a barrier each sends itself a message
  // with another MPI_Sendrecv, whose one op posts both sides (its stream carries the message at its send
  // and again at its receive, one entry of the rank's table), its links in either order.
  const bool receive_first = GENERATE(false, true);
  INFO((receive_first ? "the self message's receive linked first" : "its send linked first"));
  Trace t;
  t.world_size = 2;
  t.ranks.resize(2);
  auto add = [&](int rank, uint64_t enter, uint8_t call, OpKind kind, std::vector<Link> links) {
    return add_hand_op(t, rank, enter, call, kind, call, links);
  };
  auto message = [&](int src, int dst, uint64_t bytes) { return add_hand_message(t, src, dst, bytes); };
  constexpr int kIterations = 5;
  for (uint64_t k = 0; k < kIterations; k++) {
    const uint64_t T = 1000 + k * 1000;
    const uint32_t to[2] = {message(0, 1, 512), message(1, 0, 512)}, self[2] = {message(0, 0, 64), message(1, 1, 64)};
    for (int r = 0; r < 2; r++) {
      const uint32_t out = to[r], in = to[1 - r];
      const uint32_t i = add(r, T + 10 * r, MPA_CALL_Sendrecv, OpKind::SendRecv,
                             {{Link::PostSend, out}, {Link::PostRecv, in}, {Link::DoneSend, out}, {Link::DoneRecv, in}});
      t.messages[out].send_op = t.messages[in].recv_op = i;
      add(r, T + 100, MPA_CALL_Barrier, OpKind::Collective, {});
      const Link send{Link::PostSend, self[r]}, recv{Link::PostRecv, self[r]};
      const uint32_t j = add(r, T + 200 + 10 * r, MPA_CALL_Sendrecv, OpKind::SendRecv,
                             {receive_first ? recv : send, receive_first ? send : recv, {Link::DoneSend, self[r]},
                              {Link::DoneRecv, self[r]}});
      t.messages[self[r]].send_op = t.messages[self[r]].recv_op = j;
      add(r, T + 300, MPA_CALL_Barrier, OpKind::Collective, {});
    }
  }
  REQUIRE(posts_own_sides(t));
  const std::vector<HaloExchange> want = find_halos(t);
  REQUIRE(want.size() == 1);
  CHECK(want[0].ranks == std::vector<int>{0, 1});
  CHECK(want[0].exchanges == kIterations);
  for (const size_t chunk : {size_t{0}, size_t{64}}) {
    INFO("packed in frames of " << chunk);
    const std::vector<OpStream> streams = OpStream::encode_all(t, chunk);
    require_same_halos(t, streams);
  }
}

TEST_CASE("the receive side of a hand-made run, from the trace and from the streams, is what its messages' times "
          "say", "[op_stream][receive_side]") {
  // Rank 0 posts an MPI_Isend every 1000 ns, 64 bytes (eager at S = 4096) and 8192 (rendezvous) in turn,
  // and waits for each two sends later, but for every 97th, whose request it frees (outstanding to its last
  // call); rank 1 receives them with MPI_Recv, late or early, in the order of its receives' times. The
  // figures are worked out here from the definitions (receive_side.hpp), each count at every instant it
  // changes counted over all intervals: a message arrives at its send's entry plus the model's send
  // overhead and transfer (eager) or o + L (its request); it is unexpected from its arrival until its
  // receive's entry; a send is outstanding from its post until its wait's exit; the queue's steps are 40
  // equal parts of the run's window, each instant counted after the changes at it. Its 18000 ops make the
  // streams' walk fold its queues as it goes (every 4096 ops), the freed requests held to the end.
  constexpr int kMessages = 6000;
  LogGPSParams p;
  p.s = p.S = 4096;
  const LogGPS model(p);
  Trace t;
  t.world_size = 2;
  t.ranks.resize(2);
  std::vector<uint64_t> sent_at(kMessages), received_at(kMessages), done_at(kMessages, 0), bytes(kMessages);
  const auto freed = [](int i) { return i % 97 == 5; };
  for (int i = 0; i < kMessages; i++) {
    bytes[i] = i % 2 ? 8192 : 64;
    sent_at[i] = 1000 + 1000 * static_cast<uint64_t>(i);
    received_at[i] = sent_at[i] - 500 + static_cast<uint64_t>((i * 7) % 5) * 1700;
    add_hand_message(t, 0, 1, bytes[i]);
  }
  for (int i = 0; i < kMessages; i++) {
    const auto id = static_cast<uint32_t>(i);
    t.messages[id].send_op = add_hand_op(t, 0, sent_at[i], MPA_CALL_Isend, OpKind::PostSend, 1, {{Link::PostSend, id}});
    if (i >= 2 && !freed(i - 2)) {
      add_hand_op(t, 0, sent_at[i] + 100, MPA_CALL_Wait, OpKind::Completion, 2, {{Link::DoneSend, id - 2}});
      done_at[i - 2] = sent_at[i] + 105;
    }
  }
  add_hand_op(t, 0, sent_at[kMessages - 1] + 200, MPA_CALL_Waitall, OpKind::Completion, 3,
              {{Link::DoneSend, kMessages - 2}, {Link::DoneSend, kMessages - 1}});
  done_at[kMessages - 2] = done_at[kMessages - 1] = sent_at[kMessages - 1] + 205;
  for (int i = 0; i < kMessages; i++)
    if (freed(i)) done_at[i] = t.ranks[0].ops.back().t_exit();
  std::vector<uint32_t> order(kMessages);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t a, uint32_t b) { return received_at[a] < received_at[b]; });
  for (const uint32_t id : order)
    t.messages[id].recv_op = add_hand_op(t, 1, received_at[id], MPA_CALL_Recv, OpKind::Recv, 4, {{Link::PostRecv, id}, {Link::DoneRecv, id}});

  // worked out: arrivals, the intervals unexpected and outstanding, the window and its steps
  std::vector<uint64_t> arrival(kMessages);
  uint64_t early = 0;
  double integral = 0;
  std::set<uint64_t> changes;  // the instants a count of rank 1's queue changes at
  uint64_t intervals = 0;      // unexpected and outstanding: two changes each
  for (int i = 0; i < kMessages; i++) {
    const bool eager = bytes[i] <= 4096;
    const double offset = eager ? model.T1(bytes[i]) + model.transfer(bytes[i]) : p.o + p.L;
    arrival[i] = sent_at[i] + static_cast<uint64_t>(std::max(0.0, offset));
    early += received_at[i] <= arrival[i];
    if (received_at[i] > arrival[i]) {
      integral += static_cast<double>(received_at[i] - arrival[i]);
      intervals++;
      changes.insert(arrival[i]), changes.insert(received_at[i]);
    }
  }
  const uint64_t first = std::min(t.ranks[0].ops.front().t_enter, t.ranks[1].ops.front().t_enter);
  const uint64_t last = std::max(t.ranks[0].ops.back().t_exit(), t.ranks[1].ops.back().t_exit());
  const double step = static_cast<double>(last - first) / 40;
  const auto step_of = [&](uint64_t at) {
    return static_cast<size_t>(std::clamp(static_cast<double>(at - first) / step, 0.0, 39.0));
  };
  std::vector<uint32_t> by_step(40, 0);
  uint64_t most = 0, most_bytes = 0, outstanding_most = 0;
  double peak_at = 0;
  for (auto c = changes.begin(); c != changes.end(); ++c) {
    uint64_t n = 0, b = 0;
    for (int i = 0; i < kMessages; i++)
      if (arrival[i] <= *c && *c < received_at[i]) n++, b += bytes[i] <= 4096 ? bytes[i] : 0;
    if (n > most) most = n, peak_at = static_cast<double>(*c - first);
    most_bytes = std::max(most_bytes, b);
    // the count holds until the next change
    const uint64_t until = std::next(c) == changes.end() ? *c : *std::next(c) - 1;
    if (n > 0)
      for (size_t k = step_of(*c); k <= step_of(until); k++) by_step[k] = std::max(by_step[k], static_cast<uint32_t>(n));
  }
  for (int j = 0; j < kMessages; j++) {
    uint64_t out = 0;
    for (int i = 0; i < kMessages; i++) out += sent_at[i] <= sent_at[j] && sent_at[j] < done_at[i];
    outstanding_most = std::max(outstanding_most, out);
    intervals += done_at[j] > sent_at[j];
  }
  // the run made some receives late and some early, queued several messages and kept many sends out
  REQUIRE(early > 0);
  REQUIRE(early < kMessages);
  REQUIRE(most >= 3);
  REQUIRE(outstanding_most > 3);
  const double span1 = static_cast<double>(t.ranks[1].ops.back().t_exit() - t.ranks[1].ops.front().t_enter);
  auto check = [&](const ReceiveSide& rs) {
    CHECK(rs.start_ns == static_cast<double>(first));
    CHECK(rs.step_ns == step);
    CHECK(rs.receives == kMessages);
    CHECK(rs.posted_early == early);
    REQUIRE(rs.ranks.size() == 2);
    const ReceiveSide::Rank &r0 = rs.ranks[0], &r1 = rs.ranks[1];
    CHECK(r0.receives == 0);
    CHECK(r0.outstanding_sends_max == outstanding_most);
    CHECK(r1.outstanding_sends_max == 0);
    CHECK(r1.receives == kMessages);
    CHECK(r1.posted_early == early);
    CHECK(r1.unexpected_max == most);
    CHECK(r1.unexpected_max_bytes == most_bytes);
    CHECK(r1.unexpected_mean == integral / span1);
    CHECK(r1.unexpected_peak_ns == peak_at);
    CHECK(r1.unexpected_by_step == by_step);
  };
  {
    INFO("from the trace");
    check(receive_side(t, model));
  }
  for (const size_t chunk : {size_t{0}, size_t{64}}) {
    INFO("from the streams packed in frames of " << chunk);
    ReceiveSideHeld held;
    check(receive_side(OpStream::encode_all(t, chunk), model, &held));
    // folded as it went: the freed requests' messages held to the end, the changes of a few thousand ops
    INFO(held.messages << " messages and " << held.changes << " changes held");
    CHECK(held.messages < 2u * kMessages / 97 + 8);
    CHECK(held.changes > 0);
    CHECK(held.changes < intervals);  // half the run's changes (two an interval)
  }
}

TEST_CASE("a program that depends on buffering is found from the streams as from the trace, from the sends a "
          "parked op posted or completed", "[op_stream][buffering]") {
  // Each iteration both ranks send 1 KiB to the other, then receive the other's: with MPI_Send, or with
  // MPI_Isend and MPI_Wait. Eager at S = 4096 the run goes on; with every send waiting for its receive
  // (S = 0) both ranks park, in the blocking send or in the wait that completes the send. The streams'
  // reader seeks the parked op in its rank's stream: a blocking send's message among those it posted, the
  // wait's among those it completed.
  const bool nonblocking = GENERATE(false, true);
  INFO((nonblocking ? "MPI_Isend and MPI_Wait" : "MPI_Send"));
  Trace t;
  t.world_size = 2;
  t.ranks.resize(2);
  constexpr int kIterations = 6;
  for (uint64_t k = 0; k < kIterations; k++) {
    const uint64_t T = 1000 + k * 1000;
    const uint32_t to[2] = {add_hand_message(t, 0, 1, 1024), add_hand_message(t, 1, 0, 1024)};
    for (int r = 0; r < 2; r++) {
      const uint32_t out = to[r], in = to[1 - r];
      if (nonblocking) {
        t.messages[out].send_op = add_hand_op(t, r, T + 10 * r, MPA_CALL_Isend, OpKind::PostSend, 1, {{Link::PostSend, out}});
        add_hand_op(t, r, T + 50, MPA_CALL_Wait, OpKind::Completion, 2, {{Link::DoneSend, out}});
      } else {
        t.messages[out].send_op =
            add_hand_op(t, r, T + 10 * r, MPA_CALL_Send, OpKind::Send, 1, {{Link::PostSend, out}, {Link::DoneSend, out}});
      }
      t.messages[in].recv_op =
          add_hand_op(t, r, T + 100, MPA_CALL_Recv, OpKind::Recv, 3, {{Link::PostRecv, in}, {Link::DoneRecv, in}});
    }
  }
  REQUIRE(posts_own_sides(t));
  REQUIRE(completes_own_sides(t));
  LogGPSParams p;
  p.s = p.S = 4096;
  ReplayOptions base;
  base.params = p;
  const BufferingDependence want = buffering_dependence(t, base, replay(t, base));
  REQUIRE(want.checked);
  REQUIRE(want.deadlocks.size() == 1);
  const auto& d = want.deadlocks[0];
  REQUIRE(d.sends.size() == 2);
  for (const auto& send : d.sends) {
    CHECK(send.bytes == 1024);
    CHECK(send.peer == 1 - send.rank);
    CHECK(send.call == (nonblocking ? MPA_CALL_Wait : MPA_CALL_Send));
  }
  CHECK(d.hangs_below == std::optional<uint64_t>(1024));
  for (const size_t chunk : {size_t{0}, size_t{64}}) {
    INFO("packed in frames of " << chunk);
    ReplayOptions from = base;
    from.streams = std::make_shared<const std::vector<OpStream>>(OpStream::encode_all(t, chunk));
    const Trace bare = bare_of(t);
    const BufferingDependence got = buffering_dependence(bare, from, replay(bare, from));
    REQUIRE(got.checked);
    REQUIRE(got.deadlocks.size() == want.deadlocks.size());
    for (size_t k = 0; k < want.deadlocks.size(); k++) {
      const auto &a = want.deadlocks[k], &b = got.deadlocks[k];
      REQUIRE(a.sends.size() == b.sends.size());
      for (size_t j = 0; j < a.sends.size(); j++)
        CHECK(std::tie(a.sends[j].rank, a.sends[j].peer, a.sends[j].op, a.sends[j].call, a.sends[j].callsite, a.sends[j].bytes) ==
              std::tie(b.sends[j].rank, b.sends[j].peer, b.sends[j].op, b.sends[j].call, b.sends[j].callsite, b.sends[j].bytes));
      REQUIRE(a.ranks.size() == b.ranks.size());
      for (size_t j = 0; j < a.ranks.size(); j++)
        CHECK(std::tie(a.ranks[j].rank, a.ranks[j].op, a.ranks[j].at_ns) == std::tie(b.ranks[j].rank, b.ranks[j].op, b.ranks[j].at_ns));
      CHECK(std::tie(a.hangs_below, a.times) == std::tie(b.hangs_below, b.times));
    }
  }
}

TEST_CASE("a receive posted earlier is advised from the streams as from the trace: not where a receive in between "
          "took a message of the same envelope, or the rank probed", "[op_stream][advice]") {
  // Each iteration rank 1 receives a message from rank 0 at line 2 (MPI_Recv, or an MPI_Iprobe in its
  // place), then waits at line 1 in MPI_Recv for rank 0's late send. An MPI_Irecv at line 1 posted as soon
  // as the previous one completed would take line 2's message where it has the same source, tag and
  // communicator: preposting keeps the matching only where line 2's tag differs and nothing probes
  // between two receives of line 1 (what comes before the first does not count). The streams' reader
  // takes a matched receive's envelope from its own op (StreamOp::received).
  enum Between { Tag2, Tag1, Probe };
  const int way = GENERATE(0, 1, 2, 3);
  // line 2 in iteration k: tag 2 but line 1's envelope or a probe before line 1's first receive (0, 1:
  // preposting keeps the matching), line 1's envelope throughout (2), a probe from the third (3)
  const auto between = [&](uint64_t k) {
    switch (way) {
      case 0: return k == 0 ? Tag1 : Tag2;
      case 1: return k == 0 ? Probe : Tag2;
      case 2: return Tag1;
      default: return k >= 2 ? Probe : Tag2;
    }
  };
  INFO("way " << way);
  Trace t;
  t.world_size = 2;
  t.ranks.resize(2);
  for (uint64_t k = 0; k < 5; k++) {
    const uint64_t T = 1000 + k * 1000;
    const uint32_t late = add_hand_message(t, 0, 1, 64);
    if (between(k) != Probe) {
      const uint32_t early = add_hand_message(t, 0, 1, 64);
      t.messages[early].tag = between(k) == Tag2 ? 2 : 1;
      t.messages[early].send_op = add_hand_op(t, 0, T + 50, MPA_CALL_Send, OpKind::Send, 10,
                                              {{Link::PostSend, early}, {Link::DoneSend, early}});
      t.messages[early].recv_op = append_op(t, 1, T, T + 60, MPA_CALL_Recv, OpKind::Recv, 2,
                                            {{Link::PostRecv, early}, {Link::DoneRecv, early}});
    } else {
      add_hand_op(t, 1, T, MPA_CALL_Iprobe, OpKind::Probe, 2, {});
    }
    t.messages[late].send_op = add_hand_op(t, 0, T + 500, MPA_CALL_Send, OpKind::Send, 11,
                                           {{Link::PostSend, late}, {Link::DoneSend, late}});
    t.messages[late].recv_op = append_op(t, 1, T + 100, T + 510, MPA_CALL_Recv, OpKind::Recv, 1,
                                         {{Link::PostRecv, late}, {Link::DoneRecv, late}});
  }
  REQUIRE(posts_own_sides(t));
  const std::vector<Advice> advice = require_same_advice(t);
  const SiteKey line1 = t.site(1, 1);
  const bool preposted = std::any_of(advice.begin(), advice.end(), [&](const Advice& a) {
    return a.kind() == AdviceKind::PrepostReceives && a.site == line1;
  });
  CHECK(preposted == (way < 2));
}

TEST_CASE("values held packed come back byte for byte, and a rank's ops in a fraction of their bytes",
          "[op_stream][packed]") {
  // every byte's difference from the value before wraps (0xff then 0x00 and back), values of an odd width,
  // none and one value, and random bytes, which the transposition cannot make smaller
  struct Three {
    uint8_t b[3];
  };
  std::mt19937_64 rng(11);
  for (size_t n : {size_t{0}, size_t{1}, size_t{2}, size_t{255}, size_t{4097}}) {
    std::vector<Three> three(n);
    std::vector<uint64_t> words(n);
    for (size_t i = 0; i < n; i++) {
      three[i] = {{static_cast<uint8_t>(i % 2 ? 0xff : 0x00), static_cast<uint8_t>(rng()), static_cast<uint8_t>(i)}};
      words[i] = i % 3 ? rng() : (i % 2 ? UINT64_MAX : 0);
    }
    Packed<Three> p3;
    p3.pack(three.data(), three.size());
    const std::vector<Three> back3 = p3.unpack();
    REQUIRE(back3.size() == n);
    REQUIRE((n == 0 || std::memcmp(back3.data(), three.data(), n * sizeof(Three)) == 0));  // (no null to memcmp)
    Packed<uint64_t> p8;
    std::vector<uint64_t> copy = words;
    p8.pack(copy);
    REQUIRE(copy.empty());
    REQUIRE(p8.size() == n);
    REQUIRE(p8.unpack() == words);
  }
  // mpiadvise-synth's halo: its ops as build_trace holds them while it reads for --low-memory, packed in
  // under a sixth of their bytes (6.3 bytes an op as they are, 1.2 transposed and as differences)
  Trace t = build_trace(JobLog(synth("halo", 8, 20000).string()));
  size_t ops = 0, packed = 0;
  for (RankTrace& r : t.ranks) {
    PackedOps p;
    p.pack(r.ops.data(), r.ops.size());
    const std::vector<Op> back = p.unpack();
    REQUIRE(back.size() == r.ops.size());
    REQUIRE((back.empty() || std::memcmp(back.data(), r.ops.data(), back.size() * sizeof(Op)) == 0));
    ops += r.ops.size(), packed += p.bytes();
  }
  REQUIRE(ops > 8 * 19000);  // (20000 calls a rank, nearly an op each)
  CHECK(static_cast<double>(packed) < static_cast<double>(ops) * sizeof(Op) / 6);
}

TEST_CASE("ops at the edges read back as they were", "[op_stream]") {
  Trace t;
  t.world_size = 2;
  t.ranks.resize(2);
  auto add = [&](int rank, uint64_t enter, uint64_t exit, uint8_t call, OpKind kind, uint32_t site,
                 std::vector<Link> links) {
    Op op;
    REQUIRE(op.set_times(enter, exit));
    op.call = call;
    op.kind = kind;
    op.callsite = site;
    const uint32_t first = static_cast<uint32_t>(t.links.size());
    for (Link l : links) t.links.push_back(l);
    t.set_links(op, first, static_cast<uint32_t>(links.size()));
    t.ranks[rank].ops.push_back(op);
    return &t.ranks[rank].ops.back();
  };
  // rank 0: the largest times an op holds, then one entered long before its predecessor's exit (another
  // thread's), a message id that falls back, kNone, and a Waitall of 300 requests
  add(0, kMaxOpEnter - kMaxOpDuration, kMaxOpEnter, 7, OpKind::Completion, UINT32_MAX, {{Link::DoneRecv, 5}});
  add(0, 1000, 1000, 0, OpKind::Other, 0, {});
  add(0, 2000, 900'000, 3, OpKind::PostSend, 12, {{Link::PostSend, UINT32_MAX - 1}});
  add(0, 1500, 1600, 3, OpKind::PostSend, 12, {{Link::PostSend, 0}});
  add(0, 1700, 1800, 4, OpKind::PostRecv, 13, {{Link::PostRecv, kNone}});
  std::vector<Link> many;
  for (uint32_t k = 0; k < 300; k++) many.push_back(Link{k % 2 ? Link::DoneSend : Link::DoneRecv, 300 - k});
  add(0, 5000, 9000, 9, OpKind::Completion, 14, many);
  // five links: one more than a shape holds; a collective's two
  add(0, 9000, 9100, 9, OpKind::Completion, 14,
      {{Link::DoneSend, 1}, {Link::DoneRecv, 2}, {Link::DoneSend, 3}, {Link::DoneRecv, 4}, {Link::DoneColl, 0}});
  add(0, 9100, 9200, 20, OpKind::Collective, 15, {{Link::PostColl, 3}, {Link::PostColl, 2}});
  // rank 1: a call a signal ended, and the same call completed, two shapes
  add(1, 10, 20, 7, OpKind::Completion, 1, {{Link::DoneRecv, 0}})->unfinished = true;
  add(1, 30, 40, 7, OpKind::Completion, 1, {{Link::DoneRecv, 0}});
  // a send of rank 0 (op 3) to no receive, its fields at their limits; a receive of rank 1 no send matched
  Message sent;
  sent.src = 0, sent.dst = 1, sent.comm = kMaxComms - 1, sent.synchronous = sent.resent = sent.cached = true;
  sent.tag = -5, sent.bytes = UINT64_MAX, sent.send_op = 3;
  Message received;
  received.dst = 1, received.tag = 7, received.bytes = 0, received.recv_op = 2;
  t.messages = {sent, received};
  add(1, 50, 60, 4, OpKind::PostRecv, 2, {{Link::PostRecv, 1}});
  CHECK(check_streams(t) == 11);
  StreamOp op;
  const OpStream zero_stream = OpStream::encode(t, 0);
  OpCursor zero(zero_stream);
  for (int k = 0; k < 4; k++) REQUIRE(zero.next(op));
  REQUIRE(op.posted.size() == 1);
  CHECK(op.posted[0].m->fields.bytes == UINT64_MAX);
  CHECK(OpStream::encode(t, 1).shapes() == 3);
  // collectives: an allreduce of both ranks twice; one with counts arrays (rank 1's empty), and rank 0's
  // op 7 a member of two instances, one of them alone, its bytes none (MPI_IN_PLACE) and the largest held
  auto coll = [&](uint32_t call, int root, uint64_t bytes, std::vector<std::pair<int, uint32_t>> members,
                  MemberBytes sent, MemberBytes received, std::vector<std::vector<uint64_t>> each = {}) {
    NewCollective c;
    c.call = call, c.comm = 1, c.root = root, c.bytes = bytes, c.members = std::move(members);
    c.sent = std::move(sent), c.received = std::move(received), c.each = std::move(each);
    t.collectives.push_back(c);
  };
  coll(21, -1, 8, {{0, 8}, {1, 3}}, {8, 8}, {8, 8});
  coll(22, -1, 24, {{0, 9}, {1, 4}}, {16, 24}, {8, 16}, {{1, 2, 3}, {}});
  coll(23, 0, 0, {{0, 7}}, {std::nullopt}, {MemberBytes::kNoBytes - 1});
  coll(21, -1, 8, {{0, 7}, {1, 5}}, {8, 8}, {8, 8});
  add(0, 10'000, 10'100, 21, OpKind::Collective, 16, {{Link::PostColl, 0}});
  add(0, 10'200, 10'300, 22, OpKind::Collective, 17, {{Link::PostColl, 1}});
  add(1, 10'000, 10'100, 21, OpKind::Collective, 16, {{Link::PostColl, 0}});
  add(1, 10'200, 10'300, 22, OpKind::Collective, 17, {{Link::PostColl, 1}});
  add(1, 10'400, 10'500, 20, OpKind::Collective, 15, {{Link::PostColl, 3}});
  CHECK(check_streams(t) == 16);
  const OpStream ones = OpStream::encode(t, 1);
  OpCursor one(ones);
  for (int k = 0; k < 5; k++) REQUIRE(one.next(op));
  REQUIRE(op.joined.size() == 1);
  CHECK(op.joined[0].k == 1);  // rank 1's place: not the instance's first member
  CHECK(op.joined[0].fields->each.at(1).empty());  // rank 1's counts array, empty in a counted instance
  // a rank without ops: a stream of none
  t.ranks.emplace_back();
  t.world_size = 3;
  const OpStream empty = OpStream::encode(t, 2);
  CHECK(empty.ops() == 0);
  CHECK_FALSE(OpCursor(empty).next(op));
}

TEST_CASE("a simulation walking the op streams is the trace's, figure for figure", "[op_stream][replay]") {
  const fs::path params = fs::path(MPA_SOURCE_DIR) / "share" / "params";
  ReplayOptions o;
  SECTION("traced runs: every kind of call, a damaged log whose ranks stall, threads") {
    for (const char* name : {"p2p-all", "coll-all", "threads", "halo-procnull", "halo-damaged"}) {
      INFO(name);
      const Trace t = build_trace(JobLog(fixture(name)));
      for (const char* set : {"openmpi-vader", "openmpi-tcp-loopback", "mpich-ucx-sm"}) {
        INFO(set);
        o.params = find_params(set, params);
        o.mpi_library.clear();
        CHECK(check_streamed_replays(t, o) >= 11);
      }
      INFO("its messages numbered out of their senders' order");
      const Trace shuffled = renumbered(t, 5);
      CHECK(check_streams(shuffled) == check_streams(t));
      CHECK(check_streamed_replays(shuffled, o) >= 11);
    }
  }
  SECTION("mpiadvise-synth's patterns, eager messages through vader's limited buffers and rendezvous ones") {
    for (const char* pattern : {"halo", "pipeline", "alltoall", "allreduce", "imbalance"})
      for (const char* bytes : {"--bytes 1024", "--bytes 65536"}) {
        INFO(pattern << " " << bytes);
        const Trace t = build_trace(JobLog(synth(pattern, 6, 1000, bytes)));
        o.params = find_params("openmpi-vader", params);
        const size_t phases_before = phases_compared;
        CHECK(check_streamed_replays(t, o) >= 9);
        CHECK(phases_compared > phases_before);  // the loop's iterations are its phases
        if (std::string(pattern) == "halo") {  // a rendezvous receive's post told to its sender's process
          INFO("its messages numbered out of their senders' order");
          CHECK(check_streamed_replays(renumbered(t, 7), o) >= 9);
        }
      }
    CHECK(at_entry_compared > 0);  // a pipeline's ranks that receive, then compute
  }
  SECTION("sends no receive matched, eager into a full eager buffer and rendezvous, their receiver on another process") {
    // rank 0 sends 4 KiB messages eagerly, one every 1.2 us: the first 40 to no receive while rank 1
    // computes 200 us, then 60 that rank 1 receives one every 20 us, but for every tenth, 64 KiB sent by
    // rendezvous to no receive. Each eager message no receive takes leaves MPICH's eager buffer (35
    // messages) at its arrival, where a received one waits for its receive: taken at rank 1's next call,
    // the 36th would wait 160 us for room.
    Trace t;
    t.world_size = 2;
    t.ranks.resize(2);
    t.site_keys.resize(2);
    uint64_t now[2] = {0, 0};
    auto add = [&](int rank, uint64_t gap, uint64_t took, uint8_t call, OpKind kind, uint32_t site, std::vector<Link> links) {
      now[rank] += gap + took;
      return append_op(t, rank, now[rank] - took, now[rank], call, kind, site, links);
    };
    for (int r : {0, 1}) {
      t.ranks[r].rank = r;
      add(r, 0, 100, MPA_CALL_Init, OpKind::Other, 0, {});
    }
    for (uint32_t k = 0; k < 100; k++) {
      Message m;
      m.src = 0, m.dst = 1, m.bytes = k >= 40 && k % 10 == 9 ? 65536 : 4096;
      m.send_op = add(0, 1000, 150, MPA_CALL_Isend, OpKind::PostSend, 1, {{Link::PostSend, k}});
      add(0, 0, 50, MPA_CALL_Wait, OpKind::Completion, 2, {{Link::DoneSend, k}});
      if (k >= 40 && m.bytes == 4096)
        m.recv_op = add(1, k == 40 ? 200000 : 20000, 300, MPA_CALL_Recv, OpKind::Recv, 3, {{Link::PostRecv, k}, {Link::DoneRecv, k}});
      t.messages.push_back(m);
    }
    for (int r : {0, 1}) add(r, 500, 100, MPA_CALL_Finalize, OpKind::Other, 4, {});
    o.params = find_params("mpich-ucx-sm", params);
    REQUIRE(LogGPS(o.params).eager_buffer_limited());
    CHECK(check_streams(t) == 2 + 200 + 54 + 2);
    CHECK(check_streamed_replays(t, o) >= 10);
    // the first 40 sends wait for no room: the MPI_Wait of the 40th (op 80) ends 60 us from the start,
    // where a buffer keeping them until rank 1's first call held it to 207 us; the 36th eager message rank
    // 1 receives (the 79th sent, op 158) waits for room until rank 1's first receive, past 200 us
    ReplayOptions spans = o;
    spans.record_spans = true;
    const ReplayResult r = replay(t, spans);
    REQUIRE(r.spans.size() == 2);
    REQUIRE(r.spans[0].size() == 202);
    CHECK(r.spans[0][80].exit < 100000);
    CHECK(r.spans[0][158].exit > 200000);
    CHECK(r.spans[0][156].exit < 200000);
  }
  SECTION("the ring of the benches, ranks of no op or none to replay, and streams that are not the trace's") {
    Trace t = bench::ring_trace(8, 500);
    CHECK(check_streamed_replays(t, o) >= 10);
    {
      // spread over 2 processes, 1000 of its 4000 messages cross from one to the other: each process
      // holds about the messages in flight, as the serial replay, not every one crossing
      const ReplayResult serial = replay(t, o), spread = spread_replay(t, o, 2);
      INFO("messages held: serial " << serial.messages_held << ", spread " << spread.messages_held);
      CHECK(spread.messages_held <= serial.messages_held);
    }
    {
      // 300 allreduces of ranks 0 to 5 on a world of 9 whose ranks 6 to 8 have no log: spread over 3, the
      // third process owns none of the members; told of the arrivals (the closed formula's: the instances
      // are not their communicator's whole) it would hold every instance to the end
      Trace a;
      a.world_size = 9;
      a.ranks.resize(9);
      a.site_keys.resize(9);
      TraceComm world;
      for (int r = 0; r < 9; r++) a.ranks[r].rank = r, world.members.push_back(r);
      a.comms.push_back(world);
      for (uint32_t c = 0; c < 300; c++) {
        NewCollective inst;
        inst.call = MPA_CALL_Allreduce, inst.bytes = 8;
        for (int r = 0; r < 6; r++) {
          Op op;
          REQUIRE(op.set_times(1000u * (c + 1) + 50u * r, 1000u * (c + 1) + 600));
          op.call = MPA_CALL_Allreduce, op.kind = OpKind::Collective;
          a.set_links(op, static_cast<uint32_t>(a.links.size()), 1);
          a.links.push_back(Link{Link::PostColl, c});
          inst.members.emplace_back(r, static_cast<uint32_t>(a.ranks[r].ops.size()));
          inst.sent.push_back(8), inst.received.push_back(8);
          a.ranks[r].ops.push_back(op);
        }
        a.collectives.push_back(inst);
      }
      ReplayOptions mpich = o;
      mpich.mpi_library = "MPICH";
      const ReplayResult serial = replay(a, mpich), spread = spread_replay(a, mpich, 3);
      require_same(serial, spread, false);
      INFO("instances held: serial " << serial.collectives_held << ", spread " << spread.collectives_held);
      CHECK(serial.collectives_closed_formula == 300);
      CHECK(serial.collectives_held <= 2);
      CHECK(spread.collectives_held <= serial.collectives_held);
      CHECK(check_streamed_replays(a, mpich) >= 10);
    }
    // three ranks more: one of a single MPI_Init, one of MPI_Init and MPI_Finalize, one of none (windows
    // empty, and tails)
    const Trace ring = t;
    auto bare_op = [](uint8_t call, uint64_t enter) {
      Op op;
      op.call = call;
      REQUIRE(op.set_times(enter, enter + 100));
      return op;
    };
    t.world_size = 11;
    t.ranks.resize(11);
    t.site_keys.resize(11);
    for (int r : {8, 9, 10}) t.ranks[r].rank = r;
    t.ranks[8].ops = {bare_op(MPA_CALL_Init, 0)};
    t.ranks[9].ops = {bare_op(MPA_CALL_Init, 0), bare_op(MPA_CALL_Finalize, 5000)};
    t.receives_together = receives_together(t);
    o.compute_factor = 0.5;  // the tails' computation
    CHECK(check_streamed_replays(t, o) >= 10);
    o.compute_factor = 1;
    // one stream of 8 ranks; streams of another trace; a trace without its ops, messages or receives together
    auto streams_of = [](const Trace& of, int n) {
      auto s = std::make_shared<std::vector<OpStream>>();
      for (int r = 0; r < n; r++) s->push_back(OpStream::encode(of, r));
      return s;
    };
    o.streams = streams_of(ring, 1);
    CHECK_THROWS_WITH(replay(ring, o), Catch::Contains("1 op streams") && Catch::Contains("trace of 8 ranks"));
    o.streams = streams_of(t, 11);
    t.ranks[9].ops.pop_back();
    CHECK_THROWS_WITH(replay(t, o), Catch::Contains("the op stream of rank 9 holds 2 ops where the trace holds 1"));
    o.streams = streams_of(ring, 8);
    Trace bare = ring;
    for (RankTrace& rank : bare.ranks) rank.ops.clear();
    bare.messages.clear();
    bare.receives_together.reset();
    ReplayOptions from_trace = o;
    from_trace.streams = nullptr;
    CHECK(replay(bare, o).predicted_ns == replay(ring, from_trace).predicted_ns);
    o.mode = ReplayMode::Paper;
    CHECK_THROWS_WITH(replay(ring, o), Catch::Contains("for the simulation mode"));
  }
}

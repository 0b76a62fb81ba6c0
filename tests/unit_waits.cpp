// Wait states and hot spots on traces written by hand: which site waited, why, on which messages, and
// whom it made wait.
#include <catch2/catch.hpp>

#include "advice.hpp"
#include "waits.hpp"

using namespace mpiadvise;
using Catch::Detail::Approx;

namespace {

// A model whose only concern here is S: sends above it wait for their receiver.
LogGPS eager_limit(uint64_t S) {
  LogGPSParams p;
  p.s = p.S = S;
  return LogGPS(p);
}

struct Builder {
  Trace t;
  explicit Builder(int ranks) {
    t.world_size = ranks;
    t.ranks.resize(static_cast<size_t>(ranks));
    t.site_keys.resize(static_cast<size_t>(ranks));
    TraceComm world;
    for (int r = 0; r < ranks; r++) t.ranks[r].rank = r, world.members.push_back(r);
    t.comms.push_back(world);
  }
  uint32_t op(int rank, uint64_t enter, uint64_t exit, uint32_t call, OpKind kind, uint32_t callsite,
              std::vector<Link> links) {
    Op o;
    REQUIRE(o.set_times(enter, exit));
    o.call = call, o.kind = kind, o.callsite = callsite;
    t.set_links(o, static_cast<uint32_t>(t.links.size()), static_cast<uint32_t>(links.size()));
    for (const Link& l : links) t.links.push_back(l);
    t.site_keys[rank][callsite] = SiteKey{"app", 0x100u * callsite + static_cast<uint64_t>(rank), ""};
    t.ranks[rank].ops.push_back(o);
    return static_cast<uint32_t>(t.ranks[rank].ops.size() - 1);
  }
  // A blocking send from rank 0 (site 1) to rank 1 (site 2), the receive posted at recv_at.
  void message(uint64_t bytes, uint64_t send_at, uint64_t recv_at, uint64_t done_at) {
    const uint32_t id = static_cast<uint32_t>(t.messages.size());
    Message m;
    m.src = 0, m.dst = 1, m.bytes = bytes;
    m.send_op =
        op(0, send_at, done_at, MPA_CALL_Send, OpKind::Send, 1, {{Link::PostSend, id}, {Link::DoneSend, id}});
    m.recv_op =
        op(1, recv_at, done_at, MPA_CALL_Recv, OpKind::Recv, 2, {{Link::PostRecv, id}, {Link::DoneRecv, id}});
    t.messages.push_back(m);
  }
};

}  // namespace

TEST_CASE("a send site's hot spot lists the sizes of the waits of its main cause only", "[waits]") {
  // the site sends 1-byte messages that still wait a little (an eager message held back, 1 us each) and
  // 128 KiB rendezvous messages that wait for a late receiver (100 us each): the hot spot is a
  // rendezvous one, and its sizes are those of the rendezvous messages, not the 1-byte ones
  Builder b(2);
  uint64_t now = 0;
  for (int i = 0; i < 4; i++) {
    b.message(1, now, now + 1'000, now + 1'100);
    now += 10'000;
    b.message(131072, now, now + 100'000, now + 120'000);
    now += 200'000;
  }
  WaitStates w = measure_waits(b.t, eager_limit(65536));
  auto spots = hot_spots(b.t, w, 10);
  const HotSpot* send = nullptr;
  for (const auto& h : spots)
    if (h.call == MPA_CALL_Send) send = &h;
  REQUIRE(send);
  CHECK(send->cause == WaitCause::LateReceiverRendezvous);
  CHECK(send->waited_ns == Approx(4 * 100'000 + 4 * 1'000));
  REQUIRE(send->size_log2.size() == 1);
  CHECK(send->size_log2.begin()->first == 17);  // 131072 = 2^17
  CHECK(send->size_log2.begin()->second == 4);
  // the send made the receiver wait nothing, the receive made the sender wait all of it
  CHECK(send->caused_ns == Approx(0));
}

TEST_CASE("waiting at a collective is charged to the waiting ranks, and no site is said to have caused it",
          "[waits]") {
  // three ranks enter an Allreduce at 0, 100 and 1000 us: ranks 0 and 1 wait for rank 2; the site of the
  // Allreduce did not make them wait (rank 2's computation did)
  Builder b(3);
  NewCollective c;
  c.call = MPA_CALL_Allreduce;
  const uint64_t enter[] = {0, 100'000, 1'000'000};
  for (int r = 0; r < 3; r++)
    c.members.emplace_back(r, b.op(r, enter[r], 1'010'000, MPA_CALL_Allreduce, OpKind::Collective, 7, {{Link::PostColl, 0}}));
  b.t.collectives.push_back(c);
  WaitStates w = measure_waits(b.t, eager_limit(65536));
  CHECK(w.total(WaitCause::Collective) == Approx(1'000'000 + 900'000));
  auto spots = hot_spots(b.t, w, 10);
  REQUIRE(!spots.empty());
  for (const auto& h : spots) {
    CHECK(h.cause == WaitCause::Collective);
    CHECK(h.caused_ns == Approx(0));
  }
}

// The replay on traces written by hand: each test builds the matched trace a small program would give,
// so the expected times follow from the model's equations and the ops' recorded times alone.
#include <catch2/catch.hpp>

#include <atomic>
#include <cmath>
#include <stdexcept>

#include "../bench/ring_trace.hpp"
#include "hang.hpp"
#include "parallel.hpp"
#include "receive_side.hpp"
#include "replay.hpp"
#include "support.hpp"

using namespace mpiadvise;
using Catch::Detail::Approx;

namespace {

// A world of `ranks` ranks on one communicator, no ops yet.
Trace empty_trace(int ranks) {
  Trace t;
  t.world_size = ranks;
  t.ranks.resize(static_cast<size_t>(ranks));
  t.site_keys.resize(static_cast<size_t>(ranks));
  TraceComm world;
  for (int r = 0; r < ranks; r++) t.ranks[r].rank = r, world.members.push_back(r);
  t.comms.push_back(world);
  return t;
}

void add_op(Trace& t, int rank, uint64_t enter, uint64_t exit, uint32_t call, OpKind kind,
            std::vector<Link> links = {}) {
  Op op;
  REQUIRE(op.set_times(enter, exit));
  op.call = call;
  op.kind = kind;
  t.set_links(op, static_cast<uint32_t>(t.links.size()), static_cast<uint32_t>(links.size()));
  for (const Link& l : links) t.links.push_back(l);
  t.ranks[rank].ops.push_back(op);
}

// Every rank enters `n` barriers: barrier c on every rank from 1000 c + 100 r to 1000 c + 500. Non-blocking:
// MPI_Ibarrier c posted on every rank from 1000 c + 100 r, completed by an MPI_Wait 200 ns of computation
// later, until 1000 c + 900.
Trace barriers_only(int ranks, int n, bool nonblocking = false) {
  Trace t = empty_trace(ranks);
  for (int c = 0; c < n; c++) {
    NewCollective inst;
    inst.call = nonblocking ? MPA_CALL_Ibarrier : MPA_CALL_Barrier;
    for (int r = 0; r < ranks; r++) {
      const uint64_t at = 1000u * (c + 1) + 100u * r;
      const Link post{Link::PostColl, static_cast<uint32_t>(c)};
      inst.members.emplace_back(r, static_cast<uint32_t>(t.ranks[r].ops.size()));
      if (!nonblocking) {
        add_op(t, r, at, 1000u * (c + 1) + 500, MPA_CALL_Barrier, OpKind::Collective, {post});
        continue;
      }
      add_op(t, r, at, at + 50, MPA_CALL_Ibarrier, OpKind::PostCollective, {post});
      add_op(t, r, at + 250, 1000u * (c + 1) + 900, MPA_CALL_Wait, OpKind::Completion,
             {Link{Link::DoneColl, static_cast<uint32_t>(c)}});
    }
    t.collectives.push_back(inst);
  }
  return t;
}

// Rank 0 sends five 100-byte messages with MPI_Send, one every 1000 ns (each call 100 ns, 900 ns of
// computation between); rank 1 computes until 100000 ns, then receives them, one call every 200 ns.
Trace five_sends_to_a_late_receiver() {
  Trace t = empty_trace(2);
  for (uint32_t i = 0; i < 5; i++) {
    Message m;
    m.src = 0, m.dst = 1, m.bytes = 100, m.tag = 0;
    m.send_op = i;
    m.recv_op = i;
    t.messages.push_back(m);
    add_op(t, 0, 1000 + 1000 * i, 1100 + 1000 * i, MPA_CALL_Send, OpKind::Send,
           {Link{Link::PostSend, i}, Link{Link::DoneSend, i}});
    add_op(t, 1, 100000 + 200 * i, 100100 + 200 * i, MPA_CALL_Recv, OpKind::Recv,
           {Link{Link::PostRecv, i}, Link{Link::DoneRecv, i}});
  }
  return t;
}

LogGPSParams some_params() {
  LogGPSParams p;
  p.L = 1000;
  p.o = 500;
  p.Oss = p.Ors = p.Osl = p.Orl = 0.1;
  p.Gs = p.Gl = 0.2;
  p.s = p.S = 4096;
  return p;
}

}  // namespace

TEST_CASE("paper mode keeps the measured time of collectives in a run with no messages", "[replay][paper]") {
  // A collective's links carry a collective id; read as a message id they ran past the (empty) message
  // list: the replay crashed on every run with more collectives than messages.
  Trace t = barriers_only(2, 3);
  ReplayOptions o;
  o.params = some_params();
  o.mode = ReplayMode::Paper;
  ReplayResult r = replay(t, o);
  REQUIRE(r.ranks.size() == 2);
  // rank 0: barriers of 500 ns each, separated by 500 ns of computation
  CHECK(r.ranks[0].predicted.collectives == Approx(3 * 500));
  CHECK(r.ranks[0].predicted.computation == Approx(2 * 500));
  // rank 1 enters each barrier 100 ns later and leaves with rank 0
  CHECK(r.ranks[1].predicted.collectives == Approx(3 * 400));
  CHECK(r.ranks[1].predicted.computation == Approx(2 * 600));
  CHECK(r.measured_ns == Approx(3500 - 1000));
  CHECK(r.predicted_ns == Approx(r.measured_ns));
}

TEST_CASE("paper mode tells a collective's links from a message's when both are in the run", "[replay][paper]") {
  // one message (rank 0 -> rank 1, 100 bytes, eager) after three barriers: collective ids 1 and 2 are
  // past the end of the message list, id 0 names the message
  Trace t = barriers_only(2, 3);
  Message m;
  m.src = 0;
  m.dst = 1;
  m.bytes = 100;
  m.send_op = 3;
  m.recv_op = 3;
  t.messages.push_back(m);
  add_op(t, 0, 4000, 4100, MPA_CALL_Send, OpKind::Send, {Link{Link::PostSend, 0}, Link{Link::DoneSend, 0}});
  add_op(t, 1, 4000, 6000, MPA_CALL_Recv, OpKind::Recv, {Link{Link::PostRecv, 0}, Link{Link::DoneRecv, 0}});
  ReplayOptions o;
  o.params = some_params();
  o.mode = ReplayMode::Paper;
  ReplayResult r = replay(t, o);
  LogGPS model(o.params);
  CHECK(r.ranks[0].predicted.collectives == Approx(3 * 500));
  CHECK(r.ranks[1].predicted.collectives == Approx(3 * 400));
  // Table 4 for the message, both posted at 4000: (4) for the send, (7)/(8) for the receive; rank 1's
  // window starts 100 ns after rank 0's
  CHECK(r.ranks[0].predicted_ns - r.ranks[0].predicted.computation - r.ranks[0].predicted.collectives ==
        Approx(model.send(100, 4000, 4000)));
  CHECK(r.ranks[1].predicted_ns - 100 - r.ranks[1].predicted.computation - r.ranks[1].predicted.collectives ==
        Approx(model.recv(100, 4000, 4000)));
}

TEST_CASE("the computation after a rank's last call, up to MPI_Finalize, is part of its predicted time",
          "[replay]") {
  // three barriers, then 2000 ns (rank 0) and 3000 ns (rank 1) of work before MPI_Finalize: the replay
  // stopped at the last barrier, so a program that prints or frees at its end was predicted short by that
  // much in both modes (2.9 ms of a 60 ms halo run)
  for (ReplayMode mode : {ReplayMode::Simulate, ReplayMode::Paper}) {
    Trace t = barriers_only(2, 3);
    add_op(t, 0, 3500 + 2000, 3600 + 2000, MPA_CALL_Finalize, OpKind::Other);
    add_op(t, 1, 3500 + 3000, 3600 + 3000, MPA_CALL_Finalize, OpKind::Other);
    ReplayOptions o;
    o.params = some_params();
    o.mode = mode;
    ReplayResult r = replay(t, o);
    REQUIRE(r.ranks.size() == 2);
    CHECK(r.ranks[0].measured_ns == Approx(3500 + 2000 - 1000));
    CHECK(r.ranks[1].measured_ns == Approx(3500 + 3000 - 1000));
    if (mode == ReplayMode::Paper) {  // the measured collectives: the replay is the run
      CHECK(r.ranks[0].predicted.computation == Approx(2 * 500 + 2000));
      CHECK(r.ranks[1].predicted.computation == Approx(2 * 600 + 3000));
      CHECK(r.predicted_ns == Approx(r.measured_ns));
    } else {  // the modelled barriers may differ; the tail is added whole
      Trace no_tail = barriers_only(2, 3);
      ReplayResult base = replay(no_tail, o);
      CHECK(r.ranks[0].predicted_ns == Approx(base.ranks[0].predicted_ns + 2000));
      CHECK(r.ranks[1].predicted_ns == Approx(base.ranks[1].predicted_ns + 3000));
    }
  }
}

TEST_CASE("an eager send waits for room in a late receiver's eager buffer, and goes on once the receiver is in MPI",
          "[replay][eager-buffer]") {
  // five_sends_to_a_late_receiver. The buffer holds 300 bytes, each message taking 100 + 50: two messages.
  Trace t = five_sends_to_a_late_receiver();
  ReplayOptions o;
  o.params = some_params();  // o' 500, L 1000, Oss = Ors 0.1, Gs 0.2: T1 = T3 = 510, transfer 1020
  SECTION("unlimited: every send returns after its overhead") {
    ReplayResult r = replay(t, o);
    CHECK(r.ranks[0].predicted.send_wait == Approx(0));
    CHECK(r.ranks[0].predicted_ns == Approx(4 * (510 + 900) + 510));
  }
  SECTION("a buffer of two messages") {
    o.params.eager_buffer_bytes = 300;
    o.params.eager_header_bytes = 50;
    ReplayResult r = replay(t, o);
    // Times from rank 0's start. Sends 0 and 1 start at 0 and 1410 and fill the buffer. Send 2, posted at
    // 2820, waits until rank 1 first enters MPI (at 99000: its first receive, 100000 - 1000) and takes
    // message 0: 96180 ns of send-wait, done at 99510. Send 3, posted at 100410, finds messages 0 and 1
    // taken at 99000 and only message 2 (arriving at 100530) in the buffer: no wait. Send 4, at 101820,
    // finds message 2 taken at its arrival (rank 1 is in its receive from 100220) and 3 not yet.
    CHECK(r.ranks[0].predicted.send_wait == Approx(99000 - 2820));
    CHECK(r.ranks[0].predicted_ns == Approx(99000 + 510 + 900 + 510 + 900 + 510));
  }
  SECTION("a buffer counted in messages") {
    o.params.eager_buffer_messages = 2;
    ReplayResult r = replay(t, o);
    CHECK(r.ranks[0].predicted.send_wait == Approx(99000 - 2820));
  }
}

TEST_CASE("the simulation holds the state of the messages in flight, not of every message of the run",
          "[replay][memory]") {
  // The benches' ring (bench/ring_trace.hpp): each round a rank receives from its left and sends to its
  // right, then waits for both, so no rank gets more than a round ahead of its neighbours: a rank's two
  // messages of a round and of the next are all it can have in flight. Ten times the rounds (16,000
  // messages against 1,600) hold no more at once.
  ReplayOptions o;
  o.params = some_params();
  SECTION("an unlimited eager buffer") {}
  SECTION("a limited one: an eager message is held until its receiver took it out of the buffer") {
    o.params.eager_buffer_bytes = 64 * 1024;
  }
  const int ranks = 8;
  const ReplayResult shorter = replay(bench::ring_trace(ranks, 200), o);
  const ReplayResult longer = replay(bench::ring_trace(ranks, 2000), o);
  CHECK(longer.messages_held == shorter.messages_held);
  CHECK(longer.messages_held > 0);
  CHECK(longer.messages_held <= 4 * ranks);
  CHECK(longer.unresolved_ops == 0);
}

TEST_CASE("the simulation holds the state of the collective instances in flight, not of every instance of the run",
          "[replay][memory]") {
  // A rank leaves a barrier only once every rank entered it: no rank is more than one instance ahead of
  // another, so two instances at most are in flight at once, however many the run has. Each instance's
  // state goes once every member took its completion (the blocking call's return, or the MPI_Wait's).
  ReplayOptions o;
  o.params = some_params();
  SECTION("Open MPI's algorithms") { o.mpi_library = "Open MPI"; }
  SECTION("MPICH's algorithms") { o.mpi_library = "MPICH"; }
  SECTION("the closed formula") { o.mpi_library = "another MPI"; }
  const int ranks = 8;
  for (bool nonblocking : {false, true}) {
    const ReplayResult shorter = replay(barriers_only(ranks, 20, nonblocking), o);
    const ReplayResult longer = replay(barriers_only(ranks, 400, nonblocking), o);
    INFO("held: " << shorter.collectives_held << " of 20 instances, " << longer.collectives_held << " of 400");
    CHECK(longer.collectives_held == shorter.collectives_held);
    CHECK(longer.collectives_held >= 1);
    CHECK(longer.collectives_held <= 2);
    CHECK(longer.unresolved_ops == 0);
    CHECK(longer.collectives_by_algorithm + longer.collectives_closed_formula == 400);
    CHECK((longer.collectives_by_algorithm == 400) == (o.mpi_library != "another MPI"));
  }
}

TEST_CASE("a run stopped in a receive from any source on a communicator the log does not know", "[hang]") {
  // rank 0 was stopped inside MPI_Recv(MPI_ANY_SOURCE) on a communicator handle its log never defined (the
  // message's comm kMaxComms - 1, as build_trace stores one); rank 1 was computing
  Trace t = empty_trace(2);
  Message m;
  m.src = -1, m.dst = 0, m.bytes = 8;
  m.comm = kMaxComms - 1;
  m.recv_op = 0;
  t.messages.push_back(m);
  add_op(t, 0, 1000, 5000, MPA_CALL_Recv, OpKind::Recv, {Link{Link::PostRecv, 0}});
  t.ranks[0].ops.back().unfinished = true;
  add_op(t, 1, 1000, 1200, MPA_CALL_Barrier, OpKind::Other);
  const HangState h = mpa_test::require_same_hang_state(t);  // from the op streams too
  REQUIRE(h.ranks.size() == 2);
  CHECK(h.ranks[0].state == HangState::State::InMpi);
  CHECK(h.ranks[0].any_source);
  CHECK(h.ranks[0].waits_for.empty());  // whom: not known
  CHECK(h.ranks[1].state == HangState::State::Computing);
}

TEST_CASE("a rank stopped in a wait that completes nothing waits for the peers of what it posted and never "
          "completed, from the trace and from its op streams", "[hang]") {
  // Rank 0 posted, before the MPI_Wait it was stopped in (which names no request of the trace): a send
  // rank 1 received and completed (not waited for), one rank 2 posted the receive of and never completed
  // (waits for 2), one no receive took (3), a blocking send (its own call's), a send its own MPI_Wait
  // completed, a receive of rank 4's send (4), a receive from any source on a communicator of ranks 0
  // and 5 (5), and a receive from rank 1 it completed. Each of the first, fourth, fifth and last goes to
  // rank 1, so that a reader that kept any of them would name rank 1. Rank 2, stopped in a barrier that
  // links nothing, waits for rank 0, whose send it never completed receiving. Rank 3, stopped in an
  // MPI_Ssend no receive took, waits for its receiver, 4; rank 5, stopped in an MPI_Recv that rank 4's
  // send matched (its stream carries the sender's fields in `received` alone), for its sender, 4, which finished.
  Trace t = empty_trace(6);
  TraceComm pair;
  pair.members = {0, 5};
  t.comms.push_back(pair);
  auto message = [&](int src, int dst, uint32_t comm = 0) {
    Message m;
    m.src = src, m.dst = dst, m.bytes = 64, m.tag = 3, m.comm = comm;
    t.messages.push_back(m);
    return static_cast<uint32_t>(t.messages.size() - 1);
  };
  const uint32_t received = message(0, 1), pending = message(0, 2), unanswered = message(0, 3), blocking = message(0, 1),
                 completed = message(0, 1), from_1 = message(1, 0), from_4 = message(4, 0), any = message(-1, 0, 1),
                 ssend = message(3, 4), to_5 = message(4, 5);
  auto post = [&](int r, uint64_t at, uint32_t call, OpKind kind, Link::Kind side, uint32_t id) {
    Message& m = t.messages[id];
    (side == Link::PostSend ? m.send_op : m.recv_op) = static_cast<uint32_t>(t.ranks[r].ops.size());
    add_op(t, r, at, at + 10, call, kind, {Link{side, id}});
  };
  post(0, 100, MPA_CALL_Isend, OpKind::PostSend, Link::PostSend, received);
  post(0, 200, MPA_CALL_Isend, OpKind::PostSend, Link::PostSend, pending);
  post(0, 300, MPA_CALL_Isend, OpKind::PostSend, Link::PostSend, unanswered);
  post(0, 400, MPA_CALL_Send, OpKind::Send, Link::PostSend, blocking);
  post(0, 500, MPA_CALL_Isend, OpKind::PostSend, Link::PostSend, completed);
  post(0, 600, MPA_CALL_Irecv, OpKind::PostRecv, Link::PostRecv, from_4);
  add_op(t, 0, 700, 710, MPA_CALL_Wait, OpKind::Completion, {Link{Link::DoneSend, completed}});
  post(0, 800, MPA_CALL_Irecv, OpKind::PostRecv, Link::PostRecv, any);
  post(0, 900, MPA_CALL_Irecv, OpKind::PostRecv, Link::PostRecv, from_1);
  add_op(t, 0, 1000, 1010, MPA_CALL_Wait, OpKind::Completion, {Link{Link::DoneRecv, from_1}});
  add_op(t, 0, 1100, 9000, MPA_CALL_Wait, OpKind::Completion);
  t.ranks[0].ops.back().unfinished = true;
  post(1, 150, MPA_CALL_Irecv, OpKind::PostRecv, Link::PostRecv, received);
  add_op(t, 1, 250, 260, MPA_CALL_Wait, OpKind::Completion, {Link{Link::DoneRecv, received}});
  post(1, 850, MPA_CALL_Isend, OpKind::PostSend, Link::PostSend, from_1);
  add_op(t, 1, 950, 960, MPA_CALL_Finalize, OpKind::Other);
  post(2, 250, MPA_CALL_Irecv, OpKind::PostRecv, Link::PostRecv, pending);
  add_op(t, 2, 300, 9000, MPA_CALL_Barrier, OpKind::Other);
  t.ranks[2].ops.back().unfinished = true;
  post(3, 100, MPA_CALL_Ssend, OpKind::SyncSend, Link::PostSend, ssend);
  t.ranks[3].ops.back().unfinished = true;
  post(4, 550, MPA_CALL_Isend, OpKind::PostSend, Link::PostSend, from_4);
  post(4, 560, MPA_CALL_Isend, OpKind::PostSend, Link::PostSend, to_5);
  add_op(t, 4, 650, 660, MPA_CALL_Finalize, OpKind::Other);
  post(5, 100, MPA_CALL_Recv, OpKind::Recv, Link::PostRecv, to_5);
  t.ranks[5].ops.back().unfinished = true;
  const HangState h = mpa_test::require_same_hang_state(t);
  REQUIRE(h.ranks.size() == 6);
  CHECK(h.ranks[0].state == HangState::State::InMpi);
  CHECK(h.ranks[0].waits_for == std::vector<int>{2, 3, 4, 5});
  CHECK(h.ranks[0].any_source);
  CHECK(h.ranks[2].state == HangState::State::InMpi);
  CHECK(h.ranks[2].waits_for == std::vector<int>{0});
  CHECK(h.deadlocks == std::vector<std::vector<int>>{{0, 2}});
  CHECK(h.ranks[3].waits_for == std::vector<int>{4});
  CHECK(h.ranks[4].state == HangState::State::Finished);
  CHECK(h.ranks[5].waits_for == std::vector<int>{4});
  CHECK(h.waited_for == std::vector<int>{4});
}

TEST_CASE("a rank's predicted parts are its computation and its call sites' parts, and they add up to its time",
          "[replay][breakdown]") {
  // The report divides each rank's time by cause and by call site: the rank's parts are summed from its
  // sites' when the replay ends. Rank 0 sends five 100-byte messages into a buffer of two (waits for room),
  // rank 1 receives them late; made non-blocking, the sends complete at the next call, the last one at
  // MPI_Finalize (a wait that is the rank's, at no site).
  Trace t = five_sends_to_a_late_receiver();
  ReplayOptions o;
  o.params = some_params();
  o.params.eager_buffer_bytes = 300;
  o.params.eager_header_bytes = 50;
  auto check_parts = [](const ReplayResult& r) {
    for (const RankReplay& rank : r.ranks) {
      Breakdown sites;
      uint64_t calls = 0;
      for (const SiteReplay& s : r.sites)
        if (s.rank == rank.rank) {
          CHECK(s.predicted.computation == 0);
          sites += s.predicted;
          calls += s.calls;
        }
      CHECK(calls == 5);
      const Breakdown& b = rank.predicted;
      CHECK(b.send_overhead == Approx(sites.send_overhead));
      CHECK(b.recv_overhead == Approx(sites.recv_overhead));
      CHECK(b.recv_wait == Approx(sites.recv_wait));
      CHECK(b.synchronisation == Approx(sites.synchronisation));
      CHECK(b.collectives == Approx(sites.collectives));
      CHECK(b.other == Approx(sites.other));
      CHECK(b.send_wait >= sites.send_wait);  // and a non-blocking send's wait at MPI_Finalize
      CHECK(b.total() > b.computation);
    }
    // rank 0 starts the run: its parts are its whole predicted time
    CHECK(r.ranks[0].predicted.total() == Approx(r.ranks[0].predicted_ns));
  };
  SECTION("blocking sends") {
    ReplayResult r = replay(t, o);
    check_parts(r);
    CHECK(r.ranks[0].predicted.send_wait == Approx(99000 - 2820));  // as in the eager-buffer case above
  }
  SECTION("the sends made non-blocking") {
    o.nonblocking_everywhere = true;
    ReplayResult r = replay(t, o);
    check_parts(r);
  }
}

TEST_CASE("posting an MPI_Isend or MPI_Irecv costs what the set measured for it, o' where it has none",
          "[replay][posts]") {
  // Rank 0: MPI_Isend of 100 bytes at 1000 ns, computes, MPI_Wait at 5000. Rank 1: MPI_Irecv at 1000
  // (50 ns), computes, MPI_Wait at 5000. some_params: o' 500, T1 = T3 = 510, transfer 1020.
  Trace t = empty_trace(2);
  Message m;
  m.src = 0, m.dst = 1, m.bytes = 100, m.tag = 0;
  m.send_op = m.recv_op = 0;
  t.messages.push_back(m);
  add_op(t, 0, 1000, 1100, MPA_CALL_Isend, OpKind::PostSend, {Link{Link::PostSend, 0}});
  add_op(t, 0, 5000, 5100, MPA_CALL_Wait, OpKind::Completion, {Link{Link::DoneSend, 0}});
  add_op(t, 1, 1000, 1050, MPA_CALL_Irecv, OpKind::PostRecv, {Link{Link::PostRecv, 0}});
  add_op(t, 1, 5000, 5100, MPA_CALL_Wait, OpKind::Completion, {Link{Link::DoneRecv, 0}});
  ReplayOptions o;
  o.params = some_params();
  for (ReplayMode mode : {ReplayMode::Simulate, ReplayMode::Paper}) {
    o.mode = mode;
    CAPTURE(mode == ReplayMode::Paper);
    // the paper's (6) and (10): each post o'. Then the computation as recorded (3900 and 3950 ns), then
    // each Wait: the eager send done at 510 and the message in at 1530 + 510 long before, so (11) gives o'.
    ReplayResult paper = replay(t, o);
    CHECK(paper.ranks[0].predicted_ns == Approx(500 + 3900 + 500));
    CHECK(paper.ranks[1].predicted_ns == Approx(500 + 3950 + 500));
    o.params.isend_ns = 200;
    o.params.irecv_ns = 30;
    ReplayResult measured = replay(t, o);
    CHECK(measured.ranks[0].predicted_ns == Approx(200 + 3900 + 500));
    CHECK(measured.ranks[1].predicted_ns == Approx(30 + 3950 + 500));
    CHECK(measured.ranks[1].predicted.recv_overhead == Approx(30 + 500));
    o.params.isend_ns.reset();
    o.params.irecv_ns.reset();
  }
}

TEST_CASE("replay_all gives each what-if what replay gives it, in order, on any number of threads", "[replay][threads]") {
  // rank 0 sends ten messages of 1000 to 10000 bytes; rank 1 receives them late: under S = 4096 the
  // larger ones wait for it, and each what-if below moves S or the computation
  Trace t = empty_trace(2);
  for (uint32_t i = 0; i < 10; i++) {
    Message m;
    m.src = 0, m.dst = 1, m.bytes = 1000u * (i + 1);
    m.send_op = m.recv_op = i;
    t.messages.push_back(m);
    add_op(t, 0, 1000 + 2000 * i, 1100 + 2000 * i, MPA_CALL_Send, OpKind::Send, {Link{Link::PostSend, i}, Link{Link::DoneSend, i}});
    add_op(t, 1, 5000 + 3000 * i, 5100 + 3000 * i, MPA_CALL_Recv, OpKind::Recv, {Link{Link::PostRecv, i}, Link{Link::DoneRecv, i}});
  }
  std::vector<ReplayOptions> whatifs;
  for (uint64_t S : {0, 1024, 4096, 8192, 65536}) {
    ReplayOptions& o = whatifs.emplace_back();
    o.params = some_params();
    o.params.move_S(S);
    o.compute_factor = S == 8192 ? 0.5 : 1.0;
  }
  std::vector<ReplayResult> serial;
  for (const auto& o : whatifs) serial.push_back(replay(t, o));
  CHECK(serial[0].predicted_ns != serial[4].predicted_ns);  // the what-ifs differ
  for (unsigned threads : {1u, 2u, 3u, 8u}) {
    set_analysis_threads(threads);
    CHECK(analysis_threads() == threads);
    const std::vector<ReplayResult> parallel = replay_all(t, whatifs);
    REQUIRE(parallel.size() == serial.size());
    for (size_t i = 0; i < serial.size(); i++) {
      CHECK(parallel[i].predicted_ns == serial[i].predicted_ns);
      CHECK(parallel[i].rendezvous_messages == serial[i].rendezvous_messages);
      for (size_t r = 0; r < serial[i].ranks.size(); r++)
        CHECK(parallel[i].ranks[r].predicted.send_wait == serial[i].ranks[r].predicted.send_wait);
    }
  }
  set_analysis_threads(0);
  CHECK(analysis_threads() >= 1);
}

TEST_CASE("parallel_for calls each index once, and a failure in one reaches the caller", "[replay][threads]") {
  set_analysis_threads(4);
  std::vector<std::atomic<int>> calls(1000);
  parallel_for(calls.size(), [&](size_t i) { calls[i]++; });
  int wrong = 0;
  for (const auto& c : calls) wrong += c.load() != 1;
  CHECK(wrong == 0);
  CHECK_THROWS_WITH(parallel_for(100, [](size_t i) {
                      if (i == 37) throw std::runtime_error("index 37 failed");
                    }),
                    "index 37 failed");
  parallel_for(0, [](size_t) { FAIL("no index to call"); });
  set_analysis_threads(0);
}

TEST_CASE("data sent again unchanged is priced at the set's [resend] factor for its path", "[replay][resend]") {
  // Rank 0 sends 100000 bytes from one buffer three times with MPI_Send (calls of 100 ns), an MPI_Iprobe
  // between each two: the second send comes after 400 + 450 ns of computation (less than rewriting 100000
  // bytes at the run's 64 B/ns, 1563 ns, takes), the third after 2900 + 7050. Both are RESENT; the second
  // alone is cached. Rank 1 posts its receives first.
  Trace t = empty_trace(2);
  t.rewrite_bytes_per_ns = 64;
  const uint64_t sends[3] = {1000, 2000, 12100}, probes[2] = {1500, 5000};
  for (uint32_t i = 0; i < 3; i++) {
    Message m;
    m.src = 0, m.dst = 1, m.bytes = 100000, m.tag = 0;
    m.resent = i > 0;
    m.send_op = 2 * i;
    m.recv_op = i;
    t.messages.push_back(m);
    add_op(t, 0, sends[i], sends[i] + 100, MPA_CALL_Send, OpKind::Send, {Link{Link::PostSend, i}, Link{Link::DoneSend, i}});
    if (i < 2) add_op(t, 0, probes[i], probes[i] + 50, MPA_CALL_Iprobe, OpKind::Other);
    add_op(t, 1, 100 + 100 * i, 150 + 100 * i, MPA_CALL_Recv, OpKind::Recv, {Link{Link::PostRecv, i}, Link{Link::DoneRecv, i}});
  }
  // on a machine that rewrites 100000 bytes in 850 ns (117.6 B/ns or faster) neither is cached; just
  // below, the second is
  t.rewrite_bytes_per_ns = 118;
  mark_cached_resends(t);
  CHECK_FALSE(t.messages[1].cached);
  t.rewrite_bytes_per_ns = 117;
  mark_cached_resends(t);
  CHECK(t.messages[1].cached);
  t.rewrite_bytes_per_ns = 64;
  mark_cached_resends(t);
  CHECK_FALSE(t.messages[0].cached);  // not RESENT
  CHECK(t.messages[1].cached);
  CHECK_FALSE(t.messages[2].cached);  // time enough to have written the buffer again
  ReplayOptions o;
  o.params = some_params();  // o' 500, L 1000, Oss = Ors = Osl = Orl 0.1 ns/B, Gs = Gl 0.2
  o.params.s = o.params.S = 1 << 20;  // every message eager: copied through the library's buffers
  auto sent = [&] { return replay(t, o).ranks[0].predicted.send_overhead; };
  auto received = [&] { return replay(t, o).ranks[1].predicted.recv_overhead; };
  // each send T1 = o' + k Oss = 10500 ns, each receive T3 = o' + k Ors = 10500 ns
  CHECK(sent() == Approx(3 * 10500));
  CHECK(received() == Approx(3 * 10500));
  // a factor for the rendezvous path changes no eager message
  o.params.resend_rendezvous = 0.1;
  CHECK(sent() == Approx(3 * 10500));
  // half the per-byte costs for the cached one, on both sides: its T1 and T3 are 500 + 5000
  o.params.resend_buffered = 0.5;
  CHECK(sent() == Approx(3 * 10500 - 5000));
  CHECK(received() == Approx(3 * 10500 - 5000));
  // with S below the size the messages go by the rendezvous, the cached one priced by its own factor. Its
  // whole communication halves: R (2000 ns), and k Osl, k Gl, k Orl (100000 x 0.4 ns): rank 1 posts its
  // third receive only when the second completes, (9), and rank 0's third send waits for it: rank 0 ends
  // (2000 + 40000) / 2 ns sooner
  o.params.s = o.params.S = 4096;
  o.params.R = 2000;
  o.params.resend_rendezvous.reset();
  const double rendezvous_fresh = replay(t, o).ranks[0].predicted_ns;
  o.params.resend_rendezvous = 0.5;
  CHECK(replay(t, o).ranks[0].predicted_ns == Approx(rendezvous_fresh - 21000));
  // the buffered factor does not touch it
  o.params.resend_rendezvous.reset();
  CHECK(replay(t, o).ranks[0].predicted_ns == Approx(rendezvous_fresh));
  // the paper's replay prices it too: from the recorded call times, the cached send's (5) alone, whose R (in
  // T5) and k Osl (in T1') halve: 1000 + 5000 ns
  o.mode = ReplayMode::Paper;
  const double paper_fresh = replay(t, o).ranks[0].predicted_ns;
  o.params.resend_rendezvous = 0.5;
  CHECK(replay(t, o).ranks[0].predicted_ns == Approx(paper_fresh - 6000));
  // the LogGP baseline has no protocols and no [resend]: the factors change nothing
  o.mode = ReplayMode::Simulate;
  o.model = ModelKind::LogGP;
  const double loggp = replay(t, o).ranks[0].predicted_ns;
  o.params.resend_rendezvous.reset(), o.params.resend_buffered.reset();
  CHECK(replay(t, o).ranks[0].predicted_ns == Approx(loggp));
}

TEST_CASE("the receive side prices an eager message sent again unchanged as the replay does", "[replay][resend]") {
  // Rank 0 sends 100000 bytes eagerly at 2000 ns, RESENT and cached; rank 1 posts its receive at 22000.
  // Priced as data just written the message reaches rank 1 at 2000 + T1 + transfer = 2000 + (500 + 10000)
  // + (1000 + 20000) = 33500 ns, after the receive was posted; at [resend] buffered_factor 0.5 the
  // per-byte terms halve, 2000 + 5500 + 11000 = 18500 ns: before it, an unexpected message of 100000 bytes
  Trace t = empty_trace(2);
  Message m;
  m.src = 0, m.dst = 1, m.bytes = 100000;
  m.resent = m.cached = true;
  m.send_op = 0;
  m.recv_op = 0;
  t.messages.push_back(m);
  add_op(t, 0, 2000, 2100, MPA_CALL_Send, OpKind::Send, {Link{Link::PostSend, 0}, Link{Link::DoneSend, 0}});
  add_op(t, 1, 22000, 40000, MPA_CALL_Recv, OpKind::Recv, {Link{Link::PostRecv, 0}, Link{Link::DoneRecv, 0}});
  LogGPSParams p = some_params();  // o' 500, L 1000, Oss = Ors 0.1 ns/B, Gs 0.2
  p.s = p.S = 1 << 20;
  const ReceiveSide fresh = receive_side(t, LogGPS(p));
  CHECK(fresh.posted_early == 1);
  CHECK(fresh.ranks[1].unexpected_max_bytes == 0);
  p.resend_buffered = 0.5;
  const ReceiveSide resent = receive_side(t, LogGPS(p));
  CHECK(resent.posted_early == 0);
  CHECK(resent.ranks[1].unexpected_max == 1);
  CHECK(resent.ranks[1].unexpected_max_bytes == 100000);
  // a message not sent again is priced as fresh whatever the factor
  t.messages[0].cached = false;
  CHECK(receive_side(t, LogGPS(p)).posted_early == 1);
}

TEST_CASE("a split message's chunks go at the run's speed for their size, every other message at the run's own",
          "[replay][split]") {
  // The report scales a set by the speed of the sizes a run sends (its 128 KiB messages at x1.5 in one run
  // over shared memory), and the split what-if sends chunks of S bytes, which that run's round trips
  // showed at x0.8: the chunks take params.speed_at(S) on top.
  for (const bool cached : {false, true}) {
    DYNAMIC_SECTION((cached ? "data sent again" : "data just written")) {
      Trace t = five_sends_to_a_late_receiver();  // 100-byte messages
      for (auto& m : t.messages) m.cached = cached;
      ReplayOptions o;
      o.params = some_params();
      o.params.s = o.params.S = 32;  // each message 4 chunks
      o.params.resend_buffered = 0.7;
      // chunks of 32 bytes at half the times, the 100-byte messages at twice
      o.params.speed_bytes = {32, 100, 65536};
      o.params.speed_log = {std::log(0.5), std::log(2.0), std::log(2.0)};
      CHECK(o.params.speed_at(32) == Approx(0.5));
      CHECK(o.params.speed_at(100) == Approx(2));
      CHECK(o.params.speed_at(0) == Approx(0.5));        // held at the ends
      CHECK(o.params.speed_at(1u << 20) == Approx(2));
      // between 32 and 100 bytes over log(1 + size): the geometric mean of 0.5 and 2 at sqrt(33 x 101) - 1
      CHECK(o.params.speed_at(57) == Approx(1).epsilon(0.02));

      // unsplit, the sizes' speeds change nothing
      ReplayOptions one_speed = o;
      one_speed.params.speed_bytes.clear(), one_speed.params.speed_log.clear();
      CHECK(replay(t, o).predicted_ns == replay(t, one_speed).predicted_ns);

      // split, every message is chunks: the replay is that of the set at the chunks' speed, exactly, and
      // not at the messages' own size's
      o.split_everywhere = one_speed.split_everywhere = true;
      ReplayOptions at_chunks = one_speed, at_messages = one_speed;
      at_chunks.params = one_speed.params.scaled(o.params.speed_at(32));
      at_messages.params = one_speed.params.scaled(o.params.speed_at(100));
      const ReplayResult split = replay(t, o), expected = replay(t, at_chunks), unscaled = replay(t, one_speed);
      REQUIRE(split.split_messages == 5);
      CHECK(split.predicted_ns == expected.predicted_ns);
      for (int r = 0; r < 2; r++) {
        CHECK(split.ranks[r].predicted.send_overhead == expected.ranks[r].predicted.send_overhead);
        CHECK(split.ranks[r].predicted.recv_overhead == expected.ranks[r].predicted.recv_overhead);
      }
      CHECK(split.ranks[1].predicted.recv_overhead < unscaled.ranks[1].predicted.recv_overhead);
      CHECK(split.ranks[1].predicted.recv_overhead < replay(t, at_messages).ranks[1].predicted.recv_overhead);
    }
  }
}

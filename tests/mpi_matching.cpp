// Messages matched send to receive however the program received them: through matched probes
// (MPI_Mprobe / MPI_Improbe + MPI_Mrecv / MPI_Imrecv, as mpi4py's comm.recv does) and past cancelled
// receives. Each runs a real traced job and asserts on build_trace and on the report's notes.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include <algorithm>

#include "support.hpp"
#include "call_ids.h"
#include "trace.hpp"

using namespace mpa_test;
using json = nlohmann::json;

namespace {


json report_of(const fs::path& dir) { return report_json(dir); }

// The report's notes that say a message or an operation has no partner.
std::vector<std::string> partner_notes(const json& report) {
  std::vector<std::string> out;
  for (const auto& n : report.at("notes")) {
    auto s = n.get<std::string>();
    if (s.find("partner") != std::string::npos) out.push_back(s);
  }
  return out;
}

size_t matched_messages(const mpiadvise::Trace& t) {
  size_t n = 0;
  for (const auto& m : t.messages) n += m.matched();
  return n;
}

}  // namespace

TEST_CASE("messages received through matched probes are matched to their sends", "[matching]") {
  JobSpec s;
  s.np = 3;
  s.program = "matched_probe";
  s.args = {"4"};
  auto run = run_job(s);
  INFO(run.err);
  REQUIRE(run.status == 0);
  REQUIRE(run.out == "matched_probe: ok 32\n");  // 4 phases x 4 messages x 2 senders

  mpiadvise::JobLog job(run.dir);
  auto t = mpiadvise::build_trace(job);
  CHECK(t.unmatched_sends == 0);
  CHECK(t.unmatched_recvs == 0);
  CHECK(t.messages.size() == 32);
  CHECK(matched_messages(t) == 32);
  require_same_trace_on_any_threads(job);
  // each matched message pairs a rank's send with rank 0's receive, on the communicator it was sent on
  const auto recv_done = mpiadvise::done_ops(t, mpiadvise::Link::DoneRecv);
  for (size_t id = 0; id < t.messages.size(); id++) {
    const auto& m = t.messages[id];
    CHECK(m.dst == 0);
    CHECK((m.src == 1 || m.src == 2));
    CHECK(recv_done[id] != mpiadvise::kNone);
    CHECK(m.bytes == static_cast<uint64_t>(m.src) * sizeof(int));
  }
  CHECK(partner_notes(report_of(run.dir)).empty());
}

// Open MPI only: Debian's python3-mpi4py is built against Open MPI
TEST_CASE("mpi4py's pickled comm.send and comm.recv are matched", "[matching][python][openmpi-only]") {
  const fs::path script = fs::path(MPA_SOURCE_DIR) / "tests" / "programs" / "mpi4py_sendrecv.py";
  auto probe = run_command("/usr/bin/python3 -c 'import mpi4py'");
  INFO("python3-mpi4py is needed (scripts/deps.sh installs it): " << probe.err);
  REQUIRE(probe.status == 0);
  JobSpec s;
  s.np = 2;
  s.program = "/usr/bin/python3";
  s.args = {script.string(), "10"};
  auto run = run_job(s);
  INFO(run.err);
  REQUIRE(run.status == 0);
  REQUIRE(run.out == "mpi4py_sendrecv: ok 10\n");

  mpiadvise::JobLog job(run.dir);
  auto t = mpiadvise::build_trace(job);
  CHECK(t.unmatched_sends == 0);
  CHECK(t.unmatched_recvs == 0);
  CHECK(matched_messages(t) >= 20);  // 10 pickled requests and 10 replies, and mpi4py's own
  CHECK(partner_notes(report_of(run.dir)).empty());
}

TEST_CASE("cancelled receives are recorded as cancelled and left out of matching", "[matching][cancel]") {
  JobSpec s;
  s.np = 2;
  s.program = "cancel";
  s.args = {"4"};
  auto run = run_job(s);
  INFO(run.err);
  REQUIRE(run.status == 0);
  REQUIRE(run.out == "cancel: ok 4 24\n");

  // the log says which completions were of cancelled requests: 6 a round, through Wait (with and
  // without a status), Waitall, Test and a persistent request; the cancel that came too late is not one
  int cancelled = 0, late_received = 0;
  for (const auto& e : events_of(run.dir, 0)) {
    for (const auto& st : e.e.statuses) {
      cancelled += st.cancelled;
      late_received += !st.cancelled && e.call == "MPI_Wait" && st.tag == 2 && st.source == 1;
    }
  }
  CHECK(cancelled == 24);
  CHECK(late_received == 4);
  for (const auto& e : events_of(run.dir, 1))
    for (const auto& st : e.e.statuses) CHECK(!st.cancelled);

  mpiadvise::JobLog job(run.dir);
  CHECK(job.problems().empty());
  auto t = mpiadvise::build_trace(job);
  CHECK(t.unmatched_sends == 0);
  CHECK(t.unmatched_recvs == 0);
  CHECK(t.messages.size() == 4 * 3);  // a round: one Sendrecv message each way, and the late one
  CHECK(matched_messages(t) == 4 * 3);
  require_same_trace_on_any_threads(job);
  for (const auto& m : t.messages) CHECK(m.tag != 99);
  CHECK(partner_notes(report_of(run.dir)).empty());
}

TEST_CASE("a send the log says was cancelled is no message, and the sends after it are numbered in order", "[matching][cancel]") {
  // rank 0: Isend (tag 5) that its Wait's status calls cancelled, Send (tag 6), Send (tag 5); rank 1
  // receives tag 6, then tag 5. The trace's messages are rank 0's sends in its order of sending, the
  // cancelled one left out: had it stayed, rank 1's tag 5 receive would have matched it, and the second
  // tag 5 send would have been left without a receiver.
  JobSpec s;
  s.np = 2;
  s.program = "cancel_send";
  auto run = run_job(s);
  INFO(run.err);
  REQUIRE(run.status == 0);
  // MPICH's UCX may warn (on standard output, before or after this line) at MPI_Finalize of the first
  // tag 5 message, which nobody received
  REQUIRE(run.out.find("cancel_send: ok\n") != std::string::npos);
  const auto waits = calls_named(events_of(run.dir, 0), "MPI_Wait");
  REQUIRE(waits.size() == 1);
  REQUIRE(waits[0].e.statuses.size() == 1);
  REQUIRE(waits[0].e.statuses[0].cancelled);

  mpiadvise::JobLog job(run.dir);
  CHECK(job.problems().empty());
  const auto t = mpiadvise::build_trace(job);
  CHECK(t.unmatched_sends == 0);
  CHECK(t.unmatched_recvs == 0);
  REQUIRE(t.messages.size() == 2);
  const auto& ops0 = t.ranks[0].ops;
  const auto& ops1 = t.ranks[1].ops;
  auto index_of = [](const std::vector<mpiadvise::Op>& ops, int call, int nth) {
    for (uint32_t i = 0; i < ops.size(); i++)
      if (ops[i].call == call && nth-- == 0) return i;
    return mpiadvise::kNone;
  };
  const uint32_t isend = index_of(ops0, MPA_CALL_Isend, 0), wait = index_of(ops0, MPA_CALL_Wait, 0);
  REQUIRE(isend != mpiadvise::kNone);
  REQUIRE(wait != mpiadvise::kNone);
  // the cancelled send and its completion are replayed as measured: no links, no message
  CHECK(ops0[isend].kind == mpiadvise::OpKind::Other);
  CHECK(ops0[wait].kind == mpiadvise::OpKind::Other);
  CHECK_FALSE(ops0[isend].has_links());
  CHECK_FALSE(ops0[wait].has_links());
  CHECK(t.messages[0].tag == 6);
  CHECK(t.messages[0].send_op == index_of(ops0, MPA_CALL_Send, 0));
  CHECK(t.messages[0].recv_op == index_of(ops1, MPA_CALL_Recv, 0));
  CHECK(t.messages[1].tag == 5);
  CHECK(t.messages[1].send_op == index_of(ops0, MPA_CALL_Send, 1));
  CHECK(t.messages[1].recv_op == index_of(ops1, MPA_CALL_Recv, 1));
  for (uint32_t m = 0; m < 2; m++) {  // each message's ops link it under its new number
    CHECK(t.links_of(ops0[t.messages[m].send_op])[0] == mpiadvise::Link{mpiadvise::Link::PostSend, m});
    CHECK(t.links_of(ops1[t.messages[m].recv_op])[0] == mpiadvise::Link{mpiadvise::Link::PostRecv, m});
  }
  require_same_trace_on_any_threads(job);
  CHECK(partner_notes(report_of(run.dir)).empty());
}

TEST_CASE("a Waitall of thousands of requests completes every one of its messages", "[matching][cancel]") {
  // an op keeps a count of its links below kSpilledLinks (255) and the trace keeps the counts of larger
  // ones. Rounds of 3000, 254 and 255 messages, each sent in one Waitall and received in one with a
  // cancelled receive more, whose link is dropped: the receiver's 255 links become 254 (held in the op
  // again), its 256 become 255 (still the trace's), and the sender's 255 are the trace's from the start.
  static_assert(mpiadvise::kSpilledLinks == 255);
  const std::vector<uint32_t> counts = {3000, 254, 255};
  JobSpec s;
  s.np = 2;
  s.program = "many_requests";
  for (uint32_t n : counts) s.args.push_back(std::to_string(n));
  auto run = run_job(s);
  INFO(run.err);
  REQUIRE(run.status == 0);
  REQUIRE(run.out == "many_requests: ok 3 3509\n");

  mpiadvise::JobLog job(run.dir);
  auto t = mpiadvise::build_trace(job);
  CHECK(t.unmatched_sends == 0);
  CHECK(t.unmatched_recvs == 0);
  REQUIRE(t.messages.size() == 3509);
  CHECK(matched_messages(t) == 3509);
  require_same_trace_on_any_threads(job);
  for (int r : {0, 1}) {
    INFO("rank " << r);
    // each rank's Waitalls, one a round, each with a link per message of its round
    std::vector<uint32_t> waitalls;
    for (uint32_t i = 0; i < t.ranks[r].ops.size(); i++)
      if (t.ranks[r].ops[i].call == MPA_CALL_Waitall) waitalls.push_back(i);
    REQUIRE(waitalls.size() == counts.size());
    for (size_t round = 0; round < counts.size(); round++) {
      INFO("round " << round);
      const mpiadvise::Op& op = t.ranks[r].ops[waitalls[round]];
      CHECK(op.kind == mpiadvise::OpKind::Completion);
      CHECK(t.n_links(op) == counts[round]);
      CHECK((op.links_here == mpiadvise::kSpilledLinks) == (counts[round] >= mpiadvise::kSpilledLinks));
      const auto links = t.links_of(op);
      for (uint32_t k = 0; k < links.size(); k++)
        CHECK(links[k].kind == (r == 0 ? mpiadvise::Link::DoneSend : mpiadvise::Link::DoneRecv));
    }
    // the messages posted in a round are completed by that round's Waitall on each side
    const auto done = mpiadvise::done_ops(t, r == 0 ? mpiadvise::Link::DoneSend : mpiadvise::Link::DoneRecv);
    std::vector<uint32_t> by_round(counts.size());
    for (size_t id = 0; id < t.messages.size(); id++) {
      const auto& m = t.messages[id];
      const uint32_t posted = r == 0 ? m.send_op : m.recv_op;
      const size_t round = static_cast<size_t>(std::upper_bound(waitalls.begin(), waitalls.end(), posted) - waitalls.begin());
      REQUIRE(round < counts.size());
      CHECK(done[id] == waitalls[round]);
      by_round[round]++;
    }
    CHECK(by_round == counts);
  }
  CHECK(t.spilled_links.size() == 4);  // the sender's 3000 and 255, the receiver's 3000 and 255
  CHECK(partner_notes(report_of(run.dir)).empty());
}

TEST_CASE("calls MPI refused are logged with their error code and match nothing", "[matching]") {
  // tests/programs/refused.c: under MPI_ERRORS_RETURN each rank makes 8 calls MPI refuses (sends and a
  // receive with a null datatype, a rank and a root beyond the communicator, a negative count, a null
  // request pointer), then one MPI_Sendrecv with the other rank
  JobSpec s;
  s.np = 2;
  s.program = "refused";
  auto run = run_job(s);
  INFO(run.err);
  REQUIRE(run.status == 0);
  CHECK(run.out.find("then a correct exchange: ok, got 1 from rank 1") != std::string::npos);
  CHECK(run.out.find("then a correct exchange: ok, got 0 from rank 0") != std::string::npos);
  for (int rank : {0, 1}) {
    INFO("rank " << rank);
    int refused = 0;
    for (const auto& e : events_of(run.dir, rank)) {
      if (!e.e.refused()) continue;
      refused++;
      CHECK(e.e.value != 0);  // the error code MPI returned
      CHECK(e.e.requests.empty() == (e.call != "MPI_Wait"));  // made no request; Wait's null pointer: handle 0
    }
    CHECK(refused == 8);
  }
  mpiadvise::JobLog job(run.dir);
  auto t = mpiadvise::build_trace(job);
  CHECK(t.messages.size() == 2);  // the two halves of the MPI_Sendrecv, nothing of the refused calls
  CHECK(matched_messages(t) == 2);
  CHECK(t.unmatched_sends == 0);
  CHECK(t.unmatched_recvs == 0);
  CHECK(t.incomplete_collectives == 0);  // the refused MPI_Bcast is no collective instance
  CHECK(partner_notes(report_of(run.dir)).empty());
}

// Jobs killed while they hang (tests/programs/hang.c): each rank's log ends with the MPI call every
// thread was inside when the signal came, flagged unfinished (MPA_F_UNFINISHED), with what the call was
// given; everything before it is there; the job ends as it does untraced.
#include <catch2/catch.hpp>

#include <signal.h>

#include <set>

#include "support.hpp"
#include "trace.hpp"

using namespace mpa_test;

namespace {

JobSpec hang(const std::string& mode) {
  JobSpec s;
  s.program = "hang";
  s.args = {mode};
  s.timeout_s = 60;  // to get ready
  return s;
}

// The traced job and the untraced one, each killed by sig once its `ready` lines are out.
std::pair<JobResult, JobResult> killed_both(const JobSpec& s, int ready, int sig) {
  JobResult traced = run_killed_logged(s, ready, sig);
  JobSpec plain = s;
  plain.traced = false;
  JobResult untraced = run_killed(plain, ready, sig);
  return {traced, untraced};
}

// The launcher's exit status is the job's as it is untraced. Open MPI's mpirun ends such a job with 1,
// traced or not. MPICH's mpiexec (Hydra 4.0.2) passes the signal on to its proxy, which signals the ranks
// and reaps them (src/pm/hydra/pm/pmiserv/pmip.c): a rank reaped while its output is still open keeps its
// raw wait status (the signal's number, or SIGKILL where the proxy killed it after another's death), one
// reaped after that keeps 0 (a forced clean-up); mpiexec.c then exits with the OR of the ranks' statuses.
// So 0, sig, SIGKILL or sig | SIGKILL, now one and now another, traced or not (measured: SIGTERM on
// `hang threads` 0 or 15, 100 and 50 times of 150 traced, 84 and 66 untraced; SIGKILL is the rarest,
// not seen here in 300 runs). CI once saw a traced run end outside {0, sig}, its status not kept: the
// status comes first in a failure's message. A status outside these is no clean-up of Hydra's.
void check_status(const JobResult& traced, const JobResult& untraced, int sig) {
  INFO("the launcher's exit status: traced " << traced.status << ", untraced " << untraced.status);
  INFO("traced: " << traced.out << traced.err << "untraced: " << untraced.out << untraced.err);
  if (mpi().openmpi()) {
    CHECK(traced.status == untraced.status);
    CHECK(traced.status == 1);
    return;
  }
  const std::set<int> hydra = {0, sig, SIGKILL, sig | SIGKILL};
  CHECK(hydra.count(traced.status) == 1);
  CHECK(hydra.count(untraced.status) == 1);
}

// Events of one thread of a rank, in order.
std::vector<Ev> of_thread(const std::vector<Ev>& evs, uint16_t thread) {
  std::vector<Ev> out;
  for (const auto& e : evs)
    if (e.e.thread == thread) out.push_back(e);
  return out;
}

int unfinished_count(const std::vector<Ev>& evs) {
  int n = 0;
  for (const auto& e : evs) n += e.e.unfinished;
  return n;
}

}  // namespace

TEST_CASE("deadlock in MPI_Recv: each log ends in it", "[hang]") {
  auto [traced, untraced] = killed_both(hang("recv"), 2, SIGTERM);
  check_status(traced, untraced, SIGTERM);
  INFO("traced: " << traced.out << traced.err << "untraced: " << untraced.out << untraced.err);
  for (int rank : {0, 1}) {
    INFO("rank " << rank);
    auto evs = events_of(traced.dir, rank);
    REQUIRE(!evs.empty());
    const Ev& last = evs.back();
    CHECK(last.call == "MPI_Recv");
    CHECK(last.e.unfinished);
    CHECK(last.e.has(MPA_F_UNFINISHED));
    CHECK(last.e.peer == 1 - rank);
    CHECK(last.e.tag == 9 + rank);
    CHECK(last.e.comm == 1);
    CHECK(last.e.statuses.empty());
    CHECK(!last.e.has(MPA_F_BYTES2));
    CHECK(last.e.t_exit_ns - last.e.t_enter_ns > 300'000'000ull);  // hung half a second before the signal
    CHECK(unfinished_count(evs) == 1);
    // the completed exchanges before it, each receive with its status
    int sends = 0, recvs = 0;
    for (const auto& e : evs) {
      if (e.call == "MPI_Send") sends += e.e.tag == 3 && e.e.peer == 1 - rank;
      if (e.call == "MPI_Recv" && !e.e.unfinished)
        recvs += e.e.statuses.size() == 1 && e.e.statuses[0].source == 1 - rank && e.e.statuses[0].tag == 3;
    }
    CHECK(sends == 5);
    CHECK(recvs == 5);
  }
  // the trace: ten messages matched, and the two receives in progress posted but done with nothing
  mpiadvise::JobLog job(traced.dir);
  auto t = mpiadvise::build_trace(job);
  CHECK(t.unmatched_sends == 0);
  CHECK(t.unmatched_recvs == 2);
  size_t matched = 0;
  for (const auto& m : t.messages) matched += m.matched();
  CHECK(matched == 10);
  for (int rank : {0, 1}) {
    const auto& ops = t.ranks[rank].ops;
    REQUIRE(!ops.empty());
    const mpiadvise::Op& op = ops.back();
    CHECK(op.unfinished);
    CHECK(op.kind == mpiadvise::OpKind::Recv);
    REQUIRE(t.n_links(op) == 1);
    CHECK(t.links_of(op)[0].kind == mpiadvise::Link::PostRecv);
    const auto& m = t.messages.at(t.links_of(op)[0].id);
    CHECK(!m.matched());
    CHECK(mpiadvise::done_ops(t, mpiadvise::Link::DoneRecv).at(t.links_of(op)[0].id) == mpiadvise::kNone);
    CHECK(m.src == 1 - rank);
    CHECK(m.tag == 9 + rank);
    for (size_t i = 0; i + 1 < ops.size(); i++) CHECK(!ops[i].unfinished);
  }
  // each rank waits for the other in its receive: a deadlock, found alike from the op streams
  const mpiadvise::HangState h = require_same_hang_state(t);
  CHECK(h.deadlocks == std::vector<std::vector<int>>{{0, 1}});
  // mpiadvise dump says so, in text and in JSON Lines
  const std::string bin = (build_dir() / "bin" / "mpiadvise").string();
  auto text = run_command(bin + " dump --events --rank 1 " + traced.dir.string());
  CHECK(text.status == 0);
  CHECK(text.out.find("MPI_Recv") != std::string::npos);
  CHECK(text.out.find(" unfinished site=") != std::string::npos);
  auto jsonl = run_command(bin + " dump --events --format jsonl --rank 1 " + traced.dir.string());
  CHECK(jsonl.status == 0);
  auto last_line = jsonl.out.substr(jsonl.out.rfind('\n', jsonl.out.size() - 2) + 1);
  CHECK(last_line.find("\"unfinished\":true") != std::string::npos);
  CHECK(last_line.find("\"tag\":10") != std::string::npos);
}

TEST_CASE("MPI_Wait on an Irecv and MPI_Barrier: each log ends in its call", "[hang]") {
  auto [traced, untraced] = killed_both(hang("wait"), 2, SIGINT);
  check_status(traced, untraced, SIGINT);
  INFO("traced: " << traced.out << traced.err << "untraced: " << untraced.out << untraced.err);
  // rank 0: MPI_Wait naming the request of its MPI_Irecv
  auto evs0 = events_of(traced.dir, 0);
  auto irecv = calls_named(evs0, "MPI_Irecv");
  REQUIRE(irecv.size() == 1);
  REQUIRE(irecv[0].e.requests.size() == 1);
  REQUIRE(!evs0.empty());
  const Ev& wait = evs0.back();
  CHECK(wait.call == "MPI_Wait");
  CHECK(wait.e.unfinished);
  CHECK(wait.e.handles == irecv[0].e.handles);
  REQUIRE(wait.e.requests.size() == 1);
  CHECK(wait.e.requests == irecv[0].e.requests);
  CHECK(wait.e.requests[0] != 0);
  CHECK(wait.e.statuses.empty());
  CHECK(unfinished_count(evs0) == 1);
  // rank 1: MPI_Barrier on the communicator its MPI_Comm_dup made
  auto evs1 = events_of(traced.dir, 1);
  auto dup = calls_named(evs1, "MPI_Comm_dup");
  REQUIRE(dup.size() == 1);
  REQUIRE(!evs1.empty());
  const Ev& barrier = evs1.back();
  CHECK(barrier.call == "MPI_Barrier");
  CHECK(barrier.e.unfinished);
  CHECK(barrier.e.has(MPA_F_COMM));
  CHECK(barrier.e.comm == dup[0].e.newcomm);
  CHECK(barrier.e.comm > 2);
  CHECK(unfinished_count(evs1) == 1);
  // the trace: the receive is pending (its Wait completes nothing), the barrier is missing rank 0
  mpiadvise::JobLog job(traced.dir);
  auto t = mpiadvise::build_trace(job);
  const mpiadvise::Op& w = t.ranks[0].ops.back();
  CHECK(w.unfinished);
  CHECK(t.n_links(w) == 0);
  CHECK(t.unmatched_recvs == 1);
  CHECK(t.incomplete_collectives == 1);
  CHECK(t.ranks[1].ops.back().unfinished);
  CHECK(t.ranks[1].ops.back().kind == mpiadvise::OpKind::Collective);
  // rank 0's MPI_Wait completes nothing: it waits for the sender of the receive it posted and never
  // completed; rank 1's barrier for rank 0, which never entered it. The same from the op streams.
  const mpiadvise::HangState h = require_same_hang_state(t);
  REQUIRE(h.ranks.size() == 2);
  CHECK(h.ranks[0].waits_for == std::vector<int>{1});
  CHECK(h.ranks[1].waits_for == std::vector<int>{0});
}

TEST_CASE("two threads each in MPI_Recv: both calls recorded", "[hang][threads]") {
  auto [traced, untraced] = killed_both(hang("threads"), 4, SIGTERM);
  check_status(traced, untraced, SIGTERM);
  INFO("traced: " << traced.out << traced.err << "untraced: " << untraced.out << untraced.err);
  if (traced.out.find("not provided") != std::string::npos) return;  // the library lacks the level
  for (int rank : {0, 1}) {
    INFO("rank " << rank);
    auto evs = events_of(traced.dir, rank);
    CHECK(unfinished_count(evs) == 2);
    // the main thread (0) waits for tag 21, the second thread (1) for tag 22, whichever took the signal
    for (uint16_t thread : {0, 1}) {
      auto mine = of_thread(evs, thread);
      REQUIRE(!mine.empty());
      CHECK(mine.back().call == "MPI_Recv");
      CHECK(mine.back().e.unfinished);
      CHECK(mine.back().e.peer == 1 - rank);
      CHECK(mine.back().e.tag == (thread == 0 ? 21 : 22));
    }
  }
  // where each rank was, from its op streams as from the trace (a rank's last op in its log's order)
  require_same_hang_state(mpiadvise::build_trace(mpiadvise::JobLog(traced.dir)));
}

TEST_CASE("Fortran: MPI_Wait and MPI_Recv in progress recorded", "[hang][fortran]") {
  JobSpec s;
  s.program = "f_hang";
  s.timeout_s = 60;
  auto [traced, untraced] = killed_both(s, 2, SIGTERM);
  check_status(traced, untraced, SIGTERM);
  INFO("traced: " << traced.out << traced.err << "untraced: " << untraced.out << untraced.err);
  auto evs0 = events_of(traced.dir, 0);
  auto irecv = calls_named(evs0, "MPI_Irecv");
  REQUIRE(irecv.size() == 1);
  REQUIRE(!evs0.empty());
  CHECK(evs0.back().call == "MPI_Wait");
  CHECK(evs0.back().e.unfinished);
  CHECK(evs0.back().e.requests == irecv[0].e.requests);
  auto evs1 = events_of(traced.dir, 1);
  REQUIRE(!evs1.empty());
  CHECK(evs1.back().call == "MPI_Recv");
  CHECK(evs1.back().e.unfinished);
  CHECK(evs1.back().e.peer == 0);
  CHECK(evs1.back().e.tag == 12);
  CHECK(evs1.back().e.comm == 1);
  CHECK(calls_named(evs1, "MPI_Send").size() == 3);
  // rank 0's MPI_Wait completes nothing and waits for the sender of its receive, rank 1 for rank 0
  const mpiadvise::HangState h = require_same_hang_state(mpiadvise::build_trace(mpiadvise::JobLog(traced.dir)));
  REQUIRE(h.ranks.size() == 2);
  CHECK(h.ranks[0].waits_for == std::vector<int>{1});
  CHECK(h.ranks[1].waits_for == std::vector<int>{0});
}

TEST_CASE("Open MPI's --timeout: the logs end in the calls", "[hang][openmpi-only]") {
  JobSpec s = hang("recv");
  s.mpirun_options = {"--timeout", "4"};
  s.timeout_s = 60;
  // nothing is sent: mpirun ends the job itself (SIGCONT, then SIGTERM a second later)
  JobResult traced = run_killed_logged(s, 100, SIGTERM);
  s.traced = false;
  JobResult untraced = run_killed(s, 100, SIGTERM);
  INFO("traced: " << traced.out << traced.err);
  CHECK(traced.status == untraced.status);
  CHECK(traced.status != 0);
  for (int rank : {0, 1}) {
    auto evs = events_of(traced.dir, rank);
    REQUIRE(!evs.empty());
    CHECK(evs.back().call == "MPI_Recv");
    CHECK(evs.back().e.unfinished);
    CHECK(evs.back().e.tag == 9 + rank);
  }
  const mpiadvise::HangState h = require_same_hang_state(mpiadvise::build_trace(mpiadvise::JobLog(traced.dir)));
  CHECK(h.deadlocks == std::vector<std::vector<int>>{{0, 1}});
}

// Point-to-point and completion calls through the C bindings: each appears in the log with the
// arguments the program passed (tests/programs/p2p_all.c knows them).
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <set>

#include "model_fit.hpp"
#include "replay.hpp"
#include "support.hpp"
#include "trace.hpp"

using namespace mpa_test;
using mpiadvise::kAnySource;
using mpiadvise::kAnyTag;
using mpiadvise::kProcNull;

namespace {

const JobResult& p2p_run() {
  static JobResult r = [] {
    JobSpec s;
    s.np = 4;
    s.program = "p2p_all";
    return run_job(s);
  }();
  return r;
}

const Ev* first(const std::vector<Ev>& evs, const std::string& call, int tag = -1000) {
  for (const auto& e : evs)
    if (e.call == call && (tag == -1000 || (e.e.has(MPA_F_TAG) && e.e.tag == tag))) return &e;
  return nullptr;
}

}  // namespace

TEST_CASE("a traced job gives the results and exit status of the untraced one", "[p2p]") {
  const auto& traced = p2p_run();
  JobSpec s;
  s.np = 4;
  s.program = "p2p_all";
  s.traced = false;
  auto plain = run_job(s);
  INFO(traced.err);
  REQUIRE(plain.status == 0);
  CHECK(traced.status == plain.status);
  CHECK(traced.out == plain.out);
  CHECK(traced.out.find("p2p_all: ok") != std::string::npos);
  CHECK(traced.err.find("mpiadvise") == std::string::npos);  // no warnings on a clean run
}

TEST_CASE("a peer of a split communicator is logged as a world rank", "[p2p]") {
  const auto& r = p2p_run();
  REQUIRE(r.status == 0);
  auto r0 = events_of(r.dir, 0), r1 = events_of(r.dir, 1), r3 = events_of(r.dir, 3);
  const Ev* send0 = first(r0, "MPI_Send", 11);
  REQUIRE(send0);
  CHECK(send0->e.peer == 2);        // local rank 1 of {0, 2}
  CHECK(send0->e.peer_local == 1);
  CHECK(send0->e.comm > 2);         // not MPI_COMM_WORLD or MPI_COMM_SELF
  CHECK(send0->e.bytes == 40);
  const Ev* send1 = first(r1, "MPI_Send", 11);
  REQUIRE(send1);
  CHECK(send1->e.peer == 3);        // local rank 1 of {1, 3}
  const Ev* recv3 = first(r3, "MPI_Recv", 11);
  REQUIRE(recv3);
  CHECK(recv3->e.peer == 1);
  REQUIRE(recv3->e.statuses.size() == 1);
  CHECK(recv3->e.statuses[0].source == 1);
  // the communicator is defined with its members, and the same global id on both sides
  mpiadvise::JobLog job(r.dir);
  const auto& c0 = job.rank(0)->comms().at(send0->e.comm);
  CHECK(c0.members == std::vector<int32_t>{0, 2});
  CHECK(c0.created_by == "MPI_Comm_split");
  const auto* split = first(r0, "MPI_Comm_split");
  REQUIRE(split);
  CHECK(split->e.newcomm == send0->e.comm);
  const auto* recv2_split = first(events_of(r.dir, 2), "MPI_Recv", 11);
  REQUIRE(recv2_split);
  CHECK(job.rank(2)->comms().at(recv2_split->e.comm).gid == c0.gid);
  CHECK(job.rank(1)->comms().at(send1->e.comm).gid != c0.gid);
}

TEST_CASE("bytes are count times the size of a derived datatype", "[p2p]") {
  const auto& r = p2p_run();
  auto r0 = events_of(r.dir, 0);
  const Ev* send = first(r0, "MPI_Send", 12);
  REQUIRE(send);
  CHECK(send->e.bytes == 2 * 4 * 3 * 8);  // two vectors of 4 blocks of 3 doubles
}

TEST_CASE("an ANY_SOURCE receive records its real source from the status", "[p2p]") {
  const auto& r = p2p_run();
  auto r1 = events_of(r.dir, 1);
  const Ev* recv = nullptr;
  for (const auto& e : r1)
    if (e.call == "MPI_Recv" && e.e.peer == kAnySource) recv = &e;
  REQUIRE(recv);
  CHECK(recv->e.tag == kAnyTag);
  CHECK(recv->e.bytes2 == 2 * 4 * 3 * 8);
  REQUIRE(recv->e.statuses.size() == 1);
  CHECK(recv->e.statuses[0].source == 0);
  CHECK(recv->e.statuses[0].tag == 12);
  CHECK(recv->e.statuses[0].bytes == 192);
}

TEST_CASE("Waitall links the requests of Irecv and Isend", "[p2p]") {
  const auto& r = p2p_run();
  auto r0 = events_of(r.dir, 0);
  const Ev* irecv = first(r0, "MPI_Irecv", 13);
  const Ev* isend = first(r0, "MPI_Isend", 13);
  REQUIRE(irecv);
  REQUIRE(isend);
  REQUIRE(irecv->e.requests.size() == 1);
  REQUIRE(isend->e.requests.size() == 1);
  CHECK(irecv->e.requests[0] != 0);
  CHECK(isend->e.requests[0] != irecv->e.requests[0]);
  const Ev* waitall = nullptr;
  for (const auto& e : r0)
    if (e.call == "MPI_Waitall" && e.e.t_enter_ns > isend->e.t_exit_ns) {
      waitall = &e;
      break;
    }
  REQUIRE(waitall);
  CHECK(waitall->e.requests == std::vector<uint64_t>{irecv->e.requests[0], isend->e.requests[0]});
  REQUIRE(waitall->e.statuses.size() == 2);
  CHECK(waitall->e.statuses[0].source == 1);  // the receive, translated to a world rank
  CHECK(waitall->e.statuses[0].tag == 13);
  CHECK(waitall->e.statuses[0].bytes == 4);
}

TEST_CASE("Waitany reports which request completed, in order of arrival", "[p2p]") {
  const auto& r = p2p_run();
  auto r0 = events_of(r.dir, 0);
  const Ev* a = first(r0, "MPI_Irecv", 14);
  const Ev* b = first(r0, "MPI_Irecv", 15);
  REQUIRE(a);
  REQUIRE(b);
  auto anys = calls_named(r0, "MPI_Waitany");
  REQUIRE(anys.size() == 2);
  std::vector<uint64_t> completed;
  for (const auto& w : anys) {
    REQUIRE(w.e.statuses.size() == 1);
    completed.push_back(w.e.requests.at(w.e.statuses[0].index));
    CHECK(w.e.statuses[0].source == 1);
  }
  std::sort(completed.begin(), completed.end());
  std::vector<uint64_t> expected{a->e.requests[0], b->e.requests[0]};
  std::sort(expected.begin(), expected.end());
  CHECK(completed == expected);
}

TEST_CASE("Testsome reports completions, and its unsuccessful polls fold into runs", "[p2p]") {
  const auto& r = p2p_run();
  auto r0 = events_of(r.dir, 0);
  auto tests = calls_named(r0, "MPI_Testsome");
  REQUIRE(!tests.empty());
  std::vector<uint64_t> done;
  uint64_t polls = 0, folded_events = 0;
  for (const auto& t : tests) {
    polls += t.e.count;
    if (t.e.has(MPA_F_COUNT)) {
      folded_events++;
      CHECK(t.e.statuses.empty());
    }
    for (const auto& st : t.e.statuses) {
      done.push_back(t.e.requests.at(st.index));
      CHECK(st.source == 1);
    }
  }
  std::vector<uint64_t> expected;
  for (int tag = 16; tag <= 18; tag++) {
    const Ev* irecv = first(r0, "MPI_Irecv", tag);
    REQUIRE(irecv);
    expected.push_back(irecv->e.requests[0]);
  }
  std::sort(done.begin(), done.end());
  std::sort(expected.begin(), expected.end());
  CHECK(done == expected);
  CHECK(folded_events >= 1);            // rank 1 kept rank 0 polling for 50 ms
  CHECK(polls > tests.size());          // many calls, few events
}

// Most polls of a run are timed at entry only (the tracer's mpa_poll_again): none is lost, and the run's
// estimated end and time inside stay within what was measured around it.
TEST_CASE("a run of polls that find nothing counts every call and ends before the next call", "[p2p]") {
  const auto& r = p2p_run();
  auto r0 = events_of(r.dir, 0);
  uint64_t polls = 0;
  size_t runs = 0;
  for (size_t i = 0; i < r0.size(); i++) {
    const auto& e = r0[i].e;
    if (r0[i].call != "MPI_Iprobe" || e.tag != 98) continue;
    INFO("event " << i);
    CHECK(e.peer == 1);
    CHECK(e.statuses.empty());
    CHECK(e.has(MPA_F_COUNT));
    polls += e.count;
    runs++;
    CHECK(e.t_exit_ns >= e.t_enter_ns);
    CHECK(e.incall_ns <= e.t_exit_ns - e.t_enter_ns);
    CHECK(e.incall_ns > 0);
    REQUIRE(i + 1 < r0.size());
    CHECK(r0[i + 1].e.t_enter_ns >= e.t_exit_ns);
  }
  CHECK(polls == 1000);           // every call, none lost to the untimed ones
  CHECK(runs >= 1);
  CHECK(runs < 100);              // folded: a run is cut only at the writer's seal age
}

TEST_CASE("persistent requests keep one identity through Start, Startall, Wait and Request_free", "[p2p]") {
  const auto& r = p2p_run();
  for (int rank : {0, 1}) {
    auto evs = events_of(r.dir, rank);
    const Ev* init = first(evs, rank == 0 ? "MPI_Send_init" : "MPI_Recv_init", 19);
    REQUIRE(init);
    uint64_t id = init->e.requests.at(0);
    CHECK(id != 0);
    auto starts = calls_named(evs, "MPI_Start");
    REQUIRE(starts.size() == 3);
    for (const auto& s : starts) CHECK(s.e.requests == std::vector<uint64_t>{id});
    int startall_with_id = 0;
    for (const auto& s : calls_named(evs, "MPI_Startall"))
      startall_with_id += s.e.requests == std::vector<uint64_t>{id};
    CHECK(startall_with_id == 2);
    int waits = 0;
    for (const auto& w : calls_named(evs, "MPI_Wait")) waits += w.e.requests == std::vector<uint64_t>{id};
    CHECK(waits == 3);
    const Ev* fr = first(evs, "MPI_Request_free");
    REQUIRE(fr);
    CHECK(fr->e.requests == std::vector<uint64_t>{id});
  }
}

TEST_CASE("every send mode and Sendrecv appear with peer, tag and bytes", "[p2p]") {
  const auto& r = p2p_run();
  auto r0 = events_of(r.dir, 0);
  const char* modes[] = {"MPI_Ssend", "MPI_Bsend", "MPI_Rsend", "MPI_Issend", "MPI_Ibsend", "MPI_Irsend"};
  for (int i = 0; i < 6; i++) {
    INFO(modes[i]);
    const Ev* e = first(r0, modes[i], 22 + i);
    REQUIRE(e);
    CHECK(e->e.peer == 1);
    CHECK(e->e.bytes == 4);
  }
  CHECK(first(r0, "MPI_Ssend_init", 20));
  CHECK(first(r0, "MPI_Rsend_init", 21));
  const Ev* sr = first(r0, "MPI_Sendrecv", 28);
  REQUIRE(sr);
  CHECK(sr->e.peer == 1);
  CHECK(sr->e.peer2 == 1);
  CHECK(sr->e.tag2 == 28);
  CHECK(sr->e.bytes == 4);
  CHECK(sr->e.bytes2 == 4);
  const Ev* srr = first(r0, "MPI_Sendrecv_replace", 30);
  REQUIRE(srr);
  CHECK(srr->e.bytes == 2 * sizeof(long));
  REQUIRE(srr->e.statuses.size() == 1);
  CHECK(srr->e.statuses[0].source == 1);
}

TEST_CASE("probes and matched receives are logged and linked", "[p2p]") {
  const auto& r = p2p_run();
  auto r0 = events_of(r.dir, 0);
  const Ev* probe = first(r0, "MPI_Probe", 31);
  REQUIRE(probe);
  REQUIRE(probe->e.statuses.size() == 1);
  CHECK(probe->e.statuses[0].bytes == 4);
  uint64_t iprobe_calls = 0;
  bool iprobe_found = false;
  for (const auto& e : calls_named(r0, "MPI_Iprobe")) {
    iprobe_calls += e.e.count;
    iprobe_found |= e.e.statuses.size() == 1 && e.e.statuses[0].source == 1;
  }
  CHECK(iprobe_found);
  CHECK(iprobe_calls >= 1);  // every call of a folded run is counted
  const Ev* mprobe = first(r0, "MPI_Mprobe", 33);
  REQUIRE(mprobe);
  const Ev* mrecv = first(r0, "MPI_Mrecv");
  REQUIRE(mrecv);
  CHECK(mrecv->e.requests.at(0) == mprobe->e.requests.at(0));  // the message handle links them
  REQUIRE(mrecv->e.statuses.size() == 1);
  CHECK(mrecv->e.statuses[0].source == 1);
  CHECK(mrecv->e.statuses[0].tag == 33);
  const Ev* improbe = nullptr;
  auto improbes = calls_named(r0, "MPI_Improbe");
  for (const auto& e : improbes)
    if (!e.e.statuses.empty()) improbe = &e;
  REQUIRE(improbe);
  const Ev* imrecv = first(r0, "MPI_Imrecv");
  REQUIRE(imrecv);
  REQUIRE(imrecv->e.requests.size() == 2);  // the message consumed, the request made
  CHECK(imrecv->e.requests[0] == improbe->e.requests.at(0));
}

TEST_CASE("Cancel, a successful Test and sends to MPI_PROC_NULL", "[p2p]") {
  const auto& r = p2p_run();
  auto r0 = events_of(r.dir, 0);
  const Ev* irecv = first(r0, "MPI_Irecv", 99);
  REQUIRE(irecv);
  const Ev* cancel = first(r0, "MPI_Cancel");
  REQUIRE(cancel);
  CHECK(cancel->e.requests == irecv->e.requests);
  bool cancelled = false;  // the Wait that completes it says the cancel succeeded
  for (const auto& w : calls_named(r0, "MPI_Wait"))
    if (w.e.requests == irecv->e.requests) cancelled = w.e.statuses.size() == 1 && w.e.statuses[0].cancelled;
  CHECK(cancelled);
  const Ev* isend = first(r0, "MPI_Isend", 35);
  REQUIRE(isend);
  CHECK(isend->e.peer == kProcNull);
  bool tested = false;
  for (const auto& t : calls_named(r0, "MPI_Test"))
    tested |= !t.e.statuses.empty() && t.e.requests == isend->e.requests;
  CHECK(tested);
  const Ev* send = first(r0, "MPI_Send", 36);
  REQUIRE(send);
  CHECK(send->e.peer == kProcNull);
}

// MPICH writes only the cancelled bit of a completed send request's status: the statuses the tracer
// passes in place of MPI_STATUS(ES)_IGNORE start empty, so a send's is logged as MPI's empty status, not
// as what was in the memory before (an earlier receive's status, or bytes of the stack). Open MPI writes
// a send's status itself: its tag is the send's or MPI_ANY_TAG.
TEST_CASE("a completed send request's status is logged as MPI wrote it, or empty", "[p2p]") {
  const auto& r = p2p_run();
  const std::set<std::string> sends = {"MPI_Isend",     "MPI_Ibsend",     "MPI_Issend",     "MPI_Irsend",
                                       "MPI_Send_init", "MPI_Bsend_init", "MPI_Ssend_init", "MPI_Rsend_init"};
  int checked = 0;
  for (int rank = 0; rank < 4; rank++) {
    INFO("rank " << rank);
    std::map<uint64_t, const Ev*> send_of;  // request handle -> the send that made it (handles are reused)
    for (const auto& e : events_of(r.dir, rank)) {
      if (e.call.rfind("MPI_Wait", 0) == 0 || e.call.rfind("MPI_Test", 0) == 0) {
        for (const auto& st : e.e.statuses) {
          if (st.index < 0 || static_cast<size_t>(st.index) >= e.e.requests.size()) continue;
          auto it = send_of.find(e.e.requests[st.index]);
          if (it == send_of.end() || st.cancelled) continue;
          INFO(e.call << " completing " << it->second->call << " tag " << it->second->e.tag);
          if (mpi().mpich()) {
            CHECK(st.source == kAnySource);
            CHECK(st.tag == kAnyTag);
            CHECK(st.bytes == 0);
          } else {
            CHECK((st.tag == kAnyTag || st.tag == it->second->e.tag));
          }
          checked++;
        }
      } else if (!e.e.requests.empty() && e.call != "MPI_Start" && e.call != "MPI_Startall" && e.call != "MPI_Cancel" &&
                 e.call != "MPI_Request_free") {
        // a call that makes a request: a send's is remembered, any other's forgotten
        if (sends.count(e.call)) send_of[e.e.requests.back()] = &e;
        else send_of.erase(e.e.requests.back());
      }
    }
  }
  CHECK(checked >= 10);
}

TEST_CASE("every event has increasing times and a call site in the program", "[p2p]") {
  const auto& r = p2p_run();
  mpiadvise::JobLog job(r.dir);
  REQUIRE(job.ranks().size() == 4);
  for (const auto& log : job.ranks()) {
    CHECK(log->complete());
    CHECK(log->problems().empty());
    uint64_t prev = 0;
    size_t n = 0;
    log->for_each_event([&](const mpiadvise::Event& e) {
      CHECK(e.t_exit_ns >= e.t_enter_ns);
      CHECK(e.t_enter_ns >= prev);
      prev = e.t_enter_ns;
      CHECK(log->callsites().count(e.callsite) == 1);
      n++;
    });
    CHECK(n > 5);
  }
}

TEST_CASE("a send from the buffer and bytes of the thread's previous send is RESENT, and the report tells a "
          "resend from a refilled pack buffer by the computation between", "[p2p]") {
  // examples/halo.c on 2 ranks, 128 KiB halos: without pack each rank sends its cells to the right, then
  // the same cells to the left (RESENT), and the next iteration's cells are the other buffer; with pack
  // every send is from the one pack buffer (RESENT after the first), refilled by a 128 KiB copy before
  // each send, which the computation between the two sends shows
  for (const bool pack : {false, true}) {
    INFO((pack ? "pack" : "no pack"));
    JobSpec s;
    s.program = example_path("halo").string();
    s.args = {"16384", "20"};
    if (pack) s.args.push_back("pack");
    auto r = run_job(s);
    REQUIRE(r.status == 0);
    for (int rank : {0, 1}) {
      const auto sends = calls_named(events_of(r.dir, rank), "MPI_Send");
      REQUIRE(sends.size() == 40);
      for (size_t i = 0; i < sends.size(); i++) {
        INFO("rank " << rank << ", send " << i << ", tag " << sends[i].e.tag);
        CHECK(sends[i].e.resent == (pack ? i > 0 : sends[i].e.tag == 2));
      }
    }
    // of the 80 messages of 128 KiB, the 40 RESENT of the plain halo were not rewritten: half the bytes, less
    // those whose sender was descheduled between the two sends for longer than rewriting 128 KiB takes at
    // twice the speed of the job's own copies (about 0.7 us); the packed halo's copy before each send takes
    // about twice that. At a fixed 64 B/ns (2 us) a third of the packed halo's copies, on a machine whose
    // memcpy was faster, counted as data sent again unchanged
    const mpiadvise::JobLog job(r.dir);
    const auto trace = mpiadvise::build_trace(job);
    const double share = mpiadvise::cached_resend_share(trace);
    if (pack) {
      CHECK(share == 0);
    } else {
      CHECK(share > 0.25);
      CHECK(share <= 0.5);
    }
    // a set with a [resend] table prices the plain halo's resends at it, and nothing of the packed one
    mpiadvise::ReplayOptions o;
    o.params = mpiadvise::find_params("openmpi-vader", mpiadvise::default_params_dir());
    o.params.resend_buffered.reset(), o.params.resend_rendezvous.reset();
    const double fresh = mpiadvise::replay(trace, o).predicted_ns;
    o.params.resend_buffered = o.params.resend_rendezvous = 0.5;
    const double resent = mpiadvise::replay(trace, o).predicted_ns;
    if (pack)
      CHECK(resent == fresh);
    else
      CHECK(resent < fresh);
  }
  // examples/pipeline.c on 3 ranks: rank 1 receives each item into its buffer and sends it on from there,
  // the same address, bytes and type every time, but received anew: none of its sends is RESENT
  JobSpec s;
  s.np = 3;
  s.program = example_path("pipeline").string();
  s.args = {"65536", "6", "0"};
  auto r = run_job(s);
  REQUIRE(r.status == 0);
  const auto forwarded = calls_named(events_of(r.dir, 1), "MPI_Send");
  REQUIRE(forwarded.size() == 6);
  for (const auto& e : forwarded) CHECK_FALSE(e.e.resent);
}

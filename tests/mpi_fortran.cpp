// Fortran programs are traced through all three bindings: mpif.h (f_mpif.f90), `use mpi` (f_usempi.f90)
// and `use mpi_f08` (f_f08.f90), under each MPI. Open MPI's Fortran bindings call PMPI_ directly, MPICH's
// call the C MPI_ functions; either way each call reaches the log once, through the library's own Fortran
// entry (mpi_send_ for mpif.h and `use mpi`; for mpi_f08, where ierror is optional and mostly left out,
// Open MPI's mpi_send_f08_, MPICH's mpi_send_f08ts_ for calls with a buffer and mpi_barrier_f08_ for the
// others). The three programs make the same calls with the same tags and buffers, so each test case
// runs once per program and expects the same log.
#include <catch2/catch.hpp>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "support.hpp"
#include "symbolizer.hpp"

using namespace mpa_test;
using mpiadvise::kAnySource;
using mpiadvise::kAnyTag;

namespace {

const std::vector<std::string> kPrograms{"f_mpif", "f_usempi", "f_f08"};
const std::vector<int32_t> kWorld{0, 1, 2, 3};

JobSpec job_of(const std::string& program, bool traced) {
  JobSpec s;
  s.np = 4;
  s.program = program;
  s.traced = traced;
  s.timeout_s = 60;
  return s;
}

// One traced and one untraced run per program, shared by the test cases.
const JobResult& run_of(const std::string& program, bool traced) {
  static std::map<std::pair<std::string, bool>, JobResult> runs;
  auto it = runs.find({program, traced});
  if (it == runs.end()) it = runs.emplace(std::make_pair(program, traced), run_job(job_of(program, traced))).first;
  return it->second;
}
const JobResult& traced_run(const std::string& program) { return run_of(program, true); }

// Whether the untraced program passes its own checks. MPICH 4.0.2's mpi_f08 MPI_Waitany and
// MPI_Testsome return 0-based indices (measured: f_f08 fails "Waitany index, 1-based" without the
// tracer), so there f_f08 exits 1 on its own; the tracer must still change nothing, and its log still
// holds C's indices (libtrace/support.c: mpa_f08_index_base).
bool library_passes(const std::string& program) {
  const auto& plain = run_of(program, false);
  if (plain.status == 0) return true;
  INFO(plain.out << plain.err);
  REQUIRE((mpi().mpich() && program == "f_f08" && plain.out.find("f_f08: FAILED") != std::string::npos &&
           plain.err.find("index, 1-based") != std::string::npos));
  return false;
}

// The events of one rank of a program's traced run; the run must have ended as the untraced one did.
std::vector<Ev> events(const std::string& program, int rank) {
  const auto& r = traced_run(program);
  INFO(r.err);
  REQUIRE(r.status == run_of(program, false).status);
  library_passes(program);
  return events_of(r.dir, rank);
}

const Ev* first(const std::vector<Ev>& evs, const std::string& call, int tag = -1000) {
  for (const auto& e : evs)
    if (e.call == call && (tag == -1000 || (e.e.has(MPA_F_TAG) && e.e.tag == tag))) return &e;
  return nullptr;
}
// A pointer into a temporary list would dangle at once: refused at compile time.
const Ev* first(std::vector<Ev>&&, const std::string&, int = -1000) = delete;

// The request an Irecv with this tag created (0 when there is none).
uint64_t irecv_request(const std::vector<Ev>& evs, int tag) {
  const Ev* e = first(evs, "MPI_Irecv", tag);
  return e && e->e.requests.size() == 1 ? e->e.requests[0] : 0;
}

uint64_t calls_of(const std::vector<Ev>& evs, const std::string& call) {
  uint64_t n = 0;
  for (const auto& e : evs) n += e.call == call ? e.e.count : 0;
  return n;
}

// The lines of a job's stderr, in order: ranks write theirs in any order
std::vector<std::string> sorted_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) lines.push_back(l);
  std::sort(lines.begin(), lines.end());
  return lines;
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// For each completion event of one call on rank 0: every status names, by its 0-based index, the request
// of the Irecv whose tag the status carries. Returns the tags completed.
std::vector<int> check_indices(const std::vector<Ev>& r0, const std::string& call) {
  std::vector<int> tags;
  for (const auto& w : calls_named(r0, call)) {
    for (const auto& st : w.e.statuses) {
      INFO(call << " status index " << st.index << " tag " << st.tag);
      REQUIRE(st.index >= 0);
      REQUIRE(static_cast<size_t>(st.index) < w.e.requests.size());
      CHECK(w.e.requests[st.index] == irecv_request(r0, st.tag));
      CHECK(st.source == 1);
      CHECK(st.bytes == 4);
      tags.push_back(st.tag);
    }
  }
  std::sort(tags.begin(), tags.end());
  return tags;
}

}  // namespace

TEST_CASE("a traced Fortran program prints what the untraced one prints and exits alike", "[fortran]") {
  const std::string program = GENERATE(from_range(kPrograms));
  INFO(program);
  const auto& traced = traced_run(program);
  const auto& plain = run_of(program, false);
  INFO(traced.err);
  CHECK(traced.status == plain.status);
  CHECK(traced.out == plain.out);
  if (library_passes(program)) CHECK(traced.out.find(program + ": ok") != std::string::npos);
  else CHECK(sorted_lines(traced.err) == sorted_lines(plain.err));  // the program's own complaints, word for word
  CHECK(traced.err.find("mpiadvise") == std::string::npos);  // no warnings on a clean run
  mpiadvise::JobLog job(traced.dir);
  REQUIRE(job.ranks().size() == 4);
  for (const auto& log : job.ranks()) {
    CHECK(log->complete());
    CHECK(log->problems().empty());
  }
}

TEST_CASE("each Fortran call is logged once, at its call site in the Fortran source", "[fortran]") {
  const std::string program = GENERATE(from_range(kPrograms));
  INFO(program);
  auto r0 = events(program, 0);
  // Calls rank 0 makes a known number of times; twice as many would mean a call traced by both its
  // Fortran and its C wrapper.
  const std::map<std::string, uint64_t> exact{
      {"MPI_Init", 1},      {"MPI_Comm_split", 1}, {"MPI_Send", 2},     {"MPI_Recv", 2},
      {"MPI_Irecv", 10},    {"MPI_Isend", 1},      {"MPI_Waitall", 3},  {"MPI_Waitany", 2},
      {"MPI_Send_init", 1}, {"MPI_Start", 3},      {"MPI_Startall", 2}, {"MPI_Wait", 4},
      {"MPI_Request_free", 1}, {"MPI_Sendrecv", 1}, {"MPI_Probe", 1},   {"MPI_Barrier", 2},
      {"MPI_Bcast", 1},     {"MPI_Reduce", 2},     {"MPI_Allreduce", 3}, {"MPI_Gather", 1},
      {"MPI_Alltoall", 1},  {"MPI_Ibarrier", 1},   {"MPI_Comm_dup", 1}, {"MPI_Comm_free", 2},
      {"MPI_Pcontrol", 2},  {"MPI_Finalize", 1}};
  for (const auto& [call, n] : exact) {
    INFO(call);
    CHECK(calls_of(r0, call) == n);
  }
  for (const char* polled : {"MPI_Testsome", "MPI_Waitsome", "MPI_Iprobe", "MPI_Test"}) {
    INFO(polled);
    CHECK(calls_of(r0, polled) >= 1);
  }
  CHECK(calls_of(events(program, 1), "MPI_Recv_init") == 1);

  // The call site is the return address into the program, not into the library's Fortran entry.
  mpiadvise::JobLog job(traced_run(program).dir);
  const auto* log = job.rank(0);
  REQUIRE(log);
  mpiadvise::Symbolizer sym(log->modules());
  std::set<std::string> outside;
  log->for_each_event([&](const mpiadvise::Event& e) {
    const auto& frames = log->callsites().at(e.callsite).frames;
    auto where = frames.empty() ? mpiadvise::SourceLocation{} : sym.locate_return_address(frames[0]);
    // f_mpif and f_usempi make their calls in the body they both include
    bool in_source = ends_with(where.file, program + ".f90") || ends_with(where.file, "fortran_calls.inc");
    if (!in_source || where.line <= 0)
      outside.insert(std::string(e.call_name) + " at " + where.text());
  });
  CHECK(outside == std::set<std::string>{});
}

// With more frames than the return address the tracer asks libunwind for as many as the last call needed
// (libtrace/callsite.c): a Fortran call's caller is one or two frames further than a C call's.
TEST_CASE("with MPIADVISE_STACK_DEPTH=3 a Fortran call's sites have 3 frames, the first its call in the program",
          "[fortran]") {
  JobSpec s = job_of("f_mpif", true);
  s.env = {{"MPIADVISE_STACK_DEPTH", "3"}};
  auto r = run_job(s);
  REQUIRE(r.status == 0);
  mpiadvise::JobLog job(r.dir);
  const auto* log = job.rank(0);
  REQUIRE(log);
  mpiadvise::Symbolizer sym(log->modules());
  std::set<std::string> wrong;
  size_t events = 0;
  log->for_each_event([&](const mpiadvise::Event& e) {
    events++;
    const auto& frames = log->callsites().at(e.callsite).frames;
    auto where = frames.empty() ? mpiadvise::SourceLocation{} : sym.locate_return_address(frames[0]);
    bool in_source = ends_with(where.file, "f_mpif.f90") || ends_with(where.file, "fortran_calls.inc");
    if (frames.size() != 3 || !in_source || where.line <= 0)
      wrong.insert(std::string(e.call_name) + " at " + where.text() + " with " + std::to_string(frames.size()) + " frames");
  });
  CHECK(events > 30);
  CHECK(wrong == std::set<std::string>{});
}

TEST_CASE("a peer in a communicator split from Fortran is logged as a world rank", "[fortran]") {
  const std::string program = GENERATE(from_range(kPrograms));
  INFO(program);
  auto r0 = events(program, 0), r1 = events(program, 1), r3 = events(program, 3);
  const Ev* send0 = first(r0, "MPI_Send", 11);
  REQUIRE(send0);
  CHECK(send0->e.peer == 2);  // local rank 1 of {0, 2}
  CHECK(send0->e.peer_local == 1);
  CHECK(send0->e.bytes == 40);
  const Ev* split = first(r0, "MPI_Comm_split");
  REQUIRE(split);
  CHECK(send0->e.comm == split->e.newcomm);
  const Ev* send1 = first(r1, "MPI_Send", 11);
  REQUIRE(send1);
  CHECK(send1->e.peer == 3);  // local rank 1 of {1, 3}
  const Ev* recv3 = first(r3, "MPI_Recv", 11);
  REQUIRE(recv3);
  CHECK(recv3->e.peer == 1);
  CHECK(recv3->e.peer_local == 0);
  mpiadvise::JobLog job(traced_run(program).dir);
  const auto& c0 = job.rank(0)->comms().at(send0->e.comm);
  CHECK(c0.members == std::vector<int32_t>{0, 2});
  CHECK(c0.created_by == "MPI_Comm_split");
  CHECK(job.rank(3)->comms().at(recv3->e.comm).members == std::vector<int32_t>{1, 3});
}

TEST_CASE("a Fortran receive with MPI_STATUS_IGNORE still records its real source", "[fortran]") {
  const std::string program = GENERATE(from_range(kPrograms));
  INFO(program);
  for (int rank : {2, 3}) {
    INFO("rank " << rank);
    auto evs = events(program, rank);
    const Ev* recv = first(evs, "MPI_Recv", 11);
    REQUIRE(recv);
    REQUIRE(recv->e.statuses.size() == 1);
    CHECK(recv->e.statuses[0].source == rank - 2);  // world rank of local rank 0
    CHECK(recv->e.statuses[0].tag == 11);
    CHECK(recv->e.statuses[0].bytes == 40);
  }
}

TEST_CASE("bytes of a Fortran derived datatype are count times its size, and an ANY_SOURCE receive "
          "records the real source",
          "[fortran]") {
  const std::string program = GENERATE(from_range(kPrograms));
  INFO(program);
  const auto r0 = events(program, 0);  // first() points into it: it must outlive send
  const Ev* send = first(r0, "MPI_Send", 12);
  REQUIRE(send);
  CHECK(send->e.peer == 1);
  CHECK(send->e.bytes == 2 * 4 * 3 * 4);  // two vectors of 4 blocks of 3 integers
  auto r1 = events(program, 1);
  const Ev* recv = nullptr;
  for (const auto& e : r1)
    if (e.call == "MPI_Recv" && e.e.peer == kAnySource) recv = &e;
  REQUIRE(recv);
  CHECK(recv->e.tag == kAnyTag);
  CHECK(recv->e.bytes2 == 96);
  REQUIRE(recv->e.statuses.size() == 1);
  CHECK(recv->e.statuses[0].source == 0);
  CHECK(recv->e.statuses[0].tag == 12);
  CHECK(recv->e.statuses[0].bytes == 96);
}

TEST_CASE("Waitall with MPI_STATUSES_IGNORE links the requests of Irecv and Isend from Fortran", "[fortran]") {
  const std::string program = GENERATE(from_range(kPrograms));
  INFO(program);
  for (int rank : {0, 1}) {
    INFO("rank " << rank);
    auto evs = events(program, rank);
    const Ev* irecv = first(evs, "MPI_Irecv", 13);
    const Ev* isend = first(evs, "MPI_Isend", 13);
    REQUIRE(irecv);
    REQUIRE(isend);
    CHECK(irecv->e.peer == 1 - rank);
    CHECK(isend->e.peer == 1 - rank);
    CHECK(isend->e.bytes == 4);
    REQUIRE(irecv->e.requests.size() == 1);
    REQUIRE(isend->e.requests.size() == 1);
    CHECK(irecv->e.requests[0] != 0);
    CHECK(isend->e.requests[0] != irecv->e.requests[0]);
    const Ev* waitall = nullptr;
    for (const auto& e : evs)
      if (e.call == "MPI_Waitall" && e.e.t_enter_ns >= isend->e.t_exit_ns) {
        waitall = &e;
        break;
      }
    REQUIRE(waitall);
    CHECK(waitall->e.requests == std::vector<uint64_t>{irecv->e.requests[0], isend->e.requests[0]});
    REQUIRE(waitall->e.statuses.size() == 2);
    CHECK(waitall->e.statuses[0].index == 0);
    CHECK(waitall->e.statuses[0].source == 1 - rank);
    CHECK(waitall->e.statuses[0].tag == 13);
    CHECK(waitall->e.statuses[0].bytes == 4);
  }
}

TEST_CASE("Fortran's 1-based indices of Waitany, Testsome and Waitsome are logged 0-based", "[fortran]") {
  const std::string program = GENERATE(from_range(kPrograms));
  INFO(program);
  auto r0 = events(program, 0);
  auto waitany = calls_named(r0, "MPI_Waitany");
  REQUIRE(waitany.size() == 2);
  for (const auto& w : waitany) {
    CHECK(w.e.requests.size() == 2);
    CHECK(w.e.statuses.size() == 1);
  }
  CHECK(check_indices(r0, "MPI_Waitany") == std::vector<int>{14, 15});
  CHECK(check_indices(r0, "MPI_Testsome") == std::vector<int>{16, 17, 18});  // real statuses
  CHECK(check_indices(r0, "MPI_Waitsome") == std::vector<int>{40, 41, 42});  // MPI_STATUSES_IGNORE
}

TEST_CASE("unsuccessful Fortran Testsome and Test polls fold into runs; the completing Test has its status",
          "[fortran]") {
  const std::string program = GENERATE(from_range(kPrograms));
  INFO(program);
  auto r0 = events(program, 0);
  auto testsome = calls_named(r0, "MPI_Testsome");
  uint64_t folded = 0;
  for (const auto& t : testsome)
    if (t.e.has(MPA_F_COUNT)) {
      folded++;
      CHECK(t.e.statuses.empty());
    }
  CHECK(folded >= 1);  // rank 1 kept rank 0 polling for 50 ms
  CHECK(calls_of(r0, "MPI_Testsome") > testsome.size());

  uint64_t request = irecv_request(r0, 35);
  REQUIRE(request != 0);
  uint64_t polls = 0;
  std::vector<mpiadvise::Status> completions;
  for (const auto& t : calls_named(r0, "MPI_Test")) {
    CHECK(t.e.requests == std::vector<uint64_t>{request});
    polls += t.e.count;
    completions.insert(completions.end(), t.e.statuses.begin(), t.e.statuses.end());
  }
  CHECK(polls > 1);  // rank 1 sent 20 ms late
  REQUIRE(completions.size() == 1);
  CHECK(completions[0].source == 1);
  CHECK(completions[0].tag == 35);
  CHECK(completions[0].bytes == 4);
}

TEST_CASE("Fortran Sendrecv, Probe and Iprobe record peers, tags, bytes and statuses", "[fortran]") {
  const std::string program = GENERATE(from_range(kPrograms));
  INFO(program);
  auto r0 = events(program, 0);
  const Ev* sr = first(r0, "MPI_Sendrecv", 28);
  REQUIRE(sr);
  CHECK(sr->e.peer == 1);
  CHECK(sr->e.peer2 == 1);
  CHECK(sr->e.tag2 == 28);
  CHECK(sr->e.bytes == 4);
  CHECK(sr->e.bytes2 == 4);
  REQUIRE(sr->e.statuses.size() == 1);  // MPI_STATUS_IGNORE in the program
  CHECK(sr->e.statuses[0].source == 1);
  const Ev* probe = first(r0, "MPI_Probe", 31);
  REQUIRE(probe);
  CHECK(probe->e.peer == 1);
  REQUIRE(probe->e.statuses.size() == 1);
  CHECK(probe->e.statuses[0].source == 1);
  CHECK(probe->e.statuses[0].tag == 31);
  CHECK(probe->e.statuses[0].bytes == 4);
  const Ev* recv31 = first(r0, "MPI_Recv", 31);
  REQUIRE(recv31);
  CHECK(recv31->e.peer == 1);
  bool iprobe_found = false;
  for (const auto& e : calls_named(r0, "MPI_Iprobe")) {
    CHECK(e.e.peer == kAnySource);
    CHECK(e.e.tag == 32);
    iprobe_found |= e.e.statuses.size() == 1 && e.e.statuses[0].source == 1 && e.e.statuses[0].tag == 32;
  }
  CHECK(iprobe_found);
}

TEST_CASE("Fortran persistent requests keep one identity through Start, Startall, Wait and Request_free",
          "[fortran]") {
  const std::string program = GENERATE(from_range(kPrograms));
  INFO(program);
  for (int rank : {0, 1}) {
    INFO("rank " << rank);
    auto evs = events(program, rank);
    const Ev* init = first(evs, rank == 0 ? "MPI_Send_init" : "MPI_Recv_init", 19);
    REQUIRE(init);
    CHECK(init->e.peer == 1 - rank);
    REQUIRE(init->e.requests.size() == 1);
    uint64_t id = init->e.requests[0];
    CHECK(id != 0);
    auto starts = calls_named(evs, "MPI_Start");
    REQUIRE(starts.size() == 3);
    for (const auto& s : starts) CHECK(s.e.requests == std::vector<uint64_t>{id});
    auto startalls = calls_named(evs, "MPI_Startall");
    REQUIRE(startalls.size() == 2);
    for (const auto& s : startalls) CHECK(s.e.requests == std::vector<uint64_t>{id});
    int waits = 0, waitalls = 0;
    for (const auto& w : calls_named(evs, "MPI_Wait")) {
      if (w.e.requests != std::vector<uint64_t>{id}) continue;
      waits++;
      if (rank == 1) {
        REQUIRE(w.e.statuses.size() == 1);
        CHECK(w.e.statuses[0].source == 0);
        CHECK(w.e.statuses[0].tag == 19);
      }
    }
    for (const auto& w : calls_named(evs, "MPI_Waitall")) waitalls += w.e.requests == std::vector<uint64_t>{id};
    CHECK(waits == 3);
    CHECK(waitalls == 2);
    const Ev* fr = first(evs, "MPI_Request_free");
    REQUIRE(fr);
    CHECK(fr->e.requests == std::vector<uint64_t>{id});
  }
}

TEST_CASE("Fortran collectives log their root as a world rank and their bytes; MPI_IN_PLACE sends none",
          "[fortran]") {
  const std::string program = GENERATE(from_range(kPrograms));
  INFO(program);
  mpiadvise::JobLog job(traced_run(program).dir);
  for (int rank = 0; rank < 4; rank++) {
    INFO("rank " << rank);
    auto evs = events(program, rank);
    const Ev* bcast = first(evs, "MPI_Bcast");
    REQUIRE(bcast);
    CHECK(job.rank(rank)->comms().at(bcast->e.comm).members == kWorld);
    CHECK(bcast->e.peer == 1);
    CHECK(bcast->e.bytes == 20);
    const Ev* reduce = first(evs, "MPI_Reduce");
    REQUIRE(reduce);
    CHECK(reduce->e.peer == 2);
    CHECK(reduce->e.bytes == 12);
    auto allreduce = calls_named(evs, "MPI_Allreduce");
    REQUIRE(allreduce.size() == 3);
    CHECK(allreduce[0].e.comm == bcast->e.comm);
    CHECK(allreduce[0].e.bytes == 8);
    CHECK(allreduce[1].e.comm == bcast->e.comm);
    CHECK_FALSE(allreduce[1].e.has(MPA_F_BYTES));  // MPI_IN_PLACE
    const Ev* gather = first(evs, "MPI_Gather");
    REQUIRE(gather);
    CHECK(gather->e.peer == 0);
    CHECK(gather->e.bytes == 8);
    if (rank == 0) CHECK(gather->e.bytes2 == 8);  // the receive side counts only at the root
    const Ev* alltoall = first(evs, "MPI_Alltoall");
    REQUIRE(alltoall);
    CHECK(alltoall->e.bytes == 4);
    CHECK(alltoall->e.bytes2 == 4);
  }
}

TEST_CASE("a Fortran Ibarrier's request completes in the Wait that follows it", "[fortran]") {
  const std::string program = GENERATE(from_range(kPrograms));
  INFO(program);
  auto evs = events(program, 3);
  const Ev* ib = first(evs, "MPI_Ibarrier");
  REQUIRE(ib);
  REQUIRE(ib->e.requests.size() == 1);
  CHECK(ib->e.requests[0] != 0);
  auto it = std::find_if(evs.begin(), evs.end(), [&](const Ev& e) { return &e == ib; });
  REQUIRE(it + 1 != evs.end());
  CHECK(it[1].call == "MPI_Wait");
  CHECK(it[1].e.requests == ib->e.requests);
}

TEST_CASE("Fortran Comm_dup defines a communicator of the same ranks and Comm_free releases it", "[fortran]") {
  const std::string program = GENERATE(from_range(kPrograms));
  INFO(program);
  mpiadvise::JobLog job(traced_run(program).dir);
  for (int rank = 0; rank < 4; rank++) {
    INFO("rank " << rank);
    auto evs = events(program, rank);
    const Ev* dup = first(evs, "MPI_Comm_dup");
    REQUIRE(dup);
    REQUIRE(dup->e.has(MPA_F_NEWCOMM));
    const auto& c = job.rank(rank)->comms().at(dup->e.newcomm);
    CHECK(c.members == kWorld);
    CHECK(c.created_by == "MPI_Comm_dup");
    auto allreduce = calls_named(evs, "MPI_Allreduce");
    REQUIRE(allreduce.size() == 3);
    CHECK(allreduce[2].e.comm == dup->e.newcomm);
    CHECK(allreduce[2].e.bytes == 4);
    auto frees = calls_named(evs, "MPI_Comm_free");
    REQUIRE(frees.size() == 2);
    CHECK(frees[0].e.comm == dup->e.newcomm);
    const Ev* split = first(evs, "MPI_Comm_split");
    REQUIRE(split);
    CHECK(frees[1].e.comm == split->e.newcomm);
  }
}

TEST_CASE("Fortran MPI_Pcontrol(0) pauses tracing until MPI_Pcontrol(1)", "[fortran]") {
  const std::string program = GENERATE(from_range(kPrograms));
  INFO(program);
  for (int rank : {0, 1}) {
    INFO("rank " << rank);
    auto evs = events(program, rank);
    auto pc = calls_named(evs, "MPI_Pcontrol");
    REQUIRE(pc.size() == 2);
    CHECK(pc[0].e.value == 0);
    CHECK(pc[1].e.value == 1);
    CHECK(first(evs, "MPI_Sendrecv", 77) == nullptr);  // the exchange made while paused
    CHECK(calls_named(evs, "MPI_Sendrecv").size() == 1);
  }
}

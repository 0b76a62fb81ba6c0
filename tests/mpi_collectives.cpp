// Collectives and communicator calls through the C bindings: each appears in the log with the arguments
// the program passed, and each communicator it made is defined with its members as world ranks
// (tests/programs/coll_all.c knows them all).
#include <catch2/catch.hpp>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <tuple>

#include "collectives.hpp"
#include "replay.hpp"
#include "run_facts.hpp"
#include "support.hpp"
#include "trace.hpp"

using namespace mpa_test;
using mpiadvise::kAnySource;
using mpiadvise::kProcNull;
using mpiadvise::kRoot;

namespace {

constexpr int kRanks = 4;
constexpr uint32_t kWorld = 1;
using Bytes = std::optional<uint64_t>;  // nullopt: the field must be absent
using Members = std::vector<int32_t>;

const JobResult& coll_run() {
  static JobResult r = [] {
    JobSpec s;
    s.np = kRanks;
    s.program = "coll_all";
    s.timeout_s = 60;
    return run_job(s);
  }();
  return r;
}

// The traced job's logs, read once.
struct Logs {
  std::unique_ptr<mpiadvise::JobLog> job;
  std::vector<Ev> events[kRanks];
  const std::map<uint32_t, mpiadvise::Communicator>& comms(int rank) const { return job->rank(rank)->comms(); }
};

const Logs& logs() {
  static Logs l = [] {
    Logs l;
    const auto& r = coll_run();
    l.job = std::make_unique<mpiadvise::JobLog>(r.dir);
    for (int rank = 0; rank < kRanks; rank++) l.events[rank] = events_of(r.dir, rank);
    return l;
  }();
  return l;
}

std::vector<Ev> on_comm(const std::vector<Ev>& evs, const std::string& call, uint32_t comm) {
  std::vector<Ev> out;
  for (const auto& e : evs)
    if (e.call == call && e.e.has(MPA_F_COMM) && e.e.comm == comm) out.push_back(e);
  return out;
}

const Ev* with_tag(const std::vector<Ev>& evs, const std::string& call, int tag) {
  for (const auto& e : evs)
    if (e.call == call && e.e.has(MPA_F_TAG) && e.e.tag == tag) return &e;
  return nullptr;
}

// The n-th event of a call (0 first), or null.
const Ev* nth(const std::vector<Ev>& evs, const std::string& call, size_t n) {
  for (const auto& e : evs)
    if (e.call == call && n-- == 0) return &e;
  return nullptr;
}
// A pointer into a temporary list would dangle at once: refused at compile time.
const Ev* with_tag(std::vector<Ev>&&, const std::string&, int) = delete;
const Ev* nth(std::vector<Ev>&&, const std::string&, size_t) = delete;

// MPI_Reduce_scatter_block -> MPI_Ireduce_scatter_block
std::string immediate(const std::string& blocking) {
  std::string rest = blocking.substr(4);
  for (auto& c : rest) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return "MPI_I" + rest;
}

void check_bytes(const mpiadvise::Event& e, uint32_t field, uint64_t value, Bytes expected) {
  CHECK(e.has(field) == expected.has_value());
  if (expected && e.has(field)) CHECK(value == *expected);
}

// What the log must say about one collective on MPI_COMM_WORLD, on world rank r.
struct CollectiveSpec {
  std::string call;
  size_t occurrence;  // among the call's events on MPI_COMM_WORLD
  int root;           // world rank; -1: the call has no root
  Bytes (*bytes)(int r);
  Bytes (*bytes2)(int r);
  std::vector<uint64_t> (*each)(int r) = nullptr;  // VCOUNTS: bytes for each rank; null: none logged
};

Bytes none(int) { return std::nullopt; }
using Each = std::vector<uint64_t>;

// tests/programs/coll_all.c, collectives(): the blocking and the I- forms take the same arguments.
const std::vector<CollectiveSpec>& world_collectives() {
  static const std::vector<CollectiveSpec> specs = {
      {"MPI_Barrier", 0, -1, none, none},
      {"MPI_Bcast", 0, 2, [](int) -> Bytes { return 20; }, none},
      // the reductions log their result's size as BYTES2 (at the root of Reduce), in place or not
      {"MPI_Reduce", 0, 1, [](int) -> Bytes { return 24; }, [](int r) -> Bytes { return r == 1 ? 24 : Bytes{}; }},
      {"MPI_Reduce", 1, 3, [](int r) -> Bytes { return r == 3 ? Bytes{} : 24; },  // in place at root 3
       [](int r) -> Bytes { return r == 3 ? 24 : Bytes{}; }},
      {"MPI_Allreduce", 0, -1, [](int) -> Bytes { return 32; }, [](int) -> Bytes { return 32; }},
      {"MPI_Allreduce", 1, -1, none, [](int) -> Bytes { return 32; }},  // in place everywhere
      {"MPI_Gather", 0, 0, [](int) -> Bytes { return 8; }, [](int r) -> Bytes { return r == 0 ? 8 : Bytes{}; }},
      {"MPI_Gatherv", 0, 3, [](int r) -> Bytes { return 4 * (r + 1); },
       [](int r) -> Bytes { return r == 3 ? 40 : Bytes{}; }, [](int r) { return r == 3 ? Each{4, 8, 12, 16} : Each{}; }},
      {"MPI_Scatter", 0, 1, [](int r) -> Bytes { return r == 1 ? 6 : Bytes{}; }, [](int) -> Bytes { return 6; }},
      {"MPI_Scatterv", 0, 0, [](int r) -> Bytes { return r == 0 ? 40 : Bytes{}; },
       [](int r) -> Bytes { return 4 * (4 - r); }, [](int r) { return r == 0 ? Each{16, 12, 8, 4} : Each{}; }},
      {"MPI_Allgather", 0, -1, [](int) -> Bytes { return 4; }, [](int) -> Bytes { return 4; }},
      {"MPI_Allgatherv", 0, -1, [](int r) -> Bytes { return 4 * (r + 1); }, [](int) -> Bytes { return 40; },
       [](int) { return Each{4, 8, 12, 16}; }},
      {"MPI_Alltoall", 0, -1, [](int) -> Bytes { return 8; }, [](int) -> Bytes { return 8; }},
      {"MPI_Alltoallv", 0, -1, [](int) -> Bytes { return 40; }, [](int r) -> Bytes { return 16 * (r + 1); },
       [](int) { return Each{4, 8, 12, 16}; }},
      {"MPI_Alltoallw", 0, -1, [](int) -> Bytes { return 4 + 8 + 4 + 8; },
       [](int r) -> Bytes { return r % 2 ? 4 * 8 : 4 * 4; }, [](int) { return Each{4, 8, 4, 8}; }},
      {"MPI_Reduce_scatter", 0, -1, [](int) -> Bytes { return 40; }, [](int r) -> Bytes { return 4 * (r + 1); },
       [](int) { return Each{4, 8, 12, 16}; }},
      {"MPI_Reduce_scatter_block", 0, -1, [](int) -> Bytes { return 4 * 2 * 4; }, [](int) -> Bytes { return 8; }},
      {"MPI_Scan", 0, -1, [](int) -> Bytes { return 8; }, [](int) -> Bytes { return 8; }},
      {"MPI_Exscan", 0, -1, [](int) -> Bytes { return 8; }, [](int) -> Bytes { return 8; }},
  };
  return specs;
}

// Calls that make communicators, as tests/programs/coll_all.c makes them.
const std::vector<std::string> kCreatingCalls = {
    "MPI_Comm_dup",        "MPI_Comm_dup_with_info", "MPI_Comm_idup",         "MPI_Comm_split",
    "MPI_Comm_split_type", "MPI_Comm_create",        "MPI_Comm_create_group", "MPI_Intercomm_create",
    "MPI_Intercomm_merge", "MPI_Cart_create",        "MPI_Cart_sub",          "MPI_Graph_create",
    "MPI_Dist_graph_create", "MPI_Dist_graph_create_adjacent"};

std::vector<Ev> creating_events(const std::vector<Ev>& evs) {
  std::vector<Ev> out;
  for (const auto& e : evs)
    if (std::find(kCreatingCalls.begin(), kCreatingCalls.end(), e.call) != kCreatingCalls.end()) out.push_back(e);
  return out;
}

// The id of the communicator the n-th call of this name made on this rank.
uint32_t made_by(int rank, const std::string& call, size_t n = 0) {
  const Ev* e = nth(logs().events[rank], call, n);
  REQUIRE(e);
  REQUIRE(e->e.has(MPA_F_NEWCOMM));
  return e->e.newcomm;
}

}  // namespace

TEST_CASE("a traced job gives the results and exit status of the untraced one", "[coll]") {
  const auto& traced = coll_run();
  JobSpec s;
  s.np = kRanks;
  s.program = "coll_all";
  s.traced = false;
  s.timeout_s = 60;
  auto plain = run_job(s);
  INFO(traced.err);
  REQUIRE(plain.status == 0);
  CHECK(traced.status == plain.status);
  CHECK(traced.out == plain.out);
  CHECK(traced.out.find("coll_all: ok") != std::string::npos);
  CHECK(traced.err.find("mpiadvise") == std::string::npos);  // no warnings on a clean run
}

TEST_CASE("every rank's log is complete and every communicator an event names is defined", "[coll]") {
  REQUIRE(coll_run().status == 0);
  const auto& l = logs();
  REQUIRE(l.job->ranks().size() == kRanks);
  CHECK(l.job->problems().empty());
  for (int rank = 0; rank < kRanks; rank++) {
    INFO("rank " << rank);
    CHECK(l.job->rank(rank)->complete());
    for (const auto& e : l.events[rank]) {
      INFO(e.call);
      if (e.e.has(MPA_F_COMM)) CHECK(l.comms(rank).count(e.e.comm) == 1);
      if (e.e.has(MPA_F_NEWCOMM)) CHECK(l.comms(rank).count(e.e.newcomm) == 1);
    }
  }
}

TEST_CASE("every collective and its I- form appear on every rank with communicator, world root and bytes",
          "[coll]") {
  REQUIRE(coll_run().status == 0);
  for (int rank = 0; rank < kRanks; rank++) {
    const auto& evs = logs().events[rank];
    for (const auto& spec : world_collectives()) {
      for (const auto& call : {spec.call, immediate(spec.call)}) {
        INFO("rank " << rank << " " << call << " #" << spec.occurrence);
        auto on_world = on_comm(evs, call, kWorld);
        REQUIRE(on_world.size() > spec.occurrence);
        const auto& e = on_world[spec.occurrence].e;
        if (spec.root >= 0) {
          REQUIRE(e.has(MPA_F_PEER));
          CHECK(e.peer == spec.root);
          CHECK(e.peer_local == spec.root);  // ranks of MPI_COMM_WORLD are world ranks
        } else {
          CHECK_FALSE(e.has(MPA_F_PEER));
        }
        check_bytes(e, MPA_F_BYTES, e.bytes, spec.bytes(rank));
        check_bytes(e, MPA_F_BYTES2, e.bytes2, spec.bytes2(rank));
        const Each each = spec.each ? spec.each(rank) : Each{};
        CHECK(e.has(MPA_F_VCOUNTS) == !each.empty());
        CHECK(e.vcounts == each);
        CHECK(e.has(MPA_F_REQS) == (call != spec.call));
      }
    }
  }
}

TEST_CASE("the trace's collective instances keep each member's logged bytes and counts", "[coll]") {
  REQUIRE(coll_run().status == 0);
  const auto trace = mpiadvise::build_trace(*logs().job);
  const uint64_t world_gid = logs().comms(0).at(kWorld).gid;
  for (const auto& spec : world_collectives()) {
    for (const auto& call : {spec.call, immediate(spec.call)}) {
      INFO(call << " #" << spec.occurrence);
      // the instances of the call on MPI_COMM_WORLD, in the order the program made them
      std::vector<mpiadvise::CollectiveInstance> on_world;  // views into the trace
      for (const auto& c : trace.collectives)
        if (call == mpiadvise::call_name(static_cast<int>(c.call)) && trace.comms[c.comm].gid == world_gid)
          on_world.push_back(c);
      REQUIRE(on_world.size() > spec.occurrence);
      const auto& c = on_world[spec.occurrence];
      REQUIRE(c.members.size() == kRanks);
      REQUIRE(c.sent.size() == kRanks);
      REQUIRE(c.received.size() == kRanks);
      bool counted = false;
      for (size_t p = 0; p < c.members.size(); p++) {
        const int rank = c.members[p].first;
        INFO("rank " << rank);
        CHECK(c.sent[p] == spec.bytes(rank));
        CHECK(c.received[p] == spec.bytes2(rank));
        counted |= spec.each && !spec.each(rank).empty();
      }
      // the counts arrays, where any member logged one: for every member, empty where it logged none
      REQUIRE(c.each.size() == (counted ? kRanks : 0));
      for (size_t p = 0; p < c.each.size(); p++) CHECK(c.each[p] == spec.each(c.members[p].first));
    }
  }
}

TEST_CASE("each collective on MPI_COMM_WORLD is logged once per call the program made", "[coll]") {
  REQUIRE(coll_run().status == 0);
  // MPI_Reduce: root 1, root 3 in place, and the final report; the I- forms: one each in the suite, and
  // Ibarrier, Ibcast and Iallreduce once more in the batch completed by Waitall
  const std::map<std::string, size_t> more = {
      {"MPI_Reduce", 3}, {"MPI_Allreduce", 2}, {"MPI_Ireduce", 2}, {"MPI_Iallreduce", 3},
      {"MPI_Ibarrier", 2}, {"MPI_Ibcast", 2}};
  for (int rank = 0; rank < kRanks; rank++) {
    for (const auto& spec : world_collectives()) {
      for (const auto& call : {spec.call, immediate(spec.call)}) {
        INFO("rank " << rank << " " << call);
        auto it = more.find(call);
        CHECK(on_comm(logs().events[rank], call, kWorld).size() == (it == more.end() ? 1 : it->second));
      }
    }
  }
}

TEST_CASE("the request of each I- form is completed by the Wait or Waitall that names it", "[coll]") {
  REQUIRE(coll_run().status == 0);
  for (int rank = 0; rank < kRanks; rank++) {
    const auto& evs = logs().events[rank];
    std::set<uint64_t> ids;
    size_t immediates = 0;
    for (size_t i = 0; i < evs.size(); i++) {
      const auto& e = evs[i];
      bool is_immediate = e.call == "MPI_Comm_idup";
      for (const auto& spec : world_collectives()) is_immediate |= e.call == immediate(spec.call);
      if (!is_immediate) continue;
      immediates++;
      INFO("rank " << rank << " " << e.call << " event " << i);
      REQUIRE(e.e.requests.size() == 1);
      uint64_t id = e.e.requests[0];
      CHECK(id != 0);
      CHECK(ids.insert(id).second);  // a new identity for each request
      const Ev* completion = nullptr;
      for (size_t j = i + 1; j < evs.size() && !completion; j++)
        if ((evs[j].call == "MPI_Wait" || evs[j].call == "MPI_Waitall") &&
            std::count(evs[j].e.requests.begin(), evs[j].e.requests.end(), id))
          completion = &evs[j];
      CHECK(completion);
    }
    CHECK(immediates == world_collectives().size() + 3 + 1);  // each spec once, the batch, Comm_idup

    // the batch: three requests in flight, one Waitall
    const Ev* ibarrier = nth(evs, "MPI_Ibarrier", 1);
    const Ev* ibcast = nth(evs, "MPI_Ibcast", 1);
    const Ev* iallreduce = nth(evs, "MPI_Iallreduce", 2);
    REQUIRE(ibarrier);
    REQUIRE(ibcast);
    REQUIRE(iallreduce);
    CHECK(ibcast->e.peer == 0);
    CHECK(ibcast->e.bytes == 8);
    CHECK_FALSE(iallreduce->e.has(MPA_F_BYTES));  // in place
    auto waitalls = calls_named(evs, "MPI_Waitall");
    bool found = false;
    for (const auto& w : waitalls)
      found |= w.e.requests == std::vector<uint64_t>{ibarrier->e.requests.at(0), ibcast->e.requests.at(0),
                                                     iallreduce->e.requests.at(0)};
    CHECK(found);
  }
}

TEST_CASE("a root given as a rank of a split communicator is logged as a world rank", "[coll]") {
  REQUIRE(coll_run().status == 0);
  for (int rank = 0; rank < kRanks; rank++) {
    INFO("rank " << rank);
    uint32_t half = made_by(rank, "MPI_Comm_split");
    auto bcast = on_comm(logs().events[rank], "MPI_Bcast", half);
    auto reduce = on_comm(logs().events[rank], "MPI_Reduce", half);
    REQUIRE(bcast.size() == 1);
    REQUIRE(reduce.size() == 1);
    // half is world {1, 0} or {3, 2}: local 1 is world 0 or 2, local 0 is world 1 or 3
    CHECK(bcast[0].e.peer_local == 1);
    CHECK(bcast[0].e.peer == (rank < 2 ? 0 : 2));
    CHECK(bcast[0].e.bytes == 12);
    CHECK(reduce[0].e.peer_local == 0);
    CHECK(reduce[0].e.peer == (rank < 2 ? 1 : 3));
    CHECK(reduce[0].e.bytes == 8);
  }
}

TEST_CASE("each new communicator is defined with its members as world ranks, its creating call and parent",
          "[coll]") {
  REQUIRE(coll_run().status == 0);
  const Members all{0, 1, 2, 3};
  for (int rank = 0; rank < kRanks; rank++) {
    const auto& comms = logs().comms(rank);
    auto created = [&](const std::string& call, size_t n = 0) -> const mpiadvise::Communicator& {
      const Ev* e = nth(logs().events[rank], call, n);
      REQUIRE(e);
      REQUIRE(e->e.has(MPA_F_NEWCOMM));
      const auto& c = comms.at(e->e.newcomm);
      CHECK(c.id == e->e.newcomm);
      CHECK(c.created_by == call);
      CHECK(c.parent == e->e.comm);
      return c;
    };
    INFO("rank " << rank);
    for (const char* call : {"MPI_Comm_dup", "MPI_Comm_dup_with_info", "MPI_Comm_idup", "MPI_Comm_split_type",
                             "MPI_Graph_create", "MPI_Dist_graph_create", "MPI_Dist_graph_create_adjacent"}) {
      INFO(call);
      const auto& c = created(call);
      CHECK(c.members == all);
      CHECK_FALSE(c.inter);
      CHECK(c.parent == kWorld);
    }
    CHECK(created("MPI_Comm_split").members == (rank < 2 ? Members{1, 0} : Members{3, 2}));  // key -rank
    CHECK(created("MPI_Comm_split", 1).members == (rank % 2 ? Members{1, 3} : Members{0, 2}));
    CHECK(created("MPI_Comm_dup", 1).members == all);

    const Ev* create = nth(logs().events[rank], "MPI_Comm_create", 0);
    REQUIRE(create);
    if (rank % 2) CHECK(created("MPI_Comm_create").members == Members{3, 1});  // the group's order
    else CHECK_FALSE(create->e.has(MPA_F_NEWCOMM));                            // MPI_COMM_NULL
    if (rank != 1) CHECK(created("MPI_Comm_create_group").members == Members{0, 2, 3});
    else CHECK(calls_named(logs().events[rank], "MPI_Comm_create_group").empty());  // not a member: no call

    const auto& inter = created("MPI_Intercomm_create");
    CHECK(inter.inter);
    CHECK(inter.parent == made_by(rank, "MPI_Comm_split"));
    CHECK(inter.members == (rank < 2 ? Members{1, 0} : Members{3, 2}));
    CHECK(inter.remote == (rank < 2 ? Members{3, 2} : Members{1, 0}));
    const auto& merged = created("MPI_Intercomm_merge");
    CHECK_FALSE(merged.inter);
    CHECK(merged.parent == inter.id);
    CHECK(merged.members == Members{1, 0, 3, 2});  // the low group first

    const auto& cart = created("MPI_Cart_create");
    Members sorted = cart.members;
    std::sort(sorted.begin(), sorted.end());
    CHECK(sorted == all);
    const auto& row = created("MPI_Cart_sub");
    CHECK(row.parent == cart.id);
    REQUIRE(row.members.size() == 2);
    CHECK(std::count(row.members.begin(), row.members.end(), rank) == 1);
  }
  // the library's reordering is the same on every rank
  for (int rank = 1; rank < kRanks; rank++)
    CHECK(logs().comms(rank).at(made_by(rank, "MPI_Cart_create")).members ==
          logs().comms(0).at(made_by(0, "MPI_Cart_create")).members);
}

TEST_CASE("a communicator has the same gid on every member rank, and no other communicator has it", "[coll]") {
  REQUIRE(coll_run().status == 0);
  // A communicator is known independently of its gid by the call that made it, which of that call's
  // communicators it is on its rank, and its members (a split makes several).
  using Key = std::tuple<std::string, size_t, Members>;
  std::map<Key, std::set<uint64_t>> gids;
  std::map<Key, std::set<int>> ranks_of;
  for (int rank = 0; rank < kRanks; rank++) {
    std::map<std::string, size_t> seen;
    for (const auto& e : creating_events(logs().events[rank])) {
      size_t n = seen[e.call]++;
      if (!e.e.has(MPA_F_NEWCOMM)) continue;
      const auto& c = logs().comms(rank).at(e.e.newcomm);
      Members everyone = c.members;
      everyone.insert(everyone.end(), c.remote.begin(), c.remote.end());
      std::sort(everyone.begin(), everyone.end());
      Key key{e.call, n, everyone};
      gids[key].insert(c.gid);
      ranks_of[key].insert(rank);
    }
    const auto& world = logs().comms(rank).at(kWorld);
    gids[{"MPI_Init", 0, world.members}].insert(world.gid);
    ranks_of[{"MPI_Init", 0, world.members}].insert(rank);
    const auto& self = logs().comms(rank).at(2);
    CHECK(self.members == Members{rank});
    gids[{"MPI_Init", 1, self.members}].insert(self.gid);
    ranks_of[{"MPI_Init", 1, self.members}].insert(rank);
  }
  // world, 4 selves, 11 made on every rank, 2 halves, Comm_create, Comm_create_group, 2 rows, 2 parities
  CHECK(gids.size() == 1 + 4 + 11 + 2 + 1 + 1 + 2 + 2);
  std::map<uint64_t, Key> owner;
  for (const auto& [key, set] : gids) {
    const auto& [call, n, members] = key;
    INFO(call << " #" << n << " with " << members.size() << " members, first " << members.at(0));
    CHECK(set.size() == 1);  // one gid on every rank that has it
    CHECK(ranks_of[key] == std::set<int>(members.begin(), members.end()));  // defined on each member
    for (uint64_t gid : set) CHECK(owner.emplace(gid, key).second);  // no other communicator has it
  }
}

TEST_CASE("the newcomm of a creating event is the id that later events on the communicator use", "[coll]") {
  REQUIRE(coll_run().status == 0);
  for (int rank = 0; rank < kRanks; rank++) {
    const auto& evs = logs().events[rank];
    uint32_t parity = made_by(rank, "MPI_Comm_split", 1);  // freed while tracing was paused
    std::set<uint32_t> made;
    for (const auto& e : creating_events(evs)) {
      if (!e.e.has(MPA_F_NEWCOMM)) continue;
      INFO("rank " << rank << " " << e.call << " newcomm " << e.e.newcomm);
      CHECK(made.insert(e.e.newcomm).second);  // ids are not reused
      CHECK(e.e.newcomm > 2);
      if (e.e.newcomm == parity) continue;
      CHECK(on_comm(evs, "MPI_Barrier", e.e.newcomm).size() == 1);
      auto frees = on_comm(evs, "MPI_Comm_free", e.e.newcomm);
      REQUIRE(frees.size() == 1);
      CHECK(frees[0].e.t_enter_ns > e.e.t_exit_ns);
    }
    CHECK(made.size() == (rank == 3 ? 16u : 15u));  // Comm_create gives ranks 0 and 2 MPI_COMM_NULL, and
                                                     // rank 1 is not in Comm_create_group's group
  }
}

TEST_CASE("the trace of every collective and communicator is the same read on 1, 2 or 3 threads", "[coll][trace]") {
  REQUIRE(coll_run().status == 0);
  require_same_trace_on_any_threads(*logs().job);
}

TEST_CASE("a peer on an intercommunicator is a world rank found through the remote group", "[coll]") {
  REQUIRE(coll_run().status == 0);
  const auto& l = logs();
  // world 0 (local 1 of {1, 0}) sends to remote rank 0: world 3
  const Ev* send = with_tag(l.events[0], "MPI_Send", 60);
  REQUIRE(send);
  CHECK(send->e.comm == made_by(0, "MPI_Intercomm_create"));
  CHECK(send->e.peer_local == 0);
  CHECK(send->e.peer == 3);
  CHECK(send->e.bytes == 16);
  // world 3 receives from remote rank 1: world 0
  const Ev* recv = with_tag(l.events[3], "MPI_Recv", 60);
  REQUIRE(recv);
  CHECK(recv->e.peer_local == 1);
  CHECK(recv->e.peer == 0);
  REQUIRE(recv->e.statuses.size() == 1);
  CHECK(recv->e.statuses[0].source == 0);
  // world 2 sends to remote rank 0 (world 1), which received from any source; the status names world 2
  const Ev* isend = with_tag(l.events[2], "MPI_Isend", 61);
  REQUIRE(isend);
  CHECK(isend->e.peer == 1);
  const Ev* irecv = with_tag(l.events[1], "MPI_Irecv", 61);
  REQUIRE(irecv);
  CHECK(irecv->e.peer == kAnySource);
  const Ev* waitall = nullptr;
  for (const auto& w : l.events[1])
    if (w.call == "MPI_Waitall" && w.e.requests == irecv->e.requests) waitall = &w;
  REQUIRE(waitall);
  REQUIRE(waitall->e.statuses.size() == 1);
  CHECK(waitall->e.statuses[0].source == 2);
  // a broadcast from world 1: MPI_ROOT there, MPI_PROC_NULL beside it, remote rank 0 (world 1) opposite
  for (int rank = 0; rank < kRanks; rank++) {
    INFO("rank " << rank);
    auto bcast = on_comm(l.events[rank], "MPI_Bcast", made_by(rank, "MPI_Intercomm_create"));
    REQUIRE(bcast.size() == 1);
    if (rank == 1) CHECK(bcast[0].e.peer == kRoot);
    else if (rank == 0) CHECK(bcast[0].e.peer == kProcNull);
    else {
      CHECK(bcast[0].e.peer_local == 0);
      CHECK(bcast[0].e.peer == 1);
    }
  }
}

TEST_CASE("a peer on a cartesian communicator made with reorder is a world rank", "[coll]") {
  REQUIRE(coll_run().status == 0);
  // Each rank sent to its Cart_shift neighbour with tag 100 + the neighbour's world rank, found by the
  // program through the communicator's group, and received with tag 100 + its own world rank.
  std::map<int, int> sender_to;  // world rank -> who sent to it
  std::vector<Ev> sendrecv(kRanks);
  for (int rank = 0; rank < kRanks; rank++) {
    auto on_cart = on_comm(logs().events[rank], "MPI_Sendrecv", made_by(rank, "MPI_Cart_create"));
    REQUIRE(on_cart.size() == 1);
    sendrecv[rank] = on_cart[0];
    sender_to[on_cart[0].e.tag - 100] = rank;
  }
  for (int rank = 0; rank < kRanks; rank++) {
    INFO("rank " << rank);
    const auto& e = sendrecv[rank].e;
    CHECK(e.peer == e.tag - 100);
    CHECK(e.tag2 == 100 + rank);
    REQUIRE(sender_to.count(rank));
    CHECK(e.peer2 == sender_to[rank]);
    REQUIRE(e.statuses.size() == 1);
    CHECK(e.statuses[0].source == sender_to[rank]);
  }
}

TEST_CASE("a communicator freed while tracing is paused does not lend its id to the next one", "[coll]") {
  REQUIRE(coll_run().status == 0);
  for (int rank = 0; rank < kRanks; rank++) {
    INFO("rank " << rank);
    uint32_t parity = made_by(rank, "MPI_Comm_split", 1);
    uint32_t after_pause = made_by(rank, "MPI_Comm_dup", 1);
    CHECK(after_pause != parity);
    CHECK(logs().comms(rank).at(after_pause).members == Members{0, 1, 2, 3});
    const Ev* e = with_tag(logs().events[rank], "MPI_Sendrecv", 70);
    REQUIRE(e);
    CHECK(e->e.comm == after_pause);
    CHECK(e->e.peer == (rank ^ 1));
    REQUIRE(e->e.statuses.size() == 1);
    CHECK(e->e.statuses[0].source == (rank ^ 1));
  }
}

// ---- the schedules of analyzer/collectives.hpp against what Open MPI sent ---------------------------------
// Open MPI's pml monitoring counts the messages and bytes each rank's library sent to each peer with a
// negative tag (every collective's, and nothing the program sent): the ground truth for the schedules
// mpiadvise derives from the log, summed over the run. It runs untraced (the tracer's own collectives at
// start and end would count too); the traced run of the same program gives the log.
namespace {

struct Traffic {
  uint64_t messages = 0, bytes = 0;
  bool operator==(const Traffic&) const = default;
};
using PairTraffic = std::map<std::pair<int, int>, Traffic>;

// "I <from> <to> <bytes> bytes <n> msgs sent ..." (negative tags) and "E ..." (the others) in
// prof.<rank>.prof. Both count: Open MPI's linear Alltoall(v) sends on persistent requests, which the
// monitoring files as external; the program sends nothing itself.
PairTraffic monitored_traffic(const fs::path& prefix, int ranks) {
  PairTraffic out;
  for (int r = 0; r < ranks; r++) {
    std::istringstream in(read_text(fs::path(prefix.string() + "." + std::to_string(r) + ".prof")));
    std::string line;
    while (std::getline(in, line)) {
      if (line.rfind("I\t", 0) != 0 && line.rfind("E\t", 0) != 0) continue;
      int from = -1, to = -1;
      unsigned long long bytes = 0, messages = 0;
      REQUIRE(std::sscanf(line.c_str() + 2, "%d\t%d\t%llu bytes\t%llu msgs sent", &from, &to, &bytes, &messages) == 4);
      auto& x = out[{from, to}];
      x.messages += messages;
      x.bytes += bytes;
    }
  }
  return out;
}

struct Scheduled {
  PairTraffic traffic;
  std::set<std::string> algorithms, approximations;
  size_t instances = 0;
};

Scheduled scheduled_traffic(const mpiadvise::Trace& t) {
  Scheduled out;
  for (uint32_t i = 0; i < t.collectives.size(); i++) {
    auto logged = mpiadvise::logged_collective(t, i, mpiadvise::MpiLibrary::OpenMPI);
    REQUIRE(logged);
    auto s = mpiadvise::collective_schedule(logged->call);
    REQUIRE(s);
    out.instances++;
    out.algorithms.insert(s->algorithm);
    if (!logged->approximation.empty()) out.approximations.insert(logged->approximation);
    if (!s->approximation.empty()) out.approximations.insert(s->approximation);
    const auto& comm = t.comms[t.collectives[i].comm].members;
    for (size_t pos = 0; pos < s->ranks.size(); pos++)
      for (const auto& st : s->ranks[pos])
        if (st.kind == mpiadvise::CollStep::Send || st.kind == mpiadvise::CollStep::Isend) {
          auto& x = out.traffic[{comm[pos], comm[st.peer]}];
          x.messages++;
          x.bytes += st.bytes;
        }
  }
  return out;
}

std::string traffic_text(const PairTraffic& m) {
  std::string s;
  for (const auto& [pair, x] : m)
    s += std::to_string(pair.first) + "->" + std::to_string(pair.second) + ": " + std::to_string(x.messages) +
         " messages, " + std::to_string(x.bytes) + " bytes\n";
  return s;
}

// Sizes that reach the decision rules' branches below 8 ranks (coll_tuned_decision_fixed.c), in elements
// of 1, 4 and 8 bytes
const std::vector<std::string> kSizes = {"1", "12", "1000", "4096", "65536", "524288"};

}  // namespace

// Open MPI only: MPICH has no counterpart of the pml monitoring component that counts what was sent
TEST_CASE("each collective's schedule is the messages Open MPI sent for it, peer by peer", "[coll][schedule][openmpi-only]") {
  for (int np : {3, 4, 5, 9}) {
    INFO(np << " ranks");
    fs::path base = fresh_dir("coll_sizes_np" + std::to_string(np));
    JobSpec s;
    s.np = np;
    s.program = "coll_sizes";
    s.args = kSizes;
    s.timeout_s = 180;
    if (const char* only = std::getenv("COLL_SIZES_ONLY")) s.env["COLL_SIZES_ONLY"] = only;
    auto run = run_job(s);
    INFO(run.err);
    REQUIRE(run.status == 0);
    JobSpec monitored = s;
    monitored.traced = false;
    monitored.mpirun_options = {"--mca", "pml_monitoring_enable", "2", "--mca", "pml_monitoring_enable_output", "3",
                                "--mca", "pml_monitoring_filename", (base / "prof").string()};
    auto truth = run_job(monitored);
    INFO(truth.err);
    REQUIRE(truth.status == 0);
    auto job = std::make_unique<mpiadvise::JobLog>(run.dir);
    auto trace = mpiadvise::build_trace(*job);
    CHECK(trace.incomplete_collectives == 0);
    auto expected = scheduled_traffic(trace);
    CHECK(expected.instances == (std::getenv("COLL_SIZES_ONLY") ? expected.instances : 44 * kSizes.size()));
    // the log holds all an algorithm needs: Alltoallv's count for each peer, the size of an Allreduce in
    // place on every rank and of a Reduce in place at its root, and that a call was in place
    for (const auto& a : expected.approximations) CHECK(a == "");
    auto measured = monitored_traffic(base / "prof", np);
    std::string algorithms;
    for (const auto& a : expected.algorithms) algorithms += a + "\n";
    INFO("algorithms followed:\n" << algorithms);
    INFO("scheduled:\n" << traffic_text(expected.traffic) << "sent by Open MPI:\n" << traffic_text(measured));
    CHECK(expected.traffic == measured);
  }
}

// ---- the replay of collectives, step by step --------------------------------------------------------------
namespace {

// Time each rank spent inside `call`, measured, over the run
std::vector<double> measured_in(const mpiadvise::Trace& t, uint32_t call) {
  std::vector<double> out(t.ranks.size(), 0);
  for (size_t r = 0; r < t.ranks.size(); r++)
    for (const auto& op : t.ranks[r].ops)
      if (op.call == call) out[r] += static_cast<double>(op.t_exit() - op.t_enter);
  return out;
}

}  // namespace

TEST_CASE("a late rank delays the ranks the library's algorithm makes wait for it, measured and replayed",
          "[coll][replay]") {
  // Open MPI's Reduce of 1 KiB on 4 ranks is a binary tree rooted at 0 (coll_tuned_decision_fixed.c,
  // algorithm 4): 0 receives from 1 and 2, 1 from 3. Rank 3 computes 10 ms longer before each of 10
  // calls: 1 waits for it, and 0 for 1; 2 sends its part eagerly and goes on. (The closed formula this
  // replaces had every non-root rank done once it had sent.) MPICH's ch4:ucx has no POSIX shared-memory
  // module (RunFacts::mpich_shm_collectives), so on one node its Reduce composition runs MPIR's binomial
  // tree on the node communicator: 2 receives from 3, 0 from 1 and 2. (Replayed as the POSIX 4-ary tree,
  // rank 2 waited 107-151 ms measured and 36 us replayed.)
  JobSpec s;
  s.np = 4;
  s.program = "coll_late";
  s.args = {"reduce", "1024", "10", "2", "3", "10"};
  // MPICH 4.0.2 over UCX's TCP hangs with 4 ranks on a host (4 runs of 4 untraced, UCX_TLS=tcp,self):
  // its default, UCX's shared memory, there
  s.transport = mpi().openmpi() ? Transport::Tcp : Transport::Default;
  auto run = run_job(s);
  INFO(run.err);
  REQUIRE(run.status == 0);
  mpiadvise::JobLog job(run.dir);
  auto trace = mpiadvise::build_trace(job);
  auto facts = mpiadvise::run_facts(job);
  mpiadvise::ReplayOptions o;
  o.params = mpiadvise::choose_params(facts, "", fs::path(MPA_SOURCE_DIR) / "share" / "params").params;
  mpiadvise::replay_library(facts, o);
  REQUIRE(facts.library == mpi().library());
  auto r = mpiadvise::replay(trace, o);
  CHECK(r.collectives_by_algorithm == 10);
  if (mpi().openmpi())
    CHECK(r.collective_algorithms.count(
              "Open MPI 4.1 coll/tuned binary tree, one segment (coll_base_reduce.c: ompi_coll_base_reduce_intra_binary)") ==
          1);
  else
    CHECK(!facts.mpich_shm_collectives);
  for (const auto& [name, n] : r.collective_algorithms) UNSCOPED_INFO(name << ": " << n);
  auto measured = measured_in(trace, MPA_CALL_Reduce);
  const double delay = 10 * 10e6;  // 10 calls, 10 ms each
  for (int rank = 0; rank < 4; rank++) {
    double predicted = r.ranks[rank].predicted.collectives;
    INFO("rank " << rank << ": in MPI_Reduce measured " << measured[rank] << " ns, replayed " << predicted << " ns");
    const bool waits = rank == 0 || rank == (mpi().openmpi() ? 1 : 2);
    CHECK((measured[rank] > delay / 2) == waits);
    CHECK((predicted > delay / 2) == waits);
  }
}

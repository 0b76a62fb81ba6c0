// Collectives as the MPI library runs them (analyzer/collectives.hpp) against schedules computed by hand
// from the libraries' source, and the replay of a collective's steps under the model.
#include <catch2/catch.hpp>
#include <fmt/format.h>

#include <fstream>
#include <numeric>
#include <random>
#include <tuple>

#include "call_ids.h"
#include "collectives.hpp"
#include "replay.hpp"
#include "run_facts.hpp"
#include "support.hpp"

using Catch::Detail::Approx;

using namespace mpiadvise;
namespace fs = std::filesystem;

namespace {

// An op of a trace built by hand: its times, site, links [first, first + n) (n a few) and call.
Op op_at(uint64_t enter, uint64_t exit, uint32_t callsite, uint32_t first, uint32_t n, uint32_t call, OpKind kind) {
  Op op;
  REQUIRE(op.set_times(enter, exit));
  op.callsite = callsite;
  REQUIRE(n < kSpilledLinks);  // counted in the op: no trace to hold a larger one
  SpilledLinks none;
  set_links(op, first, n, none);
  op.call = static_cast<uint8_t>(call);
  op.kind = kind;
  return op;
}

CollSchedule schedule(MpiLibrary library, uint32_t call, int size, uint64_t bytes, int root = -1, int hosts = 1) {
  CollectiveCall c;
  c.library = library;
  c.call = call;
  c.size = size;
  c.bytes = bytes;
  c.root = root;
  for (int i = 0; i < size; i++) c.host.push_back(i % hosts);
  auto s = collective_schedule(c);
  REQUIRE(s);
  return *s;
}

CollSchedule ompi(uint32_t call, int size, uint64_t bytes, int root = -1) {
  return schedule(MpiLibrary::OpenMPI, call, size, bytes, root);
}

// every rank on its own host: MPICH's flat (network) algorithms
CollSchedule mpich(uint32_t call, int size, uint64_t bytes, int root = -1) {
  return schedule(MpiLibrary::MPICH, call, size, bytes, root, size);
}

std::vector<uint64_t> sent_sizes(const std::vector<CollStep>& steps) {
  std::vector<uint64_t> out;
  for (const auto& s : steps)
    if (s.kind == CollStep::Send || s.kind == CollStep::Isend) out.push_back(s.bytes);
  return out;
}

}  // namespace

TEST_CASE("Open MPI Allreduce of 1 KiB on 4 ranks: recursive doubling, partner rank^1 then rank^2",
          "[coll][schedule]") {
  // coll_tuned_decision_fixed.c: 4 to 7 ranks, 16 <= bytes < 8192: algorithm 3; coll_base_allreduce.c,
  // ompi_coll_base_allreduce_intra_recursivedoubling: ompi_coll_base_sendrecv (irecv, send, wait) then the
  // reduction, log2(4) = 2 rounds
  auto s = ompi(MPA_CALL_Allreduce, 4, 1024);
  CHECK(s.algorithm.find("recursive doubling") != std::string::npos);
  CHECK(s.approximation.empty());
  CHECK(describe_steps(s.ranks[0]) ==
        "irecv 1 1024; send 1 1024; wait 0+1; reduce 1024 | irecv 2 1024; send 2 1024; wait 1+1; reduce 1024");
  CHECK(describe_steps(s.ranks[1]) ==
        "irecv 0 1024; send 0 1024; wait 0+1; reduce 1024 | irecv 3 1024; send 3 1024; wait 1+1; reduce 1024");
  CHECK(describe_steps(s.ranks[2]) ==
        "irecv 3 1024; send 3 1024; wait 0+1; reduce 1024 | irecv 0 1024; send 0 1024; wait 1+1; reduce 1024");
  CHECK(describe_steps(s.ranks[3]) ==
        "irecv 2 1024; send 2 1024; wait 0+1; reduce 1024 | irecv 1 1024; send 1 1024; wait 1+1; reduce 1024");
}

TEST_CASE("Alltoall in place on 4 ranks: Open MPI's basic_inplace, libnbc's swaps, MPICH's sendrecv_replace",
          "[coll][schedule]") {
  // coll_base_alltoall.c, mca_coll_base_alltoall_intra_basic_inplace (every tuned algorithm returns to it
  // in place): step i with right = rank + i and left = rank - i: irecv right; send left; wait; irecv left;
  // send right; wait. At i = 2 on 4 ranks left = right: irecv, send, wait.
  CollectiveCall c;
  c.call = MPA_CALL_Alltoall;
  c.size = 4;
  c.bytes = 100;
  c.in_place = true;
  auto s = collective_schedule(c);
  REQUIRE(s);
  CHECK(s->algorithm.find("mca_coll_base_alltoall_intra_basic_inplace") != std::string::npos);
  CHECK(describe_steps(s->ranks[0]) ==
        "irecv 1 100; send 3 100; wait 0+1; irecv 3 100; send 1 100; wait 1+1 | irecv 2 100; send 2 100; wait 2+1");
  // nbc_ialltoall.c, a2a_sched_inplace on 4 ranks: i runs 1 .. (4+1)/2 - 1 = 1, then the even case with
  // rank + 2; each copy and each receive ends a round (an empty one for the copies)
  c.call = MPA_CALL_Ialltoall;
  s = collective_schedule(c);
  REQUIRE(s);
  CHECK(describe_steps(s->ranks[0]) ==
        "isend 1 100; irecv 3 100; wait 0+2 | isend 3 100; irecv 1 100; wait 2+2 | isend 2 100; irecv 2 100; wait 4+2");
  // MPICH: alltoall_intra_pairwise_sendrecv_replace.c, pairs (i, j > i) in order; rank 1 meets 0, then 2, 3
  c.library = MpiLibrary::MPICH;
  c.call = MPA_CALL_Alltoall;
  c.host = {0, 1, 2, 3};
  s = collective_schedule(c);
  REQUIRE(s);
  CHECK(s->algorithm.find("pairwise_sendrecv_replace") != std::string::npos);
  CHECK(describe_steps(s->ranks[1]) ==
        "irecv 0 100; isend 0 100; wait 0+2 | irecv 2 100; isend 2 100; wait 2+2 | irecv 3 100; isend 3 100; wait 4+2");
}

TEST_CASE("Alltoallv with a count for each peer: Open MPI's pairwise on 3 ranks sends each its own count",
          "[coll][schedule]") {
  // rank i sends 10 * (1 + (i + 2j) % 3) bytes to j; on 3 ranks ompi_coll_tuned_alltoallv_intra_dec_fixed
  // takes pairwise (coll_base_alltoallv.c): step s sends to rank+s and receives from rank-s
  CollectiveCall c;
  c.call = MPA_CALL_Alltoallv;
  c.size = 3;
  for (int i = 0; i < 3; i++) {
    c.peer_bytes.emplace_back();
    for (int j = 0; j < 3; j++) c.peer_bytes.back().push_back(10 * (1 + (i + 2 * j) % 3));
  }
  auto s = collective_schedule(c);
  REQUIRE(s);
  CHECK(s->approximation.empty());
  // rank 0 sends 10*(1+2%3)=30 to 1, 10*(1+4%3)=20 to 2; receives from 2: 10*(1+(2+0)%3)=30, from 1: 20
  CHECK(describe_steps(s->ranks[0]) == "irecv 2 30; send 1 30; wait 0+1 | irecv 1 20; send 2 20; wait 1+1");
  // without the counts of each peer (a log before format 3) the totals are spread, and the schedule says so
  c.peer_bytes.clear();
  c.rank_bytes = {60, 60, 60};
  s = collective_schedule(c);
  REQUIRE(s);
  CHECK(s->approximation.find("spread evenly") != std::string::npos);
}

TEST_CASE("MPICH Allreduce of 8 bytes on 4 nodes: recursive doubling with MPIC_Sendrecv (both posted, both waited)",
          "[coll][schedule]") {
  // ch4 generic.json: one rank per node is not comm_hierarchy=parent: composition beta, MPIR_Allreduce;
  // mpir/generic.json: avg_msg_size <= 8: MPIR_Allreduce_intra_recursive_doubling
  auto s = mpich(MPA_CALL_Allreduce, 4, 8);
  CHECK(s.algorithm.find("allreduce_intra_recursive_doubling.c") != std::string::npos);
  CHECK(describe_steps(s.ranks[0]) ==
        "irecv 1 8; isend 1 8; wait 0+2; reduce 8 | irecv 2 8; isend 2 8; wait 2+2; reduce 8");
}

TEST_CASE("Open MPI Allreduce above the ring switch on 3 ranks: blocks of count/size, the first one element larger",
          "[coll][schedule]") {
  // 2 or 3 ranks, 4096 <= bytes < 8192: algorithm 4, ompi_coll_base_allreduce_intra_ring. 6008 bytes are
  // 751 doubles: blocks of 251, 250, 250 elements (2008, 2000, 2000 bytes). Rank r sends block r to r+1,
  // then passes on (reduced) what arrives from r-1, then the allgather of the results.
  auto s = ompi(MPA_CALL_Allreduce, 3, 6008);
  CHECK(s.algorithm.find("ring") != std::string::npos);
  CHECK(describe_steps(s.ranks[0]) ==
        "irecv 2 2000; send 1 2008; irecv 2 2000; wait 0+1; reduce 2000; send 1 2000; wait 1+1; reduce 2000"
        " | irecv 2 2008; send 1 2000; wait 2+1 | irecv 2 2000; send 1 2008; wait 3+1");
  CHECK(describe_steps(s.ranks[2]) ==
        "irecv 1 2000; send 0 2000; irecv 1 2008; wait 0+1; reduce 2000; send 0 2000; wait 1+1; reduce 2008"
        " | irecv 1 2000; send 0 2008; wait 2+1 | irecv 1 2000; send 0 2000; wait 3+1");
  // below the switch the same call is recursive doubling, and from 256 KiB Rabenseifner
  CHECK(ompi(MPA_CALL_Allreduce, 3, 4088).algorithm.find("recursive doubling") != std::string::npos);
  CHECK(ompi(MPA_CALL_Allreduce, 3, 262144).algorithm.find("Rabenseifner") != std::string::npos);
}

TEST_CASE("Open MPI Barrier on 3 ranks: recursive doubling with the extra rank folded in by a synchronous send",
          "[coll][schedule]") {
  // ompi_coll_base_barrier_intra_recursivedoubling: adjsize 2; rank 2 exchanges with 0 first, ranks 0 and
  // 1 exchange, then 0 releases 2 with a synchronous 0-byte send
  auto s = ompi(MPA_CALL_Barrier, 3, 0);
  CHECK(describe_steps(s.ranks[0]) == "recv 2 0 | irecv 1 0; send 1 0; wait 0+1 | ssend 2 0");
  CHECK(describe_steps(s.ranks[1]) == "irecv 0 0; send 0 0; wait 0+1");
  CHECK(describe_steps(s.ranks[2]) == "irecv 0 0; send 0 0; wait 0+1");
  // 5 ranks: linear (algorithm 1): everyone to 0 and back
  auto linear = ompi(MPA_CALL_Barrier, 5, 0);
  CHECK(describe_steps(linear.ranks[0]) ==
        "irecv 1 0; irecv 2 0; irecv 3 0; irecv 4 0; wait 0+4 | send 1 0; send 2 0; send 3 0; send 4 0");
  CHECK(describe_steps(linear.ranks[3]) == "send 0 0; recv 0 0");
}

TEST_CASE("a segmented Bcast crossing S: MPICH's scatter + ring allgather sends pieces below S of a buffer above it",
          "[coll][schedule]") {
  // 9 nodes, 200000 bytes (> 12288, 9 not a power of two): MPIR_Bcast_intra_scatter_ring_allgather.
  // Pieces of ceil(200000 / 9) = 22223 bytes; the root's binomial scatter hands 8 its last piece (22216),
  // 4 the four from 4 (88892), 2 two (44446), 1 one (22223); then 8 ring steps of one piece each.
  auto s = mpich(MPA_CALL_Bcast, 9, 200000, 0);
  CHECK(s.algorithm.find("bcast_intra_scatter_ring_allgather.c") != std::string::npos);
  auto root = sent_sizes(s.ranks[0]);
  REQUIRE(root.size() == 4 + 8);
  CHECK(std::vector<uint64_t>(root.begin(), root.begin() + 4) == std::vector<uint64_t>{22216, 88892, 44446, 22223});
  const uint64_t S = 65480;
  for (size_t pos = 0; pos < s.ranks.size(); pos++)
    for (const auto& st : s.ranks[pos])
      if (st.round > 0 && (st.kind == CollStep::Isend || st.kind == CollStep::Irecv)) CHECK(st.bytes <= 22223);
  CHECK(200000 > S);
  CHECK(88892 > S);  // the scatter's large pieces meet their receivers (rendezvous); the ring's do not
  // in the ring every rank receives the eight pieces that are not its own: the whole buffer less its piece
  for (size_t pos = 0; pos < s.ranks.size(); pos++) {
    uint64_t ring = 0;
    for (const auto& st : s.ranks[pos])
      if (st.round > 0 && st.kind == CollStep::Irecv) ring += st.bytes;
    INFO("rank " << pos);
    CHECK(ring == 200000 - (pos == 8 ? 22216 : 22223));
  }
}

TEST_CASE("Open MPI's Ireduce of 100000 bytes on 2 ranks: libnbc's chain in 8 KiB fragments", "[coll][schedule]") {
  // nbc_ireduce.c: 2 ranks, >= 64 KiB, commutative: red_sched_chain with fragsize 16384/2. 12500 doubles in
  // 13 fragments of 961 (7688 bytes), the last 968 (7744 bytes); the root receives and reduces each.
  auto s = ompi(MPA_CALL_Ireduce, 2, 100000, 0);
  CHECK(s.algorithm.find("chain in 8 KiB fragments") != std::string::npos);
  auto leaf = sent_sizes(s.ranks[1]);
  REQUIRE(leaf.size() == 13);
  CHECK(std::count(leaf.begin(), leaf.end(), 7688) == 12);
  CHECK(leaf.back() == 7744);
  CHECK(std::accumulate(leaf.begin(), leaf.end(), uint64_t{0}) == 100000);
  CHECK(describe_steps(s.ranks[1]).rfind("isend 0 7688; wait 0+1 | isend 0 7688; wait 1+1 | ", 0) == 0);
  CHECK(describe_steps(s.ranks[0]).rfind("irecv 1 7688; wait 0+1 | reduce 7688 | irecv 1 7688; wait 1+1", 0) == 0);
  // the blocking Reduce of the same size is one message (coll/tuned passes segment size 0)
  CHECK(sent_sizes(ompi(MPA_CALL_Reduce, 2, 100000, 0).ranks[1]) == std::vector<uint64_t>{100000});
}

TEST_CASE("the decision rules' boundaries, by message size and communicator size, as coll_tuned_decision_fixed.c",
          "[coll][schedule]") {
  auto alg = [](uint32_t call, int size, uint64_t bytes, int root = -1) { return ompi(call, size, bytes, root).algorithm; };
  auto has = [](const std::string& text, const char* what) { return text.find(what) != std::string::npos; };
  // Allreduce on 4 to 7 ranks: recursive doubling below 8192 bytes, Rabenseifner from there
  CHECK(has(alg(MPA_CALL_Allreduce, 4, 8184), "recursive doubling"));
  CHECK(has(alg(MPA_CALL_Allreduce, 4, 8192), "Rabenseifner"));
  CHECK(has(alg(MPA_CALL_Allreduce, 4, 8), "ring"));  // below 16 bytes
  // Bcast on 4 to 7 ranks: binomial below 8192, linear to 1 MiB, then a chain
  CHECK(has(alg(MPA_CALL_Bcast, 4, 8184, 0), "binomial"));
  CHECK(has(alg(MPA_CALL_Bcast, 4, 8192, 0), "basic_linear"));
  CHECK(has(alg(MPA_CALL_Bcast, 4, 1048568, 0), "basic_linear"));
  CHECK(has(alg(MPA_CALL_Bcast, 4, 1048576, 0), "chain"));
  // Barrier by communicator size
  CHECK(has(alg(MPA_CALL_Barrier, 3, 0), "recursive doubling"));
  CHECK(has(alg(MPA_CALL_Barrier, 4, 0), "linear"));
  CHECK(has(alg(MPA_CALL_Barrier, 7, 0), "linear"));
  CHECK(has(alg(MPA_CALL_Barrier, 8, 0), "recursive doubling"));
  CHECK(has(alg(MPA_CALL_Barrier, 64, 0), "bruck"));
  CHECK(has(alg(MPA_CALL_Barrier, 256, 0), "tree"));
  // Allgather: two_procs on 2, recursive doubling below 32 (bruck where the size is not a power of two)
  CHECK(has(alg(MPA_CALL_Allgather, 2, 64), "two_procs"));
  CHECK(has(alg(MPA_CALL_Allgather, 4, 64), "recursive doubling"));
  CHECK(has(alg(MPA_CALL_Allgather, 6, 64), "bruck"));
  // Alltoall on 2 ranks switches six times below 1 MiB
  CHECK(has(alg(MPA_CALL_Alltoall, 2, 1), "pairwise"));
  CHECK(has(alg(MPA_CALL_Alltoall, 2, 2), "two_procs"));
  CHECK(has(alg(MPA_CALL_Alltoall, 2, 32768), "linear_sync"));
  CHECK(has(alg(MPA_CALL_Alltoall, 2, 262144), "two_procs"));
  // Alltoallv by size only: pairwise below 4 ranks, linear to 64
  CHECK(has(alg(MPA_CALL_Alltoallv, 3, 30), "pairwise"));
  CHECK(has(alg(MPA_CALL_Alltoallv, 4, 40), "basic_linear"));
  // Reduce on 2 or 3 ranks: Rabenseifner for the smallest (falls back to linear for 1 element)
  CHECK(has(alg(MPA_CALL_Reduce, 3, 4, 0), "linear, as redscat_gather falls back"));
  CHECK(has(alg(MPA_CALL_Reduce, 3, 8, 0), "binary"));
  // MPICH: 9 nodes, binomial up to 12288 bytes, then scatter + ring; 8 nodes, scatter + recursive doubling
  CHECK(has(mpich(MPA_CALL_Bcast, 9, 12288, 0).algorithm, "MPIR binomial"));
  CHECK(has(mpich(MPA_CALL_Bcast, 9, 12289, 0).algorithm, "scatter_ring"));
  CHECK(has(mpich(MPA_CALL_Bcast, 8, 524288, 0).algorithm, "scatter_recursive_doubling"));
  CHECK(has(mpich(MPA_CALL_Bcast, 8, 524289, 0).algorithm, "scatter_ring"));
}

TEST_CASE("MPICH on one node runs Bcast, Reduce, Allreduce and Barrier in shared memory, and says it approximates",
          "[coll][schedule]") {
  // ch4 generic.json: ranks sharing a node are comm_hierarchy=parent; the POSIX release/gather
  // collectives copy through 8 KiB cells (32768 / 4), modelled as messages down their trees
  auto s = schedule(MpiLibrary::MPICH, MPA_CALL_Bcast, 2, 20000, 0, 1);
  CHECK(s.algorithm.find("POSIX release/gather") != std::string::npos);
  CHECK(!s.approximation.empty());
  CHECK(sent_sizes(s.ranks[0]) == std::vector<uint64_t>{8192, 8192, 3616});
  auto a = schedule(MpiLibrary::MPICH, MPA_CALL_Allreduce, 4, 64, -1, 1);
  CHECK(a.algorithm.find("MPIDI_POSIX_mpi_allreduce_release_gather") != std::string::npos);
  // the same Bcast across nodes is the network algorithm, followed exactly
  auto flat = mpich(MPA_CALL_Bcast, 2, 20000, 0);
  CHECK(flat.approximation.empty());
  CHECK(describe_steps(flat.ranks[1]) == "recv 0 20000");
}

TEST_CASE("every schedule's sends meet their receives, for every call, library, size and root", "[coll][schedule]") {
  std::vector<uint32_t> calls;
  for (uint32_t c = MPA_CALL_Barrier; c <= MPA_CALL_Exscan; c++) calls.push_back(c);
  for (uint32_t c = MPA_CALL_Ibarrier; c <= MPA_CALL_Iexscan; c++) calls.push_back(c);
  size_t checked = 0;
  for (auto library : {MpiLibrary::OpenMPI, MpiLibrary::MPICH})
    for (uint32_t call : calls)
      for (int size : {1, 2, 3, 4, 5, 7, 8, 9, 16, 17, 33})
        for (uint64_t bytes : {0, 1, 12, 1000, 4096, 65536, 300000, 1048576})
          for (int root : {0, size - 1}) {
            for (int hosts : {1, 2, size}) {
              INFO(library_name(library) << " call " << call << " on " << size << " ranks, " << hosts << " hosts, "
                                         << bytes << " bytes, root " << root);
              CollectiveCall c;
              c.library = library;
              c.call = call;
              c.size = size;
              c.bytes = bytes;
              c.root = root;
              for (int i = 0; i < size; i++) c.host.push_back(i % hosts);
              for (bool in_place : {false, true}) {
                INFO((in_place ? "in place" : "not in place"));
                c.in_place = in_place;
                // Alltoallv/w with a count for each peer: symmetric in place (MPI requires it), not otherwise
                const uint32_t base = call >= MPA_CALL_Ibarrier ? call - (MPA_CALL_Ibarrier - MPA_CALL_Barrier) : call;
                c.peer_bytes.clear();
                if (base == MPA_CALL_Alltoallv || base == MPA_CALL_Alltoallw)
                  for (int i = 0; i < size; i++) {
                    c.peer_bytes.emplace_back();
                    for (int j = 0; j < size; j++)
                      c.peer_bytes.back().push_back(bytes * static_cast<uint64_t>((in_place ? i + j : i + 2 * j) % 3));
                  }
                std::optional<CollSchedule> s;
                std::string why_not;
                REQUIRE_NOTHROW(s = collective_schedule(c, &why_not));
                INFO(why_not);  // an unmatched send: "its sends and receives do not pair ..."
                REQUIRE(s);
                CHECK(s->ranks.size() == static_cast<size_t>(size));
                checked++;
              }
            }
          }
  CHECK(checked > 10000);
}

TEST_CASE("any call a log could hold gets a schedule or a reason, never an exception", "[coll][schedule]") {
  // What a damaged log's collective may say, drawn at random (a fixed seed): either library, any
  // collective call, 1 to 40 ranks on any hosts, any root, sizes from 0 to 2^62, each rank's and each
  // peer's counts or none, in place or not. An exception escaping collective_schedule ends the analysis
  // (CI's fuzzer met one: an in-place Alltoallv whose counts did not pair).
  std::mt19937_64 rng(20261129);
  std::vector<uint32_t> calls;
  for (uint32_t c = MPA_CALL_Barrier; c <= MPA_CALL_Exscan; c++) calls.push_back(c);
  for (uint32_t c = MPA_CALL_Ibarrier; c <= MPA_CALL_Iexscan; c++) calls.push_back(c);
  const uint64_t sizes[] = {0, 1, 8, 12, 1000, 4096, 8192, 65536, 65537, 300000, 1048576, uint64_t{1} << 33,
                            uint64_t{1} << 50, uint64_t{1} << 62};
  auto any_size = [&] { return sizes[rng() % std::size(sizes)] + (rng() % 3 == 0 ? rng() % 100 : 0); };
  int with = 0, without = 0;
  for (int it = 0; it < 5000; it++) {
    CollectiveCall c;
    c.library = rng() % 2 ? MpiLibrary::OpenMPI : MpiLibrary::MPICH;
    c.call = calls[rng() % calls.size()];
    c.size = 1 + static_cast<int>(rng() % (rng() % 8 ? 9 : 40));
    c.root = rng() % 5 == 0 ? -1 : static_cast<int>(rng() % static_cast<uint64_t>(c.size));
    c.bytes = any_size();
    if (rng() % 2)
      for (int i = 0; i < c.size; i++) c.rank_bytes.push_back(rng() % 3 ? any_size() : 0);
    if (rng() % 2)
      for (int i = 0; i < c.size; i++) {
        c.peer_bytes.emplace_back();
        for (int j = 0; j < c.size; j++) c.peer_bytes.back().push_back(rng() % 3 ? any_size() : 0);
      }
    const uint64_t hosts = 1 + rng() % static_cast<uint64_t>(c.size);
    if (rng() % 4)
      for (int i = 0; i < c.size; i++) c.host.push_back(static_cast<int>(rng() % hosts));
    c.in_place = rng() % 2;
    c.node_calls_before = rng() % 2 ? UINT32_MAX : static_cast<uint32_t>(rng() % 7);
    c.mpich_shm = rng() % 2;
    INFO(library_name(c.library) << " call " << c.call << " on " << c.size << " ranks, " << c.bytes << " bytes, root "
                                 << c.root << (c.in_place ? ", in place" : ""));
    std::string why;
    std::optional<CollSchedule> s;
    REQUIRE_NOTHROW(s = collective_schedule(c, &why));
    if (s) {
      with++;
    } else {
      without++;
      CHECK(!why.empty());
    }
  }
  CHECK(with > 2500);  // most calls are followed: the draw is not all damage
  CHECK(without > 100);
}

TEST_CASE("counts no run could have, and buffers of many GiB, get no schedule and say why", "[coll][schedule]") {
  std::string why;
  SECTION("MPI_IN_PLACE Alltoallv where rank 0 logged 1 KiB for rank 1, and rank 1 nothing for rank 0") {
    // Open MPI's in-place exchange (coll_base_alltoallv.c, intra_basic_inplace) skips a peer whose count is
    // 0: rank 1 skips rank 0, and rank 0 would wait for ever for rank 1's part of the exchange. A log says
    // so only when damaged.
    for (uint32_t call : {MPA_CALL_Alltoallv, MPA_CALL_Alltoallw, MPA_CALL_Ialltoallv, MPA_CALL_Ialltoallw}) {
      INFO("call " << call);
      CollectiveCall c;
      c.library = MpiLibrary::OpenMPI;
      c.call = call;
      c.size = 2;
      c.in_place = true;
      c.peer_bytes = {{0, 1024}, {0, 0}};
      c.rank_bytes = {1024, 0};
      std::optional<CollSchedule> s;
      REQUIRE_NOTHROW(s = collective_schedule(c, &why));
      CHECK(!s);
      CHECK(why.find("its sends and receives do not pair for these counts") == 0);
      c.peer_bytes = {{0, 1024}, {512, 0}};  // both ways: a schedule
      c.rank_bytes = {1024, 512};
      CHECK(collective_schedule(c));
    }
  }
  SECTION("a Bcast of 1 TiB through MPICH's 8 KiB shared-memory cells: 2^27 cells") {
    auto c = CollectiveCall{};
    c.library = MpiLibrary::MPICH;
    c.call = MPA_CALL_Bcast;
    c.size = 2;
    c.root = 0;
    c.host = {0, 0};
    c.bytes = uint64_t{1} << 40;
    CHECK(!collective_schedule(c, &why));
    CHECK(why == "the algorithm takes more than 4194304 steps");
    c.bytes = uint64_t{1} << 30;  // 1 GiB: 131072 cells, followed
    CHECK(collective_schedule(c));
  }
  SECTION("Open MPI's Ireduce of 2^50 bytes, in libnbc's segments") {
    auto c = CollectiveCall{};
    c.call = MPA_CALL_Ireduce;
    c.size = 2;
    c.root = 0;
    c.bytes = uint64_t{1} << 50;
    CHECK(!collective_schedule(c, &why));
    CHECK(why == "the algorithm takes more than 4194304 steps");
  }
  SECTION("the bound grows with the all-to-all algorithms' 3 x size^2 steps") {
    CHECK(max_schedule_steps(64) == kMaxScheduleSteps);
    CHECK(max_schedule_steps(2048) == size_t{4} * 2048 * 2048);  // an MPICH ring Allgather: 3 x 2048 x 2047
    CHECK(max_schedule_steps(2896) == size_t{4} * 2896 * 2896);
    CHECK(max_schedule_steps(2897) == kMostScheduleSteps);  // 1 GiB
    CHECK(max_schedule_steps(100000) == kMostScheduleSteps);
  }
  SECTION("an all-to-all of 100,000 ranks: no schedule, and no matrix of 80 GB made to find that out") {
    // every all-to-all algorithm exchanges with each peer: 2 x 10^10 steps at least. Before the bound on
    // the whole, these allocated the size x size counts first (std::bad_alloc, or the kernel's OOM killer)
    for (auto library : {MpiLibrary::OpenMPI, MpiLibrary::MPICH})
      for (uint32_t call : {MPA_CALL_Alltoall, MPA_CALL_Alltoallv, MPA_CALL_Ialltoall, MPA_CALL_Ialltoallv})
        for (bool in_place : {false, true}) {
          INFO(call_name(static_cast<int>(call)) << (library == MpiLibrary::MPICH ? " MPICH" : " Open MPI")
                                                 << (in_place ? " in place" : ""));
          auto c = CollectiveCall{};
          c.library = library;
          c.call = call;
          c.size = 100000;
          c.bytes = 65536;
          c.in_place = in_place;
          why.clear();
          REQUIRE_NOTHROW(collective_schedule(c, &why));
          CHECK(!collective_schedule(c, &why));
          CHECK(why == "the algorithm takes more than 33554432 steps");
        }
  }
  SECTION("an MPICH Bcast of 8192 ranks, 48 a node: its rings are the nodes', and it fits") {
    // 256 KiB on a power of two of ranks: ch4's composition beta, MPIR's scatter + ring allgather among
    // the 171 nodes' leaders and within each node of 48 (32 on the last), about 10^6 steps; a ring of
    // all 8192 ranks would take 6.7 x 10^7 steps and more, past the bound
    auto c = CollectiveCall{};
    c.library = MpiLibrary::MPICH;
    c.call = MPA_CALL_Bcast;
    c.size = 8192;
    c.root = 0;
    c.bytes = 262144;
    c.mpich_shm = false;
    for (int i = 0; i < c.size; i++) c.host.push_back(i / 48);
    auto s = collective_schedule(c, &why);
    INFO(why);
    REQUIRE(s);
    size_t steps = 0;
    for (const auto& r : s->ranks) steps += r.size();
    CHECK(steps < max_schedule_steps(8192));
    CHECK(steps > size_t{8192} * 31);  // each node's ring: every rank meets each other of its node
    CHECK(s->algorithm.find("beta") != std::string::npos);
    CHECK(s->algorithm.find("ring") != std::string::npos);
  }
  SECTION("MPICH's in-place Alltoallv: each rank's pairs in the library's order, with their counts") {
    // alltoallv_intra_pairwise_sendrecv_replace.c as written, on 7 ranks whose counts all differ: for
    // i < j in order, ranks i and j exchange (MPIC_Sendrecv_replace: irecv, isend, wait)
    const int n = 7;
    auto c = CollectiveCall{};
    c.library = MpiLibrary::MPICH;
    c.call = MPA_CALL_Alltoallv;
    c.size = n;
    c.in_place = true;
    c.peer_bytes.assign(n, std::vector<uint64_t>(n, 0));
    for (int i = 0; i < n; i++)
      for (int j = 0; j < n; j++) c.peer_bytes[i][j] = 100 * static_cast<uint64_t>(i) + static_cast<uint64_t>(j) + 1;
    auto s = collective_schedule(c, &why);
    INFO(why);
    REQUIRE(s);
    for (int rank = 0; rank < n; rank++) {
      INFO("rank " << rank);
      // (peer, bytes received, bytes sent) in the library's loop order
      std::vector<std::tuple<int, uint64_t, uint64_t>> library, replayed;
      for (int i = 0; i < n; ++i)
        for (int j = i + 1; j < n; ++j) {
          if (rank == i) library.emplace_back(j, c.peer_bytes[j][rank], c.peer_bytes[rank][j]);
          if (rank == j) library.emplace_back(i, c.peer_bytes[i][rank], c.peer_bytes[rank][i]);
        }
      const auto& steps = s->ranks[rank];
      for (size_t k = 0; k + 1 < steps.size(); k++)
        if (steps[k].kind == CollStep::Irecv && steps[k + 1].kind == CollStep::Isend) {
          CHECK(steps[k].peer == steps[k + 1].peer);
          replayed.emplace_back(steps[k].peer, steps[k].bytes, steps[k + 1].bytes);
        }
      CHECK(replayed == library);
    }
  }
  SECTION("MPICH's in-place Alltoall of 1000 ranks: its 3 x 10^6 steps, one pair after another") {
    // alltoall_intra_pairwise_sendrecv_replace.c loops over every pair on every rank: followed as written,
    // 10^9 iterations here, 3.7 x 10^10 at 3344 ranks; each rank meets the others in rank order
    auto c = CollectiveCall{};
    c.library = MpiLibrary::MPICH;
    c.call = MPA_CALL_Alltoall;
    c.size = 1000;
    c.bytes = 8;
    c.in_place = true;
    auto s = collective_schedule(c, &why);
    REQUIRE(s);
    CHECK(s->ranks.size() == 1000u);
    for (int rank : {0, 617, 999}) {
      const auto& steps = s->ranks[rank];
      std::vector<int> peers;
      for (const CollStep& st : steps)
        if (st.kind == CollStep::Isend) peers.push_back(st.peer);
      REQUIRE(peers.size() == 999u);
      int out_of_order = 0;
      for (int k = 0; k < 999; k++) out_of_order += peers[k] != (k < rank ? k : k + 1);
      CHECK(out_of_order == 0);
    }
  }
  SECTION("an Allgather of three blocks of 2^63 bytes") {
    auto c = CollectiveCall{};
    c.call = MPA_CALL_Allgather;
    c.size = 3;
    c.bytes = uint64_t{1} << 63;
    CHECK(!collective_schedule(c, &why));
    CHECK(why == "its buffers hold more than 2^64 bytes in all");
  }
}

TEST_CASE("a v-collective's counts come from each rank's log, and what the log lacks is said", "[coll][trace]") {
  // three ranks; MPI_Gatherv to rank 2 of 4, 8 and 12 bytes: each rank logs its sendcount, the root the sum
  Trace t;
  t.world_size = 3;
  t.ranks.resize(3);
  t.comms.push_back(TraceComm{1, {0, 1, 2}, {}});
  NewCollective c;
  c.call = MPA_CALL_Gatherv;
  c.comm = 0;
  c.root = 2;
  c.bytes = 24;
  c.members = {{0, 0}, {1, 0}, {2, 0}};
  c.sent = {4, 8, 12};
  c.received = {std::nullopt, std::nullopt, 24};
  t.collectives.push_back(c);
  auto logged = logged_collective(t, 0, MpiLibrary::OpenMPI);
  REQUIRE(logged);
  CHECK(logged->call.rank_bytes == std::vector<uint64_t>{4, 8, 12});
  CHECK(logged->call.root == 2);
  CHECK(logged->approximation.empty());
  auto s = collective_schedule(logged->call);
  REQUIRE(s);
  CHECK(describe_steps(s->ranks[0]) == "send 2 4");
  CHECK(describe_steps(s->ranks[2]) == "recv 0 4; recv 1 8");
  CHECK_FALSE(logged->call.in_place);
  // the root in place logs no sendcount; its counts (VCOUNTS, log format 3) still name every block
  c.sent = {4, 8, std::nullopt};
  c.each = {{}, {}, {4, 8, 12}};
  t.collectives.clear();
  t.collectives.push_back(c);  // the instance as changed
  logged = logged_collective(t, 0, MpiLibrary::OpenMPI);
  REQUIRE(logged);
  CHECK(logged->call.in_place);
  CHECK(logged->call.rank_bytes == std::vector<uint64_t>{4, 8, 12});
  CHECK(logged->approximation.empty());
  // an Alltoallv: each rank's counts for every peer make the matrix the schedule follows
  c.call = MPA_CALL_Alltoallv;
  c.root = -1;
  c.sent = {6, 15, 24};
  c.each = {{1, 2, 3}, {4, 5, 6}, {7, 8, 9}};
  t.collectives.clear();
  t.collectives.push_back(c);  // the instance as changed
  logged = logged_collective(t, 0, MpiLibrary::OpenMPI);
  REQUIRE(logged);
  CHECK_FALSE(logged->call.in_place);
  CHECK(logged->call.peer_bytes == std::vector<std::vector<uint64_t>>{{1, 2, 3}, {4, 5, 6}, {7, 8, 9}});
  CHECK(logged->approximation.empty());
  s = collective_schedule(logged->call);
  REQUIRE(s);
  CHECK(s->approximation.empty());
  CHECK(describe_steps(s->ranks[0]) == "irecv 2 7; send 1 2; wait 0+1 | irecv 1 4; send 2 3; wait 1+1");
  c.each.clear();
  // an Allreduce in place everywhere logs no size
  c.call = MPA_CALL_Allreduce;
  c.root = -1;
  c.sent = {std::nullopt, std::nullopt, std::nullopt};
  c.received = c.sent;
  t.collectives.clear();
  t.collectives.push_back(c);  // the instance as changed
  logged = logged_collective(t, 0, MpiLibrary::OpenMPI);
  REQUIRE(logged);
  CHECK(logged->approximation.find("MPI_IN_PLACE") != std::string::npos);
  // a member missing from the logs: no schedule to follow
  c.members.pop_back();
  t.collectives.clear();
  t.collectives.push_back(c);
  CHECK_FALSE(logged_collective(t, 0, MpiLibrary::OpenMPI));
}

// ---- the replay of a collective's steps -----------------------------------------------------------------
namespace {

// Four ranks, one MPI_Bcast of `bytes` from rank 0 each; rank `late` reaches it `late_ns` after the others.
Trace one_bcast(uint64_t bytes, int late, uint64_t late_ns) {
  Trace t;
  t.world_size = 4;
  t.ranks.resize(4);
  t.site_keys.resize(4);
  t.comms.push_back(TraceComm{1, {0, 1, 2, 3}, {}});
  NewCollective c;
  c.call = MPA_CALL_Bcast;
  c.comm = 0;
  c.root = 0;
  c.bytes = bytes;
  for (int r = 0; r < 4; r++) {
    auto& ops = t.ranks[r].ops;
    t.ranks[r].rank = r;
    uint64_t arrive = r == late ? late_ns : 0;
    ops.push_back(op_at(0, 0, 0, 0, 0, MPA_CALL_Init, OpKind::Other));
    ops.push_back(op_at(arrive, arrive + 10, 1, static_cast<uint32_t>(r), 1, MPA_CALL_Bcast, OpKind::Collective));
    ops.push_back(op_at(arrive + 10, arrive + 20, 2, 0, 0, MPA_CALL_Finalize, OpKind::Other));
    t.links.push_back(Link{Link::PostColl, 0});
    c.members.emplace_back(r, 1);
    c.sent.push_back(bytes);
    c.received.push_back(std::nullopt);
  }
  t.collectives.push_back(c);
  return t;
}

// o' 1000 ns, L 100 ns, 1 ns per byte in flight, no per-byte overheads
ReplayOptions simple_model(uint64_t S) {
  ReplayOptions o;
  o.params.library = "Open MPI";
  o.params.o = 1000;
  o.params.L = 100;
  o.params.Gs = o.params.Gl = 1;
  o.params.S = o.params.s = S;
  return o;
}

double collective_ns(const ReplayResult& r, int rank) { return r.ranks.at(rank).predicted.collectives; }

}  // namespace

TEST_CASE("a late member delays only the ranks the algorithm makes wait for it, and S decides which", "[coll][replay]") {
  // 8192 bytes on 4 ranks: Open MPI's linear Bcast (the root isends to 1, 2, 3, then waits for all).
  // Rank 3 comes 100 us late.
  Trace t = one_bcast(8192, 3, 100000);
  SECTION("eager (S = 64 KiB): the root's sends complete without the receivers; only rank 3 is late") {
    auto r = replay(t, simple_model(65536));
    CHECK(r.collectives_by_algorithm == 1);
    CHECK(r.collectives_closed_formula == 0);
    CHECK(r.collective_messages == 3);
    CHECK(r.collective_rendezvous_messages == 0);
    // root: three isends posted at 0, 1000, 2000, each done T1 = o' later (4): done at 3000
    CHECK(collective_ns(r, 0) == Approx(3000));
    // rank 1 receives the send posted at 0: T1 + T2 + T3 = 1000 + (8192 + 100) + 1000 (1)
    CHECK(collective_ns(r, 1) == Approx(10292));
    // rank 2's was posted at 1000
    CHECK(collective_ns(r, 2) == Approx(11292));
    // rank 3 arrives long after its data: T3 only (7)
    CHECK(collective_ns(r, 3) == Approx(1000));
  }
  SECTION("rendezvous (S = 4 KiB): the root waits for rank 3's receive") {
    auto r = replay(t, simple_model(4096));
    CHECK(r.collective_rendezvous_messages == 3);
    // (5) for the send to 3, posted at 2000, its receive at 100000: T4 = max(o'+L, 98000) + o' = 99000,
    // T5 = 2o' + L = 2100, T1' = o' = 1000: done at 2000 + 102100
    CHECK(collective_ns(r, 0) == Approx(104100));
    // the ranks on time are not delayed by rank 3: (9) for rank 1, receive posted at 0, send at 0:
    // max(o'+L - 0, 0) + o' + T5 + T1' + T2' + T3' = 1100 + 1000 + 2100 + 1000 + 8292 + 1000
    CHECK(collective_ns(r, 1) == Approx(14492));
  }
  SECTION("without a library to follow, the closed formula is the fallback, and counted as such") {
    ReplayOptions o = simple_model(65536);
    o.mpi_library = "Intel MPI";
    auto r = replay(t, o);
    CHECK(r.collectives_by_algorithm == 0);
    CHECK(r.collectives_closed_formula == 1);
    CHECK(r.collective_algorithms.count("closed formula (no algorithm to follow)") == 1);
  }
}

TEST_CASE("a replay falls back to the closed formula where the logged counts do not pair, and says why", "[coll][replay]") {
  // Two ranks, one MPI_Alltoallv in place: rank 0's counts send 1 KiB to rank 1, rank 1's send rank 0
  // nothing (a damaged log: the run would have hung). The replay takes the closed formula, counted with
  // the reason, and goes on.
  Trace t;
  t.world_size = 2;
  t.ranks.resize(2);
  t.site_keys.resize(2);
  t.comms.push_back(TraceComm{1, {0, 1}, {}});
  NewCollective c;
  c.call = MPA_CALL_Alltoallv;
  c.comm = 0;
  for (int r = 0; r < 2; r++) {
    auto& ops = t.ranks[r].ops;
    t.ranks[r].rank = r;
    ops.push_back(op_at(0, 0, 0, 0, 0, MPA_CALL_Init, OpKind::Other));
    ops.push_back(op_at(1000, 5000, 1, static_cast<uint32_t>(r), 1, MPA_CALL_Alltoallv, OpKind::Collective));
    ops.push_back(op_at(6000, 6010, 2, 0, 0, MPA_CALL_Finalize, OpKind::Other));
    t.links.push_back(Link{Link::PostColl, 0});
    c.members.emplace_back(r, 1);
    c.sent.push_back(std::nullopt);  // MPI_IN_PLACE
    c.received.push_back(r == 0 ? 1024 : 0);
    c.each.push_back(r == 0 ? std::vector<uint64_t>{0, 1024} : std::vector<uint64_t>{0, 0});
  }
  t.collectives.push_back(c);
  ReplayResult r;
  REQUIRE_NOTHROW(r = replay(t, simple_model(65536)));
  CHECK(r.collectives_by_algorithm == 0);
  CHECK(r.collectives_closed_formula == 1);
  REQUIRE(r.collective_algorithms.size() == 1);
  CHECK(r.collective_algorithms.begin()->first.find("closed formula (its sends and receives do not pair for these counts: ") == 0);
  // both counts meant: the algorithm is followed
  c.each[1] = {512, 0};
  c.received.set(1, 512);
  t.collectives.clear();
  t.collectives.push_back(c);
  r = replay(t, simple_model(65536));
  CHECK(r.collectives_by_algorithm == 1);
}

namespace {

// Four ranks calling MPI_Allreduce once for each of `bytes`, a call every 200 us, rank r reaching call k
// (r * 7 + k * 3) % 11 us late: a loop whose counts vary from call to call.
Trace allreduces(const std::vector<uint64_t>& bytes) {
  Trace t;
  t.world_size = 4;
  t.ranks.resize(4);
  t.site_keys.resize(4);
  t.comms.push_back(TraceComm{1, {0, 1, 2, 3}, {}});
  for (int r = 0; r < 4; r++) {
    t.ranks[r].rank = r;
    t.ranks[r].ops.push_back(op_at(0, 0, 0, 0, 0, MPA_CALL_Init, OpKind::Other));
  }
  for (uint32_t k = 0; k < bytes.size(); k++) {
    NewCollective c;
    c.call = MPA_CALL_Allreduce;
    c.comm = 0;
    c.bytes = bytes[k];
    for (int r = 0; r < 4; r++) {
      const uint64_t at = 200000 * (k + 1) + 1000 * ((r * 7 + k * 3) % 11);
      t.ranks[r].ops.push_back(op_at(at, at + 10, 1, static_cast<uint32_t>(t.links.size()), 1, MPA_CALL_Allreduce,
                                     OpKind::Collective));
      t.links.push_back(Link{Link::PostColl, k});
      c.members.emplace_back(r, k + 1);
      c.sent.push_back(bytes[k]);
      c.received.push_back(bytes[k]);
    }
    t.collectives.push_back(c);
  }
  const uint64_t end = 200000 * (bytes.size() + 2);
  for (int r = 0; r < 4; r++) t.ranks[r].ops.push_back(op_at(end, end + 10, 2, 0, 0, MPA_CALL_Finalize, OpKind::Other));
  return t;
}

// The replay's figures for a comparison: the whole, each rank's, and what its collectives did.
std::string replay_figures(const ReplayResult& r) {
  std::string s = fmt::format("predicted {} measured {} split {} rendezvous {} coll {} {} {} msgs {} {}\n", r.predicted_ns,
                              r.measured_ns, r.split_messages, r.rendezvous_messages, r.collectives_by_algorithm,
                              r.collectives_approximate, r.collectives_closed_formula, r.collective_messages,
                              r.collective_rendezvous_messages);
  for (const auto& rr : r.ranks)
    s += fmt::format("rank {}: {} collectives {} all parts {}\n", rr.rank, rr.predicted_ns, rr.predicted.collectives,
                     rr.predicted.total());
  for (const auto& [name, n] : r.collective_algorithms) s += fmt::format("{} x{}\n", name, n);
  for (const auto& [name, n] : r.collective_approximations) s += fmt::format("approximately: {} x{}\n", name, n);
  return s;
}

}  // namespace

TEST_CASE("the schedules kept for reuse stay within their budget, and the replay is the same at any budget", "[coll][replay]") {
  // 60 calls of 12 counts (256 bytes to 512 KiB: recursive doubling, then Open MPI's ring), each
  // count 5 times, in a cycle: a budget of 1 step empties the caches for every schedule made, a third of
  // what they hold unbounded empties them now and then; the schedules are made again where they were
  // emptied, and the results must not move. With the split what-if (S = 4 KiB), the split schedules too.
  std::vector<uint64_t> bytes;
  for (int k = 0; k < 60; k++) bytes.push_back(uint64_t{256} << (k % 12));
  const Trace t = allreduces(bytes);
  for (bool split : {false, true}) {
    INFO((split ? "split to S" : "as the program calls them"));
    ReplayOptions o = simple_model(4096);
    o.split_everywhere = split;
    const ReplayResult unbounded = replay(t, o);
    CHECK(unbounded.collectives_by_algorithm == 60);
    // split where the algorithm sends more than S at once (30 here: 6 counts of 12, by the decisions)
    CHECK((unbounded.split_messages > 0) == split);
    CHECK(unbounded.schedule_cache_clears == 0);
    CHECK(unbounded.schedule_steps_held > 0);
    o.schedule_cache_steps = unbounded.schedule_steps_held / 3;
    const ReplayResult third = replay(t, o);
    o.schedule_cache_steps = 1;
    const ReplayResult one = replay(t, o);
    CHECK(replay_figures(third) == replay_figures(unbounded));
    CHECK(replay_figures(one) == replay_figures(unbounded));
    CHECK(third.schedule_cache_clears > 0);
    CHECK(third.schedule_steps_held < unbounded.schedule_steps_held);
    CHECK(one.schedule_cache_clears > third.schedule_cache_clears);
    CHECK(one.schedule_steps_held <= third.schedule_steps_held);
  }
  // split to S = 1 byte: the counts whose parts would take more than 2^22 steps are replayed unsplit,
  // kept so with their note, which each call of the kind carries, first or from the cache, at any budget
  // (10 calls here: 2 counts of 12; the others split into a part a byte)
  ReplayOptions o = simple_model(1);
  o.split_everywhere = true;
  const ReplayResult unbounded = replay(t, o);
  uint64_t unsplit = 0;
  for (const auto& [why, n] : unbounded.collective_approximations)
    if (why.find("not split: ") != std::string::npos) unsplit += n;
  CHECK(unsplit > 0);
  CHECK(unsplit % 5 == 0);  // each count 5 times, each with the note
  CHECK(unbounded.split_messages > 0);
  CHECK(unsplit + unbounded.split_messages == 60);
  o.schedule_cache_steps = 1;
  CHECK(replay_figures(replay(t, o)) == replay_figures(unbounded));
}

TEST_CASE("two collectives alike but for MPI_IN_PLACE are replayed by their own algorithms", "[coll][replay]") {
  // Four ranks, two MPI_Alltoall of 1 KiB per peer one after the other, the second in place: Open MPI
  // runs the in-place one by coll_base's basic_inplace (collectives_ompi.cpp, alltoall_tuned). The replay
  // caches a schedule per kind of call; the two must not share one.
  for (bool in_place_first : {false, true}) {
    INFO("in place first: " << in_place_first);
    Trace t;
    t.world_size = 4;
    t.ranks.resize(4);
    t.site_keys.resize(4);
    t.comms.push_back(TraceComm{1, {0, 1, 2, 3}, {}});
    for (int k = 0; k < 2; k++) {
      NewCollective c;
      c.call = MPA_CALL_Alltoall;
      c.comm = 0;
      c.bytes = 1024;
      const bool in_place = (k == 0) == in_place_first;
      for (int r = 0; r < 4; r++) {
        c.members.emplace_back(r, static_cast<uint32_t>(k + 1));
        c.sent.push_back(in_place ? std::nullopt : std::optional<uint64_t>(1024));
        c.received.push_back(1024);
      }
      t.collectives.push_back(c);
    }
    for (int r = 0; r < 4; r++) {
      auto& ops = t.ranks[r].ops;
      t.ranks[r].rank = r;
      ops.push_back(op_at(0, 0, 0, 0, 0, MPA_CALL_Init, OpKind::Other));
      for (uint32_t k = 0; k < 2; k++) {
        ops.push_back(op_at(1000 + 10000 * k, 2000 + 10000 * k, 1, static_cast<uint32_t>(t.links.size()), 1,
                         MPA_CALL_Alltoall, OpKind::Collective));
        t.links.push_back(Link{Link::PostColl, k});
      }
      ops.push_back(op_at(30000, 30010, 2, 0, 0, MPA_CALL_Finalize, OpKind::Other));
    }
    auto r = replay(t, simple_model(65536));
    std::string algorithms;
    for (const auto& [name, n] : r.collective_algorithms) algorithms += name + " x" + std::to_string(n) + "\n";
    INFO(algorithms);
    CHECK(r.collectives_by_algorithm == 2);
    CHECK(r.collective_algorithms.size() == 2);
    for (const auto& [name, n] : r.collective_algorithms) CHECK(n == 1);
    CHECK(algorithms.find("mca_coll_base_alltoall_intra_basic_inplace") != std::string::npos);
  }
}

TEST_CASE("a collective's step costs what Table 4 says its blocking call costs", "[coll][loggps]") {
  LogGPSParams p;
  p.o = 100;
  p.L = 10;
  p.Oss = 1;
  p.Ors = 2;
  p.Gs = 4;
  p.Osl = 8;
  p.Orl = 16;
  p.Gl = 32;
  p.s = 2;
  p.S = 4;
  LogGPS m(p);
  for (uint64_t k : {1, 2, 4, 5, 100})
    for (double tr : {0.0, 50.0, 5000.0})
      for (bool sync : {false, true}) {
        INFO(k << " bytes, receive posted at " << tr << (sync ? ", synchronous" : ""));
        const double ts = 20;
        double send = sync ? m.synchronous_send(k, ts, tr) : m.send(k, ts, tr);
        CHECK(m.send_completion(k, ts, tr, 1, sync) == Approx(ts + send));  // (4), (5)
        if (!sync) CHECK(m.recv_completion(k, ts, tr, 1, false) == Approx(tr + m.recv(k, ts, tr)));  // (7)-(9)
      }
  // a synchronous send of a small message waits for its receive as a rendezvous one does
  CHECK(m.send_waits_for_receive(1, true));
  CHECK_FALSE(m.send_waits_for_receive(4, false));
  CHECK(m.send_waits_for_receive(5, false));
  // a local reduction costs reduce_ns_per_byte, nothing without it
  CHECK(m.reduction(1000) == 0);
  p.reduce_ns_per_byte = 0.5;
  CHECK(LogGPS(p).reduction(1000) == Approx(500));
}

TEST_CASE("a parameter file may say what a reduction costs per byte, and a negative cost is refused", "[coll][loggps]") {
  const std::string model = "[loggps]\nL_ns = 1\no_ns = 1\nOss_ns_per_byte = 0\nOrs_ns_per_byte = 0\n"
                            "Osl_ns_per_byte = 0\nOrl_ns_per_byte = 0\nGs_ns_per_byte = 0\nGl_ns_per_byte = 0\n"
                            "s_bytes = 10\nS_bytes = 10\n";
  auto file = mpa_test::fresh_dir("reduce_params") / "p.toml";
  std::ofstream(file) << model << "[mpi]\nreduce_ns_per_byte = 0.25\n";
  auto p = load_params(file);
  REQUIRE(p.reduce_ns_per_byte);
  CHECK(*p.reduce_ns_per_byte == 0.25);
  std::ofstream(file) << model << "[mpi]\nreduce_ns_per_byte = -1\n";
  CHECK_THROWS_WITH(load_params(file), Catch::Contains("reduce_ns_per_byte = -1 is negative") &&
                                           Catch::Contains(file.string()));
  // the shipped TCP set has it, measured
  auto tcp = load_params(fs::path(MPA_SOURCE_DIR) / "share" / "params" / "openmpi-tcp-loopback.toml");
  CHECK(tcp.reduce_ns_per_byte);
}

TEST_CASE("a non-blocking collective posts its first round at the I- call and runs the next at the Wait",
          "[coll][replay]") {
  // Four ranks: MPI_Ibarrier at 0, 100 us of computation, MPI_Wait. Open MPI's libnbc disseminates in
  // two rounds (nbc_ibarrier.c), each an isend and an irecv of 0 bytes. Round 0 is posted by the I- call
  // (2 o' = 2000 ns) and done long before the Wait; round 1 starts at the Wait (no progress between MPI
  // calls): both posts (2 o'), and the partner's message, posted at its Wait, arrives o' + L after it and
  // is received in o': the Wait ends 2 o' + L = 2100 ns after it began, o' of it overhead.
  Trace t;
  t.world_size = 4;
  t.ranks.resize(4);
  t.site_keys.resize(4);
  t.comms.push_back(TraceComm{1, {0, 1, 2, 3}, {}});
  NewCollective c;
  c.call = MPA_CALL_Ibarrier;
  c.comm = 0;
  for (int r = 0; r < 4; r++) {
    auto& ops = t.ranks[r].ops;
    t.ranks[r].rank = r;
    ops.push_back(op_at(0, 0, 0, 0, 0, MPA_CALL_Init, OpKind::Other));
    ops.push_back(op_at(0, 10, 1, static_cast<uint32_t>(t.links.size()), 1, MPA_CALL_Ibarrier, OpKind::PostCollective));
    t.links.push_back(Link{Link::PostColl, 0});
    ops.push_back(op_at(100010, 100020, 2, static_cast<uint32_t>(t.links.size()), 1, MPA_CALL_Wait, OpKind::Completion));
    t.links.push_back(Link{Link::DoneColl, 0});
    ops.push_back(op_at(100020, 100030, 3, 0, 0, MPA_CALL_Finalize, OpKind::Other));
    c.members.emplace_back(r, 1);
    c.sent.push_back(std::nullopt);
    c.received.push_back(std::nullopt);
  }
  t.collectives.push_back(c);
  auto r = replay(t, simple_model(65536));
  CHECK(r.collectives_by_algorithm == 1);
  CHECK(r.collective_algorithms.begin()->first.find("nbc_ibarrier.c") != std::string::npos);
  for (int rank = 0; rank < 4; rank++) {
    INFO("rank " << rank);
    const auto& b = r.ranks[rank].predicted;
    CHECK(b.computation == Approx(100000));
    // the I- call: 2000; the Wait: 1000 overhead and 1100 waiting for round 1
    CHECK(b.collectives == Approx(2000 + 1100));
    CHECK(b.recv_overhead == Approx(1000));
    CHECK(r.ranks[rank].predicted_ns == Approx(2000 + 100000 + 2100));
  }
}

TEST_CASE("what-ifs reach collectives: a larger S makes their steps eager, --split cuts a call into parts of at most S",
          "[coll][replay]") {
  // 100000 bytes on 4 ranks: Open MPI's linear Bcast, three messages of 100000 bytes
  Trace t = one_bcast(100000, 3, 100000);
  auto small = replay(t, simple_model(16384));
  CHECK(small.collective_rendezvous_messages == 3);
  auto large = replay(t, simple_model(131072));
  CHECK(large.collective_rendezvous_messages == 0);
  CHECK(collective_ns(large, 0) < collective_ns(small, 0));  // the root no longer waits for rank 3
  // split: ceil(100000 / 16384) = 7 calls of 14286 bytes, each a linear Bcast of eager messages
  ReplayOptions split = simple_model(16384);
  split.split_everywhere = true;
  auto parts = replay(t, split);
  CHECK(parts.split_messages == 1);
  CHECK(parts.collective_messages == 7 * 3);
  CHECK(parts.collective_rendezvous_messages == 0);
  REQUIRE(parts.collective_algorithms.size() == 1);
  CHECK(parts.collective_algorithms.begin()->first.rfind("7 parts of 14286 bytes: Open MPI 4.1 coll/tuned basic_linear", 0) == 0);
}

// ---- MPICH's POSIX release/gather collectives, and an MPICH without them ---------------------------------
TEST_CASE("MPICH's shared-memory Reduce: a child may run NUM_CELLS - 1 calls ahead of its parent, and no further",
          "[coll][schedule]") {
  // release_gather.h: per cell, the release step (a child waits for its parent's release flag to reach its
  // own count less NUM_CELLS - 1 = 3), then the gather step (a parent waits for each child's cell); the
  // 4-ary tree over 4 ranks is 0 -> 1, 2, 3
  auto s = schedule(MpiLibrary::MPICH, MPA_CALL_Reduce, 4, 1024, 0, 1);
  CHECK(describe_steps(s.ranks[0]) ==
        "release; recv 1 1024; reduce 1024; recv 2 1024; reduce 1024; recv 3 1024; reduce 1024; gathered");
  CHECK(describe_steps(s.ranks[3]) == "await-release 0 -3; release; gathered; send 0 1024");
  CHECK(s.node_calls == 1);
  // a root elsewhere: the tree is still rooted at 0, which sends it the result (MPIC_Send)
  auto r2 = schedule(MpiLibrary::MPICH, MPA_CALL_Reduce, 4, 1024, 2, 1);
  CHECK(describe_steps(r2.ranks[2]) == "await-release 0 -3; release; gathered; send 0 1024; recv 0 1024");
  // Bcast: the root may refill a cell once each child has gathered the one 3 cells before
  auto b = schedule(MpiLibrary::MPICH, MPA_CALL_Bcast, 2, 8, 0, 1);
  CHECK(describe_steps(b.ranks[0]) == "release; isend 1 8; wait 0+1; await-gathered 1 -3; gathered");
  CHECK(describe_steps(b.ranks[1]) == "recv 0 8; release; gathered");
  // the first 4 calls on a communicator run MPIR's algorithms (MPIR_CVAR_POSIX_NUM_COLLS_THRESHOLD = 5)
  CollectiveCall c;
  c.library = MpiLibrary::MPICH;
  c.call = MPA_CALL_Reduce;
  c.size = 4;
  c.bytes = 1024;
  c.root = 0;
  c.host.assign(4, 0);
  c.node_calls_before = 3;
  auto fourth = collective_schedule(c);
  REQUIRE(fourth);
  CHECK(describe_steps(fourth->ranks[3]) == "send 2 1024");  // binomial: 3 -> 2 -> 0
  CHECK(fourth->algorithm.find("first 4") != std::string::npos);
  c.node_calls_before = 4;
  CHECK(describe_steps(collective_schedule(c)->ranks[3]) == "await-release 0 -3; release; gathered; send 0 1024");
  // Allreduce over 2 nodes (composition alpha) makes two calls: a POSIX reduce and a POSIX bcast
  c.call = MPA_CALL_Allreduce;
  c.root = -1;
  c.host = {0, 0, 1, 1};
  c.node_calls_before = UINT32_MAX;
  CHECK(collective_schedule(c)->node_calls == 2);
  // built without the POSIX module (ch4:ucx): MPIR's algorithms on each node, nothing counted
  c.mpich_shm = false;
  c.call = MPA_CALL_Reduce;
  c.root = 0;
  c.host.assign(4, 0);
  auto ucx = collective_schedule(c);
  REQUIRE(ucx);
  CHECK(ucx->node_calls == 0);
  CHECK(ucx->approximation.empty());
  CHECK(describe_steps(ucx->ranks[3]) == "send 2 1024");
  CHECK(ucx->algorithm.find("no POSIX shared-memory module") != std::string::npos);
}

namespace {

// Two ranks on one host, `calls` MPI_Reduce of 8 bytes to rank 0; rank 0 computes 100 us before each, rank 1
// nothing (10 ns between its calls).
Trace reduce_loop(int calls) {
  Trace t;
  t.world_size = 2;
  t.ranks.resize(2);
  t.site_keys.resize(2);
  t.comms.push_back(TraceComm{1, {0, 1}, {}});
  for (int r = 0; r < 2; r++) {
    t.ranks[r].rank = r;
    t.ranks[r].hostname = "node";
    t.ranks[r].ops.push_back(op_at(0, 0, 0, 0, 0, MPA_CALL_Init, OpKind::Other));
  }
  for (int k = 0; k < calls; k++) {
    NewCollective c;
    c.call = MPA_CALL_Reduce;
    c.comm = 0;
    c.root = 0;
    c.bytes = 8;
    for (int r = 0; r < 2; r++) {
      auto& ops = t.ranks[r].ops;
      uint64_t at = r == 0 ? 100000 * static_cast<uint64_t>(k + 1) : 20 * static_cast<uint64_t>(k + 1);
      ops.push_back(op_at(at, at + 10, 1, static_cast<uint32_t>(t.links.size()), 1, MPA_CALL_Reduce, OpKind::Collective));
      t.links.push_back(Link{Link::PostColl, static_cast<uint32_t>(t.collectives.size())});
      c.members.emplace_back(r, static_cast<uint32_t>(ops.size() - 1));
      c.sent.push_back(8);
      c.received.push_back(std::nullopt);
    }
    t.collectives.push_back(c);
  }
  for (int r = 0; r < 2; r++) {
    uint64_t end = t.ranks[r].ops.back().t_exit();
    t.ranks[r].ops.push_back(op_at(end, end + 10, 2, 0, 0, MPA_CALL_Finalize, OpKind::Other));
  }
  return t;
}

}  // namespace

TEST_CASE("replayed, MPICH's shared-memory Reduce holds an early child back by the reuse of its cells", "[coll][replay]") {
  // 10 calls with the root 100 us late each time. Calls 1-4 run MPIR's binomial tree (rank 1 sends
  // eagerly and goes on); from call 5 on, release/gather: at call c >= 8 rank 1 waits for the root's
  // release flag of call c - 3, raised when the root arrived there, seen L = 100 ns later, then sends
  // (o' = 1000). The root arrives at call c at 100000 + (c - 1) x (99990 + 1000): its computation and
  // its receive. So rank 1 ends call 8 at 503960 + 1100, call 10 at 705940 + 1100 = 707040; it arrived
  // at call 8 at 7090 (7 calls of o' and 10 ns between calls from 20 on), and at calls 9 and 10 10 ns
  // after the previous: 7 x 1000 + (505060 - 7090) + 2 x 100980 = 706930 ns in MPI_Reduce.
  Trace t = reduce_loop(10);
  ReplayOptions o = simple_model(65536);
  o.mpi_library = "MPICH";
  auto shm = replay(t, o);
  CHECK(shm.collectives_by_algorithm == 10);
  CHECK(shm.ranks[1].predicted.collectives == Approx(706930));
  // ch4:ucx (no POSIX module): binomial every time, rank 1 never waits
  o.mpich_shm_collectives = false;
  auto ucx = replay(t, o);
  CHECK(ucx.ranks[1].predicted.collectives < 20000);
  // the root's part does not change: it waits for nobody
  CHECK(shm.ranks[0].predicted.collectives == Approx(ucx.ranks[0].predicted.collectives).margin(1000));
}

TEST_CASE("the log's library string says whether MPICH has its shared-memory collectives", "[coll][facts]") {
  // MPI_Get_library_version of MPICH names the device and the configure line; ch4's configure leaves the
  // POSIX module out over UCX unless --with-ch4-shmmods names it (src/mpid/ch4/subconfigure.m4)
  auto shm = [](const std::string& device, const std::string& configure) {
    nlohmann::json h;
    h["mpi_library"] = "MPICH Version:\t4.0.2\nMPICH Device:\t" + device + "\nMPICH configure:\t" + configure + "\n";
    return run_facts(h, {"node"}).mpich_shm_collectives;
  };
  CHECK_FALSE(shm("ch4:ucx", "--prefix=/usr --with-device=ch4:ucx --with-pm=hydra"));  // Debian's
  CHECK(shm("ch4:ucx", "--with-device=ch4:ucx --with-ch4-shmmods=posix"));
  CHECK(shm("ch4:ofi", "--with-device=ch4:ofi"));
  CHECK_FALSE(shm("ch4:ofi", "--with-device=ch4:ofi --without-ch4-shmmods"));
  CHECK_FALSE(shm("ch4:ofi", "--with-device=ch4:ofi --with-ch4-shmmods=none"));
  CHECK_FALSE(shm("ch3:nemesis", "--with-device=ch3:nemesis"));
  ReplayOptions o;
  nlohmann::json h;
  h["mpi_library"] = "MPICH Version:\t4.0.2\nMPICH Device:\tch4:ucx\nMPICH configure:\t--with-device=ch4:ucx\n";
  replay_library(run_facts(h, {"node"}), o);
  CHECK(o.mpi_library == "MPICH");
  CHECK_FALSE(o.mpich_shm_collectives);
}

TEST_CASE("a collective's member bytes keep none apart from every count, 8 bytes a member", "[coll]") {
  mpiadvise::MemberBytes b = {std::nullopt, 0, 24};
  b.push_back(UINT64_MAX);  // no buffer holds it: kept as the largest count, not taken for none
  b.push_back(std::nullopt);
  REQUIRE(b.size() == 5);
  CHECK(b[0] == std::nullopt);
  CHECK(b[1] == uint64_t{0});
  CHECK(b[2] == uint64_t{24});
  CHECK(b[3] == UINT64_MAX - 1);
  CHECK(b[4] == std::nullopt);
  b.set(0, 512);
  b.set(2, std::nullopt);
  CHECK(b[0] == uint64_t{512});
  CHECK(b[2] == std::nullopt);
  CHECK(b == mpiadvise::MemberBytes{512, 0, std::nullopt, UINT64_MAX - 1, std::nullopt});
  CHECK_FALSE(b == mpiadvise::MemberBytes{512, 0, 0, UINT64_MAX - 1, std::nullopt});
}

// The trace holds its instances packed (CollectiveList): what an instance is given, whether by hand
// (push_back) or by build_trace's two passes (layout, then each member in its place, an instance of 16
// members or more with a place left empty after them), it gives back, members, bytes and counts, and no
// instance reads another's members.
TEST_CASE("the trace's collective instances give back what they were given, packed", "[coll][trace]") {
  CollectiveList list;
  NewCollective a;
  a.call = MPA_CALL_Gatherv;
  a.comm = 2;
  a.root = 1;
  a.bytes = 24;
  a.members = {{0, 5}, {1, 7}, {2, 9}};
  a.sent = {4, 8};  // shorter than members: none for the third
  a.each = {{}, {4, 8, 12}};
  list.push_back(a);
  CollectiveInstance got = list[0];
  CHECK(std::tie(got.call, got.comm, got.root, got.bytes) == std::tie(a.call, a.comm, a.root, a.bytes));
  CHECK(std::vector<std::pair<int, uint32_t>>(got.members.begin(), got.members.end()) == a.members);
  REQUIRE(got.sent.size() == 3);
  CHECK(got.sent[0] == 4);
  CHECK(got.sent[1] == 8);
  CHECK_FALSE(got.sent[2]);
  CHECK_FALSE(got.received[0]);
  REQUIRE(got.each.size() == 3);  // parallel to members once any member has them
  CHECK(got.each[1] == std::vector<uint64_t>{4, 8, 12});
  CHECK(got.each[2].empty());
  CHECK_THROWS_AS(list.at(1), std::out_of_range);

  // build_trace's way: instances of 20, 3 and 16 members, filled member by member in an order of its own
  CollectiveList built;
  const std::vector<uint32_t> sizes{20, 3, 16};
  for (uint32_t c = 0; c < sizes.size(); c++) REQUIRE(built.add(MPA_CALL_Allreduce, c) == c);
  built.layout(sizes);
  for (uint32_t k = 0; k < 20; k++)
    for (uint32_t c = 0; c < sizes.size(); c++)
      if (k < sizes[c]) built.set_member(c, k, static_cast<int>(k), 100 * c + k, c * 1000 + k, MemberBytes::kNoBytes);
  built.note(1, 2, 64);
  built.set_each(2, 15, {1, 2});
  REQUIRE(built.size() == 3);
  for (uint32_t c = 0; c < sizes.size(); c++) {
    INFO("instance " << c);
    const CollectiveInstance i = built[c];
    REQUIRE(i.members.size() == sizes[c]);
    REQUIRE(built.members_of(c) == sizes[c]);
    for (uint32_t k = 0; k < sizes[c]; k++) {
      CHECK(i.members[k] == std::pair<int, uint32_t>(static_cast<int>(k), 100 * c + k));
      CHECK(i.sent[k] == c * 1000 + k);
      CHECK_FALSE(i.received[k]);
    }
    CHECK(i.comm == c);
    CHECK(i.each.size() == (c == 2 ? 16u : 0u));
  }
  CHECK(built[1].root == 2);
  CHECK(built[1].bytes == 64);
  CHECK(built[0].root == -1);
  CHECK(built[2].each[15] == std::vector<uint64_t>{1, 2});
  // a trace's copy holds its own: the same instances
  const CollectiveList copy = built;
  for (uint32_t c = 0; c < sizes.size(); c++) CHECK(copy[c] == built[c]);
  CHECK_FALSE(copy[0] == copy[2]);
}

// A communicator's layout answers a member's place from a table by rank where its ranks are dense, by
// bisection where they are not: both give each member its place in the communicator, a rank listed twice
// (a damaged log) its last place, and -1 to a rank that is not a member.
TEST_CASE("a communicator's layout places each member, its ranks dense or sparse", "[coll][trace]") {
  const std::vector<std::vector<int32_t>> comms = {
      {3, 1, 2, 0},                 // a world, reordered: dense
      {8, 10, 12, 14, 9},           // a block of a split: dense
      {5, 1000000, 77, -1},         // sparse, and a rank the log does not know
      {4, 6, 4, 5},                 // rank 4 twice: its last place
  };
  for (const auto& members : comms) {
    Trace t;
    t.world_size = 1000001;
    t.ranks.resize(1);
    t.comms.push_back(TraceComm{1, members, {}});
    const CommLayout l = comm_layout(t, 0);
    INFO(fmt::format("members {}", fmt::join(members, " ")));
    std::map<int, int> expected;
    for (size_t i = 0; i < members.size(); i++) expected[members[i]] = static_cast<int>(i);
    for (const auto& [rank, pos] : expected) {
      CHECK(l.position(rank) == pos);
      CHECK(l.position_by_bisection(rank) == pos);
    }
    for (const int other : {-2, 2000000, 11, 13, 3000}) {
      if (expected.count(other)) continue;
      CHECK(l.position(other) == -1);
    }
  }
  Trace t;
  t.ranks.resize(1);
  t.comms.push_back(TraceComm{1, {8, 10, 12, 14, 9}, {}});
  CHECK_FALSE(comm_layout(t, 0).dense.empty());
  t.comms.push_back(TraceComm{1, {5, 1000000, 77}, {}});
  CHECK(comm_layout(t, 1).dense.empty());
}

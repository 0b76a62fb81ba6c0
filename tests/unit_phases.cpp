// The phases of a run (analyzer/phases.hpp) on sequences of calls written by hand: the main loop's
// iterations, where they open, and MPI_Pcontrol's phases.
#include <catch2/catch.hpp>

#include <functional>
#include <string>

#include "op_stream.hpp"
#include "phases.hpp"

using namespace mpiadvise;

namespace {

// One rank's calls: each letter a call site (its own call, no MPI call's id; P: MPI_Pcontrol), each call 10 ns after a computation of
// `gap(i)` ns; MPI_Init before and MPI_Finalize after.
void add_rank(Trace& t, const std::string& calls, const std::function<uint64_t(size_t)>& gap = [](size_t) { return 100; }) {
  RankTrace rank;
  rank.rank = static_cast<int>(t.ranks.size());
  uint64_t now = 0;
  auto add = [&](uint32_t call, uint32_t site, uint64_t before) {
    Op op;
    REQUIRE(op.set_times(now + before, now + before + 10));
    op.call = call, op.callsite = site;
    now = op.t_exit();
    rank.ops.push_back(op);
  };
  add(MPA_CALL_Init, 0, 0);
  for (size_t i = 0; i < calls.size(); i++) {
    const char c = calls[i];
    add(c == 'P' ? static_cast<uint32_t>(MPA_CALL_Pcontrol) : 10000u + static_cast<uint32_t>(c), static_cast<uint32_t>(c), gap(i));
  }
  add(MPA_CALL_Finalize, 1, 0);
  t.ranks.push_back(rank);
  t.world_size = static_cast<int>(t.ranks.size());
}

// The trace's marks, which its ranks' op streams give too, one rank's ops read at a time (packed or not).
PhaseMarks marks(const Trace& t) {
  PhaseMarks m = phase_marks(t);
  for (size_t chunk : {size_t{0}, size_t{64}}) {
    const PhaseMarks s = phase_marks(OpStream::encode_all(t, chunk));
    REQUIRE(std::tie(s.source, s.opens, s.at_entry, s.iterations, s.rank0_names, s.note) ==
            std::tie(m.source, m.opens, m.at_entry, m.iterations, m.rank0_names, m.note));
  }
  return m;
}

}  // namespace

TEST_CASE("an inner loop's iterations are not the main loop's", "[phases]") {
  // four A then B, three times: A's calls cut it unevenly, B's evenly, and the loop's body begins
  // before B, at the first A
  Trace t;
  add_rank(t, "AAAAB" "AAAAB" "AAAAB");
  const PhaseMarks m = marks(t);
  REQUIRE(m.source == PhaseMarks::Source::Iterations);
  CHECK(m.iterations == 3);
  CHECK(m.opens[0] == std::vector<uint32_t>{1, 6, 11, 16});  // op 0 is MPI_Init
  CHECK(m.rank0_names == m.opens[0]);
}

TEST_CASE("the main loop is the one that takes the time", "[phases]") {
  // a set-up loop of ten quick calls, then three iterations of a loop that computes 10 us before each
  // call: the second is the main loop though the first repeats more
  Trace t;
  add_rank(t, "XXXXXXXXXX" "YZ" "YZ" "YZ", [](size_t i) { return i < 10 ? 10 : 10000; });
  const PhaseMarks m = marks(t);
  REQUIRE(m.source == PhaseMarks::Source::Iterations);
  CHECK(m.iterations == 3);
  CHECK(m.opens[0] == std::vector<uint32_t>{11, 13, 15, 17});
}

TEST_CASE("ranks open their iterations at their own calls and agree on their count", "[phases]") {
  // a pipeline: rank 0 sends (computing before), rank 1 receives and computes after; rank 1's
  // computation before its first receive is short, after its last as long as in its loop
  Trace t;
  add_rank(t, "SSSS", [](size_t) { return 1000; });
  add_rank(t, "RRRRW", [](size_t i) { return i == 0 ? 5 : 1000; });
  const PhaseMarks m = marks(t);
  REQUIRE(m.source == PhaseMarks::Source::Iterations);
  CHECK(m.iterations == 4);
  CHECK(m.opens[0] == std::vector<uint32_t>{1, 2, 3, 4, 5});
  CHECK(m.opens[1] == std::vector<uint32_t>{1, 2, 3, 4, 5});
  CHECK_FALSE(m.at_entry[0]);  // its computation comes before the send that opens its iteration
  CHECK(m.at_entry[1]);        // after the receive
  // rank 1's iteration 2 starts as it enters its second receive, after the first iteration's computation
  const ReplayWindow w1 = replay_window(t.ranks[1]);
  CHECK(m.opening_ns(t.ranks[1], w1, 1, 2) == t.ranks[1].ops[2].t_enter);
  const ReplayWindow w0 = replay_window(t.ranks[0]);
  CHECK(m.opening_ns(t.ranks[0], w0, 0, 2) == t.ranks[0].ops[1].t_exit());

  // ranks that cannot agree on a count have no iterations
  Trace odd;
  add_rank(odd, "SSSS");
  add_rank(odd, "RRRRR");
  CHECK(marks(odd).source == PhaseMarks::Source::None);
}

TEST_CASE("fewer than three repetitions are no loop", "[phases]") {
  Trace t;
  add_rank(t, "ABAB" "C");
  CHECK(marks(t).source == PhaseMarks::Source::None);
}

TEST_CASE("MPI_Pcontrol's phases come first, and must be called equally", "[phases]") {
  Trace t;
  add_rank(t, "AAAP" "BBBP" "C");
  add_rank(t, "AAAP" "BBBP" "C");
  PhaseMarks m = marks(t);
  REQUIRE(m.source == PhaseMarks::Source::Pcontrol);
  CHECK(m.opens[1] == std::vector<uint32_t>{5, 9});  // the op after each MPI_Pcontrol
  CHECK(m.rank0_names == std::vector<uint32_t>{4, 8});

  Trace unequal;
  add_rank(unequal, "AAAP" "BBBP");
  add_rank(unequal, "AAAP" "BBB");
  m = marks(unequal);
  CHECK(m.source == PhaseMarks::Source::None);
  CHECK(m.note == "MPI_Pcontrol is called 1 times on rank 1 but 2 times on rank 0: no phases");
}

// Toward the report (issue 4): hot spots and the eager-limit advice on a real run under TCP.
#include <catch2/catch.hpp>

#include "advice.hpp"
#include "support.hpp"
#include "symbolizer.hpp"

using namespace mpa_test;
using namespace mpiadvise;

TEST_CASE("the late receivers' send is the top hot spot, and raising the eager limit is advised with its setting",
          "[advice]") {
  JobSpec s;
  s.program = example_path("pingpong_late").string();
  s.args = {"65536", "20", "10"};
  s.transport = Transport::Tcp;
  auto run = run_job(s);
  REQUIRE(run.status == 0);
  JobLog job(run.dir);
  Trace trace = build_trace(job);
  RunFacts facts = run_facts(job);
  ChosenParams chosen = choose_params(facts, "", fs::path(MPA_SOURCE_DIR) / "share" / "params");
  WaitStates waits = measure_waits(trace, LogGPS(chosen.params));

  auto spots = hot_spots(trace, waits, 5);
  REQUIRE(!spots.empty());
  const HotSpot& top = spots[0];
  CHECK(top.rank == 0);
  CHECK(top.call == MPA_CALL_Send);
  CHECK(top.cause == WaitCause::LateReceiverRendezvous);
  CHECK(top.count == 10);
  CHECK(top.peers == std::vector<int>{1});
  CHECK(top.size_log2 == std::map<int, uint64_t>{{16, 10}});  // ten 64 KiB messages
  Symbolizer sym(job.rank(0)->modules());
  auto where = sym.locate_return_address(job.rank(0)->callsites().at(top.callsite).frames[0]);
  CHECK(where.text().find("pingpong_late.c:29") != std::string::npos);  // the MPI_Send the author would name

  ReplayOptions base;
  base.params = chosen.params;
  auto advice = advise_eager_limit(trace, facts, base);
  REQUIRE(advice);
  CHECK(advice->value == 131072);  // the smallest power of two above 65536 bytes and the headers
  if (mpi().openmpi()) {
    CHECK(advice->setting == "btl_tcp_eager_limit");
    CHECK(advice->mca == "--mca btl_tcp_eager_limit 131072");
    CHECK(advice->env == "OMPI_MCA_btl_tcp_eager_limit=131072");
  } else {  // ch4 over UCX: UCX's threshold, not the ch3 cvar MPI_T lists
    CHECK(advice->setting == "UCX_RNDV_THRESH");
    CHECK(advice->mca.empty());
    CHECK(advice->env == "UCX_RNDV_THRESH=131072");
  }
  CHECK(advice->send_wait_after_ns < 0.01 * advice->send_wait_before_ns);
  CHECK(advice->senders_per_rank == 1);
  CHECK(advice->memory_per_rank_bytes == 131072);

  // the report's advice takes the sweep's replay of the setting it advises instead of running it again:
  // the figures are those of a replay of its own
  const ReplayResult baseline = replay(trace, base);
  const auto all = advise({trace, facts, waits, base, baseline, 10});
  auto eager = std::find_if(all.begin(), all.end(), [](const Advice& a) { return a.kind() == AdviceKind::RaiseEagerLimit; });
  REQUIRE(eager != all.end());
  ReplayOptions raised = base;
  raised.params.move_S(advice->S);
  CHECK(eager->predicted_ns == replay(trace, raised).predicted_ns);
  CHECK(eager->baseline_ns == baseline.predicted_ns);
  CHECK(std::get<RaiseEagerLimit>(eager->change).value == advice->value);

  // a library that sends nothing above 32768 bytes without waiting, whatever its limit ([raised] to_bytes
  // below the 64 KiB messages and the S in force): no limit to advise
  ReplayOptions unreachable = base;
  unreachable.params.raised_to = 32768;
  CHECK_FALSE(advise_eager_limit(trace, facts, unreachable).has_value());
  // one that reaches 100000 bytes: the same limit advised, its S the most the library reaches. Every
  // message is 64 KiB, below that S: the limit does all it is advised for, and no caution is given
  ReplayOptions reach = base;
  reach.params.raised_to = 100000;
  auto capped = advise_eager_limit(trace, facts, reach);
  REQUIRE(capped);
  CHECK(capped->value == 131072);
  CHECK(capped->S == 100000);
  CHECK(capped->caution.find("sent no message larger") == std::string::npos);  // (MPICH's hang in MPI_Finalize stays)
  CHECK(capped->predicted_ns == Approx(advice->predicted_ns).epsilon(1e-9));  // the 64 KiB messages eager either way
  // the same run with every other message 120000 bytes, between the S reached and the limit less its
  // headers: those still wait under the limit advised, and the caution says so
  Trace mixed = trace;
  int nth = 0;
  for (auto& m : mixed.messages)
    if (m.matched() && m.bytes == 65536 && nth++ % 2 == 0) m.bytes = 120000;
  REQUIRE(nth >= 2);
  mixed.largest_message = 120000;
  auto partly = advise_eager_limit(mixed, facts, reach);
  REQUIRE(partly);
  CHECK(partly->value == 131072);
  CHECK(partly->S == 100000);
  CHECK(partly->caution.find("sent no message larger than 100000 bytes without waiting") != std::string::npos);
}

TEST_CASE("no eager-limit advice where no send waits for its receiver", "[advice]") {
  JobSpec s;
  s.program = example_path("pingpong_late").string();
  s.args = {"4000", "5", "5"};  // well below S
  s.transport = Transport::Tcp;
  auto run = run_job(s);
  REQUIRE(run.status == 0);
  JobLog job(run.dir);
  Trace trace = build_trace(job);
  RunFacts facts = run_facts(job);
  ReplayOptions base;
  base.params = choose_params(facts, "", fs::path(MPA_SOURCE_DIR) / "share" / "params").params;
  CHECK_FALSE(advise_eager_limit(trace, facts, base).has_value());
}

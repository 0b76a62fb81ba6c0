// What a log records about the run, and the settings that shape it: MPI_T eager limits, the MPI
// environment, clock offsets between hosts, call sites at depth, MPI_Pcontrol, PAPI without counters, the
// round trips timed inside the job.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <set>

#include "run_facts.hpp"
#include "support.hpp"
#include "symbolizer.hpp"

using namespace mpa_test;
using Catch::Detail::Approx;

namespace {

int count_calls(const std::vector<Ev>& evs, const std::string& call) {
  int n = 0;
  for (const auto& e : evs) n += e.call == call ? static_cast<int>(e.e.count) : 0;
  return n;
}

std::string quote(const std::string& s) { return "'" + s + "'"; }

// mpiadvise run of tests/programs/ring on `here` ranks of this host and one more in its own UTS namespace
// under the host name mpiadvise-other-host (Open MPI's -x applies to one application context, so
// mpiadvise run is what sets up both); "" where unshare --uts is not permitted
std::string two_host_job(const fs::path& dir, int here) {
  if (run_command("unshare --uts true").status != 0) return "";
  const std::string prog = program_path("ring").string();
  JobSpec spec;
  spec.np = here;
  return "timeout 120 " + (build_dir() / "bin" / "mpiadvise").string() + " run --dir " + dir.string() + " -- " +
         launcher(spec) + " " + prog + " 5 : -np 1 unshare --uts sh -c " +
         quote("hostname mpiadvise-other-host && exec " + prog + " 5");
}

}  // namespace

TEST_CASE("the header records the eager limits read through MPI_T and the MPI environment", "[facts]") {
  JobSpec s;
  s.program = "ring";
  s.args = {"5"};
  s.transport = Transport::Tcp;
  s.eager_limit = 8192;
  auto r = run_job(s);
  REQUIRE(r.status == 0);
  mpiadvise::JobLog job(r.dir);
  for (const auto& log : job.ranks()) {
    const auto h = log->header();
    // rank 0 alone reads MPI_T (Open MPI's MPI_T_init_thread costs every rank 3.6 MiB at its peak)
    CHECK(h.contains("cvars") == (log->rank() == 0));
    const auto cvars = h.value("cvars", nlohmann::json::object());
    if (mpi().openmpi()) {
      if (log->rank() == 0) CHECK(cvars.at("btl_tcp_eager_limit") == 8192);
      // read before MPI_Init (libtrace/core.c before_init: rank 0's peak memory 1.1 MiB less), when every
      // component's variables are registered: vader's too, in a run that selected self and tcp (from
      // Open MPI 4.1.4 on in the 4.1 series: before it, MPI_Init failed after MPI_T_finalize)
      int major = 0, minor = 0, release = 0;
      const std::string lib = h.at("mpi_library").get<std::string>();
      const auto at = lib.find("Open MPI v");
      if (at != std::string::npos && std::sscanf(lib.c_str() + at, "Open MPI v%d.%d.%d", &major, &minor, &release) == 3 &&
          major == 4 && minor == 1 && release >= 4 && log->rank() == 0)
        CHECK(cvars.contains("btl_vader_eager_limit"));
      CHECK(h.at("env").at("OMPI_MCA_btl_tcp_eager_limit") == "8192");
    } else {  // UCX's threshold is no MPI_T variable: the environment carries it
      if (log->rank() == 0) CHECK(cvars.contains("MPIR_CVAR_CH3_EAGER_MAX_MSG_SIZE"));
      CHECK(h.at("env").at("UCX_RNDV_THRESH") == "8192");
      CHECK(h.at("env").at("UCX_TLS") == "tcp,self");
    }
    CHECK(h.at("mpi_library").get<std::string>().find(mpi().library()) != std::string::npos);
    CHECK(h.at("size") == 2);
    CHECK(h.at("thread_level") == "MPI_THREAD_SINGLE");
    CHECK(!h.at("hostname").get<std::string>().empty());
    // a tick: the time stamp counter divided by 2^tick_shift (a counter of 0.1 to 10 GHz), or a ns
    const auto& clock = h.at("clock");
    const auto shift = clock.at("tick_shift").get<unsigned>();
    const double hz = clock.at("tick_hz").get<double>();
    if (clock.at("source") == "tsc") {
      CHECK(shift <= 8);
      CHECK(hz * (1u << shift) > 1e8);
      CHECK(hz * (1u << shift) < 1e10);
    } else {
      CHECK(shift == 0);
      CHECK(hz == 1e9);
    }
  }
}

TEST_CASE("ranks on rank 0's host share its clock; a rank on another host gets a measured offset", "[facts]") {
  // rank 1 runs in its own UTS namespace under another host name: the tracer must treat it as remote
  fs::path dir = fresh_dir("clock") / "logs";
  const std::string cmd = two_host_job(dir, 1);
  if (cmd.empty()) {
    WARN("unshare --uts is not permitted here: the two-host clock case is not run");
    return;
  }
  auto r = run_command(cmd);
  INFO(r.err);
  REQUIRE(r.status == 0);
  mpiadvise::JobLog job(dir);
  REQUIRE(job.ranks().size() == 2);
  const auto c0 = job.rank(0)->header().at("clock");
  const auto c1 = job.rank(1)->header().at("clock");
  CHECK(job.rank(1)->header().at("hostname") == "mpiadvise-other-host");
  CHECK(c0.at("offset_method") == "same-host");
  CHECK(c0.at("offset_to_rank0_ns") == 0);
  CHECK(c1.at("offset_method") == "ping-pong");
  // both "hosts" read the same clock, so the measured offset is within the round trip (well under 5 ms)
  CHECK(std::llabs(c1.at("offset_to_rank0_ns").get<long long>()) < 5'000'000);
  CHECK(job.rank(1)->trailer().at("clock_offset_method") == "ping-pong");
}

TEST_CASE("MPI_Pcontrol(0) pauses tracing and MPI_Pcontrol(1) resumes it", "[facts]") {
  JobSpec s;
  s.program = "ring";
  s.args = {"90", "0", "pause"};
  auto r = run_job(s);
  REQUIRE(r.status == 0);
  auto evs = events_of(r.dir, 0);
  CHECK(count_calls(evs, "MPI_Sendrecv_replace") == 2 * 60);  // iterations 30..59 were paused
  auto pc = calls_named(evs, "MPI_Pcontrol");
  REQUIRE(pc.size() == 2);
  CHECK(pc[0].e.value == 0);
  CHECK(pc[1].e.value == 1);
}

TEST_CASE("call sites are the return address by default and N frames with MPIADVISE_STACK_DEPTH=N", "[facts]") {
  auto sites_of = [](const fs::path& dir) {
    mpiadvise::JobLog job(dir);
    const auto* log = job.rank(0);
    std::set<uint32_t> ids;
    log->for_each_event([&](const mpiadvise::Event& e) {
      if (e.call_name == "MPI_Sendrecv_replace") ids.insert(e.callsite);
    });
    mpiadvise::Symbolizer sym(log->modules());
    std::set<std::string> callers;
    size_t depth = 0;
    for (auto id : ids) {
      const auto& frames = log->callsites().at(id).frames;
      depth = std::max(depth, frames.size());
      CHECK(sym.locate_return_address(frames[0]).function == "pass_on");
      if (frames.size() > 1) callers.insert(sym.locate_return_address(frames[1]).function);
    }
    return std::make_tuple(ids.size(), depth, callers);
  };
  JobSpec s;
  s.program = "ring";
  s.args = {"10"};
  auto shallow = run_job(s);
  s.env = {{"MPIADVISE_STACK_DEPTH", "3"}};
  s.log_dir.clear();
  auto deep = run_job(s);
  REQUIRE(shallow.status == 0);
  REQUIRE(deep.status == 0);
  auto [n1, d1, c1] = sites_of(shallow.dir);
  CHECK(n1 == 1);  // one call instruction in pass_on
  CHECK(d1 == 1);
  auto [n3, d3, c3] = sites_of(deep.dir);
  CHECK(n3 == 2);  // reached through forward and through backward
  CHECK(d3 == 3);
  CHECK(c3 == std::set<std::string>{"forward", "backward"});
}

// The tracer remembers where on a thread's stack the return addresses of a call's frames were, and takes the
// frames from there while the stack still holds them (libtrace/callsite.c): stacks.c reaches its MPI calls
// through chains that put them at the same place of the stack: three callers of one size in an order no
// two-way memory holds, chains that differ only in their third frame, a frame realigned to 32 bytes and one
// with an array of variable length entered 16 bytes apart, and a recursion of varying depth. Its tags say
// which chain each call came through.
TEST_CASE("at MPIADVISE_STACK_DEPTH=4 every call's site names the chain it came through, calls after calls", "[facts]") {
  JobSpec s;
  s.program = "stacks";
  s.args = {"120"};
  s.env = {{"MPIADVISE_STACK_DEPTH", "4"}};
  auto r = run_job(s);
  INFO(r.err);
  REQUIRE(r.status == 0);
  mpiadvise::JobLog job(r.dir);
  for (int rank : {0, 1}) {
    const auto* log = job.rank(rank);
    REQUIRE(log);
    mpiadvise::Symbolizer sym(log->modules());
    std::map<uint32_t, std::vector<std::string>> names;  // site -> its frames' functions
    auto functions = [&](uint32_t id) -> const std::vector<std::string>& {
      auto it = names.find(id);
      if (it != names.end()) return it->second;
      auto& v = names[id];
      for (auto f : log->callsites().at(id).frames) v.push_back(sym.locate_return_address(f).function);
      return v;
    };
    int calls = 0, wrong = 0;
    std::string first_wrong;
    log->for_each_event([&](const mpiadvise::Event& e) {
      if (e.call_name != "MPI_Sendrecv_replace") return;
      calls++;
      std::vector<std::string> want = {"exchange"};
      if (e.tag >= 1 && e.tag <= 3) {
        want.push_back(e.tag == 1 ? "via_a" : e.tag == 2 ? "via_b" : "via_c");
        want.push_back("main");
      } else if (e.tag == 6 || e.tag == 7) {
        want = {"exchange", "mid", e.tag == 6 ? "outer_a" : "outer_b", "main"};
      } else if (e.tag >= 40) {
        want = {"vla_exchange", e.tag % 10 ? "vla_far" : "vla_near", "vla_alternate", "main"};
      } else if (e.tag >= 20) {
        want = {"aligned_exchange", e.tag % 10 ? "far_caller" : "near_caller", "alternate", e.tag < 30 ? "main" : "shifted"};
      } else {
        for (int k = 0; k <= e.tag - 10 && want.size() < 4; k++) want.push_back("nested");
        if (want.size() < 4) want.push_back("main");
      }
      const auto& got = functions(e.callsite);
      std::vector<std::string> head(got.begin(), got.begin() + std::min(got.size(), want.size()));
      if (head != want && !wrong++) {
        first_wrong = "tag " + std::to_string(e.tag) + ":";
        for (const auto& f : got) first_wrong += " " + f;
      }
    });
    INFO("rank " << rank << ", first wrong call: " << first_wrong);
    CHECK(calls == 5 * 120);
    CHECK(wrong == 0);
    // a site per chain of 4 frames: the three callers, the recursion 0, 1 and at least 2 levels below, the
    // two outer callers, the realigned helper's two callers from two places, the other helper's two
    CHECK(names.size() == 14);
  }
}

TEST_CASE("PAPI events that cannot be counted give one warning and a log without counters", "[facts]") {
  JobSpec s;
  s.np = 3;
  s.program = "ring";
  s.args = {"10"};
  s.env = {{"MPIADVISE_PAPI", "PAPI_TOT_CYC,NO_SUCH_EVENT"}};
  auto r = run_job(s);
  JobSpec plain = s;
  plain.traced = false;
  auto u = run_job(plain);
  CHECK(r.status == 0);
  CHECK(r.out == u.out);
  INFO(r.err);
  size_t warnings = 0;
  for (size_t at = r.err.find("mpiadvise:"); at != std::string::npos; at = r.err.find("mpiadvise:", at + 1)) warnings++;
  mpiadvise::JobLog job(r.dir);
  auto recorded = job.rank(0)->header().at("papi");
  if (recorded.empty()) {
    CHECK(warnings == 1);
    CHECK(r.err.find("NO_SUCH_EVENT") != std::string::npos);
    for (const auto& e : events_of(r.dir, 0)) CHECK_FALSE(e.e.has(MPA_F_PAPI));
  } else {
    // a machine with counters: PAPI_TOT_CYC is recorded over computation intervals
    CHECK(recorded == nlohmann::json::array({"PAPI_TOT_CYC"}));
    CHECK(warnings == 1);
    bool counted = false;
    for (const auto& e : events_of(r.dir, 0)) counted |= e.e.has(MPA_F_PAPI) && e.e.papi.size() == 1;
    CHECK(counted);
  }
}

TEST_CASE("communicators made while tracing is paused are still known when it resumes", "[facts]") {
  JobSpec s;
  s.np = 4;
  s.program = "paused_comm";
  auto r = run_job(s);
  REQUIRE(r.status == 0);
  mpiadvise::JobLog job(r.dir);
  auto send0 = calls_named(events_of(r.dir, 0), "MPI_Send");
  auto send1 = calls_named(events_of(r.dir, 1), "MPI_Send");
  REQUIRE(send0.size() == 1);
  REQUIRE(send1.size() == 1);
  CHECK(send0[0].e.peer == 2);
  CHECK(send1[0].e.peer == 3);
  auto recv2 = calls_named(events_of(r.dir, 2), "MPI_Recv");
  REQUIRE(recv2.size() == 1);
  CHECK(job.rank(0)->comms().at(send0[0].e.comm).gid == job.rank(2)->comms().at(recv2[0].e.comm).gid);
  CHECK(job.rank(0)->comms().at(send0[0].e.comm).created_by == "MPI_Comm_split");
}

TEST_CASE("the effective S over TCP follows the eager limit: the largest send that does not wait", "[facts]") {
  // a receiver 20 ms late: a send of S bytes returns at once, one byte more waits for it. Open MPI: S is
  // btl_tcp_eager_limit less 56 bytes of ob1's headers; MPICH over UCX: UCX_RNDV_THRESH less one.
  for (uint64_t limit : {4096u, 65536u}) {
    const uint64_t S = effective_S_of_limit(limit);
    for (uint64_t bytes : {S, S + 1}) {
      JobSpec s;
      s.program = example_path("pingpong_late").string();
      s.args = {std::to_string(bytes), "20", "2"};
      s.transport = Transport::Tcp;
      s.eager_limit = limit;
      auto run = run_job(s);
      REQUIRE(run.status == 0);
      auto sends = calls_named(events_of(run.dir, 0), "MPI_Send");
      size_t big = 0, waited = 0;
      for (const auto& ev : sends) {
        if (ev.e.bytes != bytes) continue;
        big++;
        waited += ev.e.t_exit_ns - ev.e.t_enter_ns > 10'000'000;  // half the receiver's lateness
      }
      INFO("eager limit " << limit << ", " << bytes << "-byte sends: " << waited << " of " << big << " waited");
      REQUIRE(big == 2);
      CHECK(waited == (bytes == S ? 0u : 2u));
      if (bytes == S) {
        mpiadvise::JobLog job(run.dir);
        CHECK(mpiadvise::run_facts(job).effective_S == S);
      }
    }
  }
}

TEST_CASE("ranks 0 and 1 time round trips at MPI_Init and MPI_Finalize, and the report replays at their speed",
          "[facts][probe]") {
  JobSpec s;
  s.program = "ring";
  s.args = {"200"};
  s.transport = Transport::Tcp;
  auto r = run_job(s);
  REQUIRE(r.status == 0);
  mpiadvise::JobLog job(r.dir);
  const std::vector<uint64_t> sizes = {0, 1024, 8192, 65536, 262144};
  std::vector<std::vector<double>> pooled(sizes.size());
  const nlohmann::json header0 = job.rank(0)->header();
  for (const auto* part : {&header0, &job.rank(0)->trailer()}) {
    REQUIRE(part->contains("message_probe"));
    const auto& p = part->at("message_probe");
    CHECK(p.at("ranks") == nlohmann::json::array({0, 1}));
    CHECK(p.at("bytes").get<std::vector<uint64_t>>() == sizes);
    const auto rounds = p.at("round_trip_ns").get<std::vector<std::vector<double>>>();
    REQUIRE(rounds.size() == sizes.size());
    for (size_t i = 0; i < sizes.size(); i++) {
      CHECK(rounds[i].size() == 16);
      for (double t : rounds[i]) CHECK(t > 0);
      pooled[i].insert(pooled[i].end(), rounds[i].begin(), rounds[i].end());
    }
  }
  CHECK_FALSE(job.rank(1)->header().contains("message_probe"));  // rank 0 records them
  CHECK_FALSE(job.rank(1)->trailer().contains("message_probe"));

  // the report: each size's median over both probes' 32 round trips (the mean of the two middle ones), the
  // set's times scaled by the factor, which --at-set-speed leaves as they are
  const auto scaled = report_json(r.dir), own = report_json(r.dir, "--at-set-speed");
  const auto& speed = scaled.at("params").at("run_speed");
  CHECK(speed.at("applied") == true);
  CHECK(own.at("params").at("run_speed").at("applied") == false);
  const double f = speed.at("factor").get<double>();
  CHECK(own.at("params").at("run_speed").at("factor").get<double>() == Approx(f));
  CHECK(f > 0.1);
  CHECK(f < 10);
  for (size_t i = 0; i < sizes.size(); i++) {
    std::sort(pooled[i].begin(), pooled[i].end());
    CHECK(speed.at("measured_ns")[i].get<double>() == Approx((pooled[i][15] + pooled[i][16]) / 2));
  }
  for (const char* key : {"L_ns", "o_ns", "Gs_ns_per_byte"})
    CHECK(scaled.at("params").at(key).get<double>() == Approx(f * own.at("params").at(key).get<double>()));
  CHECK(scaled.at("params").at("S_bytes") == own.at("params").at("S_bytes"));
  CHECK(scaled.at("params").at("why").get<std::string>().find("the run's own round trips between ranks 0 and 1") !=
        std::string::npos);
  // what the gate compares is made at the set's own speed either way: a machine's speed is no regression
  CHECK(scaled.at("gate") == own.at("gate"));
  // --speed F: another run's factor in place of this run's own (validate's what-ifs beside reruns); the
  // advice's what-ifs are made at it too, and it cannot be given with --at-set-speed, nor out of range
  const auto at_two = report_json(r.dir, "--speed 2");
  for (const char* key : {"L_ns", "o_ns", "Gs_ns_per_byte"})
    CHECK(at_two.at("params").at(key).get<double>() == Approx(2 * own.at("params").at(key).get<double>()));
  CHECK(at_two.at("params").at("run_speed").at("applied") == false);
  CHECK(at_two.at("params").at("why").get<std::string>().find("its times x2.000 (--speed)") != std::string::npos);
  CHECK(at_two.at("model").at("predicted_ns").get<double>() > own.at("model").at("predicted_ns").get<double>());
  for (const auto& [options, says] : {std::pair{"--speed 2 --at-set-speed", "--at-set-speed excludes --speed"},
                                      {"--speed 0", "--speed: 0 is not a factor from 0.01 to 100"},
                                      {"--speed 2x", "--speed: 2x is not a number"}}) {
    const auto bad = run_command(mpiadvise_cmd() + " report " + options + " " + r.dir.string());
    CHECK(bad.status == 2);
    CHECK(bad.err.find(says) != std::string::npos);
  }

  // MPIADVISE_PROBE=0 (mpiadvise run --no-probe): none timed, the set's own speed; a job of one rank has
  // no one to time them with
  s.env["MPIADVISE_PROBE"] = "0";
  r = run_job(s);
  REQUIRE(r.status == 0);
  mpiadvise::JobLog quiet(r.dir);
  CHECK_FALSE(quiet.rank(0)->header().contains("message_probe"));
  CHECK_FALSE(quiet.rank(0)->trailer().contains("message_probe"));
  CHECK_FALSE(report_json(r.dir).at("params").contains("run_speed"));
  JobSpec one;
  one.np = 1;
  one.program = "ring";
  one.args = {"10"};
  r = run_job(one);
  REQUIRE(r.status == 0);
  CHECK_FALSE(mpiadvise::JobLog(r.dir).rank(0)->header().contains("message_probe"));
}

TEST_CASE("in a job on two hosts rank 0 times its round trips with the first rank on the other host", "[facts][probe]") {
  // ranks 0 and 1 on this host, rank 2 in its own UTS namespace under another host name: the round trips
  // must cross hosts, as the messages a parameter set for the job prices do
  fs::path dir = fresh_dir("probe-hosts") / "logs";
  const std::string cmd = two_host_job(dir, 2);
  if (cmd.empty()) {
    WARN("unshare --uts is not permitted here: the two-host probe case is not run");
    return;
  }
  auto r = run_command(cmd);
  INFO(r.err);
  REQUIRE(r.status == 0);
  mpiadvise::JobLog job(dir);
  REQUIRE(job.ranks().size() == 3);
  CHECK(job.rank(2)->header().at("hostname") == "mpiadvise-other-host");
  const nlohmann::json header0 = job.rank(0)->header();
  for (const auto* part : {&header0, &job.rank(0)->trailer()}) {
    REQUIRE(part->contains("message_probe"));
    CHECK(part->at("message_probe").at("ranks") == nlohmann::json::array({0, 2}));
  }
  const auto rep = report_json(dir);
  CHECK(rep.at("params").at("run_speed").at("partner") == 2);
  CHECK(rep.at("params").at("why").get<std::string>().find("between ranks 0 and 2") != std::string::npos);
}

TEST_CASE("every rank follows rank 0's MPIADVISE_PROBE, so that a job whose ranks were told otherwise ends",
          "[facts][probe]") {
  // an MPMD job: rank 0 with one setting, rank 1 with the other; were each rank to follow its own, one
  // of them would wait for round trips the other never makes
  std::string prog = program_path("ring").string();
  JobSpec one;
  one.np = 1;
  for (const auto& [first, second] : {std::pair{"1", "0"}, std::pair{"0", "1"}}) {
    fs::path dir = fresh_dir(std::string("probe-mixed-") + first) / "logs";
    auto r = run_command("timeout 120 env MPIADVISE_PROBE=" + std::string(first) + " " +
                         (build_dir() / "bin" / "mpiadvise").string() + " run --dir " + dir.string() + " -- " +
                         launcher(one) + " " + prog + " 5 : -np 1 env MPIADVISE_PROBE=" + second + " " + prog + " 5");
    INFO(r.err);
    REQUIRE(r.status == 0);
    mpiadvise::JobLog job(dir);
    REQUIRE(job.ranks().size() == 2);
    // each rank was told its own (the header keeps the MPIADVISE settings of the rank's environment)
    CHECK(job.rank(0)->header().at("env").value("MPIADVISE_PROBE", "") == first);
    CHECK(job.rank(1)->header().at("env").value("MPIADVISE_PROBE", "") == second);
    CHECK(job.rank(0)->header().contains("message_probe") == (std::string(first) == "1"));
    CHECK(job.rank(0)->trailer().contains("message_probe") == (std::string(first) == "1"));
  }
}

// What the report tells beyond waits and advice, on programs built to show it: the POP efficiency factors
// of a load imbalance known by construction, and an exchange that works only because the MPI library
// buffers its sends (tests/programs/imbalance.c, buffered.c).
#include <catch2/catch.hpp>

#include <cmath>
#include <fstream>
#include <nlohmann/json.hpp>

#include "support.hpp"

using json = nlohmann::json;
using namespace mpa_test;

namespace {

std::string mpiadvise_cmd() { return (build_dir() / "bin" / "mpiadvise").string(); }

json report_of(const fs::path& dir) {
  auto r = run_command(mpiadvise_cmd() + " report --format json " + dir.string());
  INFO(r.err);
  REQUIRE(r.status == 0);
  return json::parse(r.out);
}

// The line of tests/programs/NAME that holds needle (the test follows edits of the program).
int line_of(const std::string& program, const std::string& needle) {
  std::ifstream in(fs::path(MPA_SOURCE_DIR) / "tests" / "programs" / program);
  std::string line;
  for (int n = 1; std::getline(in, line); n++)
    if (line.find(needle) != std::string::npos) return n;
  FAIL("no line with " << needle << " in " << program);
  return 0;
}

JobResult traced(const std::string& program, const std::vector<std::string>& args, Transport transport) {
  JobSpec s;
  s.program = program;
  s.args = args;
  s.transport = transport;
  auto run = run_job(s);
  INFO(run.err);
  REQUIRE(run.status == 0);
  return run;
}

}  // namespace

TEST_CASE("a load imbalance of 25% by construction is a load balance of 75%", "[diagnosis][efficiency]") {
  // rank 0 computes 10 ms and rank 1 20 ms before each of 10 barriers: the mean computation is 3/4 of
  // the largest. (The communication efficiency is what the run lost beyond that: near 1 under Open MPI;
  // MPICH 4.0.2's shared-memory barrier kept the last rank 7 ms in each call here, 75%.)
  // (the computation is wall-clock time: a rank descheduled by a loaded machine computes longer, so a run
  // is taken again, at most twice, when its balance is off by more than the tolerance)
  JobResult run;
  json e;
  for (int attempt = 0; attempt < 3; attempt++) {
    run = traced("imbalance", {"10", "20"}, Transport::Default);
    e = report_of(run.dir)["efficiency"];
    if (std::fabs(e["load_balance"].get<double>() - 0.75) <= 0.03) break;
  }
  INFO(e.dump(1));
  CHECK(e["load_balance"].get<double>() == Approx(0.75).margin(0.03));
  CHECK(e["slowest_rank"] == 1);
  CHECK(e["max_computation_ns"].get<double>() == Approx(200e6).epsilon(0.15));
  CHECK(e["communication"].get<double>() ==
        Approx(e["max_computation_ns"].get<double>() / e["run_ns"].get<double>()));
  CHECK(e["communication"].get<double>() <= 1.0);
  // the factors multiply as the methodology defines them
  CHECK(e["parallel"].get<double>() == Approx(e["load_balance"].get<double>() * e["communication"].get<double>()));
  CHECK(e["communication"].get<double>() ==
        Approx(e["serialisation"].get<double>() * e["transfer"].get<double>()).epsilon(1e-9));
  // an ideal network takes no longer than the run's own
  CHECK(e["ideal_ns"].get<double>() <= e["model_ns"].get<double>() + 1);
  auto text = run_command(mpiadvise_cmd() + " report " + run.dir.string());
  CHECK(text.out.find("load balance 7") != std::string::npos);
}

TEST_CASE("an exchange that works only because MPI buffers its sends is reported with its line, size and fix",
          "[diagnosis][buffering]") {
  // each rank MPI_Sends 1 KiB to the other, then receives: both sends go eagerly (S is 8 KiB or more
  // over TCP), so the job runs; with every send synchronous both wait for a receive never posted
  auto run = traced("buffered", {"1024", "10"}, Transport::Tcp);
  json j = report_of(run.dir);
  json b = j["buffering"];
  INFO(b.dump(1));
  REQUIRE(b["checked"] == true);
  REQUIRE(b["deadlocks"].size() == 1);
  const json& d = b["deadlocks"][0];
  const int line = line_of("buffered.c", "MPI_Send(out");
  REQUIRE(d["sends"].size() == 2);
  for (const auto& s : d["sends"]) {
    CHECK(s["where"]["line"] == line);
    CHECK(s["call"] == "MPI_Send");
    CHECK(s["bytes"] == 1024);
    CHECK(s["peer"] == 1 - s["rank"].get<int>());
  }
  CHECK(d["hangs_below_bytes"] == 1024);
  CHECK(d["times"] == 10);
  auto text = run_command(mpiadvise_cmd() + " report " + run.dir.string());
  CHECK(text.out.find("buffered.c:" + std::to_string(line)) != std::string::npos);
  CHECK(text.out.find("hangs where the eager limit is below 1024 bytes") != std::string::npos);
  CHECK(text.out.find("MPI_Sendrecv") != std::string::npos);
}

TEST_CASE("the same exchange with MPI_Sendrecv, and a halo ordered by rank, are not reported", "[diagnosis][buffering]") {
  auto safe = traced("buffered", {"1024", "10", "sendrecv"}, Transport::Tcp);
  json b = report_of(safe.dir)["buffering"];
  CHECK(b["checked"] == true);
  CHECK(b["deadlocks"].empty());
  // halo.c: even ranks send first and odd ranks receive first, safe at any eager limit
  auto halo = traced(example_path("halo").string(), {"1024", "20"}, Transport::Tcp);
  b = report_of(halo.dir)["buffering"];
  CHECK(b["checked"] == true);
  CHECK(b["deadlocks"].empty());
}

TEST_CASE("the receive side: receives posted late, the unexpected queue they leave, and pending sends",
          "[diagnosis][receive-side]") {
  // two_sites: rank 0 sends 2 x 10 eager 4 KiB messages at once; rank 1 computes 2 ms before each receive,
  // so nearly every message arrives before its receive and they queue up at rank 1
  auto run = traced("two_sites", {"4096", "4096", "10", "2"}, Transport::Tcp);
  json rs = report_of(run.dir)["receive_side"];
  INFO(rs.dump(1));
  CHECK(rs["receives"] == 20);
  const json& r1 = rs["ranks"][1];
  CHECK(r1["receives"] == 20);
  CHECK(r1["posted_early"].get<uint64_t>() <= 2);
  CHECK(r1["unexpected_max"].get<uint64_t>() >= 10);
  CHECK(r1["unexpected_max_bytes"].get<uint64_t>() >= 10 * 4096);
  CHECK(r1["unexpected_mean"].get<double>() > 0);
  CHECK(rs["ranks"][0]["receives"] == 0);
  CHECK(rs["ranks"][0]["outstanding_sends_max"] == 0);  // blocking sends are never pending
  // the pipeline written with MPI_Isend (examples/pipeline.c isend) keeps a send pending while it computes
  auto isend = traced(example_path("pipeline").string(), {"131072", "10", "2", "isend"}, Transport::Tcp);
  rs = report_of(isend.dir)["receive_side"];
  uint64_t pending = 0;
  for (const auto& r : rs["ranks"]) pending = std::max(pending, r["outstanding_sends_max"].get<uint64_t>());
  CHECK(pending >= 1);
}

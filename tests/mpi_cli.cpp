// The mpiadvise command as a user types it: run and dump, their output, their errors and exit statuses.
#include <catch2/catch.hpp>

#include <algorithm>
#include <regex>
#include <sstream>

#include "support.hpp"

using namespace mpa_test;

namespace {

std::string mpirun() { return launcher(JobSpec{}) + " "; }
// the other MPI of the two, when the build has both
std::string other_mpi() { return mpi().openmpi() ? "mpich" : "openmpi"; }
bool have_other_mpi() { return fs::exists(build_dir() / "lib" / "mpiadvise" / other_mpi() / "libmpiadvise.so"); }

}  // namespace

TEST_CASE("mpiadvise run traces the job, says where the logs are, and exits with the job's status", "[cli]") {
  fs::path cwd = fresh_dir("run");
  auto r = run_command("cd " + cwd.string() + " && " + mpiadvise_cmd() + " run -- " + mpirun() +
                       program_path("ring").string() + " 20 3");
  INFO(r.err);
  CHECK(r.status == 3);
  CHECK(r.out.find("ring: 2 ranks, 20 iterations") != std::string::npos);
  std::smatch m;
  REQUIRE(std::regex_search(r.err, m, std::regex("mpiadvise: 2 rank logs in (\\S+)")));
  fs::path dir = m[1].str();
  CHECK(dir.parent_path() == cwd);
  CHECK(std::regex_match(dir.filename().string(), std::regex(R"(mpiadvise-ring-\d{8}-\d{6}(\.\d+)?)")));
  mpiadvise::JobLog job(dir);
  CHECK(job.ranks().size() == 2);
}

TEST_CASE("mpiadvise run passes its options to every rank", "[cli]") {
  fs::path dir = fresh_dir("runopts") / "logs";
  auto r = run_command(mpiadvise_cmd() + " run --dir " + dir.string() + " --stack-depth 3 --buffer 512K --zstd-level 5 -- " +
                       mpirun() + program_path("ring").string() + " 5");
  INFO(r.err);
  REQUIRE(r.status == 0);
  mpiadvise::JobLog job(dir);
  for (const auto& log : job.ranks()) {
    CHECK(log->header().at("stack_depth") == 3);
    CHECK(log->header().at("buffer_bytes") == 512 * 1024);
    CHECK(log->header().at("env").at("MPIADVISE_ZSTD_LEVEL") == "5");
  }
}

TEST_CASE("mpiadvise run refuses bad options with one line and status 2, without starting the job", "[cli]") {
  fs::path dir = fresh_dir("runbad") / "logs";
  auto cases = {std::string(" run --stack-depth 99 -- "), std::string(" run --buffer lots -- "),
                std::string(" run --zstd-level 0 -- ")};
  for (const auto& opts : cases) {
    auto r = run_command(mpiadvise_cmd() + opts + mpirun() + program_path("ring").string() + " 5");
    INFO(opts << r.err);
    CHECK(r.status == 2);
    CHECK(r.out.empty());
    CHECK(r.err.rfind("mpiadvise: ", 0) == 0);
  }
  auto r = run_command(mpiadvise_cmd() + " run -- no-such-launcher-here -np 2 ./app");
  CHECK(r.status == 2);
  CHECK(r.err == "mpiadvise: no-such-launcher-here: command not found\n");
  r = run_command(mpiadvise_cmd() + " run --lib /nonexistent/libmpiadvise.so -- " + mpirun() + "true");
  CHECK(r.status == 2);
  CHECK(r.err.find("/nonexistent/libmpiadvise.so") != std::string::npos);
}

TEST_CASE("mpiadvise run preloads the library built for the job's MPI", "[cli][mpi-choice]") {
  fs::path dir = fresh_dir("runchoice") / "logs";
  auto r = run_command(mpiadvise_cmd() + " run --dir " + dir.string() + " -- " + mpirun() + program_path("ring").string() + " 5");
  INFO(r.err);
  REQUIRE(r.status == 0);
  mpiadvise::JobLog job(dir);
  REQUIRE(job.ranks().size() == 2);
  CHECK(job.ranks().front()->header().value("mpi_library", "").find(mpi().library()) != std::string::npos);
  // a program of the other MPI under this MPI's launcher: one line naming both, and no job
  if (have_other_mpi()) {
    const fs::path foreign = build_dir() / "tests" / "programs" / other_mpi() / "ring";
    auto bad = run_command(mpiadvise_cmd() + " run --dir " + (dir.string() + "-2") + " -- " + mpirun() + foreign.string() + " 5");
    INFO(bad.err);
    CHECK(bad.status == 2);
    CHECK(bad.out.empty());
    CHECK(std::count(bad.err.begin(), bad.err.end(), '\n') == 1);
    CHECK(bad.err.find("ring links ") != std::string::npos);
    CHECK(bad.err.find("but " + mpi().mpirun + " is " + mpi().library() + "'s launcher") != std::string::npos);
    CHECK(!fs::exists(dir.string() + "-2"));
  }
}

TEST_CASE("a tracer preloaded into another MPI's job says so once and leaves it untouched", "[cli][mpi-choice]") {
  if (!have_other_mpi()) {
    WARN("only one MPI is built: nothing to preload by mistake");
    return;
  }
  JobSpec untraced;
  untraced.program = "ring";
  untraced.args = {"20", "3"};
  untraced.traced = false;
  auto plain = run_job(untraced);
  JobSpec wrong = untraced;
  fs::path dir = fresh_dir("wronglib") / "logs";
  const fs::path lib = build_dir() / "lib" / "mpiadvise" / other_mpi() / "libmpiadvise.so";
  wrong.env = {{"LD_PRELOAD", lib.string()}, {"MPIADVISE_DIR", dir.string()}};
  auto r = run_job(wrong);
  INFO(r.err);
  CHECK(plain.status == 3);  // ring exits with the status it is given
  CHECK(r.status == plain.status);
  CHECK(r.out == plain.out);
  const std::string other = other_mpi() == "openmpi" ? "Open MPI" : "MPICH";
  const std::string line = "mpiadvise: " + lib.string() + " is built for " + other + " but this job runs " + mpi().library();
  CHECK(r.err.find(line) != std::string::npos);
  CHECK(r.err.find(line, r.err.find(line) + 1) == std::string::npos);  // once for the job, not once per rank
  CHECK(!fs::exists(dir));
}

TEST_CASE("mpiadvise dump prints one JSON object per event with the documented fields", "[cli]") {
  JobSpec s;
  s.program = "ring";
  s.args = {"5"};
  auto job = run_job(s);
  REQUIRE(job.status == 0);
  auto r = run_command(mpiadvise_cmd() + " dump --format jsonl " + job.dir.string());
  REQUIRE(r.status == 0);
  std::istringstream in(r.out);
  size_t lines = 0, sendrecvs = 0;
  for (std::string line; std::getline(in, line);) {
    auto j = nlohmann::json::parse(line);
    for (const char* key : {"rank", "call", "t_enter_ns", "t_exit_ns", "peer", "tag", "comm", "bytes", "request",
                            "callsite"})
      CHECK(j.contains(key));
    CHECK(j["t_exit_ns"].get<uint64_t>() >= j["t_enter_ns"].get<uint64_t>());
    if (j["call"] == "MPI_Sendrecv_replace") {
      sendrecvs++;
      CHECK(j["bytes"] == 16 * 8);
      CHECK(j["recv_bytes"] == 16 * 8);
      CHECK(j["peer"] == 1 - j["rank"].get<int>());
    }
    lines++;
  }
  CHECK(sendrecvs == 2 * 2 * 5);
  auto one = run_command(mpiadvise_cmd() + " dump --format jsonl --rank 1 " + job.dir.string());
  CHECK(one.out.find("\"rank\":0") == std::string::npos);
  CHECK(one.out.find("\"rank\":1") != std::string::npos);
  auto text = run_command(mpiadvise_cmd() + " dump --summary " + job.dir.string());
  CHECK(text.status == 0);
  CHECK(text.out.find("ranks      2 of 2 (all reached MPI_Finalize)") != std::string::npos);
  CHECK(text.out.find("tests/programs/ring.c:13 (pass_on)") != std::string::npos);  // call site, symbolised
}

TEST_CASE("mpiadvise dump refuses what it cannot read with one line and status 2", "[cli]") {
  auto r = run_command(mpiadvise_cmd() + " dump /nonexistent/logs");
  CHECK(r.status == 2);
  CHECK(r.err == "mpiadvise: /nonexistent/logs: no such log directory\n");
  fs::path empty = fresh_dir("emptylogs");
  r = run_command(mpiadvise_cmd() + " dump " + empty.string());
  CHECK(r.status == 2);
  CHECK(r.err == "mpiadvise: " + empty.string() + ": no rank-NNNNN.mpa logs in this directory\n");
  r = run_command(mpiadvise_cmd() + " dump --format xml " + empty.string());
  CHECK(r.status == 2);
  CHECK(r.err.find("--format") != std::string::npos);
  JobSpec s;
  s.program = "ring";
  s.args = {"2"};
  auto job = run_job(s);
  r = run_command(mpiadvise_cmd() + " dump --rank 7 " + job.dir.string());
  CHECK(r.status == 2);
  CHECK(r.err == "mpiadvise: " + job.dir.string() + ": no log of rank 7 (the job has 2 ranks)\n");
}

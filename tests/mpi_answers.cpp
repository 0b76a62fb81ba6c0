// The tracer does not change the job: every program here, run traced and untraced, prints the same and
// exits with the same status, and MPI gives it the same answers about its own state (thread level,
// main thread, initialized, finalized), through the C and the Fortran bindings.
#include <catch2/catch.hpp>

#include <algorithm>
#include <regex>
#include <sstream>

#include "support.hpp"

using namespace mpa_test;

namespace {

// Standard output with the lines of all ranks in a fixed order (ranks print concurrently), and run
// times ("0.047 s") masked: everything else the programs print is deterministic.
std::string comparable(const std::string& out) {
  static const std::regex seconds(R"(\b[0-9]+\.[0-9]+ s\b)");
  std::vector<std::string> lines;
  std::istringstream in(out);
  for (std::string l; std::getline(in, l);) lines.push_back(std::regex_replace(l, seconds, "<time> s"));
  std::sort(lines.begin(), lines.end());
  std::string joined;
  for (const auto& l : lines) joined += l + "\n";
  return joined;
}

bool has_tracer_line(const std::string& err) {
  std::istringstream in(err);
  for (std::string l; std::getline(in, l);)
    if (l.rfind("mpiadvise:", 0) == 0) return true;
  return false;
}

void check_same_as_untraced(JobSpec s) {
  s.traced = false;
  auto plain = run_job(s);
  s.traced = true;
  auto traced = run_job(s);
  INFO(s.program << " with " << s.np << " ranks; traced stderr:\n" << traced.err);
  REQUIRE(!plain.out.empty());
  CHECK(traced.status == plain.status);
  CHECK(comparable(traced.out) == comparable(plain.out));
  CHECK(!has_tracer_line(traced.err));  // no warning on a clean run
}

}  // namespace

TEST_CASE("MPI answers a traced program what it answers the untraced one", "[answers]") {
  for (const char* program : {"answers", "f_answers"}) {
    for (const char* start : {"init", "single", "funneled", "serialized", "multiple"}) {
      DYNAMIC_SECTION(program << " " << start) {
        JobSpec s;
        s.np = 2;
        s.program = program;
        s.args = {start};
        check_same_as_untraced(s);
      }
    }
  }
}

TEST_CASE("the thread level a traced program is given is the one its log records", "[answers]") {
  JobSpec s;
  s.np = 2;
  s.program = "answers";
  s.args = {"multiple"};
  auto run = run_job(s);
  REQUIRE(run.status == 0);
  CHECK(run.out.find("rank 0 after init: provided 3 query_thread 3 ") != std::string::npos);
  CHECK(run.out.find("rank 0 second thread: query_thread 3 is_thread_main 0") != std::string::npos);
  mpiadvise::JobLog job(run.dir);
  for (const auto& r : job.ranks()) CHECK(r->header().value("thread_level", "") == "MPI_THREAD_MULTIPLE");
}

TEST_CASE("every example and test program prints and exits as it does untraced", "[answers]") {
  struct Case {
    int np;
    std::string program;
    std::vector<std::string> args;
  };
  const fs::path examples = example_path("").parent_path();
  const std::vector<Case> cases = {
      {3, (examples / "gauss").string(), {"256"}},
      {3, (examples / "halo").string(), {"1024", "5"}},
      {2, (examples / "pingpong_late").string(), {"4096", "1", "3"}},
      {3, (examples / "pipeline").string(), {"1024", "8", "1"}},
      {3, (examples / "pipeline").string(), {"1024", "8", "1", "isend"}},
      {3, (examples / "pipeline").string(), {"4096", "4", "1", "split:1024"}},
      {2, "ring", {"50", "3"}},
      {2, "ring", {"60", "0", "pause"}},
      {4, "p2p_all", {}},
      {4, "coll_all", {}},
      {2, "threads", {}},
      {2, "no_p2p", {"collectives"}},
      {2, "two_sites", {"4096", "8192", "3", "1"}},
      {4, "paused_comm", {}},
      {3, "matched_probe", {"3"}},
      {2, "cancel", {"3"}},
      {2, "forker", {"exit", "2"}},
      {2, "refused", {}},  // calls MPI refuses under MPI_ERRORS_RETURN, a null pointer among them
      {4, "f_mpif", {}},
      {4, "f_usempi", {}},
      {4, "f_f08", {}},
  };
  for (const auto& c : cases) {
    std::string name = fs::path(c.program).filename().string();
    for (const auto& a : c.args) name += " " + a;
    DYNAMIC_SECTION(name) {
      JobSpec s;
      s.np = c.np;
      s.program = c.program;
      s.args = c.args;
      check_same_as_untraced(s);
    }
  }
}

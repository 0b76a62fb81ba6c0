// The replay spread over MPI processes (analyzer/replay_peers.hpp): `mpirun -np K mpiadvise replay|whatif|
// report ...` gives the serial result, whatever K, on real traced runs of both MPIs (point-to-point, every
// collective as the library's algorithm runs it, MPICH's eager buffer where the receiver's process computes
// each eager send's start, ranks parked for a partner whose log is missing) and on a synthetic run.
#include <catch2/catch.hpp>

#include <fmt/format.h>

#include <regex>

#include "support.hpp"

using namespace mpa_test;

namespace {

// The analysis command's output run alone and spread over `processes` processes of mpi()'s launcher.
// env: variables for the spread processes.
JobResult analysis(const std::string& args, int processes = 1, const std::map<std::string, std::string>& env = {}) {
  std::string cmd = mpiadvise_cmd() + " " + args;
  if (processes > 1) {
    JobSpec spec;
    spec.np = processes;
    spec.env = env;
    spec.traced = false;
    cmd = "timeout 300 " + launcher(spec) + " " + cmd;
  }
  return run_command(cmd);
}

// A replay's JSON without the one figure that says how it ran.
nlohmann::json without_processes(const std::string& out, int* processes) {
  auto j = nlohmann::json::parse(out);
  auto strip = [&](nlohmann::json& x) {
    *processes = x.value("processes", 0);
    x.erase("processes");
  };
  if (j.is_array())
    for (auto& x : j) strip(x);
  else
    strip(j);
  return j;
}

// The serial replay's JSON, and the spread one's at 2 and 3 processes: the same, and spread.
void same_when_spread(const fs::path& dir, const std::string& command) {
  const std::string args = command + " --json " + dir.string();
  const auto alone = analysis(args);
  REQUIRE(alone.status == 0);
  int processes = 0;
  const auto serial = without_processes(alone.out, &processes);
  CHECK(processes == 1);
  for (int k : {2, 3}) {
    INFO(command << " spread over " << k << " processes");
    const auto spread = analysis(args, k);
    INFO(spread.err);
    REQUIRE(spread.status == 0);
    CHECK(without_processes(spread.out, &processes) == serial);
    CHECK(processes == k);
  }
}

fs::path traced(const std::string& program, int np, const std::vector<std::string>& args = {}) {
  JobSpec s;
  s.program = program;
  s.np = np;
  s.args = args;
  auto run = run_job(s);
  INFO(run.err);
  REQUIRE(run.status == 0);
  return run.dir;
}

}  // namespace

TEST_CASE("spread over processes, the replay of a run's collectives is the serial one", "[spread]") {
  const fs::path dir = traced("coll_all", 4);
  same_when_spread(dir, "replay");
  // the collectives replayed by their algorithms, and the figures counted once over the processes
  const auto j = nlohmann::json::parse(analysis("replay --json " + dir.string(), 2).out);
  CHECK(j.at("collectives").at("by_algorithm").get<int>() > 20);
  CHECK(j.at("processes") == 2);
}

TEST_CASE("spread over processes, point-to-point replays and what-ifs are the serial ones", "[spread]") {
  const fs::path halo = traced(example_path("halo").string(), 4, {"16384", "10"});
  same_when_spread(halo, "replay");
  same_when_spread(halo, "whatif --set S=1M");
  same_when_spread(halo, "whatif --split all --set S=4K");
  same_when_spread(halo, "whatif --sweep S=1K..64K");
  // the run from its middle on (--from): messages whose partner is before the part, replayed as serially
  const auto whole = analysis("replay --json " + halo.string());
  REQUIRE(whole.status == 0);
  same_when_spread(halo, fmt::format("replay --from {:.9f}", nlohmann::json::parse(whole.out)["measured_ns"].get<double>() / 2e9));
  same_when_spread(traced("p2p_all", 4), "replay");
  // eager messages (4 KiB) across processes: under MPICH the receiver's process computes their starts
  same_when_spread(traced(example_path("halo").string(), 4, {"512", "10"}), "replay");
  // the report: every replay it makes (advice, what-ifs, gate figures) spread alike
  const auto alone = analysis("report --format json " + halo.string());
  REQUIRE(alone.status == 0);
  const auto spread = analysis("report --format json " + halo.string(), 2);
  INFO(spread.err);
  REQUIRE(spread.status == 0);
  CHECK(nlohmann::json::parse(spread.out) == nlohmann::json::parse(alone.out));
}

TEST_CASE("spread over processes, ranks parked for a rank whose log is missing are released as serially", "[spread]") {
  const fs::path dir = traced("ring", 4);
  REQUIRE(fs::remove(dir / "rank-00001.mpa"));
  // the ranks waiting on rank 1 go on with their measured times, one release after another
  const auto j = nlohmann::json::parse(analysis("replay --json " + dir.string()).out);
  REQUIRE(j.at("unmatched").at("ops_replayed_as_measured").get<int>() > 0);
  same_when_spread(dir, "replay");
  same_when_spread(dir, "whatif --set S=0");
}

TEST_CASE("spread over processes, a synthetic run of 24 ranks replays as serially", "[spread]") {
  for (const std::string pattern : {"halo", "alltoall", "allreduce", "pipeline", "imbalance"}) {
    const fs::path dir = fresh_dir("spread-" + pattern);
    const auto made = run_command(build_dir().string() + "/bin/mpiadvise-synth --ranks 24 --events 400 --pattern " +
                                  pattern + " --bytes 20000 -o " + dir.string());
    REQUIRE(made.status == 0);
    INFO(pattern);
    same_when_spread(dir, "replay");
    if (pattern != "halo") continue;
    // results too large for one MPI count (2^31 bytes) go by broadcasts in pieces: forced with pieces
    // of 1000 bytes, against the serial JSON
    const std::string args = "replay --json " + dir.string();
    int processes = 0;
    const auto serial = without_processes(analysis(args).out, &processes);
    const auto pieces = analysis(args, 3, {{"MPIADVISE_SPREAD_PIECE", "1000"}});
    INFO(pieces.err);
    REQUIRE(pieces.status == 0);
    CHECK(without_processes(pieces.out, &processes) == serial);
    CHECK(processes == 3);
    const auto bad = analysis(args, 2, {{"MPIADVISE_SPREAD_PIECE", "0"}});
    CHECK(bad.status == 2);
    CHECK(bad.err.find("mpiadvise: MPIADVISE_SPREAD_PIECE=0: not a number of bytes") != std::string::npos);
  }
}

TEST_CASE("under a launcher, a command that does not spread, or an mpiadvise a rank's script starts, runs alone",
          "[spread]") {
  const fs::path dir = traced("ring", 2);
  const auto dump = analysis("dump --summary " + dir.string(), 2);
  INFO(dump.err);
  CHECK(dump.status == 0);
  CHECK(dump.out.find("MPI_Sendrecv") != std::string::npos);
  // a rank's shell started it: it inherits the launcher's variables, not its place, and runs alone
  JobSpec spec;
  spec.np = 2;
  spec.traced = false;
  const auto nested = run_command("timeout 300 " + launcher(spec) + " sh -c '" + mpiadvise_cmd() + " replay --json " +
                                  dir.string() + "'");
  INFO(nested.err);
  REQUIRE(nested.status == 0);
  size_t alone = 0;
  for (size_t at = 0; (at = nested.out.find("\"processes\": 1", at)) != std::string::npos; at++) alone++;
  CHECK(alone == 2);
}

TEST_CASE("spread over processes, an input error ends every process with one message and no hang", "[spread]") {
  const fs::path empty = fresh_dir("spread-empty");
  const auto r = analysis("replay --json " + empty.string(), 2);
  CHECK(r.status != 0);
  CHECK(r.status != 124);  // not ended by the timeout
  CHECK(r.err.find("mpiadvise: " + empty.string()) != std::string::npos);
  // an option the spread analysis does not take: one line, before any log is read
  const auto low = analysis("report --low-memory " + empty.string(), 2);
  CHECK(low.status != 0);
  CHECK(low.status != 124);
  CHECK(low.err.find("mpiadvise: --low-memory: not with the analysis spread over processes") != std::string::npos);
}

TEST_CASE("spread over processes, processes that read different runs' logs say so instead of replaying", "[spread]") {
  const fs::path ring = traced("ring", 2), coll = traced("coll_all", 4);
  JobSpec one;
  one.np = 1;
  one.traced = false;
  // one launcher, two programs (MPMD): process 0 reads the ring's logs, process 1 coll_all's
  const auto r = run_command("timeout 300 " + launcher(one) + " " + mpiadvise_cmd() + " replay --json " + ring.string() +
                             " : -np 1 " + mpiadvise_cmd() + " replay --json " + coll.string());
  INFO(r.err);
  CHECK(r.status != 0);
  CHECK(r.status != 124);
  CHECK(r.err.find("read other logs than process 0") != std::string::npos);
  CHECK(r.out.find("\"processes\"") == std::string::npos);
}

// Spread over processes, each holds the whole trace, and cannot hold its calls packed (--low-memory is one
// process's): where the spread analysis does not fit and one process holding the calls packed would, the
// refusal says so. 8 ranks x 250000 calls (1999976) need 24 MiB + 8 x 24 KiB + 1999976 x 72 bytes = 162
// MiB of address space whole, 124 MiB packed (24 MiB + 8 x 48 KiB + 2^20 x 20 + 1999976 x 42 bytes). An
// MPI process's own address space (its libraries, its shared memory: 183 MiB under Open MPI here, 117
// under MPICH) is read from a first refusal, which names what is left; the limit is then set to leave about 140 MiB.
TEST_CASE("spread over processes, an analysis that does not fit names the one process that would", "[spread][memory]") {
  const fs::path dir = fresh_dir("spread-room");
  const auto made = run_command(build_dir().string() + "/bin/mpiadvise-synth --ranks 8 --events 250000 --pattern halo -o " +
                                dir.string());
  REQUIRE(made.status == 0);
  JobSpec spec;
  spec.np = 2;
  spec.traced = false;
  const auto under_limit = [&](uint64_t kib, bool spread) {
    return run_command(fmt::format("ulimit -v {}; {}{} report --threads 1 '{}'", kib,
                                   spread ? "timeout 300 " + launcher(spec) + " " : std::string(), mpiadvise_cmd(),
                                   dir.string()));
  };
  // a first limit that leaves less than the whole analysis needs (Open MPI's processes take more than MPICH's)
  uint64_t first_kib = 0, left_mib = 0;
  for (uint64_t mib : {300, 200, 150}) {
    const auto first = under_limit(mib * 1024, true);
    std::smatch m;
    if (first.status == 0 ||
        !std::regex_search(first.err, m, std::regex(R"(needs about 162 MiB of address space .* where ([0-9]+) MiB is left)")))
      continue;
    first_kib = mib * 1024;
    left_mib = std::stoull(m[1]);
    break;
  }
  REQUIRE(first_kib > 0);
  REQUIRE(left_mib < 140);
  const uint64_t kib = first_kib + (140 - left_mib) * 1024;
  const auto spread = under_limit(kib, true);
  INFO("ulimit -v " << kib << ": " << spread.err);
  CHECK(spread.status != 0);
  CHECK(spread.status != 124);
  CHECK(spread.out.empty());
  CHECK(spread.err.find("needs about 162 MiB of address space (24 MiB and 72 bytes a call)") != std::string::npos);
  CHECK(spread.err.find("or in one process (mpiadvise report without mpirun), which holds the calls packed in about "
                        "124 MiB") != std::string::npos);
  // and one process does it, under the same limit
  const auto alone = under_limit(kib, false);
  INFO(alone.err);
  CHECK(alone.status <= 1);
  CHECK(alone.out.find("mpiadvise report " + dir.string()) != std::string::npos);
}

// mpiadvise calibrate on this machine: the real benchmark under the MPI of the run (tests/run_tests.sh runs
// it under Open MPI and under MPICH), over TCP and over shared memory.
#include <catch2/catch.hpp>

#include <chrono>
#include <fstream>
#include <regex>
#include <sstream>

#include "loggps.hpp"
#include "support.hpp"

using namespace mpa_test;

namespace {


std::string tcp(const std::string& eager_limit) {
  JobSpec s;
  s.transport = Transport::Tcp;
  s.eager_limit = std::stoull(eager_limit);
  return launcher(s);
}

uint64_t S_of_limit(uint64_t limit) { return effective_S_of_limit(limit); }

// The environment variable calibrate raises the eager limit with
std::string raising_variable() { return mpi().openmpi() ? "OMPI_MCA_btl_tcp_eager_limit" : "UCX_RNDV_THRESH"; }

}  // namespace

TEST_CASE("calibration pins the effective S by bisection for two eager limits", "[calibrate]") {
  // The largest size a send returns without its receiver is S_of_limit(limit). The sweep (2^n and
  // 1.5 x 2^n) brackets it; the bisection closes the bracket to one byte.
  for (uint64_t limit : {16384u, 65536u}) {
    INFO("eager limit " << limit);
    fs::path out = fresh_dir("calibrate") / "p.toml";
    auto r = run_command(mpiadvise_cmd() + " calibrate --quick --max-size 256K -o " + out.string() + " -- " +
                         tcp(std::to_string(limit)));
    INFO(r.out << r.err);
    REQUIRE(r.status == 0);
    std::smatch m;
    REQUIRE(std::regex_search(r.out, m, std::regex(R"(effective S (\d+) bytes \(a (\d+)-byte send waited; (\d+) bisection probes\))")));
    const uint64_t S = std::stoull(m[1]), next = std::stoull(m[2]);
    CHECK(next == S + 1);
    CHECK(S + 64 >= S_of_limit(limit));
    CHECK(S <= S_of_limit(limit) + 64);
    CHECK(std::stoi(m[3]) >= 10);  // a bracket of a third of an octave or more, halved to one byte
    auto p = mpiadvise::load_params(out);  // refuses a negative parameter
    CHECK(p.S == S);
    CHECK(p.o > 0);
    // what posting a non-blocking call costs, timed apart from the round trips: an MPI_Irecv only queues
    // its request, far below o' (which over TCP holds a syscall's microseconds)
    REQUIRE(p.isend_ns);
    REQUIRE(p.irecv_ns);
    CHECK(*p.isend_ns > 0);
    CHECK(*p.irecv_ns < p.o / 4);
    CHECK(std::regex_search(r.out, std::regex(R"(posting: MPI_Isend \d+ ns, MPI_Irecv \d+ ns)")));
    if (mpi().openmpi())
      CHECK(r.out.find("MPI_T btl_tcp_eager_limit = " + std::to_string(limit) + "  (agrees with the effective S)") !=
            std::string::npos);
    else  // ch4 over UCX: UCX's threshold governs, not the ch3 cvar MPI_T lists
      CHECK(r.out.find("UCX_RNDV_THRESH governs the protocol switch here (UCX_RNDV_THRESH " + std::to_string(limit) +
                       ": sends from " + std::to_string(limit) + " bytes go by rendezvous): S " + std::to_string(S) +
                       " bytes, as measured") != std::string::npos);
    // each parameter with its uncertainty, and the residual, in the output and the file
    const std::string text = read_text(out);
    for (const char* key : {"L_ns", "o_ns", "Oss_ns_per_byte", "Ors_ns_per_byte", "Osl_ns_per_byte", "Orl_ns_per_byte",
                            "Gs_ns_per_byte", "Gl_ns_per_byte", "D_ns"}) {
      INFO(key);
      CHECK(std::regex_search(text, std::regex(std::string("\n") + key + R"( = [0-9.]+  # (\+- [0-9.]+|\(not told apart))")));
    }
    // o_r: o' where the samples allow it (no error of its own, and no value in the file: o_r is then o'),
    // else fitted apart from it
    const bool o_r_fitted = std::regex_search(text, std::regex(R"(\no_r_ns = [0-9.]+  # (\+- [0-9.]+.*|\(not told apart.*)\(not o')"));
    const bool o_r_at_o = std::regex_search(text, std::regex(R"(\n# o_r_ns = o_ns: \(o': the samples)"));
    CHECK(o_r_fitted != o_r_at_o);
    CHECK(p.o_r.has_value() == (text.find("\n# o_r_ns = o_ns: ") == std::string::npos));
    CHECK(std::regex_search(text, std::regex(R"(# residual RMS [0-9.]+% of the round trips, [0-9.]+% of their communication)")));
    CHECK(text.find("a " + std::to_string(S) + "-byte send returned while its receiver computed, a " +
                    std::to_string(S + 1) + "-byte one waited") != std::string::npos);
    CHECK(std::regex_search(r.out, std::regex(R"(\n  o   [0-9]+ \+- [0-9]+ ns\n)")));
    CHECK(std::regex_search(r.out, std::regex(R"(residual RMS [0-9.]+% of the round trips)")));
    // late receives: eager messages of S/8, S/4, S/2 and S bytes (those of a byte or more, distinct) received
    // 200 us after their send, 15 each less any whose send waited, beside the model's price for them, T3 + D =
    // o_r + D + k Ors with the set written (as the file rounds it)
    std::vector<uint64_t> late_sizes;
    for (uint64_t k : {S / 8, S / 4, S / 2, S})
      if (k > 0 && (late_sizes.empty() || k > late_sizes.back())) late_sizes.push_back(k);
    CHECK(r.out.find("late receives (eager messages received 200 us after their send; the model prices them at T3 + D): " +
                     std::to_string(late_sizes.front()) + " B ") != std::string::npos);
    for (uint64_t k : late_sizes) {
      INFO("late receive of " << k << " bytes");
      std::smatch row;
      const std::regex line("\n#   " + std::to_string(k) + R"( bytes: (\d+) ns \(T3 \+ D (\d+) ns\), (\d+) receives\n)");
      REQUIRE(std::regex_search(text, row, line));
      CHECK(std::stod(row[1]) > 0);
      CHECK(std::stod(row[2]) == Approx(p.o_recv() + p.D + static_cast<double>(k) * p.Ors).margin(2 + 1e-4 * static_cast<double>(k)));
      CHECK(std::stoi(row[3]) >= 1);
      CHECK(std::stoi(row[3]) <= 15);
    }
    // the model's structure: where the w = W round trip's T1 + T3 exceeds half the w = 0 one (by the 5%
    // allowed) at an eager size, calibrate names it, in its output and in the file alike; machines of this
    // kind do on every transport, but a quieter one may not, and then neither says anything
    std::smatch broke;
    const std::regex note(R"(note: at (\d+) bytes the round trip took .* with w = 0 and w \+ .* with w = .*: without D the model makes\n)"
                          R"( +the first 2\(T1 \+ T2 \+ T3\) and the second w \+ T1 \+ T3, at most half the first: here ([0-9.]+)\.)");
    if (std::regex_search(r.out, broke, note)) {
      CHECK(std::stoull(broke[1]) <= S);  // an eager size
      CHECK(std::stod(broke[2]) > 1 / 1.9 - 0.005);
      CHECK(text.find("\n# at " + std::string(broke[1]) + " bytes the round trip took ") != std::string::npos);
    } else {
      CHECK(r.out.find("note: at ") == std::string::npos);
      CHECK(text.find("THE MODEL'S STRUCTURE") == std::string::npos);
    }
  }
}

TEST_CASE("calibrated parameters predict a traced run of the same machine within 10%", "[calibrate]") {
  fs::path params = fresh_dir("calibrated") / "here.toml";
  // the median of 3 runs of the benchmark: of two single runs in a row one can price everything 2x (--runs)
  auto cal = run_command(mpiadvise_cmd() + " calibrate --quick --runs 3 --max-size 256K -o " + params.string() + " -- " +
                         tcp("65536"));
  REQUIRE(cal.status == 0);
  JobSpec s;
  s.program = example_path("pingpong_late").string();
  s.args = {"65536", "20", "10"};
  s.transport = Transport::Tcp;
  // noise on a shared machine only ever adds time: a run measured more than 10% slower than predicted is
  // traced again (up to three runs, as mpi_replay's accuracy test does); a prediction above it is never excused
  double measured = 0, predicted = 0;
  for (int attempt = 1;; attempt++) {
    auto run = run_job(s);
    REQUIRE(run.status == 0);
    auto r = run_command(mpiadvise_cmd() + " replay --json --params " + params.string() + " " + run.dir.string());
    REQUIRE(r.status == 0);
    auto j = nlohmann::json::parse(r.out);
    measured = j["measured_ns"], predicted = j["predicted_ns"];
    if ((predicted - measured) / measured > -0.10 || attempt == 3) break;
    WARN("run " << attempt << " measured " << measured << " ns against " << predicted << " predicted: traced again");
  }
  INFO("measured " << measured << " ns, predicted " << predicted << " ns with " << params.string());
  CHECK(std::abs(predicted - measured) / measured < 0.10);
}

TEST_CASE("over TCP a second sweep with the eager limit raised is fitted together with the first", "[calibrate]") {
  fs::path params = fresh_dir("calibrated-eager") / "here.toml";
  // the launcher without its own eager limit: the raised one reaches the ranks through the environment
  JobSpec plain;
  plain.transport = Transport::Tcp;
  const std::string launcher = mpa_test::launcher(plain);
  const std::string raised = raising_variable() + "=524288";
  auto cal = run_command(mpiadvise_cmd() + " calibrate --quick --max-size 256K -o " + params.string() + " -- " + launcher);
  INFO(cal.out << cal.err);
  REQUIRE(cal.status == 0);
  // eager far above the default limit: up to the sweep's largest size, 262144, as a rule; over loopback TCP
  // a send of nearly that size now and then waits for the socket's buffer, and the raised S is bisected a
  // little below it (261911 in one run)
  std::smatch m;
  REQUIRE(std::regex_search(cal.out, m, std::regex("fitted with the sweep with " + raised + R"(: eager up to (\d+) bytes)")));
  const uint64_t eager_up_to = std::stoull(m[1]);
  CHECK(eager_up_to > 200000);
  CHECK(eager_up_to <= 262144);
  const std::string text = read_text(params);
  auto p = mpiadvise::load_params(params);
  // its sizes above the first sweep's S are the [raised] table's alone
  // when a size of the raised sweep still waited (a send of nearly 262144 bytes over loopback TCP, now and
  // then), the line names it: "(eager up to 261911 bytes, 262144 waited)"
  CHECK(std::regex_search(text, std::regex("# with a second sweep with " + raised + R"( \(eager up to )" +
                                           std::to_string(eager_up_to) + R"( bytes(, \d+ waited)?\), its sizes up to )" +
                                           std::to_string(p.S) + " fitted together, s = S")));
  CHECK(p.s == p.S);  // one eager segment
  CHECK(p.S < 65536);  // the effective S is still the configured limit's, not the raised one
  // the [raised] table prices the eager sizes above the first sweep's S, with its own per-byte terms. (Which
  // sends the base fit takes, eager ones only, is unit_calibration's to check: a bound on Oss here told
  // nothing, since a --quick fit gave Oss 0.34-0.44 +- 0.12 ns/B on a quiet machine and 1.02 +- 0.24 on a
  // busy one, where a waited send among its rows would not have moved it out of that range.)
  REQUIRE(p.raised_from);
  CHECK(*p.raised_from == p.S);
  CHECK(p.Oss_raised + p.Ors_raised > 0);
  // an eager limit on the launcher's command line (--mca, -genv) wins over the environment: said, and the
  // first sweep alone fitted
  auto fixed = run_command(mpiadvise_cmd() + " calibrate --quick --max-size 256K -o " + params.string() + " -- " + tcp("65536"));
  INFO(fixed.out << fixed.err);
  REQUIRE(fixed.status == 0);
  CHECK(fixed.out.find(raised + " did not raise the effective S") != std::string::npos);
  CHECK(fixed.out.find("fitted with the sweep with") == std::string::npos);
  auto skip = run_command(mpiadvise_cmd() + " calibrate --quick --no-eager-sweep --max-size 256K -o " + params.string() +
                          " -- " + launcher);
  REQUIRE(skip.status == 0);
  CHECK(skip.out.find("fitted with the sweep with") == std::string::npos);
  CHECK(skip.err.find("the same sweep with") == std::string::npos);
}

TEST_CASE("over shared memory the effective S is bisected too; --runs pools runs of the benchmark", "[calibrate]") {
  fs::path params = fresh_dir("calibrated-shm") / "here.toml";
  JobSpec shm;
  shm.transport = Transport::SharedMemory;
  auto cal = run_command(mpiadvise_cmd() + " calibrate --quick --runs 2 --max-size 256K -o " + params.string() + " -- " +
                         launcher(shm));
  INFO(cal.out << cal.err);
  REQUIRE(cal.status == 0);
  CHECK(cal.err.find("run 2 of 2 of the benchmark") != std::string::npos);
  {  // the eager buffer is fitted to both runs' floods: three floods each, six counts for the size
    std::ifstream in(params);
    std::stringstream text;
    text << in.rdbuf();
    CHECK(std::regex_search(text.str(), std::regex(R"(#   64 bytes: \d+, \d+, \d+, \d+, \d+, \d+ of \d+ sent)")));
  }
  std::smatch m;
  REQUIRE(std::regex_search(cal.out, m, std::regex(R"(effective S (\d+) bytes \(a (\d+)-byte send waited)")));
  CHECK(std::stoull(m[2]) == std::stoull(m[1]) + 1);
  auto p = mpiadvise::load_params(params);
  CHECK(p.S == std::stoull(m[1]));
  if (mpi().openmpi()) {
    CHECK(p.transport == "vader");
    CHECK(p.S <= 4096);  // at most btl_vader_eager_limit (platform-notes: sends above 256 bytes may wait)
    // above btl_vader_eager_limit less ob1's 56 bytes of headers the receiver copies the data by CMA: a
    // protocol of its own, fitted alone ([large]), with a fixed cost a message of its own. How large that
    // is, is the machine's: 2.8 us once here, 0.85 us +- 0.04 in a make check of another machine of the
    // same kind (a benchmark's figure, not a test's; it was asserted above 1 us and failed there)
    REQUIRE(p.large_from);
    CHECK(*p.large_from == 4040);
    CHECK(p.R_large > 0);
    CHECK(cal.out.find("above 4040 bytes (btl_vader_eager_limit 4096 less 56 bytes of headers") != std::string::npos);
  } else {
    CHECK(p.transport == "ucx-sm");
    CHECK(p.S == 8255);  // platform notes: one less than UCX_POSIX_SEG_SIZE, 8256
    CHECK(cal.out.find("UCX_RNDV_THRESH governs the protocol switch here") != std::string::npos);
  }
  // data sent again unchanged: above S (above 4040 bytes over vader) the receiver copies the sender's pages
  // itself (CMA); the factor it fits for that path is written to the table as printed. (What it comes to
  // depends on where the ranks run: 0.39-0.48 over vader and 0.35-0.36 over UCX in calibrations on a quiet
  // machine, 0.97 once under make check's load, the two ranks sharing caches: a benchmark's figure.)
  REQUIRE(std::regex_search(cal.out, m, std::regex(R"(by its rendezvous, \d+ sizes of \d+ to \d+ bytes: ([0-9.]+) \+-)")));
  REQUIRE(p.resend_rendezvous);
  // the table holds the factor to 3 decimals, the output to 2, both rounded from the same fit: they differ
  // by up to 0.005 + 0.0005 (a fit of 1.0254 is written 1.025 and printed 1.03; CI failed on a margin of 0.005)
  CHECK(*p.resend_rendezvous == Approx(std::stod(m[1])).margin(0.0055 + 1e-9));
  CHECK(*p.resend_rendezvous <= 10);
  CHECK(read_text(params).find("\n[resend]\n") != std::string::npos);
}

TEST_CASE("under MPICH: the library version's TABs and newlines reach the file, S is UCX's", "[calibrate][mpich-only]") {
  // MPI_Get_library_version under MPICH 4 holds TABs and newlines: the benchmark must escape them in
  // its JSON (it used to print the TABs raw, and the facts line was lost). The benchmark is the one
  // built for MPICH, chosen by the launcher.
  fs::path dir = fresh_dir("calibrate-mpich");
  auto cal = run_command(mpiadvise_cmd() + " calibrate --quick --max-size 256K -o " + (dir / "p.toml").string() + " -- " +
                         launcher(JobSpec{}));
  INFO(cal.out << cal.err);
  REQUIRE(cal.status == 0);
  CHECK(cal.out.find("mpiadvise calibrate: MPICH Version:\t4") != std::string::npos);
  const std::string text = read_text(dir / "p.toml");
  CHECK(text.find("\nlibrary = \"MPICH\"\n") != std::string::npos);
  CHECK(text.find("\ntransport = \"ucx-sm\"\n") != std::string::npos);  // one host, UCX_TLS unset: shared memory
  CHECK(text.find("# MPICH Version:\t4") != std::string::npos);
  std::smatch m;
  REQUIRE(std::regex_search(cal.out, m, std::regex(R"(effective S (\d+) bytes \(a (\d+)-byte send waited)")));
  CHECK(std::stoull(m[2]) == std::stoull(m[1]) + 1);
  // platform-notes: over shared memory UCX sends up to 8255 bytes without the receiver
  CHECK(std::stoull(m[1]) == 8255);
  CHECK(cal.err.find("the same sweep with UCX_RNDV_THRESH=524288") != std::string::npos);
  mpiadvise::load_params(dir / "p.toml");
}

TEST_CASE("calibrate refuses too few ranks, sizes out of range and an unwritable output", "[calibrate][errors]") {
  fs::path out = fresh_dir("calbad") / "p.toml";
  JobSpec single;
  single.np = 1;
  single.transport = Transport::Tcp;
  auto one = run_command(mpiadvise_cmd() + " calibrate --quick -o " + out.string() + " -- " + launcher(single));
  CHECK(one.status == 2);
  CHECK(one.err.find("needs 2 ranks") != std::string::npos);
  auto small = run_command(mpiadvise_cmd() + " calibrate --max-size 1K -o " + out.string() + " -- " + tcp("65536"));
  CHECK(small.status == 2);
  CHECK(small.err.find("--max-size: 1K is out of range") != std::string::npos);
  auto nowhere = run_command(mpiadvise_cmd() + " calibrate --quick -o /dev/null/p.toml -- " + tcp("65536"));
  CHECK(nowhere.status == 2);
  CHECK(nowhere.err.find("/dev/null/p.toml: cannot write the parameter file") != std::string::npos);
  CHECK(!fs::exists(out));
}

TEST_CASE("a job that hangs in MPI_Finalize after the benchmark's last measurement is stopped, the fit made",
          "[calibrate]") {
  // MPICH over UCX 1.13's TCP transport can leave rank 0 spinning in MPI_Finalize for ever (seen twice
  // in about 40 full calibrations here; openucx/ucx#8738): every measurement is made by then. Each rank
  // here runs the real benchmark and then, in place of a finalize that never ends, sleeps; calibrate
  // waits 30 s after the benchmark's last line, stops the launcher and fits what it has.
  fs::path dir = fresh_dir("calibrate-finalize-hang");
  const fs::path bench = build_dir() / "lib" / "mpiadvise" / mpi().name / "mpiadvise-calibrate-bench";
  const fs::path wrapper = dir / "bench-then-hang";
  {
    std::ofstream w(wrapper);
    w << "#!/bin/sh\n\"" << bench.string() << "\" \"$@\" || exit $?\nexec sleep 600\n";
  }
  fs::permissions(wrapper, fs::perms::owner_all);
  JobSpec shm;
  shm.transport = Transport::SharedMemory;
  const auto started = std::chrono::steady_clock::now();
  auto cal = run_command("timeout 300 " + mpiadvise_cmd() + " calibrate --quick --no-eager-sweep --max-size 64K --bench " +
                         wrapper.string() + " -o " + (dir / "p.toml").string() + " -- " + launcher(shm));
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  INFO(cal.out << cal.err);
  REQUIRE(cal.status == 0);
  CHECK(cal.err.find("had not ended 30 s after its last measurement") != std::string::npos);
  CHECK(seconds < 250);  // not the sleep's 600 s (nor timeout's 300)
  mpiadvise::load_params(dir / "p.toml");
  // and nothing of the job is left behind
  auto left = run_command("pgrep -f '[b]ench-then-hang|[s]leep 600' || true");  // [x]: not this shell's own line
  CHECK(left.out.empty());
}

// mpiadvise calibrate on this machine: the real benchmark under Open MPI's TCP transport.
#include <catch2/catch.hpp>

#include <regex>

#include "loggps.hpp"
#include "support.hpp"

using namespace mpa_test;

namespace {

std::string mpiadvise_cmd() { return (build_dir() / "bin" / "mpiadvise").string(); }

std::string tcp(const std::string& eager_limit) {
  return "mpirun --allow-run-as-root --oversubscribe -np 2 --mca pml ob1 --mca btl self,tcp --mca btl_tcp_eager_limit " +
         eager_limit;
}

}  // namespace

TEST_CASE("calibration finds the effective S within one step of the sweep for two eager limits", "[calibrate]") {
  // --quick sweeps 2^n and 1.5 x 2^n: one step is at most half an octave. Open MPI counts about 48
  // bytes of headers in btl_tcp_eager_limit, so the effective S lies just below the limit.
  for (uint64_t limit : {16384u, 65536u}) {
    fs::path out = fresh_dir("calibrate") / "p.toml";
    auto r = run_command(mpiadvise_cmd() + " calibrate --quick --max-size 256K -o " + out.string() + " -- " +
                         tcp(std::to_string(limit)));
    INFO(r.out << r.err);
    REQUIRE(r.status == 0);
    std::smatch m;
    REQUIRE(std::regex_search(r.out, m, std::regex(R"(effective S (\d+) bytes \(a (\d+)-byte send waited\))")));
    uint64_t S = std::stoull(m[1]), next = std::stoull(m[2]);
    CHECK(S <= limit - 56);
    CHECK(next > limit - 56);
    CHECK(next <= S * 3 / 2 + 1);  // adjacent points of the sweep
    auto p = mpiadvise::load_params(out);
    CHECK(p.S == S);
    CHECK(p.o > 0);
    CHECK(r.out.find("MPI_T btl_tcp_eager_limit = " + std::to_string(limit) + "  (agrees with the effective S)") !=
          std::string::npos);
  }
}

TEST_CASE("calibrated parameters predict a traced run of the same machine within 10%", "[calibrate]") {
  fs::path params = fresh_dir("calibrated") / "here.toml";
  auto cal = run_command(mpiadvise_cmd() + " calibrate --quick --max-size 256K -o " + params.string() + " -- " + tcp("65536"));
  REQUIRE(cal.status == 0);
  JobSpec s;
  s.program = (build_dir() / "examples" / "pingpong_late").string();
  s.args = {"65536", "20", "10"};
  s.mpirun_options = {"--mca", "pml", "ob1", "--mca", "btl", "self,tcp"};
  auto run = run_job(s);
  REQUIRE(run.status == 0);
  auto r = run_command(mpiadvise_cmd() + " replay --json --params " + params.string() + " " + run.dir.string());
  REQUIRE(r.status == 0);
  auto j = nlohmann::json::parse(r.out);
  double measured = j["measured_ns"], predicted = j["predicted_ns"];
  INFO("measured " << measured << " ns, predicted " << predicted << " ns with " << params.string());
  CHECK(std::abs(predicted - measured) / measured < 0.10);
}

TEST_CASE("over TCP the eager terms come from a second sweep with btl_tcp_eager_limit raised", "[calibrate]") {
  fs::path params = fresh_dir("calibrated-eager") / "here.toml";
  // the launcher without its own btl_tcp_eager_limit: the raised one reaches the ranks through the environment
  const std::string launcher = "mpirun --allow-run-as-root -np 2 --mca pml ob1 --mca btl self,tcp";
  auto cal = run_command(mpiadvise_cmd() + " calibrate --quick --max-size 256K -o " + params.string() + " -- " + launcher);
  INFO(cal.out << cal.err);
  REQUIRE(cal.status == 0);
  CHECK(cal.out.find("Oss, Ors, Gs from the sweep with OMPI_MCA_btl_tcp_eager_limit=524288: eager up to 262144 bytes") !=
        std::string::npos);
  const std::string text = read_text(params);
  CHECK(text.find("# Oss, Ors and Gs from a second sweep with OMPI_MCA_btl_tcp_eager_limit=524288") != std::string::npos);
  auto p = mpiadvise::load_params(params);
  CHECK(p.s == p.S);  // one eager segment
  CHECK(p.S < 65536);  // the effective S is still the configured limit's, not the raised one
  CHECK(p.Oss < 1.0);  // ns per byte: fitted over eager sends only (a waited send would make it microseconds)
  // an --mca btl_tcp_eager_limit of the launcher wins over the environment: said, and the first sweep kept
  auto fixed = run_command(mpiadvise_cmd() + " calibrate --quick --max-size 256K -o " + params.string() + " -- " + tcp("65536"));
  INFO(fixed.out << fixed.err);
  REQUIRE(fixed.status == 0);
  CHECK(fixed.out.find("did not reach the ranks") != std::string::npos);
  CHECK(fixed.out.find("from the sweep with") == std::string::npos);
  auto skip = run_command(mpiadvise_cmd() + " calibrate --quick --no-eager-sweep --max-size 256K -o " + params.string() +
                          " -- " + launcher);
  REQUIRE(skip.status == 0);
  CHECK(skip.out.find("from the sweep with") == std::string::npos);
}

TEST_CASE("calibrate refuses too few ranks, sizes out of range and an unwritable output", "[calibrate][errors]") {
  fs::path out = fresh_dir("calbad") / "p.toml";
  auto one = run_command(mpiadvise_cmd() + " calibrate --quick -o " + out.string() +
                         " -- mpirun --allow-run-as-root -np 1 --mca pml ob1 --mca btl self,tcp");
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

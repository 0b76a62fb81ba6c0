// Every committed fuzz input (tests/fuzz/corpus: the seeds; tests/fuzz/regressions: what the fuzzers
// found, each fixed) through the fuzz targets' own code, with the ordinary build: no crash, no
// exception other than the ones each target expects (targets.hpp).
#include <catch2/catch.hpp>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "fuzz/targets.hpp"

namespace fs = std::filesystem;

namespace {

std::vector<fs::path> inputs(const std::string& target) {
  std::vector<fs::path> out;
  for (const char* kind : {"corpus", "regressions"}) {
    fs::path dir = fs::path(MPA_SOURCE_DIR) / "tests" / "fuzz" / kind / target;
    if (!fs::exists(dir)) continue;
    for (const auto& e : fs::directory_iterator(dir)) out.push_back(e.path());
  }
  std::sort(out.begin(), out.end());
  return out;
}

std::vector<uint8_t> bytes_of(const fs::path& f) {
  std::ifstream in(f, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

// Every committed input of a target (at least `seeds` of them) through `target`: nothing escapes.
template <class Target>
void run_inputs(const std::string& name, size_t seeds, Target target) {
  const auto files = inputs(name);
  CHECK(files.size() >= seeds);
  for (const auto& f : files) {
    INFO(f.filename().string());
    const auto b = bytes_of(f);
    CHECK_NOTHROW(target(b.data(), b.size()));
  }
}

}  // namespace

TEST_CASE("the log reader's fuzz inputs read without a crash", "[fuzz]") {
  run_inputs("log_reader", 10, mpa_fuzz::log_file);
}

TEST_CASE("the analysis's fuzz inputs are analysed and reported without a crash", "[fuzz]") {
  run_inputs("analysis", 5, mpa_fuzz::job_analysis);
}

TEST_CASE("the analysis's fuzz seeds are whole jobs that report", "[fuzz]") {
  // the seeds are the fixtures' jobs, each rank's log as it is (make-corpus.sh): the fuzzer's mutations
  // start from jobs the analysis reads through to the report, not from inputs it refuses at once
  const fs::path dir = fs::path(MPA_SOURCE_DIR) / "tests" / "fuzz" / "corpus" / "analysis";
  const fs::path fixtures = fs::path(MPA_SOURCE_DIR) / "tests" / "fixtures";
  for (const char* name : {"halo-procnull", "p2p-all", "job-strings", "halo-damaged"}) {
    INFO(name);
    const auto b = bytes_of(dir / (std::string(name) + ".job"));
    const auto logs = mpa_fuzz::split_job(b.data(), b.size());
    std::vector<fs::path> files;  // rank-NNNNN.mpa, in rank order as make-corpus.sh's glob takes them
    for (const auto& e : fs::directory_iterator(fixtures / name)) files.push_back(e.path());
    std::sort(files.begin(), files.end());
    std::vector<std::vector<uint8_t>> expected;
    for (const auto& f : files) expected.push_back(bytes_of(f));
    CHECK(logs == expected);
    CHECK(mpa_fuzz::join_job(logs) == b);
    CHECK(mpa_fuzz::job_analysis(b.data(), b.size()));
  }
  const auto fresh = bytes_of(dir / "format6-halo.job");  // traced by make-corpus.sh
  CHECK(mpa_fuzz::split_job(fresh.data(), fresh.size()).size() == 2);
  CHECK(mpa_fuzz::job_analysis(fresh.data(), fresh.size()));
  // a job cut short anywhere: its logs are the bytes after the sizes, in order, and no more (p2p-all: 4
  // logs, so 1 + 3 x 4 bytes before them)
  const auto b = bytes_of(dir / "p2p-all.job");
  for (size_t cut = 0; cut <= b.size(); cut += cut < 64 ? 1 : 997) {
    INFO("cut at " << cut);
    std::vector<uint8_t> joined;
    for (const auto& l : mpa_fuzz::split_job(b.data(), cut)) joined.insert(joined.end(), l.begin(), l.end());
    const size_t head = std::min<size_t>(cut, 13);
    CHECK(joined == std::vector<uint8_t>(b.begin() + static_cast<std::ptrdiff_t>(head), b.begin() + static_cast<std::ptrdiff_t>(cut)));
  }
}

TEST_CASE("the report reader's fuzz inputs are read and gated without a crash", "[fuzz]") {
  run_inputs("report", 4, mpa_fuzz::report_file);
  // the seeds are whole reports: the fuzzer starts from figures the gate reads
  for (const char* name : {"halo-procnull", "p2p-all", "job-strings", "halo-damaged"}) {
    INFO(name);
    auto b = bytes_of(fs::path(MPA_SOURCE_DIR) / "tests" / "fuzz" / "corpus" / "report" / (std::string(name) + ".json"));
    CHECK(mpa_fuzz::report_file(b.data(), b.size()));
  }
}

TEST_CASE("the header parser's fuzz inputs parse without a crash", "[fuzz]") {
  run_inputs("header", 5, mpa_fuzz::header_json);
}

// Every committed fuzz input (tests/fuzz/corpus: the seeds; tests/fuzz/regressions: what the fuzzers
// found, each fixed) through the fuzz targets' own code, with the ordinary build: no crash, no
// exception other than the reader's LogError.
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

}  // namespace

TEST_CASE("the log reader's fuzz inputs read without a crash", "[fuzz]") {
  auto files = inputs("log_reader");
  CHECK(files.size() >= 10);
  for (const auto& f : files) {
    INFO(f.filename().string());
    auto b = bytes_of(f);
    CHECK_NOTHROW(mpa_fuzz::log_file(b.data(), b.size()));
  }
}

TEST_CASE("the header parser's fuzz inputs parse without a crash", "[fuzz]") {
  auto files = inputs("header");
  CHECK(files.size() >= 5);
  for (const auto& f : files) {
    INFO(f.filename().string());
    auto b = bytes_of(f);
    CHECK_NOTHROW(mpa_fuzz::header_json(b.data(), b.size()));
  }
}

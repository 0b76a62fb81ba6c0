// Strings from the job are data: a program whose path and source file name hold a Latin-1 byte, and
// an environment variable with bytes that are not UTF-8 and a terminal escape sequence, traced for
// real. The logs read, the JSON mpiadvise writes parses back with the bytes intact, and its text holds
// no raw control characters.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "support.hpp"
#include "text_escape.hpp"

using namespace mpa_test;
using nlohmann::json;

namespace {

const std::string kLatin1 = "\xe9";  // é in Latin-1: not UTF-8
const std::string kNote = "caf\xe9\xff 100% \x1b[31mred";


std::string quoted(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// One traced run of tests/programs/halo_procnull.c built as halo_<0xe9>.c, shared by the tests.
const JobResult& strange_run() {
  static JobResult result = [] {
    fs::path dir = fresh_dir("job-strings");
    fs::path source = dir / ("halo_" + kLatin1 + ".c"), program = dir / ("halo_" + kLatin1);
    fs::copy_file(fs::path(MPA_SOURCE_DIR) / "tests" / "programs" / "halo_procnull.c", source);
    auto cc = run_command("cd " + quoted(dir.string()) + " && " + mpi().mpicc + " -O1 -g -o " + quoted(program.string()) + " " +
                          quoted(source.filename().string()));
    REQUIRE(cc.status == 0);
    // Open MPI's mpirun passes OMPI_MCA_* variables on to the ranks, MPICH's Hydra the whole environment;
    // the tracer logs the variables of every MPI's prefixes, whichever MPI runs
    setenv("OMPI_MCA_mpiadvise_note", kNote.c_str(), 1);
    JobSpec s;
    s.np = 2;
    s.program = program.string();
    s.args = {"3"};
    JobResult r = run_job(s);
    unsetenv("OMPI_MCA_mpiadvise_note");
    INFO(r.err);
    REQUIRE(r.status == 0);
    return r;
  }();
  return result;
}

// Every string and key of j, after decoding, one after another.
void strings_of(const json& j, std::string& out) {
  if (j.is_string()) out += j.get<std::string>() + "\n";
  else if (j.is_array()) for (const auto& e : j) strings_of(e, out);
  else if (j.is_object())
    for (const auto& [k, v] : j.items()) {
      out += k + "\n";
      strings_of(v, out);
    }
}

// Text for a terminal: valid UTF-8, no control characters but newlines.
void check_printable(const std::string& text) {
  CHECK(mpiadvise::valid_utf8(text));
  for (unsigned char c : text) {
    INFO("character " << int(c));
    CHECK(((c >= 0x20 || c == '\n') && c != 0x7f));
  }
}

}  // namespace

TEST_CASE("a path and an environment that are not UTF-8: the logs read and keep the bytes", "[strings]") {
  const auto& r = strange_run();
  mpiadvise::JobLog job(r.dir);
  REQUIRE(job.ranks().size() == 2);
  for (const auto& p : job.problems()) FAIL(p.text());
  for (const auto& log : job.ranks()) {
    const std::string program = log->header().at("program");
    CHECK(program.substr(program.size() - 6) == "halo_" + kLatin1);
    CHECK(log->header().at("env").at("OMPI_MCA_mpiadvise_note") == kNote);
    size_t n = 0;
    log->for_each_event([&](const mpiadvise::Event&) { n++; });
    CHECK(n > 10);
  }
}

TEST_CASE("dump and report as JSON parse back, with the bytes of names and paths intact", "[strings][cli]") {
  const auto& r = strange_run();
  const std::string dir = quoted(r.dir.string());
  auto summary = run_command(mpiadvise_cmd() + " dump --summary --format jsonl " + dir);
  REQUIRE(summary.status == 0);
  json s = json::parse(summary.out);  // nlohmann refuses text that is not UTF-8
  mpiadvise::decode_json_strings(s);
  std::string all;
  strings_of(s, all);
  CHECK(all.find("halo_" + kLatin1 + ".c:") != std::string::npos);  // a call site's source file

  auto events = run_command(mpiadvise_cmd() + " dump --format jsonl " + dir);
  REQUIRE(events.status == 0);
  std::istringstream lines(events.out);
  size_t n = 0;
  for (std::string line; std::getline(lines, line); n++) CHECK_NOTHROW(json::parse(line));
  CHECK(n > 20);

  auto report = run_command(mpiadvise_cmd() + " report --format json " + dir);
  INFO(report.err);
  REQUIRE(report.status == 0);
  json j = json::parse(report.out);
  mpiadvise::decode_json_strings(j);
  all.clear();
  strings_of(j, all);
  CHECK(all.find("halo_" + kLatin1 + ".c:") != std::string::npos);
}

TEST_CASE("dump and report as text and Markdown hold no raw control characters or stray bytes", "[strings][cli]") {
  const auto& r = strange_run();
  const std::string dir = quoted(r.dir.string());
  for (const char* args : {" dump ", " dump --summary ", " report ", " report --format md "}) {
    INFO(args);
    auto out = run_command(mpiadvise_cmd() + args + dir);
    CHECK(out.status == 0);
    check_printable(out.out);
    check_printable(out.err);
  }
  auto text = run_command(mpiadvise_cmd() + " dump --summary " + dir);
  CHECK(text.out.find("halo_\\xe9.c:") != std::string::npos);  // a call site's file, the byte shown escaped
}

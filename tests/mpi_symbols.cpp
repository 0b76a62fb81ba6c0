// Call sites of programs built as distributions ship them, on real runs under Open MPI's TCP transport:
// C++ names demangled; a stripped program's lines found again in its separate debug file (by build ID
// in a directory given with --debug-dir or MPIADVISE_DEBUG_PATH, or by .gnu_debuglink name); and a
// program stripped down to its symbol tables (.symtab, or only .dynsym) named by function, the call
// sites of one function counted together; and a program built by clang, named by its lines. The
// program: tests/programs/cxx_stages.cpp, built five ways in tests/tests.mk.
#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "support.hpp"

using namespace mpa_test;
using json = nlohmann::json;

namespace {

const std::string kSendBoth = "solver::comm::Exchange::send_both(int)";
const int kSteps = 10;


std::string quoted(const fs::path& p) { return "'" + p.string() + "'"; }

// One traced run of a build of cxx_stages: two 256 KiB sends per step (above the eager limit: rank 0
// waits for rank 1, which works before each receive).
JobResult staged_run(const std::string& program) {
  JobSpec s;
  s.program = program;
  s.args = {"262144", std::to_string(kSteps), "2"};
  s.transport = Transport::Tcp;
  auto run = run_job(s);
  INFO(run.err);
  REQUIRE(run.status == 0);
  return run;
}

json report_of(const fs::path& dir, const std::string& options = "") { return report_json(dir, options); }
int line_of(const std::string& needle) { return source_line("tests/programs/cxx_stages.cpp", needle); }

// The entries of a report list (hot_spots, sites) whose location text mentions what, of one MPI call.
std::vector<json> entries_at(const json& list, const std::string& what, const std::string& call = "MPI_Send") {
  std::vector<json> out;
  for (const auto& x : list)
    if (x["where"]["text"].get<std::string>().find(what) != std::string::npos && x["call"] == call) out.push_back(x);
  return out;
}

// The build ID of an ELF file, as readelf prints it (lower-case hex).
std::string build_id(const fs::path& file) {
  auto r = run_command("readelf -n " + quoted(file) + " | sed -n 's/^ *Build ID: *//p'");
  REQUIRE(r.status == 0);
  std::string id = r.out.substr(0, r.out.find('\n'));
  REQUIRE(id.size() > 2);
  return id;
}

bool has_section(const fs::path& file, const std::string& name) {
  auto r = run_command("readelf -S -W " + quoted(file));
  REQUIRE(r.status == 0);
  return r.out.find(" " + name + " ") != std::string::npos;
}

}  // namespace

TEST_CASE("C++ call sites are named by their demangled function", "[symbols]") {
  auto run = staged_run("cxx_stages");
  json report = report_of(run.dir);
  auto sends = entries_at(report["sites"], kSendBoth);
  REQUIRE(sends.size() == 2);  // with lines: each send is its own site
  for (const auto& s : sends) {
    CHECK(s["where"]["function"] == kSendBoth);
    CHECK(s["where"]["file"].get<std::string>().find("cxx_stages.cpp") != std::string::npos);
  }
  auto hot = entries_at(report["hot_spots"], kSendBoth);  // the sends wait for the late receiver
  REQUIRE(!hot.empty());
  CHECK(hot[0]["where"]["function"] == kSendBoth);
  for (const auto* list : {&report["hot_spots"], &report["sites"]})
    for (const auto& x : *list) {
      INFO(x["where"]["text"]);
      CHECK(x["where"]["text"].get<std::string>().find("_Z") == std::string::npos);
    }
  // the text report and dump's list of call sites say it the same way
  auto text = run_command(mpiadvise_cmd() + " report " + quoted(run.dir));
  CHECK(text.out.find(kSendBoth) != std::string::npos);
  CHECK(text.out.find("_ZN") == std::string::npos);
  auto dump = run_command(mpiadvise_cmd() + " dump --summary " + quoted(run.dir));
  CHECK(dump.out.find(kSendBoth) != std::string::npos);
  CHECK(dump.out.find("_ZN") == std::string::npos);
}

TEST_CASE("a program built by clang has its lines, though it has no .debug_aranges", "[symbols]") {
  // libdw 0.188 finds the unit of an address by .debug_aranges, which clang does not write: without the
  // symbolizer's own search of the units, every call site was named by function only
  const fs::path program = program_path("cxx_stages_clang");
  auto comment = run_command("readelf -p .comment " + quoted(program));
  REQUIRE(comment.out.find("clang") != std::string::npos);
  REQUIRE_FALSE(has_section(program, ".debug_aranges"));
  auto run = staged_run("cxx_stages_clang");
  json report = report_of(run.dir);
  auto sends = entries_at(report["sites"], "cxx_stages.cpp:");
  REQUIRE(sends.size() == 2);
  std::set<int> lines;
  for (const auto& s : sends) {
    lines.insert(s["where"]["line"].get<int>());
    CHECK(s["where"]["function"] == kSendBoth);
  }
  CHECK(lines == std::set<int>{line_of("// first send"), line_of("// second send")});
}

TEST_CASE("a stripped program's lines come back from its separate debug file", "[symbols]") {
  const fs::path program = program_path("cxx_stages_split");
  const fs::path debuginfo = program.string() + ".debuginfo";
  REQUIRE(fs::exists(debuginfo));
  REQUIRE_FALSE(has_section(program, ".symtab"));
  auto run = staged_run("cxx_stages_split");
  const int first = line_of("// first send"), second = line_of("// second send");
  auto has_send_lines = [&](const json& report) {
    auto sends = entries_at(report["sites"], "cxx_stages.cpp:");
    if (sends.size() != 2) return false;
    std::set<int> lines;
    for (const auto& s : sends) {
      lines.insert(s["where"]["line"].get<int>());
      if (s["where"]["function"] != kSendBoth) return false;
    }
    return lines == std::set<int>{first, second};
  };
  // nowhere libdw looks by default: module and offset
  json bare = report_of(run.dir);
  CHECK_FALSE(has_send_lines(bare));
  CHECK(entries_at(bare["sites"], "cxx_stages_split+0x").size() == 2);

  SECTION("by build ID, in DIR/.build-id/xx/rest.debug as Debian's -dbgsym packages install them") {
    const fs::path tree = fresh_dir("debug-tree");
    const std::string id = build_id(program);
    fs::create_directories(tree / ".build-id" / id.substr(0, 2));
    fs::copy_file(debuginfo, tree / ".build-id" / id.substr(0, 2) / (id.substr(2) + ".debug"));
    CHECK(has_send_lines(report_of(run.dir, "--debug-dir " + quoted(tree))));
    // relative to the working directory, and through the environment (a search path)
    auto rel = run_command("cd " + quoted(tree.parent_path()) + " && " + mpiadvise_cmd() + " report --format json --debug-dir " +
                           tree.filename().string() + " " + quoted(run.dir));
    REQUIRE(rel.status == 0);
    CHECK(has_send_lines(json::parse(rel.out)));
    auto env = run_command("MPIADVISE_DEBUG_PATH=/nonexistent:" + quoted(tree) + " " + mpiadvise_cmd() +
                           " report --format json " + quoted(run.dir));
    REQUIRE(env.status == 0);
    CHECK(has_send_lines(json::parse(env.out)));
    // the other commands that name call sites take it too
    auto dump = run_command(mpiadvise_cmd() + " dump --summary --debug-dir " + quoted(tree) + " " + quoted(run.dir));
    CHECK(dump.out.find("cxx_stages.cpp:" + std::to_string(first)) != std::string::npos);
    auto replay = run_command(mpiadvise_cmd() + " whatif --json --split cxx_stages.cpp:" + std::to_string(first) +
                              " --debug-dir " + quoted(tree) + " " + quoted(run.dir));
    INFO(replay.err);
    CHECK(replay.status == 0);
    auto gate = run_command(mpiadvise_cmd() + " gate --baseline " + quoted(run.dir) + " --candidate " + quoted(run.dir) +
                            " --debug-dir " + quoted(tree));
    CHECK(gate.status == 0);
    CHECK(gate.out.find("cxx_stages.cpp:" + std::to_string(first)) != std::string::npos);
  }

  SECTION("by .gnu_debuglink name, in a directory given") {
    // a copy of the program that names its debug file, run from there
    const fs::path bin = fresh_dir("debuglink-bin"), debug = fresh_dir("debuglink-debug");
    fs::copy_file(program, bin / "stages", fs::copy_options::overwrite_existing);
    fs::copy_file(debuginfo, bin / "stages.debug");
    auto link = run_command("cd " + quoted(bin) + " && objcopy --add-gnu-debuglink=stages.debug stages");
    INFO(link.err);
    REQUIRE(link.status == 0);
    fs::rename(bin / "stages.debug", debug / "stages.debug");
    auto linked = staged_run((bin / "stages").string());
    CHECK_FALSE(has_send_lines(report_of(linked.dir)));
    CHECK(has_send_lines(report_of(linked.dir, "--debug-dir " + quoted(debug))));
  }

  SECTION("a directory that does not exist is a usage error naming it") {
    auto r = run_command(mpiadvise_cmd() + " report --debug-dir /nonexistent/debug " + quoted(run.dir));
    CHECK(r.status == 2);
    CHECK(r.err.find("/nonexistent/debug") != std::string::npos);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  }
}

TEST_CASE("a program stripped to its symbol tables is reported by function, its call sites together", "[symbols]") {
  // .symtab kept (strip --strip-debug), or only .dynsym (built with -rdynamic, strip --strip-all)
  for (const std::string program : {"cxx_stages_symtab", "cxx_stages_dynsym"}) {
    INFO(program);
    CHECK_FALSE(has_section(program_path(program), ".debug_info"));
    CHECK(has_section(program_path(program), ".symtab") == (program == "cxx_stages_symtab"));
    auto run = staged_run(program);
    json report = report_of(run.dir);
    // the two sends of send_both are one site, named by the function, with both its messages
    auto sites = entries_at(report["sites"], kSendBoth);
    REQUIRE(sites.size() == 1);
    CHECK(sites[0]["messages_sent"] == 2 * kSteps);
    CHECK(sites[0]["where"]["function"] == kSendBoth);
    CHECK_FALSE(sites[0]["where"].contains("file"));
    CHECK(sites[0]["where"]["text"] == kSendBoth + " in " + program_path(program).string());
    auto hot = entries_at(report["hot_spots"], kSendBoth);
    REQUIRE(hot.size() == 1);
    CHECK(hot[0]["where"]["function"] == kSendBoth);
    bool noted = false;
    for (const auto& n : report["notes"]) noted |= n.get<std::string>().find("named by function") != std::string::npos;
    CHECK(noted);
    // the gate pairs the function's site with itself
    auto gate = run_command(mpiadvise_cmd() + " gate --baseline " + quoted(run.dir) + " --candidate " + quoted(run.dir));
    CHECK(gate.status == 0);
  }
}

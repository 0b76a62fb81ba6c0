// mpiadvise gate on real runs under Open MPI's TCP transport: a message grown past S on purpose at one
// call site fails the gate naming that site; an unchanged rerun passes; the same log gives the same
// modelled figures; budgets; JUnit XML, Markdown and JSON; malformed input exits 2.
#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>

#include <nlohmann/json.hpp>

#include "support.hpp"

using namespace mpa_test;
using json = nlohmann::json;

namespace {

std::string mpiadvise_cmd() { return (build_dir() / "bin" / "mpiadvise").string(); }

fs::path traced(const std::string& a_bytes, const std::string& b_bytes) {
  JobSpec s;
  s.program = "two_sites";
  s.args = {a_bytes, b_bytes, "10", "2"};
  s.mpirun_options = {"--mca", "pml", "ob1", "--mca", "btl", "self,tcp"};
  auto run = run_job(s);
  INFO(run.err);
  REQUIRE(run.status == 0);
  return run.dir;
}

// The line of tests/programs/two_sites.c that holds needle.
std::string site_line(const std::string& needle) {
  std::ifstream in(fs::path(MPA_SOURCE_DIR) / "tests" / "programs" / "two_sites.c");
  std::string line;
  for (int n = 1; std::getline(in, line); n++)
    if (line.find(needle) != std::string::npos) return "two_sites.c:" + std::to_string(n);
  return "?";
}

const json* check_named(const json& gate, const std::string& group, const std::string& part) {
  for (const auto& c : gate["checks"])
    if (c["group"] == group && c["name"].get<std::string>().find(part) != std::string::npos) return &c;
  return nullptr;
}

}  // namespace

TEST_CASE("a message grown past S at one call site fails the gate naming that site; an unchanged rerun passes",
          "[gate]") {
  const fs::path base = traced("4096", "4096");
  const fs::path rerun = traced("4096", "4096");
  const fs::path grown = traced("4096", "131072");  // site B's message past S = 65480
  const fs::path out = fresh_dir("gate");
  const std::string site_a = site_line("site A"), site_b = site_line("site B");

  // the baseline as a report file, the candidate as logs: both forms are read
  auto rep = run_command(mpiadvise_cmd() + " report --format json -o " + (out / "base.json").string() + " " + base.string());
  REQUIRE(rep.status == 0);

  auto pass = run_command(mpiadvise_cmd() + " gate --baseline " + (out / "base.json").string() + " --candidate " +
                          rerun.string() + " --json " + (out / "pass.json").string());
  INFO(pass.out << pass.err);
  CHECK(pass.status == 0);
  CHECK(pass.out.find("mpiadvise gate: passed") != std::string::npos);

  auto fail = run_command(mpiadvise_cmd() + " gate --baseline " + (out / "base.json").string() + " --candidate " +
                          grown.string() + " --junit " + (out / "gate.xml").string() + " --markdown " +
                          (out / "gate.md").string() + " --json " + (out / "fail.json").string());
  INFO(fail.out << fail.err);
  CHECK(fail.status == 1);
  CHECK(fail.out.find("mpiadvise gate: FAILED") != std::string::npos);
  json g = json::parse(read_text(out / "fail.json"));
  CHECK(g["schema"] == "mpiadvise-gate/1");
  CHECK(g["passed"] == false);
  const json* b = check_named(g, "sites", site_b);
  REQUIRE(b != nullptr);
  CHECK((*b)["failed"] == true);
  CHECK((*b)["message"].get<std::string>().find(site_b) != std::string::npos);
  CHECK((*b)["message"].get<std::string>().find("rendezvous messages 0 -> 10") != std::string::npos);
  const json* a = check_named(g, "sites", site_a);
  CHECK((a == nullptr || (*a)["failed"] == false));  // the other site is unchanged
  CHECK((*check_named(g, "metrics", "rendezvous_messages"))["failed"] == true);
  CHECK((*check_named(g, "metrics", "send_wait"))["failed"] == true);
  // the receiver's computation bounds the run either way: the run time did not regress
  CHECK((*check_named(g, "metrics", "predicted_time"))["failed"] == false);
  CHECK(fail.out.find("regression: ") != std::string::npos);
  CHECK(fail.out.find(site_b) != std::string::npos);

  // JUnit XML as GitLab and Jenkins read it: well-formed, a test case per metric and per hot site
  auto xml = run_command("python3 -c \"import xml.etree.ElementTree as E; r = E.parse('" + (out / "gate.xml").string() +
                         "').getroot(); s = r.find('testsuite'); "
                         "print(r.tag, s.get('tests'), s.get('failures'), "
                         "sum(1 for c in s.iter('testcase') if c.find('failure') is not None))\"");
  INFO(xml.err);
  REQUIRE(xml.status == 0);
  const size_t n_checks = g["checks"].size();
  size_t n_failed = 0;
  for (const auto& c : g["checks"]) n_failed += c["failed"].get<bool>();
  CHECK(xml.out == "testsuites " + std::to_string(n_checks) + " " + std::to_string(n_failed) + " " +
                       std::to_string(n_failed) + "\n");
  const std::string xml_text = read_text(out / "gate.xml");
  CHECK(xml_text.find(site_b) != std::string::npos);
  const std::string md = read_text(out / "gate.md");
  CHECK(md.find("### mpiadvise gate: failed") != std::string::npos);
  CHECK(md.find("**FAIL**") != std::string::npos);
  CHECK(md.find(site_b) != std::string::npos);

  // budgets, without a baseline
  auto within = run_command(mpiadvise_cmd() + " gate --candidate " + base.string() + " --budget 'send_wait<=5%' --budget "
                            "'rendezvous_messages<=0'");
  INFO(within.out << within.err);
  CHECK(within.status == 0);
  auto over = run_command(mpiadvise_cmd() + " gate --candidate " + grown.string() + " --budget 'send_wait<=5%'");
  INFO(over.out << over.err);
  CHECK(over.status == 1);
  CHECK(over.out.find("send_wait<=5%") != std::string::npos);
  // --metric restricts the checks
  auto only = run_command(mpiadvise_cmd() + " gate --baseline " + base.string() + " --candidate " + grown.string() +
                          " --metric predicted_time");
  INFO(only.out << only.err);
  CHECK(only.status == 0);
}

TEST_CASE("the same log gives the same modelled figures: gated against itself, nothing changes", "[gate]") {
  const fs::path dir = traced("4096", "131072");
  const fs::path out = fresh_dir("gate-same") / "same.json";
  auto r = run_command(mpiadvise_cmd() + " gate --baseline " + dir.string() + " --candidate " + dir.string() +
                       " --max-regression 0% --json " + out.string());
  INFO(r.out << r.err);
  CHECK(r.status == 0);
  json g = json::parse(read_text(out));
  REQUIRE(g["checks"].size() >= 5);
  for (const auto& c : g["checks"]) {
    INFO(c.dump());
    CHECK(c["baseline"] == c["candidate"]);
  }
}

TEST_CASE("malformed gate input exits 2 with a one-line message naming it", "[gate][errors]") {
  const fs::path dir = fresh_dir("gate-bad");
  {
    std::ofstream(dir / "not.json") << "{ this is not json";
    std::ofstream(dir / "other.json") << R"({"schema": "something-else/3"})";
    std::ofstream(dir / "partial.json") << R"({"schema": "mpiadvise-report/1", "summary": {}})";
  }
  const fs::path logs = traced("4096", "131072");
  {
    // a real report with one site's location removed, and one with a count made a string
    auto r = run_command(mpiadvise_cmd() + " report --format json " + logs.string());
    REQUIRE(r.status == 0);
    json j = json::parse(r.out);
    REQUIRE(!j["sites"].empty());
    json no_where = j;
    no_where["sites"][0].erase("where");
    std::ofstream(dir / "no-where.json") << no_where.dump();
    json bad_count = j;
    bad_count["model"]["rendezvous_messages"] = "ten";
    std::ofstream(dir / "bad-count.json") << bad_count.dump();
  }
  struct Case {
    std::string args, expect;
  };
  const std::vector<Case> cases = {
      {"--baseline /nonexistent/a --candidate " + logs.string(), "/nonexistent/a"},
      {"--baseline " + (dir / "not.json").string() + " --candidate " + logs.string(), "not JSON"},
      {"--baseline " + (dir / "other.json").string() + " --candidate " + logs.string(), "something-else/3"},
      {"--baseline " + (dir / "partial.json").string() + " --candidate " + logs.string(), "has no"},
      {"--baseline " + logs.string() + " --candidate " + logs.string() + " --max-regression lots", "lots"},
      {"--candidate " + logs.string() + " --budget 'bogus<=3%'", "bogus"},
      {"--candidate " + logs.string() + " --budget 'send_wait<=3'", "unit"},
      {"--candidate " + logs.string() + " --budget 'send_wait<=5B'", "unit"},
      {"--candidate " + logs.string() + " --budget 'rendezvous_messages<=1K'", "count"},
      {"--baseline " + (dir / "no-where.json").string() + " --candidate " + logs.string(), "sites[0].where"},
      {"--baseline " + (dir / "bad-count.json").string() + " --candidate " + logs.string(), "model.rendezvous_messages"},
      {"--candidate " + logs.string(), "--baseline"},
      {"--baseline " + logs.string() + " --candidate " + logs.string() + " --metric speed", "speed"},
      {"--baseline " + logs.string(), "candidate"},
      {"--baseline " + logs.string() + " --candidate " + logs.string() + " --junit /nonexistent/dir/j.xml", "/nonexistent/dir/j.xml"},
  };
  for (const auto& c : cases) {
    auto r = run_command(mpiadvise_cmd() + " gate " + c.args);
    INFO(c.args << "\n" << r.out << r.err);
    CHECK(r.status == 2);
    CHECK(r.err.find(c.expect) != std::string::npos);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') <= 2);  // the message (and CLI11's pointer to --help)
  }
}

TEST_CASE("the CI examples' script traces both builds and gates them", "[gate][ci]") {
  const fs::path out = fresh_dir("gate-ci");
  const std::string program = program_path("two_sites").string();
  const std::string env = "MPIADVISE='" + mpiadvise_cmd() + "' OUT='" + out.string() +
                          "' MPIRUN='mpirun --allow-run-as-root --oversubscribe --mca pml ob1 --mca btl self,tcp' ";
  const std::string script = (fs::path(MPA_SOURCE_DIR) / "docs" / "ci" / "mpi-gate.sh").string();
  auto same = run_command(env + script + " '" + program + " 4096 4096' '" + program + " 4096 4096'");
  INFO(same.out << same.err);
  CHECK(same.status == 0);
  for (const char* f : {"report.json", "report.md", "gate.xml", "gate.md", "gate.json"}) CHECK(fs::exists(out / f));
  auto grown = run_command(env + script + " '" + program + " 4096 4096' '" + program + " 4096 131072'");
  INFO(grown.out << grown.err);
  CHECK(grown.status == 1);
  CHECK(read_text(out / "gate.md").find(site_line("site B")) != std::string::npos);
  auto usage = run_command(env + script + " only-one");
  CHECK(usage.status == 2);
}

TEST_CASE("a hot site whose line moved (code added above it) is still compared with itself", "[gate]") {
  const fs::path logs = traced("4096", "131072");
  auto r = run_command(mpiadvise_cmd() + " report --format json " + logs.string());
  REQUIRE(r.status == 0);
  json base = json::parse(r.out), moved = base;
  size_t changed = 0;
  for (auto& site : moved["sites"]) {
    if (!site["where"].contains("line")) continue;
    const int line = site["where"]["line"].get<int>();
    const std::string file = site["where"]["file"].get<std::string>();
    // one line added above: each send site moves onto the line the next one had
    site["where"]["line"] = line + 1;
    std::string text = site["where"]["text"].get<std::string>();
    text.replace(text.find(":" + std::to_string(line)), std::to_string(line).size() + 1, ":" + std::to_string(line + 1));
    site["where"]["text"] = text;
    changed++;
  }
  REQUIRE(changed > 0);
  const fs::path dir = fresh_dir("gate-moved");
  std::ofstream(dir / "base.json") << base.dump();
  std::ofstream(dir / "moved.json") << moved.dump();
  auto g = run_command(mpiadvise_cmd() + " gate --baseline " + (dir / "base.json").string() + " --candidate " +
                       (dir / "moved.json").string() + " --max-regression 0%");
  INFO(g.out << g.err);
  CHECK(g.status == 0);
  CHECK(g.out.find(" new ") == std::string::npos);

  // one send site removed and another added in the same function: not paired with each other
  json swapped = base;
  json kept = json::array();
  for (auto& site : swapped["sites"])
    if (site["rendezvous_messages"].get<double>() > 0) {  // site B stays; site A goes, and a new one comes
      kept.push_back(site);
      json added = site;
      added["where"]["line"] = site["where"]["line"].get<int>() + 40;
      std::string text = site["where"]["text"].get<std::string>();
      const std::string at = ":" + std::to_string(site["where"]["line"].get<int>());
      text.replace(text.find(at), at.size(), ":" + std::to_string(site["where"]["line"].get<int>() + 40));
      added["where"]["text"] = text;
      kept.push_back(added);
    }
  swapped["sites"] = kept;
  std::ofstream(dir / "swapped.json") << swapped.dump();
  auto s2 = run_command(mpiadvise_cmd() + " gate --baseline " + (dir / "base.json").string() + " --candidate " +
                        (dir / "swapped.json").string() + " --metric sites --json " + (dir / "swapped-gate.json").string());
  INFO(s2.out << s2.err);
  CHECK(s2.status == 1);  // the added site is new
  json sg = json::parse(read_text(dir / "swapped-gate.json"));
  size_t fresh = 0, same = 0;
  for (const auto& c : sg["checks"]) {
    if (c["baseline"] == 0 && c["candidate"].get<double>() > 0) fresh++;
    if (c["baseline"] == c["candidate"] && c["candidate"].get<double>() > 0) same++;
  }
  CHECK(fresh == 1);  // the new site
  CHECK(same == 1);   // site B against itself
}

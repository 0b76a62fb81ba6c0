// The documentation keeps up with the code: every subcommand of the built mpiadvise has its man page
// man/mpiadvise-SUB.1 naming each long option the subcommand accepts, and is in README.md; the
// options of mpiadvise itself are in man/mpiadvise.1 (which lists run and dump and refers to the pages
// of further commands, so it is not required to name every subcommand); every MPIADVISE* variable
// that libtrace/core.c reads is in man/libmpiadvise.7 and README.md.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cctype>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "support.hpp"

using namespace mpa_test;

namespace {

const fs::path kSource = MPA_SOURCE_DIR;

fs::path mpiadvise_bin() { return build_dir() / "bin" / "mpiadvise"; }

// A man page as a reader sees the words: roff escapes for hyphens and fonts removed, so that
// "\-\-stack\-depth" and "\fB\-\-rank\fR" are found as "--stack-depth" and "--rank".
std::string man_text(const fs::path& page) {
  std::string s = read_text(page);
  static const std::regex fonts(R"(\\f(\[[^\]]*\]|\(..|.))");
  s = std::regex_replace(s, fonts, "");
  static const std::vector<std::pair<std::string, std::string>> escapes = {
      {"\\-", "-"}, {"\\&", ""}, {"\\%", ""}, {"\\(hy", "-"}, {"\\e", "\\"}};
  for (const auto& [from, to] : escapes) {
    for (size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
      s.replace(at, from.size(), to);
  }
  return s;
}

// Whole words only: "--rank" must not be found inside "--ranks", "MPIADVISE_DIR" not inside
// "MPIADVISE_DIRECTORY".
bool mentions(const std::string& text, const std::string& word) {
  auto is_word = [](char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-'; };
  for (size_t at = text.find(word); at != std::string::npos; at = text.find(word, at + 1)) {
    bool start_ok = at == 0 || !is_word(text[at - 1]) || word[0] == '-';
    bool end_ok = at + word.size() >= text.size() || !is_word(text[at + word.size()]);
    if (start_ok && end_ok) return true;
  }
  return false;
}

std::string help_of(const std::string& args) {
  auto r = run_command("'" + mpiadvise_bin().string() + "' " + args);
  INFO("mpiadvise " << args << ": " << r.err);
  REQUIRE(r.status == 0);
  return r.out;
}

// The subcommands listed under "Subcommands:" in mpiadvise --help.
std::vector<std::string> subcommands() {
  std::istringstream in(help_of("--help"));
  std::vector<std::string> subs;
  bool in_list = false;
  static const std::regex entry(R"(^\s+([a-z][a-z0-9-]*)\b.*)");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("Subcommands:", 0) == 0) {
      in_list = true;
      continue;
    }
    if (!in_list) continue;
    if (line.empty()) break;
    std::smatch m;
    if (std::regex_match(line, m, entry)) subs.push_back(m[1]);
  }
  return subs;
}

// Every long option named in a help text (--rank, --format, --help, ...).
std::set<std::string> long_options(const std::string& help) {
  std::set<std::string> opts;
  static const std::regex option(R"((^|[\s,\[])(--[a-z][a-z0-9-]*))");
  for (std::sregex_iterator it(help.begin(), help.end(), option), end; it != end; ++it) opts.insert((*it)[2]);
  return opts;
}

// The MPIADVISE* variables the tracer reads: getenv("MPIADVISE...") in libtrace/core.c.
std::set<std::string> tracer_variables() {
  std::string core = read_text(kSource / "libtrace" / "core.c");
  std::set<std::string> vars;
  static const std::regex getenv_call(R"re(getenv\s*\(\s*"(MPIADVISE[A-Z0-9_]*)"\s*\))re");
  for (std::sregex_iterator it(core.begin(), core.end(), getenv_call), end; it != end; ++it) vars.insert((*it)[1]);
  return vars;
}

}  // namespace

TEST_CASE("the help of mpiadvise lists its subcommands", "[docs]") {
  auto subs = subcommands();
  CHECK(subs.size() >= 2);
  CHECK(std::find(subs.begin(), subs.end(), "run") != subs.end());
  CHECK(std::find(subs.begin(), subs.end(), "dump") != subs.end());
}

TEST_CASE("every subcommand and each of its long options is documented", "[docs]") {
  const std::string readme = read_text(kSource / "README.md");
  const std::string main_page = man_text(kSource / "man" / "mpiadvise.1");
  REQUIRE(!readme.empty());
  REQUIRE(!main_page.empty());
  for (const auto& opt : long_options(help_of("--help"))) {
    INFO("mpiadvise " << opt << " in man/mpiadvise.1");
    CHECK(mentions(main_page, opt));
  }
  for (const auto& sub : subcommands()) {
    INFO("subcommand " << sub);
    CHECK(mentions(readme, "mpiadvise " + sub));
    const fs::path page = kSource / "man" / ("mpiadvise-" + sub + ".1");
    INFO("man page " << page.string());
    CHECK(fs::exists(page));
    const std::string text = man_text(page);
    auto opts = long_options(help_of(sub + " --help"));
    CHECK(!opts.empty());
    for (const auto& opt : opts) {
      INFO("option " << opt);
      CHECK(mentions(text, opt));
    }
  }
}

TEST_CASE("every MPIADVISE variable the tracer reads is documented", "[docs]") {
  auto vars = tracer_variables();
  // the six settings of the README's table at the time of writing; more may come
  CHECK(vars.size() >= 6);
  CHECK(vars.count("MPIADVISE"));
  CHECK(vars.count("MPIADVISE_DIR"));
  const std::string readme = read_text(kSource / "README.md");
  const std::string page = man_text(kSource / "man" / "libmpiadvise.7");
  REQUIRE(!page.empty());
  for (const auto& v : vars) {
    INFO("variable " << v);
    CHECK(mentions(page, v));
    CHECK(mentions(readme, v));
  }
}

TEST_CASE("the man pages render without warnings", "[docs]") {
  auto groff = run_command("command -v groff");
  if (groff.status != 0) {
    WARN("groff is not installed; rendering not checked");
    return;
  }
  static const std::regex man_name(R"(.+\.[1-8])");
  for (const auto& entry : fs::directory_iterator(kSource / "man")) {
    const std::string name = entry.path().filename().string();
    if (!std::regex_match(name, man_name)) continue;
    INFO("man/" << name);
    auto r = run_command("groff -man -ww -z '" + entry.path().string() + "'");
    CHECK(r.status == 0);
    CHECK(r.err.empty());
    // plain text, without the overstriking that makes bold "NAME" into "NNAAMMEE"
    auto text = run_command("groff -man -Tutf8 -P-cbou '" + entry.path().string() + "'");
    CHECK(text.status == 0);
    CHECK(text.out.find("\nNAME\n") != std::string::npos);
    CHECK(text.out.find("\nSEE ALSO\n") != std::string::npos);
  }
}

// Strings from the job through analyzer/text_escape.hpp: kept as bytes, written losslessly in JSON,
// escaped for a terminal and for Markdown.
#include <catch2/catch.hpp>

#include <cstdio>
#include <random>
#include <string>

#include "text_escape.hpp"

using namespace mpiadvise;
using nlohmann::json;

TEST_CASE("UTF-8 is told from other bytes as the standard defines it", "[strings]") {
  CHECK(valid_utf8(""));
  CHECK(valid_utf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"));
  CHECK_FALSE(valid_utf8("caf\xe9"));               // Latin-1
  CHECK_FALSE(valid_utf8("\xc0\xaf"));              // overlong '/'
  CHECK_FALSE(valid_utf8("\xed\xa0\x80"));          // a surrogate
  CHECK_FALSE(valid_utf8("\xf4\x90\x80\x80"));      // above U+10FFFF
  CHECK_FALSE(valid_utf8("\xe2\x82"));              // cut short
  CHECK_FALSE(valid_utf8("\x80"));                  // a lone continuation byte
}

TEST_CASE("the JSON form of a string: UTF-8 as it is, other bytes escaped and decoded back", "[strings]") {
  CHECK(json_string_form("/usr/bin/app") == "/usr/bin/app");
  CHECK(json_string_form("caf\xc3\xa9 100%") == "caf\xc3\xa9 100%");
  CHECK(json_string_form("/tmp/caf\xe9") == std::string("\0/tmp/caf%E9", 12));
  CHECK(json_string_form("\xff 100%") == std::string("\0%FF 100%25", 11));
  CHECK(json_string_form(std::string("\0x", 2)) == std::string("\0%00x", 5));  // a leading U+0000 is escaped too
  CHECK(bytes_of_json_string(std::string("\0/tmp/caf%E9", 12)) == "/tmp/caf\xe9");
  CHECK(bytes_of_json_string(std::string("\0bad %G1", 8)) == std::string("\0bad %G1", 8));  // malformed: as it is
  // every byte string round-trips through a JSON document, and the document is valid UTF-8
  std::mt19937_64 rng(11);
  for (int i = 0; i < 2000; i++) {
    std::string s(rng() % 24, '\0');
    for (auto& c : s) c = static_cast<char>(rng() % 4 ? 'a' + rng() % 26 : rng() % 256);
    json j = {{"program", s}, {s, {s, 1}}};
    std::string text = dump_json(j);
    REQUIRE(valid_utf8(text));
    json back = json::parse(text);
    decode_json_strings(back);
    CHECK(back == j);
  }
}

TEST_CASE("the tracer's JSON strings are the JSON form the reader decodes", "[strings]") {
  // what libtrace/metadata.c writes for "/tmp/caf\xe9 100%", and for valid UTF-8 with a control character
  json j = json::parse(R"({"program":"\u0000/tmp/caf%E9 100%25","host":"n\u00e9\n"})");
  decode_json_strings(j);
  CHECK(j["program"] == "/tmp/caf\xe9 100%");
  CHECK(j["host"] == "n\xc3\xa9\n");
}

TEST_CASE("text for a terminal: control characters, C1, bidi overrides and stray bytes are visible", "[strings]") {
  CHECK(terminal_text("plain caf\xc3\xa9") == "plain caf\xc3\xa9");
  CHECK(terminal_text("\x1b[31mred\x1b[0m") == "\\x1b[31mred\\x1b[0m");
  CHECK(terminal_text("a\nb\tc\r") == "a\\nb\\tc\\r");
  CHECK(terminal_text("a\nb", true) == "a\nb");
  CHECK(terminal_text("caf\xe9\x7f") == "caf\\xe9\\x7f");
  CHECK(terminal_text("\xc2\x9b") == "\\u{9b}");          // C1 CSI
  CHECK(terminal_text("\xe2\x80\xae") == "\\u{202e}");    // right-to-left override
}

TEST_CASE("Markdown: specials escaped in text, code spans that hold any backticks", "[strings]") {
  CHECK(markdown_text("a|b *c* _d_ `e`") == "a\\|b \\*c\\* \\_d\\_ \\`e\\`");
  CHECK(markdown_text("std::vector<int>", "<>") == "std::vector\\<int\\>");
  CHECK(markdown_text("\x1b[2J") == "\\\\x1b\\[2J");  // the terminal escape, its backslash escaped for Markdown
  CHECK(markdown_code("main.c:12") == "`main.c:12`");
  CHECK(markdown_code("a`b") == "``a`b``");
  CHECK(markdown_code("`x`") == "`` `x` ``");
  CHECK(markdown_code("op|or", true) == "`op\\|or`");
}

TEST_CASE("a shell word: plain paths as they are, anything else single-quoted", "[strings]") {
  CHECK(shell_word("examples/halo.c:25") == "examples/halo.c:25");
  CHECK(shell_word("/tmp/job-1,2@x") == "/tmp/job-1,2@x");
  CHECK(shell_word("my job") == "'my job'");
  CHECK(shell_word("it's") == "'it'\\''s'");
  CHECK(shell_word("$(rm -rf ~)") == "'$(rm -rf ~)'");
  CHECK(shell_word("") == "''");
  // what a POSIX shell makes of the quoted word is the word
  for (const std::string s : {"my job", "it's", "a\"b", "$HOME `x` \\n", "new\nline"}) {
    const std::string quoted = shell_word(s);
    std::string out;
    FILE* p = popen(("printf %s " + quoted).c_str(), "r");
    REQUIRE(p != nullptr);
    char buf[256];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
    pclose(p);
    CHECK(out == s);
  }
}

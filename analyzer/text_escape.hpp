// Strings from the job (program and module paths, environment, host names, function names from debug
// information) are bytes, not necessarily UTF-8, and may hold control characters. They are kept as
// they are and escaped where they are output: for JSON, for Markdown, for a terminal.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

namespace mpiadvise {

// Well-formed UTF-8 (no overlong forms, no surrogates, nothing above U+10FFFF).
bool valid_utf8(std::string_view s);

// ---- JSON ------------------------------------------------------------------------------------------
// The string a JSON document holds for some bytes (mpiadvise-log(5), STRINGS): valid UTF-8 not
// beginning with U+0000 as it is; anything else as U+0000 followed by the bytes with '%' and every
// byte that is not part of a valid UTF-8 sequence (and U+0000) written %HH. The tracer writes the same.
std::string json_string_form(std::string_view bytes);
// The bytes a JSON string stands for: the inverse of json_string_form. A string in the escaped form
// that is malformed (a '%' without two hex digits after it) is returned as it is.
std::string bytes_of_json_string(std::string_view s);
// Every string and key of j in json_string_form: j then dumps without error whatever it holds.
nlohmann::json json_safe(nlohmann::json j);
// j.dump(indent) that never throws on bytes from the job. j is made safe in place: a document passed as
// a temporary is not copied (a report of 4096 ranks: 7 MiB of JSON, its copy took 16 MB more at the peak).
std::string dump_json(nlohmann::json j, int indent = -1);
// Every string and key of j (parsed from a log) decoded back to its bytes.
void decode_json_strings(nlohmann::json& j);

// ---- terminal ---------------------------------------------------------------------------------------
// Text safe to print: control characters (C0, DEL, C1), bidirectional overrides and bytes that are
// not UTF-8 written as visible escapes (\n, \t, \x1b, \u{202e}); printable UTF-8 as it is.
// keep_newlines: '\n' passes through (for a whole rendered document).
std::string terminal_text(std::string_view s, bool keep_newlines = false);

// ---- shell -------------------------------------------------------------------------------------------
// One word for a POSIX shell: as it is when it holds only letters, digits and _ . / : = + - @ % ,;
// else in single quotes, each ' written '\''.
std::string shell_word(std::string_view s);

// ---- Markdown ----------------------------------------------------------------------------------------
// Running text: terminal_text, with a backslash before each of `specials` (in a table cell also '|').
std::string markdown_text(std::string_view s, const char* specials = "|*_`[]<>\\");
// A code span holding s exactly (backticks in s are fenced by a longer run); in_table: '|' escaped,
// which GitHub's tables require even inside code spans.
std::string markdown_code(std::string_view s, bool in_table = false);

}  // namespace mpiadvise

#include "text_escape.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace mpiadvise {

namespace {

// Length of the well-formed UTF-8 sequence at s[i] (1 to 4), or 0 when s[i] does not start one;
// *cp receives the code point.
size_t utf8_sequence(std::string_view s, size_t i, uint32_t* cp) {
  const auto b = [&](size_t k) { return static_cast<uint8_t>(s[k]); };
  uint8_t c = b(i);
  if (c < 0x80) {
    *cp = c;
    return 1;
  }
  size_t n;
  uint32_t v, min;
  if ((c & 0xe0) == 0xc0) n = 2, v = c & 0x1f, min = 0x80;
  else if ((c & 0xf0) == 0xe0) n = 3, v = c & 0x0f, min = 0x800;
  else if ((c & 0xf8) == 0xf0) n = 4, v = c & 0x07, min = 0x10000;
  else return 0;
  if (i + n > s.size()) return 0;
  for (size_t k = 1; k < n; k++) {
    if ((b(i + k) & 0xc0) != 0x80) return 0;
    v = v << 6 | (b(i + k) & 0x3f);
  }
  if (v < min || v > 0x10ffff || (v >= 0xd800 && v <= 0xdfff)) return 0;
  *cp = v;
  return n;
}

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

bool needs_escaped_form(std::string_view s) { return (!s.empty() && s[0] == '\0') || !valid_utf8(s); }

// Applies f to every string value and key of j, depth first (j is a document of bounded depth).
template <class F>
void map_strings(nlohmann::json& j, const F& f) {
  if (j.is_string()) {
    j = f(j.get_ref<const std::string&>());
  } else if (j.is_array()) {
    for (auto& e : j) map_strings(e, f);
  } else if (j.is_object()) {
    bool keys_change = false;
    for (auto& [key, value] : j.items()) {
      map_strings(value, f);
      keys_change |= f(key) != key;
    }
    if (keys_change) {
      nlohmann::json renamed = nlohmann::json::object();
      for (auto& [key, value] : j.items()) renamed[f(key)] = std::move(value);
      j = std::move(renamed);
    }
  }
}

}  // namespace

bool valid_utf8(std::string_view s) {
  uint32_t cp;
  for (size_t i = 0; i < s.size();) {
    size_t n = utf8_sequence(s, i, &cp);
    if (!n) return false;
    i += n;
  }
  return true;
}

std::string json_string_form(std::string_view bytes) {
  if (!needs_escaped_form(bytes)) return std::string(bytes);
  std::string out(1, '\0');
  uint32_t cp;
  for (size_t i = 0; i < bytes.size();) {
    size_t n = utf8_sequence(bytes, i, &cp);
    if (n == 0 || bytes[i] == '%' || bytes[i] == '\0') {
      out += fmt::format("%{:02X}", static_cast<uint8_t>(bytes[i]));
      i++;
    } else {
      out.append(bytes.substr(i, n));
      i += n;
    }
  }
  return out;
}

std::string bytes_of_json_string(std::string_view s) {
  if (s.empty() || s[0] != '\0') return std::string(s);
  std::string out;
  for (size_t i = 1; i < s.size(); i++) {
    if (s[i] != '%') {
      out += s[i];
      continue;
    }
    int hi = i + 2 < s.size() ? hex_value(s[i + 1]) : -1, lo = i + 2 < s.size() ? hex_value(s[i + 2]) : -1;
    if (hi < 0 || lo < 0) return std::string(s);
    out += static_cast<char>(hi << 4 | lo);
    i += 2;
  }
  return out;
}

nlohmann::json json_safe(nlohmann::json j) {
  map_strings(j, [](const std::string& s) { return json_string_form(s); });
  return j;
}

std::string dump_json(nlohmann::json j, int indent) { return json_safe(std::move(j)).dump(indent); }

void decode_json_strings(nlohmann::json& j) {
  map_strings(j, [](const std::string& s) { return bytes_of_json_string(s); });
}

std::string terminal_text(std::string_view s, bool keep_newlines) {
  std::string out;
  out.reserve(s.size());
  uint32_t cp;
  for (size_t i = 0; i < s.size();) {
    size_t n = utf8_sequence(s, i, &cp);
    if (n == 0) {
      out += fmt::format("\\x{:02x}", static_cast<uint8_t>(s[i]));
      i++;
      continue;
    }
    if (cp == '\n' && keep_newlines) out += '\n';
    else if (cp == '\n') out += "\\n";
    else if (cp == '\t') out += "\\t";
    else if (cp == '\r') out += "\\r";
    else if (cp < 0x20 || cp == 0x7f) out += fmt::format("\\x{:02x}", cp);
    else if ((cp >= 0x80 && cp <= 0x9f) || (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069))
      out += fmt::format("\\u{{{:x}}}", cp);
    else out.append(s.substr(i, n));
    i += n;
  }
  return out;
}

std::string markdown_text(std::string_view s, const char* specials) {
  std::string out;
  for (char c : terminal_text(s)) {
    for (const char* p = specials; *p; p++)
      if (c == *p) out += '\\';
    out += c;
  }
  return out;
}

std::string markdown_code(std::string_view s, bool in_table) {
  std::string text = terminal_text(s);
  if (in_table) {
    std::string cell;
    for (char c : text) {
      if (c == '|') cell += '\\';
      cell += c;
    }
    text = std::move(cell);
  }
  size_t longest = 0, run = 0;
  for (char c : text) {
    run = c == '`' ? run + 1 : 0;
    longest = std::max(longest, run);
  }
  const std::string fence(longest + 1, '`');
  // a space inside the fence when the text begins or ends with a backtick (CommonMark strips one)
  const bool pad = !text.empty() && (text.front() == '`' || text.back() == '`');
  return fence + (pad ? " " : "") + text + (pad ? " " : "") + fence;
}

std::string shell_word(std::string_view s) {
  const bool plain = !s.empty() && std::all_of(s.begin(), s.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           std::string_view("_./:=+-@%,").find(c) != std::string_view::npos;
  });
  if (plain) return std::string(s);
  std::string out = "'";
  for (char c : s) out += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return out + "'";
}

}  // namespace mpiadvise

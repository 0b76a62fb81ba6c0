// Numbers for people: durations, seconds, bytes.
#pragma once

#include <fmt/format.h>

#include <cmath>
#include <cstdint>
#include <string>

#include "text_escape.hpp"

namespace mpiadvise::cli {

inline std::string duration_text(uint64_t ns) {
  if (ns < 10'000) return fmt::format("{} ns", ns);
  if (ns < 10'000'000) return fmt::format("{:.1f} us", static_cast<double>(ns) / 1e3);
  if (ns < 10'000'000'000ull) return fmt::format("{:.2f} ms", static_cast<double>(ns) / 1e6);
  return fmt::format("{:.3f} s", static_cast<double>(ns) / 1e9);
}

// A computed duration: "-" where it is not a finite number, clamped at 0 and at 2^64 - 1 ns, so that no
// value converts to an integer outside its range.
inline std::string duration_text(double ns) {
  if (!(ns == ns) || ns == HUGE_VAL || ns == -HUGE_VAL) return "-";
  if (ns <= 0) return duration_text(uint64_t{0});
  if (ns >= 1.8e19) return duration_text(UINT64_MAX);
  return duration_text(static_cast<uint64_t>(ns));
}

inline std::string seconds_text(uint64_t ns) { return fmt::format("{:.6f} s", static_cast<double>(ns) / 1e9); }

inline std::string bytes_text(uint64_t b) {
  if (b < 10 * 1024) return fmt::format("{} B", b);
  if (b < 10 * 1024 * 1024) return fmt::format("{:.1f} KiB", static_cast<double>(b) / 1024);
  if (b < 10ull * 1024 * 1024 * 1024) return fmt::format("{:.1f} MiB", static_cast<double>(b) / (1024 * 1024));
  return fmt::format("{:.2f} GiB", static_cast<double>(b) / (1024.0 * 1024 * 1024));
}

// Markdown: a backslash before each of the characters given (for a table cell that holds code spans,
// only "|"; in running text also the emphasis and code characters), control characters and bytes that
// are not UTF-8 escaped (analyzer/text_escape.hpp).
inline std::string markdown_escape(const std::string& s, const char* specials = "|*_`") { return markdown_text(s, specials); }

}  // namespace mpiadvise::cli

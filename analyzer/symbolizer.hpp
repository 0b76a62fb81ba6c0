// Call sites to source lines and functions, offline, with elfutils libdwfl: the line from DWARF (in the
// file itself or in a separate debug file found by build ID or .gnu_debuglink), the function from the
// ELF symbol tables (.symtab, else .dynsym), demangled; module+offset where neither is known.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "log_reader.hpp"

namespace mpiadvise {

struct SourceLocation {
  std::string module;    // path of the executable or library
  uint64_t offset = 0;   // address - load base
  std::string function;  // demangled; empty when unknown
  uint64_t function_offset = 0;  // the function's entry - load base (when function is known)
  std::string file;      // empty when there is no line information
  int line = 0;
  // "file:line (function)", "function in module" (no line: the site is the whole function), or
  // "module+0xoffset" (neither).
  std::string text() const;
  bool function_only() const { return file.empty() && !function.empty(); }
};

// The directories to search for separate debug files besides the defaults (the program's directory,
// its .debug subdirectory, /usr/lib/debug and its .build-id tree): those given (each must exist), then
// those of env_path (colon-separated, as MPIADVISE_DEBUG_PATH; ones that do not exist are skipped), made
// absolute. Throws std::invalid_argument naming a given directory that does not exist or has a ':' in
// its name (libdw's path separator).
std::vector<std::string> debug_dirs(const std::vector<std::string>& given, const char* env_path);

class Symbolizer {
 public:
  // debug_dirs: absolute directories searched first for separate debug files (see debug_dirs()).
  explicit Symbolizer(const std::vector<Module>& modules, const std::vector<std::string>& debug_dirs = {});
  ~Symbolizer();
  Symbolizer(const Symbolizer&) = delete;
  Symbolizer& operator=(const Symbolizer&) = delete;
  // A return address: the call instruction before it is what is looked up.
  SourceLocation locate_return_address(uint64_t address);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace mpiadvise

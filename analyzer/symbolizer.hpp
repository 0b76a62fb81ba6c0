// Call sites to source lines and functions, offline, with elfutils libdwfl: the line from DWARF (in the
// file itself or in a separate debug file found by build ID or .gnu_debuglink), the function from the
// ELF symbol tables (.symtab, else .dynsym), demangled; module+offset where neither is known.
#pragma once

#include <cstdint>
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

// What the symbolizers of one job share: each module file's symbol tables and lines, read once however
// many ranks map it, and every location found, by file and offset. A job of 64 ranks symbolized rank by
// rank held 64 copies of the same files' DWARF (309 MB of libdw's for mpiadvise-synth's logs). The
// ranks' load addresses differ; a file at one path is taken to be the same file on every rank, as call
// sites are (trace.hpp: SiteKey). Safe to call from several threads.
class ModuleSymbols {
 public:
  // debug_dirs: absolute directories searched first for separate debug files (see debug_dirs()).
  explicit ModuleSymbols(const std::vector<std::string>& debug_dirs = {});
  ~ModuleSymbols();
  ModuleSymbols(const ModuleSymbols&) = delete;
  ModuleSymbols& operator=(const ModuleSymbols&) = delete;
  // The call before return address `address` in module m of a rank (m.start <= address - 1 < m.end).
  SourceLocation locate(const Module& m, uint64_t address);
  size_t files() const;  // module files read so far

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// One rank's call sites: its modules, looked up in the job's ModuleSymbols.
class Symbolizer {
 public:
  Symbolizer(const std::vector<Module>& modules, std::shared_ptr<ModuleSymbols> shared);
  // with symbols of its own (one rank's logs, a test)
  explicit Symbolizer(const std::vector<Module>& modules, const std::vector<std::string>& debug_dirs = {});
  // A return address: the call instruction before it is what is looked up.
  SourceLocation locate_return_address(uint64_t address);

 private:
  const std::vector<Module>& modules_;
  std::shared_ptr<ModuleSymbols> shared_;
};

}  // namespace mpiadvise

// Call sites to source lines, offline, with elfutils libdw; module+offset where there is no debug
// information (or no file any more).
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
  std::string function;  // empty when unknown
  std::string file;      // empty when there is no line information
  int line = 0;
  std::string text() const;  // "file:line (function)" or "module+0xoffset (function)"
};

class Symbolizer {
 public:
  explicit Symbolizer(const std::vector<Module>& modules);
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

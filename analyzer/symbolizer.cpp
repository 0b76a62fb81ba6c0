#include "symbolizer.hpp"

#include <elfutils/libdwfl.h>

#include <fmt/format.h>

namespace mpiadvise {

std::string SourceLocation::text() const {
  std::string where = !file.empty() ? fmt::format("{}:{}", file, line)
                                    : fmt::format("{}+{:#x}", module.empty() ? "?" : module, offset);
  return function.empty() ? where : fmt::format("{} ({})", where, function);
}

struct Symbolizer::Impl {
  const std::vector<Module>& modules;
  Dwfl* dwfl = nullptr;
  Dwfl_Callbacks callbacks{};
  char* debuginfo_path = nullptr;
  std::map<uint64_t, SourceLocation> cache;
  explicit Impl(const std::vector<Module>& m) : modules(m) {}
};

Symbolizer::Symbolizer(const std::vector<Module>& modules) : impl_(std::make_unique<Impl>(modules)) {
  impl_->callbacks.find_elf = dwfl_build_id_find_elf;
  impl_->callbacks.find_debuginfo = dwfl_standard_find_debuginfo;
  impl_->callbacks.section_address = dwfl_offline_section_address;
  impl_->callbacks.debuginfo_path = &impl_->debuginfo_path;
  impl_->dwfl = dwfl_begin(&impl_->callbacks);
  if (!impl_->dwfl) return;
  dwfl_report_begin(impl_->dwfl);
  for (const auto& m : modules)
    dwfl_report_elf(impl_->dwfl, m.path.c_str(), m.path.c_str(), -1, m.base, false);
  dwfl_report_end(impl_->dwfl, nullptr, nullptr);
}

Symbolizer::~Symbolizer() {
  if (impl_->dwfl) dwfl_end(impl_->dwfl);
}

SourceLocation Symbolizer::locate_return_address(uint64_t address) {
  auto hit = impl_->cache.find(address);
  if (hit != impl_->cache.end()) return hit->second;
  SourceLocation loc;
  uint64_t pc = address ? address - 1 : 0;
  for (const auto& m : impl_->modules)
    if (pc >= m.start && pc < m.end) {
      loc.module = m.path;
      loc.offset = address - m.base;
    }
  if (impl_->dwfl) {
    if (Dwfl_Module* mod = dwfl_addrmodule(impl_->dwfl, pc)) {
      if (const char* fn = dwfl_module_addrname(mod, pc)) loc.function = fn;
      if (Dwfl_Line* line = dwfl_module_getsrc(mod, pc)) {
        int lineno = 0;
        if (const char* file = dwfl_lineinfo(line, nullptr, &lineno, nullptr, nullptr, nullptr)) {
          loc.file = file;
          loc.line = lineno;
        }
      }
    }
  }
  impl_->cache.emplace(address, loc);
  return loc;
}

}  // namespace mpiadvise

#include "symbolizer.hpp"

#include <cxxabi.h>
#include <elfutils/libdwfl.h>

#include <cstdlib>
#include <filesystem>
#include <stdexcept>

#include <fmt/format.h>

namespace mpiadvise {

namespace fs = std::filesystem;

std::string SourceLocation::text() const {
  if (!file.empty()) return function.empty() ? fmt::format("{}:{}", file, line) : fmt::format("{}:{} ({})", file, line, function);
  if (!function.empty()) return fmt::format("{} in {}", function, module.empty() ? "?" : module);
  return fmt::format("{}+{:#x}", module.empty() ? "?" : module, offset);
}

namespace {

std::string absolute_dir(const std::string& d) {
  fs::path p = fs::absolute(d).lexically_normal();
  if (p.filename().empty() && p.has_relative_path()) p = p.parent_path();  // "a/" as "a"
  return p.string();
}

}  // namespace

std::vector<std::string> debug_dirs(const std::vector<std::string>& given, const char* env_path) {
  std::vector<std::string> dirs;
  for (const auto& d : given) {
    std::error_code ec;
    if (d.empty() || !fs::is_directory(d, ec)) throw std::invalid_argument("--debug-dir " + d + ": no such directory");
    std::string abs = absolute_dir(d);
    if (abs.find(':') != std::string::npos)
      throw std::invalid_argument("--debug-dir " + d + ": a directory with ':' in its name cannot be searched");
    dirs.push_back(abs);
  }
  // a search path: entries that do not exist (or cannot be named to libdw) are skipped, as PATH's are
  for (std::string_view rest = env_path ? env_path : ""; !rest.empty();) {
    size_t colon = rest.find(':');
    std::string d(rest.substr(0, colon));
    rest = colon == std::string_view::npos ? std::string_view() : rest.substr(colon + 1);
    std::error_code ec;
    if (!d.empty() && fs::is_directory(d, ec)) dirs.push_back(absolute_dir(d));
  }
  return dirs;
}

namespace {

// C++ (and Rust's legacy) names are mangled in the symbol tables: the reader wants them as written.
std::string demangle(const char* name) {
  if (name[0] == '_' && name[1] == 'Z') {
    int status = 0;
    char* plain = abi::__cxa_demangle(name, nullptr, nullptr, &status);
    if (status == 0 && plain) {
      std::string out(plain);
      std::free(plain);
      return out;
    }
    std::free(plain);
  }
  return name;
}

}  // namespace

struct Symbolizer::Impl {
  const std::vector<Module>& modules;
  Dwfl* dwfl = nullptr;
  Dwfl_Callbacks callbacks{};
  std::string search_path;        // what debuginfo_path points to
  char* debuginfo_path = nullptr;
  std::map<uint64_t, SourceLocation> cache;
  explicit Impl(const std::vector<Module>& m) : modules(m) {}
};

Symbolizer::Symbolizer(const std::vector<Module>& modules, const std::vector<std::string>& debug_dirs)
    : impl_(std::make_unique<Impl>(modules)) {
  // libdw's search path: the directories given, then its default (the file's own directory, its .debug
  // subdirectory, /usr/lib/debug). Each absolute one is searched by build ID (.build-id/xx/rest.debug,
  // as Debian's -dbgsym packages install them) and by .gnu_debuglink name.
  for (const auto& d : debug_dirs) impl_->search_path += d + ":";
  impl_->search_path += ":.debug:/usr/lib/debug";
  impl_->debuginfo_path = impl_->search_path.data();
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

namespace {

// The line of pc from the compilation unit whose ranges hold it, looked for unit by unit: libdw
// (0.188, Debian 12) finds a unit by .debug_aranges only, which clang does not write (gcc does), so
// dwfl_module_getsrc knows no line of a program built with clang.
Dwarf_Line* line_from_units(Dwfl_Module* mod, uint64_t pc) {
  Dwarf_Addr bias = 0;
  for (Dwarf_Die* cu = dwfl_module_nextcu(mod, nullptr, &bias); cu; cu = dwfl_module_nextcu(mod, cu, &bias))
    if (dwarf_haspc(cu, pc - bias) == 1) return dwarf_getsrc_die(cu, pc - bias);
  return nullptr;
}

}  // namespace

SourceLocation Symbolizer::locate_return_address(uint64_t address) {
  auto hit = impl_->cache.find(address);
  if (hit != impl_->cache.end()) return hit->second;
  SourceLocation loc;
  uint64_t pc = address ? address - 1 : 0;
  uint64_t base = 0;
  for (const auto& m : impl_->modules)
    if (pc >= m.start && pc < m.end) {
      loc.module = m.path;
      loc.offset = address - m.base;
      base = m.base;
    }
  if (impl_->dwfl) {
    if (Dwfl_Module* mod = dwfl_addrmodule(impl_->dwfl, pc)) {
      // the function from the symbol tables (.symtab, in the file or its debug file, else .dynsym);
      // only a symbol that spans pc: the nearest one before it may be another function's
      GElf_Off into = 0;
      GElf_Sym sym{};
      const char* name = dwfl_module_addrinfo(mod, pc, &into, &sym, nullptr, nullptr, nullptr);
      const int type = GELF_ST_TYPE(sym.st_info);
      if (name && *name && (type == STT_FUNC || type == STT_GNU_IFUNC) && into < sym.st_size) {
        loc.function = demangle(name);
        loc.function_offset = pc - into - base;
      }
      if (Dwfl_Line* line = dwfl_module_getsrc(mod, pc)) {
        int lineno = 0;
        if (const char* file = dwfl_lineinfo(line, nullptr, &lineno, nullptr, nullptr, nullptr)) {
          loc.file = file;
          loc.line = lineno;
        }
      } else if (Dwarf_Line* line = line_from_units(mod, pc)) {
        int lineno = 0;
        if (const char* file = dwarf_linesrc(line, nullptr, nullptr); file && dwarf_lineno(line, &lineno) == 0) {
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

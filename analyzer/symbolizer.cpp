#include "symbolizer.hpp"

#include <cxxabi.h>
#include <elfutils/libdwfl.h>

#include <cstdlib>
#include <filesystem>
#include <map>
#include <mutex>
#include <stdexcept>
#include <utility>

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

struct ModuleSymbols::Impl {
  // A module file as reported to dwfl: at a base of its own, or, for a file linked at fixed addresses
  // (ET_EXEC: libdwfl ignores the base), where it was linked.
  struct File {
    Dwfl_Module* mod = nullptr;  // null: the file cannot be read
    uint64_t base = 0;
    bool fixed = false;
  };
  std::mutex mu;
  Dwfl* dwfl = nullptr;
  Dwfl_Callbacks callbacks{};
  std::string search_path;        // what debuginfo_path points to
  char* debuginfo_path = nullptr;
  std::map<std::string, File> files;
  std::map<std::pair<std::string, uint64_t>, SourceLocation> cache;  // by file and offset from its base
  uint64_t next_base = kBaseStep;
  // dynamic files are laid out this far apart: more than any file's span
  static constexpr uint64_t kBaseStep = uint64_t{1} << 36;

  const File& file(const std::string& path);
};

ModuleSymbols::ModuleSymbols(const std::vector<std::string>& debug_dirs) : impl_(std::make_unique<Impl>()) {
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
}

ModuleSymbols::~ModuleSymbols() {
  if (impl_->dwfl) dwfl_end(impl_->dwfl);
}

const ModuleSymbols::Impl::File& ModuleSymbols::Impl::file(const std::string& path) {
  auto [it, fresh] = files.try_emplace(path);
  if (!fresh || !dwfl) return it->second;
  File& f = it->second;
  dwfl_report_begin_add(dwfl);
  f.mod = dwfl_report_elf(dwfl, path.c_str(), path.c_str(), -1, next_base, false);
  dwfl_report_end(dwfl, nullptr, nullptr);
  if (!f.mod) return f;
  Dwarf_Addr start = 0, bias = 0;
  dwfl_module_info(f.mod, nullptr, &start, nullptr, nullptr, nullptr, nullptr, nullptr);
  GElf_Ehdr ehdr_mem;
  const Elf* elf = dwfl_module_getelf(f.mod, &bias);
  const GElf_Ehdr* ehdr = elf ? gelf_getehdr(const_cast<Elf*>(elf), &ehdr_mem) : nullptr;
  f.fixed = ehdr && ehdr->e_type == ET_EXEC;
  f.base = f.fixed ? 0 : start;
  if (!f.fixed) next_base += kBaseStep;
  return f;
}

SourceLocation ModuleSymbols::locate(const Module& m, uint64_t address) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  const uint64_t offset = address - m.base;
  auto hit = impl_->cache.find({m.path, offset});
  if (hit != impl_->cache.end()) return hit->second;
  SourceLocation loc;
  loc.module = m.path;
  loc.offset = offset;
  const Impl::File& f = impl_->file(m.path);
  if (f.mod) {
    // the call's address in this dwfl: the rank's, for a file linked at fixed addresses
    const uint64_t pc = (f.fixed ? address : f.base + offset) - 1;
    // the function from the symbol tables (.symtab, in the file or its debug file, else .dynsym);
    // only a symbol that spans pc: the nearest one before it may be another function's
    GElf_Off into = 0;
    GElf_Sym sym{};
    const char* name = dwfl_module_addrinfo(f.mod, pc, &into, &sym, nullptr, nullptr, nullptr);
    const int type = GELF_ST_TYPE(sym.st_info);
    if (name && *name && (type == STT_FUNC || type == STT_GNU_IFUNC) && into < sym.st_size) {
      loc.function = demangle(name);
      loc.function_offset = offset - 1 - into;
    }
    if (Dwfl_Line* line = dwfl_module_getsrc(f.mod, pc)) {
      int lineno = 0;
      if (const char* file = dwfl_lineinfo(line, nullptr, &lineno, nullptr, nullptr, nullptr)) {
        loc.file = file;
        loc.line = lineno;
      }
    } else if (Dwarf_Line* line = line_from_units(f.mod, pc)) {
      int lineno = 0;
      if (const char* file = dwarf_linesrc(line, nullptr, nullptr); file && dwarf_lineno(line, &lineno) == 0) {
        loc.file = file;
        loc.line = lineno;
      }
    }
  }
  impl_->cache.emplace(std::make_pair(m.path, offset), loc);
  return loc;
}

size_t ModuleSymbols::files() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->files.size();
}

Symbolizer::Symbolizer(const std::vector<Module>& modules, std::shared_ptr<ModuleSymbols> shared)
    : modules_(modules), shared_(std::move(shared)) {}

Symbolizer::Symbolizer(const std::vector<Module>& modules, const std::vector<std::string>& debug_dirs)
    : Symbolizer(modules, std::make_shared<ModuleSymbols>(debug_dirs)) {}

SourceLocation Symbolizer::locate_return_address(uint64_t address) {
  const uint64_t pc = address ? address - 1 : 0;
  const Module* in = nullptr;
  for (const auto& m : modules_)
    if (pc >= m.start && pc < m.end) in = &m;  // the last that holds it
  return in ? shared_->locate(*in, address) : SourceLocation{};
}

}  // namespace mpiadvise

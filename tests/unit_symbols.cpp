// The symbolizer on the libraries of this very process, as Debian installs them: libstdc++ is stripped
// to its .dynsym (names mangled there), libc has its detached debug file in /usr/lib/debug/.build-id
// (libc6-dbg, Debian's layout for -dbg and -dbgsym packages); and the directories to search given by
// the user (--debug-dir, MPIADVISE_DEBUG_PATH) checked and made absolute.
#include <catch2/catch.hpp>

#include <gnu/libc-version.h>

#include <link.h>
#include <unistd.h>

#include <cstdlib>
#include <new>
#include <stdexcept>

#include "support.hpp"
#include "symbolizer.hpp"

using namespace mpa_test;
using mpiadvise::Module;
using mpiadvise::SourceLocation;
using mpiadvise::Symbolizer;

namespace {

// The modules of this process as the tracer records them (libtrace/callsite.c): the span of their
// executable segments and their load bias.
std::vector<Module> own_modules() {
  std::vector<Module> out;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        uint64_t lo = UINT64_MAX, hi = 0;
        for (int i = 0; i < info->dlpi_phnum; i++) {
          const auto& ph = info->dlpi_phdr[i];
          if (ph.p_type != PT_LOAD || !(ph.p_flags & PF_X)) continue;
          lo = std::min<uint64_t>(lo, info->dlpi_addr + ph.p_vaddr);
          hi = std::max<uint64_t>(hi, info->dlpi_addr + ph.p_vaddr + ph.p_memsz);
        }
        std::string path = info->dlpi_name ? info->dlpi_name : "";
        if (path.empty()) path = fs::read_symlink("/proc/self/exe").string();
        if (lo < hi) static_cast<std::vector<Module>*>(data)->push_back(Module{lo, hi, info->dlpi_addr, path});
        return 0;
      },
      &out);
  return out;
}

const Module* module_of(const std::vector<Module>& modules, uint64_t address) {
  for (const auto& m : modules)
    if (address >= m.start && address < m.end) return &m;
  return nullptr;
}

// Where a call to the function at entry would be: a return address just past its first byte.
SourceLocation locate_function(Symbolizer& s, const void* entry) {
  return s.locate_return_address(reinterpret_cast<uint64_t>(entry) + 1);
}

}  // namespace

TEST_CASE("names from a stripped library's .dynsym are demangled", "[symbols][unit]") {
  auto modules = own_modules();
  void (*fn)() = &std::__throw_bad_alloc;  // defined in libstdc++.so.6
  const Module* lib = module_of(modules, reinterpret_cast<uint64_t>(fn));
  REQUIRE(lib != nullptr);
  CHECK(lib->path.find("libstdc++") != std::string::npos);
  Symbolizer s(modules);
  SourceLocation loc = locate_function(s, reinterpret_cast<const void*>(fn));
  CHECK(loc.module == lib->path);
  CHECK(loc.function == "std::__throw_bad_alloc()");
  CHECK(loc.function_offset == reinterpret_cast<uint64_t>(fn) - lib->base);
  if (loc.file.empty()) CHECK(loc.text() == "std::__throw_bad_alloc() in " + lib->path);
}

TEST_CASE("Debian's detached debug files in /usr/lib/debug/.build-id give lines", "[symbols][unit]") {
  auto modules = own_modules();
  // defined in libc.so.6, and intercepted by no sanitizer (ASan's runtime defines its own qsort)
  void* entry = reinterpret_cast<void*>(&gnu_get_libc_version);
  const Module* libc = module_of(modules, reinterpret_cast<uint64_t>(entry));
  REQUIRE(libc != nullptr);
  auto id = run_command("readelf -n '" + libc->path + "' | sed -n 's/^ *Build ID: *//p'");
  REQUIRE(id.out.size() > 3);
  const fs::path debug = fs::path("/usr/lib/debug/.build-id") / id.out.substr(0, 2) / (id.out.substr(2, id.out.find('\n') - 2) + ".debug");
  INFO(debug.string() << ": libc6-dbg installs it (scripts/deps.sh)");
  REQUIRE(fs::exists(debug));
  // with a directory of the user's searched first, the defaults still count
  const fs::path empty = fresh_dir("empty-debug-dir");
  Symbolizer s(modules, {empty.string()});
  SourceLocation loc = locate_function(s, entry);
  CHECK(loc.module == libc->path);
  CHECK(!loc.function.empty());
  CHECK(loc.file.find(".c") != std::string::npos);
  CHECK(loc.line > 0);
}

TEST_CASE("ranks whose libraries are loaded at other addresses share one reading of each file", "[symbols][unit]") {
  // a second rank: the same files 256 MiB higher
  const auto modules = own_modules();
  auto moved = modules;
  const uint64_t delta = uint64_t{1} << 28;
  for (auto& m : moved) m.start += delta, m.end += delta, m.base += delta;
  auto shared = std::make_shared<mpiadvise::ModuleSymbols>();
  Symbolizer here(modules, shared), there(moved, shared);
  const uint64_t entry = reinterpret_cast<uint64_t>(&gnu_get_libc_version);
  const SourceLocation a = here.locate_return_address(entry + 1), b = there.locate_return_address(entry + 1 + delta);
  CHECK(!a.function.empty());
  CHECK(a.line > 0);
  CHECK(b.module == a.module);
  CHECK(b.offset == a.offset);
  CHECK(b.function == a.function);
  CHECK(b.function_offset == a.function_offset);
  CHECK(b.file == a.file);
  CHECK(b.line == a.line);
  CHECK(shared->files() == 1);  // libc's, once
  // and alone, as before: the same answer
  Symbolizer own(moved);
  CHECK(own.locate_return_address(entry + 1 + delta).text() == a.text());
}

TEST_CASE("a module whose file is gone is named by module and offset", "[symbols][unit]") {
  std::vector<Module> modules = {Module{0x400000, 0x500000, 0x400000, "/nonexistent/libgone.so"}};
  Symbolizer s(modules);
  SourceLocation loc = s.locate_return_address(0x401235);
  CHECK(loc.function.empty());
  CHECK(loc.file.empty());
  CHECK(loc.text() == "/nonexistent/libgone.so+0x1235");
}

TEST_CASE("the debug directories given are checked and made absolute", "[symbols][unit]") {
  const fs::path root = fresh_dir("debug-dirs");
  fs::create_directories(root / "a");
  fs::create_directories(root / "b");
  fs::create_directories(root / "with:colon");
  SECTION("given, then the environment's, absolute") {
    auto dirs = mpiadvise::debug_dirs({(root / "a").string()},
                                      ("/nonexistent::" + (root / "b").string() + ":" + (root / "a").string()).c_str());
    CHECK(dirs == std::vector<std::string>{(root / "a").string(), (root / "b").string(), (root / "a").string()});
  }
  SECTION("relative to the working directory") {
    const fs::path was = fs::current_path();
    fs::current_path(root);
    auto dirs = mpiadvise::debug_dirs({"a", "./b/"}, "b");
    fs::current_path(was);
    CHECK(dirs == std::vector<std::string>{(root / "a").string(), (root / "b").string(), (root / "b").string()});
  }
  SECTION("a given directory that does not exist, or that libdw cannot be told about, is an error naming it") {
    CHECK_THROWS_WITH(mpiadvise::debug_dirs({(root / "c").string()}, nullptr), Catch::Contains((root / "c").string()));
    CHECK_THROWS_AS(mpiadvise::debug_dirs({(root / "with:colon").string()}, nullptr), std::invalid_argument);
    CHECK(mpiadvise::debug_dirs({}, (root / "with:colon").string().c_str()).empty());
  }
}

#include "mpi_choice.hpp"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdlib>
#include <regex>
#include <stdexcept>

#include <fmt/format.h>

namespace mpiadvise::cli {
namespace fs = std::filesystem;
namespace {

// Output of a command run without a shell (its --version), or "" when it does not run.
std::string capture(const std::vector<std::string>& argv) {
  int fds[2];
  if (pipe(fds) != 0) return "";
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 1);
    dup2(fds[1], 2);
    close(fds[0]);
    std::vector<char*> a;
    for (const auto& s : argv) a.push_back(const_cast<char*>(s.c_str()));
    a.push_back(nullptr);
    execvp(a[0], a.data());
    _exit(127);
  }
  close(fds[1]);
  std::string out;
  std::array<char, 4096> buf;
  ssize_t n;
  while ((n = read(fds[0], buf.data(), buf.size())) > 0) out.append(buf.data(), static_cast<size_t>(n));
  close(fds[0]);
  int status;
  waitpid(pid, &status, 0);
  return out;
}

// The DT_NEEDED entries of an ELF file; empty when it is not one.
std::vector<std::string> needed_libraries(const std::string& path) {
  std::vector<std::string> out;
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return out;
  elf_version(EV_CURRENT);
  Elf* elf = elf_begin(fd, ELF_C_READ, nullptr);
  for (Elf_Scn* scn = elf ? elf_nextscn(elf, nullptr) : nullptr; scn; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr shdr;
    if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_DYNAMIC || shdr.sh_entsize == 0) continue;
    Elf_Data* data = elf_getdata(scn, nullptr);
    for (size_t i = 0; data && i < shdr.sh_size / shdr.sh_entsize; i++) {
      GElf_Dyn dyn;
      if (!gelf_getdyn(data, static_cast<int>(i), &dyn)) break;
      if (dyn.d_tag != DT_NEEDED) continue;
      if (const char* name = elf_strptr(elf, shdr.sh_link, dyn.d_un.d_val)) out.emplace_back(name);
    }
  }
  if (elf) elf_end(elf);
  close(fd);
  return out;
}

std::string library_mpi(const std::string& soname) {
  static const std::regex openmpi(R"(lib(mpi|mpi_mpifh|mpi_usempif08|mpi_usempi_ignore_tkr|mpi_cxx|open-pal|open-rte)\.so\.(40|20)(\..*)?)");
  static const std::regex mpich(R"(libmpich(fort|cxx)?\.so(\..*)?|libmpi\.so\.12(\..*)?|libmpifort\.so\.12(\..*)?)");
  if (std::regex_match(soname, openmpi)) return "openmpi";
  if (std::regex_match(soname, mpich)) return "mpich";
  return "";
}

}  // namespace

std::string search_path(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  std::string p = path ? path : "/usr/bin:/bin";
  size_t start = 0;
  while (start <= p.size()) {
    size_t end = p.find(':', start);
    if (end == std::string::npos) end = p.size();
    fs::path candidate = fs::path(p.substr(start, end - start)) / name;
    std::error_code ec;
    if (access(candidate.c_str(), X_OK) == 0 && fs::is_regular_file(candidate, ec)) return candidate.string();
    start = end + 1;
  }
  return "";
}

Launcher launcher_kind(const std::string& cmd) {
  std::string base = fs::path(cmd).filename().string();
  static const std::regex mpi_launcher(R"((mpirun|mpiexec|orterun|oshrun)(\..*)?)");
  if (!std::regex_match(base, mpi_launcher)) return Launcher::Other;
  std::string version = capture({cmd, "--version"});
  if (version.find("Open MPI") != std::string::npos || version.find("OpenRTE") != std::string::npos)
    return Launcher::OpenMPI;
  if (version.find("HYDRA") != std::string::npos || version.find("Hydra") != std::string::npos) return Launcher::Hydra;
  return Launcher::Other;
}

std::string program_mpi(const std::string& path) {
  for (const auto& lib : needed_libraries(path))
    if (auto m = library_mpi(lib); !m.empty()) return m;
  return "";
}

std::string mpi_display_name(const std::string& mpi) { return mpi == "openmpi" ? "Open MPI" : mpi == "mpich" ? "MPICH" : mpi; }

MpiChoice choose_mpi(const std::vector<std::string>& command, const std::string& program_path) {
  std::string by_launcher;
  std::string launcher = command.empty() ? "" : search_path(command[0]);
  if (!launcher.empty()) {
    Launcher kind = launcher_kind(launcher);
    by_launcher = kind == Launcher::OpenMPI ? "openmpi" : kind == Launcher::Hydra ? "mpich" : "";
  }
  std::string by_program, lib;
  if (!program_path.empty())
    for (const auto& l : needed_libraries(program_path))
      if (auto m = library_mpi(l); !m.empty()) {
        by_program = m, lib = l;
        break;
      }
  const std::string program = fs::path(program_path).filename().string();
  if (!by_program.empty() && !by_launcher.empty() && by_program != by_launcher)
    throw std::runtime_error(fmt::format("{} links {} ({}) but {} is {}'s launcher: run it with {}'s mpirun", program,
                                         lib, mpi_display_name(by_program), command[0], mpi_display_name(by_launcher),
                                         mpi_display_name(by_program)));
  if (!by_program.empty()) return {by_program, fmt::format("{} links {} ({})", program, lib, mpi_display_name(by_program))};
  if (!by_launcher.empty())
    return {by_launcher, fmt::format("{} is {}'s launcher", command[0], mpi_display_name(by_launcher))};
  for (const char* m : {"openmpi", "mpich"}) {
    try {
      mpi_file(m, "libmpiadvise.so");
      return {m, fmt::format("neither the launcher nor the program names its MPI; {} is the first one installed",
                             mpi_display_name(m))};
    } catch (const std::exception&) {
    }
  }
  throw std::runtime_error("no tracing library is installed (lib/mpiadvise/MPI/libmpiadvise.so); give one with --lib");
}

fs::path mpi_file(const std::string& mpi, const std::string& file) {
  std::error_code ec;
  std::vector<fs::path> dirs;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) dirs.push_back(self.parent_path().parent_path() / "lib" / "mpiadvise" / mpi);
#ifdef MPIADVISE_PREFIX
  dirs.push_back(fs::path(MPIADVISE_PREFIX) / "lib" / "mpiadvise" / mpi);
#endif
  std::string looked;
  for (const auto& d : dirs) {
    if (fs::exists(d / file, ec)) return fs::weakly_canonical(d / file, ec);
    looked += (looked.empty() ? "" : ", ") + d.string();
  }
  throw std::runtime_error(fmt::format("no {} for {} in {} (was mpiadvise built with {}?)", file, mpi_display_name(mpi),
                                       looked, mpi_display_name(mpi)));
}

}  // namespace mpiadvise::cli

// mpiadvise run [options] -- LAUNCHER ARGS...: runs an MPI job with libmpiadvise preloaded in every rank.
// Open MPI's mpirun forwards environment only with -x, MPICH's Hydra with -genv; other launchers (srun,
// a plain program) inherit the environment.
#include <fcntl.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <memory>
#include <regex>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "commands.hpp"
#include "mpi_choice.hpp"

extern char** environ;

namespace mpiadvise::cli {
namespace fs = std::filesystem;
namespace {

struct RunOptions {
  std::string dir;
  std::string stack_depth;
  std::string buffer;
  std::string papi;
  std::string zstd_level;
  std::string clock;
  bool no_probe = false;
  std::string lib;
  std::vector<std::string> command;
};

volatile pid_t g_job = 0;
void forward_signal(int sig) {
  if (g_job > 0) kill(g_job, sig);
}

// The tracing library: --lib, else MPIADVISE_LIB, else the one built for the job's MPI.
std::string find_library(const std::string& given, const std::vector<std::string>& command, const std::string& program) {
  if (!given.empty()) return given;
  if (const char* env = std::getenv("MPIADVISE_LIB"); env && *env) return env;
  return mpi_file(choose_mpi(command, program).mpi, "libmpiadvise.so").string();
}

// The program the job runs: the first argument after the launcher (and after wrappers such as env or
// timeout) that is an executable file, as PATH finds it; "" when there is none.
std::string program_of(const std::vector<std::string>& command, Launcher kind) {
  static const std::regex launcher(R"((mpirun|mpiexec|orterun|oshrun|srun|aprun|jsrun|prun|env|timeout|time|nice|numactl|taskset)(\..*)?)");
  size_t from = kind == Launcher::Other ? 0 : 1;
  for (size_t i = from; i < command.size(); i++) {
    if (command[i].empty() || command[i][0] == '-') continue;
    if (std::regex_match(fs::path(command[i]).filename().string(), launcher)) continue;
    std::string p = search_path(command[i]);
    std::error_code ec;
    if (!p.empty() && access(p.c_str(), X_OK) == 0 && fs::is_regular_file(p, ec)) return p;
  }
  return "";
}

std::string default_dir(const std::string& program) {
  char stamp[32];
  std::time_t now = std::time(nullptr);
  std::tm tm;
  localtime_r(&now, &tm);
  std::strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
  std::string dir = fmt::format("mpiadvise-{}-{}", program, stamp);
  for (int i = 1; fs::exists(dir) && i < 1000; i++) dir = fmt::format("mpiadvise-{}-{}.{}", program, stamp, i);
  return dir;
}

void check_number(const std::string& name, const std::string& value, long lo, long hi) {
  char* end = nullptr;
  long v = std::strtol(value.c_str(), &end, 10);
  if (value.empty() || *end || v < lo || v > hi)
    throw CLI::ValidationError(name, fmt::format("{} is not a number from {} to {}", value, lo, hi));
}

int run_job(RunOptions o) {
  if (!o.stack_depth.empty()) check_number("--stack-depth", o.stack_depth, 0, 32);
  if (!o.zstd_level.empty()) check_number("--zstd-level", o.zstd_level, 1, 19);
  if (!o.buffer.empty() && !std::regex_match(o.buffer, std::regex(R"(\d+([kKmMgG](iB|B)?|B)?)")))
    throw CLI::ValidationError("--buffer", o.buffer + " is not a size such as 4M");
  std::string launcher = search_path(o.command[0]);
  if (launcher.empty()) throw std::runtime_error(o.command[0] + ": command not found");
  Launcher kind = launcher_kind(launcher);
  const std::string program = program_of(o.command, kind);
  std::string lib = find_library(o.lib, o.command, program);
  if (access(lib.c_str(), R_OK) != 0) throw std::runtime_error(lib + ": cannot read the tracing library");
  if (const char* exported = std::getenv("MPIADVISE_DIR"); o.dir.empty() && exported && *exported) o.dir = exported;
  if (o.dir.empty()) o.dir = default_dir(program.empty() ? "mpi" : fs::path(program).filename().string());
  o.dir = fs::absolute(o.dir).string();

  std::vector<std::pair<std::string, std::string>> env;
  std::string preload = lib;
  if (const char* old = std::getenv("LD_PRELOAD"); old && *old) preload += std::string(":") + old;
  env.emplace_back("LD_PRELOAD", preload);
  env.emplace_back("MPIADVISE_DIR", o.dir);
  if (!o.stack_depth.empty()) env.emplace_back("MPIADVISE_STACK_DEPTH", o.stack_depth);
  if (!o.buffer.empty()) env.emplace_back("MPIADVISE_BUFFER", o.buffer);
  if (!o.papi.empty()) env.emplace_back("MPIADVISE_PAPI", o.papi);
  if (!o.zstd_level.empty()) env.emplace_back("MPIADVISE_ZSTD_LEVEL", o.zstd_level);
  if (!o.clock.empty()) env.emplace_back("MPIADVISE_CLOCK", o.clock);
  if (o.no_probe) env.emplace_back("MPIADVISE_PROBE", "0");
  for (char** e = environ; *e; e++) {  // MPIADVISE settings already exported travel too
    std::string kv = *e;
    auto eq = kv.find('=');
    if (kv.rfind("MPIADVISE", 0) != 0 || eq == std::string::npos) continue;
    std::string k = kv.substr(0, eq);
    bool given = false;
    for (const auto& [name, v] : env) given |= name == k;
    if (!given) env.emplace_back(k, kv.substr(eq + 1));
  }

  std::vector<std::string> argv{o.command[0]};
  if (kind == Launcher::OpenMPI) {
    // Open MPI's -x applies to one application context: repeat it after every ':' of an MPMD line
    auto forward = [&] {
      for (const auto& [k, v] : env) argv.insert(argv.end(), {"-x", k + "=" + v});
    };
    forward();
    for (size_t i = 1; i < o.command.size(); i++) {
      argv.push_back(o.command[i]);
      if (o.command[i] == ":") forward();
    }
  } else {
    if (kind == Launcher::Hydra)
      for (const auto& [k, v] : env) argv.insert(argv.end(), {"-genv", k, v});
    argv.insert(argv.end(), o.command.begin() + 1, o.command.end());
  }

  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error("cannot start the job: fork failed");
  if (pid == 0) {
    if (kind == Launcher::Other)
      for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    else
      setenv("MPIADVISE_DIR", o.dir.c_str(), 1);
    std::vector<char*> a;
    for (auto& s : argv) a.push_back(s.data());
    a.push_back(nullptr);
    execvp(a[0], a.data());
    std::fprintf(stderr, "mpiadvise: cannot run %s: %s\n", a[0], std::strerror(errno));
    _exit(127);
  }
  // Ctrl-C, a batch system's SIGTERM or a timeout reach the job, not only this command
  g_job = pid;
  struct sigaction sa {};
  sa.sa_handler = forward_signal;
  sigemptyset(&sa.sa_mask);
  for (int sig : {SIGINT, SIGTERM, SIGHUP, SIGQUIT}) sigaction(sig, &sa, nullptr);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  size_t logs = 0;
  std::error_code ec;
  if (fs::is_directory(o.dir, ec))
    for (const auto& f : fs::directory_iterator(o.dir, ec)) logs += f.path().extension() == ".mpa";
  if (logs) std::fprintf(stderr, "mpiadvise: %zu rank log%s in %s\n", logs, logs == 1 ? "" : "s", o.dir.c_str());
  else std::fprintf(stderr, "mpiadvise: the job wrote no logs in %s\n", o.dir.c_str());
  if (WIFEXITED(status)) return WEXITSTATUS(status);
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return 1;
}

}  // namespace

std::function<int()> add_run(CLI::App& app) {
  auto o = std::make_shared<RunOptions>();
  auto* sub = app.add_subcommand("run", "Run an MPI job with every rank traced: mpiadvise run [options] -- mpirun ...");
  sub->add_option("--dir", o->dir, "Job directory for the logs (default: mpiadvise-PROGRAM-DATE-TIME)");
  sub->add_option("--stack-depth", o->stack_depth, "Frames per call site, through libunwind (default 1: the return address)");
  sub->add_option("--buffer", o->buffer, "Event buffer memory per rank, e.g. 4M (default 4M)");
  sub->add_option("--papi", o->papi, "PAPI events to count over each computation interval, comma-separated");
  sub->add_option("--zstd-level", o->zstd_level, "zstd compression level of the logs, 1 to 19 (default 1)");
  sub->add_option("--clock", o->clock, "Event clock: tsc, monotonic or auto (default auto)")
      ->check(CLI::IsMember({"tsc", "monotonic", "auto"}));
  sub->add_flag("--no-probe", o->no_probe,
                "Time no round trips between rank 0 and a partner at MPI_Init and MPI_Finalize (the report then replays at "
                "the parameter set's speed)");
  sub->add_option("--lib", o->lib, "The tracing library (default: the one built for the job's MPI, lib/mpiadvise/MPI/libmpiadvise.so)");
  sub->add_option("command", o->command, "The launcher and its arguments, after --")->required();
  return [o] { return run_job(*o); };
}

}  // namespace mpiadvise::cli

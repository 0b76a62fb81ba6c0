#include "support.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <fstream>
#include <sstream>

namespace mpa_test {

fs::path build_dir() { return MPA_BUILD_DIR; }

fs::path program_path(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  return build_dir() / "tests" / "programs" / name;
}

fs::path fresh_dir(const std::string& name) {
  static std::atomic<int> n{0};
  fs::path d = build_dir() / "tests" / "tmp" / (name + "-" + std::to_string(getpid()) + "-" + std::to_string(n++));
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

std::string read_text(const fs::path& file) {
  std::ifstream in(file);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

static std::string quote(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

JobResult run_command(const std::string& cmd) {
  fs::path d = fresh_dir("cmd");
  std::string full = "(" + cmd + ") >" + quote((d / "out").string()) + " 2>" + quote((d / "err").string());
  int rc = std::system(full.c_str());
  JobResult r;
  r.status = WIFEXITED(rc) ? WEXITSTATUS(rc) : 128 + (WIFSIGNALED(rc) ? WTERMSIG(rc) : 0);
  r.out = read_text(d / "out");
  r.err = read_text(d / "err");
  r.dir = d;
  return r;
}

JobResult run_job(const JobSpec& spec) {
  fs::path dir = spec.log_dir.empty() ? fresh_dir(fs::path(spec.program).filename().string()) / "logs" : fs::path(spec.log_dir);
  std::string cmd = "timeout " + std::to_string(spec.timeout_s) + " mpirun --allow-run-as-root --oversubscribe -np " +
                    std::to_string(spec.np);
  for (const auto& o : spec.mpirun_options) cmd += " " + quote(o);
  if (spec.traced) {
    cmd += " -x " + quote("LD_PRELOAD=" + (build_dir() / "lib" / "libmpiadvise.so").string());
    cmd += " -x " + quote("MPIADVISE_DIR=" + dir.string());
  }
  for (const auto& [k, v] : spec.env) cmd += " -x " + quote(k + "=" + v);
  cmd += " " + quote(program_path(spec.program).string());
  for (const auto& a : spec.args) cmd += " " + quote(a);
  JobResult r = run_command(cmd);
  r.dir = dir;
  return r;
}

std::vector<Ev> events_of(const fs::path& dir, int rank) {
  mpiadvise::JobLog job(dir);
  std::vector<Ev> out;
  const mpiadvise::RankLog* log = job.rank(rank);
  if (!log) return out;
  log->for_each_event([&](const mpiadvise::Event& e) {
    Ev ev{std::string(e.call_name), e};
    ev.e.call_name = {};
    out.push_back(std::move(ev));
  });
  return out;
}

std::vector<Ev> calls_named(const std::vector<Ev>& evs, const std::string& call) {
  std::vector<Ev> out;
  for (const auto& e : evs)
    if (e.call == call) out.push_back(e);
  return out;
}

fs::path calibrated_tcp_params(bool again) {
  static fs::path file;
  if (file.empty() || again) {
    const fs::path f = fresh_dir("calibrated-here") / "tcp.toml";
    auto r = run_command((build_dir() / "bin" / "mpiadvise").string() + " calibrate --quick -o " + f.string() +
                         " -- mpirun --allow-run-as-root --oversubscribe -np 2 --mca pml ob1 --mca btl self,tcp");
    if (r.status != 0 || !fs::exists(f))
      throw std::runtime_error("mpiadvise calibrate --quick failed (status " + std::to_string(r.status) + "): " + r.err);
    file = f;
  }
  return file;
}

}  // namespace mpa_test

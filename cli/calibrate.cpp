// mpiadvise calibrate [options] -- LAUNCHER ARGS...: measures the LogGPS parameters and the effective S of
// this machine by the paper's round-trip method and writes a parameter file.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <optional>

#include "calibration.hpp"
#include "commands.hpp"
#include "format_units.hpp"

namespace mpiadvise::cli {
namespace fs = std::filesystem;
namespace {

struct CalibrateOptions {
  std::string output = "calibrated.toml";
  bool quick = false;
  double W_us = 2000;
  int reps = 0;
  std::string max_size = "1M";
  std::string bench;
  bool no_eager_sweep = false;
  std::vector<std::string> command;
};

uint64_t parse_bytes(const std::string& what, const std::string& v) {
  char* end = nullptr;
  double x = std::strtod(v.c_str(), &end);
  std::string unit = end ? end : "";
  if (end == v.c_str() || x < 0) throw CLI::ValidationError(what, v + " is not a size");
  if (unit == "K" || unit == "k" || unit == "KiB") x *= 1024;
  else if (unit == "M" || unit == "m" || unit == "MiB") x *= 1024 * 1024;
  else if (!unit.empty()) throw CLI::ValidationError(what, v + " is not a size such as 256K");
  return static_cast<uint64_t>(x);
}

// Powers of two with three points between each: dense enough to place S within a quarter octave.
std::vector<uint64_t> sweep(uint64_t max_size, bool quick) {
  std::vector<uint64_t> out{0};
  for (uint64_t p = 256; p <= max_size; p *= 2)
    for (double f : quick ? std::vector<double>{1, 1.5} : std::vector<double>{1, 1.25, 1.5, 1.75}) {
      uint64_t k = static_cast<uint64_t>(p * f);
      if (k <= max_size) out.push_back(k);
    }
  return out;
}

fs::path bench_path(const std::string& given) {
  if (!given.empty()) return given;
  std::error_code ec;
  fs::path self = fs::read_symlink("/proc/self/exe", ec);
  fs::path p = self.parent_path() / "mpiadvise-calibrate-bench";
  if (!ec && fs::exists(p)) return p;
  throw std::runtime_error("cannot find mpiadvise-calibrate-bench next to the mpiadvise command; give it with --bench");
}

std::string params_toml(const Calibration& c, const nlohmann::json& facts, double W) {
  const auto& p = c.params;
  std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%d %H:%M", std::localtime(&now));
  std::string lib = facts.value("mpi_library", "");
  std::string library = lib.find("Open MPI") != std::string::npos ? "Open MPI" : lib.find("MPICH") != std::string::npos ? "MPICH" : lib.substr(0, lib.find(','));
  std::ostringstream o;
  std::string hosts;
  for (const auto& h : facts.value("hosts", nlohmann::json::array())) hosts += (hosts.empty() ? "" : " and ") + h.get<std::string>();
  o << "# LogGPS parameters calibrated by mpiadvise calibrate on " << date << " between ranks 0 and 1 on " << hosts
    << "\n# " << lib << "\n";
  o << fmt::format("# round trips with w = 0 and w = {:.0f} ns; effective S between {} and {} bytes; residual RMS {:.1f}%\n", W,
                   c.S, c.S_next ? std::to_string(c.S_next) : std::string("(no larger size waited)"), 100 * c.residual_rms);
  for (const auto& cl : c.clamped) o << "# the fit gave " << cl << ": set to 0 (the curves follow the model only roughly)\n";
  const nlohmann::json cvars = facts.value("cvars", nlohmann::json::object());
  for (const auto& [k, v] : cvars.items()) o << "# MPI_T " << k << " = " << v.dump() << "\n";
  o << fmt::format("description = \"calibrated on {} ({})\"\n", facts.value("hostname", ""), date);
  o << fmt::format("library = \"{}\"\n", library);
  o << "transport = \"" << facts.value("transport", "") << "\"\n\n[loggps]\n";
  o << fmt::format("L_ns = {:.3f}\no_ns = {:.3f}\nOss_ns_per_byte = {:.6f}\nOrs_ns_per_byte = {:.6f}\n", p.L, p.o, p.Oss, p.Ors);
  o << fmt::format("Osl_ns_per_byte = {:.6f}\nOrl_ns_per_byte = {:.6f}\nGs_ns_per_byte = {:.6f}\nGl_ns_per_byte = {:.6f}\n", p.Osl,
                   p.Orl, p.Gs, p.Gl);
  o << fmt::format("s_bytes = {}\nS_bytes = {}\n", p.s, p.S);
  return o.str();
}

// What one run of the benchmark printed.
struct BenchOutput {
  nlohmann::json facts, persistent;
  std::vector<RoundTrip> samples;
};

// Runs the benchmark under the launcher (argv), with one more environment variable when env is
// NAME=VALUE (Open MPI's mpirun passes OMPI_MCA_* on to the ranks), and reads what it printed.
BenchOutput run_bench(const std::vector<std::string>& command, const std::string& env) {
  std::vector<std::string> argv = command;
  int fds[2];
  if (pipe(fds) != 0) throw std::runtime_error("cannot start the benchmark: pipe failed");
  pid_t pid = fork();
  if (pid == 0) {
    if (!env.empty()) putenv(const_cast<char*>(env.c_str()));
    dup2(fds[1], 1);
    close(fds[0]);
    std::vector<char*> a;
    for (auto& s : argv) a.push_back(s.data());
    a.push_back(nullptr);
    execvp(a[0], a.data());
    std::fprintf(stderr, "mpiadvise: cannot run %s: %s\n", a[0], std::strerror(errno));
    _exit(127);
  }
  close(fds[1]);
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read(fds[0], buf, sizeof buf)) > 0) out.append(buf, static_cast<size_t>(n));
  close(fds[0]);
  int status = 0;
  waitpid(pid, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw std::runtime_error(fmt::format("the benchmark failed (exit status {}): see its messages above",
                                         WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status)));
  BenchOutput b;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] != '{') continue;
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded()) continue;
    if (j.value("facts", false)) b.facts = j;
    else if (j.value("persistent", false)) b.persistent = j;
    else b.samples.push_back(RoundTrip{j.value("k", uint64_t{0}), j.value("w", 0.0), j.value("rtt_ns", 0.0), j.value("send_ns", 0.0)});
  }
  return b;
}

int run_calibrate(const CalibrateOptions& o) {
  uint64_t max_size = parse_bytes("--max-size", o.max_size);
  if (max_size < 4096 || max_size > (1ull << 30))
    throw CLI::ValidationError("--max-size", o.max_size + " is out of range (4K to 1G)");
  if (!(o.W_us > 0 && o.W_us <= 1e6)) throw CLI::ValidationError("--w", fmt::format("{} us is out of range (0 to 1 s)", o.W_us));
  {  // the output must be writable before the measurement starts, not after; a probe leaves nothing behind
    bool existed = fs::exists(o.output);
    std::ofstream probe(o.output, std::ios::app);
    if (!probe) throw std::runtime_error(o.output + ": cannot write the parameter file: " + std::strerror(errno));
    probe.close();
    if (!existed) fs::remove(o.output);
  }
  double W = o.W_us * 1e3;
  int reps = o.reps > 0 ? o.reps : o.quick ? 5 : 21;
  auto sizes = sweep(max_size, o.quick);
  std::vector<std::string> argv = o.command;
  argv.push_back(bench_path(o.bench).string());
  argv.push_back(fmt::format("{:.0f}", W));
  argv.push_back(std::to_string(reps));
  for (auto k : sizes) argv.push_back(std::to_string(k));
  std::fprintf(stderr, "mpiadvise calibrate: %zu sizes up to %s, w = 0 and w = %.0f us, %d repetitions\n", sizes.size(),
               bytes_text(max_size).c_str(), o.W_us, reps);
  BenchOutput run1 = run_bench(argv, "");
  nlohmann::json facts = run1.facts, persistent = run1.persistent;
  std::vector<RoundTrip> samples = run1.samples;
  if (samples.size() < 8) throw std::runtime_error("the benchmark printed too few measurements");
  Calibration c = calibrate(samples, W);
  const auto cvars = facts.value("cvars", nlohmann::json::object());
  std::string transport;
  if (cvars.contains("btl_tcp_eager_limit") && !cvars.contains("btl_vader_eager_limit")) transport = "tcp";
  facts["transport"] = transport;
  // The eager terms again, over every size, with the limit raised above the largest: what a what-if on
  // S needs (a fit below the configured S alone can misprice larger eager messages several-fold).
  // Only where raising the limit is known to make sends eager: Open MPI over TCP, MPICH's cvar.
  std::string limit_env;
  const uint64_t raised = uint64_t{1} << static_cast<int>(std::ceil(std::log2(static_cast<double>(max_size) * 2)));
  if (transport == "tcp") limit_env = fmt::format("OMPI_MCA_btl_tcp_eager_limit={}", raised);
  for (const auto& [name, v] : cvars.items())
    if (name.find("EAGER_MAX_MSG_SIZE") != std::string::npos)
      limit_env = fmt::format("{}{}={}", name.rfind("MPIR_CVAR_", 0) == 0 ? "" : "MPIR_CVAR_", name, raised);
  std::optional<EagerTerms> eager;
  std::string eager_note;  // why the eager terms come from the first sweep after all
  if (raised > (uint64_t{1} << 28)) limit_env.clear(), eager_note = "the sweep is too large to raise the eager limit above it";
  if (!limit_env.empty() && !o.no_eager_sweep) {
    std::fprintf(stderr, "mpiadvise calibrate: the eager terms over every size, with %s\n", limit_env.c_str());
    try {
      BenchOutput run2 = run_bench(argv, limit_env);
      const std::string name = limit_env.substr(0, limit_env.find('='));
      const std::string cvar_name = name.rfind("OMPI_MCA_", 0) == 0 ? name.substr(9) : name;
      const auto got = run2.facts.value("cvars", nlohmann::json::object());
      const bool raised_there = got.contains(cvar_name) && got[cvar_name].is_number() &&
                                got[cvar_name].get<double>() == static_cast<double>(raised);
      if (!raised_there) {
        eager_note = fmt::format("{} did not reach the ranks (an --mca {} in the launcher's command wins over the "
                                 "environment): the eager terms are the first sweep's", limit_env, cvar_name);
      } else {
        eager = fit_eager_terms(run2.samples, W);
      }
    } catch (const std::exception& e) {
      eager_note = fmt::format("the sweep with {} failed ({}): the eager terms are the first sweep's", limit_env, e.what());
    }
  }
  if (eager) {
    c.params.Oss = eager->Oss;
    c.params.Ors = eager->Ors;
    c.params.Gs = eager->Gs;
    c.params.s = c.s = c.params.S;  // one eager segment: Gs up to S, Gl beyond
    std::erase_if(c.clamped, [](const std::string& cl) {  // the first fit's eager terms are replaced
      return cl.rfind("Oss ", 0) == 0 || cl.rfind("Ors ", 0) == 0 || cl.rfind("Gs ", 0) == 0;
    });
    LogGPS m(c.params);
    double sum = 0;
    for (const auto& r : samples) {
      double e = (m.round_trip(r.k, r.w) - r.rtt_ns) / r.rtt_ns;
      sum += e * e;
    }
    c.residual_rms = std::sqrt(sum / static_cast<double>(samples.size()));
  }
  // a 0-byte exchange is two calls (a send and a receive) on two requests
  std::optional<double> saving;
  if (persistent.contains("exchange_ns") && persistent.contains("persistent_exchange_ns"))
    saving = (persistent["exchange_ns"].get<double>() - persistent["persistent_exchange_ns"].get<double>()) / 2;
  std::ofstream file(o.output);
  std::string text = params_toml(c, facts, W);
  if (eager) {
    std::string note = fmt::format("# Oss, Ors and Gs from a second sweep with {} (sizes sent eagerly, up to {} bytes)",
                                   limit_env, eager->largest);
    for (const auto& cl : eager->clamped) note += "\n# that sweep gave " + cl + ": set to 0";
    text.insert(text.find("\ndescription = "), "\n" + note);
  }
  file << text;
  if (saving)
    file << fmt::format("\n# MPI_Isend + MPI_Irecv + MPI_Waitall of 0 bytes took {:.0f} ns, MPI_Startall + MPI_Waitall on\n"
                        "# persistent requests {:.0f} ns: per call, a persistent request saves\n[mpi]\npersistent_saving_ns = {:.1f}\n",
                        persistent["exchange_ns"].get<double>(), persistent["persistent_exchange_ns"].get<double>(), *saving);
  if (!file) throw std::runtime_error(o.output + ": cannot write the parameter file");
  const auto& p = c.params;
  fmt::print("mpiadvise calibrate: {}\n", facts.value("mpi_library", "").substr(0, 60));
  fmt::print("  L {:.0f} ns, o' {:.0f} ns, Oss {:.3f}, Ors {:.3f}, Osl {:.3f}, Orl {:.3f}, Gs {:.3f}, Gl {:.3f} ns/B\n", p.L,
             p.o, p.Oss, p.Ors, p.Osl, p.Orl, p.Gs, p.Gl);
  fmt::print("  s {} bytes; effective S {} bytes (a {}-byte send waited); residual RMS {:.1f}%\n", c.s, c.S,
             c.S_next ? std::to_string(c.S_next) : std::string("no"), 100 * c.residual_rms);
  for (const auto& [k, v] : cvars.items()) {
    if (!v.is_number()) continue;
    uint64_t limit = v.get<uint64_t>();
    bool agrees = limit >= c.S && (c.S_next == 0 || limit < c.S_next + 64);
    fmt::print("  MPI_T {} = {}{}\n", k, limit,
               agrees ? "  (agrees with the effective S)" : "  (differs from the effective S: another transport, or not the limit in force)");
  }
  if (saving)
    fmt::print("  a persistent request saves {:.0f} ns per call{}\n", *saving,
               *saving < 0 ? " (it costs more: the library's persistent path is the slower one)" : "");
  if (eager)
    fmt::print("  Oss, Ors, Gs from the sweep with {}: eager up to {} bytes{}\n", limit_env, eager->largest,
               eager->left_out ? fmt::format(" ({} larger sizes still waited, left out)", eager->left_out) : std::string());
  if (!eager_note.empty()) fmt::print("  note: {}\n", eager_note);
  for (const auto& cl : c.clamped) fmt::print("  note: the fit gave {}: set to 0\n", cl);
  if (eager)
    for (const auto& cl : eager->clamped) fmt::print("  note: the sweep with the limit raised gave {}: set to 0\n", cl);
  fmt::print("  written to {}\n", o.output);
  return kOk;
}

}  // namespace

std::function<int()> add_calibrate(CLI::App& app) {
  auto o = std::make_shared<CalibrateOptions>();
  auto* sub = app.add_subcommand("calibrate", "Measure the LogGPS parameters and the effective S: mpiadvise calibrate -- mpirun -np 2 ...");
  sub->add_option("-o,--output", o->output, "Parameter file to write (default calibrated.toml)");
  sub->add_flag("--quick", o->quick, "Fewer sizes and repetitions (for tests)");
  sub->add_option("--w", o->W_us, "The dummy computation W in us (default 2000; must exceed a round trip below S)");
  sub->add_option("--reps", o->reps, "Round trips per size and w; the median is kept (default 21, --quick 5)")
      ->check(CLI::Range(1, 10000));
  sub->add_option("--max-size", o->max_size, "Largest message of the sweep (default 1M; 4K to 1G)");
  sub->add_flag("--no-eager-sweep", o->no_eager_sweep,
                "Skip the second sweep with the eager limit raised (the eager terms then come from sizes up to S)");
  sub->add_option("--bench", o->bench, "The benchmark program (default: mpiadvise-calibrate-bench beside mpiadvise)");
  sub->add_option("command", o->command, "The launcher and its arguments, after --, for 2 ranks")->required();
  return [o] { return run_calibrate(*o); };
}

}  // namespace mpiadvise::cli

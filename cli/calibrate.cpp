// mpiadvise calibrate [options] -- LAUNCHER ARGS...: measures the LogGPS parameters and the effective S of
// this machine by the paper's round-trip method and writes a parameter file.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstring>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <string_view>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>
#include <optional>

#include "calibration.hpp"
#include "run_facts.hpp"
#include "commands.hpp"
#include "format_units.hpp"
#include "mpi_choice.hpp"

namespace mpiadvise::cli {
namespace fs = std::filesystem;
namespace {

struct CalibrateOptions {
  std::string output = "calibrated.toml";
  bool quick = false;
  double W_us = 500;
  int reps = 0;
  std::string max_size = "1M";
  std::string bench;
  bool no_eager_sweep = false;
  int runs = 1;
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

// Powers of two with three points between each (one with --quick): the curves' shape; S itself is
// bisected between two of them.
std::vector<uint64_t> sweep(uint64_t max_size, bool quick) {
  std::vector<uint64_t> out{0};
  for (uint64_t p = 256; p <= max_size; p *= 2)
    for (double f : quick ? std::vector<double>{1, 1.5} : std::vector<double>{1, 1.25, 1.5, 1.75}) {
      uint64_t k = static_cast<uint64_t>(p * f);
      if (k <= max_size) out.push_back(k);
    }
  return out;
}

// --bench, else the benchmark built for the launcher's MPI
fs::path bench_path(const std::string& given, const std::vector<std::string>& command) {
  if (!given.empty()) return given;
  return mpi_file(choose_mpi(command, "").mpi, "mpiadvise-calibrate-bench");
}

// What one run of the benchmark printed.
struct BenchOutput {
  nlohmann::json facts, persistent, posts;
  Sweep sweep;               // its samples, and S from its bisection (s = S until the fit chooses)
  std::optional<uint64_t> S_next;  // the smallest size whose send waited; none when no size of the sweep waited
  int probes = 0;            // round-trip probes of the bisection
  std::vector<Flood> floods; // eager sends to a late receiver
  std::map<uint64_t, std::vector<double>> late;  // k -> each MPI_Recv of an eager message that came first, ns
  std::vector<RoundTrip> resend;     // round trips of data sent again unchanged (w = 0)
  std::vector<RoundTrip> resend_fresh;  // those of data just written taken beside them, one per size
  std::vector<RoundTrip> every_run;  // the samples of each run pooled (--runs), for the machine's speeds
  RunSpeeds speeds;                  // the runs' speeds, and those pooled (--runs)
};

// The bisection's line: S is the largest size whose send returned while the receiver computed, S_next
// the smallest that waited (null: none of the sweep did); S = -1 when even the smallest waited.
void read_bisection(const nlohmann::json& j, BenchOutput& b) {
  const auto S = j.value("S", int64_t{-1});
  if (S < 0) throw std::runtime_error("the benchmark's smallest send waited for its receiver: no size is sent eagerly");
  b.sweep.S = b.sweep.s = static_cast<uint64_t>(S);
  if (j.contains("S_next") && j["S_next"].is_number()) b.S_next = j["S_next"].get<uint64_t>();
  b.probes = j.value("probes", 0);
}

// Runs the benchmark under the launcher (argv), with one more environment variable when env is
// NAME=VALUE (Open MPI's mpirun and MPICH's Hydra pass the environment on to the ranks), and reads what
// it printed.
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
  // Once the benchmark printed its last line (done), the job has kFinalizeGrace to end: MPICH over UCX
  // 1.13's TCP transport can spin in MPI_Finalize for ever, one rank flushing an endpoint whose peer has
  // left for the launcher's barrier (rank 0 in ucp_worker_progress under PMPI_Finalize, rank 1 reading
  // its PMI socket: seen here, 2 of about 40 full calibrations; openucx/ucx#8738). Its measurements are
  // whole by then: the launcher is stopped (SIGTERM, which mpirun and Hydra pass on to the ranks) and the
  // calibration goes on.
  constexpr int kFinalizeGrace = 30;  // s
  std::string out;
  char buf[4096];
  bool done = false, stopped = false;
  time_t done_at = 0;
  for (;;) {
    int timeout_ms = -1;
    if (done) timeout_ms = static_cast<int>(std::max<time_t>(0, done_at + kFinalizeGrace - std::time(nullptr)) * 1000);
    pollfd pfd{fds[0], POLLIN, 0};
    const int ready = poll(&pfd, 1, timeout_ms);
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) {  // done, and the job did not end in time
      kill(pid, SIGTERM);
      stopped = true;
      std::fprintf(stderr,
                   "mpiadvise calibrate: the benchmark's job had not ended %d s after its last measurement "
                   "(ranks left in MPI_Finalize: UCX 1.13's TCP transport can hang there); stopped it, its "
                   "measurements are whole\n", kFinalizeGrace);
      break;
    }
    const ssize_t n = read(fds[0], buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    static constexpr std::string_view kDone = "{\"done\":true}";
    const size_t from = out.size() < kDone.size() ? 0 : out.size() - kDone.size();  // the line may span reads
    out.append(buf, static_cast<size_t>(n));
    if (!done && out.find(kDone, from) != std::string::npos) done = true, done_at = std::time(nullptr);
  }
  close(fds[0]);
  int status = 0;
  if (stopped) {  // SIGTERM, then SIGKILL if the launcher does not go within 10 s
    for (int i = 0; i < 100 && waitpid(pid, &status, WNOHANG) == 0; i++) usleep(100000);
    if (waitpid(pid, &status, WNOHANG) == 0) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
    }
  } else {
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
  }
  if (!stopped && (!WIFEXITED(status) || WEXITSTATUS(status) != 0))
    throw std::runtime_error(fmt::format("the benchmark failed (exit status {}): see its messages above",
                                         WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status)));
  BenchOutput b;
  bool bisected = false;
  std::istringstream lines(out);
  for (std::string line; std::getline(lines, line);) {
    if (line.empty() || line[0] != '{') continue;
    auto j = nlohmann::json::parse(line, nullptr, false);
    if (j.is_discarded()) throw std::runtime_error("the benchmark printed a line that is not JSON: " + line.substr(0, 80));
    if (j.value("facts", false)) b.facts = j;
    else if (j.value("persistent", false)) b.persistent = j;
    else if (j.value("posts", false)) b.posts = j;
    else if (j.value("bisection", false)) read_bisection(j, b), bisected = true;
    else if (j.value("late_receive", false) && j.contains("k") && j["k"].is_number_unsigned() && j["ns"].is_array()) {
      // a repetition whose send took over a millisecond waited for its receiver: no eager message
      const auto ns = j["ns"].get<std::vector<double>>();
      const auto send_ns = j.value("send_ns", std::vector<double>{});
      auto& times = b.late[j["k"].get<uint64_t>()];
      for (size_t i = 0; i < ns.size(); i++)
        if (i >= send_ns.size() || send_ns[i] < 1e6) times.push_back(ns[i]);
    } else if (j.value("resend", false) && j.contains("k") && j["rtt_ns"].is_array()) {
      b.resend.push_back(from_repetitions(j["k"].get<uint64_t>(), 0, j["rtt_ns"].get<std::vector<double>>(), {}));
      if (j.contains("fresh_rtt_ns") && j["fresh_rtt_ns"].is_array())
        b.resend_fresh.push_back(from_repetitions(j["k"].get<uint64_t>(), 0, j["fresh_rtt_ns"].get<std::vector<double>>(), {}));
    } else if (j.value("flood", false) && j["through"].is_array())
      b.floods.push_back({j.value("k", uint64_t{0}), j.value("sent", uint64_t{0}), j["through"].get<std::vector<uint64_t>>()});
    else if (j.contains("k") && j.contains("rtt_ns") && j["rtt_ns"].is_array())
      b.sweep.samples.push_back(from_repetitions(j["k"].get<uint64_t>(), j.value("w", 0.0),
                                                 j["rtt_ns"].get<std::vector<double>>(),
                                                 j.value("send_ns", std::vector<double>{})));
  }
  if (b.facts.is_null()) throw std::runtime_error("the benchmark printed no facts line: is it mpiadvise-calibrate-bench?");
  if (!bisected) throw std::runtime_error("the benchmark printed no effective S: is it mpiadvise-calibrate-bench of this version?");
  if (b.sweep.samples.size() < 8) throw std::runtime_error("the benchmark printed too few measurements");
  b.every_run = b.sweep.samples;
  return b;
}

// The benchmark run `runs` times (--runs), pooled into one output: each (w, k)'s round trip and send time
// the median over the runs at the middle run's speed (run_speeds), S the runs' median, the floods of every
// run, the posting costs' medians.
// A run of the benchmark can settle in a state of its own for all its sizes (the ranks' placement, the
// transport's buffers): one quick run over Open MPI's vader fitted Osl at 0.368 ns/B where three more gave
// 0.164-0.188, and the halo example was then predicted +47%.
BenchOutput run_bench_pooled(const std::vector<std::string>& command, const std::string& env, int runs) {
  BenchOutput first = run_bench(command, env);
  if (runs <= 1) return first;
  std::vector<BenchOutput> all;
  all.push_back(std::move(first));
  for (int i = 1; i < runs; i++) {
    std::fprintf(stderr, "mpiadvise calibrate: run %d of %d of the benchmark%s%s\n", i + 1, runs, env.empty() ? "" : " with ",
                 env.c_str());
    all.push_back(run_bench(command, env));
  }
  std::vector<std::vector<RoundTrip>> samples;
  for (const auto& run : all) samples.push_back(run.sweep.samples);
  RunSpeeds speeds = run_speeds(samples);
  BenchOutput b = all[speeds.keep.front()];
  b.speeds = speeds;
  b.every_run.clear();
  for (const auto& run : all) b.every_run.insert(b.every_run.end(), run.sweep.samples.begin(), run.sweep.samples.end());
  // each (w, k) the median over the runs kept
  auto pool = [&](std::vector<RoundTrip>& samples, auto of) {
    for (RoundTrip& s : samples) {
      std::vector<double> rtt, send;
      for (size_t i : speeds.keep)
        for (const RoundTrip& r : of(all[i]))
          if (r.k == s.k && r.w == s.w) {
            if (r.rtt_ns > 0) rtt.push_back(r.rtt_ns);
            if (r.send_ns > 0) send.push_back(r.send_ns);
          }
      s.rtt_ns = rtt.empty() ? 0.0 : median(rtt);
      s.send_ns = send.empty() ? 0.0 : median(send);
    }
  };
  pool(b.sweep.samples, [](const BenchOutput& r) -> const std::vector<RoundTrip>& { return r.sweep.samples; });
  pool(b.resend, [](const BenchOutput& r) -> const std::vector<RoundTrip>& { return r.resend; });
  pool(b.resend_fresh, [](const BenchOutput& r) -> const std::vector<RoundTrip>& { return r.resend_fresh; });
  std::vector<std::pair<uint64_t, std::optional<uint64_t>>> limits;  // S and S_next of each run
  for (const auto& run : all) limits.emplace_back(run.sweep.S, run.S_next);
  std::sort(limits.begin(), limits.end());
  b.sweep.S = b.sweep.s = limits[(limits.size() - 1) / 2].first;
  b.S_next = limits[(limits.size() - 1) / 2].second;
  b.floods.clear();
  for (const auto& run : all)
    for (const Flood& f : run.floods) {
      auto same = std::find_if(b.floods.begin(), b.floods.end(), [&](const Flood& g) { return g.k == f.k && g.sent == f.sent; });
      if (same == b.floods.end()) b.floods.push_back(f);
      else same->through.insert(same->through.end(), f.through.begin(), f.through.end());
    }
  b.late.clear();  // of the runs that found the pooled S: their sizes are S/8 ... S of it
  for (const auto& run : all)
    if (run.sweep.S == b.sweep.S)
      for (const auto& [k, times] : run.late) b.late[k].insert(b.late[k].end(), times.begin(), times.end());
  for (const char* key : {"isend_ns", "irecv_ns"}) {
    std::vector<double> v;
    for (const auto& run : all)
      if (run.posts.contains(key)) v.push_back(run.posts[key].get<double>());
    if (!v.empty()) b.posts[key] = median(v);
  }
  return b;
}

// A parameter with its standard error, as printed and written.
std::string with_error(const Fit& f, size_t i, int decimals) {
  const double v = fitted_param(f.params, i), e = f.std_error[i];
  std::string text = fmt::format("{:.{}f}", v, decimals);
  if (i == 8 && f.R_not_called_for)
    return text + " (held at 0: it does not lower the residual enough for one more parameter, by the Bayesian criterion)";
  if (!f.determined[i]) return text + " (no sample depends on it)";
  if (i == kConventionOr && f.o_r_is_o) return text + " (o': the samples measure o_r + L and o_r + D, and allow the send's o')";
  const std::string below = i == kConventionOr ? " (not o': the samples measure o_r + L and o_r + D)" : "";
  if (!f.separable[i]) return text + " (not told apart from the others by these samples: only their sum is known)" + below;
  text += fmt::format(" +- {:.{}f}", e, decimals);
  if (f.at_bound[i]) text += " (held at 0: the fit would make it negative)";
  return text + below;
}

// "0.050546  # +- 0.003022": a fitted per-byte parameter as a TOML value with its uncertainty as a comment
std::string toml_value(const Fit& f, size_t i) {
  const std::string text = with_error(f, i, fitted_in_ns(i) ? 3 : 6);
  const size_t space = text.find(' ');
  return space == std::string::npos ? text : text.substr(0, space) + "  # " + text.substr(space + 1);
}

// Fit::late_receive_dearer in words, broken into lines by `br`.
std::string late_receive_dearer_text(const Fit::LateReceiveDearer& d, const std::string& br) {
  return fmt::format("at {} bytes the round trip took {} with w = 0 and w + {} with w = {}: without D the model makes{}"
                     "the first 2(T1 + T2 + T3) and the second w + T1 + T3, at most half the first: here {:.2f}.{}"
                     "A receive whose message came while its receiver computed costs more than one it waited for,{}"
                     "which the paper's one o' does not price and D does: the set prices those w = 0 round trips {:+.0f}%{}"
                     "and those with w {:+.0f}% (mpiadvise-calibrate(1), THE MODEL'S STRUCTURE)",
                     d.k, duration_text(d.rtt_w0_ns), duration_text(d.comm_wW_ns), duration_text(d.w), br,
                     d.comm_wW_ns / d.rtt_w0_ns, br, br, 100 * d.error_w0, br, 100 * d.error_wW);
}

std::string left_out_text(const LeftOut& l) {
  return fmt::format("{} of {} bytes with w = {}: {} measured, {} modelled", l.send ? "MPI_Send" : "round trip", l.k,
                     duration_text(l.w), duration_text(l.measured_ns), duration_text(l.model_ns));
}

std::string params_toml(const Calibration& c, const BenchOutput& run, const std::string& transport, double W,
                        const std::string& method) {
  const Fit& f = c.fit;
  const auto& p = f.params;
  const nlohmann::json& facts = run.facts;
  std::time_t now = std::time(nullptr);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%d %H:%M", std::localtime(&now));
  std::string lib = facts.value("mpi_library", "");
  std::string first_line = lib.substr(0, lib.find_first_of("\r\n"));
  std::string library = lib.find("Open MPI") != std::string::npos ? "Open MPI" : lib.find("MPICH") != std::string::npos ? "MPICH" : first_line.substr(0, first_line.find(','));
  std::ostringstream o;
  std::string hosts;
  for (const auto& h : facts.value("hosts", nlohmann::json::array())) hosts += (hosts.empty() ? "" : " and ") + h.get<std::string>();
  o << "# LogGPS parameters calibrated by mpiadvise calibrate on " << date << " between ranks 0 and 1 on " << hosts << "\n# "
    << first_line << "\n";
  o << fmt::format("# round trips with w = 0 and w = {:.0f} ns, fitted by non-negative least squares ({} samples){}\n", W, f.rows,
                   method);
  o << fmt::format("# residual RMS {:.1f}% of the round trips, {:.1f}% of their communication (round trip less w)\n",
                   100 * f.residual_rtt, 100 * f.residual_comm);
  o << "# +- : one standard error, from the fit's covariance (the misfit counted as noise)\n";
  for (const auto& l : f.left_out) o << "# left out as disturbed: " << left_out_text(l) << "\n";
  if (f.receiver_not_late_from)
    o << "# from " << f.receiver_not_late_from << " bytes the communication outlasts w: those round trips add nothing to w = 0's\n";
  if (f.late_receive_dearer) o << "# " << late_receive_dearer_text(*f.late_receive_dearer, "\n# ") << "\n";
  o << "# effective S by bisection: a " << p.S << "-byte send returned while its receiver computed, "
    << (run.S_next ? fmt::format("a {}-byte one waited", *run.S_next) : std::string("no size of the sweep waited")) << "\n";
  const nlohmann::json cvars = facts.value("cvars", nlohmann::json::object());
  for (const auto& [k, v] : cvars.items()) o << "# MPI_T " << k << " = " << v.dump() << "\n";
  o << fmt::format("description = \"calibrated on {} ({})\"\n", facts.value("hostname", ""), date);
  o << fmt::format("library = \"{}\"\n", library);
  o << "transport = \"" << transport << "\"\n\n[loggps]\n";
  const char* keys[] = {"L_ns",           "o_ns",           "Oss_ns_per_byte", "Ors_ns_per_byte", "Osl_ns_per_byte", "Orl_ns_per_byte",
                        "Gs_ns_per_byte", "Gl_ns_per_byte", "R_ns",            "o_r_ns",          "D_ns"};
  static_assert(std::size(keys) == kFittedNames.size());
  for (size_t i = 0; i < kFittedNames.size(); i++) {
    const std::string value = toml_value(f, i);
    if (i == kConventionOr && f.o_r_is_o)  // absent, o_r is o': a what-if on o then moves both, as the fit did
      o << fmt::format("# {} = o_ns: {}\n", keys[i], value.substr(value.find("# ") + 2));
    else
      o << fmt::format("{} = {}\n", keys[i], value);
  }
  o << fmt::format("s_bytes = {}\nS_bytes = {}\n", p.s, p.S);
  return o.str();
}

std::string eager_buffer_text(const EagerBufferFit& b) {
  std::string counts;
  for (const auto& [k, c] : b.counts) counts += fmt::format("{}{} x {} B", counts.empty() ? "" : ", ", c, k);
  if (counts.empty()) return "not measured";
  if (!b.bytes && !b.messages) return fmt::format("no limit seen ({} sent at once)", counts);
  std::string text = b.bytes ? fmt::format("{} bytes", *b.bytes) : std::string();
  if (b.header) text += fmt::format(" (each message {} bytes more)", b.header);
  if (b.messages) text += fmt::format("{}at most {} messages", text.empty() ? "" : ", ", *b.messages);
  return text + fmt::format(" (sends that returned before one waited: {})", counts);
}

// Each size's late receives (the benchmark's eager messages whose MPI_Recv was posted 200 us after their
// send): the median, and what the model prices such a receive at with the fitted set, T3 + D = o_r + D +
// k Ors. Over TCP the late receiver reads the data from the socket then (mpiadvise-calibrate(1) gives the
// figures; calibrate_bench.c says what made it look dearer before). Not rows of the fit: the round trips
// with w measure the same receive, with the sender's T1.
struct LateReceive {
  uint64_t k = 0;
  size_t n = 0;
  double median_ns = 0, priced_ns = 0;
};
std::vector<LateReceive> late_receives(const std::map<uint64_t, std::vector<double>>& late, const LogGPSParams& p) {
  std::vector<LateReceive> out;
  const LogGPS m(p);
  for (const auto& [k, times] : late)
    if (!times.empty() && k <= p.S)  // the model's receive of a message that arrived before it was called
      out.push_back({k, times.size(), median(times), m.recv_side(k, 0, m.eager_arrival(k, 0) + 1, 1, false).overhead});
  return out;
}
std::string late_receives_toml(const std::vector<LateReceive>& late) {
  if (late.empty()) return "";
  std::string o = "\n# Late receives: eager messages whose MPI_Recv was posted 200 us after their send, so that they came\n"
                  "# first; the median receive of each size, and T3 + D = o_r + D + k Ors, what the set above prices it at:\n";
  for (const auto& l : late)
    o += fmt::format("#   {} bytes: {:.0f} ns (T3 + D {:.0f} ns), {} receives\n", l.k, l.median_ns, l.priced_ns, l.n);
  return o;
}

// The [eager] table of the parameter file, with the floods it comes from.
std::string eager_toml(const EagerBufferFit& b, const std::vector<Flood>& floods) {
  if (floods.empty()) return "";
  std::string o = "\n# The eager buffer: floods of eager MPI_Sends to a receiver that computes 20 ms first; the sends that\n"
                  "# returned before the first one that waited (one number per flood):\n";
  for (const auto& f : floods) {
    std::string t;
    for (auto c : f.through) t += (t.empty() ? "" : ", ") + std::to_string(c);
    o += fmt::format("#   {} bytes: {} of {} sent\n", f.k, t, f.sent);
  }
  if (!b.bytes && !b.messages) return o + "# every send of every flood returned at once: no limit seen, none written\n";
  o += "# (analyzer/calibration.hpp, fit_eager_buffer, says how the limits follow from them)\n[eager]\n";
  if (b.bytes) o += fmt::format("buffer_bytes = {}\nheader_bytes = {}\n", *b.bytes, b.header);
  if (b.messages) o += fmt::format("buffer_messages = {}\n", *b.messages);
  return o;
}

// A path of the [resend] fit in words: "8 sizes of 8192 to 1048576 bytes: 0.42 +- 0.02 times ..."
std::string resend_path_text(const ResendFit::Path& p) {
  return fmt::format("{} sizes of {} to {} bytes: {:.2f} +- {:.2f} times data just written{}; residual RMS {:.1f}% of those "
                     "round trips ({:.1f}% priced as data just written)",
                     p.rows, p.from, p.to, p.factor, p.error,
                     p.cached_bytes && p.to > *p.cached_bytes
                         ? fmt::format(" for up to {} bytes a message (the caches' hold: the rest as data just written; "
                                       "{:.1f}% with one factor for every size)",
                                       *p.cached_bytes, 100 * p.residual_one_factor)
                         : std::string(),
                     100 * p.residual_rtt, 100 * p.residual_as_fresh);
}
// The caches' hold the set takes: the rendezvous path's (fit_resend prices the other path with it), else
// the other's.
std::optional<uint64_t> resend_cached_bytes(const ResendFit& r) {
  if (r.rendezvous) return r.rendezvous->cached_bytes;
  return r.buffered ? r.buffered->cached_bytes : std::nullopt;
}
std::string resend_text(const ResendFit& r) {
  if (!r.buffered && !r.rendezvous) return "too few sizes whose per-byte terms count (--max-size): no [resend] table";
  std::string text;
  if (r.buffered) text += "copied through the library's buffers, " + resend_path_text(*r.buffered);
  if (r.rendezvous) text += std::string(text.empty() ? "" : "; ") + "by its rendezvous, " + resend_path_text(*r.rendezvous);
  return text;
}

// The [resend] table, with the round trips it comes from.
std::string resend_toml(const ResendFit& r, const LogGPSParams& full) {
  if (!r.buffered && !r.rendezvous) return "";
  std::string o = fmt::format(
      "\n# Data sent again unchanged: round trips with w = 0 with neither rank writing its buffer between its sends\n"
      "# (the library reads lines its caches hold, as in a halo's second send of the cells it just sent), fitted\n"
      "# as the set above with what data just written costs times a factor: the per-byte terms of a message the\n"
      "# library copies through its buffers (up to {} bytes), the per-byte terms and R of one its rendezvous\n"
      "# moves. The replay prices each message the tracer marks RESENT, with too little computation since the\n"
      "# send before to have rewritten it, so.\n",
      full.large_from ? std::max(*full.large_from, full.S) : full.S);
  if (r.buffered) o += "#   buffered: " + resend_path_text(*r.buffered) + "\n";
  if (r.rendezvous) o += "#   rendezvous: " + resend_path_text(*r.rendezvous) + "\n";
  if (const auto held = resend_cached_bytes(r))
    o += fmt::format("# cached_bytes: of a larger message the caches hold {} bytes, and the rest costs as data just written.\n",
                     *held);
  o += "[resend]\n";
  if (r.buffered) o += fmt::format("buffered_factor = {:.3f}  # +- {:.3f}\n", r.buffered->factor, r.buffered->error);
  if (r.rendezvous) o += fmt::format("rendezvous_factor = {:.3f}  # +- {:.3f}\n", r.rendezvous->factor, r.rendezvous->error);
  if (const auto held = resend_cached_bytes(r)) o += fmt::format("cached_bytes = {}\n", *held);
  return o;
}

// The environment variable that raises the eager limit above every size of the sweep, where one is
// known to: Open MPI's TCP BTL limit, and UCX's rendezvous threshold (MPICH 4's ch4 device over UCX, and
// Open MPI's pml ucx; MPICH's MPIR_CVAR_CH3_EAGER_MAX_MSG_SIZE changes nothing there). Empty otherwise.
std::string raising_env(const RunFacts& facts, uint64_t raised) {
  if (facts.library == "Open MPI" && facts.transport == "tcp") return fmt::format("OMPI_MCA_btl_tcp_eager_limit={}", raised);
  if (facts.eager_setting == "UCX_RNDV_THRESH") return fmt::format("UCX_RNDV_THRESH={}", raised);
  return "";
}

// e.g. "2 of the 3 runs of the benchmark ran more than 1.25 times slower than the fastest, the slowest 2.3
// times", or "8-byte round trips 0.44 or 1.03 us, the slower in 19% of the repetitions; 5 of 6 sizes up to
// 1024 bytes (over the runs) at two speeds, 2.3 times apart (their median)"
std::string speeds_text(const MachineSpeeds& m) {
  if (m.across_runs)
    return fmt::format("{} of the {} runs of the benchmark ran more than 1.25 times slower than the fastest, the "
                       "slowest {:.1f} times",
                       m.split, m.sizes, m.ratio);
  return fmt::format("{}-byte round trips {:.2f} or {:.2f} us, the slower in {:.0f}% of the repetitions; {} of {} sizes up "
                     "to {} bytes (over the runs) at two speeds, {:.1f} times apart (their median)",
                     m.k, m.of.fast_ns / 1e3, m.of.slow_ns / 1e3, 100 * m.of.slow_share, m.split, m.sizes, kSpeedsUpTo, m.ratio);
}

std::string pricing_text(const MachineSpeeds& m) {
  return m.across_runs ? "The set prices the runs at the middle run's speed"
                       : "Each size's round trip is the two speeds' mean, weighted by their shares (what a run spanning "
                         "many switches takes)";
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
  int reps = o.reps > 0 ? o.reps : o.quick ? 9 : 21;
  auto sizes = sweep(max_size, o.quick);
  std::vector<std::string> argv = o.command;
  argv.push_back(bench_path(o.bench, o.command).string());
  if (isatty(STDERR_FILENO)) argv.push_back("--progress");  // one line updated in place, on a terminal only
  argv.push_back(fmt::format("{:.0f}", W));
  argv.push_back(std::to_string(reps));
  for (auto k : sizes) argv.push_back(std::to_string(k));
  std::fprintf(stderr, "mpiadvise calibrate: %zu sizes up to %s, w = 0 and w = %.0f us, %d repetitions\n", sizes.size(),
               bytes_text(max_size).c_str(), o.W_us, reps);
  BenchOutput run1 = run_bench_pooled(argv, "", o.runs);
  const nlohmann::json& facts = run1.facts;
  const auto cvars = facts.value("cvars", nlohmann::json::object());
  const std::string lib = facts.value("mpi_library", "");
  // the library and transport as the report will see them in a traced run's header
  const RunFacts run_facts_here = run_facts(facts, facts.value("hosts", std::vector<std::string>{}));
  const std::string transport = run_facts_here.transport;
  // The same sweep again with the eager limit raised above the largest size, every size eager: what the
  // messages a what-if raising S makes eager cost (a fit below the configured S alone can misprice them
  // several-fold), fitted alone ([raised]); its sizes up to the first sweep's S are fitted together with
  // the first sweep, each sweep's rows with its own S, and s = S (one eager segment, as
  // LogGPSParams::move_S expects).
  const uint64_t raised = uint64_t{1} << static_cast<int>(std::ceil(std::log2(static_cast<double>(max_size) * 2)));
  std::string limit_env = raising_env(run_facts_here, raised);
  std::string eager_note;  // why there is no second sweep in the fit
  std::optional<BenchOutput> run2;
  if (raised > (uint64_t{1} << 28)) limit_env.clear(), eager_note = "the sweep is too large to raise the eager limit above it";
  if (limit_env.empty() && eager_note.empty() && !o.no_eager_sweep)
    eager_note = "no way to raise this library's eager limit is known: the eager terms come from the sizes up to S";
  if (!limit_env.empty() && !o.no_eager_sweep) {
    std::fprintf(stderr, "mpiadvise calibrate: the same sweep with %s\n", limit_env.c_str());
    try {
      BenchOutput r = run_bench_pooled(argv, limit_env, o.runs);
      if (r.sweep.S <= run1.sweep.S)
        eager_note = fmt::format("{} did not raise the effective S ({} bytes again; an --mca or -env of the launcher's "
                                 "command wins over the environment): the eager terms come from the sizes up to S",
                                 limit_env, r.sweep.S);
      else
        run2 = std::move(r);
    } catch (const std::exception& e) {
      eager_note = fmt::format("the sweep with {} failed ({}): the eager terms come from the sizes up to S", limit_env, e.what());
    }
  }
  // The library's second rendezvous protocol, where it has one above S: its sizes are left out of the
  // base fit and fitted alone ([large])
  std::optional<uint64_t> large_from;
  if (run_facts_here.large_from && *run_facts_here.large_from > run1.sweep.S) large_from = run_facts_here.large_from;
  run1.sweep.base_up_to = large_from;
  // the raised sweep's sizes above the library's own limit are [raised]'s alone
  if (run2) run2->sweep.base_up_to = run1.sweep.S;
  std::vector<Sweep> sweeps{run1.sweep};
  if (run2) sweeps.push_back(run2->sweep);
  Calibration c = calibrate(sweeps, run2.has_value());
  const Fit& f = c.fit;
  std::optional<LargeFit> large_fit;
  if (large_from) {
    Sweep first = run1.sweep;
    first.s = f.params.s;
    large_fit = fit_large(first, *large_from, f.params);
    if (!large_fit)
      fmt::print(stderr, "mpiadvise calibrate: too few sizes of the sweep above {} bytes: no [large] table (--max-size)\n",
                 *large_from);
  }
  // a 0-byte exchange is two calls (a send and a receive) on two requests
  const nlohmann::json& persistent = run1.persistent;
  std::optional<double> saving;
  if (persistent.contains("exchange_ns") && persistent.contains("persistent_exchange_ns"))
    saving = (persistent["exchange_ns"].get<double>() - persistent["persistent_exchange_ns"].get<double>()) / 2;
  std::string method;
  if (run2)
    method = fmt::format("\n# with a second sweep with {} (eager up to {} bytes{}), its sizes up to {} fitted together, s = S",
                         limit_env, run2->sweep.S, run2->S_next ? fmt::format(", {} waited", *run2->S_next) : std::string(),
                         run1.sweep.S);
  else if (f.params.s < f.params.S)
    method = fmt::format("\n# s chosen among {} candidates by the residual (a Bayesian criterion for the extra breakpoint)", c.s_tried.size());
  std::ofstream file(o.output);
  file << params_toml(c, run1, transport, W, method);
  if (saving)
    file << fmt::format("\n# MPI_Isend + MPI_Irecv + MPI_Waitall of 0 bytes took {:.0f} ns, MPI_Startall + MPI_Waitall on\n"
                        "# persistent requests {:.0f} ns: per call, a persistent request saves\n[mpi]\npersistent_saving_ns = {:.1f}\n",
                        persistent["exchange_ns"].get<double>(), persistent["persistent_exchange_ns"].get<double>(), *saving);
  const nlohmann::json& posts = run1.posts;
  if (posts.contains("isend_ns") && posts.contains("irecv_ns"))
    file << fmt::format("{}# the median MPI_Isend of 0 bytes to a posted receive, and MPI_Irecv before its message ({} calls\n"
                        "# each): what posting costs the caller, where the model's (6) and (10) say o'\n"
                        "isend_ns = {:.1f}\nirecv_ns = {:.1f}\n",
                        saving ? "" : "\n[mpi]\n", posts.value("calls", 0), posts["isend_ns"].get<double>(),
                        posts["irecv_ns"].get<double>());
  const EagerBufferFit buffer = fit_eager_buffer(run1.floods);
  file << eager_toml(buffer, run1.floods);
  const std::vector<LateReceive> late = late_receives(run1.late, f.params);
  file << late_receives_toml(late);
  std::optional<MachineSpeeds> speeds = machine_speeds(run1.speeds);
  if (!speeds) speeds = machine_speeds(run1.every_run);
  if (speeds)
    file << fmt::format("\n# This machine's messages went at two speeds: {}.\n# {}; a run at another speed is faster or "
                        "slower than predicted, and its report says so.\n"
                        "# speeds: each speed seen, as a factor on the set's times; a report whose run the set misses\n"
                        "# tries the set at the others (mpiadvise-replay(1)).\n"
                        "[machine]\nspeeds_ratio = {:.2f}\nslow_share = {:.2f}\nspeeds = [{:.3f}]\n",
                        speeds_text(*speeds), pricing_text(*speeds), speeds->ratio, speeds->slow_share,
                        fmt::join(speeds->factors, ", "));
  // the raised sweep alone: what eager messages above the library's own limit cost per byte
  std::optional<RaisedFit> raised_fit;
  if (run2) {
    raised_fit = fit_raised(run2->sweep, run1.sweep.S, f.params);
    if (!raised_fit)
      fmt::print(stderr, "mpiadvise calibrate: the sweep with {} has too few eager sizes above {} bytes: no [raised] table\n",
                 limit_env, run1.sweep.S);
  }
  // with the limit raised above every size, a send that still waited: the most S the library reaches
  const std::optional<uint64_t> raised_to =
      run2 && run2->S_next && run2->sweep.S > run1.sweep.S ? std::optional<uint64_t>(run2->sweep.S) : std::nullopt;
  if (raised_fit)
    file << fmt::format("\n# Eager messages above {} bytes, as {} sends them: the second sweep's {} samples of eager sizes\n"
                        "# from {} to {} bytes, fitted with every other parameter held at the values above (the fit of both\n"
                        "# sweeps prices every eager size alike). A what-if that raises S prices the messages it makes eager\n"
                        "# with these.{}\n[raised]\nfrom_bytes = {}\n{}"
                        "Oss_ns_per_byte = {:.6f}  # +- {:.6f}\nOrs_ns_per_byte = {:.6f}  # +- {:.6f}\n",
                        run1.sweep.S, limit_env, raised_fit->rows, run1.sweep.S + 1, run2->sweep.S,
                        raised_to ? fmt::format("\n# to_bytes: even so a {}-byte send waited for its receiver; no setting "
                                                "makes S larger than {}.", *run2->S_next, *raised_to)
                                  : std::string(),
                        run1.sweep.S, raised_to ? fmt::format("to_bytes = {}\n", *raised_to) : std::string(),
                        raised_fit->Oss, raised_fit->Oss_error, raised_fit->Ors, raised_fit->Ors_error);
  if (large_fit)
    file << fmt::format("\n# Messages above {} bytes go by the library's second rendezvous protocol\n# ({}):\n"
                        "# the sweep's {} round trips above it, fitted with every other parameter held at the values above\n"
                        "# (fitted without them); residual RMS {:.1f}% of those round trips. R_ns: what the protocol adds to\n"
                        "# each message.\n"
                        "[large]\nfrom_bytes = {}\nR_ns = {:.1f}  # +- {:.1f}\n"
                        "Osl_ns_per_byte = {:.6f}  # +- {:.6f}\nOrl_ns_per_byte = {:.6f}  # +- {:.6f}\n",
                        large_fit->from, run_facts_here.large_from_note, large_fit->rows, 100 * large_fit->residual_rtt,
                        large_fit->from, large_fit->R, large_fit->R_error, large_fit->Osl, large_fit->Osl_error, large_fit->Orl,
                        large_fit->Orl_error);
  // data sent again unchanged, against the whole set as written
  LogGPSParams full = f.params;
  if (large_fit)
    full.large_from = large_fit->from, full.R_large = large_fit->R, full.Osl_large = large_fit->Osl, full.Orl_large = large_fit->Orl;
  if (raised_fit) full.raised_from = run1.sweep.S, full.Oss_raised = raised_fit->Oss, full.Ors_raised = raised_fit->Ors;
  if (raised_fit) full.raised_to = raised_to;
  const ResendFit resend = fit_resend(run1.resend, full, run1.resend_fresh);
  file << resend_toml(resend, full);
  if (!file) throw std::runtime_error(o.output + ": cannot write the parameter file");
  fmt::print("mpiadvise calibrate: {}\n", lib.substr(0, std::min(lib.find_first_of("\r\n"), size_t{60})));
  for (size_t i = 0; i < kFittedNames.size(); i++)
    fmt::print("  {:<3} {} {}\n", kFittedNames[i], with_error(f, i, fitted_in_ns(i) ? 0 : 4), fitted_in_ns(i) ? "ns" : "ns/B");
  fmt::print("  residual RMS {:.1f}% of the round trips, {:.1f}% of their communication (round trip less w); {} samples\n",
             100 * f.residual_rtt, 100 * f.residual_comm, f.rows);
  if (f.receiver_not_late_from)
    fmt::print("  note: from {} bytes the communication outlasts w = {}: those round trips with w tell nothing beyond the "
               "w = 0 ones; a larger --w would\n", f.receiver_not_late_from, duration_text(W));
  if (f.late_receive_dearer) fmt::print("  note: {}\n", late_receive_dearer_text(*f.late_receive_dearer, "\n        "));
  if (!f.left_out.empty()) {
    fmt::print("  {} samples left out as disturbed (a rank descheduled during most of their repetitions), e.g. {}\n",
               f.left_out.size(), left_out_text(f.left_out.front()));
  }
  fmt::print("  s {} bytes; effective S {} bytes ({}; {} bisection probes)\n", f.params.s, f.params.S,
             run1.S_next ? fmt::format("a {}-byte send waited", *run1.S_next) : std::string("no size of the sweep waited"),
             run1.probes);
  for (const auto& [k, v] : cvars.items()) {
    if (!v.is_number()) continue;
    uint64_t limit = v.get<uint64_t>();
    bool agrees = limit >= f.params.S && (!run1.S_next || limit < *run1.S_next + 64);
    fmt::print("  MPI_T {} = {}{}\n", k, limit,
               agrees ? "  (agrees with the effective S)" : "  (differs from the effective S: another transport, or not the limit in force)");
  }
  if (run_facts_here.effective_S && run_facts_here.eager_setting.rfind("btl_", 0) != 0)  // not an MPI_T one: said above
    fmt::print("  {} governs the protocol switch here ({}): S {} bytes{}\n", run_facts_here.eager_setting,
               run_facts_here.effective_S_note, *run_facts_here.effective_S,
               *run_facts_here.effective_S == f.params.S ? ", as measured" : fmt::format(", but {} was measured", f.params.S));
  if (saving)
    fmt::print("  a persistent request saves {:.0f} ns per call{}\n", *saving,
               *saving < 0 ? " (it costs more: the library's persistent path is the slower one)" : "");
  if (posts.contains("isend_ns") && posts.contains("irecv_ns"))
    fmt::print("  posting: MPI_Isend {:.0f} ns, MPI_Irecv {:.0f} ns (o' {:.0f} ns)\n", posts["isend_ns"].get<double>(),
               posts["irecv_ns"].get<double>(), f.params.o);
  if (run2)
    fmt::print("  fitted with the sweep with {}: eager up to {} bytes{}\n", limit_env, run2->sweep.S,
               run2->S_next ? fmt::format(" (a {}-byte send still waited)", *run2->S_next) : std::string());
  if (raised_fit)
    fmt::print("  eager above {} bytes (the sweep with the limit raised, its sizes above it): Oss {:.4f}, Ors {:.4f} ns/B\n",
               run1.sweep.S, raised_fit->Oss, raised_fit->Ors);
  if (large_fit)
    fmt::print("  above {} bytes ({}): R {:.0f} +- {:.0f} ns more per message, Osl {:.4f} +- {:.4f}, Orl {:.4f} +- {:.4f} ns/B; "
               "residual RMS {:.1f}% of its {} round trips\n",
               large_fit->from, run_facts_here.large_from_note, large_fit->R, large_fit->R_error, large_fit->Osl,
               large_fit->Osl_error, large_fit->Orl, large_fit->Orl_error, 100 * large_fit->residual_rtt, large_fit->rows);
  if (!eager_note.empty()) fmt::print("  note: {}\n", eager_note);
  if (run1.speeds.speed.size() > 1) {
    std::string each;
    for (size_t i = 0; i < run1.speeds.speed.size(); i++)
      each += fmt::format("{}{:.2f}", i == 0 ? "" : i + 1 == run1.speeds.speed.size() ? " and " : ", ", run1.speeds.speed[i]);
    fmt::print("  the runs' round trips: {} times their median; pooled: the {} within 15% of the middle run's\n", each,
               run1.speeds.keep.size());
  }
  if (speeds)
    fmt::print("  note: this machine's messages went at two speeds: {}. {}; a run at another speed is faster or slower "
               "than predicted\n",
               speeds_text(*speeds), pricing_text(*speeds));
  fmt::print("  eager buffer for a late receiver: {}\n", eager_buffer_text(buffer));
  fmt::print("  data sent again unchanged: {}\n", resend_text(resend));
  if (!late.empty()) {
    std::string each;
    for (const auto& l : late)
      each += fmt::format("{}{} B {} (T3 + D {})", each.empty() ? "" : ", ", l.k, duration_text(l.median_ns),
                          duration_text(l.priced_ns));
    fmt::print("  late receives (eager messages received 200 us after their send; the model prices them at T3 + D): {}\n", each);
  }
  fmt::print("  written to {}\n", o.output);
  return kOk;
}

}  // namespace

std::function<int()> add_calibrate(CLI::App& app) {
  auto o = std::make_shared<CalibrateOptions>();
  auto* sub = app.add_subcommand("calibrate", "Measure the LogGPS parameters and the effective S: mpiadvise calibrate -- mpirun -np 2 ...");
  sub->add_option("-o,--output", o->output, "Parameter file to write (default calibrated.toml)");
  sub->add_flag("--quick", o->quick, "Fewer sizes and repetitions (for tests)");
  sub->add_option("--w", o->W_us, "The computation W in us before each receive (default 500, the paper's; should exceed a round trip below S)");
  sub->add_option("--reps", o->reps, "Round trips per size and w; the median is kept (default 21, --quick 9)")
      ->check(CLI::Range(1, 10000));
  sub->add_option("--runs", o->runs,
                  "Run the benchmark N times and fit the median of the runs' times for each size (default 1; 3 on a "
                  "machine whose runs differ)")
      ->check(CLI::Range(1, 100));
  sub->add_option("--max-size", o->max_size, "Largest message of the sweep (default 1M; 4K to 1G)");
  sub->add_flag("--no-eager-sweep", o->no_eager_sweep,
                "Skip the second sweep with the eager limit raised (the eager terms then come from the sizes up to S)");
  sub->add_option("--bench", o->bench, "The benchmark program (default: the one built for the launcher's MPI, lib/mpiadvise/MPI/mpiadvise-calibrate-bench)");
  sub->add_option("command", o->command, "The launcher and its arguments, after --, for 2 ranks")->required();
  return [o] { return run_calibrate(*o); };
}

}  // namespace mpiadvise::cli

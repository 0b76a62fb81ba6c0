// mpiadvise-synth (bench/synth.cpp): the logs it writes read as a traced run's do. Each pattern is
// generated small into a fresh directory and read with the analyzer's library: every rank's log reads
// without a problem and ends with its trailer, holds about the calls asked for, every message and
// collective matches, and the replay gives the run the shape of its pattern.
#include <catch2/catch.hpp>

#include <algorithm>
#include <fstream>
#include <numeric>
#include <regex>
#include <string>
#include <tuple>

#include <fmt/format.h>

#include "analysis.hpp"
#include "log_reader.hpp"
#include "replay.hpp"
#include "report_charts.hpp"
#include "run_facts.hpp"
#include "support.hpp"
#include "trace.hpp"

using namespace mpiadvise;
using namespace mpa_test;
using Catch::Detail::Approx;

namespace {

fs::path synth_bin() { return build_dir() / "bin" / "mpiadvise-synth"; }

JobResult synth(const std::string& args) { return run_command("'" + synth_bin().string() + "' " + args); }

// The logs of `pattern` for `ranks` ranks of about `events` calls each, in a fresh directory.
fs::path generate(const std::string& pattern, int ranks, int events, const std::string& more = "") {
  fs::path dir = fresh_dir("synth-" + pattern);
  auto r = synth(fmt::format("--ranks {} --events {} --pattern {} {} -o '{}'", ranks, events, pattern, more, dir.string()));
  INFO(r.err);
  REQUIRE(r.status == 0);
  REQUIRE(r.err.empty());
  return dir;
}

// Reads every rank: no problem, complete, calls in time order from MPI_Init to MPI_Finalize, and as
// many as the trailer counts. Returns the calls of each rank.
std::vector<uint64_t> read_all(const JobLog& job, int ranks, const std::string& pattern) {
  REQUIRE(job.world_size() == ranks);
  REQUIRE(job.ranks().size() == static_cast<size_t>(ranks));
  for (const auto& p : job.problems()) FAIL_CHECK(p.text());
  std::vector<uint64_t> counts;
  for (const auto& log : job.ranks()) {
    INFO("rank " << log->rank());
    CHECK(log->complete());
    CHECK(log->format_version() == MPA_FORMAT_VERSION);
    CHECK(log->header().at("synthetic").at("pattern") == pattern);
    CHECK(log->defines_world());
    uint64_t n = 0, last_exit = 0;
    std::string first, last;
    bool ordered = true;
    log->for_each_event([&](const Event& e) {
      if (n == 0) first = std::string(e.call_name);
      last = std::string(e.call_name);
      ordered = ordered && e.t_enter_ns <= e.t_exit_ns && (n == 0 || e.t_enter_ns >= last_exit);
      last_exit = e.t_exit_ns;
      n++;
    });
    CHECK(first == "MPI_Init");
    CHECK(last == "MPI_Finalize");
    CHECK(ordered);
    CHECK(log->trailer().at("events").get<uint64_t>() == n);
    counts.push_back(n);
  }
  return counts;
}

// Every message matched, none received before it was sent; every collective complete.
void check_matching(const Trace& t) {
  CHECK(t.unmatched_sends == 0);
  CHECK(t.unmatched_recvs == 0);
  CHECK(t.incomplete_collectives == 0);
  uint64_t early = 0;
  const auto recv_done = done_ops(t, Link::DoneRecv);
  for (size_t id = 0; id < t.messages.size(); id++) {
    const Message& m = t.messages[id];
    REQUIRE(m.matched());
    REQUIRE(recv_done[id] != kNone);
    if (t.op(m.dst, recv_done[id]).t_exit() < t.op(m.src, m.send_op).t_enter) early++;
  }
  CHECK(early == 0);
}

ReplayResult replay_of(const JobLog& job, const Trace& t) {
  const RunFacts facts = run_facts(job);
  ReplayOptions o;
  o.params = choose_params(facts, "", fs::path(MPA_SOURCE_DIR) / "share" / "params").params;
  mpiadvise::replay_library(facts, o);
  ReplayResult r = replay(t, o);
  CHECK(r.unresolved_ops == 0);
  CHECK(r.stalls.empty());
  CHECK(r.predicted_ns > 0);
  REQUIRE(r.ranks.size() == t.ranks.size());
  return r;
}

}  // namespace

TEST_CASE("synth halo: every rank's log reads, its messages match, the replay runs", "[synth]") {
  fs::path dir = generate("halo", 4, 200);
  JobLog job(dir);
  auto counts = read_all(job, 4, "halo");
  for (auto n : counts) CHECK(n >= 200 - 5);  // five calls an iteration, MPI_Init and MPI_Finalize
  for (auto n : counts) CHECK(n <= 200);
  Trace t = build_trace(job);
  check_matching(t);
  require_same_trace_on_any_threads(job);
  const uint64_t iterations = (200 - 2) / 5;
  CHECK(t.messages.size() == 4 * 2 * iterations);
  ReplayResult r = replay_of(job, t);
  // 10 us of computation an iteration on every rank, in the measured run and in the replay
  for (const auto& rank : r.ranks) CHECK(rank.predicted.computation >= 0.98 * 10000.0 * iterations);
  CHECK(r.measured_ns >= 10000.0 * iterations);
  // each rank's Waitall completes its two receives together: every message shares its receiver with one
  // other (Trace::receives_together), which the replay counts itself in a trace without them, and prices
  // (a trace that said each came alone replays otherwise)
  REQUIRE(t.receives_together);
  REQUIRE(t.receives_together->size() == t.messages.size());
  CHECK(std::all_of(t.receives_together->begin(), t.receives_together->end(), [](int32_t n) { return n == 2; }));
  ReplayOptions o;
  o.params = r.params;
  const double predicted = replay(t, o).predicted_ns;
  Trace counted = t;
  counted.receives_together.reset();
  CHECK(replay(counted, o).predicted_ns == predicted);
  counted.receives_together.emplace();  // counted: none together
  CHECK(replay(counted, o).predicted_ns != predicted);
  counted.receives_together->assign(t.messages.size() - 1, 1);  // not of these messages: counted again
  CHECK(replay(counted, o).predicted_ns == predicted);
  counted.receives_together->assign(t.messages.size(), 1);
  CHECK(replay(counted, o).predicted_ns != predicted);
}

TEST_CASE("a trace whose messages are not numbered by sender replays as the same trace numbered so", "[synth][replay]") {
  // the synthetic halo under Open MPI's vader set, whose eager buffer is limited: the replay makes a
  // channel of each sender-receiver pair with eager messages, by sender. The same trace with its messages
  // in the reverse order (every link renumbered, the receives together counted again) replays alike.
  fs::path dir = generate("halo", 4, 200, "--bytes 1024");  // eager: below vader's 4040 bytes
  const Trace t = build_trace(JobLog(dir));
  ReplayOptions o;
  o.params = find_params("openmpi-vader", fs::path(MPA_SOURCE_DIR) / "share" / "params");
  REQUIRE(LogGPS(o.params).eager_buffer_limited());
  Trace reversed = t;
  const auto n = static_cast<uint32_t>(t.messages.size());
  std::reverse(reversed.messages.begin(), reversed.messages.end());
  const auto message_link = [](Link::Kind k) { return k != Link::PostColl && k != Link::DoneColl; };
  for (auto& rank : reversed.ranks)
    for (auto& op : rank.ops)
      if (op.inline_link && message_link(static_cast<Link::Kind>(op.inline_link - 1)) && op.first_link != kNone)
        op.first_link = n - 1 - op.first_link;
  for (size_t i = 0; i < reversed.links.size(); i++)
    if (const Link l = reversed.links[i]; message_link(l.kind) && l.id != kNone) reversed.links.set_id(i, n - 1 - l.id);
  reversed.receives_together.reset();
  const ReplayResult a = replay(t, o), b = replay(reversed, o);
  CHECK(b.predicted_ns == a.predicted_ns);
  REQUIRE(a.ranks.size() == b.ranks.size());
  for (size_t r = 0; r < a.ranks.size(); r++) {
    INFO("rank " << r);
    CHECK(b.ranks[r].predicted_ns == a.ranks[r].predicted_ns);
    CHECK(b.ranks[r].predicted.send_wait == a.ranks[r].predicted.send_wait);
  }
}

TEST_CASE("the report's timeline shows the earliest calls of its first ranks, up to its cap", "[synth][report]") {
  // 40 ranks of a halo: the timeline shows ranks 0 to 31, and of their calls between MPI_Init and
  // MPI_Finalize the kTimelineCalls earliest entered (ties by rank, then by call), earliest first; 4 ranks:
  // every call. Each call's measured entry is its time since the first shown call's.
  static_assert(kTimelineRanks == 32 && kTimelineCalls == 3000);
  for (const auto& [ranks, events] : {std::pair{40, 100}, std::pair{4, 200}}) {
    INFO(ranks << " ranks of " << events << " calls");
    fs::path dir = generate("halo", ranks, events);
    Trace t = build_trace(JobLog(dir));
    struct Call {
      uint64_t enter;
      int rank;
      uint32_t op;
    };
    std::vector<Call> calls;
    for (int r = 0; r < std::min(ranks, kTimelineRanks); r++) {
      const ReplayWindow w = replay_window(t.ranks[r]);
      for (uint32_t i = w.first; i < w.end; i++) calls.push_back({t.ranks[r].ops[i].t_enter, r, i});
    }
    std::sort(calls.begin(), calls.end(), [](const Call& x, const Call& y) { return std::tie(x.enter, x.rank, x.op) < std::tie(y.enter, y.rank, y.op); });
    const bool truncated = calls.size() > kTimelineCalls;
    CHECK(truncated == (ranks == 40));  // 32 x 98 calls are more than the cap, 4 x 198 fewer
    if (truncated) calls.resize(kTimelineCalls);
    const auto timeline = report_json(dir).at("charts").at("timeline");
    CHECK(timeline.at("truncated") == truncated);
    CHECK(timeline.at("ranks_shown") == std::min(ranks, kTimelineRanks));
    const auto& shown = timeline.at("calls");
    REQUIRE(shown.size() == calls.size());
    for (size_t i = 0; i < calls.size(); i++) {
      INFO("call " << i << " of the timeline");
      REQUIRE(shown[i].at("rank") == calls[i].rank);
      REQUIRE(shown[i].at("measured_ns")[0].get<double>() == static_cast<double>(calls[i].enter - calls[0].enter));
    }
  }
}

TEST_CASE("synth pipeline: the run ends later down the pipeline", "[synth]") {
  fs::path dir = generate("pipeline", 4, 200);
  JobLog job(dir);
  auto counts = read_all(job, 4, "pipeline");
  const uint64_t iterations = (200 - 2) / 2;
  // the ranks inside the pipeline receive and send each iteration; its ends only send or receive
  CHECK(counts[0] == 2 + iterations);
  CHECK(counts[1] == 2 + 2 * iterations);
  CHECK(counts[2] == 2 + 2 * iterations);
  CHECK(counts[3] == 2 + iterations);
  Trace t = build_trace(job);
  check_matching(t);
  CHECK(t.messages.size() == 3 * iterations);
  ReplayResult r = replay_of(job, t);
  for (int k = 1; k < 4; k++) {
    INFO("rank " << k);
    CHECK(r.ranks[k].predicted_ns > r.ranks[k - 1].predicted_ns);
    CHECK(r.ranks[k].measured_ns > r.ranks[k - 1].measured_ns);
  }
  CHECK(r.ranks[3].predicted.recv_wait > r.ranks[1].predicted.recv_wait);
}

TEST_CASE("synth alltoall: one complete MPI_Alltoall per iteration", "[synth]") {
  fs::path dir = generate("alltoall", 4, 200, "--bytes 4096");
  JobLog job(dir);
  auto counts = read_all(job, 4, "alltoall");
  for (auto n : counts) CHECK(n == 200);
  Trace t = build_trace(job);
  check_matching(t);
  require_same_trace_on_any_threads(job);
  REQUIRE(t.collectives.size() == 198);
  for (const auto& c : t.collectives) {
    CHECK(c.call == MPA_CALL_Alltoall);
    CHECK(c.members.size() == 4);
    CHECK(c.bytes == 4096);
  }
  ReplayResult r = replay_of(job, t);
  CHECK(r.collectives_by_algorithm + r.collectives_approximate + r.collectives_closed_formula == 198);
  for (const auto& rank : r.ranks) CHECK(rank.predicted.collectives > 0);
}

TEST_CASE("synth allreduce: one complete MPI_Allreduce per iteration, every one replayed by its algorithm", "[synth]") {
  // 6 ranks: not a power of two, so that the algorithms' extra steps for the ranks beyond a power of two are walked
  fs::path dir = generate("allreduce", 6, 300, "--bytes 64");
  JobLog job(dir);
  auto counts = read_all(job, 6, "allreduce");
  for (auto n : counts) CHECK(n == 300);
  Trace t = build_trace(job);
  check_matching(t);
  require_same_trace_on_any_threads(job);
  REQUIRE(t.collectives.size() == 298);
  for (const auto& c : t.collectives) {
    CHECK(c.call == MPA_CALL_Allreduce);
    CHECK(c.members.size() == 6);
    CHECK(c.bytes == 64);
    for (size_t i = 0; i < c.members.size(); i++) CHECK((c.sent[i] == 64 && c.received[i] == 64));
  }
  ReplayResult r = replay_of(job, t);
  CHECK(r.collectives_by_algorithm == 298);  // the approximate among them
  CHECK(r.collectives_closed_formula == 0);
  for (const auto& rank : r.ranks) CHECK(rank.predicted.collectives > 0);
}

TEST_CASE("the logs of a run hold its call names, MPI_COMM_WORLD's members and its header's keys once, not once a rank",
          "[synth][memory]") {
  // every rank's log names the calls of the tracer's build and defines MPI_COMM_WORLD with all the ranks:
  // held by each log, they took the reading of 4096 ranks 118 KiB a rank (the members, the ranks squared)
  constexpr int kRanks = 12;
  fs::path dir = generate("allreduce", kRanks, 100);
  JobLog job(dir);
  read_all(job, kRanks, "allreduce");
  std::vector<int32_t> world(kRanks);
  std::iota(world.begin(), world.end(), 0);
  const RankLog& first = *job.ranks().front();
  REQUIRE(first.call_names().size() == MPA_CALL_COUNT);
  for (const auto& log : job.ranks()) {
    INFO("rank " << log->rank());
    CHECK(&log->call_names() == &first.call_names());
    const Communicator& w = log->comms().at(1);
    CHECK(w.members == world);
    CHECK(&w.members.list() == &first.comms().at(1).members.list());
    // MPI_COMM_SELF's members differ from rank to rank: each its own
    CHECK(log->comms().at(2).members == std::vector<int32_t>{log->rank()});
    CHECK((log->rank() == first.rank() || &log->comms().at(2).members.list() != &first.comms().at(2).members.list()));
    // the tables the definitions hold are not held again as the header's and the trailer's JSON
    CHECK_FALSE(log->header().contains("calls"));
    CHECK_FALSE(log->trailer().contains("comms"));
    CHECK_FALSE(log->trailer().contains("callsites"));
    // the header's keys of the run (the library, the program, the environment) are held once, those of
    // the rank (its rank, its clock's pairs) its own; the header whole has both
    const nlohmann::json h = log->header();
    CHECK(h.at("rank") == log->rank());
    CHECK(h.at("env") == *first.header_key("env"));
    CHECK(log->header_key("env") == first.header_key("env"));
    CHECK(log->header_key("mpi_library") == first.header_key("mpi_library"));
    CHECK(*log->header_key("rank") == log->rank());
    CHECK((log->rank() == first.rank() || log->header_key("clock") != first.header_key("clock")));
    CHECK(log->hostname() == h.at("hostname"));
    CHECK(log->header_key("no such key") == nullptr);
  }
  // another run's logs, of another size, hold their own world; this run's is still whole
  fs::path other = generate("halo", kRanks / 2, 100);
  JobLog job2(other);
  CHECK(job2.ranks().front()->comms().at(1).members.size() == kRanks / 2);
  CHECK(job2.ranks().front()->call_names() == first.call_names());
  CHECK(first.comms().at(1).members == world);
}

TEST_CASE("synth imbalance: rank r computes 1 + (r % 4) / 4 times as long as rank 0", "[synth]") {
  // long computations: the program's own time between its calls (100 ns each) is then negligible
  fs::path dir = generate("imbalance", 8, 500, "--compute-us 1000 --seed 7");
  JobLog job(dir);
  read_all(job, 8, "imbalance");
  Trace t = build_trace(job);
  check_matching(t);
  ReplayResult r = replay_of(job, t);
  const double base = r.ranks[0].predicted.computation;
  for (int k = 0; k < 8; k++) {
    INFO("rank " << k);
    CHECK(r.ranks[k].predicted.computation / base == Approx(1.0 + (k % 4) / 4.0).epsilon(0.01));
  }
  // the slowest of each four waits least
  CHECK(r.ranks[3].predicted.recv_wait < r.ranks[0].predicted.recv_wait);
}

TEST_CASE("synth: the same seed gives the same run, another seed another", "[synth]") {
  auto times = [](const fs::path& dir) {
    std::vector<uint64_t> d;
    JobLog job(dir);
    job.rank(1)->for_each_event([&](const Event& e) { d.push_back(e.t_exit_ns - e.t_enter_ns); });
    return d;
  };
  auto a = times(generate("halo", 3, 60, "--seed 5")), b = times(generate("halo", 3, 60, "--seed 5"));
  auto c = times(generate("halo", 3, 60, "--seed 6"));
  CHECK(a == b);
  CHECK(a != c);
}

TEST_CASE("synth: a bad option is one line naming it, and exit status 2", "[synth][cli]") {
  fs::path dir = fresh_dir("synth-bad");
  const std::string out = " -o '" + dir.string() + "'";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"--ranks 0 --events 100 --pattern halo", "--ranks"},
      {"--ranks four --events 100 --pattern halo", "--ranks"},
      {"--ranks 4 --events 100 --pattern ring", "--pattern"},
      {"--ranks 4 --events 2 --pattern halo", "--events"},
      {"--ranks 4 --events 100 --pattern halo --bytes -1", "--bytes"},
      {"--ranks 4 --events 100 --pattern halo --compute-us nan", "--compute-us"},
      {"--ranks 1 --events 100 --pattern pipeline", "--ranks"},
      {"--events 100 --pattern halo", "--ranks"},
      {"--ranks 4 --events 100 --pattern halo --colour red", "--colour"},
  };
  for (const auto& [args, option] : cases) {
    auto r = synth(args + out);
    INFO(args << ": " << r.err);
    CHECK(r.status == 2);
    CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
    CHECK(r.err.find(option) != std::string::npos);
    CHECK(r.out.empty());
  }
  CHECK(fs::is_empty(dir));  // nothing written

  // an -o that cannot be written: one line naming it
  const std::string bad = "/proc/mpiadvise-synth-test";
  auto r = synth("--ranks 2 --events 20 --pattern halo -o " + bad);
  INFO(r.err);
  CHECK(r.status == 2);
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK(r.err.find(bad) != std::string::npos);
}

TEST_CASE("synth: a directory holding a trace is refused, and replaced with --force", "[synth][cli]") {
  fs::path dir = generate("halo", 4, 40);
  auto r = synth("--ranks 2 --events 40 --pattern pipeline -o '" + dir.string() + "'");
  CHECK(r.status == 2);
  CHECK(r.err.find("already holds a trace") != std::string::npos);
  r = synth("--ranks 2 --events 40 --pattern pipeline --force -o '" + dir.string() + "'");
  INFO(r.err);
  REQUIRE(r.status == 0);
  JobLog job(dir);  // the new run alone: two ranks of one job
  read_all(job, 2, "pipeline");
}

// A run whose analysis cannot fit is refused before any of it is read into memory, in one line that
// names the calls, the memory needed and available, and what helps; never a bare std::bad_alloc. The
// limit is the address space (ulimit -v), which the check counts: 8 ranks x 2.2e5 calls (1759976, synth's
// count) need 24 MiB and 72 bytes a call whole (145 MiB), and held packed, as --low-memory holds them,
// 24 MiB, 48 KiB a rank, 20 bytes for each of the 2^20 ops the causes hold decoded and 42 bytes a call:
// 25165824 + 393216 + 20971520 + 73918992 bytes = 115 MiB; 112 MiB leaves less than either once the program
// is loaded (98 MiB here), and the line names the packed figure, the least. The part of the run it names
// (--until S: the longest first part whose calls, as the check counts them, fit whole or packed) is then
// analysed under the same limit; so is the part later in the run it names (--from S --until S+X: X
// leaves room for a chunk's calls more than the first part counts).
// AddressSanitizer reserves terabytes of address space for its shadow memory, so under it no
// ulimit -v lets the program start: the case runs in the ordinary build only (make check).
#if defined(__SANITIZE_ADDRESS__)
#define MPA_TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MPA_TEST_ASAN 1
#endif
#endif
#ifdef MPA_TEST_ASAN
#define SKIP_UNDER_ASAN()                                                                                      \
  do {                                                                                                         \
    WARN("not run under AddressSanitizer: its shadow memory needs more address space than ulimit -v leaves"); \
    return;                                                                                                    \
  } while (0)
#else
#define SKIP_UNDER_ASAN() \
  do {                    \
  } while (0)
#endif
TEST_CASE("report says, in one line, when the logs cannot be analysed in the memory there is", "[synth]") {
  SKIP_UNDER_ASAN();
  fs::path dir = generate("halo", 8, 220000);
  auto r = run_command(fmt::format("ulimit -v 114688; '{}' report '{}'", mpiadvise_cmd(), dir.string()));
  INFO(r.err);
  CHECK(r.status != 0);
  CHECK(r.out.empty());
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK(r.err.find("bad_alloc") == std::string::npos);
  CHECK(r.err.find(dir.string()) != std::string::npos);
  CHECK(r.err.find("MPI calls") != std::string::npos);
  CHECK(r.err.find("needs about 115 MiB of address space (44 MiB and 42 bytes a call, the calls held packed once "
                   "read, as --low-memory holds them)") != std::string::npos);
  CHECK(r.err.find("ulimit -v") != std::string::npos);
  // what helps without tracing again: a part of the run, --until S, S the share of the run's seconds that
  // fits, which is analysed under the same limit
  std::smatch m;
  REQUIRE(std::regex_search(r.err, m, std::regex(R"(\(--until ([0-9.e+-]+)\))")));
  const double fit_s = std::stod(m[1]);
  CHECK(fit_s > 0);
  auto part = run_command(fmt::format("ulimit -v 114688; '{}' report --until {} '{}'", mpiadvise_cmd(), m[1].str(), dir.string()));
  INFO(part.err);
  CHECK(part.status <= 1);
  CHECK(part.out.find("(--until)") != std::string::npos);
  CHECK(r.err.find("MPI_Pcontrol") != std::string::npos);
  // as long a part later in the run: the refusal names a part of X seconds (--from S --until S+X) a little
  // shorter than the first, leaving room for the chunk the part starts in, and it is analysed at once
  std::smatch elsewhere;
  REQUIRE(std::regex_search(r.err, elsewhere, std::regex(R"(\(--from S --until S\+([0-9.e+-]+)\))")));
  const double later_s = std::stod(elsewhere[1]);
  CHECK(later_s > 0);
  CHECK(later_s <= fit_s);
  const std::string later = fmt::format("--from {} --until {}", m[1].str(), fit_s + later_s);
  auto second = run_command(fmt::format("ulimit -v 114688; '{}' report {} '{}'", mpiadvise_cmd(), later, dir.string()));
  INFO(later << ": " << second.err);
  CHECK(second.status <= 1);
  CHECK(second.out.find("(--from") != std::string::npos);  // --until beyond the run's end cuts nothing
}

TEST_CASE("report says, in one line, when a run of collectives cannot be analysed in the memory there is, once its "
          "logs are read", "[synth]") {
  SKIP_UNDER_ASAN();
  // 2 ranks x 4e5 calls of MPI_Allreduce: an instance to every two calls. Counted as calls alone before
  // the reading (24 MiB + 2 x 24 KiB + 800000 x 72 B = 79 MiB) they fit in the 88 MiB ulimit -v 100 MiB
  // leaves; read, the collectives count too: 24 MiB + 2 x 24 KiB + 800000 x (72 + 48 for a collective's
  // call + 16 / 2 for an instance of 2 ranks) = 122 MiB whole, which does not (the analysis needs about
  // 110 MiB: without this count it ran out of memory partway), nor packed: 24 MiB + 2 x 48 KiB + 800000 x
  // 20 for the ops held decoded + 800000 x (42 + 48 + 8) = 114 MiB, the least, which the line names (39 MiB
  // of it fixed)
  fs::path dir = generate("allreduce", 2, 400000, "--bytes 8");
  const auto under_limit = [&](const std::string& args) {
    return run_command(fmt::format("ulimit -v 102400; '{}' report --threads 1 {} '{}'", mpiadvise_cmd(), args, dir.string()));
  };
  auto r = under_limit("");
  INFO(r.err);
  CHECK(r.status == 2);
  CHECK(r.out.empty());
  CHECK(std::count(r.err.begin(), r.err.end(), '\n') == 1);
  CHECK(r.err.find("out of memory") == std::string::npos);
  CHECK(r.err.find("bad_alloc") == std::string::npos);
  CHECK(r.err.find("hold 800000 MPI calls") != std::string::npos);
  CHECK(r.err.find("needs about 114 MiB of address space (39 MiB and 98 bytes a call, 100% of them calls of "
                   "collectives, the calls held packed once read, as --low-memory holds them)") != std::string::npos);
  // the part it names is analysed under the same limit
  std::smatch m;
  REQUIRE(std::regex_search(r.err, m, std::regex(R"(\(--until ([0-9.e+-]+)\))")));
  auto part = under_limit("--until " + m[1].str());
  INFO(part.err);
  CHECK(part.status <= 1);
  CHECK(part.out.find("(--until)") != std::string::npos);
}

// A run that fits only with its calls held packed is analysed so, without being asked (--low-memory),
// and the report is the one the whole trace gives: one line on stderr says so. 8 ranks x 250000 calls
// (1999976, synth's count) need 24 MiB + 8 x 24 KiB + 1999976 x 72 bytes = 161 MiB of address space
// whole, and packed 24 MiB + 8 x 48 KiB + 2^20 x 20 + 1999976 x 42 bytes = 124 MiB; 160 MiB leaves 147
// beside the program.
// One replay at a time (--threads 1): a second would need 64 MiB more, and its line would be said too.
TEST_CASE("report holds the calls packed where only so they fit, and gives the same report", "[synth][memory]") {
  SKIP_UNDER_ASAN();
  fs::path dir = generate("halo", 8, 250000);
  const fs::path out = fresh_dir("packed-report");
  auto whole = run_command(fmt::format("'{}' report --threads 1 --format json -o '{}' '{}'", mpiadvise_cmd(),
                                       (out / "whole.json").string(), dir.string()));
  INFO(whole.err);
  REQUIRE(whole.status <= 1);
  CHECK(whole.err.find("held packed") == std::string::npos);
  auto packed = run_command(fmt::format("ulimit -v 163840; '{}' report --threads 1 --format json -o '{}' '{}'", mpiadvise_cmd(),
                                        (out / "packed.json").string(), dir.string()));
  INFO(packed.err);
  CHECK(packed.status == whole.status);
  CHECK(std::count(packed.err.begin(), packed.err.end(), '\n') == 1);
  CHECK(packed.err.find("of address space is left (ulimit -v): the calls held packed once read (as --low-memory "
                        "holds them), in about 124 MiB") != std::string::npos);
  CHECK(read_text(out / "packed.json") == read_text(out / "whole.json"));
}

// The same where the calls alone fit whole and their collectives, counted once the logs are read, do not:
// the ops read are packed then, before the ranks join. 2 ranks x 6e5 calls of MPI_Allreduce (1.2 million):
// calls alone 24 MiB + 2 x 24 KiB + 1.2e6 x 72 = 106 MiB; with their collectives 24 MiB + 2 x 24 KiB +
// 1.2e6 x 128 = 171 MiB whole, 24 MiB + 2 x 48 KiB + 2^20 x 20 + 1.2e6 x 98 = 156 MiB packed; 176 MiB
// leaves about 162 beside the program.
TEST_CASE("report holds the calls packed once read where only so their collectives fit, and gives the same report",
          "[synth][memory]") {
  SKIP_UNDER_ASAN();
  fs::path dir = generate("allreduce", 2, 600000, "--bytes 8");
  const fs::path out = fresh_dir("packed-collectives");
  auto whole = run_command(fmt::format("'{}' report --threads 1 --format json -o '{}' '{}'", mpiadvise_cmd(),
                                       (out / "whole.json").string(), dir.string()));
  INFO(whole.err);
  REQUIRE(whole.status <= 1);
  auto packed = run_command(fmt::format("ulimit -v 180224; '{}' report --threads 1 --format json -o '{}' '{}'",
                                        mpiadvise_cmd(), (out / "packed.json").string(), dir.string()));
  INFO(packed.err);
  CHECK(packed.status == whole.status);
  CHECK(std::count(packed.err.begin(), packed.err.end(), '\n') == 1);
  CHECK(packed.err.find("the analysis of its 1200000 MPI calls would need about 171 MiB") != std::string::npos);
  CHECK(packed.err.find("in about 156 MiB") != std::string::npos);
  CHECK(read_text(out / "packed.json") == read_text(out / "whole.json"));
}

// Under a batch system the limit is the job's cgroup's (SLURM's task/cgroup, a container's), and not at
// the top of /sys/fs/cgroup: the check reads /proc/self/cgroup and takes the least room left of the
// process's cgroup and each above it, its use without the inactive files (the logs just read sit in page
// cache charged to the cgroup, which the kernel reclaims before it refuses memory). A cgroup tree written
// here as the kernel shows one (the machines the tests run on have no cgroup of their own to limit).
TEST_CASE("the memory check finds the cgroup limit of a batch job's step, above it too, page cache not counted", "[memory]") {
  const fs::path root = fresh_dir("cgroups");
  const auto put = [](const fs::path& file, const std::string& text) {
    fs::create_directories(file.parent_path());
    std::ofstream(file) << text;
  };
  const uint64_t MiB = 1 << 20;
  // cgroup v2: the job allows 1000 MiB and uses 900, 600 of them inactive files: 700 left; its step is
  // not limited (max), and the node's slice allows more
  const fs::path job = root / "v2/system.slice/slurmstepd.scope/job_7";
  put(root / "v2/system.slice/memory.max", std::to_string(64000 * MiB) + "\n");
  put(root / "v2/system.slice/memory.current", std::to_string(2000 * MiB) + "\n");
  put(job / "memory.max", std::to_string(1000 * MiB) + "\n");
  put(job / "memory.current", std::to_string(900 * MiB) + "\n");
  put(job / "memory.stat", fmt::format("anon {}\nfile {}\nactive_file {}\ninactive_file {}\n", 300 * MiB,
                                       600 * MiB, 0, 600 * MiB));
  put(job / "step_0/memory.max", "max\n");
  put(job / "step_0/memory.current", std::to_string(850 * MiB) + "\n");
  put(root / "self-v2", "0::/system.slice/slurmstepd.scope/job_7/step_0\n");
  CHECK(cgroup_memory_left(root / "v2", root / "self-v2") == 700 * MiB);
  // the step's own limit, when it is the least
  put(job / "step_0/memory.max", std::to_string(900 * MiB) + "\n");
  CHECK(cgroup_memory_left(root / "v2", root / "self-v2") == 50 * MiB);
  // used beyond the limit leaves nothing, never a wrapped-around figure
  put(job / "step_0/memory.current", std::to_string(950 * MiB) + "\n");
  CHECK(cgroup_memory_left(root / "v2", root / "self-v2") == 0);
  // a container's namespace: the process's cgroup is the mount's top
  put(root / "self-top", "0::/\n");
  put(root / "top/memory.max", std::to_string(512 * MiB) + "\n");
  put(root / "top/memory.current", std::to_string(100 * MiB) + "\n");
  CHECK(cgroup_memory_left(root / "top", root / "self-top") == 412 * MiB);
  // cgroup v1: the memory controller's hierarchy, its limit, use and total_inactive_file
  put(root / "self-v1", "12:pids:/slurm/uid_0/job_8\n4:cpu,cpuacct:/slurm/uid_0/job_8\n3:memory:/slurm/uid_0/job_8/step_0\n"
                        "1:name=systemd:/user.slice\n");
  const fs::path v1job = root / "v1/memory/slurm/uid_0/job_8";
  put(v1job / "memory.limit_in_bytes", std::to_string(2048 * MiB) + "\n");
  put(v1job / "memory.usage_in_bytes", std::to_string(1024 * MiB) + "\n");
  put(v1job / "memory.stat", fmt::format("cache {}\nrss {}\ntotal_inactive_file {}\n", 800 * MiB, 224 * MiB, 512 * MiB));
  put(v1job / "step_0/memory.limit_in_bytes", "9223372036854771712\n");  // v1's "no limit"
  put(v1job / "step_0/memory.usage_in_bytes", std::to_string(1000 * MiB) + "\n");
  CHECK(cgroup_memory_left(root / "v1", root / "self-v1") == 1536 * MiB);
  // no limit anywhere, or no cgroup file: none
  put(root / "self-none", "0::/user.slice\n");
  CHECK(cgroup_memory_left(root / "v2", root / "self-none") == UINT64_MAX);
  CHECK(cgroup_memory_left(root / "v2", root / "absent") == UINT64_MAX);
}

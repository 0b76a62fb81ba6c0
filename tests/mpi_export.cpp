// mpiadvise export: a traced run as a Perfetto timeline (Chrome trace-event JSON) and as an OTF2 archive.
// The JSON is checked against the rules the trace-event format documents, by a validator of our own
// (Perfetto's trace_processor is not packaged for Debian); the OTF2 archive is read back with otf2-print
// (Debian's otf2-tools). What each holds is counted against mpiadvise dump of the same logs.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "support.hpp"

using namespace mpa_test;
using nlohmann::json;

namespace {

const std::set<std::string> kSends = {"MPI_Send",  "MPI_Bsend",  "MPI_Rsend",  "MPI_Ssend",    "MPI_Isend",
                                      "MPI_Ibsend", "MPI_Irsend", "MPI_Issend", "MPI_Sendrecv", "MPI_Sendrecv_replace"};

bool collective(const std::string& call) {
  static const std::set<std::string> names = {
      "Barrier",  "Bcast",     "Reduce",    "Allreduce",      "Gather",   "Gatherv",   "Scatter",   "Scatterv",
      "Allgather", "Allgatherv", "Alltoall", "Alltoallv",     "Alltoallw", "Reduce_scatter", "Reduce_scatter_block",
      "Scan",     "Exscan"};
  if (call.rfind("MPI_", 0) != 0) return false;
  std::string name = call.substr(4);
  if (names.count(name)) return true;
  if (name.size() < 2 || name[0] != 'I') return false;
  name = name.substr(1);
  name[0] = static_cast<char>(std::toupper(static_cast<unsigned char>(name[0])));
  return names.count(name) > 0;
}

// What mpiadvise dump says of a run's logs.
struct Dumped {
  uint64_t events = 0, sends = 0, collectives = 0, in_window = 0;
  std::map<int, uint64_t> first_after_init;  // by rank: the entry (ns) of its first call after MPI_Init
  uint64_t origin = UINT64_MAX;              // the first call's entry
  uint64_t first_init_exit = UINT64_MAX;
  json first_send;                           // the first send to a rank
};

Dumped dumped(const fs::path& dir) {
  auto r = run_command(mpiadvise_cmd() + " dump --format jsonl --events " + dir.string());
  REQUIRE(r.status == 0);
  Dumped d;
  std::map<int, int> phase;  // by rank: 0 before MPI_Init returned, 1 in the window, 2 from MPI_Finalize
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) {
    if (line.empty()) continue;
    json e = json::parse(line);
    const std::string call = e["call"];
    const int rank = e["rank"];
    d.events++;
    d.origin = std::min(d.origin, e["t_enter_ns"].get<uint64_t>());
    if (kSends.count(call) && e["peer"].is_number() && e["peer"].get<int>() >= 0) {
      d.sends++;
      if (d.first_send.is_null()) d.first_send = e;
    }
    d.collectives += collective(call);
    int& p = phase[rank];
    if (call == "MPI_Finalize") p = 2;
    if (p == 1) {
      d.in_window++;
      d.first_after_init.try_emplace(rank, e["t_enter_ns"].get<uint64_t>());
    }
    if (call == "MPI_Init" || call == "MPI_Init_thread") {
      p = 1;
      d.first_init_exit = std::min(d.first_init_exit, e["t_exit_ns"].get<uint64_t>());
    }
  }
  return d;
}

// The trace-event format's rules for what the exporter writes (the "Trace Event Format" document:
// complete events X with ts and dur in microseconds, metadata M, flow events s/f bound to the slices
// that enclose them): the problems found, at most 20.
std::vector<std::string> trace_event_problems(const json& doc) {
  std::vector<std::string> bad;
  auto fail = [&](const json& e, const std::string& why) {
    if (bad.size() < 20) bad.push_back(why + ": " + e.dump());
  };
  if (!doc.is_object() || !doc.contains("traceEvents") || !doc["traceEvents"].is_array())
    return {"no traceEvents array"};
  if (doc.contains("displayTimeUnit") && doc["displayTimeUnit"] != "ns" && doc["displayTimeUnit"] != "ms")
    fail(doc["displayTimeUnit"], "displayTimeUnit is neither ns nor ms");
  std::map<std::pair<int64_t, int64_t>, std::vector<std::pair<double, double>>> slices;
  std::map<uint64_t, std::vector<json>> flows;
  static const std::set<std::string> metadata = {"process_name", "process_sort_index", "thread_name", "thread_sort_index"};
  for (const auto& e : doc["traceEvents"]) {
    if (!e.is_object() || !e.contains("ph") || !e["ph"].is_string()) {
      fail(e, "no phase");
      continue;
    }
    const std::string ph = e["ph"];
    if (!e.contains("pid") || !e["pid"].is_number_integer()) fail(e, "pid is not an integer");
    if (!e.contains("name") || !e["name"].is_string()) fail(e, "no name");
    if (ph == "M") {
      if (!metadata.count(e.value("name", ""))) fail(e, "metadata of an unknown kind");
      if (!e.contains("args") || !e["args"].is_object()) fail(e, "metadata without args");
      if (e.value("name", "").rfind("thread_", 0) == 0 && !(e.contains("tid") && e["tid"].is_number_integer()))
        fail(e, "thread metadata without a tid");
      continue;
    }
    if (!e.contains("tid") || !e["tid"].is_number_integer()) fail(e, "tid is not an integer");
    if (!e.contains("ts") || !e["ts"].is_number()) {
      fail(e, "ts is not a number");
      continue;
    }
    const double ts = e["ts"];
    const auto thread = std::make_pair(e.value("pid", int64_t{-1}), e.value("tid", int64_t{-1}));
    if (ph == "X") {
      if (!e.contains("dur") || !e["dur"].is_number() || e["dur"].get<double>() < 0) fail(e, "dur is not a number >= 0");
      else slices[thread].emplace_back(ts, ts + e["dur"].get<double>());
    } else if (ph == "s" || ph == "f") {
      if (!e.contains("id") || !e["id"].is_number_unsigned()) fail(e, "a flow event without an id");
      else if (!e.contains("cat") || !e["cat"].is_string()) fail(e, "a flow event without a category");
      else flows[e["id"].get<uint64_t>()].push_back(e);
      if (ph == "f" && e.value("bp", "") != "e") fail(e, "a flow's finish not bound to its enclosing slice (bp: e)");
    } else {
      fail(e, "a phase the exporter does not write");
    }
  }
  // complete events on one thread nest: one that only partly overlaps another is dropped by viewers
  constexpr double eps = 1e-6;
  for (auto& [thread, v] : slices) {
    std::sort(v.begin(), v.end(), [](auto& a, auto& b) { return a.first < b.first || (a.first == b.first && a.second > b.second); });
    std::vector<double> open;  // ends of the enclosing slices
    for (const auto& [start, end] : v) {
      while (!open.empty() && open.back() <= start + eps) open.pop_back();
      if (!open.empty() && end > open.back() + eps)
        fail(json{{"pid", thread.first}, {"tid", thread.second}, {"ts", start}}, "a slice partly overlaps another");
      open.push_back(end);
    }
  }
  // a flow: one start and one finish, of one category, each inside a slice of its thread
  for (const auto& [id, v] : flows) {
    if (v.size() != 2 || v[0]["ph"] != "s" || v[1]["ph"] != "f" || v[0]["cat"] != v[1]["cat"]) {
      fail(json(v), "a flow is not one start then one finish of one category");
      continue;
    }
    for (const auto& e : v) {
      const auto& on = slices[{e["pid"].get<int64_t>(), e["tid"].get<int64_t>()}];
      const double ts = e["ts"];
      auto after = std::upper_bound(on.begin(), on.end(), std::make_pair(ts + eps, 1e300));
      bool inside = false;
      for (auto it = on.begin(); it != after && !inside; ++it) inside = it->first <= ts + eps && ts <= it->second + eps;
      if (!inside) fail(e, "a flow event outside every slice of its thread");
    }
  }
  return bad;
}

JobResult traced_halo() {
  JobSpec s;
  s.program = example_path("halo").string();
  s.args = {"2048", "30"};
  s.timeout_s = 60;
  JobResult r = run_job(s);
  INFO(r.err);
  REQUIRE(r.status == 0);
  return r;
}

}  // namespace

TEST_CASE("mpiadvise export --format perfetto writes every call as a slice and every message as an arrow, in the "
          "trace-event format, with the predicted timeline beside each rank", "[export]") {
  const JobResult run = traced_halo();
  const fs::path out = fresh_dir("export_perfetto") / "halo.json";
  auto r = run_command(mpiadvise_cmd() + " export " + run.dir.string() + " --format perfetto --predicted -o " + out.string());
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  CHECK(r.out.find("ui.perfetto.dev") != std::string::npos);
  const json doc = json::parse(read_text(out));
  const auto problems = trace_event_problems(doc);
  for (const auto& p : problems) INFO(p);
  CHECK(problems.empty());

  const Dumped d = dumped(run.dir);
  const int world = 2;
  uint64_t measured = 0, predicted = 0, arrows = 0, predicted_arrows = 0;
  std::map<int, double> first_predicted;  // by rank: the first predicted slice's start (us)
  double predicted_end = 0;
  std::set<std::string> process_names;
  bool send_found = false;
  for (const auto& e : doc["traceEvents"]) {
    const int pid = e["pid"];
    if (e["ph"] == "M" && e["name"] == "process_name") process_names.insert(e["args"]["name"].get<std::string>());
    if (e["ph"] == "X") {
      if (pid < world) {
        measured++;
        // the first send's slice: its call, its site in halo.c and its size
        if (!send_found && e["name"] == d.first_send["call"] &&
            std::llround(e["ts"].get<double>() * 1e3) ==
                static_cast<int64_t>(d.first_send["t_enter_ns"].get<uint64_t>() - d.origin)) {
          send_found = true;
          CHECK(e["args"]["site"].get<std::string>().find("halo.c:") != std::string::npos);
          CHECK(e["args"]["bytes"] == d.first_send["bytes"]);
          CHECK(e["args"]["peer"] == d.first_send["peer"]);
        }
      } else {
        predicted++;
        first_predicted.try_emplace(pid - world, e["ts"].get<double>());
        predicted_end = std::max(predicted_end, e["ts"].get<double>() + e["dur"].get<double>());
      }
    }
    if (e["ph"] == "s") (e["cat"] == "message" ? arrows : predicted_arrows)++;
  }
  CHECK(send_found);
  CHECK(measured == d.events);
  CHECK(arrows == d.sends);
  // the replay covers what lies between MPI_Init and MPI_Finalize, messages and all
  CHECK(predicted == d.in_window);
  CHECK(predicted_arrows == d.sends);
  CHECK(process_names.count("rank 0 predicted (LogGPS)") == 1);
  CHECK(process_names.count("rank 1 predicted (LogGPS)") == 1);
  // both timelines share one time axis: a rank's first call after MPI_Init is where it was measured (the
  // replay starts each rank at its measured start and replays the computation before that call as it
  // was), and the predicted run ends where mpiadvise replay says it does
  for (const auto& [rank, enter] : d.first_after_init) {
    REQUIRE(first_predicted.count(rank));
    CHECK(first_predicted[rank] == Approx(static_cast<double>(enter - d.origin) / 1e3).margin(0.002));
  }
  auto rep = run_command(mpiadvise_cmd() + " replay --json " + run.dir.string());
  REQUIRE(rep.status == 0);
  const double replay_end_us =
      (static_cast<double>(d.first_init_exit - d.origin) + json::parse(rep.out)["predicted_ns"].get<double>()) / 1e3;
  CHECK(predicted_end <= replay_end_us + 0.002);
  CHECK(predicted_end >= 0.9 * replay_end_us);
}

TEST_CASE("mpiadvise export --format otf2 writes an archive otf2-print reads back: a location per rank, an Enter and "
          "a Leave per call, the MPI records of every message and collective, and the predicted ranks beside",
          "[export]") {
  JobSpec s;
  s.np = 4;
  s.program = "coll_all";
  s.timeout_s = 90;
  const JobResult run = run_job(s);
  INFO(run.err);
  REQUIRE(run.status == 0);
  const fs::path out = fresh_dir("export_otf2") / "archive";
  auto r = run_command(mpiadvise_cmd() + " export " + run.dir.string() + " --format otf2 --predicted -o " + out.string());
  INFO(r.out << r.err);
  REQUIRE(r.status == 0);
  REQUIRE(fs::exists(out / "traces.otf2"));
  auto printed = run_command("otf2-print " + (out / "traces.otf2").string());
  INFO(printed.err);
  REQUIRE(printed.status == 0);
  // otf2-print: one line per record, "RECORD  LOCATION  TIMESTAMP  attributes"; a location is rank << 16
  // | thread, the predicted ranks after the measured ones
  std::map<std::string, uint64_t> measured, predicted;
  std::set<uint64_t> locations;
  std::istringstream in(printed.out);
  for (std::string line; std::getline(in, line);) {
    std::istringstream words(line);
    std::string record;
    uint64_t location = 0;
    if (!(words >> record >> location)) continue;
    if (record.empty() || !std::isupper(static_cast<unsigned char>(record[0]))) continue;
    locations.insert(location);
    ((location >> 16) < static_cast<uint64_t>(s.np) ? measured : predicted)[record]++;
  }
  const Dumped d = dumped(run.dir);
  INFO("dump: " << d.events << " calls, " << d.sends << " sends, " << d.collectives << " collectives");
  CHECK(measured["ENTER"] == d.events);
  CHECK(measured["LEAVE"] == d.events);
  CHECK(measured["MPI_SEND"] + measured["MPI_ISEND"] == d.sends);
  CHECK(measured["MPI_RECV"] + measured["MPI_IRECV"] == d.sends);
  CHECK(measured["MPI_ISEND_COMPLETE"] == measured["MPI_ISEND"]);
  CHECK(measured["MPI_IRECV_REQUEST"] <= measured["MPI_IRECV"]);
  CHECK(measured["MPI_COLLECTIVE_BEGIN"] == measured["MPI_COLLECTIVE_END"]);
  CHECK(measured["NON_BLOCKING_COLLECTIVE_REQUEST"] == measured["NON_BLOCKING_COLLECTIVE_COMPLETE"]);
  CHECK(measured["MPI_COLLECTIVE_END"] + measured["NON_BLOCKING_COLLECTIVE_COMPLETE"] == d.collectives);
  CHECK(measured["NON_BLOCKING_COLLECTIVE_COMPLETE"] > 0);
  CHECK(predicted["ENTER"] == d.in_window);
  CHECK(predicted["MPI_SEND"] + predicted["MPI_ISEND"] == d.sends);
  CHECK(predicted["MPI_COLLECTIVE_END"] + predicted["NON_BLOCKING_COLLECTIVE_COMPLETE"] == d.collectives);
  for (int rank = 0; rank < s.np; rank++) {
    CHECK(locations.count(static_cast<uint64_t>(rank) << 16) == 1);
    CHECK(locations.count(static_cast<uint64_t>(rank + s.np) << 16) == 1);
  }
  // the definitions name the world communicator and each rank
  auto defs = run_command("otf2-print -G " + (out / "traces.otf2").string());
  REQUIRE(defs.status == 0);
  CHECK(defs.out.find("MPI_COMM_WORLD") != std::string::npos);
  CHECK(defs.out.find("\"rank 3 predicted\"") != std::string::npos);
}

TEST_CASE("mpiadvise export refuses bad output and bad logs with one line and status 2", "[export][edge]") {
  const JobResult run = traced_halo();
  const fs::path dir = fresh_dir("export_bad");
  {
    std::ofstream(dir / "already") << "x";
  }
  auto full = run_command(mpiadvise_cmd() + " export " + run.dir.string() + " --format otf2 -o " + dir.string());
  CHECK(full.status == 2);
  CHECK(full.err.find(dir.string() + " exists and is not an empty directory") != std::string::npos);
  CHECK(std::count(full.err.begin(), full.err.end(), '\n') == 1);
  auto dash = run_command(mpiadvise_cmd() + " export " + run.dir.string() + " --format otf2 -o -");
  CHECK(dash.status == 2);
  CHECK(dash.err.find("an OTF2 archive is a directory") != std::string::npos);
  auto format = run_command(mpiadvise_cmd() + " export " + run.dir.string() + " --format vampir -o x");
  CHECK(format.status == 2);
  CHECK(format.err.find("vampir") != std::string::npos);
  const fs::path empty = fresh_dir("export_no_logs");
  auto no_logs = run_command(mpiadvise_cmd() + " export " + empty.string() + " --format perfetto -o " +
                             (dir / "x.json").string());
  CHECK(no_logs.status == 2);
  CHECK(no_logs.err.find(empty.string()) != std::string::npos);
  CHECK(std::count(no_logs.err.begin(), no_logs.err.end(), '\n') == 1);
  CHECK_FALSE(fs::exists(dir / "x.json"));
  // to standard output: the JSON alone on stdout, the summary on stderr
  auto piped = run_command(mpiadvise_cmd() + " export " + run.dir.string() + " --format perfetto -o -");
  REQUIRE(piped.status == 0);
  CHECK(json::parse(piped.out)["traceEvents"].size() > 0);
  CHECK(piped.err.find("standard output") != std::string::npos);
}

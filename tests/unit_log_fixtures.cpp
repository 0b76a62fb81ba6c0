// The reader on committed logs (tests/fixtures, written by the tracer: make-fixtures.sh), on logs
// damaged on purpose, and on events of our own appended to a committed header. What each test expects follows from the program that wrote the log.
#include <catch2/catch.hpp>

#include <zstd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <map>
#include <set>

#include "log_reader.hpp"
#include "log_summary.hpp"
#include "support.hpp"
#include "trace.hpp"

extern "C" {
#include "codec.h"
}

using namespace mpiadvise;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

fs::path fixture(const std::string& name) { return fs::path(MPA_SOURCE_DIR) / "tests" / "fixtures" / name; }

struct Ev {
  std::string call;
  Event e;
};

std::vector<Ev> events(const RankLog& log) {
  std::vector<Ev> out;
  log.for_each_event([&](const Event& e) { out.push_back({std::string(e.call_name), e}); });
  return out;
}

std::map<std::string, size_t> calls(const std::vector<Ev>& evs) {
  std::map<std::string, size_t> n;
  for (const auto& e : evs) n[e.call] += e.e.count;
  return n;
}

std::vector<uint8_t> file_bytes(const fs::path& f) {
  std::ifstream in(f, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

uint32_t json_bytes_of(const std::vector<uint8_t>& b) {
  uint32_t n;
  std::memcpy(&n, b.data() + 12, 4);
  return n;
}

json header_of(const std::vector<uint8_t>& b) {
  return json::parse(b.begin() + 16, b.begin() + 16 + json_bytes_of(b));
}

// The log with its header JSON replaced by `text` (the chunks after it kept).
std::vector<uint8_t> with_header(const std::vector<uint8_t>& b, const std::string& text) {
  std::vector<uint8_t> out(b.begin(), b.begin() + 16);
  uint32_t n = static_cast<uint32_t>(text.size());
  std::memcpy(out.data() + 12, &n, 4);
  out.insert(out.end(), text.begin(), text.end());
  out.insert(out.end(), b.begin() + 16 + json_bytes_of(b), b.end());
  return out;
}

// The log cut after its header JSON.
std::vector<uint8_t> header_only(const std::vector<uint8_t>& b) {
  return std::vector<uint8_t>(b.begin(), b.begin() + 16 + json_bytes_of(b));
}

// A chunk appended as the tracer writes one (header, one zstd frame with its size).
void append_chunk(std::vector<uint8_t>& b, uint8_t type, const std::string& payload, uint8_t codec = MPA_CODEC_ZSTD) {
  std::vector<uint8_t> frame(ZSTD_compressBound(payload.size()));
  size_t z = ZSTD_compress(frame.data(), frame.size(), payload.data(), payload.size(), 1);
  REQUIRE(!ZSTD_isError(z));
  mpa_chunk_header h{};
  h.magic = MPA_CHUNK_MAGIC;
  h.type = type;
  h.codec = codec;
  h.raw_bytes = static_cast<uint32_t>(payload.size());
  h.stored_bytes = static_cast<uint32_t>(z);
  const auto* hp = reinterpret_cast<const uint8_t*>(&h);
  b.insert(b.end(), hp, hp + sizeof h);
  b.insert(b.end(), frame.begin(), frame.begin() + static_cast<long>(z));
}

bool has_problem(const std::vector<ReadProblem>& problems, const std::string& text) {
  for (const auto& p : problems)
    if (p.message.find(text) != std::string::npos) return true;
  return false;
}

// Writes logs into a fresh directory under the build tree.
fs::path job_dir(const std::string& name, const std::vector<std::vector<uint8_t>>& ranks) {
  fs::path dir = fs::path(MPA_BUILD_DIR) / "tests" / "tmp" / ("unit-" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (size_t r = 0; r < ranks.size(); r++) {
    char file[32];
    std::snprintf(file, sizeof file, "rank-%05zu.mpa", r);
    std::ofstream(dir / file, std::ios::binary).write(reinterpret_cast<const char*>(ranks[r].data()),
                                                      static_cast<std::streamsize>(ranks[r].size()));
  }
  return dir;
}

}  // namespace

// ---- a 1-D halo exchange with MPI_PROC_NULL at its ends (tests/programs/halo_procnull.c, 3 iterations) ----
TEST_CASE("PROC_NULL halo: each request named by a completion is its own, though they share a handle", "[fixtures][requests]") {
  JobLog job(fixture("halo-procnull"));
  REQUIRE(job.world_size() == 3);
  REQUIRE(job.ranks().size() == 3);
  bool shared_handle_seen = false;
  for (const auto& log : job.ranks()) {
    INFO("rank " << log->rank());
    CHECK(log->complete());
    CHECK(log->problems().empty());
    auto evs = events(*log);
    std::vector<uint64_t> made;  // requests made since the last completion of them all
    size_t waitalls = 0;
    for (const auto& ev : evs) {
      const Event& e = ev.e;
      if (ev.call == "MPI_Irecv" || ev.call == "MPI_Isend") {
        REQUIRE(e.requests.size() == 1);
        CHECK(e.requests[0] != 0);
        CHECK(std::find(made.begin(), made.end(), e.requests[0]) == made.end());
        made.push_back(e.requests[0]);
      } else if (ev.call == "MPI_Waitall") {
        waitalls++;
        std::set<uint64_t> handles(e.handles.begin(), e.handles.end());
        shared_handle_seen |= handles.size() < e.handles.size();
        // the four (or two) requests made just before, each once, in the order made
        CHECK(e.requests == made);
        REQUIRE(e.statuses.size() == made.size());
        made.clear();
      } else if (ev.call == "MPI_Waitany" || ev.call == "MPI_Waitsome") {
        for (const auto& st : e.statuses) {
          REQUIRE(static_cast<size_t>(st.index) < e.requests.size());
          auto it = std::find(made.begin(), made.end(), e.requests[st.index]);
          REQUIRE(it != made.end());  // a request made and not yet completed
          made.erase(it);
        }
      }
    }
    CHECK(made.empty());
    CHECK(waitalls == 4);
    const bool edge = log->rank() == 0 || log->rank() == 2;
    auto n = calls(evs);
    CHECK(n["MPI_Init"] == 1);
    CHECK(n["MPI_Irecv"] == 6);
    CHECK(n["MPI_Isend"] == 12);
    CHECK(n["MPI_Waitany"] == 2);
    CHECK(n["MPI_Reduce"] == 1);
    CHECK(n["MPI_Finalize"] == 1);
    // the receives from MPI_PROC_NULL complete at once, with MPI_PROC_NULL as their source
    size_t from_proc_null = 0;
    for (const auto& ev : evs)
      if (ev.call == "MPI_Waitall" && ev.e.statuses.size() == 4)
        for (int k : {0, 1})
          from_proc_null += ev.e.statuses[k].source == kProcNull && ev.e.statuses[k].bytes == 0;
    CHECK(from_proc_null == (edge ? 3u : 0u));
  }
  CHECK(shared_handle_seen);  // Open MPI gave one handle to several live requests: the case under test
}

// ---- every point-to-point call (tests/programs/p2p_all.c, 4 ranks) -------------------------------------
TEST_CASE("p2p_all: each call as often as the program makes it, every completed request known", "[fixtures]") {
  JobLog job(fixture("p2p-all"));
  REQUIRE(job.ranks().size() == 4);
  CHECK(job.problems().empty());
  auto r0 = events(*job.rank(0));
  auto n = calls(r0);
  for (const char* c : {"MPI_Ssend", "MPI_Bsend", "MPI_Rsend", "MPI_Issend", "MPI_Ibsend", "MPI_Irsend", "MPI_Send_init",
                        "MPI_Ssend_init", "MPI_Rsend_init", "MPI_Cancel", "MPI_Comm_split", "MPI_Comm_free"})
    CHECK(n[c] == 1);
  CHECK(n["MPI_Start"] == 3);
  CHECK(n["MPI_Startall"] == 3);
  CHECK(n["MPI_Request_free"] == 3);
  // every status of a completion names a request the rank made
  for (const auto& log : job.ranks()) {
    for (const auto& ev : events(*log)) {
      if (ev.e.requests.empty()) continue;
      for (const auto& st : ev.e.statuses)
        if (ev.call.rfind("MPI_Wait", 0) == 0 || ev.call.rfind("MPI_Test", 0) == 0) {
          INFO(ev.call << " on rank " << log->rank());
          CHECK(ev.e.requests.at(st.index) != 0);
        }
    }
  }
  // the persistent send is the request every Start names
  uint64_t send_init = 0;
  for (const auto& ev : r0)
    if (ev.call == "MPI_Send_init") send_init = ev.e.requests.back();
  for (const auto& ev : r0)
    if (ev.call == "MPI_Start") CHECK(ev.e.requests == std::vector<uint64_t>{send_init});
}

// ---- MPI_THREAD_MULTIPLE (tests/programs/threads.c: 4 threads x 500 rounds, 2 ranks) ---------------------
TEST_CASE("threads: events of every thread in time order, each Waitall naming its own thread's requests", "[fixtures]") {
  JobLog job(fixture("threads"));
  REQUIRE(job.ranks().size() == 2);
  for (const auto& log : job.ranks()) {
    CHECK(log->problems().empty());
    auto evs = events(*log);
    auto n = calls(evs);
    CHECK(n["MPI_Irecv"] == 2000);
    CHECK(n["MPI_Isend"] == 2000);
    CHECK(n["MPI_Waitall"] == 2000);
    CHECK(n["MPI_Sendrecv"] == 2000);
    std::map<uint16_t, std::vector<uint64_t>> made;  // per thread, since its last Waitall
    std::set<uint16_t> threads;
    uint64_t prev = 0;
    for (const auto& ev : evs) {
      CHECK(ev.e.t_enter_ns >= prev);
      prev = ev.e.t_enter_ns;
      threads.insert(ev.e.thread);
      if (ev.call == "MPI_Irecv" || ev.call == "MPI_Isend") made[ev.e.thread].push_back(ev.e.requests.at(0));
      if (ev.call == "MPI_Waitall") {
        CHECK(ev.e.requests == made[ev.e.thread]);
        made[ev.e.thread].clear();
      }
    }
    CHECK(threads.size() == 5);  // the main thread and four workers
  }
}

// ---- every collective and its I- form (tests/programs/coll_all.c, 4 ranks) ------------------------------------
TEST_CASE("coll_all: each collective instance holds every member's logged bytes and counts arrays", "[fixtures][coll]") {
  JobLog job(fixture("coll-all"));
  REQUIRE(job.ranks().size() == 4);
  CHECK(job.problems().empty());
  const Trace t = build_trace(job);
  // each rank's collective calls in its order, as its log says them, against the instances its ops joined
  // in the same order (a rank's k-th collective call is its k-th op entering one)
  size_t vcounted = 0, in_place = 0;
  for (const auto& log : job.ranks()) {
    const int rank = log->rank();
    std::vector<Event> logged;
    log->for_each_event([&](const Event& e) {
      if (is_collective_call(e.call) && e.has(MPA_F_COMM)) logged.push_back(e);
    });
    std::vector<uint32_t> joined;
    for (const Op& op : t.ranks[rank].ops) {
      const OpLinks links = t.links_of(op);
      for (uint32_t k = 0; k < links.size(); k++)
        if (links[k].kind == Link::PostColl) joined.push_back(links[k].id);
    }
    REQUIRE(joined.size() == logged.size());
    for (size_t k = 0; k < logged.size(); k++) {
      const Event& e = logged[k];
      const CollectiveInstance& c = t.collectives.at(joined[k]);
      INFO("rank " << rank << ": collective call " << k << ", " << call_name(e.call));
      REQUIRE(call_name(static_cast<int>(c.call)) == std::string(call_name(e.call)));
      size_t pos = c.members.size();
      for (size_t p = 0; p < c.members.size(); p++)
        if (c.members[p].first == rank) pos = p;
      REQUIRE(pos < c.members.size());
      CHECK(c.sent[pos] == (e.has(MPA_F_BYTES) ? std::optional<uint64_t>(e.bytes) : std::nullopt));
      CHECK(c.received[pos] == (e.has(MPA_F_BYTES2) ? std::optional<uint64_t>(e.bytes2) : std::nullopt));
      in_place += !e.has(MPA_F_BYTES);
      // the counts arrays: one for every member once any member logged one, empty for those that did not
      if (!c.each.empty()) {
        REQUIRE(c.each.size() == c.members.size());
        CHECK(c.each[pos] == e.vcounts);
      } else {
        CHECK(e.vcounts.empty());
      }
      vcounted += !e.vcounts.empty();
    }
  }
  // what the program makes: v-collectives with counts at some members only (Gatherv's root), and calls
  // with no send buffer (MPI_IN_PLACE, Barrier), so that both the cursor and the sentinel are exercised
  CHECK(vcounted > 0);
  CHECK(in_place > 0);
}

// ---- damaged logs (tests/fixtures/damage.py) ---------------------------------------------------------------
TEST_CASE("damaged logs: what each damage costs, said once, and the rest read", "[fixtures][damage]") {
  JobLog intact(fixture("halo-procnull"));
  JobLog job(fixture("halo-damaged"));
  REQUIRE(job.ranks().size() == 3);
  const RankLog& bad_trailer = *job.rank(0);
  const RankLog& cut = *job.rank(1);
  const RankLog& bad_payload = *job.rank(2);

  // rank 0: its trailer's magic overwritten; every event is there, the trailer is not
  CHECK_FALSE(bad_trailer.complete());
  REQUIRE(bad_trailer.problems().size() == 1);
  CHECK(bad_trailer.problems()[0].corrupt);
  CHECK(has_problem(bad_trailer.problems(), "no chunk starts here"));
  CHECK(events(bad_trailer).size() == events(*intact.rank(0)).size());

  // rank 1: cut inside its largest events chunk; the file ends early (not corrupt), the events before
  // the chunk are read
  REQUIRE(cut.problems().size() == 1);
  CHECK_FALSE(cut.problems()[0].corrupt);
  CHECK(has_problem(cut.problems(), "file ends inside a chunk"));
  auto cut_evs = events(cut), whole = events(*intact.rank(1));
  REQUIRE(cut_evs.size() < whole.size());
  REQUIRE_FALSE(cut_evs.empty());
  for (size_t i = 0; i < cut_evs.size(); i++) CHECK(cut_evs[i].e.t_enter_ns == whole[i].e.t_enter_ns);

  // rank 2: a byte of an events payload flipped; the checksum catches it, said once however often
  // the events are read, and the other chunks are read
  auto damaged_evs = events(bad_payload);
  events(bad_payload);
  REQUIRE(bad_payload.problems().size() == 1);
  CHECK(bad_payload.problems()[0].corrupt);
  CHECK(has_problem(bad_payload.problems(), "does not decompress"));
  CHECK(bad_payload.complete());
  CHECK(damaged_evs.size() < events(*intact.rank(2)).size());
  CHECK_FALSE(damaged_evs.empty());
}

TEST_CASE("a log that ends after its header: no events, and no world size taken on its word", "[fixtures][damage]") {
  JobLog job(fixture("header-only"));
  REQUIRE(job.ranks().size() == 1);
  CHECK(job.ranks()[0]->size() == 3);
  CHECK(job.world_size() == 1);  // no MPI_COMM_WORLD definition: the logs present
  CHECK(has_problem(job.problems(), "none defines MPI_COMM_WORLD"));
  CHECK(events(*job.ranks()[0]).empty());
}

// ---- strings from the job (a program path with byte 0xe9, an environment value that is not UTF-8) -----
TEST_CASE("strings from the job come back as the bytes they were", "[fixtures][strings]") {
  JobLog job(fixture("job-strings"));
  REQUIRE(job.ranks().size() == 2);
  CHECK(job.problems().empty());
  const json h = job.rank(0)->header();
  const std::string program = h.at("program");
  CHECK(program.substr(program.size() - 6) == "halo_\xe9");
  CHECK(h.at("env").at("OMPI_MCA_mpiadvise_note") == "caf\xe9\xff 100% \x1b[31mred");
  // the raw header: valid UTF-8 JSON, the strings in their escaped form
  auto raw = header_of(file_bytes(fixture("job-strings") / "rank-00000.mpa"));
  CHECK(raw.at("program").get<std::string>().front() == '\0');
  CHECK(raw.at("env").at("OMPI_MCA_mpiadvise_note") == std::string("\0caf%E9%FF 100%25 \x1b[31mred", 26));
}

// ---- sizes and types in the header --------------------------------------------------------------------------
TEST_CASE("a header claiming a world of 2^24 ranks is refused or bounded by what the logs hold", "[header][bounds]") {
  auto b = file_bytes(fixture("halo-procnull") / "rank-00000.mpa");
  json h = header_of(b);
  h["size"] = 16777216;
  // with its definitions: MPI_COMM_WORLD has 3 members, not 2^24
  try {
    RankLog log("big", with_header(b, h.dump()));
    FAIL("read a log whose world definition contradicts its header");
  } catch (const LogError& e) {
    CHECK(e.file == "big");
    CHECK(std::string(e.what()).find("'size'") != std::string::npos);
  }
  // without (cut after the header): read, but the job's world is the logs present
  auto dir = job_dir("big-world", {header_only(with_header(b, h.dump()))});
  JobLog job(dir);
  CHECK(job.ranks()[0]->size() == 16777216);
  CHECK(job.world_size() == 1);
  CHECK(has_problem(job.problems(), "claim a world of 16777216 ranks"));
  h["size"] = 16777217;
  CHECK_THROWS_AS(RankLog("bigger", header_only(with_header(b, h.dump()))), LogError);
}

TEST_CASE("deeply nested header JSON is refused with one error, not a crash", "[header][bounds]") {
  auto b = file_bytes(fixture("halo-procnull") / "rank-00000.mpa");
  std::string text = header_of(b).dump();
  const size_t depth = 200000;
  text.insert(text.size() - 1, ",\"clock\":" + std::string(depth, '[') + std::string(depth, ']'));
  try {
    RankLog log("deep", with_header(b, text));
    FAIL("read a header nested 200000 deep");
  } catch (const LogError& e) {
    CHECK(std::string(e.what()).find("nested deeper than 64") != std::string::npos);
  }
  // 64 levels are fine
  text = header_of(b).dump();
  text.insert(text.size() - 1, ",\"extra\":" + std::string(63, '[') + std::string(63, ']'));
  CHECK_NOTHROW(RankLog("deep-enough", with_header(b, text)));
}

TEST_CASE("informational header keys of the wrong type are ignored, each named; required ones refuse the file", "[header]") {
  auto b = file_bytes(fixture("halo-procnull") / "rank-00000.mpa");
  json h = header_of(b);
  h["hostname"] = 5;
  h["mpi_library"] = json::array({1});
  h["clock"]["sync_tick"] = "soon";
  h["env"]["OMPI_MCA_btl"] = 7;
  h["cvars"]["btl_tcp_eager_limit"] = json::object();
  h["papi"] = {"PAPI_TOT_CYC", 3};
  RankLog log("typed", with_header(b, h.dump()));
  for (const char* key : {"'hostname'", "'mpi_library'", "'clock.sync_tick'", "'env.OMPI_MCA_btl'",
                          "'cvars.btl_tcp_eager_limit'", "'papi'"})
    CHECK(has_problem(log.problems(), key));
  CHECK_FALSE(log.header().contains("hostname"));
  CHECK_FALSE(log.header().at("env").contains("OMPI_MCA_btl"));
  CHECK(events(log).size() == events(RankLog("intact", b)).size());
  for (const auto& p : log.problems()) CHECK(p.file == "typed");

  // a job of such logs summarizes (the summary reads hostname, mpi_library, cvars)
  auto dir = job_dir("typed", {with_header(b, h.dump())});
  CHECK_NOTHROW(summarize(JobLog(dir)));

  const auto refused = [&](json bad, const std::string& key) {
    try {
      RankLog("required", with_header(b, bad.dump()));
      FAIL("read a header with a bad " << key);
    } catch (const LogError& e) {
      CHECK(e.file == "required");
      CHECK(std::string(e.what()).find(key) != std::string::npos);
    }
  };
  json bad = header_of(b);
  bad["rank"] = "0";
  refused(bad, "'rank'");
  bad = header_of(b);
  bad.erase("calls");
  refused(bad, "'calls'");
  bad = header_of(b);
  bad["calls"][3] = 4;
  refused(bad, "'calls'");
  bad = header_of(b);
  bad["calls"] = json::array();
  for (int i = 0; i < 300; i++) bad["calls"].push_back("MPI_Send");
  refused(bad, "'calls'");
  refused(json::array({1, 2}), "not a JSON object");
}

TEST_CASE("trailer and META chunks of the wrong shape are ignored, each named", "[header]") {
  auto b = header_only(file_bytes(fixture("halo-procnull") / "rank-00000.mpa"));
  append_chunk(b, MPA_CHUNK_META, R"({"aborted":"yes","errorcode":7})");
  append_chunk(b, MPA_CHUNK_META, R"([1,2,3])");
  append_chunk(b, MPA_CHUNK_TRAILER, R"({"complete":true,"clock_offset_finalize_ns":"late"})");
  RankLog log("shapes", b);
  CHECK(has_problem(log.problems(), "META chunk key 'aborted'"));
  CHECK(has_problem(log.problems(), "a META chunk is an array"));
  CHECK(has_problem(log.problems(), "trailer key 'clock_offset_finalize_ns'"));
  REQUIRE(log.meta().size() == 1);
  CHECK(log.meta()[0].value("aborted", false) == false);
  CHECK(log.meta()[0].value("errorcode", 0) == 7);
  CHECK(log.complete());
}

// ---- sizes inside chunks ----------------------------------------------------------------------------------
TEST_CASE("a chunk's sizes are checked before anything is allocated for them", "[bounds]") {
  auto base = header_only(file_bytes(fixture("halo-procnull") / "rank-00000.mpa"));
  SECTION("a chunk header and its frame claiming 200 MiB in a few bytes") {
    auto b = base;
    // a zstd frame header with a content size of 200 MiB (single segment, 8-byte size) and nothing after
    const uint32_t claimed = 200u << 20;
    std::vector<uint8_t> frame = {0x28, 0xb5, 0x2f, 0xfd, 0xe0};
    for (int k = 0; k < 8; k++) frame.push_back(static_cast<uint8_t>(uint64_t{claimed} >> (8 * k)));
    mpa_chunk_header h{};
    h.magic = MPA_CHUNK_MAGIC;
    h.type = MPA_CHUNK_EVENTS;
    h.codec = MPA_CODEC_ZSTD;
    h.raw_bytes = claimed;
    h.stored_bytes = static_cast<uint32_t>(frame.size());
    b.insert(b.end(), reinterpret_cast<const uint8_t*>(&h), reinterpret_cast<const uint8_t*>(&h) + sizeof h);
    b.insert(b.end(), frame.begin(), frame.end());
    RankLog log("huge", b);
    CHECK(events(log).empty());
    CHECK(has_problem(log.problems(), "say 209715200 bytes from 13 stored; at most 1048576 are possible"));
  }
  SECTION("a communicator of 2^26 members in a few bytes") {
    auto b = base;
    // COMM id 9, gid 0, flags 0, size 2^26 (varint 0x80 0x80 0x80 0x20), no members
    append_chunk(b, MPA_CHUNK_DEFS, std::string("\x02\x09\x00\x00\x80\x80\x80\x20", 8));
    RankLog log("members", b);
    CHECK(has_problem(log.problems(), "communicator size 67108864 is more than"));
    CHECK(log.comms().count(9) == 0);
  }
  SECTION("a member that is no rank of the world") {
    auto b = base;
    append_chunk(b, MPA_CHUNK_DEFS, std::string("\x02\x09\x00\x00\x01\x0a\x00\x00", 8));  // member zigzag 5, world of 3
    RankLog log("member", b);
    CHECK(has_problem(log.problems(), "member 5 is not a rank of a world of 3"));
  }
  SECTION("a call site 1000 frames deep") {
    auto b = base;
    append_chunk(b, MPA_CHUNK_DEFS, std::string("\x01\x01\xe8\x07", 4) + std::string(1000, '\x01'));
    RankLog log("deep-site", b);
    CHECK(has_problem(log.problems(), "call site depth 1000 is more than 64"));
  }
}

TEST_CASE("each fixture's trace is the same read on 1, 2 or 3 threads", "[fixtures][trace]") {
  // persistent requests, cancels, wildcards, several threads, MPI_PROC_NULL, damage, a lone header
  for (const char* name : {"p2p-all", "threads", "halo-procnull", "halo-damaged", "header-only", "job-strings"}) {
    INFO(name);
    JobLog job(fixture(name));
    mpa_test::require_same_trace_on_any_threads(job);
  }
}

TEST_CASE("an op of one link holds it, and each op's links name the messages and collectives it posts", "[fixtures][trace]") {
  // build_trace moves the link of an op with one into the op (Op::inline_link): the trace's list keeps the
  // links of ops with two or more, and every op reads its own through links_of either way
  for (const char* name : {"p2p-all", "threads", "halo-procnull", "job-strings"}) {
    INFO(name);
    JobLog job(fixture(name));
    const Trace t = build_trace(job);
    size_t listed = 0, held = 0;
    for (const RankTrace& rt : t.ranks)
      for (uint32_t i = 0; i < rt.ops.size(); i++) {
        INFO("rank " << rt.rank << " op " << i);
        const Op& op = rt.ops[i];
        const OpLinks links = t.links_of(op);
        REQUIRE(links.size() == t.n_links(op));
        CHECK((op.inline_link != 0) == (links.size() == 1));
        if (links.size() == 1) held++;
        else listed += links.size();
        for (uint32_t k = 0; k < links.size(); k++) {
          const Link l = links[k];
          if (l.kind == Link::PostSend) {
            REQUIRE(l.id < t.messages.size());
            CHECK(std::tie(t.messages[l.id].src, t.messages[l.id].send_op) == std::tie(rt.rank, i));
          } else if (l.kind == Link::PostRecv) {
            REQUIRE(l.id < t.messages.size());
            CHECK(std::tie(t.messages[l.id].dst, t.messages[l.id].recv_op) == std::tie(rt.rank, i));
          } else if (l.kind == Link::PostColl) {
            REQUIRE(l.id < t.collectives.size());
            const auto& members = t.collectives[l.id].members;
            CHECK(std::find(members.begin(), members.end(), std::make_pair(rt.rank, i)) != members.end());
          } else {
            CHECK(l.id < (l.kind == Link::DoneColl ? t.collectives.size() : t.messages.size()));
          }
        }
      }
    CHECK(t.links.size() == listed);
    CHECK(held > 0);
  }
}

TEST_CASE("a log read from memory is the log read from its file", "[fixtures]") {
  const fs::path f = fixture("p2p-all") / "rank-00000.mpa";
  RankLog from_file(f), from_memory("p2p-all rank 0", file_bytes(f));
  auto a = events(from_file), b = events(from_memory);
  REQUIRE(a.size() == b.size());
  for (size_t i = 0; i < a.size(); i++) {
    CHECK(a[i].call == b[i].call);
    CHECK(a[i].e.t_enter_ns == b[i].e.t_enter_ns);
    CHECK(a[i].e.requests == b[i].e.requests);
  }
  CHECK(from_file.header() == from_memory.header());
}

// ---- UNFINISHED (format 4): a call in progress when a signal ended the rank ----------------------------
TEST_CASE("an unfinished call is its thread's last event; a call written again supersedes it", "[unfinished]") {
  // a rank's header (p2p-all's, version 1) with events of our own after it, as format 4
  const auto head = header_only(file_bytes(fixture("p2p-all") / "rank-00000.mpa"));
  const json names = header_of(head)["calls"];
  const auto id = [&](const std::string& call) {
    auto it = std::find(names.begin(), names.end(), call);
    REQUIRE(it != names.end());
    return static_cast<uint32_t>(it - names.begin());
  };
  const auto as_version = [](std::vector<uint8_t> b, uint32_t version) {
    std::memcpy(b.data() + 8, &version, 4);
    return b;
  };
  const auto chunk_of = [](const std::vector<mpa_event>& evs) {
    size_t bound = 10;
    for (const auto& e : evs) bound += mpa_event_bound(&e, 0);
    std::string out(bound, '\0');
    auto* p = reinterpret_cast<uint8_t*>(out.data());
    mpa_codec_state st;
    uint8_t* q = mpa_encode_chunk_start(&st, p, evs.front().t_enter, nullptr);
    for (const auto& e : evs) q = mpa_encode_event(&st, q, &e, 1, 0, 0, nullptr, 0);
    out.resize(static_cast<size_t>(q - p));
    return out;
  };
  mpa_event done{};  // MPI_Recv from rank 1, tag 3: returned
  done.call = id("MPI_Recv");
  done.mask = MPA_F_PEER | MPA_F_TAG | MPA_F_COMM;
  done.t_enter = 1000, done.t_exit = 1500;
  done.peer = 1, done.tag = 3, done.comm = 1;
  mpa_event hung = done;  // MPI_Recv from rank 1, tag 9: in progress from tick 2000 to the signal at 9000
  hung.mask |= MPA_F_UNFINISHED;
  hung.t_enter = 2000, hung.t_exit = 9000, hung.tag = 9;
  mpa_event returned = hung;  // the same call, returned after the rank survived the signal
  returned.mask &= ~MPA_F_UNFINISHED;
  returned.t_exit = 12000;

  SECTION("the last event of its thread, flagged, with what the call was given") {
    auto b = as_version(head, 4);
    append_chunk(b, MPA_CHUNK_EVENTS, chunk_of({done, hung}));
    RankLog log("unfinished", b);
    auto evs = events(log);
    REQUIRE(evs.size() == 2);
    CHECK(!evs[0].e.unfinished);
    CHECK(evs[1].call == "MPI_Recv");
    CHECK(evs[1].e.unfinished);
    CHECK(evs[1].e.tag == 9);
    CHECK(evs[1].e.statuses.empty());
    CHECK(evs[1].e.t_exit_ns - evs[1].e.t_enter_ns == 7000);
    CHECK(log.problems().empty());
  }
  SECTION("the rank survived two signals and the call returned: only the returned call is read") {
    auto b = as_version(head, 4);
    append_chunk(b, MPA_CHUNK_EVENTS, chunk_of({done, hung}));
    mpa_event again = hung;
    again.t_exit = 10000;
    append_chunk(b, MPA_CHUNK_EVENTS, chunk_of({again}));
    append_chunk(b, MPA_CHUNK_EVENTS, chunk_of({returned}));
    RankLog log("superseded", b);
    auto evs = events(log);
    REQUIRE(evs.size() == 2);
    CHECK(!evs[1].e.unfinished);
    CHECK(evs[1].e.tag == 9);
    CHECK(evs[1].e.t_exit_ns - evs[1].e.t_enter_ns == 10000);
    CHECK(log.problems().empty());
  }
  SECTION("the trace holds a call's times exactly up to 2^48 ns of duration, and names the file beyond") {
    // the fixture's clock: ns per tick as the reader converts them
    auto b = as_version(head, 4);
    append_chunk(b, MPA_CHUNK_EVENTS, chunk_of({done}));
    const RankLog probe("probe", b);
    const double ns_per_tick = static_cast<double>(probe.ticks_to_ns(uint64_t{1} << 40)) / static_cast<double>(uint64_t{1} << 40);
    REQUIRE(ns_per_tick > 0);
    auto log_of = [&](const mpa_event& e) {
      auto bytes = as_version(head, 4);
      append_chunk(bytes, MPA_CHUNK_EVENTS, chunk_of({e}));
      return job_dir("long-call", {bytes});
    };
    auto lasting = [&](double ns, const mpa_event& call) {  // the call, returned (or ended) after `ns`
      mpa_event e = call;
      e.t_exit = e.t_enter + static_cast<uint64_t>(ns / ns_per_tick);
      return log_of(e);
    };
    const double limit = static_cast<double>(kMaxOpDuration);
    {
      JobLog job(lasting(limit * 0.99, done));
      const Trace t = build_trace(job);
      REQUIRE(t.ranks.at(0).ops.size() == 1);
      const Op& op = t.ranks[0].ops[0];
      const Event ev = [&] { Event out; job.ranks()[0]->for_each_event([&](const Event& e) { out = e; }); return out; }();
      CHECK(op.t_enter == ev.t_enter_ns);
      CHECK(op.t_exit() == ev.t_exit_ns);
      CHECK(op.t_exit() - op.t_enter > kMaxOpDuration / 2);
    }
    auto refused = [&](const fs::path& dir) {
      JobLog job(dir);
      try {
        build_trace(job);
        FAIL("built a trace of a call an op cannot hold");
      } catch (const LogError& e) {
        CHECK(e.file.find("rank-00000.mpa") != std::string::npos);
        CHECK(std::string(e.what()).find("MPI_Recv") != std::string::npos);
        CHECK(std::string(e.what()).find("78 hours") != std::string::npos);
      }
    };
    refused(lasting(limit * 1.01, done));
    // a call entered 2^56 ns after the clock's zero (a node up for 2.28 years)
    mpa_event late = done;
    late.t_enter = static_cast<uint64_t>(static_cast<double>(kMaxOpEnter) * 1.01 / ns_per_tick);
    late.t_exit = late.t_enter + 10;
    refused(log_of(late));
    // a call in progress when a signal ended the rank, after more than 78 hours (a hang killed at the end
    // of a long allocation): kept, as lasting 78 hours
    JobLog hang(lasting(limit * 1.5, hung));
    const Trace t = build_trace(hang);
    REQUIRE(t.ranks.at(0).ops.size() == 1);
    CHECK(t.ranks[0].ops[0].unfinished);
    CHECK(t.ranks[0].ops[0].duration == kMaxOpDuration);
  }
  SECTION("a file of format 3 cannot hold the flag: the event is corrupt, the one before it read") {
    auto b = as_version(head, 3);
    append_chunk(b, MPA_CHUNK_EVENTS, chunk_of({done, hung}));
    RankLog log("format-3", b);
    auto evs = events(log);
    REQUIRE(evs.size() == 1);
    CHECK(!evs[0].e.unfinished);
    CHECK(has_problem(log.problems(), "field bits this format does not define"));
  }
}

TEST_CASE("a log on the time stamp counter whose clock pairs leave the line says the counter jumped", "[reader][clock]") {
  // every chunk carries a (tick, CLOCK_MONOTONIC ns) pair, and so does the header: pairs of one counter
  // lie on one line; a counter that jumped (a virtual machine suspended or moved) leaves one off it
  auto b = file_bytes(fixture("p2p-all") / "rank-00000.mpa");
  json h = header_of(b);
  h["clock"]["source"] = "tsc";
  RankLog steady("steady", with_header(b, h.dump()));
  CHECK_FALSE(has_problem(steady.problems(), "time stamp counter"));
  h["clock"]["sync_ns"] = h["clock"]["sync_ns"].get<uint64_t>() - 2000000000ull;
  RankLog jumped("jumped", with_header(b, h.dump()));
  CHECK(has_problem(jumped.problems(), "time stamp counter strayed"));
  // the same pairs from the system clock: nothing to say (its readings are the pairs' own)
  h["clock"]["source"] = "monotonic";
  CHECK_FALSE(has_problem(RankLog("system", with_header(b, h.dump())).problems(), "time stamp counter"));
}

// format.h: MPA_CODEC_ZSTD_TIMES, the codec the tracer writes EVENTS chunks in from format 6 on
TEST_CASE("an EVENTS chunk whose times follow its events is read from format 6 on, and refused before", "[reader]") {
  const auto head = header_only(file_bytes(fixture("p2p-all") / "rank-00000.mpa"));
  const json names = header_of(head)["calls"];
  const auto recv = std::find(names.begin(), names.end(), "MPI_Recv");
  REQUIRE(recv != names.end());
  std::vector<mpa_event> evs(3);
  for (size_t i = 0; i < evs.size(); i++) {
    mpa_event& e = evs[i];
    e.call = static_cast<uint32_t>(recv - names.begin());
    e.mask = MPA_F_PEER | MPA_F_TAG | MPA_F_COMM;
    e.t_enter = 5000 + 1000 * i, e.t_exit = e.t_enter + 300 + 100 * i;
    e.peer = 1, e.tag = 3, e.comm = 1;
  }
  std::string payload(1024, '\0');
  std::vector<uint8_t> times(3 * MPA_TIMES_BOUND);
  mpa_codec_state st;
  auto* p = reinterpret_cast<uint8_t*>(payload.data());
  uint8_t* q = mpa_encode_chunk_start(&st, p, evs[0].t_enter, times.data());
  for (const auto& e : evs) q = mpa_encode_event(&st, q, &e, 1, 0, 0, nullptr, 0);
  q = mpa_encode_chunk_end(&st, q, times.data());
  payload.resize(static_cast<size_t>(q - p));
  const auto log_of = [&](uint32_t version, uint8_t type) {
    auto b = head;
    std::memcpy(b.data() + 8, &version, 4);
    append_chunk(b, type, payload, MPA_CODEC_ZSTD_TIMES);
    return b;
  };
  {
    RankLog log("six", log_of(6, MPA_CHUNK_EVENTS));
    CHECK(log.problems().empty());
    auto read = events(log);
    REQUIRE(read.size() == 3);
    for (size_t i = 0; i < 3; i++) {  // ticks are ns here (the header's clock)
      CHECK(read[i].e.t_exit_ns - read[i].e.t_enter_ns == 300 + 100 * i);
      CHECK(read[i].e.peer_local == 1);
      CHECK(read[i].e.tag == 3);
    }
    CHECK(read[1].e.t_enter_ns - read[0].e.t_enter_ns == 1000);
  }
  {
    RankLog log("five", log_of(5, MPA_CHUNK_EVENTS));
    CHECK(events(log).empty());
    CHECK(has_problem(log.problems(), "corrupt: chunk of unknown type 1 or codec 2"));
  }
  {
    RankLog log("defs", log_of(6, MPA_CHUNK_DEFS));
    CHECK(has_problem(log.problems(), "corrupt: chunk of unknown type 2 or codec 2"));
  }
  {  // the times' length cut by one byte: the chunk is reported, nothing wrong is read
    std::string cut = payload;
    cut[cut.size() - 4] = static_cast<char>(cut[cut.size() - 4] - 1);
    auto b = head;
    uint32_t six = 6;
    std::memcpy(b.data() + 8, &six, 4);
    append_chunk(b, MPA_CHUNK_EVENTS, cut, MPA_CODEC_ZSTD_TIMES);
    RankLog log("cut", b);
    auto read = events(log);
    CHECK(read.size() < 3);
    CHECK(!log.problems().empty());
  }
}

TEST_CASE("ticks convert by the clock pairs once they span 0.4 ms, and by the header's tick_hz in a shorter run", "[reader][clock]") {
  // A tick of 4 ns (the counter divided by 2^tick_shift): an MPI_Recv of 500 ticks took 2000 ns. The
  // header's pair is at tick 1000; the events chunk's pair 100 us after it (short) or 1 ms after it.
  const auto head = header_only(file_bytes(fixture("p2p-all") / "rank-00000.mpa"));
  json h = header_of(head);
  const json names = h["calls"];
  const auto recv = std::find(names.begin(), names.end(), "MPI_Recv");
  REQUIRE(recv != names.end());
  mpa_event e{};
  e.call = static_cast<uint32_t>(recv - names.begin());
  e.mask = MPA_F_PEER | MPA_F_TAG | MPA_F_COMM;
  e.t_enter = 5000, e.t_exit = 5500;
  e.peer = 1, e.tag = 3, e.comm = 1;
  std::string payload(mpa_event_bound(&e, 0) + 10, '\0');
  mpa_codec_state st;
  auto* p = reinterpret_cast<uint8_t*>(payload.data());
  uint8_t* q = mpa_encode_event(&st, mpa_encode_chunk_start(&st, p, e.t_enter, nullptr), &e, 1, 0, 0, nullptr, 0);
  payload.resize(static_cast<size_t>(q - p));
  h["clock"]["source"] = "tsc";
  h["clock"]["sync_tick"] = 1000;
  h["clock"]["sync_ns"] = 7000000;
  h["clock"]["offset_to_rank0_ns"] = 0;
  const auto log_with = [&](uint64_t chunk_ns_after, const json& clock_extra) {
    json hh = h;
    for (const auto& [k, v] : clock_extra.items()) hh["clock"][k] = v;
    auto b = with_header(head, hh.dump());
    const size_t at = b.size();
    append_chunk(b, MPA_CHUNK_EVENTS, payload);
    mpa_chunk_header ch;
    std::memcpy(&ch, b.data() + at, sizeof ch);
    ch.sync_tick = 1000 + chunk_ns_after / 4;
    ch.sync_ns = 7000000 + chunk_ns_after;
    std::memcpy(b.data() + at, &ch, sizeof ch);
    return RankLog("clock", b);
  };
  const auto took = [](const RankLog& log) {
    auto evs = events(log);
    REQUIRE(evs.size() == 1);
    return evs[0].e.t_exit_ns - evs[0].e.t_enter_ns;
  };
  const auto entered = [](const RankLog& log) { return events(log).at(0).e.t_enter_ns; };
  // 100 us of pairs: the header's rate (and a log without one reads a tick as 1 ns, as before it)
  CHECK(took(log_with(100000, {{"tick_hz", 250000000}})) == 2000);
  CHECK(entered(log_with(100000, {{"tick_hz", 250000000}})) == 7000000 + 4000 * 4);
  CHECK(took(log_with(100000, json::object())) == 500);
  // 1 ms of pairs: their line, whatever the header says
  CHECK(took(log_with(1000000, {{"tick_hz", 1000000000}})) == 2000);
  CHECK(entered(log_with(1000000, json::object())) == 7000000 + 4000 * 4);
}

// Logs that are cut off or corrupt: what is readable is read; the rest is one clear message naming the
// file and the byte offset; nothing crashes. Each case damages a copy of a real log.
#include <catch2/catch.hpp>

#include <fstream>

#include "support.hpp"

extern "C" {
#include "format.h"
}

using namespace mpa_test;

namespace {

const fs::path& real_log() {
  static fs::path dir = [] {
    JobSpec s;
    s.program = "ring";
    s.args = {"6000"};  // several chunks: 64 KiB of events holds several thousand calls
    s.env = {{"MPIADVISE_BUFFER", "256K"}};
    auto r = run_job(s);
    REQUIRE(r.status == 0);
    return r.dir;
  }();
  return dir;
}

std::vector<uint8_t> bytes_of(const fs::path& f) {
  std::ifstream in(f, std::ios::binary);
  return std::vector<uint8_t>(std::istreambuf_iterator<char>(in), {});
}

fs::path write_copy(const std::vector<uint8_t>& data, size_t n, const std::string& name) {
  fs::path d = fresh_dir(name);
  fs::path f = d / "rank-00000.mpa";
  std::ofstream out(f, std::ios::binary);
  out.write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(n));
  return f;
}

size_t count_events(const mpiadvise::RankLog& log) {
  size_t n = 0;
  log.for_each_event([&](const mpiadvise::Event&) { n++; });
  return n;
}

// Offsets of the chunk headers of a log.
std::vector<size_t> chunk_offsets(const std::vector<uint8_t>& data) {
  mpa_file_header h;
  std::memcpy(&h, data.data(), sizeof h);
  std::vector<size_t> out;
  size_t off = sizeof h + h.json_bytes;
  while (off + sizeof(mpa_chunk_header) <= data.size()) {
    mpa_chunk_header c;
    std::memcpy(&c, data.data() + off, sizeof c);
    out.push_back(off);
    off += sizeof c + c.stored_bytes;
  }
  return out;
}

}  // namespace

TEST_CASE("a log cut off at any byte reads up to its last whole chunk", "[damage]") {
  auto data = bytes_of(real_log() / "rank-00000.mpa");
  auto chunks = chunk_offsets(data);
  REQUIRE(chunks.size() >= 4);
  mpiadvise::RankLog whole(real_log() / "rank-00000.mpa");
  size_t all = count_events(whole);
  REQUIRE(all >= 6000);

  mpa_file_header h;
  std::memcpy(&h, data.data(), sizeof h);
  size_t header_end = sizeof h + h.json_bytes;
  std::vector<size_t> cuts;
  for (size_t n = 0; n < 64; n++) cuts.push_back(n);                      // inside the file header
  for (size_t n = header_end - 3; n < header_end + 40; n++) cuts.push_back(n);  // around the first chunk header
  for (size_t c : chunks)
    for (long d : {-1L, 0L, 1L, 17L, 33L}) cuts.push_back(static_cast<size_t>(static_cast<long>(c) + d));
  for (size_t n = header_end; n < data.size(); n += 997) cuts.push_back(n);
  cuts.push_back(data.size() - 1);

  size_t last_events = 0;
  std::sort(cuts.begin(), cuts.end());
  for (size_t n : cuts) {
    if (n > data.size()) continue;
    fs::path f = write_copy(data, n, "cut");
    INFO("cut at " << n << " of " << data.size());
    if (n < header_end) {
      // not even the header: a clear error naming the file and an offset
      try {
        mpiadvise::RankLog log(f);
        FAIL("a log without its whole header was accepted");
      } catch (const mpiadvise::LogError& e) {
        CHECK(std::string(e.what()).find(f.string()) == 0);
        CHECK(e.offset.has_value());
      }
      continue;
    }
    mpiadvise::RankLog log(f);
    size_t events = count_events(log);
    CHECK(events >= last_events);  // more file, never fewer events
    last_events = events;
    bool at_boundary = n == data.size() || std::find(chunks.begin(), chunks.end(), n) != chunks.end();
    if (!at_boundary) {
      REQUIRE(log.problems().size() == 1);
      CHECK_FALSE(log.problems()[0].corrupt);
      CHECK(log.problems()[0].offset.has_value());
      CHECK(log.problems()[0].text().find(f.string()) == 0);
    } else {
      CHECK(log.problems().empty());
    }
    fs::remove_all(f.parent_path());
  }
  CHECK(last_events <= all);
}

TEST_CASE("a corrupt chunk is reported with the file and its offset, and the other chunks still read", "[damage]") {
  auto data = bytes_of(real_log() / "rank-00000.mpa");
  auto chunks = chunk_offsets(data);
  REQUIRE(chunks.size() >= 4);
  mpiadvise::RankLog whole(real_log() / "rank-00000.mpa");
  size_t all = count_events(whole);
  // damage the compressed payload of an events chunk in the middle (one long enough for byte 40 to be
  // inside it: a quiet thread's chunk sealed by age may hold a few events)
  size_t victim = 0;
  for (size_t i = 1; i + 1 < chunks.size() && !victim; i++) {
    mpa_chunk_header c;
    std::memcpy(&c, data.data() + chunks[i], sizeof c);
    if (c.type == MPA_CHUNK_EVENTS && c.stored_bytes > 64) victim = chunks[i];
  }
  REQUIRE(victim);
  auto bad = data;
  bad[victim + sizeof(mpa_chunk_header) + 40] ^= 0x5a;
  fs::path f = write_copy(bad, bad.size(), "corrupt");
  mpiadvise::RankLog log(f);
  size_t events = count_events(log);
  CHECK(events < all);
  CHECK(events > 0);
  bool named = false;
  for (const auto& p : log.problems()) {
    named |= p.corrupt && p.offset == victim;
    CHECK(p.text().find(f.string()) == 0);
  }
  CHECK(named);

  // the command says it on one line and exits 1, after printing what it could read
  auto r = run_command((build_dir() / "bin" / "mpiadvise").string() + " dump --summary " + f.parent_path().string());
  CHECK(r.status == 1);
  CHECK(r.err.find(f.string() + ": offset " + std::to_string(victim) + ": corrupt") != std::string::npos);
  CHECK(r.out.find("MPI_Sendrecv_replace") != std::string::npos);
}

TEST_CASE("a damaged chunk header stops reading there, with the offset", "[damage]") {
  auto data = bytes_of(real_log() / "rank-00000.mpa");
  auto chunks = chunk_offsets(data);
  auto bad = data;
  bad[chunks[2]] ^= 0xff;  // the magic of the third chunk
  fs::path f = write_copy(bad, bad.size(), "badmagic");
  mpiadvise::RankLog log(f);
  REQUIRE(!log.problems().empty());
  CHECK(log.problems()[0].corrupt);
  CHECK(log.problems()[0].offset == chunks[2]);
  CHECK(log.chunk_count() == 2);
}

TEST_CASE("a log of a newer format, or not a log at all, is refused with a clear error", "[damage]") {
  auto data = bytes_of(real_log() / "rank-00000.mpa");
  auto newer = data;
  uint32_t v = MPA_FORMAT_VERSION + 1;
  std::memcpy(newer.data() + 8, &v, sizeof v);
  fs::path f = write_copy(newer, newer.size(), "newer");
  try {
    mpiadvise::RankLog log(f);
    FAIL("a newer format was accepted");
  } catch (const mpiadvise::LogError& e) {
    CHECK(std::string(e.what()).find("newer than this mpiadvise reads") != std::string::npos);
    CHECK(std::string(e.what()).find(f.string()) == 0);
  }
  std::vector<uint8_t> text(4000, 'x');
  fs::path g = write_copy(text, text.size(), "notalog");
  auto r = run_command((build_dir() / "bin" / "mpiadvise").string() + " dump " + g.parent_path().string());
  CHECK(r.status == 2);
  CHECK(r.err == "mpiadvise: " + g.parent_path().string() + ": " + g.string() +
                     ": offset 0: not an mpiadvise log (no MPADVLOG magic)\n");
  auto json = data;
  json[sizeof(mpa_file_header) + 1] = '#';  // the header JSON
  fs::path j = write_copy(json, json.size(), "badjson");
  CHECK_THROWS_WITH(mpiadvise::RankLog(j), Catch::Contains("header is not valid") && Catch::Contains(j.string()));
}

TEST_CASE("a job directory with a rank missing is read, and the missing rank is named", "[damage]") {
  fs::path d = fresh_dir("missing");
  fs::copy_file(real_log() / "rank-00000.mpa", d / "rank-00000.mpa");
  mpiadvise::JobLog job(d);
  CHECK(job.world_size() == 2);
  CHECK(job.ranks().size() == 1);
  auto problems = job.problems();
  REQUIRE(problems.size() == 1);
  CHECK(problems[0].text().find("1 of 2 ranks have no readable log (rank 1)") != std::string::npos);
}

TEST_CASE("header fields that would make the reader allocate or misplace a rank are refused", "[damage]") {
  auto data = bytes_of(real_log() / "rank-00000.mpa");
  auto chunks = chunk_offsets(data);
  // a chunk header claiming 4 GiB of payload: corrupt, and nothing that size is allocated
  auto huge = data;
  uint32_t lie = 0xFFFFFFFFu;
  std::memcpy(huge.data() + chunks[1] + offsetof(mpa_chunk_header, raw_bytes), &lie, sizeof lie);
  fs::path f = write_copy(huge, huge.size(), "hugechunk");
  mpiadvise::RankLog log(f);
  count_events(log);
  bool said = false;
  for (const auto& p : log.problems()) said |= p.corrupt && p.offset == chunks[1] && p.message.find("its zstd frame") != std::string::npos;
  CHECK(said);
  // a header whose rank is outside its world
  mpa_file_header h;
  std::memcpy(&h, data.data(), sizeof h);
  std::string json(data.begin() + sizeof h, data.begin() + sizeof h + h.json_bytes);
  auto with = [&](const std::string& from, const std::string& to) {
    std::string j = json;
    j.replace(j.find(from), from.size(), to);
    std::vector<uint8_t> out(data.begin(), data.begin() + sizeof h);
    mpa_file_header nh = h;
    nh.json_bytes = static_cast<uint32_t>(j.size());
    std::memcpy(out.data(), &nh, sizeof nh);
    out.insert(out.end(), j.begin(), j.end());
    out.insert(out.end(), data.begin() + sizeof h + h.json_bytes, data.end());
    return out;
  };
  auto bad_rank = with("\"rank\":0", "\"rank\":5");
  CHECK_THROWS_WITH(mpiadvise::RankLog(write_copy(bad_rank, bad_rank.size(), "badrank")),
                    Catch::Contains("rank 5 is not in a world of 2"));
  // an informational key of the wrong type: ignored, and said, with the file and the key
  auto bad_clock = with("\"source\":\"", "\"source\":5,\"was\":\"");
  mpiadvise::RankLog clock_log(write_copy(bad_clock, bad_clock.size(), "badclock"));
  REQUIRE(clock_log.problems().size() == 1);
  CHECK(clock_log.problems()[0].text().find("rank-00000.mpa") != std::string::npos);
  CHECK(clock_log.problems()[0].text().find("'clock.source' is an integer, not a string: ignored") != std::string::npos);
  CHECK(count_events(clock_log) > 0);
  // the tracer's round trips (rank 0's header has them): one that is negative drops them all, said so
  REQUIRE(json.find("\"round_trip_ns\":[[") != std::string::npos);
  auto bad_probe = with("\"round_trip_ns\":[[", "\"round_trip_ns\":[[-5,");
  mpiadvise::RankLog probe_log(write_copy(bad_probe, bad_probe.size(), "badprobe"));
  REQUIRE(probe_log.problems().size() == 1);
  CHECK(probe_log.problems()[0].text().find("header key 'message_probe' is an object with a round trip that is an "
                                            "integer: ignored") != std::string::npos);
  CHECK_FALSE(probe_log.header().contains("message_probe"));
  CHECK(mpiadvise::RankLog(real_log() / "rank-00000.mpa").header().contains("message_probe"));
  // its copies of another shape (a list short of the sizes, a copy that is negative): they alone are
  // dropped, said so, and the round trips kept
  REQUIRE(json.find("\"copy_ns\":[[") != std::string::npos);
  for (const auto& [from, to, why] : {std::tuple{"\"copy_ns\":[[", "\"copy_ns\":[[-5,", "an array with a copy that is an integer"},
                                      std::tuple{"\"copy_ns\":[[", "\"copy_ns\":[[1],[", "an array, not a list for each of the 5 sizes"}}) {
    auto bad_copies = with(from, to);
    mpiadvise::RankLog copies_log(write_copy(bad_copies, bad_copies.size(), "badcopies"));
    REQUIRE(copies_log.problems().size() == 1);
    CHECK(copies_log.problems()[0].text().find(std::string("header key 'message_probe.copy_ns' is ") + why + ": ignored") !=
          std::string::npos);
    CHECK(copies_log.header().at("message_probe").contains("round_trip_ns"));
    CHECK_FALSE(copies_log.header().at("message_probe").contains("copy_ns"));
  }
  // round trips a thousand times the set's at MPI_Init (the trailer's as they were): the pooled medians
  // put the run beyond 0.2 to 5 times the set's speed, which no machine the set was measured on goes at;
  // the report says so and leaves the set's times as they are
  auto header = nlohmann::json::parse(json);
  for (auto& size : header["message_probe"]["round_trip_ns"])
    for (auto& t : size) t = t.get<uint64_t>() * 1000;
  auto slow = with(json, header.dump());
  fs::path slow_log = write_copy(slow, slow.size(), "slowprobe");
  fs::copy_file(real_log() / "rank-00001.mpa", slow_log.parent_path() / "rank-00001.mpa");
  const auto rep = report_json(slow_log.parent_path());
  const auto& speed = rep.at("params").at("run_speed");
  CHECK(speed.at("factor").get<double>() > 5);
  CHECK(speed.at("applied") == false);
  CHECK(rep.at("params").at("why").get<std::string>().find("not applied") != std::string::npos);
  const double own_o = report_json(slow_log.parent_path(), "--at-set-speed").at("params").at("o_ns").get<double>();
  REQUIRE(own_o > 0);
  CHECK(rep.at("params").at("o_ns").get<double>() < 5 * own_o);  // at most a [machine] speed of the set
}

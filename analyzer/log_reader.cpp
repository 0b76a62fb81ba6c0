#include "log_reader.hpp"

#include <zstd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <fstream>
#include <regex>
#include <set>

#include <fmt/format.h>

#include "interned.hpp"
#include "log_header.hpp"
#include "text_escape.hpp"

extern "C" {
#include "format.h"
}

namespace mpiadvise {

namespace fs = std::filesystem;

// Messages are one line for a terminal: bytes from the file (a JSON excerpt, a name) are escaped.
LogError::LogError(const std::string& f, std::optional<uint64_t> off, const std::string& what)
    : std::runtime_error(terminal_text(off ? fmt::format("{}: offset {}: {}", f, *off, what) : fmt::format("{}: {}", f, what))),
      file(f),
      offset(off),
      detail(what) {}

std::string ReadProblem::text() const {
  return terminal_text(offset ? fmt::format("{}: offset {}: {}", file, *offset, message) : fmt::format("{}: {}", file, message));
}

const char* call_name(int call) {
  return call >= 0 && call < MPA_CALL_COUNT ? mpa_call_names[call] : "unknown";
}

namespace {
struct RanksHash {
  size_t operator()(const std::vector<int32_t>& r) const {
    return std::hash<std::string_view>{}(std::string_view(reinterpret_cast<const char*>(r.data()), r.size() * sizeof r[0]));
  }
};
}  // namespace

Ranks::Ranks(std::vector<int32_t> ranks) : ranks_(interned<std::vector<int32_t>, RanksHash>(std::move(ranks))) {}

size_t RankLog::CallTableHash::operator()(const CallTable& t) const {
  size_t h = t.names.size();
  for (const auto& n : t.names) h = h * 1099511628211u ^ std::hash<std::string>{}(n);
  return h;
}

int32_t Communicator::world_rank(int32_t local) const {
  if (local < 0) return local;
  const auto& group = inter ? remote : members;
  return local < static_cast<int32_t>(group.size()) ? group[local] : kUndefinedRank;
}

// ---- bytes ---------------------------------------------------------------------------------------------
namespace {

// Reads varints from a decoded DEFS chunk; throws on running off the end.
struct Cursor {
  const uint8_t* p;
  const uint8_t* end;
  bool done() const { return p >= end; }
  size_t left() const { return static_cast<size_t>(end - p); }
  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p >= end) throw std::out_of_range("runs past the end of its chunk");
      uint8_t b = *p++;
      if (shift == 63 && b > 1) break;
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
    throw std::out_of_range("varint longer than 64 bits");
  }
  uint32_t u32(const char* what) {
    uint64_t v = varint();
    if (v > UINT32_MAX) throw std::out_of_range(fmt::format("{} {} is larger than 32 bits", what, v));
    return static_cast<uint32_t>(v);
  }
  int32_t i32(const char* what) {
    uint64_t z = varint();
    int64_t v = static_cast<int64_t>(z >> 1) ^ -static_cast<int64_t>(z & 1);
    if (v < INT32_MIN || v > INT32_MAX) throw std::out_of_range(fmt::format("{} {} is not a 32-bit integer", what, v));
    return static_cast<int32_t>(v);
  }
  // a count of items of at least one byte each: no more than the chunk holds, nor than `most`
  uint64_t count(const char* what, uint64_t most) {
    uint64_t n = varint();
    if (n > left()) throw std::out_of_range(fmt::format("{} {} is more than the {} bytes left in the chunk", what, n, left()));
    if (n > most) throw std::out_of_range(fmt::format("{} {} is more than {}", what, n, most));
    return n;
  }
};

// A chunk decompresses to at most this: the tracer's event chunks hold 64 KiB, its definitions a few
// MiB for the largest jobs; and to at most 1024 times its stored size beyond the first MiB, so that a
// damaged size cannot make the reader allocate what no real chunk needs.
constexpr uint64_t kMaxChunkRawBytes = 256u << 20;
constexpr uint64_t kMaxChunkRatio = 1024;
constexpr uint64_t kMaxCallSiteDepth = 64;
constexpr uint64_t kMaxPathBytes = 4096;
// The header's keys that differ rank by rank (the tracer's mpa_header_json); the rest is the run's, the
// same on every rank but rank 0, which adds its MPI's control variables and the message probe.
constexpr const char* kOwnHeaderKeys[] = {"rank", "pid", "hostname", "host_cpus", "start_unix_ns", "clock"};

}  // namespace

// ---- RankLog ---------------------------------------------------------------------------------------------
RankLog::RankLog(const fs::path& file) : path_(file) {
  std::error_code ec;
  file_bytes_ = fs::file_size(file, ec);
  if (ec) throw LogError(file.string(), std::nullopt, "cannot read: " + ec.message());
  read_header();
}

RankLog::RankLog(const std::string& name, std::vector<uint8_t> bytes)
    : path_(name), memory_(std::make_shared<const std::vector<uint8_t>>(std::move(bytes))) {
  file_bytes_ = memory_->size();
  read_header();
}

std::vector<uint8_t> RankLog::read_at(uint64_t offset, size_t n) const {
  if (offset > file_bytes_ || n > file_bytes_ - offset) throw LogError(path_.string(), offset, "short read");
  if (memory_) return std::vector<uint8_t>(memory_->begin() + static_cast<long>(offset),
                                           memory_->begin() + static_cast<long>(offset + n));
  std::ifstream in(path_, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(offset));
  std::vector<uint8_t> out(n);
  in.read(reinterpret_cast<char*>(out.data()), static_cast<std::streamsize>(n));
  if (static_cast<size_t>(in.gcount()) != n) throw LogError(path_.string(), offset, "short read");
  return out;
}

nlohmann::json RankLog::header() const {
  nlohmann::json whole = *run_header_;
  whole.update(own_header_);
  return whole;
}

const nlohmann::json* RankLog::header_key(std::string_view key) const {
  if (auto it = own_header_.find(key); it != own_header_.end()) return &*it;
  if (auto it = run_header_->find(key); it != run_header_->end()) return &*it;
  return nullptr;
}

std::string RankLog::hostname() const {
  const nlohmann::json* h = header_key("hostname");
  return h && h->is_string() ? h->get<std::string>() : std::string();
}

void RankLog::read_header() {
  const std::string file = path_.string();
  if (file_bytes_ < sizeof(mpa_file_header))
    throw LogError(file, 0, fmt::format("not an mpiadvise log: {} bytes, shorter than the header", file_bytes_));
  auto head = read_at(0, sizeof(mpa_file_header));
  mpa_file_header h;
  std::memcpy(&h, head.data(), sizeof h);
  if (std::memcmp(h.magic, MPA_FILE_MAGIC, 8) != 0) throw LogError(file, 0, "not an mpiadvise log (no MPADVLOG magic)");
  if (h.version > MPA_FORMAT_VERSION)
    throw LogError(file, 8,
                   fmt::format("log format version {} is newer than this mpiadvise reads ({}); use a newer mpiadvise",
                               h.version, MPA_FORMAT_VERSION));
  if (h.version == 0) throw LogError(file, 8, "log format version 0 is not valid");
  format_version_ = h.version;
  if (h.json_bytes > kMaxHeaderBytes)
    throw LogError(file, 12, fmt::format("header JSON of {} bytes: more than the {} a log's header can hold", h.json_bytes,
                                         kMaxHeaderBytes));
  if (sizeof h + h.json_bytes > file_bytes_)
    throw LogError(file, sizeof h, fmt::format("header of {} bytes runs past the end of the file", h.json_bytes));
  auto json = read_at(sizeof h, h.json_bytes);
  nlohmann::json header;
  try {
    header = parse_log_json(std::string_view(reinterpret_cast<const char*>(json.data()), json.size()));
  } catch (const std::exception& e) {
    throw LogError(file, sizeof h, std::string("header is not valid: ") + e.what());
  }
  HeaderFacts facts = check_header(header, file, sizeof h, problems_);
  rank_ = facts.rank;
  size_ = facts.size;
  header.erase("calls");  // held once for the run, in calls_
  own_header_ = nlohmann::json::object();
  for (const char* key : kOwnHeaderKeys)
    if (auto it = header.find(key); it != header.end()) {
      own_header_[key] = std::move(*it);
      header.erase(it);
    }
  run_header_ = interned<nlohmann::json, std::hash<nlohmann::json>>(std::move(header));
  CallTable calls{std::move(facts.calls), {}};
  calls.ids.reserve(calls.names.size());
  for (const auto& n : calls.names) {
    int id = -1;
    for (int i = 0; i < MPA_CALL_COUNT; i++)
      if (n == mpa_call_names[i]) id = i;
    calls.ids.push_back(id);
  }
  calls_ = interned<CallTable, CallTableHash>(std::move(calls));
  index_chunks(sizeof h + h.json_bytes);
  if (auto world = comms_.find(1); world != comms_.end() && world->second.members.size() != static_cast<size_t>(size_))
    throw LogError(file, sizeof h,
                   fmt::format("header key 'size' says a world of {} ranks; the log's MPI_COMM_WORLD has {}", size_,
                               world->second.members.size()));
  fit_clock();
}

void RankLog::index_chunks(uint64_t off) {
  const std::string name = path_.string();
  while (off < file_bytes_) {
    if (file_bytes_ - off < sizeof(mpa_chunk_header)) {
      problems_.push_back({name, off, fmt::format("file ends inside a chunk header ({} bytes left); read up to here",
                                                  file_bytes_ - off), false});
      break;
    }
    mpa_chunk_header ch;
    auto head = read_at(off, sizeof ch);
    std::memcpy(&ch, head.data(), sizeof ch);
    if (ch.magic != MPA_CHUNK_MAGIC) {
      problems_.push_back({name, off, "corrupt: no chunk starts here (bad chunk magic); nothing after it is read", true});
      break;
    }
    // MPA_CODEC_ZSTD_TIMES: events only, from format 6 on
    const bool times_codec = ch.codec == MPA_CODEC_ZSTD_TIMES && ch.type == MPA_CHUNK_EVENTS && format_version_ >= 6;
    if ((ch.codec != MPA_CODEC_ZSTD && !times_codec) || ch.type < MPA_CHUNK_EVENTS || ch.type > MPA_CHUNK_TRAILER) {
      problems_.push_back({name, off, fmt::format("corrupt: chunk of unknown type {} or codec {}", ch.type, ch.codec), true});
      break;
    }
    if (ch.stored_bytes > file_bytes_ - off - sizeof ch) {
      problems_.push_back({name, off, fmt::format("file ends inside a chunk of {} bytes ({} present); read up to here",
                                                  ch.stored_bytes, file_bytes_ - off - sizeof ch), false});
      break;
    }
    ChunkRef c{off, ch.type, ch.codec, ch.thread, ch.raw_bytes, ch.stored_bytes, ch.sync_tick, ch.sync_ns};
    off += sizeof ch + ch.stored_bytes;
    std::vector<uint8_t> data;
    try {
      if (c.type != MPA_CHUNK_EVENTS) data = payload(c);  // events are decompressed when read
    } catch (const LogError& e) {
      problems_.push_back({name, c.offset, e.detail, true});
      continue;
    }
    chunks_.push_back(c);
    if (c.type == MPA_CHUNK_DEFS) {
      read_defs(data, c);
    } else if (c.type == MPA_CHUNK_META || c.type == MPA_CHUNK_TRAILER) {
      nlohmann::json j;
      try {
        j = parse_log_json(std::string_view(reinterpret_cast<const char*>(data.data()), data.size()));
      } catch (const std::exception& e) {
        problems_.push_back({name, c.offset, std::string("corrupt: metadata chunk is not valid JSON: ") + e.what(), true});
        continue;
      }
      if (c.type == MPA_CHUNK_TRAILER) {
        if (check_trailer(j, name, c.offset, problems_)) {
          // its call sites and communicators repeat the definitions (read_defs), which the analysis reads;
          // the communicators' members would take each rank's log as many numbers as ranks
          j.erase("callsites");
          j.erase("comms");
          trailer_ = std::move(j);
        }
      } else if (check_meta(j, name, c.offset, problems_)) {
        meta_.push_back(std::move(j));
      }
    }
  }
}

std::vector<uint8_t> RankLog::payload(const ChunkRef& c) const {
  const std::string name = path_.string();
  auto stored = read_at(c.offset + sizeof(mpa_chunk_header), c.stored_bytes);
  // the frame records its decompressed size: a chunk header that disagrees is corrupt, and no
  // allocation is made from a size that no real chunk has
  unsigned long long frame_bytes = ZSTD_getFrameContentSize(stored.data(), stored.size());
  if (frame_bytes == ZSTD_CONTENTSIZE_ERROR || frame_bytes == ZSTD_CONTENTSIZE_UNKNOWN || frame_bytes != c.raw_bytes)
    throw LogError(name, c.offset,
                   fmt::format("corrupt: the chunk header says {} bytes, its zstd frame {}", c.raw_bytes,
                               frame_bytes == ZSTD_CONTENTSIZE_ERROR ? std::string("is not a frame")
                               : frame_bytes == ZSTD_CONTENTSIZE_UNKNOWN ? std::string("does not say")
                                                                         : std::to_string(frame_bytes)));
  const uint64_t most = std::min(kMaxChunkRawBytes, std::max<uint64_t>(1u << 20, uint64_t{c.stored_bytes} * kMaxChunkRatio));
  if (c.raw_bytes > most)
    throw LogError(name, c.offset, fmt::format("corrupt: the chunk and its zstd frame say {} bytes from {} stored; at most {} "
                                               "are possible", c.raw_bytes, c.stored_bytes, most));
  std::vector<uint8_t> raw(c.raw_bytes);
  size_t n = ZSTD_decompress(raw.data(), raw.size(), stored.data(), stored.size());
  if (ZSTD_isError(n))
    throw LogError(name, c.offset, fmt::format("corrupt: chunk does not decompress: {}", ZSTD_getErrorName(n)));
  if (n != c.raw_bytes)
    throw LogError(name, c.offset, fmt::format("corrupt: chunk decompresses to {} bytes, not {}", n, c.raw_bytes));
  return raw;
}

void RankLog::read_defs(const std::vector<uint8_t>& data, const ChunkRef& c) {
  Cursor cur{data.data(), data.data() + data.size()};
  // members are world ranks: each below the world's size
  const auto ranks = [&](Ranks& into, const char* what) {
    uint64_t n = cur.count(what, static_cast<uint64_t>(size_));
    std::vector<int32_t> out;
    out.reserve(n);
    for (uint64_t i = 0; i < n; i++) {
      int32_t r = cur.i32("member");
      if (r < 0 || r >= size_) throw std::out_of_range(fmt::format("member {} is not a rank of a world of {}", r, size_));
      out.push_back(r);
    }
    into = Ranks(std::move(out));
  };
  try {
    while (!cur.done()) {
      uint8_t kind = *cur.p++;
      if (kind == MPA_DEF_CALLSITE) {
        CallSite s;
        s.id = cur.u32("call site id");
        uint64_t depth = cur.count("call site depth", kMaxCallSiteDepth);
        for (uint64_t i = 0; i < depth; i++) s.frames.push_back(cur.varint());
        callsites_[s.id] = std::move(s);
      } else if (kind == MPA_DEF_COMM) {
        Communicator m;
        m.id = cur.u32("communicator id");
        m.gid = cur.varint();
        m.inter = cur.varint() & 1;
        ranks(m.members, "communicator size");
        if (m.inter) ranks(m.remote, "remote group size");
        m.parent = cur.u32("parent communicator id");
        uint64_t call = cur.varint();
        m.created_by = call < calls_->names.size() ? calls_->names[call] : "";
        comms_[m.id] = std::move(m);
      } else if (kind == MPA_DEF_MODULE) {
        Module mod;
        mod.start = cur.varint();
        mod.end = cur.varint();
        mod.base = cur.varint();
        uint64_t len = cur.count("module path length", kMaxPathBytes);
        mod.path.assign(reinterpret_cast<const char*>(cur.p), len);
        cur.p += len;
        modules_.push_back(std::move(mod));
      } else if (kind == MPA_DEF_COMMFREE) {
        cur.varint();  // the id stays defined: events before the free refer to it
      } else {
        throw std::out_of_range(fmt::format("unknown definition kind {}", kind));
      }
    }
  } catch (const std::out_of_range& e) {
    problems_.push_back({path_.string(), c.offset,
                         fmt::format("corrupt: definitions, at byte {} of the chunk: {}", cur.p - data.data(), e.what()), true});
  }
}

// How far a (tick, ns) pair of a log on the time stamp counter may lie off the fitted line before the
// reader says the counter jumped: 1 ms, or 0.1% of the run (CLOCK_MONOTONIC is slewed by up to 500 ppm).
constexpr double kClockStrayNs = 1e6;
// How far apart in time a log's first and last clock pairs must be for the counter's rate to come from
// them: 0.4 ms (a rate good to a few parts in 10^5)
constexpr uint64_t kClockFitNs = 400000;

void RankLog::fit_clock() {
  // Pairs (tick, ns) from the header and every chunk; the slope from the two farthest apart. The
  // header's keys have their types (check_header).
  std::vector<std::pair<uint64_t, uint64_t>> pairs;
  const nlohmann::json no_clock = nlohmann::json::object();
  const nlohmann::json* clock = header_key("clock");
  const nlohmann::json& clk = clock ? *clock : no_clock;
  if (clk.contains("sync_tick") && clk.contains("sync_ns"))
    pairs.emplace_back(clk["sync_tick"].get<uint64_t>(), clk["sync_ns"].get<uint64_t>());
  for (const auto& c : chunks_) pairs.emplace_back(c.sync_tick, c.sync_ns);
  bool tsc = clk.value("source", "monotonic") == "tsc";
  if (!pairs.empty()) {
    auto [lo, hi] = std::minmax_element(pairs.begin(), pairs.end());
    base_tick_ = static_cast<double>(lo->first);
    base_ns_ = static_cast<double>(lo->second);
    // pairs good to a few ns give the slope once they span kClockFitNs; a shorter run takes the rate the
    // tracer measured at MPI_Init (clock.tick_hz; tsc_ghz in logs before it)
    if (tsc && hi->first > lo->first && hi->second >= lo->second + kClockFitNs)
      slope_ = static_cast<double>(hi->second - lo->second) / static_cast<double>(hi->first - lo->first);
    else if (tsc && clk.value("tick_hz", uint64_t{0}) > 0)
      slope_ = 1e9 / static_cast<double>(clk.value("tick_hz", uint64_t{1}));
    else if (tsc)
      slope_ = run_header_->value("tsc_ghz", 0.0) > 0 ? 1.0 / run_header_->value("tsc_ghz", 1.0) : 1.0;
    if (!std::isfinite(slope_) || slope_ <= 0) slope_ = 1.0;
    // a counter that jumped (a virtual machine suspended, restored or moved) leaves pairs off the line
    double strayed = 0;
    for (const auto& [tick, ns] : pairs)
      strayed = std::max(strayed, std::fabs(base_ns_ + (static_cast<double>(tick) - base_tick_) * slope_ -
                                            static_cast<double>(ns)));
    const double span = static_cast<double>(std::max_element(pairs.begin(), pairs.end(), [](const auto& x, const auto& y) {
                                              return x.second < y.second;
                                            })->second - lo->second);
    if (tsc && strayed > std::max(kClockStrayNs, 1e-3 * span))
      problems_.push_back({path_.string(), std::nullopt,
                           fmt::format("the time stamp counter strayed {:.1f} ms from CLOCK_MONOTONIC during the run (the "
                                       "machine suspended or moved?): times are off by up to that; MPIADVISE_CLOCK=monotonic "
                                       "traces with the system clock",
                                       strayed / 1e6),
                           false});
  }
  // the offset to rank 0's clock measured at MPI_Init, averaged with the one at MPI_Finalize where there is one
  offset_ns_ = static_cast<double>(clk.value("offset_to_rank0_ns", int64_t{0}));
  if (trailer_.is_object() && trailer_.contains("clock_offset_finalize_ns"))
    offset_ns_ = (offset_ns_ + static_cast<double>(trailer_["clock_offset_finalize_ns"].get<int64_t>())) / 2;
}

// A problem found while decoding events is found again on every pass over them: say it once.
void RankLog::add_problem(ReadProblem p) const {
  for (const auto& q : problems_)
    if (q.offset == p.offset && q.message == p.message) return;
  problems_.push_back(std::move(p));
}

uint64_t RankLog::calls_estimate() const {
  if (trailer_.is_object()) {
    auto it = trailer_.find("events");
    if (it != trailer_.end() && it->is_number_unsigned()) return it->get<uint64_t>();
  }
  uint64_t raw = 0;
  for (const auto& c : chunks_)
    if (c.type == MPA_CHUNK_EVENTS) raw += c.raw_bytes;
  return raw / 4;
}

uint64_t RankLog::calls_estimate(uint64_t until_ns, uint64_t from_ns) const {
  uint64_t raw = 0, before = 0;
  std::set<uint16_t> beyond;  // threads whose first chunk written after until_ns is counted
  std::map<uint16_t, uint64_t> last;  // by thread: when its previous chunk was written
  for (const auto& c : chunks_) {
    if (c.type != MPA_CHUNK_EVENTS) continue;
    raw += c.raw_bytes;
    const uint64_t written = to_ns(c.sync_tick);
    const auto prev = last.find(c.thread);
    const uint64_t since = prev == last.end() ? 0 : prev->second;  // its events were entered since then
    last[c.thread] = written;
    if (written < from_ns) continue;  // its events were all entered before from_ns
    if (written >= until_ns && !beyond.insert(c.thread).second) continue;
    // the chunk from_ns falls in: the share of its time after from_ns, the calls taken as spread evenly
    const double share = since < from_ns && written > since
                             ? static_cast<double>(written - from_ns) / static_cast<double>(written - since) : 1.0;
    before += static_cast<uint64_t>(static_cast<double>(c.raw_bytes) * share + 0.5);
  }
  const uint64_t calls = calls_estimate();
  if (raw == 0 || before >= raw) return calls;
  return static_cast<uint64_t>(static_cast<double>(calls) * static_cast<double>(before) / static_cast<double>(raw) + 0.5);
}

uint64_t RankLog::last_chunk_ns() const {
  uint64_t last = 0;
  for (const auto& c : chunks_)
    if (c.type == MPA_CHUNK_EVENTS) last = std::max(last, to_ns(c.sync_tick));
  return last;
}

uint64_t RankLog::ticks_to_ns(uint64_t ticks) const { return detail::clamp_to_u64(static_cast<double>(ticks) * slope_ + 0.5); }

// ---- JobLog -----------------------------------------------------------------------------------------------
JobLog::JobLog(const fs::path& dir) : dir_(dir) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) throw LogError(dir.string(), std::nullopt, "no such log directory");
  if (!fs::is_directory(dir, ec)) {
    // a single rank file is accepted too
    ranks_.push_back(std::make_unique<RankLog>(dir));
    settle_world_size();
    return;
  }
  static const std::regex pattern(R"(rank-(\d+)\.mpa)");
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (std::regex_match(entry.path().filename().string(), pattern)) files.push_back(entry.path());
  if (ec) throw LogError(dir.string(), std::nullopt, "cannot list: " + ec.message());
  if (files.empty()) throw LogError(dir.string(), std::nullopt, "no rank-NNNNN.mpa logs in this directory");
  std::sort(files.begin(), files.end());
  std::set<int> died_before_tracing;  // ranks whose log is empty: killed inside MPI_Init
  for (const auto& f : files) {
    std::error_code size_ec;
    const std::string digits = f.filename().string().substr(5, f.filename().string().size() - 9);
    if (fs::file_size(f, size_ec) == 0 && !size_ec && digits.size() <= 9) {
      int r = std::stoi(digits);
      died_before_tracing.insert(r);
      own_problems_.push_back({f.string(), std::nullopt,
                               fmt::format("empty: rank {} died before tracing started (inside MPI_Init); the other "
                                           "ranks are analysed without it", r),
                               false});
      continue;
    }
    try {
      ranks_.push_back(std::make_unique<RankLog>(f));
    } catch (const LogError& e) {
      own_problems_.push_back({e.file, e.offset, e.detail, true});
    }
  }
  if (ranks_.empty()) throw LogError(dir.string(), std::nullopt, own_problems_.empty() ? "no readable logs" : own_problems_[0].text());
  // Logs of two jobs (each header names its job) are not one run: say which files are whose.
  std::map<std::string, std::vector<const RankLog*>> jobs;
  for (const auto& r : ranks_) {
    const nlohmann::json* job = r->header_key("job");
    jobs[job && job->is_string() ? job->get<std::string>() : std::string()].push_back(r.get());
  }
  if (jobs.size() > 1) {
    std::string which;
    for (const auto& [id, logs] : jobs)
      which += fmt::format("{}{} log{} of job {} ({}{})", which.empty() ? "" : "; ", logs.size(), logs.size() == 1 ? "" : "s",
                           id.empty() ? "without an id" : id, logs[0]->path().filename().string(), logs.size() > 1 ? ", ..." : "");
    throw LogError(dir.string(), std::nullopt,
                   fmt::format("holds the logs of {} jobs, not one: {}; move each job's logs to a directory of its own",
                               jobs.size(), which));
  }
  std::sort(ranks_.begin(), ranks_.end(), [](const auto& a, const auto& b) { return a->rank() < b->rank(); });
  for (size_t i = 1; i < ranks_.size();) {  // two files claiming one rank: keep the first, say so
    if (ranks_[i]->rank() == ranks_[i - 1]->rank()) {
      own_problems_.push_back({ranks_[i]->path().string(), std::nullopt,
                               fmt::format("claims rank {}, as {} does; not read", ranks_[i]->rank(),
                                           ranks_[i - 1]->path().string()),
                               true});
      ranks_.erase(ranks_.begin() + static_cast<long>(i));
    } else {
      i++;
    }
  }
  settle_world_size();
  std::set<int> present;
  for (const auto& r : ranks_) present.insert(r->rank());
  std::vector<int> missing;
  for (int r = 0; r < world_size_; r++)
    if (!present.count(r) && !died_before_tracing.count(r)) missing.push_back(r);
  if (!missing.empty())
    own_problems_.push_back({dir.string(), std::nullopt,
                             fmt::format("{} of {} ranks have no readable log (rank {}{})", missing.size(), world_size_,
                                         missing[0], missing.size() > 1 ? ", ..." : ""),
                             false});
}

// The world's size sizes the analysis: a header's word for it is taken only as far as a log's own
// MPI_COMM_WORLD definition (which lists that many ranks) confirms it. Logs cut off before their first
// definitions confirm nothing; when no log confirms a size, the logs present bound it.
void JobLog::settle_world_size() {
  int confirmed = 0, claimed = 0;
  for (const auto& r : ranks_) {
    if (r->defines_world()) confirmed = std::max(confirmed, r->size());
    claimed = std::max(claimed, r->size());
  }
  world_size_ = confirmed ? confirmed : std::min(claimed, static_cast<int>(ranks_.size()));
  if (claimed > world_size_)
    own_problems_.push_back(
        {dir_.string(), std::nullopt,
         confirmed ? fmt::format("a log claims a world of {} ranks, but MPI_COMM_WORLD has {} in the logs that define it; "
                                 "read as {}", claimed, confirmed, world_size_)
                   : fmt::format("the logs claim a world of {} ranks, but none defines MPI_COMM_WORLD (each ends before its "
                                 "first definitions); read as the {} present", claimed, world_size_),
         true});
}

const RankLog* JobLog::rank(int r) const {
  for (const auto& l : ranks_)
    if (l->rank() == r) return l.get();
  return nullptr;
}

std::vector<ReadProblem> JobLog::problems() const {
  std::vector<ReadProblem> all = own_problems_;
  for (const auto& r : ranks_) all.insert(all.end(), r->problems().begin(), r->problems().end());
  return all;
}

}  // namespace mpiadvise

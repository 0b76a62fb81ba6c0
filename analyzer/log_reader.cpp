#include "log_reader.hpp"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <queue>
#include <regex>
#include <set>
#include <unordered_map>

#include <fmt/format.h>

extern "C" {
#include "format.h"
}

namespace mpiadvise {

namespace fs = std::filesystem;

LogError::LogError(const std::string& f, std::optional<uint64_t> off, const std::string& what)
    : std::runtime_error(off ? fmt::format("{}: offset {}: {}", f, *off, what) : fmt::format("{}: {}", f, what)),
      file(f),
      offset(off),
      detail(what) {}

std::string ReadProblem::text() const {
  return offset ? fmt::format("{}: offset {}: {}", file, *offset, message) : fmt::format("{}: {}", file, message);
}

const char* call_name(int call) {
  return call >= 0 && call < MPA_CALL_COUNT ? mpa_call_names[call] : "unknown";
}

int32_t Communicator::world_rank(int32_t local) const {
  if (local < 0) return local;
  const auto& group = inter ? remote : members;
  return local < static_cast<int32_t>(group.size()) ? group[local] : kUndefinedRank;
}

// ---- bytes ---------------------------------------------------------------------------------------------
namespace {

// Reads varints from a decoded chunk; throws on running off the end.
struct Cursor {
  const uint8_t* p;
  const uint8_t* end;
  bool done() const { return p >= end; }
  uint64_t varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p >= end) throw std::out_of_range("event runs past the end of its chunk");
      uint8_t b = *p++;
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return v;
    }
    throw std::out_of_range("varint longer than 64 bits");
  }
  int64_t zigzag() {
    uint64_t v = varint();
    return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1);
  }
  uint8_t byte() {
    if (p >= end) throw std::out_of_range("event runs past the end of its chunk");
    return *p++;
  }
};

std::vector<uint8_t> read_file_bytes(const fs::path& file, uint64_t offset, size_t n) {
  std::ifstream in(file, std::ios::binary);
  in.seekg(static_cast<std::streamoff>(offset));
  std::vector<uint8_t> out(n);
  in.read(reinterpret_cast<char*>(out.data()), static_cast<std::streamsize>(n));
  if (static_cast<size_t>(in.gcount()) != n) throw LogError(file.string(), offset, "short read");
  return out;
}

}  // namespace

// ---- RankLog ---------------------------------------------------------------------------------------------
RankLog::RankLog(const fs::path& file) : path_(file) {
  std::error_code ec;
  file_bytes_ = fs::file_size(file, ec);
  if (ec) throw LogError(file.string(), std::nullopt, "cannot read: " + ec.message());
  if (file_bytes_ < sizeof(mpa_file_header))
    throw LogError(file.string(), 0, fmt::format("not an mpiadvise log: {} bytes, shorter than the header", file_bytes_));
  auto head = read_file_bytes(file, 0, sizeof(mpa_file_header));
  mpa_file_header h;
  std::memcpy(&h, head.data(), sizeof h);
  if (std::memcmp(h.magic, MPA_FILE_MAGIC, 8) != 0)
    throw LogError(file.string(), 0, "not an mpiadvise log (no MPADVLOG magic)");
  if (h.version > MPA_FORMAT_VERSION)
    throw LogError(file.string(), 8,
                   fmt::format("log format version {} is newer than this mpiadvise reads ({}); use a newer mpiadvise",
                               h.version, MPA_FORMAT_VERSION));
  if (h.version == 0) throw LogError(file.string(), 8, "log format version 0 is not valid");
  if (sizeof h + h.json_bytes > file_bytes_)
    throw LogError(file.string(), sizeof h, fmt::format("header of {} bytes runs past the end of the file", h.json_bytes));
  auto json = read_file_bytes(file, sizeof h, h.json_bytes);
  try {
    header_ = nlohmann::json::parse(json.begin(), json.end());
    rank_ = header_.at("rank").get<int>();
    size_ = header_.at("size").get<int>();
    if (size_ < 1 || size_ > (1 << 24)) throw std::out_of_range(fmt::format("world size {} is not possible", size_));
    if (rank_ < 0 || rank_ >= size_) throw std::out_of_range(fmt::format("rank {} is not in a world of {}", rank_, size_));
    for (const auto& n : header_.at("calls")) call_names_.push_back(n.get<std::string>());
  } catch (const std::exception& e) {
    throw LogError(file.string(), sizeof h, std::string("header is not valid: ") + e.what());
  }
  for (const auto& n : call_names_) {
    int id = -1;
    for (int i = 0; i < MPA_CALL_COUNT; i++)
      if (n == mpa_call_names[i]) id = i;
    call_map_.push_back(id);
  }
  index_chunks();
  try {
    fit_clock();
  } catch (const nlohmann::json::exception& e) {
    throw LogError(file.string(), sizeof(mpa_file_header), std::string("clock facts in the header or trailer are not valid: ") + e.what());
  }
}

void RankLog::index_chunks() {
  const std::string name = path_.string();
  uint64_t off = 0;
  {
    auto head = read_file_bytes(path_, 0, sizeof(mpa_file_header));
    mpa_file_header h;
    std::memcpy(&h, head.data(), sizeof h);
    off = sizeof h + h.json_bytes;
  }
  std::ifstream in(path_, std::ios::binary);
  while (off < file_bytes_) {
    if (file_bytes_ - off < sizeof(mpa_chunk_header)) {
      problems_.push_back({name, off, fmt::format("file ends inside a chunk header ({} bytes left); read up to here",
                                                  file_bytes_ - off), false});
      break;
    }
    mpa_chunk_header ch;
    in.seekg(static_cast<std::streamoff>(off));
    in.read(reinterpret_cast<char*>(&ch), sizeof ch);
    if (ch.magic != MPA_CHUNK_MAGIC) {
      problems_.push_back({name, off, "corrupt: no chunk starts here (bad chunk magic); nothing after it is read", true});
      break;
    }
    if (ch.codec != MPA_CODEC_ZSTD || ch.type < MPA_CHUNK_EVENTS || ch.type > MPA_CHUNK_TRAILER) {
      problems_.push_back({name, off, fmt::format("corrupt: chunk of unknown type {} or codec {}", ch.type, ch.codec), true});
      break;
    }
    if (ch.stored_bytes > file_bytes_ - off - sizeof ch) {
      problems_.push_back({name, off, fmt::format("file ends inside a chunk of {} bytes ({} present); read up to here",
                                                  ch.stored_bytes, file_bytes_ - off - sizeof ch), false});
      break;
    }
    ChunkRef c{off, ch.type, ch.thread, ch.raw_bytes, ch.stored_bytes, ch.sync_tick, ch.sync_ns};
    off += sizeof ch + ch.stored_bytes;
    std::vector<uint8_t> data;
    try {
      if (c.type != MPA_CHUNK_EVENTS) data = payload(c);
    } catch (const LogError& e) {
      problems_.push_back({name, c.offset, e.detail, true});
      continue;
    }
    chunks_.push_back(c);
    if (c.type == MPA_CHUNK_DEFS) {
      read_defs(data, c);
    } else if (c.type == MPA_CHUNK_META || c.type == MPA_CHUNK_TRAILER) {
      try {
        auto j = nlohmann::json::parse(data.begin(), data.end());
        if (c.type == MPA_CHUNK_TRAILER) trailer_ = std::move(j);
        else meta_.push_back(std::move(j));
      } catch (const std::exception& e) {
        problems_.push_back({name, c.offset, std::string("corrupt: metadata chunk is not JSON: ") + e.what(), true});
      }
    }
  }
}

std::vector<uint8_t> RankLog::payload(const ChunkRef& c) const {
  auto stored = read_file_bytes(path_, c.offset + sizeof(mpa_chunk_header), c.stored_bytes);
  // the frame records its decompressed size: a chunk header that disagrees is corrupt, and no
  // allocation is made from an unchecked header field
  unsigned long long frame_bytes = ZSTD_getFrameContentSize(stored.data(), stored.size());
  if (frame_bytes == ZSTD_CONTENTSIZE_ERROR || frame_bytes == ZSTD_CONTENTSIZE_UNKNOWN || frame_bytes != c.raw_bytes)
    throw LogError(path_.string(), c.offset,
                   fmt::format("corrupt: the chunk header says {} bytes, its zstd frame {}", c.raw_bytes,
                               frame_bytes == ZSTD_CONTENTSIZE_ERROR ? std::string("is not a frame")
                               : frame_bytes == ZSTD_CONTENTSIZE_UNKNOWN ? std::string("does not say")
                                                                         : std::to_string(frame_bytes)));
  std::vector<uint8_t> raw(c.raw_bytes);
  size_t n = ZSTD_decompress(raw.data(), raw.size(), stored.data(), stored.size());
  if (ZSTD_isError(n))
    throw LogError(path_.string(), c.offset, fmt::format("corrupt: chunk does not decompress: {}", ZSTD_getErrorName(n)));
  if (n != c.raw_bytes)
    throw LogError(path_.string(), c.offset, fmt::format("corrupt: chunk decompresses to {} bytes, not {}", n, c.raw_bytes));
  return raw;
}

void RankLog::read_defs(const std::vector<uint8_t>& data, const ChunkRef& c) {
  Cursor cur{data.data(), data.data() + data.size()};
  try {
    while (!cur.done()) {
      uint8_t kind = cur.byte();
      if (kind == MPA_DEF_CALLSITE) {
        CallSite s;
        s.id = static_cast<uint32_t>(cur.varint());
        uint64_t depth = cur.varint();
        if (depth > 64) throw std::out_of_range("call site deeper than 64 frames");
        for (uint64_t i = 0; i < depth; i++) s.frames.push_back(cur.varint());
        callsites_[s.id] = std::move(s);
      } else if (kind == MPA_DEF_COMM) {
        Communicator m;
        m.id = static_cast<uint32_t>(cur.varint());
        m.gid = cur.varint();
        m.inter = cur.varint() & 1;
        uint64_t n = cur.varint();
        if (n > (1u << 26)) throw std::out_of_range("communicator larger than 2^26 ranks");
        for (uint64_t i = 0; i < n; i++) m.members.push_back(static_cast<int32_t>(cur.zigzag()));
        if (m.inter) {
          n = cur.varint();
          if (n > (1u << 26)) throw std::out_of_range("communicator larger than 2^26 ranks");
          for (uint64_t i = 0; i < n; i++) m.remote.push_back(static_cast<int32_t>(cur.zigzag()));
        }
        m.parent = static_cast<uint32_t>(cur.varint());
        uint64_t call = cur.varint();
        m.created_by = call < call_names_.size() ? call_names_[call] : "";
        comms_[m.id] = std::move(m);
      } else if (kind == MPA_DEF_MODULE) {
        Module mod;
        mod.start = cur.varint();
        mod.end = cur.varint();
        mod.base = cur.varint();
        uint64_t len = cur.varint();
        if (len > static_cast<uint64_t>(cur.end - cur.p)) throw std::out_of_range("module path runs past the chunk");
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
    problems_.push_back({path_.string(), c.offset, std::string("corrupt: definitions: ") + e.what(), true});
  }
}

void RankLog::fit_clock() {
  // Pairs (tick, ns) from the header and every chunk; the slope from the two farthest apart.
  std::vector<std::pair<uint64_t, uint64_t>> pairs;
  const auto& clk = header_.value("clock", nlohmann::json::object());
  if (clk.contains("sync_tick")) pairs.emplace_back(clk["sync_tick"].get<uint64_t>(), clk["sync_ns"].get<uint64_t>());
  for (const auto& c : chunks_) pairs.emplace_back(c.sync_tick, c.sync_ns);
  bool tsc = clk.value("source", "monotonic") == "tsc";
  if (!pairs.empty()) {
    auto [lo, hi] = std::minmax_element(pairs.begin(), pairs.end());
    base_tick_ = lo->first;
    base_ns_ = lo->second;
    if (tsc && hi->first > lo->first + 1000000)
      slope_ = static_cast<double>(hi->second - lo->second) / static_cast<double>(hi->first - lo->first);
    else if (tsc)
      slope_ = 1.0 / (header_.value("tsc_ghz", 0.0) > 0 ? header_.value("tsc_ghz", 1.0) : 1.0);
  }
  offset_init_ns_ = clk.value("offset_to_rank0_ns", int64_t{0});
  if (trailer_.is_object() && trailer_.contains("clock_offset_finalize_ns")) {
    offset_final_ns_ = trailer_["clock_offset_finalize_ns"].get<int64_t>();
    has_final_offset_ = true;
  }
}

// A problem found while decoding events is found again on every pass over them: say it once.
void RankLog::add_problem(ReadProblem p) const {
  for (const auto& q : problems_)
    if (q.offset == p.offset && q.message == p.message) return;
  problems_.push_back(std::move(p));
}

uint64_t RankLog::to_ns(uint64_t tick) const {
  double local = static_cast<double>(base_ns_) + (static_cast<double>(tick) - static_cast<double>(base_tick_)) * slope_;
  double offset = static_cast<double>(offset_init_ns_);
  if (has_final_offset_) offset = (offset + static_cast<double>(offset_final_ns_)) / 2;
  double t = local - offset;
  return t > 0 ? static_cast<uint64_t>(t + 0.5) : 0;
}

// ---- events -------------------------------------------------------------------------------------------
namespace {

enum class ReqRole { None, Create, CreatePersistent, CreateMessage, Consume, Start, Complete, Free };

ReqRole role_of(int call) {
  switch (call) {
    case MPA_CALL_Isend: case MPA_CALL_Issend: case MPA_CALL_Ibsend: case MPA_CALL_Irsend: case MPA_CALL_Irecv:
    case MPA_CALL_Ibarrier: case MPA_CALL_Ibcast: case MPA_CALL_Ireduce: case MPA_CALL_Iallreduce:
    case MPA_CALL_Igather: case MPA_CALL_Igatherv: case MPA_CALL_Iscatter: case MPA_CALL_Iscatterv:
    case MPA_CALL_Iallgather: case MPA_CALL_Iallgatherv: case MPA_CALL_Ialltoall: case MPA_CALL_Ialltoallv:
    case MPA_CALL_Ialltoallw: case MPA_CALL_Ireduce_scatter: case MPA_CALL_Ireduce_scatter_block:
    case MPA_CALL_Iscan: case MPA_CALL_Iexscan: case MPA_CALL_Comm_idup:
    case MPA_CALL_Imrecv:  // consumes a message (first handle), creates a request (second)
      return ReqRole::Create;
    case MPA_CALL_Send_init: case MPA_CALL_Ssend_init: case MPA_CALL_Bsend_init: case MPA_CALL_Rsend_init:
    case MPA_CALL_Recv_init:
      return ReqRole::CreatePersistent;
    case MPA_CALL_Mprobe: case MPA_CALL_Improbe:
      return ReqRole::CreateMessage;
    case MPA_CALL_Mrecv:
      return ReqRole::Consume;
    case MPA_CALL_Start: case MPA_CALL_Startall: case MPA_CALL_Cancel:
      return ReqRole::Start;  // names requests without ending them
    case MPA_CALL_Wait: case MPA_CALL_Waitall: case MPA_CALL_Waitany: case MPA_CALL_Waitsome:
    case MPA_CALL_Test: case MPA_CALL_Testall: case MPA_CALL_Testany: case MPA_CALL_Testsome:
      return ReqRole::Complete;
    case MPA_CALL_Request_free:
      return ReqRole::Free;
    default:
      return ReqRole::None;
  }
}

struct Request {
  uint64_t id = 0;
  uint32_t comm = 0;
  bool persistent = false;
  bool p2p = true;  // a collective's or Comm_idup's request has a status with no source
};

// Live requests by handle. A handle is reused once its request is gone, and with several threads the
// reuse can be seen (by enter time) before the completion that freed it; requests are almost always
// completed by the thread that made them, so that thread's entry is preferred.
class RequestTable {
 public:
  void add(uint64_t handle, uint16_t thread, Request r) {
    auto& v = live_[handle];
    std::erase_if(v, [&](const auto& e) { return e.first == thread; });
    v.emplace_back(thread, r);
  }
  Request* find(uint64_t handle, uint16_t thread) {
    auto it = live_.find(handle);
    if (it == live_.end() || it->second.empty()) return nullptr;
    for (auto e = it->second.rbegin(); e != it->second.rend(); ++e)
      if (e->first == thread) return &e->second;
    return &it->second.back().second;
  }
  void erase(uint64_t handle, const Request* r) {
    auto it = live_.find(handle);
    if (it == live_.end()) return;
    std::erase_if(it->second, [&](const auto& e) { return &e.second == r; });
    if (it->second.empty()) live_.erase(it);
  }

 private:
  std::unordered_map<uint64_t, std::vector<std::pair<uint16_t, Request>>> live_;
};

// One thread's events, decoded chunk by chunk.
struct ThreadStream {
  std::vector<size_t> chunks;  // indices into the chunk list
  size_t next_chunk = 0;
  std::vector<uint8_t> data;
  Cursor cur{nullptr, nullptr};
  uint64_t prev_exit = 0, prev_handle = 0;
  uint64_t recent_handles[16] = {};  // see MPA_F_REQS in format.h
  uint64_t next_enter_tick = 0;  // of the event under the cursor
  bool has_event = false;
};

}  // namespace

void RankLog::for_each_event(const std::function<void(const Event&)>& fn) const {
  std::map<uint16_t, ThreadStream> streams;
  for (size_t i = 0; i < chunks_.size(); i++)
    if (chunks_[i].type == MPA_CHUNK_EVENTS) streams[chunks_[i].thread].chunks.push_back(i);

  const std::string name = path_.string();
  std::set<uint64_t> reported_chunks;

  // Positions the stream on its next event (loading chunks as needed); peeks its enter tick.
  auto advance = [&](ThreadStream& s) {
    for (;;) {
      if (!s.cur.done() && s.cur.p) {
        try {
          Cursor peek = s.cur;
          peek.byte();
          peek.varint();
          int64_t gap = peek.zigzag();
          s.next_enter_tick = s.prev_exit + static_cast<uint64_t>(gap);
          s.has_event = true;
          return;
        } catch (const std::out_of_range&) {
          s.cur.p = s.cur.end;
        }
      }
      if (s.next_chunk >= s.chunks.size()) {
        s.has_event = false;
        return;
      }
      const ChunkRef& c = chunks_[s.chunks[s.next_chunk++]];
      try {
        s.data = payload(c);
        s.cur = Cursor{s.data.data(), s.data.data() + s.data.size()};
        s.prev_exit = s.cur.varint();
        s.prev_handle = 0;
        std::fill(std::begin(s.recent_handles), std::end(s.recent_handles), 0);
      } catch (const LogError& e) {
        if (reported_chunks.insert(c.offset).second) add_problem({name, c.offset, e.detail, true});
        s.cur = Cursor{nullptr, nullptr};
      } catch (const std::out_of_range& e) {
        if (reported_chunks.insert(c.offset).second) add_problem({name, c.offset, std::string("corrupt: ") + e.what(), true});
        s.cur = Cursor{nullptr, nullptr};
      }
    }
  };

  RequestTable requests, messages;
  uint64_t next_request = 1;
  Event ev;
  ev.rank = rank_;

  auto comm_of = [&](uint32_t id) -> const Communicator* {
    auto it = comms_.find(id);
    return it == comms_.end() ? nullptr : &it->second;
  };
  auto world = [&](uint32_t comm, int32_t local) {
    if (local < 0) return local;
    const Communicator* c = comm_of(comm);
    return c ? c->world_rank(local) : kUndefinedRank;
  };

  // decode one event from s (positioned by advance) into ev
  auto decode = [&](ThreadStream& s, uint16_t thread) -> bool {
    Cursor& c = s.cur;
    const uint8_t* start = c.p;
    try {
      uint8_t call = c.byte();
      ev.mask = static_cast<uint32_t>(c.varint());
      if (ev.mask & ~MPA_F_KNOWN) throw std::out_of_range(fmt::format("field bits {:#x} unknown to this mpiadvise", ev.mask & ~MPA_F_KNOWN));
      uint64_t enter = s.prev_exit + static_cast<uint64_t>(c.zigzag());
      uint64_t exit = enter + c.varint();
      ev.callsite = static_cast<uint32_t>(c.varint());
      ev.thread = thread;
      ev.call = call < call_map_.size() ? call_map_[call] : -1;
      ev.call_name = call < call_names_.size() ? std::string_view(call_names_[call]) : std::string_view("unknown");
      ev.t_enter_ns = to_ns(enter);
      ev.t_exit_ns = to_ns(exit);
      ev.peer = ev.tag = ev.peer2 = ev.tag2 = ev.peer_local = ev.peer2_local = 0;
      ev.comm = ev.newcomm = 0;
      ev.bytes = ev.bytes2 = 0;
      ev.handles.clear();
      ev.requests.clear();
      ev.statuses.clear();
      ev.papi.clear();
      ev.count = 1;
      ev.incall_ns = 0;
      ev.value = 0;
      if (ev.mask & MPA_F_PEER) ev.peer_local = static_cast<int32_t>(c.zigzag());
      if (ev.mask & MPA_F_TAG) ev.tag = static_cast<int32_t>(c.zigzag());
      if (ev.mask & MPA_F_COMM) ev.comm = static_cast<uint32_t>(c.varint());
      if (ev.mask & MPA_F_BYTES) ev.bytes = c.varint();
      if (ev.mask & MPA_F_PEER2) ev.peer2_local = static_cast<int32_t>(c.zigzag());
      if (ev.mask & MPA_F_TAG2) ev.tag2 = static_cast<int32_t>(c.zigzag());
      if (ev.mask & MPA_F_BYTES2) ev.bytes2 = c.varint();
      if (ev.mask & MPA_F_REQS) {
        uint64_t n = c.varint();
        if (n > static_cast<uint64_t>(c.end - c.p)) throw std::out_of_range("request count past the chunk");
        for (uint64_t i = 0; i < n; i++) {
          uint64_t code = c.varint();
          if (code & 1) {
            ev.handles.push_back(s.recent_handles[(code >> 1) & 15]);
          } else {
            uint64_t z = code >> 1;
            s.prev_handle += static_cast<uint64_t>(static_cast<int64_t>(z >> 1) ^ -static_cast<int64_t>(z & 1));
            s.recent_handles[mpa_handle_slot(s.prev_handle)] = s.prev_handle;
            ev.handles.push_back(s.prev_handle);
          }
        }
      }
      if (ev.mask & MPA_F_STATUS) {
        uint64_t n = c.varint();
        if (n > static_cast<uint64_t>(c.end - c.p)) throw std::out_of_range("status count past the chunk");
        for (uint64_t i = 0; i < n; i++) {
          Status st;
          st.index = static_cast<int32_t>(c.varint());
          st.source = static_cast<int32_t>(c.zigzag());
          st.tag = static_cast<int32_t>(c.zigzag());
          st.bytes = c.varint();
          ev.statuses.push_back(st);
        }
      }
      if (ev.mask & MPA_F_COUNT) ev.count = static_cast<uint32_t>(c.varint());
      if (ev.mask & MPA_F_NEWCOMM) ev.newcomm = static_cast<uint32_t>(c.varint());
      if (ev.mask & MPA_F_PAPI) {
        uint64_t n = c.varint();
        if (n > 64) throw std::out_of_range("more than 64 counters");
        for (uint64_t i = 0; i < n; i++) ev.papi.push_back(c.varint());
      }
      if (ev.mask & MPA_F_INCALL) {
        uint64_t ticks = c.varint();
        ev.incall_ns = static_cast<uint64_t>(static_cast<double>(ticks) * slope_ + 0.5);
      }
      if (ev.mask & MPA_F_VALUE) ev.value = c.zigzag();
      if (ev.mask & MPA_F_CANCELLED)
        for (uint64_t n = c.varint(), i = 0; i < n; i++)
          if (uint64_t k = c.varint(); k < ev.statuses.size()) ev.statuses[k].cancelled = true;
      s.prev_exit = exit;
    } catch (const std::out_of_range& e) {
      // find the chunk offset for the message
      const ChunkRef& ch = chunks_[s.chunks[s.next_chunk - 1]];
      if (reported_chunks.insert(ch.offset).second)
        add_problem({name, ch.offset, fmt::format("corrupt: event at byte {} of the chunk: {}", start - s.data.data(), e.what()),
                     true});
      c.p = c.end;
      return false;
    }
    ev.peer = world(ev.comm, ev.peer_local);
    ev.peer2 = world(ev.comm, ev.peer2_local);
    return true;
  };

  // Request identities and status sources (ranks of the request's communicator -> world ranks).
  auto resolve = [&]() {
    ReqRole role = role_of(ev.call);
    ev.requests.assign(ev.handles.size(), 0);
    uint32_t status_comm = ev.comm;
    const uint16_t th = ev.thread;
    switch (role) {
      case ReqRole::Create:
      case ReqRole::CreatePersistent:
        if (!ev.handles.empty()) {
          uint64_t id = next_request++;
          uint32_t comm = ev.comm;
          if (ev.call == MPA_CALL_Imrecv && ev.handles.size() == 2) {  // the message's communicator
            if (Request* m = messages.find(ev.handles[0], th)) {
              ev.requests[0] = m->id;
              comm = ev.comm = m->comm;
              messages.erase(ev.handles[0], m);
            }
          }
          bool p2p = ev.call == MPA_CALL_Isend || ev.call == MPA_CALL_Issend || ev.call == MPA_CALL_Ibsend ||
                     ev.call == MPA_CALL_Irsend || ev.call == MPA_CALL_Irecv || ev.call == MPA_CALL_Imrecv ||
                     role == ReqRole::CreatePersistent;
          requests.add(ev.handles.back(), th, Request{id, comm, role == ReqRole::CreatePersistent, p2p});
          ev.requests.back() = id;
        }
        break;
      case ReqRole::CreateMessage:
        if (!ev.handles.empty()) {
          uint64_t id = next_request++;
          messages.add(ev.handles.back(), th, Request{id, ev.comm, false});
          ev.requests.back() = id;
        }
        break;
      case ReqRole::Consume:
        if (!ev.handles.empty()) {
          if (Request* m = messages.find(ev.handles[0], th)) {
            ev.requests[0] = m->id;
            status_comm = ev.comm = m->comm;
            messages.erase(ev.handles[0], m);
          }
        }
        break;
      case ReqRole::Start:
      case ReqRole::Free:
        for (size_t i = 0; i < ev.handles.size(); i++) {
          Request* r = requests.find(ev.handles[i], th);
          if (!r) continue;
          ev.requests[i] = r->id;
          if (role == ReqRole::Free) requests.erase(ev.handles[i], r);
        }
        break;
      case ReqRole::Complete: {
        std::vector<Request*> found(ev.handles.size());
        for (size_t i = 0; i < ev.handles.size(); i++) {
          found[i] = requests.find(ev.handles[i], th);
          if (found[i]) ev.requests[i] = found[i]->id;
        }
        for (auto& st : ev.statuses) {
          if (st.index < 0 || static_cast<size_t>(st.index) >= ev.handles.size()) continue;
          Request* r = found[st.index];
          if (!r) {
            st.source = st.source < 0 ? st.source : kUndefinedRank;
            continue;
          }
          if (r->p2p) st.source = world(r->comm, st.source);
          else st.source = kUndefinedRank, st.tag = 0, st.bytes = 0;
          if (!r->persistent) {
            requests.erase(ev.handles[st.index], r);
            found[st.index] = nullptr;
          }
        }
        return;
      }
      case ReqRole::None:
        break;
    }
    for (auto& st : ev.statuses) st.source = world(status_comm, st.source);
  };

  // Merge the threads by enter time.
  using Item = std::pair<uint64_t, uint16_t>;
  std::priority_queue<Item, std::vector<Item>, std::greater<Item>> heap;
  for (auto& [thread, s] : streams) {
    advance(s);
    if (s.has_event) heap.emplace(s.next_enter_tick, thread);
  }
  while (!heap.empty()) {
    auto [tick, thread] = heap.top();
    heap.pop();
    ThreadStream& s = streams[thread];
    if (decode(s, thread)) {
      resolve();
      fn(ev);
    }
    advance(s);
    if (s.has_event) heap.emplace(s.next_enter_tick, thread);
  }
}

// ---- JobLog -----------------------------------------------------------------------------------------------
JobLog::JobLog(const fs::path& dir) : dir_(dir) {
  std::error_code ec;
  if (!fs::exists(dir, ec)) throw LogError(dir.string(), std::nullopt, "no such log directory");
  if (!fs::is_directory(dir, ec)) {
    // a single rank file is accepted too
    ranks_.push_back(std::make_unique<RankLog>(dir));
    world_size_ = ranks_[0]->size();
    return;
  }
  static const std::regex pattern(R"(rank-(\d+)\.mpa)");
  std::vector<fs::path> files;
  for (const auto& entry : fs::directory_iterator(dir, ec))
    if (std::regex_match(entry.path().filename().string(), pattern)) files.push_back(entry.path());
  if (ec) throw LogError(dir.string(), std::nullopt, "cannot list: " + ec.message());
  if (files.empty()) throw LogError(dir.string(), std::nullopt, "no rank-NNNNN.mpa logs in this directory");
  std::sort(files.begin(), files.end());
  for (const auto& f : files) {
    try {
      ranks_.push_back(std::make_unique<RankLog>(f));
    } catch (const LogError& e) {
      own_problems_.push_back({e.file, e.offset, e.detail, true});
    }
  }
  if (ranks_.empty()) throw LogError(dir.string(), std::nullopt, own_problems_.empty() ? "no readable logs" : own_problems_[0].text());
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
  for (const auto& r : ranks_) world_size_ = std::max(world_size_, r->size());
  std::set<int> present;
  for (const auto& r : ranks_) present.insert(r->rank());
  std::vector<int> missing;
  for (int r = 0; r < world_size_; r++)
    if (!present.count(r)) missing.push_back(r);
  if (!missing.empty())
    own_problems_.push_back({dir.string(), std::nullopt,
                             fmt::format("{} of {} ranks have no readable log (rank {}{})", missing.size(), world_size_,
                                         missing[0], missing.size() > 1 ? ", ..." : ""),
                             false});
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

// Reading mpiadvise logs: one file per rank in a job directory (format in libtrace/format.h and
// man/mpiadvise-log.5). Streams events rank by rank, with times in ns on rank 0's clock, peers as world
// ranks, and request handles resolved to request identities.
#pragma once

#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "call_ids.h"

extern "C" {
#include "format.h"
}

namespace mpiadvise {

namespace detail {
// A time in ns as a double to uint64_t: 0 for anything not above 0 (NaN too), UINT64_MAX beyond it
inline uint64_t clamp_to_u64(double v) {
  if (!(v > 0)) return 0;
  if (v >= 18446744073709549568.0) return UINT64_MAX;
  return static_cast<uint64_t>(v);
}
}  // namespace detail

// A log that cannot be read (or read further), naming the file and the byte offset.
class LogError : public std::runtime_error {
 public:
  LogError(const std::string& file, std::optional<uint64_t> offset, const std::string& what);
  std::string file;
  std::optional<uint64_t> offset;
  std::string detail;  // what is wrong, without the file and offset
};

// MPI's special ranks as the log records them.
inline constexpr int32_t kAnySource = -1, kProcNull = -2, kRoot = -3, kUndefinedRank = -4;
inline constexpr int32_t kAnyTag = -1;

struct Status {
  int32_t index = 0;   // position in the request array of the completing call
  int32_t source = 0;  // world rank (or a special rank)
  int32_t tag = 0;
  uint64_t bytes = 0;
  bool cancelled = false;  // the request's cancel succeeded (MPA_F_CANCELLED)
};

struct Event {
  int rank = 0;
  uint16_t thread = 0;
  int call = -1;               // mpa_call_id of this build (-1: a call this build does not know)
  std::string_view call_name;  // as the log names it, e.g. "MPI_Send"
  uint32_t mask = 0;           // MPA_F_* fields present
  uint64_t t_enter_ns = 0, t_exit_ns = 0;
  uint32_t callsite = 0;
  int32_t peer = 0, tag = 0, peer2 = 0, tag2 = 0;  // peers as world ranks
  int32_t peer_local = 0, peer2_local = 0;         // as ranks of comm
  uint32_t comm = 0, newcomm = 0;
  uint64_t bytes = 0, bytes2 = 0;
  std::vector<uint64_t> handles;   // as recorded
  std::vector<uint64_t> requests;  // identities: 1, 2, ... per rank; 0 where the handle is unknown
  std::vector<Status> statuses;
  uint32_t count = 1;        // calls folded into this event (a run of unsuccessful tests)
  uint64_t incall_ns = 0;    // time inside the folded calls
  std::vector<uint64_t> papi;
  int64_t value = 0;
  std::vector<uint64_t> vcounts;  // VCOUNTS: a v-collective's bytes for each member, by rank of its group
  // UNFINISHED (format 4): the call had not returned when a signal ended the rank; t_exit_ns is when
  // the signal came, and the event holds what was known at entry only (no statuses, no bytes, no
  // request it would have made). The thread's last event. One that a later event of its thread
  // supersedes (the rank survived the signal and the call returned) is not passed on.
  bool unfinished = false;
  // RESENT (format 5): a send from the buffer and of the bytes of its thread's previous send
  bool resent = false;

  bool has(uint32_t field) const { return (mask & field) != 0; }
  // A call MPI refused (under MPI_ERRORS_RETURN): VALUE holds its error code, except on the life-cycle
  // calls, whose VALUE is what they report (thread level, Pcontrol level, MPI_Abort's code). It did
  // nothing: no message, no request made or completed.
  bool refused() const {
    return has(MPA_F_VALUE) && call != MPA_CALL_Init && call != MPA_CALL_Init_thread && call != MPA_CALL_Abort &&
           call != MPA_CALL_Pcontrol;
  }
};

// World ranks in an order, immutable, held once however many logs hold an equal list (interned.hpp):
// each rank's log defines MPI_COMM_WORLD with every rank, which held by each would take the ranks squared.
class Ranks {
 public:
  Ranks() = default;
  Ranks(std::vector<int32_t> ranks);  // NOLINT(google-explicit-constructor): a list of ranks is one
  const std::vector<int32_t>& list() const { return ranks_ ? *ranks_ : kNone; }
  operator const std::vector<int32_t>&() const { return list(); }  // NOLINT(google-explicit-constructor)
  size_t size() const { return list().size(); }
  bool empty() const { return list().empty(); }
  int32_t operator[](size_t i) const { return list()[i]; }
  int32_t front() const { return list().front(); }
  auto begin() const { return list().begin(); }
  auto end() const { return list().end(); }
  friend bool operator==(const Ranks& a, const std::vector<int32_t>& b) { return a.list() == b; }
  friend bool operator==(const Ranks& a, const Ranks& b) { return a.list() == b.list(); }

 private:
  static inline const std::vector<int32_t> kNone;
  std::shared_ptr<const std::vector<int32_t>> ranks_;
};

struct Communicator {
  uint32_t id = 0;
  uint64_t gid = 0;
  bool inter = false;
  Ranks members, remote;  // world ranks
  uint32_t parent = 0;
  std::string created_by;
  int32_t world_rank(int32_t local) const;  // translates a rank of this communicator
};

struct Module {
  uint64_t start = 0, end = 0, base = 0;
  std::string path;
};

struct CallSite {
  uint32_t id = 0;
  std::vector<uint64_t> frames;  // return addresses, innermost first
};

// A problem found while reading, with as much analysis as the rest allows.
struct ReadProblem {
  std::string file;
  std::optional<uint64_t> offset;
  std::string message;
  bool corrupt = false;  // false: the file simply ends early (a killed rank)
  std::string text() const;
};

class RankLog {
 public:
  // Reads the header and indexes the chunks; throws LogError when the file is not an mpiadvise log.
  explicit RankLog(const std::filesystem::path& file);
  // The same from a log held in memory; `name` stands for the file in messages.
  RankLog(const std::string& name, std::vector<uint8_t> bytes);

  const std::filesystem::path& path() const { return path_; }
  // The header, whole: its keys of the rank's own (kOwnHeaderKeys: rank, pid, hostname, host_cpus,
  // start_unix_ns, clock) and the rest, held once for the ranks of a run whose rest is equal (the
  // library, the program, the environment: a copy a rank would grow with the ranks). A copy: for one key,
  // header_key.
  nlohmann::json header() const;
  // One key of the header; null where it has none.
  const nlohmann::json* header_key(std::string_view key) const;
  std::string hostname() const;  // the header's, or "" where it has none
  int rank() const { return rank_; }
  int size() const { return size_; }
  const nlohmann::json& trailer() const { return trailer_; }  // null when the rank did not finalize
  const std::vector<nlohmann::json>& meta() const { return meta_; }
  bool complete() const { return !trailer_.is_null(); }
  const std::vector<ReadProblem>& problems() const { return problems_; }
  const std::map<uint32_t, Communicator>& comms() const { return comms_; }
  bool defines_world() const { return comms_.count(1) > 0; }  // its MPI_COMM_WORLD, of size() ranks
  const std::map<uint32_t, CallSite>& callsites() const { return callsites_; }
  const std::vector<Module>& modules() const { return modules_; }
  const std::vector<std::string>& call_names() const { return calls_->names; }
  size_t chunk_count() const { return chunks_.size(); }
  uint64_t file_bytes() const { return file_bytes_; }
  uint32_t format_version() const { return format_version_; }  // the file's MPA_FORMAT_VERSION
  // MPI calls in the log: as its trailer counts them, or, where the rank did not finalize, as its event
  // chunks' bytes before compression allow at 4 bytes a call (a bound from above for loops of calls)
  uint64_t calls_estimate() const;
  // The same, of the calls entered before until_ns (ns on rank 0's clock): the share of the event chunks'
  // bytes written by then, and one chunk more per thread (a chunk holds the events before its writing);
  // with from_ns, less the chunks written before it (whose calls were all entered before it).
  uint64_t calls_estimate(uint64_t until_ns, uint64_t from_ns = 0) const;
  // When the last event chunk was written (ns on rank 0's clock; 0 without one): about the rank's end.
  uint64_t last_chunk_ns() const;

  // Every event in time order (threads merged). The Event passed is reused between calls. An
  // unfinished event (MPA_F_UNFINISHED) is left out when the next event of its thread has the same
  // enter time: the call returned after all and was written again, complete.
  void for_each_event(const std::function<void(const Event&)>& fn) const;
  // The events entered before until_ns (ns on rank 0's clock), in the same order, while fn returns true;
  // decodes no chunk beyond the first a thread wrote after until_ns (which it reads to see where its events end). Returns whether the log holds events it did not pass (from until_ns on, or
  // after fn said stop).
  bool for_each_event_until(uint64_t until_ns, const std::function<bool(const Event&)>& fn) const;

  // Ticks of the event clock to ns on rank 0's clock; a duration in ticks to ns.
  uint64_t to_ns(uint64_t tick) const {
    return detail::clamp_to_u64(base_ns_ + (static_cast<double>(tick) - base_tick_) * slope_ - offset_ns_ + 0.5);
  }
  uint64_t ticks_to_ns(uint64_t ticks) const;

 private:
  void read_header();
  std::vector<uint8_t> read_at(uint64_t offset, size_t n) const;
  struct ChunkRef {
    uint64_t offset = 0;  // of the chunk header
    uint8_t type = 0;
    uint8_t codec = MPA_CODEC_ZSTD;
    uint16_t thread = 0;
    uint32_t raw_bytes = 0, stored_bytes = 0;
    uint64_t sync_tick = 0, sync_ns = 0;
  };
  std::vector<uint8_t> payload(const ChunkRef& c) const;
  void index_chunks(uint64_t first_chunk_offset);
  void read_defs(const std::vector<uint8_t>& data, const ChunkRef& c);
  void fit_clock();
  void add_problem(ReadProblem p) const;

  std::filesystem::path path_;
  std::shared_ptr<const std::vector<uint8_t>> memory_;  // the log's bytes, when not read from path_
  nlohmann::json own_header_, trailer_;
  std::shared_ptr<const nlohmann::json> run_header_;  // interned
  std::vector<nlohmann::json> meta_;
  int rank_ = 0, size_ = 0;
  std::vector<ChunkRef> chunks_;
  mutable std::vector<ReadProblem> problems_;  // grows as events are decoded
  std::map<uint32_t, Communicator> comms_;
  std::map<uint32_t, CallSite> callsites_;
  std::vector<Module> modules_;
  // The calls the log's ids name, as the tracer's build numbered them, and their ids in this build (-1:
  // a call it does not know): the same in every log of a run, held once (interned.hpp).
  struct CallTable {
    std::vector<std::string> names;
    std::vector<int> ids;
    bool operator==(const CallTable& o) const { return names == o.names; }
  };
  struct CallTableHash {
    size_t operator()(const CallTable& t) const;
  };
  std::shared_ptr<const CallTable> calls_;
  uint64_t file_bytes_ = 0;
  uint32_t format_version_ = MPA_FORMAT_VERSION;
  // tick -> ns (to_ns): ns = base_ns + (tick - base_tick) * slope - offset, as doubles
  double slope_ = 1.0;
  double base_tick_ = 0, base_ns_ = 0, offset_ns_ = 0;
};

// A job directory: rank-NNNNN.mpa files.
class JobLog {
 public:
  explicit JobLog(const std::filesystem::path& dir);  // throws LogError when nothing is readable
  const std::filesystem::path& dir() const { return dir_; }
  int world_size() const { return world_size_; }
  const std::vector<std::unique_ptr<RankLog>>& ranks() const { return ranks_; }
  const RankLog* rank(int r) const;
  std::vector<ReadProblem> problems() const;  // of every file, and missing ranks
 private:
  void settle_world_size();
  std::filesystem::path dir_;
  int world_size_ = 0;
  std::vector<std::unique_ptr<RankLog>> ranks_;
  std::vector<ReadProblem> own_problems_;
};

const char* call_name(int call);  // this build's name for an mpa_call_id

}  // namespace mpiadvise

#include "analysis.hpp"

#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <array>
#include <cstring>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>

#include <fmt/format.h>

#include "model_fit.hpp"
#include "op_stream.hpp"
#include "parallel.hpp"
#include "replay_peers.hpp"

namespace mpiadvise {

SourceLocation Analysis::locate(int rank, uint32_t callsite) const {
  const RankLog* log = job->rank(rank);
  if (!log || rank < 0 || static_cast<size_t>(rank) >= symbols.size() || !symbols[rank]) return {};
  auto it = log->callsites().find(callsite);
  if (it == log->callsites().end() || it->second.frames.empty()) return {};
  return symbols[rank]->locate_return_address(it->second.frames[0]);
}

std::string Analysis::where(int rank, uint32_t callsite) const {
  SourceLocation loc = locate(rank, callsite);
  return loc.module.empty() && loc.file.empty() ? "?" : loc.text();
}

std::set<SiteKey> Analysis::sites_at(const std::string& file, int line) const {
  std::set<SiteKey> keys;
  for (const auto& log : job->ranks()) {
    int r = log->rank();
    if (r < 0 || r >= trace.world_size || !symbols[r]) continue;
    for (const auto& [id, site] : log->callsites()) {
      if (site.frames.empty()) continue;
      auto loc = symbols[r]->locate_return_address(site.frames[0]);
      bool file_ok = loc.file == file || (loc.file.size() > file.size() &&
                                          loc.file.compare(loc.file.size() - file.size(), file.size(), file) == 0 &&
                                          loc.file[loc.file.size() - file.size() - 1] == '/');
      if (file_ok && loc.line == line) {
        auto k = trace.site_keys[r].find(id);
        if (k != trace.site_keys[r].end()) keys.insert(k->second);
      }
    }
  }
  return keys;
}

void group_sites_by_function(Analysis& a) {
  // one lookup per site key: ranks running the same binaries share the answer
  std::map<SiteKey, SiteKey> grouped;
  for (size_t r = 0; r < a.trace.site_keys.size(); r++)
    for (auto& [id, key] : a.trace.site_keys[r]) {
      auto it = grouped.find(key);
      if (it == grouped.end()) {
        SiteKey to = key;
        SourceLocation loc = a.locate(static_cast<int>(r), id);
        if (loc.function_only() && !loc.module.empty()) {
          to.module = loc.module;
          to.offset = loc.function_offset;
          to.function = loc.function;
        }
        it = grouped.emplace(key, to).first;
      }
      key = it->second;
    }
}

namespace {

// Peak bytes of an analysis per MPI call in the logs, measured with /usr/bin/time on mpiadvise report of
// mpiadvise-synth's logs: 64.1 for a halo of 64 ranks x 1e5 calls (69.5 before the analysis kept its waits
// added up only, 78.2 before the reading held an op's one link in the op and matched receives as it met
// them, and the waits and the receive side's sweeps were made at their size, 83.8 before the report's timeline kept
// only the calls it shows, 88.9 before the ops of one link held it, 91
// before its waits took 32 bytes, 95-97
// before the trace's ops took 24 bytes, 97 before the trace's messages took 32 bytes, 103 before its links took
// 5 bytes and its waits 40, 106 before its messages took 40 bytes, 115 before the replays held the state of the
// messages in flight only, 134 before the gate's replays made their ops' times as they went, 164 before its
// intervals took their times from the trace, 220 before the ranks' symbolizers shared the module files),
// 128 for an alltoall of 16 ranks x 1e5 (167 before its instances held a member's bytes in 8 bytes where
// optionals took 16, the reading's memberships took 48 bytes where they took 88 and the replays held
// arrivals for the closed formula's instances alone; 191, 214, 220, 243, 258 before; 127 now, its collectives
// counted beside it: kBytesPerCollectiveCall). Less than either: only a run that cannot fit is refused.
// The calls held packed (--low-memory) are counted apart: kPackedBytesPerCall.
constexpr double kBytesPerCall = 62;
// And each rank's, beside its calls: its log's header, definitions and index, the mapped lists of its part,
// its part of the report. Peaks of mpiadvise report --format json --threads 1 (session 82): 62 MiB for a
// halo of 64 ranks x 16000 calls, 85 for 1024 x 1000 and 115 for 4096 x 95 (the peaks less the program's
// 14 MiB), 25 and 23 KiB a rank beyond 62 bytes a call; 45 and 118 KiB while every log held its call
// names and MPI_COMM_WORLD's members (log_reader.hpp's Ranks, interned.hpp).
constexpr double kBytesPerRank = 32.0 * 1024;
// Held packed (analyse's low_memory; mpiadvise report --low-memory --threads 1, session 81): 28 bytes a
// call beside those of each rank, and 34 for each op the causes hold decoded (two frames of each rank's
// stream: OpStream::kDecodedOps in all, or 2 x kMinFrameOps a rank where that is more, or every op of a
// shorter run), below each of 67 MiB for 64 ranks x 16000 calls (this counts 62), 109 for 1024 x 1000
// (93), 215 for 1024 x 5000 (203) and 223 for 64 x 1e5 (207), the peaks less the program's 14 MiB. Up to
// 2^20 calls it counts what the calls take whole: held packed, they take no less (64 x 16000: 63 MiB whole,
// 67 packed).
constexpr double kPackedBytesPerCall = 28, kDecodedBytesPerOp = 34;
// And for each replay run beside the first (analysis_threads): its state; mpiadvise report --format json
// of a halo of 64 ranks x 2e4 calls peaked at 132 MiB with one thread and 146 MiB with two, 11-14
// bytes a call more from one run to the next (where the two replays' peaks meet); 4 is below any seen (25
// while each replay held a state for every message, 48 while the gate's replays held their ops' times).
constexpr double kBytesPerCallPerThread = 4;
// The address space an analysis takes (what ulimit -v, RLIMIT_AS, limits) is more than its peak of memory:
// memory freed in the middle of the heap is given back, its addresses are not, and each thread's malloc
// arena reserves address space it has not used. The least ulimit -v under which mpiadvise report --format
// json --threads 1 of mpiadvise-synth's halos ran (this check left out), less the 14 MiB the program had
// taken at the check: 38 MiB for 64 ranks x 4000 calls, 77 MiB for 64 x 16000 (pipeline 83, imbalance 81),
// 394 MiB for 64 x 1e5 (60.6 bytes a call beyond 24 MiB, about its peak of memory), 364 MiB for 1024 x 5000
// (69.6). Before the reading held its lists in mappings of their own (trace.cpp, mapped_list.hpp), where
// the parts' vectors, grown by doubling, were all held beside the trace's arrays: 38, 84 (98, 84), 580 and
// 466 MiB (91 bytes a call beyond 24 MiB for 64 x 1e5); before the reading and the waits took less (kBytesPerCall), 44, 105 (113) and
// 692 MiB for the first three. 24 MiB and 72 bytes a call are above each of them (bench/run.sh's line (g)
// asks a run of 10^9 calls within 4 GiB). A run of collectives takes more, each call's member of its
// instance held beside its op: counted once the reading has counted them (kBytesPerCollectiveCall).
// Each rank's, beside: the least limits of a halo of 1024 ranks x 1000 calls, 102 MiB, and of 4096 x 95,
// 129 MiB, less the program's 14, are 8 and 20 KiB a rank above 24 MiB and 72 bytes a call (session 82).
constexpr double kAddressBytes = 24.0 * 1024 * 1024, kAddressBytesPerRank = 24.0 * 1024;
constexpr double kAddressBytesPerCall = 72;
// Held packed (analyse's low_memory): 24 MiB, 48 KiB a rank, 20 bytes for each op the causes hold decoded
// and 42 bytes a call, above the least ulimit -v of mpiadvise report --low-memory --threads 1 less the program's
// 14 MiB (session 81): 80 MiB for 64 ranks x 16000 calls (this counts 87), 121 for 1024 x 1000 (132), 286
// for 64 x 1e5 (303), 271 for 1024 x 5000 (297). The decoded ops and each rank's part make a short run take more
// packed than whole (64 x 16000: 77 MiB whole); from about 2 million calls packed takes less.
constexpr double kPackedAddressBytesPerCall = 42, kPackedAddressBytesPerRank = 48.0 * 1024, kDecodedAddressBytesPerOp = 20;
// And each replay run beside the first: its malloc arena, which glibc reserves 64 MiB of address space for
// (HEAP_MAX_SIZE), and its state at kBytesPerCallPerThread. With two threads the least limits, which vary
// from run to run with where the threads' arenas are made, were 16 to 73 MiB above those of one (the 64 x 1e5
// halo's 73, where 64 MiB and its 4 bytes a call count 88).
constexpr double kAddressBytesPerThread = 64.0 * 1024 * 1024;
// Collectives, once the reading has counted them: each call of a collective is a member of its instance
// in the trace (24 bytes) and in the replays' state, and a wait state of its own (find_waits: 40 bytes
// when measured below, 32 since session 88; a halo's calls have one for about every four), and each
// instance has a record of its own. Peaks of memory and least ulimit -v of mpiadvise report --format json
// --threads 1 [--low-memory] on
// mpiadvise-synth's logs (session 82, the check left out, less the program's 14 MiB), beside its halo of
// 64 x 16000 calls (62 MiB, 78): allreduce of 2 ranks x 5e5 calls 104 MiB, 119 (packed 95, 103); of 64 x
// 16000 116, 134 (117, 124); of 256 x 4000 115, 133 (118, 141); of 1024 x 1000 125, 144 (124, 154);
// all-to-all of 16 x 1e5 (1.6 M calls) 182, 198. About 55 bytes of memory and 40 of address space a
// call of a collective beyond a halo's, from 2 ranks to 1024, the instances' share within it (the fit
// gives them less than none). What these figures count for each, in the same order, above each: of
// memory 124, 121, 127, 151, 188 (packed 124, 121, 127, 151); of address space 146, 143, 147, 165, 209
// (packed 137, 135, 143, 179). Before (40 and 20 bytes a call of a collective, 48 and 32 an instance, no
// address a rank whole) the allreduce of 1024 ranks took 187 MiB where the check counted 155. Each replay
// beside the first holds 8 bytes a call of a collective more, not counted here.
constexpr double kBytesPerCollectiveCall = 60, kBytesPerInstance = 16;
constexpr double kAddressBytesPerCollectiveCall = 48, kAddressBytesPerInstance = 16;

uint64_t meminfo_available() {
  std::ifstream in("/proc/meminfo");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("MemAvailable:", 0) == 0) return std::strtoull(line.c_str() + 13, nullptr, 10) * 1024;
  return UINT64_MAX;
}

uint64_t read_u64_file(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::string s;
  if (!(in >> s) || s == "max" || s.find_first_not_of("0123456789") != std::string::npos) return UINT64_MAX;
  return std::strtoull(s.c_str(), nullptr, 10);
}

// The value of a key in a memory.stat ("key value" lines); 0 without it.
uint64_t stat_value(const std::filesystem::path& path, const std::string& key) {
  std::ifstream in(path);
  std::string k;
  uint64_t v = 0;
  while (in >> k >> v)
    if (k == key) return v;
  return 0;
}

// What this process may still take (UINT64_MAX: no limit known): of memory, what the system has available
// and its cgroup's limit less what the cgroup uses; of address space, its limit (ulimit -v) less its size.
struct Room {
  uint64_t memory = UINT64_MAX;
  uint64_t address = UINT64_MAX;
};

Room room_left() {
  Room room;
  room.memory = std::min(meminfo_available(), cgroup_memory_left());
  struct rlimit rl;
  if (getrlimit(RLIMIT_AS, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY) {
    std::ifstream in("/proc/self/statm");
    uint64_t pages = 0;
    in >> pages;
    const uint64_t size = pages * static_cast<uint64_t>(sysconf(_SC_PAGESIZE));
    room.address = rl.rlim_cur > size ? rl.rlim_cur - size : 0;
  }
  return room;
}

// What an analysis of `calls` MPI calls in the logs of `ranks` ranks with `threads` replays at once needs,
// `here` processes of it on this node (spread over processes, each holds the whole trace; those of a node
// share its memory, each has its own address space), the calls held whole or, `packed`, as analyse's
// low_memory holds them. Collectives, where the reading has counted them: the share of the calls that are
// collectives' and of the instances they make.
struct Need {
  double memory = 0, address = 0;
};
struct Collectives {
  double calls = 0, instances = 0;  // a call's share
};

// Bytes a call, and beyond them what each call of a collective and each instance adds.
double bytes_per_call(const Collectives& k, bool packed) {
  return (packed ? kPackedBytesPerCall : kBytesPerCall) + k.calls * kBytesPerCollectiveCall + k.instances * kBytesPerInstance;
}
double address_per_call(const Collectives& k, bool packed) {
  return (packed ? kPackedAddressBytesPerCall : kAddressBytesPerCall) + k.calls * kAddressBytesPerCollectiveCall +
         k.instances * kAddressBytesPerInstance;
}
// What does not grow with the calls beyond a bound: the program's own, each rank's, and packed, the ops the
// causes hold decoded.
double decoded_ops(size_t ranks, uint64_t calls) {
  return static_cast<double>(std::min<uint64_t>(calls, std::max<uint64_t>(OpStream::kDecodedOps, 2 * OpStream::kMinFrameOps * ranks)));
}
double fixed_address(size_t ranks, uint64_t calls, bool packed) {
  if (!packed) return kAddressBytes + static_cast<double>(ranks) * kAddressBytesPerRank;
  return kAddressBytes + static_cast<double>(ranks) * kPackedAddressBytesPerRank + decoded_ops(ranks, calls) * kDecodedAddressBytesPerOp;
}
double fixed_memory(size_t ranks, uint64_t calls, bool packed) {
  return static_cast<double>(ranks) * kBytesPerRank + (packed ? decoded_ops(ranks, calls) * kDecodedBytesPerOp : 0);
}

Need need_of(uint64_t calls, size_t ranks, unsigned threads, int here, const Collectives& k, bool packed) {
  const double c = static_cast<double>(calls), more = threads > 1 ? threads - 1 : 0;
  return {(fixed_memory(ranks, calls, packed) + c * bytes_per_call(k, packed) + more * c * kBytesPerCallPerThread) * here,
          fixed_address(ranks, calls, packed) + c * address_per_call(k, packed) +
              more * (kAddressBytesPerThread + c * kBytesPerCallPerThread)};
}

bool fits(const Need& n, const Room& r) {
  return n.memory <= static_cast<double>(r.memory) && n.address <= static_cast<double>(r.address);
}

std::string gib(double bytes) {
  if (bytes < 1024.0 * 1024 * 1024) return fmt::format("{:.0f} MiB", bytes / (1024.0 * 1024));
  return fmt::format("{:.1f} GiB", bytes / (1024.0 * 1024 * 1024));
}

}  // namespace

uint64_t cgroup_memory_left(const std::filesystem::path& mount, const std::filesystem::path& self) {
  namespace fs = std::filesystem;
  uint64_t left = UINT64_MAX;
  // a cgroup's limit less its use, its inactive files (the page cache the kernel takes back before it
  // refuses memory: the logs just read) not counted as used
  const auto take = [&](const fs::path& dir, const char* max, const char* current, const char* inactive) {
    const uint64_t limit = read_u64_file(dir / max), used = read_u64_file(dir / current);
    if (limit == UINT64_MAX || used == UINT64_MAX) return;
    const uint64_t held = used - std::min(used, stat_value(dir / "memory.stat", inactive));
    left = std::min(left, limit > held ? limit - held : 0);
  };
  std::ifstream in(self);
  for (std::string line; std::getline(in, line);) {
    // hierarchy:controllers:path; cgroup v2's is 0::path, v1's memory controller's N:memory:path
    const size_t a = line.find(':'), b = a == std::string::npos ? a : line.find(':', a + 1);
    if (b == std::string::npos || line.size() <= b + 1 || line[b + 1] != '/') continue;
    const std::string controllers = line.substr(a + 1, b - a - 1), path = line.substr(b + 2);
    bool v1 = false;
    for (size_t s = 0; s <= controllers.size();) {
      const size_t e = std::min(controllers.find(',', s), controllers.size());
      v1 |= controllers.compare(s, e - s, "memory") == 0;
      s = e + 1;
    }
    if (!v1 && !(line.compare(0, a, "0") == 0 && controllers.empty())) continue;
    const auto normal = [](const fs::path& p) {  // without a trailing separator
      fs::path n = p.lexically_normal();
      return n.has_filename() || !n.has_parent_path() ? n : n.parent_path();
    };
    const fs::path root = normal(v1 ? mount / "memory" : mount);
    fs::path dir = normal(root / path);
    // the process's cgroup and each above it: a job step's limit may be its job's or its node's
    for (;;) {
      if (v1) take(dir, "memory.limit_in_bytes", "memory.usage_in_bytes", "total_inactive_file");
      else take(dir, "memory.max", "memory.current", "inactive_file");
      const fs::path up = dir.parent_path();
      if (dir == root || up == dir || up.native().size() < root.native().size()) break;
      dir = up;
    }
  }
  return left;
}

std::string part_text(const std::optional<double>& from_s, const std::optional<double>& until_s) {
  if (from_s && until_s) return fmt::format("the run from {:.6g} s after its start to {:.6g} s (--from, --until)", *from_s, *until_s);
  if (from_s) return fmt::format("the run from {:.6g} s after its start on (--from)", *from_s);
  if (until_s) return fmt::format("the run's first {:.6g} s (--until)", *until_s);
  return "the whole run";
}

namespace {

// What the analysis may take, found before it reads the logs, and how many processes of it this node holds.
struct MemoryRoom {
  Room room;
  int here = 1;
};

MemoryRoom memory_room() {
  Room room = room_left();
  int here = 1;  // processes of the analysis on this node
  if (ReplayPeers* peers = replay_peers(); peers && peers->size() > 1) {
    here = peers->on_node();
    // all take the same verdict: of the node's memory, the most any of them saw left (before the others
    // took theirs); of the address space, each process's own, the least left to any of them
    std::vector<uint8_t> mine(sizeof room);
    std::memcpy(mine.data(), &room, sizeof room);
    for (const auto& theirs : peers->allgather(mine)) {
      if (theirs.size() != sizeof(Room)) continue;
      Room r;
      std::memcpy(&r, theirs.data(), sizeof r);
      room.memory = std::max(room.memory, r.memory);
      room.address = std::min(room.address, r.address);
    }
  }
  return {room, here};
}

// How the analysis holds the calls once read: whole, or packed (analyse's low_memory), asked for or
// chosen by the check where they fit only so; may_pack: the check may choose it (not spread over processes).
struct Holding {
  bool packed = false, may_pack = true;
};

// The check against the room found before the reading: of the calls alone, and once the reading has
// counted them, of the calls with their collectives (k). Where the calls fit only packed, and may be, it
// holds them so (hold.packed) and says so on stderr.
void check_room(const JobLog& job, uint64_t until_ns, uint64_t from_ns, const MemoryRoom& at, const Collectives& k,
                Holding& hold) {
  const Room& room = at.room;
  const int here = at.here;
  if (room.memory == UINT64_MAX && room.address == UINT64_MAX) return;
  uint64_t calls = 0;
  for (const auto& r : job.ranks())
    calls += until_ns == UINT64_MAX && from_ns == 0 ? r->calls_estimate() : r->calls_estimate(until_ns, from_ns);
  const size_t ranks = job.ranks().size();
  const auto need_at = [&](uint64_t n, unsigned threads, bool packed) { return need_of(n, ranks, threads, here, k, packed); };
  if (!hold.packed && !fits(need_at(calls, 1, false), room) && hold.may_pack && fits(need_at(calls, 1, true), room)) {
    const Need whole = need_at(calls, 1, false), packed = need_at(calls, 1, true);
    const bool address = whole.address > static_cast<double>(room.address);
    std::fprintf(stderr, "mpiadvise: %s: the analysis of its %llu MPI calls would need about %s where %s %s: the calls "
                 "held packed once read (as --low-memory holds them), in about %s\n",
                 job.dir().c_str(), static_cast<unsigned long long>(calls), gib(address ? whole.address : whole.memory).c_str(),
                 gib(static_cast<double>(address ? room.address : room.memory)).c_str(),
                 address ? "of address space is left (ulimit -v)" : "is available",
                 gib(address ? packed.address : packed.memory).c_str());
    hold.packed = true;
  }
  // replays at once: as many as fit beside the analysis itself
  const unsigned threads = analysis_threads();
  if (threads > 1 && calls > 0 && fits(need_at(calls, 1, hold.packed), room) && !fits(need_at(calls, threads, hold.packed), room)) {
    unsigned n = threads - 1;
    while (n > 1 && !fits(need_at(calls, n, hold.packed), room)) n--;
    const Need all = need_at(calls, threads, hold.packed);
    const bool address = all.address > static_cast<double>(room.address);
    std::fprintf(stderr, "mpiadvise: %s: %u replays at once would need about %s where %s %s: %u at once\n",
                 job.dir().c_str(), threads, gib(address ? all.address : all.memory).c_str(),
                 gib(static_cast<double>(address ? room.address : room.memory)).c_str(),
                 address ? "of address space is left (ulimit -v)" : "is available", n);
    set_analysis_threads(n);
  }
  if (fits(need_at(calls, 1, hold.packed), room)) return;
  // refused: the figures of the way that comes nearer to fitting (the lesser of its shares of the room
  // needed), packed where it may be and does
  const auto share = [&](const Need& n) {
    return std::max(n.memory / static_cast<double>(room.memory), n.address / static_cast<double>(room.address));
  };
  const bool packed = hold.packed || (hold.may_pack && share(need_at(calls, 1, true)) <= share(need_at(calls, 1, false)));
  const Need need = need_at(calls, 1, packed);
  // what binds: the memory, or the address space (of both short, the one with the smaller share of its need left)
  const bool memory_short = need.memory > static_cast<double>(room.memory);
  const bool address = need.address > static_cast<double>(room.address) &&
                       (!memory_short || static_cast<double>(room.address) / need.address <
                                             static_cast<double>(room.memory) / need.memory);
  const double needed = address ? need.address : need.memory, left = static_cast<double>(address ? room.address : room.memory);
  const double fixed = address ? fixed_address(ranks, 0, packed) : fixed_memory(ranks, 0, packed) * here;  // not with the calls
  // the part of the run that fits: the longest from the run's start (or from --from) whose calls fit, as
  // the check counts them; and the longest that fits elsewhere, where the run's calls are as dense
  std::string part;
  if (const auto start = run_start_ns(job); start && left > fixed) {
    uint64_t end = 0;
    for (const auto& r : job.ranks()) end = std::max(end, r->last_chunk_ns());
    end = std::min(end, until_ns);
    const uint64_t begin = std::max(*start, from_ns);
    // the longest part from `begin` whose calls, as the logs' chunks count them, fit: found by bisection.
    // With collectives, in 85% of the room: their figures are below what runs of 10^6 calls took, and a
    // shorter run takes more a call (the part first said of an allreduce of 2 ranks x 2e5 calls under
    // ulimit -v 100 MiB, counted at 86 MiB, needed 108 to 112)
    Room part_room = room;
    if (k.calls > 0)
      for (uint64_t* r : {&part_room.memory, &part_room.address})
        if (*r != UINT64_MAX) *r = static_cast<uint64_t>(static_cast<double>(*r) * 0.85);
    // The longest part that fits, in three significant digits, rounded down, found by bisection on its
    // length: from `begin` (with from_ns, as the check counts it), or, with `anywhere`, from each of 8
    // places spread over the run. Where a part starts and ends against each rank's chunks moves its count
    // by up to a chunk of each thread's calls (the count takes a chunk's calls as spread evenly over its
    // time, and counts one chunk beyond the part's end whole), so as long a part as from the start may
    // not fit elsewhere: the part said for anywhere fits at each of those places.
    // a part fits as analyse would hold it: whole where its calls fit whole, else packed where they may be
    const auto part_fits = [&](uint64_t n) {
      if (!hold.packed && fits(need_at(n, 1, false), room)) return fits(need_at(n, 1, false), part_room);
      return (hold.packed || hold.may_pack) && fits(need_at(n, 1, true), part_room);
    };
    const auto longest = [&](bool anywhere) {
      constexpr int kPlaces = 8;
      const auto fits_len = [&](uint64_t len) {
        if (!anywhere) {
          uint64_t n = 0;
          for (const auto& r : job.ranks()) n += r->calls_estimate(begin + len, from_ns);
          return part_fits(n);
        }
        const uint64_t span = end > begin + len ? end - begin - len : 0;
        for (int j = 0; j < kPlaces; j++) {
          const uint64_t from = begin + span / (kPlaces - 1) * j;
          uint64_t n = 0;
          for (const auto& r : job.ranks()) n += r->calls_estimate(from + len, from);
          if (!part_fits(n)) return false;
        }
        return true;
      };
      uint64_t lo = 0, hi = end > begin ? end - begin : 0;
      while (hi - lo > 1000) {  // to a microsecond
        const uint64_t mid = lo + (hi - lo) / 2;
        (fits_len(mid) ? lo : hi) = mid;
      }
      double s = static_cast<double>(lo) * 1e-9;
      if (s > 0) {
        const double unit = std::pow(10.0, std::floor(std::log10(s)) - 2);
        s = std::floor(s / unit) * unit;
      }
      return s;
    };
    const double fit_s = longest(false);
    const double from_s = static_cast<double>(begin - *start) * 1e-9;
    if (fit_s >= 0.001 && from_ns == 0) {
      const double later_s = std::min(fit_s, longest(true));
      if (later_s >= 0.001)
        part = fmt::format(", or analyse only about {:g} s of the run, whose analysis fits: its first (--until {:g}), or "
                           "a part of {:g} s S seconds after its start (--from S --until S+{:g}){}",
                           fit_s, fit_s, later_s, later_s, until_ns == UINT64_MAX ? "" : ", a shorter part");
      else
        part = fmt::format(", or analyse only about {:g} s of the run, whose analysis fits: its first (--until {:g}){}",
                           fit_s, fit_s, until_ns == UINT64_MAX ? "" : ", a shorter part");
    } else if (fit_s >= 0.001)
      part = fmt::format(", or analyse only about {:g} s of the run, whose analysis fits (--from {:.9g} --until {:.9g}), "
                         "a shorter part", fit_s, from_s, from_s + fit_s);
  }
  const double fixed_need = address ? fixed_address(ranks, calls, packed) : fixed_memory(ranks, calls, packed);
  std::string rate = fmt::format("{}{:.0f} bytes a call", fixed_need > 0 ? gib(fixed_need) + " and " : "",
                                 address ? address_per_call(k, packed) : bytes_per_call(k, packed));
  if (k.calls > 0) rate += fmt::format(", {:.0f}% of them calls of collectives", 100 * k.calls);
  if (packed) rate += ", the calls held packed once read, as --low-memory holds them";
  // spread over processes, each holds the whole trace: one process of it, holding the calls packed, may fit
  std::string alone;
  if (!hold.may_pack) {
    const Need one = need_of(calls, ranks, 1, 1, k, true);
    if (fits(one, room))
      alone = fmt::format(", or in one process (mpiadvise report without mpirun), which holds the calls packed in about {}",
                          gib(address ? one.address : one.memory));
  }
  throw MemoryError(fmt::format(
      "{}: the logs of {} ranks hold {} MPI calls{}, and their analysis needs about {}{} ({}{}) where {} {}; analyse "
      "them {}{}{}{}, or trace only the part of the run that matters (MPI_Pcontrol(0) pauses tracing, MPI_Pcontrol(1) "
      "resumes it)",
      job.dir().string(), job.ranks().size(), calls,
      until_ns == UINT64_MAX && from_ns == 0 ? ""
      : from_ns == 0                         ? " in the part asked for (--until)"
      : until_ns == UINT64_MAX               ? " in the part asked for (--from)"
                                             : " in the part asked for (--from, --until)",
      gib(needed), address ? " of address space" : "", rate,
      here > 1 && !address ? fmt::format(", in each of the {} processes of the analysis on this node", here) : "",
      gib(left), address ? "is left under its limit (ulimit -v)" : "is available",
      address ? "under a higher limit" : "on a machine with that memory", here > 1 && !address ? " or with fewer processes on it" : "",
      alone, part));
}

}  // namespace

void check_memory(const JobLog& job, uint64_t until_ns, uint64_t from_ns) {
  Holding hold;
  check_room(job, until_ns, from_ns, memory_room(), {}, hold);
}

// Spread over processes, every process must have read the same logs (a path that names other files on
// another node, logs still being written): a replay of different traces would not be one.
void check_same_trace(const Trace& t, const std::string& dir) {
  ReplayPeers* peers = replay_peers();
  if (!peers || peers->size() < 2) return;
  std::array<uint64_t, 6> digest{static_cast<uint64_t>(t.world_size), 0, t.messages.size(), t.collectives.size(),
                                 t.links.size(), 0};
  for (const auto& r : t.ranks) {
    digest[1] += r.ops.size();
    for (const auto& op : r.ops) digest[5] += op.t_enter * 31 + op.t_exit();
  }
  std::vector<uint8_t> mine(sizeof digest);
  std::memcpy(mine.data(), digest.data(), sizeof digest);
  const auto all = peers->allgather(mine);
  for (size_t p = 0; p < all.size(); p++)
    if (all[p] != all.front())
      throw std::runtime_error(fmt::format("{}: process {} of the analysis read other logs than process 0 ({} ranks, {} "
                                           "MPI calls here): every process must read the same run's logs",
                                           dir, p, t.world_size, digest[1]));
}

Analysis analyse(const std::string& dir, const std::string& params, const std::vector<std::string>& debug_dirs,
                 const ReplaySpeed& speed, const RunPart& part, bool low_memory) {
  if (low_memory && replay_peers())
    throw std::invalid_argument("--low-memory: not with the analysis spread over processes (mpirun -np K mpiadvise "
                                "report); run it as one process");
  Analysis a;
  a.dir = dir;
  a.job = std::make_unique<JobLog>(dir);
  uint64_t until_ns = UINT64_MAX, from_ns = 0;
  for (const auto& [name, s] : {std::pair{"--until", part.until_s}, std::pair{"--from", part.from_s}})
    if (s && (!(*s > 0) || *s > 1e9)) throw std::invalid_argument(fmt::format("{} {}: not a time in seconds above 0", name, *s));
  if (part.from_s && part.until_s && !(*part.until_s > *part.from_s))
    throw std::invalid_argument(
        fmt::format("--from {} --until {}: the part would end before it starts", *part.from_s, *part.until_s));
  if (part.until_s || part.from_s) {
    const auto start = run_start_ns(*a.job);
    if (!start)
      throw LogError(dir, std::nullopt,
                     fmt::format("{}: the run's start is in none of its logs (no rank's log holds an MPI call)",
                                 part.until_s ? "--until" : "--from"));
    const auto at = [&](double s) { return *start + static_cast<uint64_t>(s * 1e9 + 0.5); };
    if (part.until_s) until_ns = at(*part.until_s);
    if (part.from_s) from_ns = at(*part.from_s);
  }
  // the calls' need first, with the room there is before the reading; then, the reading done, the
  // collectives' need beside it against the same room (a run of collectives alone needs twice a halo's
  // bytes a call, and more where its instances have few members)
  const MemoryRoom room = memory_room();
  Holding hold{low_memory, !replay_peers()};
  check_room(*a.job, until_ns, from_ns, room, {}, hold);
  const bool packed_before = hold.packed;
  a.trace = build_trace(*a.job, until_ns, from_ns, [&](const ReadCounts& n) {
    if (n.calls == 0 || n.collective_calls == 0) return false;
    const double calls = static_cast<double>(n.calls);
    check_room(*a.job, until_ns, from_ns, room,
               {static_cast<double>(n.collective_calls) / calls, static_cast<double>(n.instances) / calls}, hold);
    return hold.packed && !packed_before;  // the ops packed from here where only the collectives' count made it so
  }, hold.packed);
  a.part = part;
  const auto& ranks = a.trace.ranks;
  if (part.from_s && std::all_of(ranks.begin(), ranks.end(), [&](const RankTrace& r) { return a.trace.ops_of(r.rank) == 0; }))
    throw std::invalid_argument(fmt::format("--from {}: no rank's log holds a call entered that long after the run's "
                                            "start{}: the part is empty",
                                            *part.from_s, part.until_s ? " and before --until" : ""));
  if (std::any_of(ranks.begin(), ranks.end(), [](const RankTrace& r) { return r.cut; })) a.until_s = part.until_s;
  if (std::any_of(ranks.begin(), ranks.end(), [](const RankTrace& r) { return r.calls_before > 0; })) a.from_s = part.from_s;
  if (a.trace.cut())
    for (const auto& r : a.job->ranks()) a.calls_in_logs += r->calls_estimate();
  check_same_trace(a.trace, dir);
  // the calls kept as packed op streams from here, the trace's ops (packed by the reading) let go rank by
  // rank (docs/streaming.md)
  if (hold.packed) a.streams = std::make_shared<const std::vector<OpStream>>(OpStream::take_all(a.trace));
  a.facts = run_facts(*a.job);
  a.chosen = choose_params(a.facts, params, default_params_dir());
  a.set_params = a.chosen.params;
  if (const auto probe = message_probe(*a.job))
    a.probe = a.streams ? probe_speed(*probe, a.chosen.params, *a.streams) : probe_speed(*probe, a.chosen.params, a.trace);
  const bool probe_plausible = a.probe && a.probe->factor >= kProbeFactorMin && a.probe->factor <= kProbeFactorMax;
  if (a.probe && !probe_plausible)
    a.chosen.why += fmt::format("; the run's own round trips between ranks 0 and {} went at x{:.3g} the set's times, "
                                "beyond {} to {}: not a speed of the machine the set was measured on, not applied",
                                a.probe->partner, a.probe->factor, kProbeFactorMin, kProbeFactorMax);
  if (speed.at_set) {
    a.chosen.why += "; at the set's speed (--at-set-speed)";
  } else if (speed.factor) {
    a.chosen.params = a.chosen.params.scaled(*speed.factor);
    for (double& f : a.chosen.params.speeds) f /= *speed.factor;
    a.chosen.why += fmt::format("; its times x{:.3f} (--speed)", *speed.factor);
  } else if (probe_plausible) {
    a.probe_applied = true;
    a.chosen.params = a.chosen.params.scaled(a.probe->factor);
    for (double& f : a.chosen.params.speeds) f /= a.probe->factor;
    // each size's own speed against the factor applied (a size's beyond what the factor may be held to
    // it, as one noisy size's would be): a what-if that splits messages prices its chunks at theirs
    a.chosen.params.speed_bytes = a.probe->bytes;
    a.chosen.params.speed_log.clear();
    for (size_t i = 0; i < a.probe->bytes.size(); i++) {
      const double ratio = std::clamp(a.probe->measured_ns[i] / a.probe->model_ns[i], kProbeFactorMin, kProbeFactorMax);
      a.chosen.params.speed_log.push_back(std::log(ratio / a.probe->factor));
    }
    std::string sizes;
    for (size_t i = 0; i < a.probe->bytes.size(); i++)
      sizes += fmt::format("{}{} B x{:.2f}", i ? ", " : "", a.probe->bytes[i], a.probe->measured_ns[i] / a.probe->model_ns[i]);
    a.chosen.why += fmt::format("; its times x{:.3f}: the run's own round trips between ranks 0 and {} ({}) against the "
                                "set's",
                                a.probe->factor, a.probe->partner, sizes);
  } else if (const auto speed = run_speed(a.trace, a.streams, a.facts, a.chosen.params)) {
    a.chosen.params = a.chosen.params.scaled(speed->factor);
    for (double& f : a.chosen.params.speeds) f /= speed->factor;  // now on the scaled set's times
    a.chosen.why += fmt::format(
        "; its times x{:.2f}: the run went at a {} speed of the machine, one its calibration saw (replayed "
        "{:+.1f}% off at the set's, {:+.1f}% at that one)",
        speed->factor, speed->faster ? "faster" : "slower", 100 * speed->error_set, 100 * speed->error_run);
  }
  a.measured = a.streams ? measure_waits(*a.streams, find_waits(*a.streams, LogGPS(a.chosen.params)))
                         : measure_waits(a.trace, LogGPS(a.chosen.params));
  a.symbols.resize(static_cast<size_t>(a.trace.world_size));
  auto shared = std::make_shared<ModuleSymbols>(debug_dirs);
  for (const auto& r : a.job->ranks())
    if (r->rank() >= 0 && r->rank() < a.trace.world_size)
      a.symbols[r->rank()] = std::make_unique<Symbolizer>(r->modules(), shared);
  group_sites_by_function(a);
  return a;
}

}  // namespace mpiadvise

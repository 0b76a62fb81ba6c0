// mpiadvise-synth: the logs of a large MPI run that never ran, written as the tracer writes them
// (libtrace/format.h, man/mpiadvise-log.5), so that mpiadvise report, dump, replay and the rest read
// them as they read a traced run. For the analyzer at scales no test machine runs: 1024 ranks of a
// million calls each, streamed to disk a block of iterations at a time.
//
// Each rank's file is what libmpiadvise writes: the file header and header JSON (libtrace/metadata.c),
// a DEFS chunk (MPI_COMM_WORLD and MPI_COMM_SELF as libtrace/comm.c defines them, the module and the
// call sites of libtrace/callsite.c), EVENTS chunks of at most 64 KiB encoded by the tracer's own
// encoder (codec.h: mpa_encode_chunk_start, mpa_encode_event) and sealed when full or when their first
// event is 200 ms older than the next (libtrace/buffers.c), each one zstd frame with its checksum and
// size, and the TRAILER MPI_Finalize writes (libtrace/core.c). The header says it is synthetic: key
// "synthetic" (which the reader ignores) and "tool" mpiadvise-synth.
//
// Times follow a simple clock model (kPostNs, kLatencyNs, 1 GB/s, eager up to Open MPI's TCP limit, a
// handshake above it), so that no receive completes before its send started and the replay has
// something consistent to predict. The call sites are real return addresses in this program, at lines
// of the fictional sources synth_halo.c, synth_pipeline.c, ... (the #line blocks at the end of this
// file): the report names them as it names a traced program's, as long as this binary is where it was
// when it wrote the logs.
#include <dirent.h>
#include <fcntl.h>
#include <link.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "call_ids.h"
extern "C" {
#include "codec.h"
#include "format.h"
}

namespace fs = std::filesystem;

namespace {

// ---- what the tracer does, as constants ---------------------------------------------------------------
constexpr size_t kChunkBytes = 64u * 1024u;        // MPA_CHUNK_BYTES (libtrace/tracer.h)
constexpr uint64_t kSealAgeNs = 100000000ull;       // MPA_SEAL_AGE_NS (libtrace/buffers.c)
constexpr const char* kVersion = "0.1.0";           // MPA_TOOL_VERSION
constexpr int kZstdLevel = 1;                       // the tracer's default (MPIADVISE_ZSTD_LEVEL)
constexpr int kRanksPerHost = 32;                   // hosts synth-node000, synth-node001, ...
constexpr int kMaxRanks = 65536;                    // each log lists MPI_COMM_WORLD: N^2 bytes in all
constexpr uint64_t kMaxEvents = 10000000000ull;
constexpr uint64_t kMaxBytes = 1ull << 30;
constexpr double kMaxComputeUs = 1e9;

// ---- the clock model (ns) ------------------------------------------------------------------------------
constexpr uint64_t kPostNs = 300;      // a non-blocking call, or a blocking send's local part
constexpr uint64_t kGapNs = 100;       // the program between two MPI calls
constexpr uint64_t kWaitMinNs = 200;   // a wait that finds everything done
constexpr uint64_t kRecvDoneNs = 150;  // from a message's arrival to the return of the call receiving it
constexpr uint64_t kLatencyNs = 2000;  // one way, any size
// 1 GB/s: a byte costs 1 ns. Open MPI over TCP (the run's facts, below: btl_tcp_eager_limit 65536, of
// which 56 bytes of headers) sends up to 65480 bytes eagerly; above, the send waits for its receive,
// and a handshake costs two more latencies.
constexpr uint64_t kEagerLimit = 65536, kEagerHeaders = 56;
constexpr double kJitter = 0.02;  // computation varies by +-2% (by --seed)

enum class Pattern { Halo, Pipeline, Alltoall, Allreduce, Imbalance };

// ---- call sites ----------------------------------------------------------------------------------------------
enum Site : int { kInit, kIrecvLeft, kIrecvRight, kIsendRight, kIsendLeft, kWaitall, kRecv, kSend, kAlltoall, kAllreduce, kFinalize, kSites };

}  // namespace

// The fictional programs (end of this file): each fills site[] with return addresses at its lines.
extern "C" {
void synth_halo(uint64_t* site);
void synth_imbalance(uint64_t* site);
void synth_pipeline(uint64_t* site);
void synth_alltoall(uint64_t* site);
void synth_allreduce(uint64_t* site);
}

namespace {

struct Config {
  Pattern pattern = Pattern::Halo;
  std::string pattern_name;
  int ranks = 0;
  uint64_t events = 0;
  uint64_t bytes = 8192;
  double compute_us = 10;
  uint64_t seed = 1;
  int threads = 1;
  bool force = false;
  std::string dir;
  uint64_t iterations = 0;
  int calls_per_iteration = 0;
};

class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// ---- numbers from the command line ------------------------------------------------------------------------
uint64_t parse_count(const std::string& option, const std::string& text, uint64_t lo, uint64_t hi, bool size_suffix) {
  const char* s = text.c_str();
  if (*s < '0' || *s > '9') throw UsageError(fmt::format("{}: '{}' is not a whole number", option, text));
  errno = 0;
  char* end = nullptr;
  unsigned long long v = std::strtoull(s, &end, 10);
  if (errno) throw UsageError(fmt::format("{}: '{}' is too large (at most {})", option, text, hi));
  unsigned long long mult = 1;
  if (size_suffix && *end) {
    if (*end == 'k' || *end == 'K') mult = 1ull << 10, end++;
    else if (*end == 'm' || *end == 'M') mult = 1ull << 20, end++;
    else if (*end == 'g' || *end == 'G') mult = 1ull << 30, end++;
    if (mult > 1 && end[0] == 'i' && end[1] == 'B') end += 2;
    else if (end[0] == 'B') end++;
  }
  if (*end)
    throw UsageError(fmt::format("{}: '{}' is not a whole number{}", option, text, size_suffix ? " (or a size such as 64K)" : ""));
  if (v > hi / mult || v * mult > hi || v * mult < lo)
    throw UsageError(fmt::format("{}: {} is out of range ({} to {})", option, text, lo, hi));
  return v * mult;
}

double parse_us(const std::string& option, const std::string& text) {
  const char* s = text.c_str();
  char* end = nullptr;
  errno = 0;
  double v = std::strtod(s, &end);
  if (end == s || *end || errno || !std::isfinite(v))
    throw UsageError(fmt::format("{}: '{}' is not a number of microseconds", option, text));
  if (v < 0 || v > kMaxComputeUs)
    throw UsageError(fmt::format("{}: {} is out of range (0 to {:g} microseconds)", option, text, kMaxComputeUs));
  return v;
}

// ---- small things ---------------------------------------------------------------------------------------------
uint64_t splitmix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

uint64_t fnv(uint64_t h, const std::vector<int>& v) {
  for (int x : v) {
    h ^= static_cast<uint64_t>(static_cast<uint32_t>(x));
    h *= 1099511628211ull;
  }
  return h;
}

uint64_t monotonic_ns() {
  timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return static_cast<uint64_t>(t.tv_sec) * 1000000000ull + static_cast<uint64_t>(t.tv_nsec);
}

int write_all(int fd, const uint8_t* p, size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd, p, n);
    if (w < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    p += w;
    n -= static_cast<size_t>(w);
  }
  return 0;
}

std::string rank_file(const std::string& dir, int rank) { return fmt::format("{}/rank-{:05d}.mpa", dir, rank); }

// The program's executable code, as libtrace/callsite.c's add_module records a module.
struct Module {
  uint64_t start = 0, end = 0, base = 0;
  std::string path;
};

int find_main_module(dl_phdr_info* info, size_t, void* data) {
  if (info->dlpi_name && *info->dlpi_name) return 0;  // the main program comes first, without a name
  auto* m = static_cast<Module*>(data);
  uint64_t lo = UINT64_MAX, hi = 0;
  for (int i = 0; i < info->dlpi_phnum; i++) {
    const ElfW(Phdr)* ph = &info->dlpi_phdr[i];
    if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X)) continue;
    uint64_t s = info->dlpi_addr + ph->p_vaddr, e = s + ph->p_memsz;
    lo = std::min(lo, s);
    hi = std::max(hi, e);
  }
  if (lo >= hi) return 0;
  m->start = lo, m->end = hi, m->base = info->dlpi_addr;
  return 1;
}

Module main_module() {
  Module m;
  dl_iterate_phdr(find_main_module, &m);
  char path[4096];
  ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
  path[n > 0 ? n : 0] = '\0';
  m.path = path;
  return m;
}

// ---- compression, one context per thread ------------------------------------------------------------------
struct Compressor {
  ZSTD_CCtx* cctx = nullptr;
  std::vector<uint8_t> out;
  Compressor() {
    cctx = ZSTD_createCCtx();
    if (!cctx) throw std::runtime_error("out of memory for a compression context");
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, kZstdLevel);
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1);
    ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, 1);  // the reader checks the frame's size
  }
  ~Compressor() { ZSTD_freeCCtx(cctx); }
  Compressor(const Compressor&) = delete;
  Compressor& operator=(const Compressor&) = delete;
};

// ---- one rank's log, as the tracer's writer keeps it ------------------------------------------------------------
struct RankOut {
  int rank = 0;
  std::string path;
  int fd = -1;                    // -1 between writes when the files are not all kept open
  std::unique_ptr<uint8_t[]> chunk;  // the EVENTS chunk being filled (kChunkBytes, not zeroed)
  std::unique_ptr<uint8_t[]> times;  // its events' times until it ends (MPA_CODEC_ZSTD_TIMES: kChunkBytes)
  size_t len = 0;
  uint64_t first_tick = 0, last_exit = 0;
  mpa_codec_state codec{};
  uint64_t events = 0, chunks = 0, raw_bytes = 0, stored_bytes = 0;
  uint32_t site_id[kSites] = {};  // 0: this rank makes no call there
  std::string error;              // the first failure: the rank stops writing
};

}  // namespace

// ---- the run ------------------------------------------------------------------------------------------------------
namespace {

class Generator {
 public:
  explicit Generator(const Config& c) : c_(c), n_(c.ranks) {}
  int run();

 private:
  // phase A: the times of a block of iterations for every rank (slot(r, k) holds up to 4)
  void times(uint64_t k0, uint64_t k1, std::vector<uint64_t>& t);
  // phase B: one rank's events of a block, encoded and written
  void encode(RankOut& r, Compressor& z, uint64_t k0, uint64_t k1, const std::vector<uint64_t>& t, bool first, bool last);
  uint64_t compute_ns(int r, uint64_t k) const;
  bool eager() const { return c_.bytes <= kEagerLimit - kEagerHeaders; }
  // when a message posted (send side done posting at send_posted; receive posted at recv_posted)
  // has arrived whole
  uint64_t arrival(uint64_t send_posted, uint64_t recv_posted) const {
    return eager() ? send_posted + kLatencyNs + c_.bytes
                   : std::max(send_posted + kLatencyNs, recv_posted) + 2 * kLatencyNs + c_.bytes;
  }
  void put(RankOut& r, Compressor& z, const mpa_event& ev, Site site);
  void seal(RankOut& r, Compressor& z);
  void emit(RankOut& r, Compressor& z, uint8_t type, const uint8_t* payload, size_t len, uint64_t sync);
  void open_rank(RankOut& r, Compressor& z);
  std::string header_json(int rank) const;
  std::string trailer_json(const RankOut& r) const;
  void assign_sites(RankOut& r) const;
  std::vector<uint8_t> defs(const RankOut& r) const;
  size_t block_iterations() const;

  const Config& c_;
  const int n_;
  Module module_;
  uint64_t site_addr_[kSites] = {};
  std::vector<RankOut> out_;
  std::vector<uint64_t> free_;  // per rank: when it is done with its last call so far
  std::vector<uint64_t> init_enter_, init_exit_, fin_enter_, fin_exit_;
  uint64_t job_start_unix_ns_ = 0, t0_ = 0;
  std::string job_, world_members_json_, calls_json_;
  bool keep_open_ = true;
  uint64_t world_gid_ = 0;
};

uint64_t Generator::compute_ns(int r, uint64_t k) const {
  if (c_.compute_us <= 0) return 0;
  double base = c_.compute_us * 1000.0;
  if (c_.pattern == Pattern::Imbalance) base *= 1.0 + (r % 4) / 4.0;
  uint64_t h = splitmix(c_.seed ^ splitmix(static_cast<uint64_t>(r) << 40 ^ k));
  double u = static_cast<double>(h >> 11) / 9007199254740992.0 * 2.0 - 1.0;  // [-1, 1)
  return static_cast<uint64_t>(base * (1.0 + kJitter * u) + 0.5);
}

size_t Generator::block_iterations() const {
  // about 16 MiB of times per block (4 per rank and iteration)
  size_t per = std::max<size_t>(1, (size_t{1} << 19) / static_cast<size_t>(n_));
  return std::min<size_t>(per, c_.iterations);
}

// Phase A. t[(r * B + (k - k0)) * 4 + j]: halo, imbalance: j = 0 start (enter of the first Irecv),
// 1 exit of the Waitall; pipeline: 0, 1 Recv enter and exit, 2, 3 Send enter and exit; alltoall and
// allreduce: 0, 1 the call's enter and exit.
void Generator::times(uint64_t k0, uint64_t k1, std::vector<uint64_t>& t) {
  const size_t B = block_iterations();
  t.resize(static_cast<size_t>(n_) * B * 4);
  auto at = [&](int r, uint64_t k, int j) -> uint64_t& { return t[(static_cast<size_t>(r) * B + (k - k0)) * 4 + j]; };
  std::vector<uint64_t> start(static_cast<size_t>(n_));
  const uint64_t step = kPostNs + kGapNs;
  for (uint64_t k = k0; k < k1; k++) {
    switch (c_.pattern) {
      case Pattern::Halo:
      case Pattern::Imbalance: {
        for (int r = 0; r < n_; r++) start[r] = free_[r] + compute_ns(r, k);
        for (int r = 0; r < n_; r++) {
          const int left = (r + n_ - 1) % n_, right = (r + 1) % n_;
          const uint64_t s = start[r];
          // from the left: its Isend to the right (third call), into my Irecv from the left (first)
          const uint64_t a_left = arrival(start[left] + 2 * step + kPostNs, s + kPostNs);
          // from the right: its Isend to the left (fourth call), into my Irecv from the right (second)
          const uint64_t a_right = arrival(start[right] + 3 * step + kPostNs, s + step + kPostNs);
          uint64_t done = s + 4 * step + kWaitMinNs;
          done = std::max({done, a_left + kRecvDoneNs, a_right + kRecvDoneNs});
          if (!eager()) {  // my sends complete once received whole
            done = std::max(done, arrival(s + 2 * step + kPostNs, start[right] + kPostNs) + kRecvDoneNs);
            done = std::max(done, arrival(s + 3 * step + kPostNs, start[left] + step + kPostNs) + kRecvDoneNs);
          }
          at(r, k, 0) = s;
          at(r, k, 1) = done;
        }
        for (int r = 0; r < n_; r++) free_[r] = at(r, k, 1);
        break;
      }
      case Pattern::Pipeline: {
        uint64_t incoming = 0;  // when the message from r - 1 arrives whole
        for (int r = 0; r < n_; r++) {
          uint64_t now = free_[r];
          if (r > 0) {
            const uint64_t enter = now;
            const uint64_t exit = std::max(enter + kPostNs, incoming + kRecvDoneNs);
            at(r, k, 0) = enter;
            at(r, k, 1) = exit;
            now = exit;
          }
          now += compute_ns(r, k);
          if (r < n_ - 1) {
            const uint64_t enter = now;
            // rank r + 1 has not started this iteration yet: free_[r + 1] is its Recv's entry
            incoming = arrival(enter + kPostNs, free_[r + 1]);
            const uint64_t exit = eager() ? enter + kPostNs + c_.bytes : incoming;
            at(r, k, 2) = enter;
            at(r, k, 3) = exit;
            now = exit;
          }
          free_[r] = now;
        }
        break;
      }
      case Pattern::Alltoall: {
        uint64_t last_in = 0;
        for (int r = 0; r < n_; r++) {
          start[r] = free_[r] + compute_ns(r, k);
          last_in = std::max(last_in, start[r]);
        }
        // pairwise exchange: n - 1 steps of one block each way, and the latencies of a log-depth sync
        const uint64_t steps = static_cast<uint64_t>(n_ - 1);
        const uint64_t depth = n_ > 1 ? static_cast<uint64_t>(std::ceil(std::log2(n_))) : 0;
        const uint64_t cost = kPostNs + steps * (kGapNs + c_.bytes) + depth * kLatencyNs;
        for (int r = 0; r < n_; r++) {
          at(r, k, 0) = start[r];
          at(r, k, 1) = free_[r] = last_in + cost + static_cast<uint64_t>(r % 8) * 50;
        }
        break;
      }
      case Pattern::Allreduce: {
        uint64_t last_in = 0;
        for (int r = 0; r < n_; r++) {
          start[r] = free_[r] + compute_ns(r, k);
          last_in = std::max(last_in, start[r]);
        }
        // recursive doubling: a log-depth of exchanges of the whole vector, each reduced on arrival
        const uint64_t depth = n_ > 1 ? static_cast<uint64_t>(std::ceil(std::log2(n_))) : 0;
        const uint64_t cost = kPostNs + depth * (kLatencyNs + kGapNs + 2 * c_.bytes);
        for (int r = 0; r < n_; r++) {
          at(r, k, 0) = start[r];
          at(r, k, 1) = free_[r] = last_in + cost + static_cast<uint64_t>(r % 8) * 50;
        }
        break;
      }
    }
  }
}

// ---- writing ---------------------------------------------------------------------------------------------------------
void Generator::emit(RankOut& r, Compressor& z, uint8_t type, const uint8_t* payload, size_t len, uint64_t sync) {
  if (!r.error.empty()) return;
  const size_t need = sizeof(mpa_chunk_header) + ZSTD_compressBound(len);
  if (z.out.size() < need) z.out.resize(need);
  size_t stored = ZSTD_compress2(z.cctx, z.out.data() + sizeof(mpa_chunk_header), z.out.size() - sizeof(mpa_chunk_header),
                                 payload, len);
  if (ZSTD_isError(stored)) {
    r.error = fmt::format("compressing a chunk of {}: {}", r.path, ZSTD_getErrorName(stored));
    return;
  }
  mpa_chunk_header h{};
  h.magic = MPA_CHUNK_MAGIC;
  h.type = type;
  h.codec = type == MPA_CHUNK_EVENTS ? MPA_CODEC_ZSTD_TIMES : MPA_CODEC_ZSTD;  // seal() ends every EVENTS chunk
  h.thread = 0;
  h.raw_bytes = static_cast<uint32_t>(len);
  h.stored_bytes = static_cast<uint32_t>(stored);
  h.sync_tick = sync;  // the clock is CLOCK_MONOTONIC: ticks are ns
  h.sync_ns = sync;
  std::memcpy(z.out.data(), &h, sizeof h);
  int fd = r.fd;
  if (fd < 0 && (fd = ::open(r.path.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC)) < 0) {
    r.error = fmt::format("cannot write {}: {}", r.path, std::strerror(errno));
    return;
  }
  int err = write_all(fd, z.out.data(), sizeof h + stored);
  if (!keep_open_) ::close(fd);
  if (err) {
    r.error = fmt::format("cannot write {}: {}", r.path, std::strerror(err));
    return;
  }
  r.chunks++;
  r.raw_bytes += len;
  r.stored_bytes += sizeof h + stored;
}

void Generator::seal(RankOut& r, Compressor& z) {
  if (r.len == 0) return;
  r.len = static_cast<size_t>(mpa_encode_chunk_end(&r.codec, r.chunk.get() + r.len, r.times.get()) - r.chunk.get());
  emit(r, z, MPA_CHUNK_EVENTS, r.chunk.get(), r.len, r.last_exit);
  r.len = 0;
}

// libtrace/buffers.c's room() and encode(): a chunk is sealed when the event may not fit (with its times
// and the chunk's end) or when its first event is more than 2 x MPA_SEAL_AGE_NS older than this one
void Generator::put(RankOut& r, Compressor& z, const mpa_event& ev, Site site) {
  const size_t need = mpa_event_bound(&ev, 0) + MPA_TIMES_BOUND + 4;
  if (r.len && (kChunkBytes - r.len - mpa_encode_times_bytes(&r.codec, r.times.get()) < need ||
                ev.t_enter - r.first_tick > 2 * kSealAgeNs))
    seal(r, z);
  if (r.len == 0) {
    r.first_tick = ev.t_enter;
    r.len = static_cast<size_t>(mpa_encode_chunk_start(&r.codec, r.chunk.get(), ev.t_enter, r.times.get()) -
                                r.chunk.get());
  }
  uint8_t* p = r.chunk.get() + r.len;
  uint8_t* end = mpa_encode_event(&r.codec, p, &ev, r.site_id[site], 0, 0, nullptr, 0);
  r.len += static_cast<size_t>(end - p);
  r.events++;
  r.last_exit = ev.t_exit;
}

mpa_event event(uint32_t call, uint64_t enter, uint64_t exit) {
  mpa_event ev{};
  ev.call = call;
  ev.t_enter = enter;
  ev.t_exit = exit;
  return ev;
}

void Generator::encode(RankOut& r, Compressor& z, uint64_t k0, uint64_t k1, const std::vector<uint64_t>& t, bool first,
                       bool last) {
  if (!r.error.empty()) return;
  const size_t B = block_iterations();
  const int rank = r.rank, left = (rank + n_ - 1) % n_, right = (rank + 1) % n_;
  const uint64_t step = kPostNs + kGapNs;
  // Open MPI's request objects: the four of an iteration come back from its free list each time
  const uint64_t base_handle = 0x55d3c8a2e000ull + static_cast<uint64_t>(rank % 7) * 0x4000;
  const uint64_t handles[4] = {base_handle, base_handle + 0x180, base_handle + 0x300, base_handle + 0x480};
  if (first) {
    mpa_event ev = event(MPA_CALL_Init, init_enter_[rank], init_exit_[rank]);
    ev.mask = MPA_F_VALUE;
    ev.value = 0;  // MPI_THREAD_SINGLE
    put(r, z, ev, kInit);
  }
  for (uint64_t k = k0; k < k1; k++) {
    const uint64_t* tk = &t[(static_cast<size_t>(rank) * B + (k - k0)) * 4];
    switch (c_.pattern) {
      case Pattern::Halo:
      case Pattern::Imbalance: {
        const uint64_t s = tk[0];
        mpa_event ev = event(MPA_CALL_Irecv, s, s + kPostNs);
        ev.mask = MPA_F_COMM | MPA_F_PEER | MPA_F_TAG | MPA_F_BYTES2 | MPA_F_REQS;
        ev.comm = 1, ev.peer = left, ev.tag = 1, ev.bytes2 = c_.bytes, ev.nreq = 1, ev.reqs = &handles[0];
        put(r, z, ev, kIrecvLeft);
        ev.t_enter = s + step, ev.t_exit = s + step + kPostNs;
        ev.peer = right, ev.tag = 2, ev.reqs = &handles[1];
        put(r, z, ev, kIrecvRight);
        ev = event(MPA_CALL_Isend, s + 2 * step, s + 2 * step + kPostNs);
        ev.mask = MPA_F_COMM | MPA_F_PEER | MPA_F_TAG | MPA_F_BYTES | MPA_F_REQS;
        ev.comm = 1, ev.peer = right, ev.tag = 1, ev.bytes = c_.bytes, ev.nreq = 1, ev.reqs = &handles[2];
        put(r, z, ev, kIsendRight);
        ev.t_enter = s + 3 * step, ev.t_exit = s + 3 * step + kPostNs;
        ev.peer = left, ev.tag = 2, ev.reqs = &handles[3];
        put(r, z, ev, kIsendLeft);
        // statuses as Open MPI fills them: a receive's source, tag and size; a send's own rank, tag and size
        const mpa_status st[4] = {{0, left, 1, c_.bytes}, {1, right, 2, c_.bytes}, {2, rank, 1, c_.bytes}, {3, rank, 2, c_.bytes}};
        ev = event(MPA_CALL_Waitall, s + 4 * step, tk[1]);
        ev.mask = MPA_F_REQS | MPA_F_STATUS;
        ev.nreq = 4, ev.reqs = handles, ev.nstat = 4, ev.stats = st;
        put(r, z, ev, kWaitall);
        break;
      }
      case Pattern::Pipeline: {
        if (rank > 0) {
          const mpa_status st{0, rank - 1, 0, c_.bytes};
          mpa_event ev = event(MPA_CALL_Recv, tk[0], tk[1]);
          ev.mask = MPA_F_COMM | MPA_F_PEER | MPA_F_TAG | MPA_F_BYTES2 | MPA_F_STATUS;
          ev.comm = 1, ev.peer = rank - 1, ev.tag = 0, ev.bytes2 = c_.bytes, ev.nstat = 1, ev.stats = &st;
          put(r, z, ev, kRecv);
        }
        if (rank < n_ - 1) {
          mpa_event ev = event(MPA_CALL_Send, tk[2], tk[3]);
          ev.mask = MPA_F_COMM | MPA_F_PEER | MPA_F_TAG | MPA_F_BYTES;
          ev.comm = 1, ev.peer = rank + 1, ev.tag = 0, ev.bytes = c_.bytes;
          put(r, z, ev, kSend);
        }
        break;
      }
      case Pattern::Alltoall: {
        mpa_event ev = event(MPA_CALL_Alltoall, tk[0], tk[1]);
        ev.mask = MPA_F_COMM | MPA_F_BYTES | MPA_F_BYTES2;
        ev.comm = 1, ev.bytes = c_.bytes, ev.bytes2 = c_.bytes;  // bytes for each rank, as the call's counts say
        put(r, z, ev, kAlltoall);
        break;
      }
      case Pattern::Allreduce: {
        mpa_event ev = event(MPA_CALL_Allreduce, tk[0], tk[1]);
        ev.mask = MPA_F_COMM | MPA_F_BYTES | MPA_F_BYTES2;
        ev.comm = 1, ev.bytes = c_.bytes, ev.bytes2 = c_.bytes;  // the vector's bytes, sent and received
        put(r, z, ev, kAllreduce);
        break;
      }
    }
  }
  if (!last) return;
  put(r, z, event(MPA_CALL_Finalize, fin_enter_[rank], fin_exit_[rank]), kFinalize);
  seal(r, z);
  const std::string trailer = trailer_json(r);
  emit(r, z, MPA_CHUNK_TRAILER, reinterpret_cast<const uint8_t*>(trailer.data()), trailer.size(), fin_exit_[rank]);
  if (r.fd >= 0) {
    if (::close(r.fd) != 0 && r.error.empty()) r.error = fmt::format("cannot write {}: {}", r.path, std::strerror(errno));
    r.fd = -1;
  }
  r.chunk.reset();
  r.times.reset();
}

// ---- the log's head and definitions ------------------------------------------------------------------------------
// Call site ids as the tracer gives them: 1, 2, ... in the order of each site's first call on the rank.
void Generator::assign_sites(RankOut& r) const {
  std::vector<Site> order{kInit};
  switch (c_.pattern) {
    case Pattern::Halo:
    case Pattern::Imbalance: order.insert(order.end(), {kIrecvLeft, kIrecvRight, kIsendRight, kIsendLeft, kWaitall}); break;
    case Pattern::Pipeline:
      if (r.rank > 0) order.push_back(kRecv);
      if (r.rank < n_ - 1) order.push_back(kSend);
      break;
    case Pattern::Alltoall: order.push_back(kAlltoall); break;
    case Pattern::Allreduce: order.push_back(kAllreduce); break;
  }
  order.push_back(kFinalize);
  for (size_t i = 0; i < order.size(); i++) r.site_id[order[i]] = static_cast<uint32_t>(i + 1);
}

// DEFS: MPI_COMM_WORLD and MPI_COMM_SELF (libtrace/comm.c), the program's module, the call sites
std::vector<uint8_t> Generator::defs(const RankOut& r) const {
  std::vector<uint8_t> d(64 + static_cast<size_t>(n_) * 5 + module_.path.size() + 16 * kSites * 2);
  uint8_t* p = d.data();
  auto comm = [&](uint32_t id, uint64_t gid, const std::vector<int>& members) {
    *p++ = MPA_DEF_COMM;
    p = mpa_put_varint(p, id);
    p = mpa_put_varint(p, gid);
    p = mpa_put_varint(p, 0);  // not an intercommunicator
    p = mpa_put_varint(p, members.size());
    for (int m : members) p = mpa_put_varint(p, mpa_zigzag(m));
    p = mpa_put_varint(p, 0);  // no parent
    p = mpa_put_varint(p, MPA_CALL_Init);
  };
  std::vector<int> world(static_cast<size_t>(n_));
  for (int i = 0; i < n_; i++) world[i] = i;
  comm(1, world_gid_, world);
  // MPI_COMM_SELF: its members' hash, made a second time when they are the world's (a world of one)
  const std::vector<int> self{r.rank};
  uint64_t self_gid = fnv(1469598103934665603ull, self);
  if (n_ == 1) self_gid ^= 0x9e3779b97f4a7c15ull;
  comm(2, self_gid, self);
  *p++ = MPA_DEF_MODULE;
  p = mpa_put_varint(p, module_.start);
  p = mpa_put_varint(p, module_.end);
  p = mpa_put_varint(p, module_.base);
  p = mpa_put_varint(p, module_.path.size());
  std::memcpy(p, module_.path.data(), module_.path.size());
  p += module_.path.size();
  for (uint32_t id = 1; id <= kSites; id++)
    for (int s = 0; s < kSites; s++)
      if (r.site_id[s] == id) {
        *p++ = MPA_DEF_CALLSITE;
        p = mpa_put_varint(p, id);
        p = mpa_put_varint(p, 1);  // MPIADVISE_STACK_DEPTH=1: the return address
        p = mpa_put_varint(p, site_addr_[s]);
      }
  d.resize(static_cast<size_t>(p - d.data()));
  return d;
}

// libtrace/metadata.c's mpa_header_json, for a run of Open MPI 4.1 over TCP
std::string Generator::header_json(int rank) const {
  const int hosts = (n_ + kRanksPerHost - 1) / kRanksPerHost;
  const int host = rank / kRanksPerHost;
  nlohmann::ordered_json h;
  h["format"] = MPA_FORMAT_VERSION;
  h["tool"] = fmt::format("mpiadvise-synth {}", kVersion);
  h["synthetic"] = {{"pattern", c_.pattern_name}, {"ranks", n_},           {"events", c_.events},
                    {"iterations", c_.iterations}, {"bytes", c_.bytes},   {"compute_us", c_.compute_us},
                    {"seed", c_.seed}};
  h["job"] = job_;
  h["rank"] = rank;
  h["size"] = n_;
  h["pid"] = 200000 + rank % kRanksPerHost;
  h["hostname"] = fmt::format("synth-node{:03d}", host);
  h["host_cpus"] = kRanksPerHost;
  h["program"] = module_.path;
  h["mpi_library"] = "Open MPI v4.1.4, package: Debian OpenMPI, ident: 4.1.4, repo rev: v4.1.4, May 26, 2022";
  h["mpi_version"] = "3.1";
  h["thread_level"] = "MPI_THREAD_SINGLE";
  h["start_unix_ns"] = job_start_unix_ns_ + (init_enter_[rank] - t0_);
  h["clock"] = {{"source", "monotonic"},
                {"sync_tick", init_enter_[rank]},
                {"sync_ns", init_enter_[rank]},
                {"offset_to_rank0_ns", 0},
                {"offset_method", hosts > 1 && host > 0 ? "ping-pong" : "same-host"}};
  h["stack_depth"] = 1;
  h["buffer_bytes"] = 4u << 20;
  h["papi"] = nlohmann::ordered_json::array();
  h["cvars"] = {{"btl_tcp_rndv_eager_limit", kEagerLimit}, {"btl_tcp_eager_limit", kEagerLimit},
                {"btl_vader_max_inline_send", 256},        {"btl_vader_rndv_eager_limit", 32768},
                {"btl_vader_eager_limit", 4096},           {"btl_self_rndv_eager_limit", 131072},
                {"btl_self_eager_limit", 1024}};
  h["env"] = {{"OMPI_MCA_pml", "ob1"}, {"OMPI_MCA_btl", "self,tcp"}, {"OMPI_MCA_orte_num_nodes", std::to_string(hosts)},
              {"OMPI_MCA_orte_ess_num_procs", std::to_string(n_)}};
  std::string s = h.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  s.pop_back();  // the calls: the same in every header, made once
  s += ",\"calls\":" + calls_json_ + "}";
  return s;
}

// libtrace/core.c's finish(): the counts, the call sites and the communicators
std::string Generator::trailer_json(const RankOut& r) const {
  std::string s = fmt::format(
      "{{\"complete\":true,\"clock_offset_finalize_ns\":0,\"clock_offset_method\":\"{}\",\"events\":{},\"chunks\":{},"
      "\"raw_bytes\":{},\"stored_bytes\":{},\"stalls\":0,\"chunks_over_budget\":0,\"write_error\":null,\"callsites\":[",
      r.rank / kRanksPerHost > 0 ? "ping-pong" : "same-host", r.events, r.chunks, r.raw_bytes, r.stored_bytes);
  bool firstsite = true;
  for (uint32_t id = 1; id <= kSites; id++)
    for (int k = 0; k < kSites; k++)
      if (r.site_id[k] == id) {
        s += fmt::format("{}{{\"id\":{},\"frames\":[\"{:#x}\"]}}", firstsite ? "" : ",", id, site_addr_[k]);
        firstsite = false;
      }
  const std::vector<int> self{r.rank};
  uint64_t self_gid = fnv(1469598103934665603ull, self);
  if (n_ == 1) self_gid ^= 0x9e3779b97f4a7c15ull;
  s += fmt::format("],\"comms\":[{{\"id\":1,\"gid\":\"{:016x}\",\"inter\":false,\"parent\":0,\"call\":\"MPI_Init\","
                   "\"members\":{}}},{{\"id\":2,\"gid\":\"{:016x}\",\"inter\":false,\"parent\":0,\"call\":\"MPI_Init\","
                   "\"members\":[{}]}}]}}",
                   world_gid_, world_members_json_, self_gid, r.rank);
  return s;
}

// The rank's log, created as the tracer creates it (it must not exist), with its head and definitions.
void Generator::open_rank(RankOut& r, Compressor& z) {
  r.path = rank_file(c_.dir, r.rank);
  int fd = ::open(r.path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0666);
  if (fd < 0) throw std::system_error(errno, std::generic_category(), fmt::format("cannot write {}", r.path));
  const std::string json = header_json(r.rank);
  mpa_file_header h;
  std::memcpy(h.magic, MPA_FILE_MAGIC, 8);
  h.version = MPA_FORMAT_VERSION;
  h.json_bytes = static_cast<uint32_t>(json.size());
  std::string head(reinterpret_cast<const char*>(&h), sizeof h);
  head += json;
  if (int err = write_all(fd, reinterpret_cast<const uint8_t*>(head.data()), head.size())) {
    ::close(fd);
    throw std::system_error(err, std::generic_category(), fmt::format("cannot write {}", r.path));
  }
  if (keep_open_) r.fd = fd;
  else ::close(fd);
  const auto d = defs(r);
  emit(r, z, MPA_CHUNK_DEFS, d.data(), d.size(), init_exit_[r.rank]);
  if (!r.error.empty()) throw std::runtime_error(r.error);
  r.chunk.reset(new uint8_t[kChunkBytes]);
  r.times.reset(new uint8_t[kChunkBytes]);
}

int Generator::run() {
  const auto wall_start = std::chrono::steady_clock::now();
  module_ = main_module();
  switch (c_.pattern) {
    case Pattern::Halo: synth_halo(site_addr_); break;
    case Pattern::Imbalance: synth_imbalance(site_addr_); break;
    case Pattern::Pipeline: synth_pipeline(site_addr_); break;
    case Pattern::Alltoall: synth_alltoall(site_addr_); break;
    case Pattern::Allreduce: synth_allreduce(site_addr_); break;
  }

  // the job: its identity, when each rank entered and left MPI_Init
  timespec wall;
  clock_gettime(CLOCK_REALTIME, &wall);
  job_start_unix_ns_ = static_cast<uint64_t>(wall.tv_sec) * 1000000000ull + static_cast<uint64_t>(wall.tv_nsec);
  char host[64] = "";
  gethostname(host, sizeof host - 1);
  job_ = fmt::format("synth-{}-{}-{}", host, static_cast<int>(getpid()), job_start_unix_ns_);
  t0_ = monotonic_ns();
  init_enter_.resize(n_), init_exit_.resize(n_), fin_enter_.resize(n_), fin_exit_.resize(n_), free_.resize(n_);
  for (int r = 0; r < n_; r++) {
    init_enter_[r] = t0_ + static_cast<uint64_t>(r) * 2000;  // the launcher starts the ranks one by one
    init_exit_[r] = t0_ + static_cast<uint64_t>(n_) * 2000 + 20000000 + static_cast<uint64_t>(r % 16) * 500;
    free_[r] = init_exit_[r];
  }
  std::vector<int> world(static_cast<size_t>(n_));
  world_members_json_ = "[";
  for (int i = 0; i < n_; i++) {
    world[i] = i;
    world_members_json_ += fmt::format("{}{}", i ? "," : "", i);
  }
  world_members_json_ += "]";
  world_gid_ = fnv(1469598103934665603ull, world);
  calls_json_ = "[";
  for (int i = 0; i < MPA_CALL_COUNT; i++) calls_json_ += fmt::format("{}\"{}\"", i ? "," : "", mpa_call_names[i]);
  calls_json_ += "]";

  // every log open at once when the descriptors allow it, else each opened for each write
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) == 0) {
    if (lim.rlim_cur < lim.rlim_max && lim.rlim_cur < static_cast<rlim_t>(n_) + 64) {
      lim.rlim_cur = std::min<rlim_t>(lim.rlim_max, static_cast<rlim_t>(n_) + 64);
      setrlimit(RLIMIT_NOFILE, &lim);
      getrlimit(RLIMIT_NOFILE, &lim);
    }
    keep_open_ = lim.rlim_cur == RLIM_INFINITY || lim.rlim_cur >= static_cast<rlim_t>(n_) + 64;
  }

  out_.resize(static_cast<size_t>(n_));
  {
    Compressor z;
    for (int r = 0; r < n_; r++) {
      out_[r].rank = r;
      assign_sites(out_[r]);
      open_rank(out_[r], z);
    }
  }

  const int nthreads = std::max(1, std::min(c_.threads, n_));
  std::vector<std::unique_ptr<Compressor>> zs;
  for (int i = 0; i < nthreads; i++) zs.push_back(std::make_unique<Compressor>());
  const uint64_t B = block_iterations();
  std::vector<uint64_t> buf[2];
  times(0, std::min<uint64_t>(B, c_.iterations), buf[0]);
  int cur = 0;
  for (uint64_t k0 = 0; k0 < c_.iterations;) {
    const uint64_t k1 = std::min<uint64_t>(k0 + B, c_.iterations);
    const bool first = k0 == 0, last = k1 == c_.iterations;
    if (last) {  // MPI_Finalize: each rank enters when done; all leave together
      uint64_t latest = 0;
      for (int r = 0; r < n_; r++) latest = std::max(latest, fin_enter_[r] = free_[r] + kGapNs);
      for (int r = 0; r < n_; r++) fin_exit_[r] = latest + 1000000 + static_cast<uint64_t>(r % 16) * 100;
    }
    std::vector<std::thread> workers;
    for (int w = 0; w < nthreads; w++)
      workers.emplace_back([&, w] {
        for (int r = w; r < n_; r += nthreads) encode(out_[r], *zs[w], k0, k1, buf[cur], first, last);
      });
    // the next block's times meanwhile
    if (!last) times(k1, std::min<uint64_t>(k1 + B, c_.iterations), buf[cur ^ 1]);
    for (auto& t : workers) t.join();
    for (const auto& r : out_)
      if (!r.error.empty()) {
        std::fprintf(stderr, "mpiadvise-synth: %s\n", r.error.c_str());
        return 1;
      }
    cur ^= 1;
    k0 = k1;
  }

  uint64_t events = 0, stored = 0, least = UINT64_MAX, most = 0;
  for (const auto& r : out_) {
    events += r.events;
    stored += r.stored_bytes;
    least = std::min(least, r.events);
    most = std::max(most, r.events);
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
  std::printf("mpiadvise-synth: %s, %d ranks x %s events (%llu iterations): %llu events in %.2f s (%.1f M events/s), "
              "%.1f MiB in %s\n",
              c_.pattern_name.c_str(), n_,
              least == most ? std::to_string(least).c_str() : fmt::format("{} to {}", least, most).c_str(),
              static_cast<unsigned long long>(c_.iterations), static_cast<unsigned long long>(events), secs,
              static_cast<double>(events) / std::max(secs, 1e-9) / 1e6, static_cast<double>(stored) / (1 << 20),
              c_.dir.c_str());
  return 0;
}

// ---- the output directory ------------------------------------------------------------------------------------------
// Made if need be. A directory holding rank logs already is refused (one job per directory, as the
// tracer has it) unless --force, which removes them first.
void prepare_dir(const Config& c) {
  std::error_code ec;
  if (fs::exists(c.dir, ec) && !fs::is_directory(c.dir, ec)) throw UsageError(fmt::format("-o {}: not a directory", c.dir));
  fs::create_directories(c.dir, ec);
  if (ec) throw UsageError(fmt::format("-o {}: cannot make the directory: {}", c.dir, ec.message()));
  DIR* d = opendir(c.dir.c_str());
  if (!d) throw UsageError(fmt::format("-o {}: cannot read the directory: {}", c.dir, std::strerror(errno)));
  std::vector<std::string> logs;
  for (dirent* e; (e = readdir(d));) {
    const std::string name = e->d_name;
    if (name.size() > 9 && name.rfind("rank-", 0) == 0 && name.compare(name.size() - 4, 4, ".mpa") == 0) logs.push_back(name);
  }
  closedir(d);
  if (logs.empty()) return;
  std::sort(logs.begin(), logs.end());
  if (!c.force)
    throw UsageError(fmt::format("-o {}: already holds a trace ({}); give a new or empty directory, or --force to replace it",
                                 c.dir, logs.front()));
  for (const auto& name : logs)
    if (::unlink((c.dir + "/" + name).c_str()) != 0)
      throw UsageError(fmt::format("-o {}: cannot remove {}: {}", c.dir, name, std::strerror(errno)));
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"mpiadvise-synth: write the logs of a synthetic MPI run, as libmpiadvise writes a traced one",
               "mpiadvise-synth"};
  app.set_version_flag("--version", std::string("mpiadvise-synth ") + kVersion);
  Config c;
  std::string ranks, events, bytes = "8192", compute = "10", seed = "1", threads;
  app.add_option("--ranks", ranks, "ranks of the run (1 to 65536)")->type_name("N")->required();
  app.add_option("--events", events, "MPI calls per rank, about (MPI_Init and MPI_Finalize included)")->type_name("E")->required();
  app.add_option("--pattern", c.pattern_name, "halo, pipeline, alltoall, allreduce or imbalance")->type_name("NAME")->required();
  app.add_option("--bytes", bytes, "bytes of each message (alltoall: for each peer; allreduce: the vector reduced); default 8192")
      ->type_name("B");
  app.add_option("--compute-us", compute, "microseconds of computation in each iteration; default 10")->type_name("C");
  app.add_option("--seed", seed, "seed of the computation's variation (+-2%); default 1")->type_name("S");
  app.add_option("--threads", threads, "threads encoding and compressing; default the CPUs")->type_name("T");
  app.add_flag("--force", c.force, "replace the rank logs the directory holds");
  app.add_option("-o,--output", c.dir, "the log directory to write (made if need be)")->type_name("DIR")->required();
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::fprintf(stderr, "mpiadvise-synth: %s (mpiadvise-synth --help lists the options)\n", e.what());
    return 2;
  }
  try {
    if (c.pattern_name == "halo") c.pattern = Pattern::Halo;
    else if (c.pattern_name == "pipeline") c.pattern = Pattern::Pipeline;
    else if (c.pattern_name == "alltoall") c.pattern = Pattern::Alltoall;
    else if (c.pattern_name == "allreduce") c.pattern = Pattern::Allreduce;
    else if (c.pattern_name == "imbalance") c.pattern = Pattern::Imbalance;
    else
      throw UsageError(fmt::format("--pattern: '{}' is not halo, pipeline, alltoall, allreduce or imbalance", c.pattern_name));
    c.ranks = static_cast<int>(parse_count("--ranks", ranks, 1, kMaxRanks, false));
    if (c.pattern == Pattern::Pipeline && c.ranks < 2) throw UsageError("--ranks: a pipeline needs at least 2 ranks");
    c.calls_per_iteration = c.pattern == Pattern::Alltoall || c.pattern == Pattern::Allreduce ? 1
                            : c.pattern == Pattern::Pipeline                                   ? 2
                                                                                               : 5;
    c.events = parse_count("--events", events, 2 + static_cast<uint64_t>(c.calls_per_iteration), kMaxEvents, false);
    c.iterations = (c.events - 2) / static_cast<uint64_t>(c.calls_per_iteration);
    c.bytes = parse_count("--bytes", bytes, 0, kMaxBytes, true);
    c.compute_us = parse_us("--compute-us", compute);
    c.seed = parse_count("--seed", seed, 0, UINT64_MAX, false);
    unsigned cpus = std::thread::hardware_concurrency();
    c.threads = threads.empty() ? static_cast<int>(std::clamp(cpus, 1u, 64u))
                                : static_cast<int>(parse_count("--threads", threads, 1, 256, false));
    if (c.dir.empty()) throw UsageError("-o: the log directory is an empty name");
    prepare_dir(c);
  } catch (const UsageError& e) {
    std::fprintf(stderr, "mpiadvise-synth: %s\n", e.what());
    return 2;
  }
  try {
    Generator g(c);
    return g.run();
  } catch (const std::system_error& e) {  // a log that cannot be created: the path is in the message
    std::fprintf(stderr, "mpiadvise-synth: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mpiadvise-synth: %s\n", e.what());
    return 1;
  }
}

// ---- the fictional programs --------------------------------------------------------------------------------------------
// Each function stands for the MPI program its pattern describes: each of its lines below holds one MPI
// call of that program, and synth_here() takes the return address of the call made on it, as the
// tracer's wrapper takes the return address of the program's MPI call. The line tables say these lines
// are in /synthetic/synth_halo.c, ...: the report names each call site "/synthetic/synth_halo.c:LINE".
// Nothing may follow these blocks: their #line directives renumber the rest of the file.
#if defined(__clang__)
#define SYNTH_SITE_ATTR __attribute__((noinline))
#else
#define SYNTH_SITE_ATTR __attribute__((noinline, noipa))
#endif
extern "C" SYNTH_SITE_ATTR uint64_t synth_here(void);
extern "C" SYNTH_SITE_ATTR uint64_t synth_here(void) {
  asm volatile("" ::: "memory");
  return reinterpret_cast<uint64_t>(__builtin_extract_return_addr(__builtin_return_address(0)));
}

#line 1 "/synthetic/synth_halo.c"
/* synth_halo.c: a 1-D periodic halo exchange; each iteration computes, then trades halos with both
 * neighbours (tag 1 travels right, tag 2 left) */
extern "C" SYNTH_SITE_ATTR void synth_halo(uint64_t* site) {
  site[kInit] = synth_here();        /* MPI_Init(&argc, &argv); */
  site[kIrecvLeft] = synth_here();   /* MPI_Irecv(from_left, n, MPI_BYTE, left, 1, MPI_COMM_WORLD, &req[0]); */
  site[kIrecvRight] = synth_here();  /* MPI_Irecv(from_right, n, MPI_BYTE, right, 2, MPI_COMM_WORLD, &req[1]); */
  site[kIsendRight] = synth_here();  /* MPI_Isend(to_right, n, MPI_BYTE, right, 1, MPI_COMM_WORLD, &req[2]); */
  site[kIsendLeft] = synth_here();   /* MPI_Isend(to_left, n, MPI_BYTE, left, 2, MPI_COMM_WORLD, &req[3]); */
  site[kWaitall] = synth_here();     /* MPI_Waitall(4, req, statuses); */
  site[kFinalize] = synth_here();    /* MPI_Finalize(); */
}

#line 1 "/synthetic/synth_imbalance.c"
/* synth_imbalance.c: the halo exchange of synth_halo.c, rank r computing 1 + (r % 4) / 4 times as long */
extern "C" SYNTH_SITE_ATTR void synth_imbalance(uint64_t* site) {
  site[kInit] = synth_here();        /* MPI_Init(&argc, &argv); */
  site[kIrecvLeft] = synth_here();   /* MPI_Irecv(from_left, n, MPI_BYTE, left, 1, MPI_COMM_WORLD, &req[0]); */
  site[kIrecvRight] = synth_here();  /* MPI_Irecv(from_right, n, MPI_BYTE, right, 2, MPI_COMM_WORLD, &req[1]); */
  site[kIsendRight] = synth_here();  /* MPI_Isend(to_right, n, MPI_BYTE, right, 1, MPI_COMM_WORLD, &req[2]); */
  site[kIsendLeft] = synth_here();   /* MPI_Isend(to_left, n, MPI_BYTE, left, 2, MPI_COMM_WORLD, &req[3]); */
  site[kWaitall] = synth_here();     /* MPI_Waitall(4, req, statuses); */
  site[kFinalize] = synth_here();    /* MPI_Finalize(); */
}

#line 1 "/synthetic/synth_pipeline.c"
/* synth_pipeline.c: rank r receives from r - 1, computes, sends to r + 1 */
extern "C" SYNTH_SITE_ATTR void synth_pipeline(uint64_t* site) {
  site[kInit] = synth_here();      /* MPI_Init(&argc, &argv); */
  site[kRecv] = synth_here();      /* MPI_Recv(buf, n, MPI_BYTE, rank - 1, 0, MPI_COMM_WORLD, &status); */
  site[kSend] = synth_here();      /* MPI_Send(buf, n, MPI_BYTE, rank + 1, 0, MPI_COMM_WORLD); */
  site[kFinalize] = synth_here();  /* MPI_Finalize(); */
}

#line 1 "/synthetic/synth_alltoall.c"
/* synth_alltoall.c: each iteration computes, then exchanges n bytes with every rank */
extern "C" SYNTH_SITE_ATTR void synth_alltoall(uint64_t* site) {
  site[kInit] = synth_here();      /* MPI_Init(&argc, &argv); */
  site[kAlltoall] = synth_here();  /* MPI_Alltoall(out, n, MPI_BYTE, in, n, MPI_BYTE, MPI_COMM_WORLD); */
  site[kFinalize] = synth_here();  /* MPI_Finalize(); */
}

#line 1 "/synthetic/synth_allreduce.c"
/* synth_allreduce.c: each iteration computes, then sums n bytes of doubles over every rank (the dot
 * products of a conjugate-gradient solver) */
extern "C" SYNTH_SITE_ATTR void synth_allreduce(uint64_t* site) {
  site[kInit] = synth_here();       /* MPI_Init(&argc, &argv); */
  site[kAllreduce] = synth_here();  /* MPI_Allreduce(mine, sum, count, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD): n bytes */
  site[kFinalize] = synth_here();   /* MPI_Finalize(); */
}

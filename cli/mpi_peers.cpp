// The replay spread over MPI processes (analyzer/replay_peers.hpp): `mpirun -np K mpiadvise report ...`.
// Built once per MPI with its compiler wrapper into lib/mpiadvise/MPI/mpiadvise-mpi, the whole command
// with this transport; the mpiadvise command runs it in its own place when an MPI launcher started it with
// more than one process (cli/spread.cpp).
#include <mpi.h>

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "commands.hpp"
#include "replay_peers.hpp"
#include "spread.hpp"

namespace mpiadvise::cli {
namespace {

int as_count(uint64_t n) {
  if (n > static_cast<uint64_t>(INT_MAX))
    throw std::runtime_error("the replay spread over processes exchanges more than 2^31 updates in one round");
  return static_cast<int>(n);
}

// MPI counts are ints: the gather of the results goes by MPI_Allgatherv while the whole fits one piece,
// else each process's part goes by MPI_Bcast in pieces. The piece: 1 GiB, or MPIADVISE_SPREAD_PIECE
// bytes (tests take the second way with small results); 0 for a value that is not such a number.
uint64_t piece_bytes() {
  constexpr uint64_t kPiece = uint64_t{1} << 30;
  const char* v = std::getenv("MPIADVISE_SPREAD_PIECE");
  if (!v || !*v) return kPiece;
  char* end = nullptr;
  const unsigned long long n = std::strtoull(v, &end, 10);
  return *end || n > kPiece || v[0] == '-' ? 0 : n;
}

class MpiPeers final : public ReplayPeers {
 public:
  explicit MpiPeers(uint64_t piece) : piece_(piece) {
    MPI_Comm_dup(MPI_COMM_WORLD, &comm_);
    MPI_Comm_size(comm_, &size_);
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm node;
    MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    MPI_Comm_size(node, &on_node_);
    MPI_Comm_free(&node);
    MPI_Type_contiguous(static_cast<int>(sizeof(PeerUpdate)), MPI_BYTE, &update_);
    MPI_Type_commit(&update_);
  }
  ~MpiPeers() override {
    MPI_Type_free(&update_);
    MPI_Comm_free(&comm_);
  }
  int size() const override { return size_; }
  int index() const override { return rank_; }
  int on_node() const override { return on_node_; }

  // One reduction says how many updates each process is to receive and how many all send; then each
  // process's updates for another go as one message, received in process order.
  uint64_t exchange(std::vector<std::vector<PeerUpdate>>& out, std::vector<PeerUpdate>& in) override {
    const size_t k = static_cast<size_t>(size_);
    std::vector<uint64_t> counts(k + 1, 0), sums(k + 1, 0);
    for (size_t p = 0; p < k; p++) {
      counts[p] = out[p].size();
      counts[k] += out[p].size();
    }
    MPI_Allreduce(counts.data(), sums.data(), size_ + 1, MPI_UINT64_T, MPI_SUM, comm_);
    if (sums[k] == 0) return 0;
    constexpr int kTag = 1;
    std::vector<MPI_Request> sends;
    for (size_t p = 0; p < k; p++)
      if (!out[p].empty()) {
        sends.emplace_back();
        MPI_Isend(out[p].data(), as_count(out[p].size()), update_, static_cast<int>(p), kTag, comm_, &sends.back());
      }
    std::vector<std::vector<PeerUpdate>> from(k);
    for (uint64_t got = 0; got < sums[static_cast<size_t>(rank_)];) {
      MPI_Status st;
      MPI_Probe(MPI_ANY_SOURCE, kTag, comm_, &st);
      int n = 0;
      MPI_Get_count(&st, update_, &n);
      auto& part = from[static_cast<size_t>(st.MPI_SOURCE)];
      part.resize(static_cast<size_t>(n));
      MPI_Recv(part.data(), n, update_, st.MPI_SOURCE, kTag, comm_, MPI_STATUS_IGNORE);
      got += part.size();
    }
    MPI_Waitall(static_cast<int>(sends.size()), sends.data(), MPI_STATUSES_IGNORE);
    for (auto& o : out) o.clear();
    for (const auto& part : from) in.insert(in.end(), part.begin(), part.end());
    return sums[k];
  }

  std::vector<std::vector<uint8_t>> allgather(const std::vector<uint8_t>& mine) override {
    const size_t k = static_cast<size_t>(size_);
    uint64_t n = mine.size();
    std::vector<uint64_t> sizes(k);
    MPI_Allgather(&n, 1, MPI_UINT64_T, sizes.data(), 1, MPI_UINT64_T, comm_);
    uint64_t total = 0;
    for (uint64_t s : sizes) total += s;
    std::vector<std::vector<uint8_t>> parts(k);
    if (total > piece_) {  // by pieces; below, total <= piece_ <= 1 GiB: every count and offset fits an int
      for (size_t p = 0; p < k; p++) {
        auto& part = parts[p];
        if (p == static_cast<size_t>(rank_)) part = mine;
        else part.resize(sizes[p]);
        for (uint64_t at = 0; at < sizes[p]; at += piece_)
          MPI_Bcast(part.data() + at, static_cast<int>(std::min(piece_, sizes[p] - at)), MPI_BYTE, static_cast<int>(p), comm_);
      }
      return parts;
    }
    std::vector<int> counts(k), at(k);
    for (size_t p = 0, from = 0; p < k; from += sizes[p], p++) {
      at[p] = static_cast<int>(from);
      counts[p] = static_cast<int>(sizes[p]);
    }
    std::vector<uint8_t> all(total);
    MPI_Allgatherv(mine.data(), static_cast<int>(n), MPI_BYTE, all.data(), counts.data(), at.data(), MPI_BYTE, comm_);
    for (size_t p = 0; p < k; p++) parts[p].assign(all.begin() + at[p], all.begin() + at[p] + counts[p]);
    return parts;
  }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  MPI_Datatype update_ = MPI_DATATYPE_NULL;  // one PeerUpdate: counts in updates, not bytes
  int size_ = 1, rank_ = 0, on_node_ = 1;
  uint64_t piece_;  // piece_bytes()
};

MpiPeers* g_peers = nullptr;

void abort_all(int status) { MPI_Abort(MPI_COMM_WORLD, status); }

#ifdef OPEN_MPI
constexpr const char* kBuiltFor = "Open MPI";
#else
constexpr const char* kBuiltFor = "MPICH";
#endif

}  // namespace

SpreadSession::SpreadSession(int* argc, char*** argv) {
  int provided = 0;  // a process alone may run its replays on threads; only the main thread calls MPI
  MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
  int size = 1, rank = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (const char* said = std::getenv("MPIADVISE_SPREAD_PROCESSES"); said && std::atoi(said) != size) {
    if (rank == 0)
      std::fprintf(stderr,
                   "mpiadvise: the launcher started %s processes, but MPI sees %d in this job: was it another MPI's "
                   "launcher? mpiadvise-mpi is built for %s; run mpiadvise without an MPI launcher\n",
                   said, size, kBuiltFor);
    MPI_Finalize();
    std::exit(kUsage);
  }
  const uint64_t piece = piece_bytes();
  if (piece == 0) {
    if (rank == 0)
      std::fprintf(stderr, "mpiadvise: MPIADVISE_SPREAD_PIECE=%s: not a number of bytes from 1 to 1073741824\n",
                   std::getenv("MPIADVISE_SPREAD_PIECE"));
    MPI_Finalize();
    std::exit(kUsage);
  }
  if (size < 2) return;
  g_peers = new MpiPeers(piece);
  set_replay_peers(g_peers);
  if (rank != 0) {  // one report, one set of messages: process 0's; a failure goes to the saved one
    const int saved = dup(STDERR_FILENO);
    const int null = open("/dev/null", O_WRONLY);
    if (null >= 0) {
      dup2(null, STDOUT_FILENO);
      dup2(null, STDERR_FILENO);
      close(null);
    }
    set_spread_abort(abort_all, saved >= 0 ? saved : STDERR_FILENO);
  } else {
    set_spread_abort(abort_all, STDERR_FILENO);
  }
}

SpreadSession::~SpreadSession() {
  set_replay_peers(nullptr);
  delete g_peers;
  g_peers = nullptr;
  MPI_Finalize();
}

}  // namespace mpiadvise::cli

// MPICH 4.0's collectives (ch4 device, as Debian builds it: ch4:ucx with the POSIX shared-memory
// module), as mirrored from its source (tag v4.0.2):
//   ch4 picks a composition by the JSON of maint/tuning/coll/ch4/generic.json (src/mpid/ch4/src/
//   ch4_coll_impl.h): on a communicator whose ranks share nodes ("comm_hierarchy=parent",
//   src/mpi/comm/commutil.c: MPIR_Comm_create_subcomms), Bcast, Reduce, Allreduce and Barrier run in
//   shared memory within each node (POSIX release/gather, src/mpid/ch4/shm/posix/release_gather/) and
//   over the network between node roots; an MPICH without the POSIX module (ch4:ucx, as Debian builds
//   it: src/mpid/ch4/subconfigure.m4) runs the node parts as MPIR algorithms over UCX instead; everything else, and those too on a communicator of one rank
//   per node, goes to the MPIR algorithms of src/mpi/coll/*/ picked by maint/tuning/coll/mpir/generic.json.
// MPIC_Sendrecv (src/mpi/coll/helper_fns.c) posts the receive and the send and waits for both.
// The POSIX release/gather collectives copy through shared-memory cells instead of sending messages, and
// synchronise through per-rank flags that let a rank run a few calls ahead: the data are approximated as
// messages on the same trees and the flags followed as they are (see shm_bcast), and reported so.
// The operation is taken as commutative and built in (the log does not name it).
#include <algorithm>
#include <map>
#include <numeric>

#include "call_ids.h"
#include "collectives_build.hpp"

namespace mpiadvise::coll {
namespace {

constexpr uint64_t kShmCellBytes = 32768 / 4;  // MPIR_CVAR_{BCAST,REDUCE}_INTRANODE_BUFFER_TOTAL_SIZE / NUM_CELLS
constexpr int kShmBcastTreeK = 64;             // MPIR_CVAR_BCAST_INTRANODE_TREE_KVAL
constexpr int kShmReduceTreeK = 4;             // MPIR_CVAR_REDUCE_INTRANODE_TREE_KVAL
constexpr int kAlltoallThrottle = 32;          // MPIR_CVAR_ALLTOALL_THROTTLE

// MPIC_Sendrecv: irecv, isend, wait for both
void sendrecv(Proc& p, int dest, uint64_t send_bytes, int source, uint64_t recv_bytes) {
  uint32_t r = p.irecv(source, recv_bytes);
  p.isend(dest, send_bytes);
  p.wait(r, 2);
}

// ---- Bcast (src/mpi/coll/bcast/) -----------------------------------------------------------------------
// bcast_intra_binomial.c: MPIR_Bcast_intra_binomial
void bcast_binomial(Builder& b, const Group& g, int root, uint64_t nbytes) {
  const int size = g.size();
  for (int rank = 0; rank < size; rank++) {
    Proc p(b, g, rank);
    int rel = (rank - root + size) % size, mask = 1;
    for (; mask < size; mask <<= 1)
      if (rel & mask) {
        p.recv((rank - mask + size) % size, nbytes);
        break;
      }
    for (mask >>= 1; mask > 0; mask >>= 1)
      if (rel + mask < size) p.send((rank + mask) % size, nbytes);
  }
}

// bcast_utils.c: MPII_Scatter_for_bcast, in virtual rank order so that a child's count is what its
// parent sent
void scatter_for_bcast(Builder& b, const Group& g, int root, uint64_t nbytes) {
  const int size = g.size();
  const int64_t n = static_cast<int64_t>(nbytes), ss = (n + size - 1) / size;
  std::vector<int64_t> got(size, 0);
  for (int rel = 0; rel < size; rel++) {
    int rank = (rel + root) % size;
    Proc p(b, g, rank);
    int64_t curr = rel == 0 ? n : 0;
    int mask = 1;
    for (; mask < size; mask <<= 1)
      if (rel & mask) {
        int64_t recv_size = n - rel * ss;
        if (recv_size > 0) {
          p.recv((rank - mask + size) % size, static_cast<uint64_t>(recv_size));
          curr = got[rel];
        }
        break;
      }
    for (mask >>= 1; mask > 0; mask >>= 1)
      if (rel + mask < size) {
        int64_t send_size = curr - ss * mask;
        if (send_size > 0) {
          p.send((rank + mask) % size, static_cast<uint64_t>(send_size));
          got[rel + mask] = send_size;
          curr -= send_size;
        }
      }
    p.next_round();
  }
}

// bcast_intra_scatter_recursive_doubling_allgather.c (chosen for power-of-two sizes only)
void bcast_scatter_rd_allgather(Builder& b, const Group& g, int root, uint64_t nbytes) {
  const int size = g.size();
  scatter_for_bcast(b, g, root, nbytes);
  const int64_t n = static_cast<int64_t>(nbytes), ss = (n + size - 1) / size;
  std::vector<int64_t> curr(size);
  for (int rel = 0; rel < size; rel++) curr[rel] = std::max<int64_t>(0, std::min(ss, n - rel * ss));
  for (int mask = 1, i = 0; mask < size; mask <<= 1, i++) {
    std::vector<int64_t> before = curr;
    for (int rel = 0; rel < size; rel++) {
      int rel_dst = rel ^ mask;
      if (rel_dst >= size) continue;
      Proc p(b, g, (rel + root) % size);
      int64_t recv_offset = (rel_dst >> i << i) * ss;
      sendrecv(p, (rel_dst + root) % size, static_cast<uint64_t>(before[rel]), (rel_dst + root) % size,
               static_cast<uint64_t>(std::max<int64_t>(0, n - recv_offset)));
      curr[rel] += before[rel_dst];
      p.next_round();
    }
  }
}

// bcast_intra_scatter_ring_allgather.c
void bcast_scatter_ring_allgather(Builder& b, const Group& g, int root, uint64_t nbytes) {
  const int size = g.size();
  b.expect_pairs(size);
  scatter_for_bcast(b, g, root, nbytes);
  const int64_t n = static_cast<int64_t>(nbytes), ss = (n + size - 1) / size;
  auto block = [&](int rel) { return static_cast<uint64_t>(std::max<int64_t>(0, std::min(ss, n - rel * ss))); };
  for (int rank = 0; rank < size; rank++) {
    Proc p(b, g, rank);
    int left = (size + rank - 1) % size, right = (rank + 1) % size, j = rank, jnext = left;
    for (int i = 1; i < size; i++) {
      sendrecv(p, right, block((j - root + size) % size), left, block((jnext - root + size) % size));
      j = jnext;
      jnext = (size + jnext - 1) % size;
      p.next_round();
    }
  }
}

// maint/tuning/coll/mpir/generic.json, collective=bcast
std::string mpir_bcast(Builder& b, const Group& g, int root, uint64_t nbytes) {
  const int size = g.size();
  if (size < 2 || nbytes == 0) return "no messages";
  if (size < 8 || nbytes <= 12288) {
    bcast_binomial(b, g, root, nbytes);
    return "MPIR binomial (bcast_intra_binomial.c: MPIR_Bcast_intra_binomial)";
  }
  if (is_pow2(size) && nbytes <= 524288) {
    bcast_scatter_rd_allgather(b, g, root, nbytes);
    return "MPIR scatter + recursive doubling allgather (bcast_intra_scatter_recursive_doubling_allgather.c)";
  }
  bcast_scatter_ring_allgather(b, g, root, nbytes);
  return "MPIR scatter + ring allgather (bcast_intra_scatter_ring_allgather.c)";
}

// ---- the POSIX release/gather collectives (src/mpid/ch4/shm/posix/release_gather/) --------------------
// Every rank of the node communicator keeps two counters in shared memory (release_gather.h): its release
// flag and its gather flag, raised once per cell by every Bcast, Reduce, Allreduce and Barrier on the
// communicator. The trees are rooted at rank 0; a root elsewhere hands its data to rank 0 (Bcast) or gets
// the result from it (Reduce) by MPIC_Send/MPIC_Recv. Data moving through a cell is modelled as a message
// from the rank that writes it to the rank that reads it; the flags are FlagSet/FlagWait steps.
constexpr int kShmNumCells = 4;  // MPIR_CVAR_{BCAST,REDUCE}_INTRANODE_NUM_CELLS: a cell is reused 4 cells on
constexpr uint8_t kShmLag = kShmNumCells - 1;  // the "relaxation" of the step that guards a cell's reuse

// k-ary tree over the group, rooted at 0: children of r are k*r+1 .. k*r+k
std::vector<int> kary_children(int size, int rank, int k) {
  std::vector<int> c;
  for (int i = 1; i <= k; i++)
    if (k * rank + i < size) c.push_back(k * rank + i);
  return c;
}
int kary_parent(int rank, int k) { return (rank - 1) / k; }

// each cell's bytes: MPIR_Algo_calculate_pipeline_chunk_info over cells of kShmCellBytes; refused first
// where the size ranks' steps would be past the bound: each rank raises two flags for each cell
std::vector<uint64_t> shm_cells(const Builder& b, int size, uint64_t nbytes) {
  b.expect_each(size, 2 * (nbytes / kShmCellBytes + (nbytes % kShmCellBytes != 0)));
  std::vector<uint64_t> cells;
  for (uint64_t done = 0; done < nbytes; done += kShmCellBytes) cells.push_back(std::min(kShmCellBytes, nbytes - done));
  return cells;
}

// MPIDI_POSIX_mpi_bcast_release_gather, per cell: release (rank 0 fills the cell and raises its flag; a
// child waits for its parent's flag, copies the cell out and raises its own), then gather (a parent may
// not fill a cell again until each child has gathered the cell NUM_CELLS - 1 before: relaxation 3).
void shm_bcast(Builder& b, const Group& g, int root, uint64_t nbytes) {
  const int size = g.size();
  if (size < 2 || nbytes == 0) return;
  const std::vector<uint64_t> cells = shm_cells(b, size, nbytes);
  for (int rank = 0; rank < size; rank++) {
    Proc p(b, g, rank);
    const auto children = kary_children(size, rank, kShmBcastTreeK);
    for (uint64_t bytes : cells) {
      if (root != 0 && rank == root) p.send(0, bytes);
      if (root != 0 && rank == 0) p.recv(root, bytes);
      if (rank != 0) {
        const int parent = kary_parent(rank, kShmBcastTreeK);
        rank == root ? p.flag_wait(parent, kReleaseFlag, 0) : p.recv(parent, bytes);
      }
      p.flag_set(kReleaseFlag);
      uint32_t first = p.next_request();
      for (int child : children)
        if (child != root) p.isend(child, bytes);
      p.wait_since(first);
      for (int child : children) p.flag_wait(child, kGatherFlag, kShmLag);
      p.flag_set(kGatherFlag);
    }
  }
}

// MPIDI_POSIX_mpi_reduce_release_gather, per cell: release (a rank may write the cell once its parent in
// the 4-ary tree has arrived at the cell NUM_CELLS - 1 before: relaxation 3), then gather (a parent waits
// for each child's cell and reduces it into its own: relaxation 0); rank 0 sends the result to a root
// elsewhere.
void shm_reduce(Builder& b, const Group& g, int root, uint64_t nbytes) {
  const int size = g.size();
  if (size < 2 || nbytes == 0) return;
  const std::vector<uint64_t> cells = shm_cells(b, size, nbytes);
  for (int rank = 0; rank < size; rank++) {
    Proc p(b, g, rank);
    const auto children = kary_children(size, rank, kShmReduceTreeK);
    for (uint64_t bytes : cells) {
      if (rank != 0) p.flag_wait(kary_parent(rank, kShmReduceTreeK), kReleaseFlag, kShmLag);
      p.flag_set(kReleaseFlag);
      for (int child : children) {
        p.recv(child, bytes);
        p.reduce(bytes);
      }
      p.flag_set(kGatherFlag);
      if (rank != 0) p.send(kary_parent(rank, kShmReduceTreeK), bytes);
      if (root != 0 && rank == 0) p.send(root, bytes);
      if (root != 0 && rank == root) p.recv(0, bytes);
    }
  }
}

// MPIDI_POSIX_mpi_allreduce_release_gather, per cell: gather up the 4-ary reduce tree (relaxation 0), then
// release down the 64-ary bcast tree, every rank copying the result out of rank 0's cell (relaxation 0).
void shm_allreduce(Builder& b, const Group& g, uint64_t nbytes) {
  const int size = g.size();
  if (size < 2 || nbytes == 0) return;
  const std::vector<uint64_t> cells = shm_cells(b, size, nbytes);
  for (int rank = 0; rank < size; rank++) {
    Proc p(b, g, rank);
    for (uint64_t bytes : cells) {
      for (int child : kary_children(size, rank, kShmReduceTreeK)) {
        p.recv(child, bytes);
        p.reduce(bytes);
      }
      p.flag_set(kGatherFlag);
      if (rank != 0) p.send(kary_parent(rank, kShmReduceTreeK), bytes);
      p.next_round();
      if (rank != 0) p.recv(kary_parent(rank, kShmBcastTreeK), bytes);
      p.flag_set(kReleaseFlag);
      uint32_t first = p.next_request();
      for (int child : kary_children(size, rank, kShmBcastTreeK)) p.isend(child, bytes);
      p.wait_since(first);
    }
  }
}

// MPIDI_POSIX_mpi_barrier_release_gather: gather then release, both on the bcast tree (relaxation 0)
void shm_barrier(Builder& b, const Group& g) {
  const int size = g.size();
  for (int rank = 0; rank < size; rank++) {
    Proc p(b, g, rank);
    const auto children = kary_children(size, rank, kShmBcastTreeK);
    for (int child : children) p.recv(child, 0);
    p.flag_set(kGatherFlag);
    if (rank != 0) p.send(kary_parent(rank, kShmBcastTreeK), 0);
    p.next_round();
    if (rank != 0) p.recv(kary_parent(rank, kShmBcastTreeK), 0);
    p.flag_set(kReleaseFlag);
    uint32_t first = p.next_request();
    for (int child : children) p.isend(child, 0);
    p.wait_since(first);
  }
}

// ---- Reduce, Allreduce (src/mpi/coll/reduce/, allreduce/) ----------------------------------------------
// reduce_intra_binomial.c (commutative: relative to the root)
void reduce_binomial(Builder& b, const Group& g, int root, uint64_t nbytes) {
  const int size = g.size();
  for (int rank = 0; rank < size; rank++) {
    Proc p(b, g, rank);
    int rel = (rank - root + size) % size;
    for (int mask = 1; mask < size; mask <<= 1) {
      if ((mask & rel) == 0) {
        int source = rel | mask;
        if (source < size) {
          p.recv((source + root) % size, nbytes);
          p.reduce(nbytes);
        }
      } else {
        p.send(((rel & ~mask) + root) % size, nbytes);
        break;
      }
    }
  }
}

// The element counts of Rabenseifner's halving in MPICH (cnts: count / pof2, the first count % pof2 one
// more)
std::vector<uint64_t> pof2_counts(uint64_t count, int pof2) {
  std::vector<uint64_t> cnts(pof2, count / pof2);
  for (uint64_t i = 0; i < count % pof2; i++) cnts[i]++;
  return cnts;
}

uint64_t sum(const std::vector<uint64_t>& v, int from, int to) {
  uint64_t s = 0;
  for (int i = from; i < to; i++) s += v[i];
  return s;
}

// allreduce_intra_recursive_doubling.c
void allreduce_rd(Builder& b, const Group& g, uint64_t nbytes) {
  const int size = g.size(), pof2 = pow2_floor(size), rem = size - pof2;
  for (int rank = 0; rank < size; rank++) {
    Proc p(b, g, rank);
    int newrank;
    if (rank < 2 * rem) {
      if (rank % 2 == 0) {
        p.send(rank + 1, nbytes);
        newrank = -1;
      } else {
        p.recv(rank - 1, nbytes);
        p.reduce(nbytes);
        newrank = rank / 2;
      }
    } else {
      newrank = rank - rem;
    }
    p.next_round();
    if (newrank != -1)
      for (int mask = 1; mask < pof2; mask <<= 1) {
        int newdst = newrank ^ mask;
        int dst = newdst < rem ? newdst * 2 + 1 : newdst + rem;
        sendrecv(p, dst, nbytes, dst, nbytes);
        p.reduce(nbytes);
        p.next_round();
      }
    if (rank < 2 * rem) {
      if (rank % 2) p.send(rank - 1, nbytes);
      else p.recv(rank + 1, nbytes);
    }
  }
}

// allreduce_intra_reduce_scatter_allgather.c (odd ranks of the first 2*rem take part) and
// reduce_intra_reduce_scatter_gather.c (even ranks do): Rabenseifner
void rabenseifner(Builder& b, const Group& g, Vec v, bool allreduce, int root) {
  const int size = g.size(), pof2 = pow2_floor(size), rem = size - pof2;
  const auto cnts = pof2_counts(v.count, pof2);
  auto real_rank = [&](int newr) { return newr < rem ? newr * 2 + (allreduce ? 1 : 0) : newr + rem; };
  std::vector<int> newrank(size);
  std::vector<int> send_idx(size, 0), last_idx(size, pof2);
  for (int rank = 0; rank < size; rank++) {
    Proc p(b, g, rank);
    const bool leaves = allreduce ? rank % 2 == 0 : rank % 2 != 0;
    if (rank < 2 * rem) {
      if (leaves) {
        p.send(allreduce ? rank + 1 : rank - 1, v.total());
        newrank[rank] = -1;
      } else {
        p.recv(allreduce ? rank - 1 : rank + 1, v.total());
        p.reduce(v.total());
        newrank[rank] = rank / 2;
      }
    } else {
      newrank[rank] = rank - rem;
    }
    p.next_round();
    if (newrank[rank] == -1) continue;
    int recv_idx = 0, si = 0, li = pof2;
    for (int mask = 1; mask < pof2;) {
      int newdst = newrank[rank] ^ mask, dst = real_rank(newdst);
      uint64_t scnt, rcnt;
      if (newrank[rank] < newdst) {
        si = recv_idx + pof2 / (mask * 2);
        scnt = sum(cnts, si, li);
        rcnt = sum(cnts, recv_idx, si);
      } else {
        recv_idx = si + pof2 / (mask * 2);
        scnt = sum(cnts, si, recv_idx);
        rcnt = sum(cnts, recv_idx, li);
      }
      sendrecv(p, dst, v.bytes(scnt), dst, v.bytes(rcnt));
      p.reduce(v.bytes(rcnt));
      p.next_round();
      si = recv_idx;
      mask <<= 1;
      if (mask < pof2) li = recv_idx + pof2 / mask;
    }
    send_idx[rank] = si;
    last_idx[rank] = li;
  }
  if (allreduce) {
    for (int rank = 0; rank < size; rank++) {
      Proc p(b, g, rank);
      if (newrank[rank] != -1) {
        int si = send_idx[rank], li = last_idx[rank], recv_idx = 0;
        for (int mask = pof2 >> 1; mask > 0; mask >>= 1) {
          int newdst = newrank[rank] ^ mask, dst = real_rank(newdst);
          uint64_t scnt, rcnt;
          if (newrank[rank] < newdst) {
            if (mask != pof2 / 2) li = li + pof2 / (mask * 2);
            recv_idx = si + pof2 / (mask * 2);
            scnt = sum(cnts, si, recv_idx);
            rcnt = sum(cnts, recv_idx, li);
          } else {
            recv_idx = si - pof2 / (mask * 2);
            scnt = sum(cnts, si, li);
            rcnt = sum(cnts, recv_idx, si);
          }
          sendrecv(p, dst, v.bytes(scnt), dst, v.bytes(rcnt));
          p.next_round();
          if (newrank[rank] > newdst) si = recv_idx;
        }
      }
      if (rank < 2 * rem) {
        if (rank % 2) p.send(rank - 1, v.total());
        else p.recv(rank + 1, v.total());
      }
    }
    return;
  }
  // the binomial gather of reduce_intra_reduce_scatter_gather.c
  int newroot;
  if (root < 2 * rem) {
    if (root % 2 != 0) {
      for (int rank = 0; rank < size; rank++) {
        if (rank == root) {
          Proc(b, g, rank).recv(0, v.bytes(cnts[0]));
          newrank[rank] = 0;
          send_idx[rank] = 0;
          last_idx[rank] = 2;
        } else if (newrank[rank] == 0) {
          Proc(b, g, rank).send(root, v.bytes(cnts[0]));
          newrank[rank] = -1;
        }
      }
      newroot = 0;
    } else {
      newroot = root / 2;
    }
  } else {
    newroot = root - rem;
  }
  for (int rank = 0; rank < size; rank++) {
    if (newrank[rank] == -1) continue;
    Proc p(b, g, rank);
    int j = ceil_log2(pof2) - 1, si = send_idx[rank], li = last_idx[rank], recv_idx = 0;
    for (int mask = pof2 >> 1; mask > 0; mask >>= 1, j--) {
      int newdst = newrank[rank] ^ mask, dst = real_rank(newdst);
      if (newdst == 0 && root < 2 * rem && root % 2 != 0) dst = root;
      uint64_t scnt, rcnt;
      if (newrank[rank] < newdst) {
        if (mask != pof2 / 2) li = li + pof2 / (mask * 2);
        recv_idx = si + pof2 / (mask * 2);
        scnt = sum(cnts, si, recv_idx);
        rcnt = sum(cnts, recv_idx, li);
      } else {
        recv_idx = si - pof2 / (mask * 2);
        scnt = sum(cnts, si, li);
        rcnt = sum(cnts, recv_idx, si);
      }
      if ((newdst >> j << j) == (newroot >> j << j)) {
        p.send(dst, v.bytes(scnt));
        break;
      }
      p.recv(dst, v.bytes(rcnt));
      if (newrank[rank] > newdst) si = recv_idx;
    }
  }
}

// mpir/generic.json, collective=allreduce (built-in operation)
std::string mpir_allreduce(Builder& b, const Group& g, Vec v) {
  if (g.size() < 2 || v.total() == 0) return "no messages";
  if (v.total() <= 8 || v.count < static_cast<uint64_t>(pow2_floor(g.size()))) {
    allreduce_rd(b, g, v.total());
    return "MPIR recursive doubling (allreduce_intra_recursive_doubling.c)";
  }
  rabenseifner(b, g, v, true, 0);
  return "MPIR reduce-scatter + allgather (allreduce_intra_reduce_scatter_allgather.c)";
}

// mpir/generic.json, collective=reduce (built-in operation)
std::string mpir_reduce(Builder& b, const Group& g, int root, Vec v) {
  if (g.size() < 2 || v.total() == 0) return "no messages";
  if (v.total() <= 2048 || v.count < static_cast<uint64_t>(pow2_floor(g.size()))) {
    reduce_binomial(b, g, root, v.total());
    return "MPIR binomial (reduce_intra_binomial.c)";
  }
  rabenseifner(b, g, v, false, root);
  return "MPIR reduce-scatter + gather (reduce_intra_reduce_scatter_gather.c)";
}

// barrier_intra_dissemination.c
void barrier_dissemination(Builder& b, const Group& g) {
  const int size = g.size();
  for (int rank = 0; rank < size; rank++) {
    Proc p(b, g, rank);
    for (int mask = 1; mask < size; mask <<= 1) {
      sendrecv(p, (rank + mask) % size, 0, (rank - mask + size) % size, 0);
      p.next_round();
    }
  }
}

// ---- Gather, Scatter and the v-forms ---------------------------------------------------------------------
// gather_intra_binomial.c: each rank sends its subtree's blocks to its parent
void gather_binomial(Builder& b, const Group& g, int root, uint64_t block) {
  const int size = g.size();
  auto subtree = [&](int rel) {  // ranks rel .. rel + lowbit(rel) - 1
    int low = rel & -rel;
    return std::min(low, size - rel);
  };
  for (int rank = 0; rank < size; rank++) {
    Proc p(b, g, rank);
    int rel = (rank - root + size) % size;
    for (int mask = 1; mask < size; mask <<= 1) {
      if ((mask & rel) == 0) {
        int src = rel | mask;
        if (src < size) p.recv((src + root) % size, block * static_cast<uint64_t>(subtree(src)));
      } else {
        p.send(((rel ^ mask) + root) % size, block * static_cast<uint64_t>(subtree(rel)));
        break;
      }
    }
  }
}

// scatter_intra_binomial.c: each rank receives its subtree's blocks, then serves its children
void scatter_binomial(Builder& b, const Group& g, int root, uint64_t block) {
  const int size = g.size();
  for (int rank = 0; rank < size; rank++) {
    Proc p(b, g, rank);
    int rel = (rank - root + size) % size, mask = 1;
    for (; mask < size; mask <<= 1)
      if (rel & mask) {
        p.recv((rank - mask + size) % size, block * static_cast<uint64_t>(std::min(mask, size - rel)));
        break;
      }
    for (mask >>= 1; mask > 0; mask >>= 1)
      if (rel + mask < size)
        p.send((rank + mask) % size, block * static_cast<uint64_t>(std::min(mask, size - rel - mask)));
  }
}

// gatherv_allcomm_linear.c, scatterv_allcomm_linear.c: the root posts every non-empty transfer at once
void v_linear(Builder& b, const Group& g, int root, const std::vector<uint64_t>& blocks, bool gather) {
  for (int rank = 0; rank < g.size(); rank++) {
    Proc p(b, g, rank);
    if (rank != root) {
      if (blocks[rank] == 0) continue;
      if (gather) p.send(root, blocks[rank]);
      else p.recv(root, blocks[rank]);
      continue;
    }
    uint32_t first = p.next_request();
    for (int i = 0; i < g.size(); i++)
      if (i != rank && blocks[i] > 0) {
        if (gather) p.irecv(i, blocks[i]);
        else p.isend(i, blocks[i]);
      }
    p.wait_since(first);
  }
}

// ---- Allgather(v) ------------------------------------------------------------------------------------------
// allgather(v)_intra_recursive_doubling.c (power-of-two sizes): the trees' blocks double each step
void allgather_rd(Builder& b, const Group& g, const std::vector<uint64_t>& blocks) {
  const int size = g.size();
  for (int rank = 0; rank < size; rank++) {
    Proc p(b, g, rank);
    for (int mask = 1, i = 0; mask < size; mask <<= 1, i++) {
      int dst = rank ^ mask;
      int my_root = rank >> i << i, dst_root = dst >> i << i;
      uint64_t mine = 0, theirs = 0;
      for (int j = 0; j < mask; j++) {
        mine += blocks[(my_root + j) % size];
        theirs += blocks[(dst_root + j) % size];
      }
      sendrecv(p, dst, mine, dst, theirs);
      p.next_round();
    }
  }
}

// allgather(v)_intra_brucks.c
void allgather_brucks(Builder& b, const Group& g, const std::vector<uint64_t>& blocks) {
  const int size = g.size();
  for (int rank = 0; rank < size; rank++) {
    Proc p(b, g, rank);
    int pof2 = 1;
    auto range = [&](int from, int n) {
      uint64_t s = 0;
      for (int i = 0; i < n; i++) s += blocks[(from + i) % size];
      return s;
    };
    for (; pof2 <= size / 2; pof2 *= 2) {
      int src = (rank + pof2) % size, dst = (rank - pof2 + size) % size;
      sendrecv(p, dst, range(rank, pof2), src, range(src, pof2));
      p.next_round();
    }
    int rem = size - pof2;
    if (rem) {
      int src = (rank + pof2) % size, dst = (rank - pof2 + size) % size;
      sendrecv(p, dst, range(rank, rem), src, range(src, rem));
    }
  }
}

// allgather(v)_intra_ring.c
void allgather_ring(Builder& b, const Group& g, const std::vector<uint64_t>& blocks) {
  const int size = g.size();
  b.expect_pairs(size);
  for (int rank = 0; rank < size; rank++) {
    Proc p(b, g, rank);
    int left = (size + rank - 1) % size, right = (rank + 1) % size, j = rank, jnext = left;
    for (int i = 1; i < size; i++) {
      sendrecv(p, right, blocks[j], left, blocks[jnext]);
      j = jnext;
      jnext = (size + jnext - 1) % size;
      p.next_round();
    }
  }
}

std::string mpir_allgather(Builder& b, const Group& g, const std::vector<uint64_t>& blocks, bool v) {
  const int size = g.size();
  uint64_t total = std::accumulate(blocks.begin(), blocks.end(), uint64_t{0});
  if (size < 2 || total == 0) return "no messages";
  const char* name = v ? "allgatherv" : "allgather";
  if (is_pow2(size) && total < 524288) {
    allgather_rd(b, g, blocks);
    return std::string("MPIR recursive doubling (") + name + "_intra_recursive_doubling.c)";
  }
  if (!is_pow2(size) && total < 81920) {
    allgather_brucks(b, g, blocks);
    return std::string("MPIR brucks (") + name + "_intra_brucks.c)";
  }
  allgather_ring(b, g, blocks);
  return std::string("MPIR ring (") + name + "_intra_ring.c)";
}

// ---- Alltoall(v,w) ---------------------------------------------------------------------------------------
// alltoall(v,w)_intra_scattered.c: receives from rank+i and sends to rank-i, 32 pairs at a time
void alltoall_scattered(Builder& b, const Group& g, const std::vector<std::vector<uint64_t>>& to, bool skip_empty) {
  const int size = g.size();
  for (int rank = 0; rank < size; rank++) {
    Proc p(b, g, rank);
    for (int ii = 0; ii < size; ii += kAlltoallThrottle) {
      int ss = std::min(size - ii, kAlltoallThrottle);
      uint32_t first = p.next_request();
      for (int i = 0; i < ss; i++) {
        int dst = (rank + i + ii) % size;
        if (dst != rank && !(skip_empty && to[dst][rank] == 0)) p.irecv(dst, to[dst][rank]);
      }
      for (int i = 0; i < ss; i++) {
        int dst = (rank - i - ii + size) % size;
        if (dst != rank && !(skip_empty && to[rank][dst] == 0)) p.isend(dst, to[rank][dst]);
      }
      p.wait_since(first);
      p.next_round();
    }
  }
}

// alltoall_intra_pairwise.c: exclusive-or partners on a power of two, else rank+i / rank-i
void alltoall_pairwise(Builder& b, const Group& g, uint64_t block) {
  const int size = g.size();
  b.expect_pairs(size);
  for (int rank = 0; rank < size; rank++) {
    Proc p(b, g, rank);
    for (int i = 1; i < size; i++) {
      int src, dst;
      if (is_pow2(size)) src = dst = rank ^ i;
      else src = (rank - i + size) % size, dst = (rank + i) % size;
      sendrecv(p, dst, block, src, block);
      p.next_round();
    }
  }
}

// MPI_IN_PLACE: alltoall(v,w)_intra_pairwise_sendrecv_replace.c, every pair (i, j >= i) in turn with
// MPIC_Sendrecv_replace (helper_fns.c: irecv, isend, wait for both), counts of 0 included; a rank's
// exchange with itself moves no data between ranks and is left out. A rank's pairs in that order: (i, rank)
// for each i below it, then (rank, j) for each j above (the library's double loop visits every pair on
// every rank, size^3 in all: 4 x 10^10 at 3344 ranks)
void alltoall_sendrecv_replace(Builder& b, const Group& g, const std::vector<std::vector<uint64_t>>& to) {
  const int size = g.size();
  b.expect_pairs(size);
  for (int rank = 0; rank < size; rank++) {
    Proc p(b, g, rank);
    for (int peer = 0; peer < size; ++peer) {
      if (peer == rank) continue;
      sendrecv(p, peer, to[rank][peer], peer, to[peer][rank]);
      p.next_round();
    }
  }
}

// alltoall_intra_brucks.c: at distance pof2, the blocks with that bit
void alltoall_brucks(Builder& b, const Group& g, uint64_t block) {
  const int size = g.size();
  for (int rank = 0; rank < size; rank++) {
    Proc p(b, g, rank);
    for (int pof2 = 1; pof2 < size; pof2 *= 2) {
      uint64_t k = 0;
      for (int blk = 1; blk < size; blk++)
        if (blk & pof2) k++;
      sendrecv(p, (rank + pof2) % size, k * block, (rank - pof2 + size) % size, k * block);
      p.next_round();
    }
  }
}

// ---- Reduce_scatter(_block), Scan, Exscan ----------------------------------------------------------------
// reduce_scatter(_block)_intra_recursive_halving.c
void rs_recursive_halving(Builder& b, const Group& g, const std::vector<uint64_t>& rcounts) {
  const int size = g.size(), pof2 = pow2_floor(size), rem = size - pof2;
  uint64_t total = std::accumulate(rcounts.begin(), rcounts.end(), uint64_t{0});
  std::vector<uint64_t> newcnts(pof2);
  for (int i = 0; i < pof2; i++) {
    int old_i = i < rem ? i * 2 + 1 : i + rem;
    newcnts[i] = old_i < 2 * rem ? rcounts[old_i] + rcounts[old_i - 1] : rcounts[old_i];
  }
  for (int rank = 0; rank < size; rank++) {
    Proc p(b, g, rank);
    int newrank;
    if (rank < 2 * rem) {
      if (rank % 2 == 0) {
        p.send(rank + 1, total);
        newrank = -1;
      } else {
        p.recv(rank - 1, total);
        p.reduce(total);
        newrank = rank / 2;
      }
    } else {
      newrank = rank - rem;
    }
    p.next_round();
    if (newrank != -1) {
      int send_idx = 0, recv_idx = 0, last_idx = pof2;
      for (int mask = pof2 >> 1; mask > 0; mask >>= 1) {
        int newdst = newrank ^ mask, dst = newdst < rem ? newdst * 2 + 1 : newdst + rem;
        uint64_t scnt, rcnt;
        if (newrank < newdst) {
          send_idx = recv_idx + mask;
          scnt = sum(newcnts, send_idx, last_idx);
          rcnt = sum(newcnts, recv_idx, send_idx);
        } else {
          recv_idx = send_idx + mask;
          scnt = sum(newcnts, send_idx, recv_idx);
          rcnt = sum(newcnts, recv_idx, last_idx);
        }
        if (scnt && rcnt) sendrecv(p, dst, scnt, dst, rcnt);
        else if (rcnt) p.recv(dst, rcnt);
        else if (scnt) p.send(dst, scnt);
        p.reduce(rcnt);
        p.next_round();
        send_idx = recv_idx;
        last_idx = recv_idx + mask;
      }
    }
    if (rank < 2 * rem) {
      if (rank % 2) {
        if (rcounts[rank - 1]) p.send(rank - 1, rcounts[rank - 1]);
      } else if (rcounts[rank]) {
        p.recv(rank + 1, rcounts[rank]);
      }
    }
  }
}

// reduce_scatter(_block)_intra_pairwise.c
void rs_pairwise(Builder& b, const Group& g, const std::vector<uint64_t>& rcounts) {
  const int size = g.size();
  for (int rank = 0; rank < size; rank++) {
    Proc p(b, g, rank);
    for (int i = 1; i < size; i++) {
      int src = (rank - i + size) % size, dst = (rank + i) % size;
      sendrecv(p, dst, rcounts[dst], src, rcounts[rank]);
      p.reduce(rcounts[rank]);
      p.next_round();
    }
  }
}

// scan_intra_recursive_doubling.c, exscan_intra_recursive_doubling.c
void scan_rd(Builder& b, const Group& g, uint64_t nbytes) {
  const int size = g.size();
  for (int rank = 0; rank < size; rank++) {
    Proc p(b, g, rank);
    for (int mask = 1; mask < size; mask <<= 1) {
      int dst = rank ^ mask;
      if (dst < size) {
        sendrecv(p, dst, nbytes, dst, nbytes);
        p.reduce(nbytes);
      }
      p.next_round();
    }
  }
}

// ---- ch4's node-aware compositions ------------------------------------------------------------------------
struct Nodes {
  std::vector<Group> local;     // per node, its ranks in communicator order
  Group roots;                  // each node's first rank
  std::vector<int> node_of, local_rank;  // by position
  bool parent = false;          // comm_hierarchy=parent: some node holds two ranks or more
  bool single = false;          // every rank on one node
};

Nodes nodes_of(const CollectiveCall& c) {
  Nodes n;
  std::map<int, int> index;
  n.node_of.resize(c.size);
  n.local_rank.resize(c.size);
  for (int pos = 0; pos < c.size; pos++) {
    int host = c.host.empty() ? 0 : c.host[pos];
    auto [it, fresh] = index.try_emplace(host, static_cast<int>(n.local.size()));
    if (fresh) {
      n.local.emplace_back();
      n.roots.pos.push_back(pos);
    }
    n.node_of[pos] = it->second;
    n.local_rank[pos] = n.local[it->second].size();
    n.local[it->second].pos.push_back(pos);
  }
  n.parent = c.size > 1 && static_cast<int>(n.local.size()) < c.size;
  n.single = n.local.size() == 1;
  return n;
}

// The calls a collective makes to the POSIX collectives of its node communicators. Each counts toward
// MPIR_CVAR_POSIX_NUM_COLLS_THRESHOLD (posix_coll_release_gather.h): the first 4 on a communicator fall
// back to MPIR's point-to-point algorithms (MPIR_*_impl on the node communicator), later ones run
// release/gather. A call with no data returns before it counts.
// An MPICH built without the POSIX module (ch4:ucx by default: src/mpid/ch4/subconfigure.m4 sets
// MPIDI_CH4_DIRECT_NETMOD) runs those parts as MPIDI_NM_mpi_* instead, i.e. MPIR's algorithms on the node
// communicator over the netmod.
struct PosixCalls {
  static constexpr uint64_t kThreshold = CollectiveCall::kNodeCallsFallingBack + 1;  // MPIR_CVAR_POSIX_NUM_COLLS_THRESHOLD
  bool shm = true;                           // CollectiveCall::mpich_shm
  uint32_t before = UINT32_MAX;
  uint32_t made = 0;
  bool fell_back = false;
  // counts one call; true: it runs release/gather
  bool release_gather() {
    if (!shm) return false;
    made++;
    bool rg = before == UINT32_MAX || uint64_t{before} + made >= kThreshold;
    fell_back |= !rg;
    return rg;
  }
  // what runs on each node's communicator
  const char* local(bool rg) const {
    return rg ? "POSIX release/gather" : shm ? "MPIR (the first 4 calls on a communicator)" : "MPIR over the netmod";
  }
  std::string note() const {
    if (!shm) return " (no POSIX shared-memory module in this MPICH, as ch4:ucx builds by default: MPIDI_NM_* on each node)";
    return fell_back ? " (the first 4 on the communicator: MPIR point-to-point, posix_coll_release_gather.h)" : "";
  }
};

constexpr const char* kShmApprox = "MPICH's shared-memory release/gather copies through shared cells: modelled as "
                                   "messages on its trees and waits on its flags";

std::string ch4_bcast(Builder& b, const Nodes& n, const Group& all, int root, uint64_t nbytes, PosixCalls& px,
                      std::string* approx) {
  const int size = all.size();
  const int root_node = n.node_of[root], root_local = n.local_rank[root];
  bool alpha = size < 8 || nbytes < 12288;
  bool beta = !alpha && is_pow2(size) && nbytes < 524288;
  if (!n.parent || (!alpha && !beta)) return "gamma: " + mpir_bcast(b, all, root, nbytes);
  const bool rg = nbytes > 0 && px.release_gather();
  auto local = [&](const Group& lg, int local_root) {
    if (lg.size() < 2) return;
    rg ? shm_bcast(b, lg, local_root, nbytes) : void(mpir_bcast(b, lg, local_root, nbytes));
  };
  if (rg) *approx = kShmApprox;
  std::string nm;
  if (alpha) {
    // MPIDI_Bcast_intra_composition_alpha: the root hands the data to its node's first rank
    if (root_local != 0) {
      Proc(b, all, root).send(n.local[root_node].pos[0], nbytes);
      Proc(b, all, n.local[root_node].pos[0]).recv(root, nbytes);
    }
    nm = n.roots.size() > 1 ? mpir_bcast(b, n.roots, root_node, nbytes) : "";
    for (const auto& lg : n.local) local(lg, 0);
    return "alpha: node roots [" + (nm.empty() ? std::string("one node") : nm) +
           "], then " + px.local(rg) + " bcast in each node (ch4_coll_impl.h: MPIDI_Bcast_intra_composition_alpha)" +
           px.note();
  }
  // MPIDI_Bcast_intra_composition_beta
  if (root_local > 0) local(n.local[root_node], root_local);
  nm = n.roots.size() > 1 ? mpir_bcast(b, n.roots, root_node, nbytes) : "";
  for (size_t i = 0; i < n.local.size(); i++)
    if (!(static_cast<int>(i) == root_node && root_local > 0)) local(n.local[i], 0);
  return "beta: " + std::string(px.local(rg)) + " bcast in the root's node, node roots [" +
         (nm.empty() ? std::string("one node") : nm) +
         "], the other nodes (ch4_coll_impl.h: MPIDI_Bcast_intra_composition_beta)" + px.note();
}

std::string ch4_reduce(Builder& b, const Nodes& n, const Group& all, int root, Vec v, PosixCalls& px,
                       std::string* approx) {
  if (!n.parent) return "gamma: " + mpir_reduce(b, all, root, v);
  const bool rg = v.total() > 0 && px.release_gather();
  auto local = [&](const Group& lg, int local_root) {
    if (lg.size() < 2) return;
    rg ? shm_reduce(b, lg, local_root, v.total()) : void(mpir_reduce(b, lg, local_root, v));
  };
  if (rg) *approx = kShmApprox;
  const int root_node = n.node_of[root];
  if (v.total() <= 2048) {  // MPIDI_Reduce_intra_composition_beta
    for (size_t i = 0; i < n.local.size(); i++)
      if (static_cast<int>(i) != root_node) local(n.local[i], 0);
    std::string nm = n.roots.size() > 1 ? mpir_reduce(b, n.roots, root_node, v) : "";
    local(n.local[root_node], n.local_rank[root]);
    return "beta: " + std::string(px.local(rg)) + " reduce in each node, node roots [" + (nm.empty() ? std::string("one node") : nm) +
           "] (ch4_coll_impl.h: MPIDI_Reduce_intra_composition_beta)" + px.note();
  }
  // MPIDI_Reduce_intra_composition_alpha
  for (const auto& lg : n.local) local(lg, 0);
  std::string nm = n.roots.size() > 1 ? mpir_reduce(b, n.roots, 0, v) : "";
  if (root != 0) {
    Proc(b, all, 0).send(root, v.total());
    Proc(b, all, root).recv(0, v.total());
  }
  return "alpha: " + std::string(px.local(rg)) + " reduce in each node, node roots [" + (nm.empty() ? std::string("one node") : nm) +
         "], then to the root (ch4_coll_impl.h: MPIDI_Reduce_intra_composition_alpha)" + px.note();
}

std::string ch4_allreduce(Builder& b, const Nodes& n, const Group& all, Vec v, PosixCalls& px, std::string* approx) {
  if (n.single && all.size() > 1) {  // comm_size=node_comm_size: MPIDI_Allreduce_intra_composition_gamma
    if (v.total() > 0 && px.release_gather()) {
      *approx = kShmApprox;
      shm_allreduce(b, all, v.total());
      return "gamma: POSIX release/gather allreduce (posix_coll_release_gather.h: "
             "MPIDI_POSIX_mpi_allreduce_release_gather)" + px.note();
    }
    return "gamma: " + mpir_allreduce(b, all, v) + px.note();
  }
  if (!n.parent) return "beta: " + mpir_allreduce(b, all, v);
  // MPIDI_Allreduce_intra_composition_alpha: a POSIX reduce and a POSIX bcast on each node
  const bool reduce_rg = v.total() > 0 && px.release_gather();
  for (const auto& lg : n.local)
    if (lg.size() > 1) reduce_rg ? shm_reduce(b, lg, 0, v.total()) : void(mpir_reduce(b, lg, 0, v));
  std::string nm = mpir_allreduce(b, n.roots, v);
  const bool bcast_rg = v.total() > 0 && px.release_gather();
  for (const auto& lg : n.local)
    if (lg.size() > 1) bcast_rg ? shm_bcast(b, lg, 0, v.total()) : void(mpir_bcast(b, lg, 0, v.total()));
  if (reduce_rg || bcast_rg) *approx = kShmApprox;
  return "alpha: " + std::string(px.local(reduce_rg)) + " reduce in each node, node roots [" + nm + "], " +
         px.local(bcast_rg) + " bcast in each node (ch4_coll_impl.h: MPIDI_Allreduce_intra_composition_alpha)" +
         px.note();
}

std::string ch4_barrier(Builder& b, const Nodes& n, const Group& all, PosixCalls& px, std::string* approx) {
  if (!n.parent) {
    barrier_dissemination(b, all);
    return "beta: MPIR dissemination (barrier_intra_dissemination.c)";
  }
  // MPIDI_Barrier_intra_composition_alpha: a POSIX barrier in each node, the node roots' barrier, and a
  // 1-byte POSIX bcast in each node
  const bool barrier_rg = px.release_gather();
  for (const auto& lg : n.local)
    if (lg.size() > 1) barrier_rg ? shm_barrier(b, lg) : barrier_dissemination(b, lg);
  if (n.roots.size() > 1) barrier_dissemination(b, n.roots);
  const bool bcast_rg = px.release_gather();
  for (const auto& lg : n.local)
    if (lg.size() > 1) bcast_rg ? shm_bcast(b, lg, 0, 1) : void(mpir_bcast(b, lg, 0, 1));
  if (barrier_rg || bcast_rg) *approx = kShmApprox;
  return "alpha: " + std::string(px.local(barrier_rg)) + " barrier in each node, node roots by dissemination, a 1-byte " +
         px.local(bcast_rg) + " bcast (ch4_coll_impl.h: MPIDI_Barrier_intra_composition_alpha)" + px.note();
}

}  // namespace

Chosen mpich_schedule(const CollectiveCall& c, Builder& b) {
  const bool nonblocking = c.call >= MPA_CALL_Ibarrier;
  const uint32_t base = nonblocking ? c.call - (MPA_CALL_Ibarrier - MPA_CALL_Barrier) : c.call;
  const int size = c.size;
  const Group all = Group::whole(size);
  const Nodes nodes = nodes_of(c);
  const bool rooted = base == MPA_CALL_Bcast || base == MPA_CALL_Reduce || base == MPA_CALL_Gather ||
                      base == MPA_CALL_Gatherv || base == MPA_CALL_Scatter || base == MPA_CALL_Scatterv;
  if (rooted && (c.root < 0 || c.root >= size)) return {};
  Chosen out;
  PosixCalls px;
  px.shm = c.mpich_shm;
  px.before = c.node_calls_before;
  auto blocks = [&]() { return c.rank_bytes.empty() ? std::vector<uint64_t>(size, c.bytes) : c.rank_bytes; };
  std::string alg;
  switch (base) {
    case MPA_CALL_Barrier:
      if (nonblocking) {
        barrier_dissemination(b, all);
        alg = "MPIR recursive doubling, i.e. dissemination (ibarrier_intra_sched_recursive_doubling.c)";
      } else {
        alg = ch4_barrier(b, nodes, all, px, &out.approximation);
      }
      break;
    case MPA_CALL_Bcast:
      alg = nonblocking ? mpir_bcast(b, all, c.root, c.bytes)
                        : ch4_bcast(b, nodes, all, c.root, c.bytes, px, &out.approximation);
      break;
    case MPA_CALL_Reduce:
      alg = nonblocking ? mpir_reduce(b, all, c.root, Vec::of(c.bytes))
                        : ch4_reduce(b, nodes, all, c.root, Vec::of(c.bytes), px, &out.approximation);
      break;
    case MPA_CALL_Allreduce:
      alg = nonblocking ? mpir_allreduce(b, all, Vec::of(c.bytes))
                        : ch4_allreduce(b, nodes, all, Vec::of(c.bytes), px, &out.approximation);
      break;
    case MPA_CALL_Gather:
      if (size > 1 && c.bytes) gather_binomial(b, all, c.root, c.bytes);
      alg = "MPIR binomial (gather_intra_binomial.c)";
      break;
    case MPA_CALL_Scatter:
      if (size > 1 && c.bytes) scatter_binomial(b, all, c.root, c.bytes);
      alg = "MPIR binomial (scatter_intra_binomial.c)";
      break;
    case MPA_CALL_Gatherv:
      v_linear(b, all, c.root, blocks(), true);
      alg = "MPIR linear (gatherv_allcomm_linear.c)";
      break;
    case MPA_CALL_Scatterv:
      v_linear(b, all, c.root, blocks(), false);
      alg = "MPIR linear (scatterv_allcomm_linear.c)";
      break;
    case MPA_CALL_Allgather: alg = mpir_allgather(b, all, std::vector<uint64_t>(size, c.bytes), false); break;
    case MPA_CALL_Allgatherv: alg = mpir_allgather(b, all, blocks(), true); break;
    case MPA_CALL_Alltoall:
      if (size < 2 || c.bytes == 0) {
        alg = "no messages";
      } else if (c.in_place) {
        alltoall_sendrecv_replace(b, all, square(size, c.bytes));
        alg = "MPIR pairwise sendrecv_replace, in place (alltoall_intra_pairwise_sendrecv_replace.c)";
      } else if (size >= 8 && c.bytes <= 256) {
        alltoall_brucks(b, all, c.bytes);
        alg = "MPIR brucks (alltoall_intra_brucks.c)";
      } else if (c.bytes <= 32768) {
        alltoall_scattered(b, all, square(size, c.bytes), false);
        alg = "MPIR scattered (alltoall_intra_scattered.c)";
      } else {
        alltoall_pairwise(b, all, c.bytes);
        alg = "MPIR pairwise (alltoall_intra_pairwise.c)";
      }
      break;
    case MPA_CALL_Alltoallv:
    case MPA_CALL_Alltoallw:
      if (c.in_place) {
        alltoall_sendrecv_replace(b, all, alltoallv_matrix(c, &out.approximation));
        alg = base == MPA_CALL_Alltoallv
                  ? "MPIR pairwise sendrecv_replace, in place (alltoallv_intra_pairwise_sendrecv_replace.c)"
                  : "MPIR pairwise sendrecv_replace, in place (alltoallw_intra_pairwise_sendrecv_replace.c)";
        break;
      }
      alltoall_scattered(b, all, alltoallv_matrix(c, &out.approximation), true);
      alg = base == MPA_CALL_Alltoallv ? "MPIR scattered (alltoallv_intra_scattered.c)"
                                       : "MPIR scattered (alltoallw_intra_scattered.c)";
      break;
    case MPA_CALL_Reduce_scatter:
    case MPA_CALL_Reduce_scatter_block: {
      std::vector<uint64_t> parts = base == MPA_CALL_Reduce_scatter ? blocks() : std::vector<uint64_t>(size, c.bytes);
      uint64_t total = std::accumulate(parts.begin(), parts.end(), uint64_t{0});
      const char* name = base == MPA_CALL_Reduce_scatter ? "reduce_scatter" : "reduce_scatter_block";
      if (size < 2 || total == 0) {
        alg = "no messages";
      } else if (total < 524288) {
        rs_recursive_halving(b, all, parts);
        alg = std::string("MPIR recursive halving (") + name + "_intra_recursive_halving.c)";
      } else {
        rs_pairwise(b, all, parts);
        alg = std::string("MPIR pairwise (") + name + "_intra_pairwise.c)";
      }
      break;
    }
    case MPA_CALL_Scan:
      if (size > 1 && c.bytes) scan_rd(b, all, c.bytes);
      alg = "MPIR recursive doubling (scan_intra_recursive_doubling.c)";
      if (nodes.parent && !nonblocking)
        out.approximation = "MPIR_Scan_intra_smp (nodes' ranks consecutive) modelled by the recursive doubling it "
                            "runs within a node";
      break;
    case MPA_CALL_Exscan:
      if (size > 1 && c.bytes) scan_rd(b, all, c.bytes);
      alg = "MPIR recursive doubling (exscan_intra_recursive_doubling.c)";
      break;
    default:
      return {};
  }
  if ((base == MPA_CALL_Gatherv || base == MPA_CALL_Scatterv || base == MPA_CALL_Allgatherv ||
       base == MPA_CALL_Reduce_scatter) && c.rank_bytes.empty())
    out.approximation = "each rank's count is not in the log: every rank taken to have the largest";
  if (nonblocking) {
    std::string why = "MPICH's non-blocking form (MPIR_I*_sched_*) modelled by the steps of the blocking algorithm it shares";
    out.approximation = out.approximation.empty() ? why : out.approximation + "; " + why;
  }
  out.algorithm = "MPICH 4.0 " + alg;
  out.node_calls = px.made;
  return out;
}

}  // namespace mpiadvise::coll

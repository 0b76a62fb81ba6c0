// Open MPI 4.1's collectives, as mirrored from its source (tag v4.1.4):
//   blocking calls on an intracommunicator go to coll/tuned (priority 30), whose fixed decision rules
//   (ompi/mca/coll/tuned/coll_tuned_decision_fixed.c) pick an algorithm of ompi/mca/coll/base by
//   communicator size and message size, with segment size 0 (the fixed rules pass segsize 0 and fan-in/out
//   0: no algorithm segments its message, and a chain has fan-out 1). Gatherv, Scatterv, Scan, Exscan and
//   Alltoallw are NULL in tuned and come from coll/basic (priority 10): linear algorithms.
//   Non-blocking calls go to coll/libnbc (ompi/mca/coll/libnbc/nbc_i*.c) with its default choices
//   (coll_libnbc_ibcast_skip_dt_decision true, every *_algorithm 0).
// The operation is taken as commutative (every predefined MPI_Op is; the log does not name the op).
#include <algorithm>
#include <numeric>

#include "call_ids.h"
#include "collectives_build.hpp"

namespace mpiadvise::coll {
namespace {

// ---- trees (ompi/mca/coll/base/coll_base_topo.c) -------------------------------------------------------
struct Tree {
  int prev = -1;
  std::vector<int> next;
};

int pown(int fanout, int num) {
  int p = 1;
  for (int j = 0; j < num; j++) p *= fanout;
  return num < 0 ? 0 : p;
}

// ompi_coll_base_topo_build_tree: fanout-ary tree, ranks shifted so that root is 0
Tree build_tree(int fanout, int size, int rank, int root) {
  Tree t;
  if (size < 2) return t;
  int shifted = rank - root;
  if (shifted < 0) shifted += size;
  int level = 0;
  for (int num = 0; num <= shifted; level++) num += pown(fanout, level);
  level--;
  int delta = pown(fanout, level);
  for (int i = 0; i < fanout; i++) {
    int child = shifted + delta * (i + 1);
    if (child >= size) break;
    t.next.push_back((child + root) % size);
  }
  int slimit = (pown(fanout, level) - 1) / (fanout - 1);
  int parent = shifted;
  if (parent < fanout) {
    parent = 0;
  } else {
    while (parent >= slimit) parent -= delta / fanout;
  }
  t.prev = (parent + root) % size;
  if (rank == root) t.prev = -1;
  return t;
}

// ompi_coll_base_topo_build_in_order_bintree: root size-1, fan-out 2, for in-order reductions
Tree build_in_order_bintree(int size, int rank) {
  Tree t;
  int myrank = rank, parent = size - 1, delta = 0;
  int lnext = -1, rnext = -1;
  while (true) {
    int rightsize = size >> 1;
    int lchild = -1, rchild = -1;
    if (size - 1 > 0) {
      lchild = parent - 1;
      if (lchild > 0) rchild = rightsize - 1;
    }
    if (myrank == parent) {
      if (lchild >= 0) lnext = lchild + delta;
      if (rchild >= 0) rnext = rchild + delta;
      break;
    }
    if (myrank > rchild) {
      if (myrank == lchild) t.prev = parent + delta;
      size = size - rightsize - 1;
      delta = delta + rightsize;
      myrank = myrank - rightsize;
      parent = size - 1;
    } else {
      if (myrank == rchild) t.prev = parent + delta;
      size = rightsize;
      parent = rchild;
    }
  }
  if (lnext >= 0) t.next.push_back(lnext);
  if (rnext >= 0) t.next.push_back(rnext);
  return t;
}

// ompi_coll_base_topo_build_bmtree: binomial tree, children by increasing distance
Tree build_bmtree(int size, int rank, int root) {
  Tree t;
  int index = rank - root;
  if (index < 0) index += size;
  int mask = next_pow2_above(index);
  if (index == 0) mask = 1;
  if (rank != root) {
    int remote = (index ^ (mask >> 1)) + root;
    if (remote >= size) remote -= size;
    t.prev = remote;
  }
  while (mask < size) {
    int remote = index ^ mask;
    if (remote >= size) break;
    remote += root;
    if (remote >= size) remote -= size;
    t.next.push_back(remote);
    mask <<= 1;
  }
  return t;
}

// ompi_coll_base_topo_build_in_order_bmtree: binomial tree for Gather and Scatter
Tree build_in_order_bmtree(int size, int rank, int root) {
  Tree t;
  int vrank = (rank - root + size) % size;
  for (int mask = 1; mask < size; mask <<= 1) {
    int remote = vrank ^ mask;
    if (remote < vrank) {
      t.prev = (remote + root) % size;
      break;
    }
    if (remote < size) t.next.push_back((remote + root) % size);
  }
  return t;
}

// ompi_coll_base_topo_build_kmtree: k-nomial tree for Bcast
Tree build_kmtree(int size, int rank, int root, int radix) {
  Tree t;
  int vrank = (rank - root + size) % size;
  int mask = 1;
  while (mask < size) {
    if (vrank % (radix * mask)) {
      t.prev = (vrank / (radix * mask) * (radix * mask) + root) % size;
      break;
    }
    mask *= radix;
  }
  mask /= radix;
  while (mask > 0) {
    for (int r = 1; r < radix; r++) {
      int child = vrank + mask * r;
      if (child < size) t.next.push_back((child + root) % size);
    }
    mask /= radix;
  }
  return t;
}

// ompi_coll_base_topo_build_chain: `fanout` chains hanging from the root
Tree build_chain(int fanout, int size, int rank, int root) {
  Tree t;
  fanout = std::clamp(fanout, 1, 32);
  if (size - 1 < fanout) fanout = size - 1;
  int srank = rank - root;
  if (srank < 0) srank += size;
  if (size == 1) return t;
  if (fanout == 1) {
    if (srank != 0) t.prev = (srank - 1 + root) % size;
    if (srank + 1 < size) t.next.push_back((srank + 1 + root) % size);
    return t;
  }
  int maxchainlen = (size - 1) / fanout, mark;
  if ((size - 1) % fanout != 0) {
    maxchainlen++;
    mark = (size - 1) % fanout;
  } else {
    mark = fanout + 1;
  }
  if (srank != 0) {
    int head, len;
    if (srank - 1 < mark * maxchainlen) {
      int column = (srank - 1) / maxchainlen;
      head = 1 + column * maxchainlen;
      len = maxchainlen;
    } else {
      int column = mark + (srank - 1 - mark * maxchainlen) / (maxchainlen - 1);
      head = mark * maxchainlen + 1 + (column - mark) * (maxchainlen - 1);
      len = maxchainlen - 1;
    }
    int prev = srank == head ? 0 : srank - 1;
    t.prev = (prev + root) % size;
    if (srank != head + len - 1 && srank + 1 < size) t.next.push_back((srank + 1 + root) % size);
  } else {
    int next = (root + 1) % size;
    t.next.push_back(next);
    for (int i = 1; i < fanout; i++) {
      next = next + maxchainlen;
      if (i > mark) next--;
      next %= size;
      t.next.push_back(next);
    }
  }
  return t;
}

// ---- Bcast (coll_base_bcast.c) -------------------------------------------------------------------------
// ompi_coll_base_bcast_intra_generic: segments pipelined down a tree
void bcast_generic(Builder& b, const Group& g, int root, Vec v, uint64_t segcount,
                   Tree (*tree_of)(int size, int rank, int root, int arg), int arg) {
  const int size = g.size();
  if (segcount == 0) segcount = 1;
  const uint64_t nseg = v.count == 0 ? 1 : (v.count + segcount - 1) / segcount;
  auto seg_bytes = [&](uint64_t s) { return v.bytes(s == nseg - 1 ? v.count - segcount * s : segcount); };
  for (int rank = 0; rank < size; rank++) {
    Proc p(b, g, rank);
    Tree t = tree_of(size, rank, root, arg);
    if (rank == root) {
      for (uint64_t s = 0; s < nseg; s++) {
        uint32_t first = p.next_request();
        for (int child : t.next) p.isend(child, seg_bytes(s));
        p.wait_since(first);
      }
    } else if (!t.next.empty()) {
      uint32_t prev = p.irecv(t.prev, v.bytes(segcount));
      for (uint64_t s = 1; s < nseg; s++) {
        uint32_t next = p.irecv(t.prev, v.bytes(segcount));
        p.wait(prev);
        uint32_t first = p.next_request();
        for (int child : t.next) p.isend(child, v.bytes(segcount));
        p.wait_since(first);
        prev = next;
      }
      p.wait(prev);
      uint32_t first = p.next_request();
      for (int child : t.next) p.isend(child, seg_bytes(nseg - 1));
      p.wait_since(first);
    } else {
      uint32_t prev = p.irecv(t.prev, v.bytes(segcount));
      for (uint64_t s = 1; s < nseg; s++) {
        uint32_t next = p.irecv(t.prev, v.bytes(segcount));
        p.wait(prev);
        prev = next;
      }
      p.wait(prev);
    }
  }
}

Tree chain_tree(int size, int rank, int root, int fanout) { return build_chain(fanout, size, rank, root); }
Tree bin_tree(int size, int rank, int root, int) { return build_tree(2, size, rank, root); }
Tree binomial_tree(int size, int rank, int root, int) { return build_bmtree(size, rank, root); }
Tree knomial_tree(int size, int rank, int root, int radix) { return build_kmtree(size, rank, root, radix); }

// ompi_coll_base_bcast_intra_basic_linear
void bcast_linear(Builder& b, const Group& g, int root, uint64_t bytes) {
  for (int rank = 0; rank < g.size(); rank++) {
    Proc p(b, g, rank);
    if (rank != root) {
      p.recv(root, bytes);
      continue;
    }
    uint32_t first = p.next_request();
    for (int i = 0; i < g.size(); i++)
      if (i != rank) p.isend(i, bytes);
    p.wait_since(first);
  }
}

// ompi_coll_base_bcast_intra_split_bintree (segment size 0: each half in one piece)
void bcast_split_bintree(Builder& b, const Group& g, int root, Vec v) {
  const int size = g.size();
  uint64_t counts[2] = {(v.count + 1) / 2, 0};
  counts[1] = v.count - counts[0];
  if (counts[0] == 0 || counts[1] == 0) {  // too small to split: ompi_coll_base_bcast_intra_chain, fan-out 1
    bcast_generic(b, g, root, v, v.count, chain_tree, 1);
    return;
  }
  for (int rank = 0; rank < size; rank++) {
    Proc p(b, g, rank);
    Tree t = build_tree(2, size, rank, root);
    int lr = ((rank + size - root) % size + 1) % 2;
    if (rank == root) {
      for (size_t i = 0; i < t.next.size() && i < 2; i++) p.send(t.next[i], v.bytes(counts[i]));
    } else if (!t.next.empty()) {
      uint32_t r = p.irecv(t.prev, v.bytes(counts[lr]));
      p.wait(r);
      for (int child : t.next) p.send(child, v.bytes(counts[lr]));
    } else {
      p.recv(t.prev, v.bytes(counts[lr]));
    }
    p.next_round();
    int pair = lr == 0 ? (rank + 1) % size : (rank + size - 1) % size;
    if (size % 2 != 0 && rank != root) {
      p.sendrecv(pair, v.bytes(counts[lr]), pair, v.bytes(counts[(lr + 1) % 2]));
    } else if (size % 2 == 0) {
      if (rank == root) p.send((root + size - 1) % size, v.bytes(counts[1]));
      else if (rank == (root + size - 1) % size) p.recv(root, v.bytes(counts[1]));
      else p.sendrecv(pair, v.bytes(counts[lr]), pair, v.bytes(counts[(lr + 1) % 2]));
    }
  }
}

// The binomial scatter that starts ompi_coll_base_bcast_intra_scatter_allgather: each rank
// receives its subtree's blocks from its parent, then passes on all but its own. Ranks are visited in
// virtual rank order, parents before children, so that a child's count is what its parent sent.
// Returns each rank's `recv_count` variable after the scatter (the allgather reuses it).
std::vector<int64_t> bcast_binomial_scatter(Builder& b, const Group& g, int root, Vec v, uint64_t sc) {
  const int size = g.size();
  const int64_t count = static_cast<int64_t>(v.count), scatter = static_cast<int64_t>(sc);
  std::vector<int64_t> received(size, 0), recv_var(size, 0);
  for (int vrank = 0; vrank < size; vrank++) {
    int rank = (vrank + root) % size;
    Proc p(b, g, rank);
    int64_t cur = vrank == 0 ? count : 0;
    int mask = 1;
    while (mask < size) {
      if (vrank & mask) {
        recv_var[vrank] = count - vrank * scatter;
        if (recv_var[vrank] > 0) {
          p.recv((rank - mask + size) % size, v.bytes(static_cast<uint64_t>(recv_var[vrank])));
          cur = received[vrank];
        }
        break;
      }
      mask <<= 1;
    }
    for (mask >>= 1; mask > 0; mask >>= 1) {
      if (vrank + mask < size) {
        int64_t send_count = cur - scatter * mask;
        if (send_count > 0) {
          p.send((rank + mask) % size, v.bytes(static_cast<uint64_t>(send_count)));
          received[vrank + mask] = send_count;
          cur -= send_count;
        }
      }
    }
    p.next_round();
  }
  return recv_var;
}

// ompi_coll_base_bcast_intra_scatter_allgather: binomial scatter, recursive doubling allgather. The
// allgather's sizes follow each rank's curr_count and recv_count as the library's code updates them.
void bcast_scatter_allgather(Builder& b, const Group& g, int root, Vec v) {
  const int size = g.size();
  if (v.count < static_cast<uint64_t>(size)) return bcast_linear(b, g, root, v.total());
  const int64_t count = static_cast<int64_t>(v.count);
  const int64_t sc = (count + size - 1) / size;
  std::vector<int64_t> rcv = bcast_binomial_scatter(b, g, root, v, static_cast<uint64_t>(sc));
  std::vector<int64_t> curr(size);
  for (int vr = 0; vr < size; vr++) curr[vr] = std::max<int64_t>(0, std::min<int64_t>(sc, count - vr * sc));
  auto rank_of = [&](int vrank) { return (vrank + root) % size; };
  auto bytes = [&](int64_t n) { return v.bytes(static_cast<uint64_t>(std::max<int64_t>(n, 0))); };
  for (int mask = 1; mask < size; mask <<= 1) {
    std::vector<int64_t> before = curr;
    for (int vrank = 0; vrank < size; vrank++) {
      int vremote = vrank ^ mask;
      if (vremote >= size) continue;
      Proc p(b, g, rank_of(vrank));
      int64_t posted = std::max<int64_t>(0, count - (vremote / mask * mask) * sc);
      p.sendrecv(rank_of(vremote), bytes(before[vrank]), rank_of(vremote), bytes(posted));
      rcv[vrank] = before[vremote];
      curr[vrank] += before[vremote];
    }
    // ranks whose partner tree is cut short by the size get the data by recursive halving
    for (int rh = mask >> 1; rh > 0; rh >>= 1) {
      std::vector<std::pair<int, int64_t>> arrivals;
      for (int vrank = 0; vrank < size; vrank++) {
        int vremote_tree_root = (vrank ^ mask) / mask * mask, vrank_tree_root = vrank / mask * mask;
        if (vremote_tree_root + mask <= size) continue;
        int nprocs_alldata = size - vrank_tree_root - mask;
        int vr = vrank ^ rh;
        int tree_root = vrank / (rh << 1) * (rh << 1);
        Proc p(b, g, rank_of(vrank));
        if (vr > vrank && vrank < tree_root + nprocs_alldata && vr >= tree_root + nprocs_alldata) {
          p.send(rank_of(vr), bytes(rcv[vrank]));
          arrivals.emplace_back(vr, rcv[vrank]);
        } else if (vr < vrank && vr < tree_root + nprocs_alldata && vrank >= tree_root + nprocs_alldata) {
          p.recv(rank_of(vr), v.total());
        }
      }
      for (auto [vr, n] : arrivals) {
        rcv[vr] = n;
        curr[vr] += n;
      }
    }
    for (int vrank = 0; vrank < size; vrank++) Proc(b, g, rank_of(vrank)).next_round();
  }
}

// ompi_coll_tuned_bcast_intra_dec_fixed
int bcast_decision(int P, uint64_t total) {
  if (P < 4) {
    if (total < 32) return 3;
    if (total < 256) return 5;
    if (total < 512) return 3;
    if (total < 1024) return 7;
    if (total < 32768) return 1;
    if (total < 131072) return 5;
    if (total < 262144) return 2;
    if (total < 524288) return 1;
    if (total < 1048576) return 6;
    return 5;
  }
  if (P < 8) {
    if (total < 64) return 5;
    if (total < 128) return 6;
    if (total < 2048) return 5;
    if (total < 8192) return 6;
    if (total < 1048576) return 1;
    return 2;
  }
  if (P < 16) {
    if (total < 8) return 7;
    if (total < 64) return 5;
    if (total < 4096) return 7;
    if (total < 16384) return 5;
    if (total < 32768) return 6;
    return 1;
  }
  if (P < 32) {
    if (total < 4096) return 7;
    if (total < 1048576) return 6;
    return 8;
  }
  if (P < 64) return total < 2048 ? 6 : 7;
  if (P < 128) return 7;
  if (P < 256) {
    if (total < 2) return 6;
    if (total < 16384) return 5;
    if (total < 32768) return 1;
    if (total < 65536) return 5;
    return 7;
  }
  if (P < 1024) {
    if (total < 16384) return 7;
    if (total < 32768) return 4;
    return 7;
  }
  if (P < 2048) return total < 524288 ? 7 : 8;
  if (P < 4096) return total < 262144 ? 7 : 8;
  if (total < 8192) return 7;
  if (total < 16384) return 5;
  if (total < 262144) return 7;
  return 8;
}

// ompi_coll_tuned_bcast_intra_do_this with segment size 0 and fan-out 0
std::string bcast_tuned(Builder& b, const Group& g, int root, Vec v) {
  const int size = g.size();
  if (size < 2) return "Open MPI 4.1 coll/tuned Bcast on one rank (no messages)";
  const int alg = bcast_decision(size, v.total());
  switch (alg) {
    case 1:
      bcast_linear(b, g, root, v.total());
      return "basic_linear (coll_base_bcast.c: ompi_coll_base_bcast_intra_basic_linear)";
    case 2:  // COLL_BASE_UPDATE_CHAIN with fan-out 0: ompi_coll_base_topo_build_chain raises it to 1
      bcast_generic(b, g, root, v, v.count, chain_tree, 1);
      return "chain, fan-out 1, one segment (coll_base_bcast.c: ompi_coll_base_bcast_intra_chain)";
    case 3:
      bcast_generic(b, g, root, v, v.count, chain_tree, 1);
      return "pipeline, one segment (coll_base_bcast.c: ompi_coll_base_bcast_intra_pipeline)";
    case 4:
      bcast_split_bintree(b, g, root, v);
      return "split binary tree (coll_base_bcast.c: ompi_coll_base_bcast_intra_split_bintree)";
    case 5:
      bcast_generic(b, g, root, v, v.count, bin_tree, 0);
      return "binary tree, one segment (coll_base_bcast.c: ompi_coll_base_bcast_intra_bintree)";
    case 6:
      bcast_generic(b, g, root, v, v.count, binomial_tree, 0);
      return "binomial tree, one segment (coll_base_bcast.c: ompi_coll_base_bcast_intra_binomial)";
    case 7:
      bcast_generic(b, g, root, v, v.count, knomial_tree, 4);
      return "k-nomial tree, radix 4 (coll_base_bcast.c: ompi_coll_base_bcast_intra_knomial)";
    default:
      bcast_scatter_allgather(b, g, root, v);
      return "scatter + recursive doubling allgather (coll_base_bcast.c: ompi_coll_base_bcast_intra_scatter_allgather)";
  }
}

// ---- Reduce (coll_base_reduce.c) -----------------------------------------------------------------------
// ompi_coll_base_reduce_generic with max_outstanding_reqs 0: leaves send with blocking sends
void reduce_generic(Builder& b, const Group& g, int root, Vec v, uint64_t segcount,
                    Tree (*tree_of)(int size, int rank, int root, int arg), int arg) {
  const int size = g.size();
  if (segcount == 0) segcount = 1;
  const uint64_t nseg = v.count == 0 ? 1 : (v.count + segcount - 1) / segcount;
  for (int rank = 0; rank < size; rank++) {
    Proc p(b, g, rank);
    Tree t = tree_of(size, rank, root, arg);
    if (!t.next.empty()) {
      int64_t reqs[2] = {-1, -1};
      int inbi = 0;
      uint64_t recvcount = 0, prevcount = 0;
      for (uint64_t s = 0; s <= nseg; s++) {
        prevcount = recvcount;
        recvcount = s == nseg - 1 ? v.count - segcount * s : segcount;
        for (size_t i = 0; i < t.next.size(); i++) {
          if (s < nseg) reqs[inbi] = p.irecv(t.next[i], v.bytes(recvcount));
          if (reqs[inbi ^ 1] >= 0) p.wait(static_cast<uint32_t>(reqs[inbi ^ 1]));
          reqs[inbi ^ 1] = -1;
          if (i > 0) {
            p.reduce(v.bytes(recvcount));
          } else if (s > 0) {
            p.reduce(v.bytes(prevcount));
            if (rank != root) p.send(t.prev, v.bytes(prevcount));
            if (s == nseg) break;
          }
          inbi ^= 1;
        }
      }
    } else {
      for (uint64_t left = v.count, seg = segcount; left > 0; left -= seg) {
        if (left < seg) seg = left;
        p.send(t.prev, v.bytes(seg));
      }
    }
  }
}

Tree in_order_bmtree(int size, int rank, int root, int) { return build_in_order_bmtree(size, rank, root); }
Tree in_order_bintree(int size, int rank, int, int) { return build_in_order_bintree(size, rank); }

// ompi_coll_base_reduce_intra_basic_linear: the root receives from size-1 down to 0
void reduce_linear(Builder& b, const Group& g, int root, Vec v) {
  const int size = g.size();
  for (int rank = 0; rank < size; rank++) {
    Proc p(b, g, rank);
    if (rank != root) {
      p.send(root, v.total());
      continue;
    }
    if (rank != size - 1) p.recv(size - 1, v.total());
    for (int i = size - 2; i >= 0; --i) {
      if (i != rank) p.recv(i, v.total());
      p.reduce(v.total());
    }
  }
}

// ompi_coll_base_reduce_intra_in_order_binary: the generic reduce to rank size-1, then to the root
void reduce_in_order_binary(Builder& b, const Group& g, int root, Vec v) {
  const int size = g.size();
  const int io_root = size - 1;
  reduce_generic(b, g, io_root, v, v.count, in_order_bintree, 0);
  if (io_root != root) {
    Proc(b, g, root).recv(io_root, v.total());
    Proc(b, g, io_root).send(root, v.total());
  }
}

// The first half of the Rabenseifner reductions (ompi_coll_base_reduce_intra_redscat_gather,
// ompi_coll_base_allreduce_intra_redscat_allgather): the count folded onto a power of two, then a
// reduce-scatter by recursive halving. Fills each rank's vrank and window counts.
struct Halving {
  int nsteps = 0, pof2 = 1, rem = 0;
  std::vector<int> vrank;
  std::vector<std::vector<uint64_t>> rindex, sindex, rcount, scount;
};

Halving redscat_halving(Builder& b, const Group& g, Vec v, bool nbc_form, std::vector<NbcSchedule*>* nbc) {
  const int size = g.size();
  Halving h;
  h.nsteps = ceil_log2(pow2_floor(size));
  h.pof2 = 1 << h.nsteps;
  h.rem = size - h.pof2;
  h.vrank.assign(size, -1);
  h.rindex.assign(size, std::vector<uint64_t>(std::max(h.nsteps, 1)));
  h.sindex = h.rcount = h.scount = h.rindex;
  for (int rank = 0; rank < size; rank++) {
    Proc p(b, g, rank);
    NbcSchedule* s = nbc_form ? (*nbc)[rank] : nullptr;
    if (rank < 2 * h.rem) {
      uint64_t lhalf = v.count / 2, rhalf = v.count - lhalf;
      if (rank % 2 != 0) {
        if (s) {
          s->send(rank - 1, v.bytes(lhalf));
          s->recv(rank - 1, v.bytes(rhalf), true);
          s->op(v.bytes(rhalf), true);
          s->send(rank - 1, v.bytes(rhalf), true);
        } else {
          p.sendrecv(rank - 1, v.bytes(lhalf), rank - 1, v.bytes(rhalf));
          p.reduce(v.bytes(rhalf));
          p.send(rank - 1, v.bytes(rhalf));
        }
        h.vrank[rank] = -1;
      } else {
        if (s) {
          s->send(rank + 1, v.bytes(rhalf));
          s->recv(rank + 1, v.bytes(lhalf), true);
          s->op(v.bytes(lhalf), true);
          s->recv(rank + 1, v.bytes(rhalf), true);
        } else {
          p.sendrecv(rank + 1, v.bytes(rhalf), rank + 1, v.bytes(lhalf));
          p.reduce(v.bytes(lhalf));
          p.recv(rank + 1, v.bytes(rhalf));
        }
        h.vrank[rank] = rank / 2;
      }
    } else {
      h.vrank[rank] = rank - h.rem;
    }
    if (!s) p.next_round();
    const int vrank = h.vrank[rank];
    if (vrank == -1) continue;
    auto &ri = h.rindex[rank], &si = h.sindex[rank], &rc = h.rcount[rank], &sc = h.scount[rank];
    int step = 0;
    uint64_t wsize = v.count;
    si[0] = ri[0] = 0;
    for (int mask = 1; mask < h.pof2; mask <<= 1) {
      int vdest = vrank ^ mask;
      int dest = vdest < h.rem ? vdest * 2 : vdest + h.rem;
      if (rank < dest) {
        rc[step] = wsize / 2;
        sc[step] = wsize - rc[step];
        si[step] = ri[step] + rc[step];
      } else {
        sc[step] = wsize / 2;
        rc[step] = wsize - sc[step];
        ri[step] = si[step] + sc[step];
      }
      if (s) {
        s->send(dest, v.bytes(sc[step]));
        s->recv(dest, v.bytes(rc[step]), true);
        s->op(v.bytes(rc[step]), true);
      } else {
        p.sendrecv(dest, v.bytes(sc[step]), dest, v.bytes(rc[step]));
        p.reduce(v.bytes(rc[step]));
        p.next_round();
      }
      if (step + 1 < h.nsteps) {
        ri[step + 1] = ri[step];
        si[step + 1] = ri[step];
        wsize = rc[step];
        step++;
      }
    }
  }
  return h;
}

// ompi_coll_base_reduce_intra_redscat_gather (and libnbc's red_sched_redscat_gather): Rabenseifner's
// reduce-scatter, then a binomial gather to the root
void reduce_redscat_gather(Builder& b, const Group& g, int root, Vec v, std::vector<NbcSchedule*>* nbc) {
  const int size = g.size();
  Halving h = redscat_halving(b, g, v, nbc != nullptr, nbc);
  int vroot = 0;
  std::vector<int> vrank = h.vrank;
  if (root < 2 * h.rem) {
    if (root % 2 != 0) {
      vroot = 0;
      // the excluded odd root receives its window from rank 0 (vrank 0)
      auto &ri = h.rindex[root], &si = h.sindex[root], &rc = h.rcount[root], &sc = h.scount[root];
      uint64_t wsize = v.count;
      for (int step = 0, mask = 1; mask < h.pof2; mask *= 2, step++) {
        rc[step] = wsize / 2;
        sc[step] = wsize - rc[step];
        ri[step] = 0;
        si[step] = rc[step];
        wsize /= 2;
      }
      for (int rank = 0; rank < size; rank++) {
        if (rank == root) {
          Proc p(b, g, rank);
          if (nbc) (*nbc)[rank]->recv(0, v.bytes(rc[h.nsteps - 1]), true);
          else p.recv(0, v.bytes(rc[h.nsteps - 1]));
          vrank[rank] = 0;
        } else if (vrank[rank] == 0) {
          Proc p(b, g, rank);
          if (nbc) (*nbc)[rank]->send(root, v.bytes(h.rcount[rank][h.nsteps - 1]), true);
          else p.send(root, v.bytes(h.rcount[rank][h.nsteps - 1]));
          vrank[rank] = -1;
        }
      }
    } else {
      vroot = root / 2;
    }
  } else {
    vroot = root - h.rem;
  }
  for (int rank = 0; rank < size; rank++) {
    if (vrank[rank] == -1) continue;
    Proc p(b, g, rank);
    int step = h.nsteps - 1;
    for (int mask = h.pof2 >> 1; mask > 0; mask >>= 1) {
      int vdest = vrank[rank] ^ mask;
      int dest = vdest < h.rem ? vdest * 2 : vdest + h.rem;
      if (vdest == 0 && root < 2 * h.rem && root % 2 != 0) dest = root;
      int vdest_tree = vdest >> step << step, vroot_tree = vroot >> step << step;
      if (vdest_tree == vroot_tree) {
        if (nbc) (*nbc)[rank]->send(dest, v.bytes(h.rcount[rank][step]));
        else p.send(dest, v.bytes(h.rcount[rank][step]));
        break;
      }
      if (nbc) (*nbc)[rank]->recv(dest, v.bytes(h.scount[rank][step]), true);
      else p.recv(dest, v.bytes(h.scount[rank][step]));
      step--;
    }
  }
}

// ompi_coll_tuned_reduce_intra_dec_fixed (commutative operation)
int reduce_decision(int P, uint64_t total) {
  if (P < 4) {
    if (total < 8) return 7;
    if (total < 16) return 4;
    if (total < 32) return 3;
    if (total < 262144) return 1;
    if (total < 524288) return 3;
    if (total < 1048576) return 2;
    return 3;
  }
  if (P < 8) {
    if (total < 4096) return 4;
    if (total < 65536) return 2;
    if (total < 262144) return 5;
    if (total < 524288) return 1;
    if (total < 1048576) return 5;
    return 1;
  }
  if (P < 16) return total < 8192 ? 4 : 5;
  if (P < 32) return total < 4096 ? 4 : 5;
  if (P < 256) return 5;
  if (P < 512) {
    if (total < 8192) return 5;
    if (total < 16384) return 6;
    return 5;
  }
  if (P < 2048) return 5;
  if (P < 4096) {
    if (total < 512) return 5;
    if (total < 1024) return 6;
    if (total < 8192) return 5;
    if (total < 16384) return 6;
    return 5;
  }
  if (total < 16) return 5;
  if (total < 32) return 6;
  if (total < 1024) return 5;
  if (total < 2048) return 6;
  if (total < 8192) return 5;
  if (total < 16384) return 6;
  return 5;
}

std::string reduce_tuned(Builder& b, const Group& g, int root, Vec v) {
  const int size = g.size();
  if (size < 2) return "Open MPI 4.1 coll/tuned Reduce on one rank (no messages)";
  switch (reduce_decision(size, v.total())) {
    case 1:
      reduce_linear(b, g, root, v);
      return "linear (coll_base_reduce.c: ompi_coll_base_reduce_intra_basic_linear)";
    case 2:  // COLL_BASE_UPDATE_CHAIN with fan-out 0 builds a chain of fan-out 1
      reduce_generic(b, g, root, v, v.count, chain_tree, 1);
      return "chain, fan-out 1, one segment (coll_base_reduce.c: ompi_coll_base_reduce_intra_chain)";
    case 3:
      reduce_generic(b, g, root, v, v.count, chain_tree, 1);
      return "pipeline, one segment (coll_base_reduce.c: ompi_coll_base_reduce_intra_pipeline)";
    case 4:
      reduce_generic(b, g, root, v, v.count, bin_tree, 0);
      return "binary tree, one segment (coll_base_reduce.c: ompi_coll_base_reduce_intra_binary)";
    case 5:
      reduce_generic(b, g, root, v, v.count, in_order_bmtree, 0);
      return "binomial tree, one segment (coll_base_reduce.c: ompi_coll_base_reduce_intra_binomial)";
    case 6:
      reduce_in_order_binary(b, g, root, v);
      return "in-order binary tree (coll_base_reduce.c: ompi_coll_base_reduce_intra_in_order_binary)";
    default:
      if (pow2_floor(size) < 2 || v.count < static_cast<uint64_t>(pow2_floor(size))) {
        reduce_linear(b, g, root, v);
        return "linear, as redscat_gather falls back to for fewer elements than processes "
               "(coll_base_reduce.c: ompi_coll_base_reduce_intra_redscat_gather)";
      }
      reduce_redscat_gather(b, g, root, v, nullptr);
      return "Rabenseifner reduce-scatter + binomial gather (coll_base_reduce.c: "
             "ompi_coll_base_reduce_intra_redscat_gather)";
  }
}

// ---- Allreduce (coll_base_allreduce.c) -----------------------------------------------------------------
// ompi_coll_base_allreduce_intra_recursivedoubling
void allreduce_recursive_doubling(Builder& b, const Group& g, Vec v) {
  const int size = g.size();
  const int adjsize = pow2_floor(size), extra = size - adjsize;
  for (int rank = 0; rank < size; rank++) {
    Proc p(b, g, rank);
    int newrank;
    if (rank < 2 * extra) {
      if (rank % 2 == 0) {
        p.send(rank + 1, v.total());
        newrank = -1;
      } else {
        p.recv(rank - 1, v.total());
        p.reduce(v.total());
        newrank = rank >> 1;
      }
    } else {
      newrank = rank - extra;
    }
    p.next_round();
    for (int distance = 1; distance < adjsize && newrank >= 0; distance <<= 1) {
      int newremote = newrank ^ distance;
      int remote = newremote < extra ? newremote * 2 + 1 : newremote + extra;
      p.sendrecv(remote, v.total(), remote, v.total());
      p.reduce(v.total());
      p.next_round();
    }
    if (rank < 2 * extra) {
      if (rank % 2 == 0) p.recv(rank + 1, v.total());
      else p.send(rank - 1, v.total());
    }
  }
}

// ompi_coll_base_allreduce_intra_ring: reduce-scatter then allgather around the ring, blocks of
// count/size elements (the first count % size one element larger)
void allreduce_ring(Builder& b, const Group& g, Vec v) {
  const int size = g.size();
  if (v.count < static_cast<uint64_t>(size)) return allreduce_recursive_doubling(b, g, v);
  b.expect_pairs(size);
  const uint64_t late = v.count / size, split = v.count % size, early = split ? late + 1 : late;
  auto block = [&](int blk) { return v.bytes(static_cast<uint64_t>(blk) < split ? early : late); };
  for (int rank = 0; rank < size; rank++) {
    Proc p(b, g, rank);
    const int send_to = (rank + 1) % size, recv_from = (rank + size - 1) % size;
    uint32_t prev = p.irecv(recv_from, v.bytes(early));
    p.send(send_to, block(rank));
    for (int k = 2; k < size; k++) {
      const int prevblock = (rank + size - k + 1) % size;
      uint32_t cur = p.irecv(recv_from, v.bytes(early));
      p.wait(prev);
      p.reduce(block(prevblock));
      p.send(send_to, block(prevblock));
      prev = cur;
    }
    p.wait(prev);
    p.reduce(block((rank + 1) % size));
    p.next_round();
    for (int k = 0; k < size - 1; k++) {
      const int send_data_from = (rank + 1 + size - k) % size;
      p.sendrecv(send_to, block(send_data_from), recv_from, v.bytes(early));
      p.next_round();
    }
  }
}

// ompi_coll_base_allreduce_intra_redscat_allgather (Rabenseifner)
void allreduce_redscat_allgather(Builder& b, const Group& g, Vec v) {
  const int size = g.size();
  Halving h = redscat_halving(b, g, v, false, nullptr);
  for (int rank = 0; rank < size; rank++) {
    Proc p(b, g, rank);
    if (h.vrank[rank] != -1) {
      int step = h.nsteps - 1;
      for (int mask = h.pof2 >> 1; mask > 0; mask >>= 1) {
        int vdest = h.vrank[rank] ^ mask;
        int dest = vdest < h.rem ? vdest * 2 : vdest + h.rem;
        p.sendrecv(dest, v.bytes(h.rcount[rank][step]), dest, v.bytes(h.scount[rank][step]));
        p.next_round();
        step--;
      }
    }
    if (rank < 2 * h.rem) {
      if (rank % 2 != 0) p.recv(rank - 1, v.total());
      else p.send(rank + 1, v.total());
    }
  }
}

// ompi_coll_tuned_allreduce_intra_dec_fixed (commutative operation)
int allreduce_decision(int P, uint64_t total) {
  if (P < 4) {
    if (total < 8) return 4;
    if (total < 4096) return 3;
    if (total < 8192) return 4;
    if (total < 16384) return 3;
    if (total < 65536) return 4;
    if (total < 262144) return 5;
    return 6;
  }
  if (P < 8) {
    if (total < 16) return 4;
    if (total < 8192) return 3;
    return 6;
  }
  if (P < 16) return total < 8192 ? 3 : 6;
  if (P < 32) {
    if (total < 64) return 5;
    if (total < 4096) return 3;
    return 6;
  }
  if (P < 64) return total < 128 ? 5 : 6;
  if (P < 128) return total < 262144 ? 3 : 6;
  if (P < 256) {
    if (total < 131072) return 2;
    if (total < 262144) return 3;
    return 6;
  }
  if (P < 512) return total < 4096 ? 2 : 6;
  if (P < 2048) {
    if (total < 2048) return 2;
    if (total < 16384) return 3;
    return 6;
  }
  if (P < 4096) {
    if (total < 2048) return 2;
    if (total < 4096) return 5;
    if (total < 16384) return 3;
    return 6;
  }
  if (total < 2048) return 2;
  if (total < 16384) return 5;
  if (total < 32768) return 3;
  return 6;
}

std::string allreduce_tuned(Builder& b, const Group& g, Vec v) {
  const int size = g.size();
  if (size < 2) return "Open MPI 4.1 coll/tuned Allreduce on one rank (no messages)";
  switch (allreduce_decision(size, v.total())) {
    case 1:
      reduce_linear(b, g, 0, v);
      bcast_linear(b, g, 0, v.total());
      return "basic_linear: linear reduce to 0, linear bcast (coll_base_allreduce.c: "
             "ompi_coll_base_allreduce_intra_basic_linear)";
    case 2: {
      std::string r = reduce_tuned(b, g, 0, v);
      std::string c = bcast_tuned(b, g, 0, v);
      return "nonoverlapping: reduce to 0 [" + r + "], then bcast [" + c +
             "] (coll_base_allreduce.c: ompi_coll_base_allreduce_intra_nonoverlapping)";
    }
    case 3:
      allreduce_recursive_doubling(b, g, v);
      return "recursive doubling (coll_base_allreduce.c: ompi_coll_base_allreduce_intra_recursivedoubling)";
    case 4:
      allreduce_ring(b, g, v);
      return "ring (coll_base_allreduce.c: ompi_coll_base_allreduce_intra_ring)";
    case 5:  // segment size 0: COLL_BASE_COMPUTED_SEGCOUNT keeps the count, count < size * count
      allreduce_ring(b, g, v);
      return "segmented ring with segment size 0, i.e. the ring (coll_base_allreduce.c: "
             "ompi_coll_base_allreduce_intra_ring_segmented)";
    default:
      if (v.count < static_cast<uint64_t>(pow2_floor(size))) {
        reduce_linear(b, g, 0, v);
        bcast_linear(b, g, 0, v.total());
        return "basic_linear, as redscat_allgather falls back to for fewer elements than processes "
               "(coll_base_allreduce.c: ompi_coll_base_allreduce_intra_redscat_allgather)";
      }
      allreduce_redscat_allgather(b, g, v);
      return "Rabenseifner reduce-scatter + allgather (coll_base_allreduce.c: "
             "ompi_coll_base_allreduce_intra_redscat_allgather)";
  }
}

// ---- Gather, Scatter (coll_base_gather.c, coll_base_scatter.c, coll_basic_gatherv.c, ...) -------------
void gather_linear(Builder& b, const Group& g, int root, uint64_t block) {
  for (int rank = 0; rank < g.size(); rank++) {
    Proc p(b, g, rank);
    if (rank != root) {
      p.send(root, block);
      continue;
    }
    for (int i = 0; i < g.size(); i++)
      if (i != rank) p.recv(i, block);
  }
}

// ompi_coll_base_gather_intra_binomial: in-order binomial tree, subtrees gathered up
void gather_binomial(Builder& b, const Group& g, int root, uint64_t block) {
  const int size = g.size();
  for (int rank = 0; rank < size; rank++) {
    Proc p(b, g, rank);
    Tree t = build_in_order_bmtree(size, rank, root);
    int vrank = (rank - root + size) % size;
    uint64_t total = 1;  // blocks held
    if (vrank % 2 == 0) {
      for (int child : t.next) {
        int vkid = (child - root + size) % size;
        int mycount = std::min(vkid - vrank, size - vkid);
        p.recv(child, block * static_cast<uint64_t>(size) - block * total);
        total += static_cast<uint64_t>(mycount);
      }
    }
    if (rank != root) p.send(t.prev, block * total);
  }
}

// ompi_coll_base_gather_intra_linear_sync with first segment size 0: the whole block goes first, then an
// empty second segment
void gather_linear_sync(Builder& b, const Group& g, int root, uint64_t block) {
  for (int rank = 0; rank < g.size(); rank++) {
    Proc p(b, g, rank);
    if (rank != root) {
      p.recv(root, 0);
      p.send(root, block);
      p.send(root, 0);
      continue;
    }
    std::vector<uint32_t> second;
    for (int i = 0; i < g.size(); i++) {
      if (i == rank) continue;
      uint32_t first = p.irecv(i, block);
      p.send(i, 0);
      second.push_back(p.irecv(i, 0));
      p.wait(first);
    }
    // ompi_request_wait_all over the second segments (the first ones are done)
    for (uint32_t r : second) p.wait(r);
  }
}

int gather_decision(int P, uint64_t block) {
  if (P < 4) {
    if (block < 2) return 3;
    if (block < 4) return 1;
    if (block < 32768) return 2;
    if (block < 65536) return 1;
    if (block < 131072) return 2;
    return 3;
  }
  if (P < 8) {
    if (block < 1024) return 2;
    if (block < 8192) return 1;
    if (block < 32768) return 2;
    if (block < 262144) return 1;
    return 3;
  }
  if (P < 256) return 2;
  if (P < 512) {
    if (block < 2048) return 2;
    if (block < 8192) return 1;
    return 2;
  }
  return 2;
}

std::string gather_tuned(Builder& b, const Group& g, int root, uint64_t block) {
  if (g.size() < 2) return "Open MPI 4.1 coll/tuned Gather on one rank (no messages)";
  switch (gather_decision(g.size(), block)) {
    case 1:
      gather_linear(b, g, root, block);
      return "basic_linear (coll_base_gather.c: ompi_coll_base_gather_intra_basic_linear)";
    case 2:
      gather_binomial(b, g, root, block);
      return "binomial (coll_base_gather.c: ompi_coll_base_gather_intra_binomial)";
    default:
      gather_linear_sync(b, g, root, block);
      return "linear_sync, first segment size 0 (coll_base_gather.c: ompi_coll_base_gather_intra_linear_sync)";
  }
}

// ompi_coll_base_scatter_intra_basic_linear
void scatter_linear(Builder& b, const Group& g, int root, uint64_t block) {
  for (int rank = 0; rank < g.size(); rank++) {
    Proc p(b, g, rank);
    if (rank != root) {
      p.recv(root, block);
      continue;
    }
    for (int i = 0; i < g.size(); i++)
      if (i != rank) p.send(i, block);
  }
}

// ompi_coll_base_scatter_intra_binomial: in-order binomial tree, children served last first
void scatter_binomial(Builder& b, const Group& g, int root, uint64_t block) {
  const int size = g.size();
  for (int rank = 0; rank < size; rank++) {
    Proc p(b, g, rank);
    Tree t = build_in_order_bmtree(size, rank, root);
    int vrank = (rank - root + size) % size;
    if (vrank % 2) {
      p.recv(t.prev, block);
      continue;
    }
    if (rank != root) {
      int vparent = (t.prev - root + size) % size;
      int subtree = std::min(vrank - vparent, size - vrank);
      p.recv(t.prev, block * static_cast<uint64_t>(subtree));
    }
    for (int i = static_cast<int>(t.next.size()) - 1; i >= 0; i--) {
      int vchild = (t.next[i] - root + size) % size;
      int send_count = std::min(vchild - vrank, size - vchild);
      p.send(t.next[i], block * static_cast<uint64_t>(send_count));
    }
  }
}

// ompi_coll_base_scatter_intra_linear_nb with coll_tuned_scatter_blocking_send_ratio 0: all isends
void scatter_linear_nb(Builder& b, const Group& g, int root, uint64_t block) {
  for (int rank = 0; rank < g.size(); rank++) {
    Proc p(b, g, rank);
    if (rank != root) {
      p.recv(root, block);
      continue;
    }
    uint32_t first = p.next_request();
    for (int i = 0; i < g.size(); i++)
      if (i != rank) p.isend(i, block);
    p.wait_since(first);
  }
}

int scatter_decision(int P, uint64_t block) {
  if (P < 4) {
    if (block < 2) return 3;
    if (block < 131072) return 1;
    if (block < 262144) return 3;
    return 1;
  }
  if (P < 8) {
    if (block < 2048) return 2;
    if (block < 4096) return 1;
    if (block < 8192) return 2;
    if (block < 32768) return 1;
    if (block < 1048576) return 3;
    return 1;
  }
  if (P < 16) {
    if (block < 16384) return 2;
    if (block < 1048576) return 3;
    return 1;
  }
  if (P < 32) {
    if (block < 16384) return 2;
    if (block < 32768) return 1;
    return 3;
  }
  if (P < 64) {
    if (block < 512) return 2;
    if (block < 8192) return 3;
    if (block < 16384) return 2;
    return 3;
  }
  return block < 512 ? 2 : 3;
}

std::string scatter_tuned(Builder& b, const Group& g, int root, uint64_t block) {
  if (g.size() < 2) return "Open MPI 4.1 coll/tuned Scatter on one rank (no messages)";
  switch (scatter_decision(g.size(), block)) {
    case 1:
      scatter_linear(b, g, root, block);
      return "basic_linear (coll_base_scatter.c: ompi_coll_base_scatter_intra_basic_linear)";
    case 2:
      scatter_binomial(b, g, root, block);
      return "binomial (coll_base_scatter.c: ompi_coll_base_scatter_intra_binomial)";
    default:
      scatter_linear_nb(b, g, root, block);
      return "linear_nb (coll_base_scatter.c: ompi_coll_base_scatter_intra_linear_nb)";
  }
}

// mca_coll_basic_gatherv_intra: zero counts send nothing
void gatherv_linear(Builder& b, const Group& g, int root, const std::vector<uint64_t>& blocks) {
  for (int rank = 0; rank < g.size(); rank++) {
    Proc p(b, g, rank);
    if (rank != root) {
      if (blocks[rank] > 0) p.send(root, blocks[rank]);
      continue;
    }
    for (int i = 0; i < g.size(); i++)
      if (i != rank && blocks[i] > 0) p.recv(i, blocks[i]);
  }
}

// mca_coll_basic_scatterv_intra
void scatterv_linear(Builder& b, const Group& g, int root, const std::vector<uint64_t>& blocks) {
  for (int rank = 0; rank < g.size(); rank++) {
    Proc p(b, g, rank);
    if (rank != root) {
      if (blocks[rank] > 0) p.recv(root, blocks[rank]);
      continue;
    }
    for (int i = 0; i < g.size(); i++)
      if (i != rank && blocks[i] > 0) p.send(i, blocks[i]);
  }
}

// ---- Allgather(v) (coll_base_allgather.c, coll_base_allgatherv.c) --------------------------------------
// the bruck allgather(v): block counts of rank r's data are blocks[r]
void allgather_bruck(Builder& b, const Group& g, const std::vector<uint64_t>& blocks) {
  const int size = g.size();
  for (int rank = 0; rank < size; rank++) {
    Proc p(b, g, rank);
    for (int distance = 1; distance < size; distance <<= 1) {
      int recvfrom = (rank + distance) % size, sendto = (rank - distance + size) % size;
      int blockcount = distance <= (size >> 1) ? distance : size - distance;
      uint64_t sbytes = 0, rbytes = 0;
      for (int i = 0; i < blockcount; i++) {
        sbytes += blocks[(rank + i) % size];
        rbytes += blocks[(recvfrom + i) % size];
      }
      p.sendrecv(sendto, sbytes, recvfrom, rbytes);
      p.next_round();
    }
  }
}

// ompi_coll_base_allgather_intra_recursivedoubling (power-of-two sizes; else bruck)
void allgather_recursive_doubling(Builder& b, const Group& g, uint64_t block) {
  const int size = g.size();
  for (int rank = 0; rank < size; rank++) {
    Proc p(b, g, rank);
    for (int distance = 1; distance < size; distance <<= 1) {
      int remote = rank ^ distance;
      p.sendrecv(remote, block * static_cast<uint64_t>(distance), remote, block * static_cast<uint64_t>(distance));
      p.next_round();
    }
  }
}

// the ring allgather(v): step i passes on the block of rank (r - i)
void allgather_ring(Builder& b, const Group& g, const std::vector<uint64_t>& blocks) {
  const int size = g.size();
  b.expect_pairs(size);
  for (int rank = 0; rank < size; rank++) {
    Proc p(b, g, rank);
    int sendto = (rank + 1) % size, recvfrom = (rank - 1 + size) % size;
    for (int i = 0; i < size - 1; i++) {
      int recvdatafrom = (rank - i - 1 + size) % size, senddatafrom = (rank - i + size) % size;
      p.sendrecv(sendto, blocks[senddatafrom], recvfrom, blocks[recvdatafrom]);
      p.next_round();
    }
  }
}

// the neighbor exchange allgather(v) (even sizes; else the ring)
void allgather_neighbor(Builder& b, const Group& g, const std::vector<uint64_t>& blocks) {
  const int size = g.size();
  if (size % 2) return allgather_ring(b, g, blocks);
  for (int rank = 0; rank < size; rank++) {
    Proc p(b, g, rank);
    bool even = rank % 2 == 0;
    int neighbor[2], offset[2], recv_data_from[2];
    if (even) {
      neighbor[0] = (rank + 1) % size;
      neighbor[1] = (rank - 1 + size) % size;
      recv_data_from[0] = recv_data_from[1] = rank;
      offset[0] = 2;
      offset[1] = -2;
    } else {
      neighbor[0] = (rank - 1 + size) % size;
      neighbor[1] = (rank + 1) % size;
      recv_data_from[0] = recv_data_from[1] = neighbor[0];
      offset[0] = -2;
      offset[1] = 2;
    }
    p.sendrecv(neighbor[0], blocks[rank], neighbor[0], blocks[neighbor[0]]);
    p.next_round();
    int send_data_from = even ? rank : recv_data_from[0];
    for (int i = 1; i < size / 2; i++) {
      const int par = i % 2;
      recv_data_from[par] = (recv_data_from[par] + offset[par] + size) % size;
      uint64_t sbytes = blocks[send_data_from] + blocks[(send_data_from + 1) % size];
      uint64_t rbytes = blocks[recv_data_from[par]] + blocks[(recv_data_from[par] + 1) % size];
      p.sendrecv(neighbor[par], sbytes, neighbor[par], rbytes);
      p.next_round();
      send_data_from = recv_data_from[par];
    }
  }
}

void two_procs_exchange(Builder& b, const Group& g, const std::vector<uint64_t>& blocks) {
  for (int rank = 0; rank < 2; rank++) Proc(b, g, rank).sendrecv(rank ^ 1, blocks[rank], rank ^ 1, blocks[rank ^ 1]);
}

int allgather_decision(int P, uint64_t block) {
  if (P == 2) return 6;
  if (P < 32) return 3;
  if (P < 64) {
    if (block < 1024) return 3;
    if (block < 65536) return 5;
    return 4;
  }
  if (P < 128) {
    if (block < 512) return 3;
    if (block < 65536) return 5;
    return 4;
  }
  if (P < 256) {
    if (block < 512) return 3;
    if (block < 131072) return 5;
    if (block < 524288) return 4;
    if (block < 1048576) return 5;
    return 4;
  }
  if (P < 512) {
    if (block < 32) return 3;
    if (block < 128) return 2;
    if (block < 1024) return 3;
    if (block < 131072) return 5;
    if (block < 524288) return 4;
    if (block < 1048576) return 5;
    return 4;
  }
  if (P < 1024) {
    if (block < 64) return 3;
    if (block < 256) return 2;
    if (block < 2048) return 3;
    return 5;
  }
  if (P < 2048) {
    if (block < 4) return 3;
    if (block < 8) return 2;
    if (block < 16) return 3;
    if (block < 32) return 2;
    if (block < 256) return 3;
    if (block < 512) return 2;
    if (block < 4096) return 3;
    return 5;
  }
  if (P < 4096) {
    if (block < 32) return 2;
    if (block < 128) return 3;
    if (block < 512) return 2;
    if (block < 4096) return 3;
    return 5;
  }
  if (block < 2) return 3;
  if (block < 8) return 2;
  if (block < 16) return 3;
  if (block < 512) return 2;
  if (block < 4096) return 3;
  return 5;
}

std::string allgather_tuned(Builder& b, const Group& g, uint64_t block) {
  const int size = g.size();
  if (size < 2) return "Open MPI 4.1 coll/tuned Allgather on one rank (no messages)";
  std::vector<uint64_t> blocks(size, block);
  switch (allgather_decision(size, block)) {
    case 2:
      allgather_bruck(b, g, blocks);
      return "bruck (coll_base_allgather.c: ompi_coll_base_allgather_intra_bruck)";
    case 3:
      if (!is_pow2(size)) {
        allgather_bruck(b, g, blocks);
        return "bruck, as recursive doubling falls back to for sizes not a power of two (coll_base_allgather.c: "
               "ompi_coll_base_allgather_intra_recursivedoubling)";
      }
      allgather_recursive_doubling(b, g, block);
      return "recursive doubling (coll_base_allgather.c: ompi_coll_base_allgather_intra_recursivedoubling)";
    case 4:
      allgather_ring(b, g, blocks);
      return "ring (coll_base_allgather.c: ompi_coll_base_allgather_intra_ring)";
    case 5:
      allgather_neighbor(b, g, blocks);
      return "neighbor exchange (coll_base_allgather.c: ompi_coll_base_allgather_intra_neighborexchange)";
    default:
      two_procs_exchange(b, g, blocks);
      return "two_procs (coll_base_allgather.c: ompi_coll_base_allgather_intra_two_procs)";
  }
}

int allgatherv_decision(int P, uint64_t per_rank) {
  if (P == 2) {
    if (per_rank < 2048) return 3;
    if (per_rank < 4096) return 5;
    if (per_rank < 8192) return 3;
    return 5;
  }
  if (P < 8) {
    if (per_rank < 256) return 1;
    if (per_rank < 4096) return 4;
    if (per_rank < 8192) return 3;
    if (per_rank < 16384) return 4;
    if (per_rank < 262144) return 2;
    return 4;
  }
  if (P < 16) return per_rank < 1024 ? 1 : 2;
  if (P < 32) {
    if (per_rank < 128) return 1;
    if (per_rank < 262144) return 2;
    return 3;
  }
  if (P < 64) {
    if (per_rank < 256) return 1;
    if (per_rank < 8192) return 2;
    return 3;
  }
  if (P < 128) {
    if (per_rank < 256) return 1;
    if (per_rank < 4096) return 2;
    return 3;
  }
  if (P < 256) {
    if (per_rank < 1024) return 2;
    if (per_rank < 65536) return 4;
    return 3;
  }
  if (P < 512) return per_rank < 1024 ? 2 : 3;
  if (P < 1024) {
    if (per_rank < 512) return 2;
    if (per_rank < 1024) return 1;
    if (per_rank < 4096) return 2;
    if (per_rank < 1048576) return 4;
    return 3;
  }
  return per_rank < 4096 ? 2 : 4;
}

std::string allgatherv_tuned(Builder& b, const Group& g, const std::vector<uint64_t>& blocks) {
  const int size = g.size();
  if (size < 2) return "Open MPI 4.1 coll/tuned Allgatherv on one rank (no messages)";
  uint64_t total = std::accumulate(blocks.begin(), blocks.end(), uint64_t{0});
  switch (allgatherv_decision(size, total / static_cast<uint64_t>(size))) {
    case 1: {
      gatherv_linear(b, g, 0, blocks);
      // the gathered vector goes out as one element of an indexed type: count 1
      Vec whole;
      whole.count = 1;
      whole.element_bytes = total;
      std::string c = bcast_tuned(b, g, 0, whole);
      return "default: linear gatherv to 0, then bcast [" + c +
             "] (coll_base_allgatherv.c: ompi_coll_base_allgatherv_intra_basic_default)";
    }
    case 2:
      allgather_bruck(b, g, blocks);
      return "bruck (coll_base_allgatherv.c: ompi_coll_base_allgatherv_intra_bruck)";
    case 3:
      allgather_ring(b, g, blocks);
      return "ring (coll_base_allgatherv.c: ompi_coll_base_allgatherv_intra_ring)";
    case 4:
      allgather_neighbor(b, g, blocks);
      return "neighbor exchange (coll_base_allgatherv.c: ompi_coll_base_allgatherv_intra_neighborexchange)";
    default:
      two_procs_exchange(b, g, blocks);
      return "two_procs (coll_base_allgatherv.c: ompi_coll_base_allgatherv_intra_two_procs)";
  }
}

// ---- Alltoall(v,w) (coll_base_alltoall.c, coll_base_alltoallv.c, coll_basic_alltoallw.c) --------------
// ompi_coll_base_alltoall_intra_basic_linear: receives from rank+1 upwards, sends from rank-1 downwards
void alltoall_linear(Builder& b, const Group& g, const std::vector<std::vector<uint64_t>>& to) {
  const int size = g.size();
  for (int rank = 0; rank < size; rank++) {
    Proc p(b, g, rank);
    uint32_t first = p.next_request();
    for (int i = (rank + 1) % size; i != rank; i = (i + 1) % size) p.irecv(i, to[i][rank]);
    for (int i = (rank + size - 1) % size; i != rank; i = (i + size - 1) % size) p.isend(i, to[rank][i]);
    p.wait_since(first);
  }
}

// ompi_coll_base_alltoall(v)_intra_pairwise: step s sends to rank+s and receives from rank-s
void alltoall_pairwise(Builder& b, const Group& g, const std::vector<std::vector<uint64_t>>& to) {
  const int size = g.size();
  for (int rank = 0; rank < size; rank++) {
    Proc p(b, g, rank);
    for (int step = 1; step < size; step++) {
      int sendto = (rank + step) % size, recvfrom = (rank + size - step) % size;
      p.sendrecv(sendto, to[rank][sendto], recvfrom, to[recvfrom][rank]);
      p.next_round();
    }
  }
}

// ompi_coll_base_alltoall_intra_bruck: at distance d, the blocks i with i & d
void alltoall_bruck(Builder& b, const Group& g, uint64_t block) {
  const int size = g.size();
  for (int rank = 0; rank < size; rank++) {
    Proc p(b, g, rank);
    for (int distance = 1; distance < size; distance <<= 1) {
      uint64_t k = 0;
      for (int i = 1; i < size; i++)
        if ((i & distance) == distance) k++;
      p.sendrecv((rank + distance) % size, k * block, (rank - distance + size) % size, k * block);
      p.next_round();
    }
  }
}

int alltoall_decision(int P, uint64_t block) {
  if (P == 2) {
    if (block < 2) return 2;
    if (block < 4) return 5;
    if (block < 16) return 2;
    if (block < 64) return 5;
    if (block < 256) return 2;
    if (block < 4096) return 5;
    if (block < 32768) return 2;
    if (block < 262144) return 4;
    if (block < 1048576) return 5;
    return 2;
  }
  if (P < 8) {
    if (block < 8192) return 4;
    if (block < 16384) return 1;
    if (block < 65536) return 4;
    if (block < 524288) return 1;
    if (block < 1048576) return 2;
    return 1;
  }
  if (P < 16) return block < 262144 ? 4 : 1;
  if (P < 32) {
    if (block < 4) return 4;
    if (block < 512) return 3;
    if (block < 8192) return 4;
    if (block < 32768) return 1;
    if (block < 262144) return 4;
    if (block < 524288) return 1;
    return 4;
  }
  if (P < 64) {
    if (block < 512) return 3;
    if (block < 524288) return 1;
    return 4;
  }
  if (P < 128) {
    if (block < 1024) return 3;
    if (block < 2048) return 1;
    if (block < 4096) return 4;
    if (block < 262144) return 1;
    return 2;
  }
  if (P < 256) {
    if (block < 1024) return 3;
    if (block < 2048) return 4;
    if (block < 262144) return 1;
    return 2;
  }
  if (P < 512) {
    if (block < 1024) return 3;
    if (block < 8192) return 4;
    if (block < 32768) return 1;
    return 2;
  }
  if (P < 1024) {
    if (block < 512) return 3;
    if (block < 8192) return 4;
    if (block < 16384) return 1;
    if (block < 131072) return 4;
    if (block < 262144) return 1;
    return 2;
  }
  if (P < 2048) {
    if (block < 512) return 3;
    if (block < 1024) return 4;
    if (block < 2048) return 1;
    if (block < 16384) return 4;
    if (block < 262144) return 1;
    return 4;
  }
  if (P < 4096) {
    if (block < 1024) return 3;
    if (block < 4096) return 4;
    if (block < 8192) return 1;
    if (block < 131072) return 4;
    return 1;
  }
  if (block < 2048) return 3;
  if (block < 8192) return 4;
  if (block < 16384) return 1;
  if (block < 32768) return 4;
  if (block < 65536) return 1;
  return 4;
}

// ompi_coll_base_alltoall_intra_linear_sync with coll_tuned_alltoall_max_requests 0: every request at
// once, receives from rank+1 upwards, sends from rank-1 downwards (the order of basic_linear)
void alltoall_inplace(Builder& b, const Group& g, const std::vector<std::vector<uint64_t>>& to);

std::string alltoall_tuned(Builder& b, const Group& g, uint64_t block, bool in_place) {
  const int size = g.size();
  if (size < 2) return "Open MPI 4.1 coll/tuned Alltoall on one rank (no messages)";
  // the counts to and from each rank, but for the modified bruck (size log size steps)
  const auto to = [&] { return square(size, block); };
  if (in_place) {
    alltoall_inplace(b, g, to());
    return "in place (coll_base_alltoall.c: mca_coll_base_alltoall_intra_basic_inplace)";
  }
  switch (alltoall_decision(size, block)) {
    case 1:
      alltoall_linear(b, g, to());
      return "basic_linear (coll_base_alltoall.c: ompi_coll_base_alltoall_intra_basic_linear)";
    case 2:
      alltoall_pairwise(b, g, to());
      return "pairwise (coll_base_alltoall.c: ompi_coll_base_alltoall_intra_pairwise)";
    case 3:
      alltoall_bruck(b, g, block);
      return "modified bruck (coll_base_alltoall.c: ompi_coll_base_alltoall_intra_bruck)";
    case 4:
      alltoall_linear(b, g, to());
      return "linear_sync, no request limit (coll_base_alltoall.c: ompi_coll_base_alltoall_intra_linear_sync)";
    default:
      for (int rank = 0; rank < 2; rank++) Proc(b, g, rank).sendrecv(rank ^ 1, block, rank ^ 1, block);
      return "two_procs (coll_base_alltoall.c: ompi_coll_base_alltoall_intra_two_procs)";
  }
}

// ompi_coll_base_alltoallv_intra_basic_linear: every receive (0 upwards), then every send, then wait
void alltoallv_linear(Builder& b, const Group& g, const std::vector<std::vector<uint64_t>>& to, bool skip_empty) {
  const int size = g.size();
  for (int rank = 0; rank < size; rank++) {
    Proc p(b, g, rank);
    uint32_t first = p.next_request();
    for (int i = 0; i < size; i++)
      if (i != rank && !(skip_empty && to[i][rank] == 0)) p.irecv(i, to[i][rank]);
    for (int i = 0; i < size; i++)
      if (i != rank && !(skip_empty && to[rank][i] == 0)) p.isend(i, to[rank][i]);
    p.wait_since(first);
  }
}

// MPI_IN_PLACE: mca_coll_base_alltoall(v)_intra_basic_inplace (coll_base_alltoall.c, coll_base_alltoallv.c)
// and mca_coll_basic_alltoallw_intra_inplace (coll_basic_alltoallw.c), which every tuned algorithm
// returns to in place. Step i exchanges with rank + i (right) and rank - i (left): receive from the
// right; send to the left, wait, receive from the left; send to the right (packed); wait. A peer with a
// count of 0 is skipped (Alltoall returns before the loop when its count is 0).
void alltoall_inplace(Builder& b, const Group& g, const std::vector<std::vector<uint64_t>>& to) {
  const int size = g.size();
  for (int rank = 0; rank < size; rank++) {
    Proc p(b, g, rank);
    for (int i = 1; i <= size / 2; i++) {
      const int right = (rank + i) % size, left = (rank + size - i) % size;
      std::vector<uint32_t> pending;
      if (to[rank][right]) pending.push_back(p.irecv(right, to[right][rank]));
      if (left != right && to[rank][left]) {
        p.send(left, to[rank][left]);
        for (uint32_t r : pending) p.wait(r);
        pending.clear();
        pending.push_back(p.irecv(left, to[left][rank]));
      }
      if (to[rank][right]) p.send(right, to[rank][right]);
      for (uint32_t r : pending) p.wait(r);
      p.next_round();
    }
  }
}


// ---- Reduce_scatter(_block) (coll_base_reduce_scatter.c, coll_base_reduce_scatter_block.c) -------------
// ompi_coll_base_reduce_scatter_intra_basic_recursivehalving
void reduce_scatter_recursive_halving(Builder& b, const Group& g, const std::vector<uint64_t>& rcounts, uint64_t es) {
  const int size = g.size();
  uint64_t count = std::accumulate(rcounts.begin(), rcounts.end(), uint64_t{0});
  if (count == 0) return;
  const int tmp_size = pow2_floor(size), remain = size - tmp_size;
  std::vector<uint64_t> tmp_rcounts(tmp_size);
  for (int i = 0; i < tmp_size; i++)
    tmp_rcounts[i] = i < remain ? rcounts[i * 2 + 1] + rcounts[i * 2] : rcounts[i + remain];
  for (int rank = 0; rank < size; rank++) {
    Proc p(b, g, rank);
    int tmp_rank;
    if (rank < 2 * remain) {
      if ((rank & 1) == 0) {
        p.send(rank + 1, count * es);
        tmp_rank = -1;
      } else {
        p.recv(rank - 1, count * es);
        p.reduce(count * es);
        tmp_rank = rank / 2;
      }
    } else {
      tmp_rank = rank - remain;
    }
    p.next_round();
    if (tmp_rank >= 0) {
      int mask = tmp_size >> 1, send_index = 0, recv_index = 0, last_index = tmp_size;
      while (mask > 0) {
        int tmp_peer = tmp_rank ^ mask;
        int peer = tmp_peer < remain ? tmp_peer * 2 + 1 : tmp_peer + remain;
        uint64_t send_count = 0, recv_count = 0;
        if (tmp_rank < tmp_peer) {
          send_index = recv_index + mask;
          for (int i = send_index; i < last_index; i++) send_count += tmp_rcounts[i];
          for (int i = recv_index; i < send_index; i++) recv_count += tmp_rcounts[i];
        } else {
          recv_index = send_index + mask;
          for (int i = send_index; i < recv_index; i++) send_count += tmp_rcounts[i];
          for (int i = recv_index; i < last_index; i++) recv_count += tmp_rcounts[i];
        }
        int64_t req = -1;
        if (recv_count > 0) req = p.irecv(peer, recv_count * es);
        if (send_count > 0) p.send(peer, send_count * es);
        if (recv_count > 0) {
          p.wait(static_cast<uint32_t>(req));
          p.reduce(recv_count * es);
        }
        p.next_round();
        send_index = recv_index;
        last_index = recv_index + mask;
        mask >>= 1;
      }
    }
    if (rank < 2 * remain) {
      if ((rank & 1) == 0) {
        if (rcounts[rank]) p.recv(rank + 1, rcounts[rank] * es);
      } else if (rcounts[rank - 1]) {
        p.send(rank - 1, rcounts[rank - 1] * es);
      }
    }
  }
}

// ompi_coll_base_reduce_scatter_intra_ring
void reduce_scatter_ring(Builder& b, const Group& g, const std::vector<uint64_t>& rcounts, uint64_t es) {
  const int size = g.size();
  b.expect_pairs(size);
  uint64_t max_block = *std::max_element(rcounts.begin(), rcounts.end());
  for (int rank = 0; rank < size; rank++) {
    Proc p(b, g, rank);
    const int send_to = (rank + 1) % size, recv_from = (rank + size - 1) % size;
    uint32_t prev = p.irecv(recv_from, max_block * es);
    p.send(send_to, rcounts[recv_from] * es);
    for (int k = 2; k < size; k++) {
      const int prevblock = (rank + size - k) % size;
      uint32_t cur = p.irecv(recv_from, max_block * es);
      p.wait(prev);
      p.reduce(rcounts[prevblock] * es);
      p.send(send_to, rcounts[prevblock] * es);
      prev = cur;
    }
    p.wait(prev);
    p.reduce(rcounts[rank] * es);
  }
}

// ompi_coll_base_reduce_scatter_intra_butterfly
void reduce_scatter_butterfly(Builder& b, const Group& g, const std::vector<uint64_t>& rcounts, uint64_t es) {
  const int size = g.size();
  std::vector<uint64_t> displs(size, 0);
  for (int i = 1; i < size; i++) displs[i] = displs[i - 1] + rcounts[i - 1];
  const uint64_t total = displs[size - 1] + rcounts[size - 1];
  const int pof2 = pow2_floor(size), rem = size - pof2, log2_size = ceil_log2(pof2);
  auto sum_counts = [&](int lo, int hi) {
    lo = lo < rem ? lo * 2 : lo + rem;
    hi = hi < rem ? hi * 2 + 1 : hi + rem;
    return displs[hi] + rcounts[hi] - displs[lo];
  };
  for (int rank = 0; rank < size; rank++) {
    Proc p(b, g, rank);
    int vrank;
    if (rank < 2 * rem) {
      if (rank % 2 == 0) {
        p.send(rank + 1, total * es);
        vrank = -1;
      } else {
        p.recv(rank - 1, total * es);
        p.reduce(total * es);
        vrank = rank / 2;
      }
    } else {
      vrank = rank - rem;
    }
    p.next_round();
    if (vrank != -1) {
      int nblocks = pof2, send_index = 0, recv_index = 0;
      for (int mask = 1; mask < pof2; mask <<= 1) {
        int vpeer = vrank ^ mask;
        int peer = vpeer < rem ? vpeer * 2 + 1 : vpeer + rem;
        nblocks /= 2;
        if ((vrank & mask) == 0) send_index += nblocks;
        else recv_index += nblocks;
        uint64_t scount = sum_counts(send_index, send_index + nblocks - 1);
        uint64_t rcount = sum_counts(recv_index, recv_index + nblocks - 1);
        p.sendrecv(peer, scount * es, peer, rcount * es);
        p.reduce(rcount * es);
        p.next_round();
        send_index = recv_index;
      }
      int vpeer = mirror_perm(static_cast<unsigned>(vrank), log2_size);
      int peer = vpeer < rem ? vpeer * 2 + 1 : vpeer + rem;
      int index = send_index < rem ? 2 * send_index : rem + send_index;
      if (vpeer < rem) {
        p.send(peer - 1, rcounts[index] * es);
        index++;
      }
      if (vpeer != vrank) p.sendrecv(peer, rcounts[index] * es, peer, rcounts[rank] * es);
    } else {
      int vpeer = mirror_perm(static_cast<unsigned>((rank + 1) / 2), log2_size);
      int peer = vpeer < rem ? vpeer * 2 + 1 : vpeer + rem;
      p.recv(peer, rcounts[rank] * es);
    }
  }
}

int reduce_scatter_decision(int P, uint64_t total) {
  if (P < 4) {
    if (total < 65536) return 3;
    if (total < 131072) return 4;
    return 3;
  }
  if (P < 8) {
    if (total < 8) return 1;
    if (total < 262144) return 2;
    return 3;
  }
  if (P < 32) return total < 262144 ? 2 : 3;
  if (P < 64) {
    if (total < 64) return 1;
    if (total < 2048) return 2;
    if (total < 524288) return 4;
    return 3;
  }
  if (P < 128) {
    if (total < 256) return 1;
    if (total < 512) return 2;
    if (total < 2048) return 4;
    if (total < 4096) return 2;
    return 4;
  }
  if (P < 256) {
    if (total < 256) return 1;
    if (total < 512) return 2;
    return 4;
  }
  if (P < 512) {
    if (total < 256) return 1;
    if (total < 1024) return 2;
    return 4;
  }
  if (P < 1024) {
    if (total < 512) return 1;
    if (total < 2048) return 2;
    if (total < 8192) return 4;
    if (total < 16384) return 2;
    return 4;
  }
  if (P < 2048) {
    if (total < 512) return 1;
    if (total < 4096) return 2;
    if (total < 16384) return 4;
    if (total < 32768) return 2;
    return 4;
  }
  if (P < 4096) {
    if (total < 512) return 1;
    if (total < 4096) return 2;
    return 4;
  }
  if (total < 1024) return 1;
  if (total < 8192) return 2;
  return 4;
}

uint64_t common_element_bytes(const std::vector<uint64_t>& blocks) {
  uint64_t es = 8;
  for (uint64_t x : blocks)
    while (es > 1 && x % es != 0) es /= 2;
  return es;
}

std::string reduce_scatter_tuned(Builder& b, const Group& g, const std::vector<uint64_t>& rbytes) {
  const int size = g.size();
  if (size < 2) return "Open MPI 4.1 coll/tuned Reduce_scatter on one rank (no messages)";
  const uint64_t es = common_element_bytes(rbytes);
  std::vector<uint64_t> rcounts(size);
  for (int i = 0; i < size; i++) rcounts[i] = rbytes[i] / es;
  uint64_t total = std::accumulate(rbytes.begin(), rbytes.end(), uint64_t{0});
  switch (reduce_scatter_decision(size, total)) {
    case 1: {
      Vec v;
      v.count = total / es;
      v.element_bytes = es;
      std::string r = reduce_tuned(b, g, 0, v);
      scatterv_linear(b, g, 0, rbytes);
      return "non-overlapping: reduce to 0 [" + r + "], then linear scatterv (coll_base_reduce_scatter.c: "
             "ompi_coll_base_reduce_scatter_intra_nonoverlapping)";
    }
    case 2:
      reduce_scatter_recursive_halving(b, g, rcounts, es);
      return "recursive halving (coll_base_reduce_scatter.c: "
             "ompi_coll_base_reduce_scatter_intra_basic_recursivehalving)";
    case 3:
      reduce_scatter_ring(b, g, rcounts, es);
      return "ring (coll_base_reduce_scatter.c: ompi_coll_base_reduce_scatter_intra_ring)";
    default:
      reduce_scatter_butterfly(b, g, rcounts, es);
      return "butterfly (coll_base_reduce_scatter.c: ompi_coll_base_reduce_scatter_intra_butterfly)";
  }
}

// ompi_coll_base_reduce_scatter_block_intra_recursivedoubling
void rsb_recursive_doubling(Builder& b, const Group& g, uint64_t rcount, uint64_t es) {
  const int size = g.size();
  for (int rank = 0; rank < size; rank++) {
    Proc p(b, g, rank);
    for (int mask = 1; mask < size; mask <<= 1) {
      int remote = rank ^ mask;
      int cur_tree_root = rank / mask * mask, remote_tree_root = remote / mask * mask;
      auto lens = [&](int tree_root) {
        uint64_t a = rcount * static_cast<uint64_t>(tree_root);
        uint64_t c = size >= tree_root + mask ? rcount * static_cast<uint64_t>(size - tree_root - mask) : 0;
        return a + c;
      };
      uint64_t send_len = lens(cur_tree_root), recv_len = lens(remote_tree_root);
      bool received = false;
      if (remote < size) {
        p.sendrecv(remote, send_len * es, remote, recv_len * es);
        received = true;
      }
      if (remote_tree_root + mask > size) {
        int nprocs_alldata = size - cur_tree_root - mask;
        for (int rh = mask >> 1; rh > 0; rh >>= 1) {
          int r2 = rank ^ rh;
          int tree_root = rank / (rh << 1) * (rh << 1);
          if (r2 > rank && rank < tree_root + nprocs_alldata && r2 >= tree_root + nprocs_alldata) {
            p.send(r2, recv_len * es);
          } else if (r2 < rank && r2 < tree_root + nprocs_alldata && rank >= tree_root + nprocs_alldata) {
            // the sender's dtyperecv: the lengths of its remote tree at this mask
            int sender_remote_tree_root = (r2 ^ mask) / mask * mask;
            p.recv(r2, lens(sender_remote_tree_root) * es);
            received = true;
          }
        }
      }
      if (received) p.reduce(recv_len * es);
      p.next_round();
    }
  }
}

// ompi_coll_base_reduce_scatter_block_intra_recursivehalving
void rsb_recursive_halving(Builder& b, const Group& g, uint64_t rcount, uint64_t es) {
  const int size = g.size();
  const uint64_t total = rcount * static_cast<uint64_t>(size);
  const int pof2 = pow2_floor(size), rem = size - pof2;
  auto range_sum = [](int a, int bb, int r) -> uint64_t {  // ompi_range_sum
    if (r < a) return static_cast<uint64_t>(bb - a + 1);
    if (r > bb) return static_cast<uint64_t>(2 * (bb - a + 1));
    return static_cast<uint64_t>(2 * (r - a + 1) + bb - r);
  };
  for (int rank = 0; rank < size; rank++) {
    Proc p(b, g, rank);
    int vrank;
    if (rank < 2 * rem) {
      if (rank % 2 == 0) {
        p.send(rank + 1, total * es);
        vrank = -1;
      } else {
        p.recv(rank - 1, total * es);
        p.reduce(total * es);
        vrank = rank / 2;
      }
    } else {
      vrank = rank - rem;
    }
    p.next_round();
    if (vrank != -1) {
      int send_index = 0, recv_index = 0, last_index = pof2;
      for (int mask = pof2 >> 1; mask > 0; mask >>= 1) {
        int vpeer = vrank ^ mask;
        int peer = vpeer < rem ? vpeer * 2 + 1 : vpeer + rem;
        uint64_t scount, rcnt;
        if (vrank < vpeer) {
          send_index = recv_index + mask;
          scount = rcount * range_sum(send_index, last_index - 1, rem - 1);
          rcnt = rcount * range_sum(recv_index, send_index - 1, rem - 1);
        } else {
          recv_index = send_index + mask;
          scount = rcount * range_sum(send_index, recv_index - 1, rem - 1);
          rcnt = rcount * range_sum(recv_index, last_index - 1, rem - 1);
        }
        int64_t req = -1;
        if (rcnt > 0) req = p.irecv(peer, rcnt * es);
        if (scount > 0) p.send(peer, scount * es);
        if (rcnt > 0) {
          p.wait(static_cast<uint32_t>(req));
          p.reduce(rcnt * es);
        }
        p.next_round();
        send_index = recv_index;
        last_index = recv_index + mask;
      }
    }
    if (rank < 2 * rem) {
      if (rank % 2 == 0) p.recv(rank + 1, rcount * es);
      else p.send(rank - 1, rcount * es);
    }
  }
}

// ompi_coll_base_reduce_scatter_block_intra_butterfly (and its power-of-two form)
void rsb_butterfly(Builder& b, const Group& g, uint64_t rcount, uint64_t es) {
  const int size = g.size();
  const uint64_t total = rcount * static_cast<uint64_t>(size);
  if (is_pow2(size)) {
    for (int rank = 0; rank < size; rank++) {
      Proc p(b, g, rank);
      uint64_t nblocks = total;
      for (int mask = 1; mask < size; mask <<= 1) {
        int peer = rank ^ mask;
        nblocks /= 2;
        p.sendrecv(peer, nblocks * es, peer, nblocks * es);
        p.reduce(nblocks * es);
        p.next_round();
      }
    }
    return;
  }
  std::vector<uint64_t> rcounts(size, rcount);
  reduce_scatter_butterfly(b, g, rcounts, es);
}

int rsb_decision(int P, uint64_t block) {
  if (P < 4) {
    if (block < 4) return 2;
    if (block < 8) return 4;
    if (block < 16) return 3;
    if (block < 128) return 4;
    if (block < 256) return 3;
    if (block < 4096) return 4;
    if (block < 8192) return 3;
    if (block < 131072) return 4;
    return 1;
  }
  if (P < 8) {
    if (block < 8) return 3;
    if (block < 32) return 2;
    if (block < 256) return 4;
    if (block < 8192) return 3;
    if (block < 16384) return 4;
    if (block < 1048576) return 3;
    return 1;
  }
  if (P < 16) {
    if (block < 4) return 1;
    if (block < 32) return 3;
    if (block < 128) return 4;
    if (block < 524288) return 3;
    if (block < 4194304) return 1;
    return 4;
  }
  if (P < 32) {
    if (block < 32) return 1;
    if (block < 524288) return 3;
    if (block < 2097152) return 1;
    if (block < 4194304) return 3;
    return 4;
  }
  if (block < 4) return 3;
  if (block < 16) return 1;
  if (block < 65536) return 4;
  if (block < 262144) return 1;
  return 4;
}

std::string rsb_tuned(Builder& b, const Group& g, uint64_t block_bytes) {
  const int size = g.size();
  if (size < 2) return "Open MPI 4.1 coll/tuned Reduce_scatter_block on one rank (no messages)";
  const uint64_t es = likely_element_bytes(block_bytes), rcount = block_bytes / es;
  if (rcount == 0) return "Open MPI 4.1 coll/tuned Reduce_scatter_block of nothing (no messages)";
  switch (rsb_decision(size, block_bytes)) {
    case 1: {
      Vec v;
      v.count = rcount * static_cast<uint64_t>(size);
      v.element_bytes = es;
      std::string r = reduce_tuned(b, g, 0, v);
      std::string s = scatter_tuned(b, g, 0, block_bytes);
      return "basic_linear: reduce to 0 [" + r + "], then scatter [" + s +
             "] (coll_base_reduce_scatter_block.c: ompi_coll_base_reduce_scatter_block_basic_linear)";
    }
    case 2:
      rsb_recursive_doubling(b, g, rcount, es);
      return "recursive doubling (coll_base_reduce_scatter_block.c: "
             "ompi_coll_base_reduce_scatter_block_intra_recursivedoubling)";
    case 3:
      rsb_recursive_halving(b, g, rcount, es);
      return "recursive halving (coll_base_reduce_scatter_block.c: "
             "ompi_coll_base_reduce_scatter_block_intra_recursivehalving)";
    default:
      rsb_butterfly(b, g, rcount, es);
      return "butterfly (coll_base_reduce_scatter_block.c: ompi_coll_base_reduce_scatter_block_intra_butterfly)";
  }
}

// ---- Barrier (coll_base_barrier.c) ---------------------------------------------------------------------
// ompi_coll_base_sendrecv_zero: irecv, send, wait, all of 0 bytes
void sendrecv_zero(Proc& p, int to, int from) { p.sendrecv(to, 0, from, 0); }

std::string barrier_tuned(Builder& b, const Group& g) {
  const int size = g.size();
  if (size < 2) return "Open MPI 4.1 coll/tuned Barrier on one rank (no messages)";
  int alg;  // ompi_coll_tuned_barrier_intra_dec_fixed
  if (size < 4) alg = 3;
  else if (size < 8) alg = 1;
  else if (size < 64) alg = 3;
  else if (size < 256) alg = 4;
  else if (size < 512) alg = 6;
  else if (size < 1024) alg = 4;
  else if (size < 4096) alg = 6;
  else alg = 4;
  for (int rank = 0; rank < size; rank++) {
    Proc p(b, g, rank);
    if (alg == 1) {  // ompi_coll_base_barrier_intra_basic_linear
      if (rank > 0) {
        p.send(0, 0);
        p.recv(0, 0);
      } else {
        uint32_t first = p.next_request();
        for (int i = 1; i < size; i++) p.irecv(i, 0);
        p.wait_since(first);
        p.next_round();
        for (int i = 1; i < size; i++) p.send(i, 0);
      }
    } else if (alg == 3) {  // ompi_coll_base_barrier_intra_recursivedoubling
      const int adjsize = pow2_floor(size);
      if (adjsize != size) {
        if (rank >= adjsize) sendrecv_zero(p, rank - adjsize, rank - adjsize);
        else if (rank < size - adjsize) p.recv(rank + adjsize, 0);
        p.next_round();
      }
      if (rank < adjsize) {
        for (int mask = 1; mask < adjsize; mask <<= 1) {
          int remote = rank ^ mask;
          if (remote >= adjsize) continue;
          sendrecv_zero(p, remote, remote);
          p.next_round();
        }
      }
      if (adjsize != size && rank < size - adjsize) p.send(rank + adjsize, 0, true);
    } else if (alg == 4) {  // ompi_coll_base_barrier_intra_bruck
      for (int distance = 1; distance < size; distance <<= 1) {
        sendrecv_zero(p, (rank + distance) % size, (rank + size - distance) % size);
        p.next_round();
      }
    } else {  // ompi_coll_base_barrier_intra_tree
      int depth = 1;
      while (depth < size) depth <<= 1;
      for (int jump = 1; jump < depth; jump <<= 1) {
        int partner = rank ^ jump;
        if (!(partner & (jump - 1)) && partner < size) {
          if (partner > rank) p.recv(partner, 0);
          else if (partner < rank) p.send(partner, 0);
        }
      }
      p.next_round();
      for (int jump = depth >> 1; jump > 0; jump >>= 1) {
        int partner = rank ^ jump;
        if (!(partner & (jump - 1)) && partner < size) {
          if (partner > rank) p.send(partner, 0);
          else if (partner < rank) p.recv(partner, 0);
        }
      }
    }
  }
  switch (alg) {
    case 1: return "linear (coll_base_barrier.c: ompi_coll_base_barrier_intra_basic_linear)";
    case 3: return "recursive doubling (coll_base_barrier.c: ompi_coll_base_barrier_intra_recursivedoubling)";
    case 4: return "bruck (coll_base_barrier.c: ompi_coll_base_barrier_intra_bruck)";
    default: return "tree (coll_base_barrier.c: ompi_coll_base_barrier_intra_tree)";
  }
}

// ---- Scan, Exscan (coll/basic: coll_base_scan.c, coll_base_exscan.c) ------------------------------------
void scan_linear(Builder& b, const Group& g, uint64_t bytes) {
  for (int rank = 0; rank < g.size(); rank++) {
    Proc p(b, g, rank);
    if (rank > 0) {
      p.recv(rank - 1, bytes);
      p.reduce(bytes);
    }
    if (rank < g.size() - 1) p.send(rank + 1, bytes);
  }
}

void exscan_linear(Builder& b, const Group& g, uint64_t bytes) {
  const int size = g.size();
  for (int rank = 0; rank < size; rank++) {
    Proc p(b, g, rank);
    if (rank == 0) {
      p.send(1, bytes);
    } else if (rank == size - 1) {
      p.recv(rank - 1, bytes);
    } else {
      p.recv(rank - 1, bytes);
      p.reduce(bytes);
      p.send(rank + 1, bytes);
    }
  }
}

// ---- libnbc (ompi/mca/coll/libnbc/nbc_i*.c) ------------------------------------------------------------
// One NbcSchedule per rank, committed at the end.
struct Nbc {
  Builder& b;
  std::vector<Proc> procs;
  std::vector<NbcSchedule> scheds;
  std::vector<NbcSchedule*> ptrs;
  Nbc(Builder& builder, const Group& g) : b(builder) {
    procs.reserve(g.size());
    scheds.reserve(g.size());
    for (int r = 0; r < g.size(); r++) procs.emplace_back(b, g, r);
    for (int r = 0; r < g.size(); r++) scheds.emplace_back(procs[r]);
    for (auto& s : scheds) ptrs.push_back(&s);
  }
  NbcSchedule& operator[](int r) { return scheds[r]; }
  void commit() {
    for (auto& s : scheds) s.commit();
  }
};

// RANK2VRANK / VRANK2RANK: the root and 0 trade places
int swap_root(int rank, int root) { return rank == 0 ? root : rank == root ? 0 : rank; }

// nbc_ibcast.c: bcast_sched_binomial
void nbc_bcast_binomial(Nbc& n, int size, int root, uint64_t bytes) {
  const int maxr = ceil_log2(size);
  for (int rank = 0; rank < size; rank++) {
    auto& s = n[rank];
    int vrank = swap_root(rank, root);
    if (vrank != 0) {
      for (int r = 0; r < maxr; r++)
        if (vrank >= (1 << r) && vrank < (1 << (r + 1))) s.recv(swap_root(vrank - (1 << r), root), bytes);
      s.barrier();
    }
    for (int r = 0; r < maxr; r++)
      if ((vrank + (1 << r) < size && vrank < (1 << r)) || vrank == 0)
        s.send(swap_root(vrank + (1 << r), root), bytes);
  }
}

// the binomial reduction that nbc_ireduce.c (red_sched_binomial) and nbc_iallreduce.c (allred_sched_diss)
// share: receive from the partner of each round, reduce, then send up and leave
void nbc_reduce_binomial_part(Nbc& n, int size, int vroot, uint64_t bytes) {
  const int maxr = ceil_log2(size);
  for (int rank = 0; rank < size; rank++) {
    auto& s = n[rank];
    int vrank = swap_root(rank, vroot);
    for (int r = 1; r <= maxr; r++) {
      if (vrank % (1 << r) == 0) {
        int vpeer = vrank + (1 << (r - 1));
        int peer = swap_root(vpeer, vroot);
        if (peer < size) {
          s.recv(peer, bytes, true);
          s.op(bytes, true);
        }
      } else {
        s.send(swap_root(vrank - (1 << (r - 1)), vroot), bytes);
        break;
      }
    }
  }
}

// nbc_ireduce.c: red_sched_chain, fragments of 8 KiB
void nbc_reduce_chain(Nbc& n, int size, int root, Vec v, uint64_t fragsize) {
  if (v.count == 0) return;
  uint64_t numfrag = v.total() / fragsize + (v.total() % fragsize ? 1 : 0);
  if (size > 1) n.b.expect_each(size, numfrag);  // each rank a receive or a send, or both, for each fragment
  uint64_t fragcount = v.count / numfrag;
  for (int rank = 0; rank < size; rank++) {
    auto& s = n[rank];
    int vrank = swap_root(rank, root);
    int rpeer = swap_root(vrank + 1, root), speer = swap_root(vrank - 1, root);
    for (uint64_t f = 0; f < numfrag; f++) {
      uint64_t count = f == numfrag - 1 ? v.count - fragcount * f : fragcount;
      if (vrank != size - 1) {
        s.recv(rpeer, v.bytes(count), true);
        s.op(v.bytes(count), true);
      }
      if (vrank != 0) s.send(speer, v.bytes(count), true);
    }
  }
}

// a2a_sched_inplace (nbc_ialltoall.c), a2av_sched_inplace (nbc_ialltoallv.c), a2aw_sched_inplace
// (nbc_ialltoallw.c): pairs at distance i swap through a copy, each copy and receive ending a round; a
// peer with a count of 0 is skipped (Ialltoall's counts are never 0 here: a count of 0 sends nothing).
void nbc_alltoall_inplace(Nbc& n, int size, const std::vector<std::vector<uint64_t>>& to) {
  for (int rank = 0; rank < size; rank++) {
    auto& s = n[rank];
    const auto& c = to[rank];  // in place: what rank sends to j is what it receives from j
    for (int i = 1; i < (size + 1) / 2; i++) {
      const int speer = (rank + i) % size, rpeer = (rank + size - i) % size;
      if (c[rpeer]) s.barrier();  // NBC_Sched_copy of rpeer's block to the temporary buffer
      if (c[speer]) s.send(speer, c[speer]);
      if (c[rpeer]) s.recv(rpeer, c[rpeer], true);
      if (c[rpeer]) s.send(rpeer, c[rpeer]);
      if (c[speer]) s.recv(speer, c[speer], true);
    }
    if (size % 2 == 0) {
      const int peer = (rank + size / 2) % size;
      s.barrier();  // the copy, whatever its count
      if (c[peer]) {
        s.send(peer, c[peer]);
        s.recv(peer, c[peer], true);
      }
    }
  }
}

std::string libnbc_schedule(const CollectiveCall& c, Builder& b, const Group& g, uint32_t base,
                            std::string* approximation) {
  const int size = g.size();
  const int root = c.root;
  Nbc n(b, g);
  std::string alg;
  switch (base) {
    case MPA_CALL_Barrier: {  // nbc_ibarrier.c: dissemination
      const int maxround = ceil_log2(size) - 1;
      for (int rank = 0; rank < size; rank++)
        for (int round = 0; round <= maxround; round++) {
          n[rank].send((rank + (1 << round)) % size, 0);
          n[rank].recv(((rank - (1 << round)) + size) % size, 0);
          if (round < maxround) n[rank].barrier();
        }
      alg = "dissemination (nbc_ibarrier.c: nbc_barrier_init)";
      break;
    }
    case MPA_CALL_Bcast:  // coll_libnbc_ibcast_skip_dt_decision: linear up to 4 ranks, else binomial
      if (size <= 4) {
        for (int rank = 0; rank < size; rank++) {
          if (rank == root) {
            for (int peer = 0; peer < size; peer++)
              if (peer != root) n[rank].send(peer, c.bytes);
          } else {
            n[rank].recv(root, c.bytes);
          }
        }
        alg = "linear (nbc_ibcast.c: bcast_sched_linear)";
      } else {
        nbc_bcast_binomial(n, size, root, c.bytes);
        alg = "binomial (nbc_ibcast.c: bcast_sched_binomial)";
      }
      break;
    case MPA_CALL_Reduce: {
      Vec v = Vec::of(c.bytes);
      const int pof2 = pow2_floor(size);
      if (size > 2 && v.count >= static_cast<uint64_t>(pof2)) {
        reduce_redscat_gather(b, g, root, v, &n.ptrs);
        alg = "Rabenseifner reduce-scatter + binomial gather (nbc_ireduce.c: red_sched_redscat_gather)";
      } else if (size > 4 || c.bytes < 65536) {
        nbc_reduce_binomial_part(n, size, root, c.bytes);
        alg = "binomial (nbc_ireduce.c: red_sched_binomial)";
      } else {
        nbc_reduce_chain(n, size, root, v, 16384 / 2);
        alg = "chain in 8 KiB fragments (nbc_ireduce.c: red_sched_chain)";
      }
      break;
    }
    case MPA_CALL_Allreduce: {
      Vec v = Vec::of(c.bytes);
      if (size < 4 || c.bytes < 65536 || c.in_place) {
        nbc_reduce_binomial_part(n, size, 0, c.bytes);
        nbc_bcast_binomial(n, size, 0, c.bytes);
        alg = "binomial reduce to 0 + binomial bcast (nbc_iallreduce.c: allred_sched_diss)";
      } else {
        // allred_sched_redscat_allgather, in libnbc rounds
        Halving h = redscat_halving(b, g, v, true, &n.ptrs);
        for (int rank = 0; rank < size; rank++) {
          if (h.vrank[rank] != -1) {
            int step = h.nsteps - 1;
            for (int mask = h.pof2 >> 1; mask > 0; mask >>= 1) {
              int vdest = h.vrank[rank] ^ mask;
              int dest = vdest < h.rem ? vdest * 2 : vdest + h.rem;
              n[rank].send(dest, v.bytes(h.rcount[rank][step]));
              n[rank].recv(dest, v.bytes(h.scount[rank][step]), true);
              step--;
            }
          }
          if (rank < 2 * h.rem) {
            if (rank % 2 != 0) n[rank].recv(rank - 1, v.total());
            else n[rank].send(rank + 1, v.total());
          }
        }
        alg = "Rabenseifner reduce-scatter + allgather (nbc_iallreduce.c: allred_sched_redscat_allgather)";
      }
      break;
    }
    case MPA_CALL_Gather:
    case MPA_CALL_Gatherv: {  // nbc_igather.c, nbc_igatherv.c: linear
      for (int rank = 0; rank < size; rank++) {
        uint64_t mine = c.rank_bytes.empty() ? c.bytes : c.rank_bytes[rank];
        if (rank != root) {
          n[rank].send(root, mine);
          continue;
        }
        for (int i = 0; i < size; i++)
          if (i != root) n[rank].recv(i, c.rank_bytes.empty() ? c.bytes : c.rank_bytes[i]);
      }
      alg = base == MPA_CALL_Gather ? "linear (nbc_igather.c: nbc_gather_init)" : "linear (nbc_igatherv.c: nbc_gatherv_init)";
      break;
    }
    case MPA_CALL_Scatter:
    case MPA_CALL_Scatterv: {  // nbc_iscatter.c, nbc_iscatterv.c: linear
      for (int rank = 0; rank < size; rank++) {
        if (rank != root) {
          n[rank].recv(root, c.rank_bytes.empty() ? c.bytes : c.rank_bytes[rank]);
          continue;
        }
        for (int i = 0; i < size; i++)
          if (i != root) n[rank].send(i, c.rank_bytes.empty() ? c.bytes : c.rank_bytes[i]);
      }
      alg = base == MPA_CALL_Scatter ? "linear (nbc_iscatter.c: nbc_scatter_init)"
                                     : "linear (nbc_iscatterv.c: nbc_scatterv_init)";
      break;
    }
    case MPA_CALL_Allgather:  // nbc_iallgather.c: allgather_sched_linear
      b.expect_pairs(size);
      for (int rank = 0; rank < size; rank++)
        for (int remote = 0; remote < size; remote++)
          if (remote != rank) {
            n[rank].recv(remote, c.bytes);
            n[rank].send(remote, c.bytes);
          }
      alg = "linear (nbc_iallgather.c: allgather_sched_linear)";
      break;
    case MPA_CALL_Allgatherv:  // nbc_iallgatherv.c: ring order, all in one round
      b.expect_pairs(size);
      for (int rank = 0; rank < size; rank++)
        for (int r = 1; r < size; r++) {
          int speer = (rank + r) % size, rpeer = (rank - r + size) % size;
          n[rank].recv(rpeer, c.rank_bytes.empty() ? c.bytes : c.rank_bytes[rpeer]);
          n[rank].send(speer, c.rank_bytes.empty() ? c.bytes : c.rank_bytes[rank]);
        }
      alg = "linear (nbc_iallgatherv.c: nbc_allgatherv_init)";
      break;
    case MPA_CALL_Alltoall:  // nbc_ialltoall.c: every choice but in-place is a2a_sched_linear
      if (c.in_place) {
        nbc_alltoall_inplace(n, size, square(size, c.bytes));
        alg = "in place (nbc_ialltoall.c: a2a_sched_inplace)";
        break;
      }
      b.expect_pairs(size);
      for (int rank = 0; rank < size; rank++)
        for (int r = 0; r < size; r++)
          if (r != rank) {
            n[rank].recv(r, c.bytes);
            n[rank].send(r, c.bytes);
          }
      alg = "linear (nbc_ialltoall.c: a2a_sched_linear)";
      break;
    case MPA_CALL_Alltoallv:
    case MPA_CALL_Alltoallw: {  // nbc_ialltoallv.c a2av_sched_linear, nbc_ialltoallw.c a2aw_sched_linear
      auto to = alltoallv_matrix(c, approximation);
      if (c.in_place) {
        nbc_alltoall_inplace(n, size, to);
        alg = base == MPA_CALL_Alltoallv ? "in place (nbc_ialltoallv.c: a2av_sched_inplace)"
                                         : "in place (nbc_ialltoallw.c: a2aw_sched_inplace)";
        break;
      }
      for (int rank = 0; rank < size; rank++)
        for (int i = 0; i < size; i++) {
          if (i == rank) continue;
          if (to[rank][i]) n[rank].send(i, to[rank][i]);
          if (to[i][rank]) n[rank].recv(i, to[i][rank]);
        }
      alg = base == MPA_CALL_Alltoallv ? "linear (nbc_ialltoallv.c: a2av_sched_linear)"
                                       : "linear (nbc_ialltoallw.c: a2aw_sched_linear)";
      break;
    }
    case MPA_CALL_Reduce_scatter:
    case MPA_CALL_Reduce_scatter_block: {
      // nbc_ireduce_scatter(_block).c: binomial reduce of the whole vector to 0, then 0 sends the parts
      std::vector<uint64_t> parts = base == MPA_CALL_Reduce_scatter && !c.rank_bytes.empty()
                                        ? c.rank_bytes
                                        : std::vector<uint64_t>(size, c.bytes);
      uint64_t total = std::accumulate(parts.begin(), parts.end(), uint64_t{0});
      if (total == 0) break;
      const int maxr = ceil_log2(size);
      for (int rank = 0; rank < size; rank++) {
        auto& s = n[rank];
        for (int r = 1; r <= maxr; r++) {
          if (rank % (1 << r) == 0) {
            int peer = rank + (1 << (r - 1));
            if (peer < size) {
              s.recv(peer, total, true);
              s.op(total, true);
            }
          } else {
            s.send(rank - (1 << (r - 1)), total);
            break;
          }
        }
        s.barrier();
        if (rank == 0) {
          for (int r = 1; r < size; r++) s.send(r, parts[r]);
        } else {
          s.recv(0, parts[rank]);
        }
      }
      alg = base == MPA_CALL_Reduce_scatter ? "binomial reduce to 0, linear scatter (nbc_ireduce_scatter.c)"
                                            : "binomial reduce to 0, linear scatter (nbc_ireduce_scatter_block.c)";
      break;
    }
    case MPA_CALL_Scan:  // nbc_iscan.c: scan_sched_linear
      if (c.bytes == 0) break;
      for (int rank = 0; rank < size; rank++) {
        if (rank > 0) {
          n[rank].recv(rank - 1, c.bytes, true);
          n[rank].op(c.bytes, true);
        }
        if (rank != size - 1) n[rank].send(rank + 1, c.bytes);
      }
      alg = "linear (nbc_iscan.c: scan_sched_linear)";
      break;
    case MPA_CALL_Exscan:  // nbc_iexscan.c: exscan_sched_linear
      for (int rank = 0; rank < size; rank++) {
        if (rank > 0) {
          n[rank].recv(rank - 1, c.bytes);
          if (rank < size - 1) {
            n[rank].barrier();
            n[rank].op(c.bytes, true);
            n[rank].send(rank + 1, c.bytes);
          }
        } else if (size > 1) {
          n[rank].send(1, c.bytes);
        }
      }
      alg = "linear (nbc_iexscan.c: exscan_sched_linear)";
      break;
    default:
      return "";
  }
  n.commit();
  if (alg.empty()) alg = "nothing to exchange";
  return "Open MPI 4.1 coll/libnbc " + alg;
}

}  // namespace

Chosen ompi_schedule(const CollectiveCall& c, Builder& b) {
  const bool nonblocking = c.call >= MPA_CALL_Ibarrier;
  const uint32_t base = nonblocking ? c.call - (MPA_CALL_Ibarrier - MPA_CALL_Barrier) : c.call;
  const Group g = Group::whole(c.size);
  const int size = c.size;
  const bool rooted = base == MPA_CALL_Bcast || base == MPA_CALL_Reduce || base == MPA_CALL_Gather ||
                      base == MPA_CALL_Gatherv || base == MPA_CALL_Scatter || base == MPA_CALL_Scatterv;
  if (rooted && (c.root < 0 || c.root >= size)) return {};
  Chosen out;
  auto blocks = [&]() { return c.rank_bytes.empty() ? std::vector<uint64_t>(size, c.bytes) : c.rank_bytes; };
  const bool v_form = base == MPA_CALL_Gatherv || base == MPA_CALL_Scatterv || base == MPA_CALL_Allgatherv ||
                      base == MPA_CALL_Alltoallv || base == MPA_CALL_Alltoallw || base == MPA_CALL_Reduce_scatter;
  if (v_form && c.rank_bytes.empty() && c.peer_bytes.empty())
    out.approximation = "each rank's count is not in the log: every rank taken to have the largest";
  // ompi/mpi/c/*.c return before the collective component when there is nothing to move
  const bool counted = base != MPA_CALL_Barrier && !v_form;
  const std::vector<uint64_t> rank_blocks = blocks();
  const bool all_empty = base == MPA_CALL_Reduce_scatter &&
                         std::accumulate(rank_blocks.begin(), rank_blocks.end(), uint64_t{0}) == 0;
  if (size < 2 || (counted && c.bytes == 0) || all_empty) {
    out.algorithm = size < 2 ? "Open MPI 4.1: one rank, no messages"
                             : "Open MPI 4.1: count 0, the call returns before coll (ompi/mpi/c)";
    return out;
  }
  if (nonblocking) {
    out.algorithm = libnbc_schedule(c, b, g, base, &out.approximation);
    return out;
  }
  std::string alg;
  switch (base) {
    case MPA_CALL_Barrier: alg = barrier_tuned(b, g); break;
    case MPA_CALL_Bcast: alg = bcast_tuned(b, g, c.root, Vec::of(c.bytes)); break;
    case MPA_CALL_Reduce: alg = reduce_tuned(b, g, c.root, Vec::of(c.bytes)); break;
    case MPA_CALL_Allreduce: alg = allreduce_tuned(b, g, Vec::of(c.bytes)); break;
    case MPA_CALL_Gather: alg = gather_tuned(b, g, c.root, c.bytes); break;
    case MPA_CALL_Scatter: alg = scatter_tuned(b, g, c.root, c.bytes); break;
    case MPA_CALL_Gatherv:
      gatherv_linear(b, g, c.root, blocks());
      alg = "coll/basic linear (coll_basic_gatherv.c: mca_coll_basic_gatherv_intra)";
      break;
    case MPA_CALL_Scatterv:
      scatterv_linear(b, g, c.root, blocks());
      alg = "coll/basic linear (coll_basic_scatterv.c: mca_coll_basic_scatterv_intra)";
      break;
    case MPA_CALL_Allgather: alg = allgather_tuned(b, g, c.bytes); break;
    case MPA_CALL_Allgatherv: alg = allgatherv_tuned(b, g, blocks()); break;
    case MPA_CALL_Alltoall: alg = alltoall_tuned(b, g, c.bytes, c.in_place); break;
    case MPA_CALL_Alltoallv: {
      if (size < 2) {
        alg = "Open MPI 4.1 coll/tuned Alltoallv on one rank (no messages)";
        break;
      }
      auto to = alltoallv_matrix(c, &out.approximation);
      if (c.in_place) {
        alltoall_inplace(b, g, to);
        alg = "in place (coll_base_alltoallv.c: mca_coll_base_alltoallv_intra_basic_inplace)";
        break;
      }
      // ompi_coll_tuned_alltoallv_intra_dec_fixed: by communicator size only
      bool pairwise = size < 4 || (size >= 64 && size < 128) || (size >= 256 && size < 1024);
      if (pairwise) {
        alltoall_pairwise(b, g, to);
        alg = "pairwise (coll_base_alltoallv.c: ompi_coll_base_alltoallv_intra_pairwise)";
      } else {
        alltoallv_linear(b, g, to, false);
        alg = "basic_linear (coll_base_alltoallv.c: ompi_coll_base_alltoallv_intra_basic_linear)";
      }
      break;
    }
    case MPA_CALL_Alltoallw: {
      auto to = alltoallv_matrix(c, &out.approximation);
      if (c.in_place) {
        alltoall_inplace(b, g, to);
        alg = "coll/basic in place (coll_basic_alltoallw.c: mca_coll_basic_alltoallw_intra_inplace)";
        break;
      }
      alltoallv_linear(b, g, to, true);
      alg = "coll/basic linear (coll_basic_alltoallw.c: mca_coll_basic_alltoallw_intra)";
      break;
    }
    case MPA_CALL_Reduce_scatter: alg = reduce_scatter_tuned(b, g, blocks()); break;
    case MPA_CALL_Reduce_scatter_block: alg = rsb_tuned(b, g, c.bytes); break;
    case MPA_CALL_Scan:
      scan_linear(b, g, c.bytes);
      alg = "coll/basic linear (coll_base_scan.c: ompi_coll_base_scan_intra_linear)";
      break;
    case MPA_CALL_Exscan:
      if (size > 1) exscan_linear(b, g, c.bytes);
      alg = "coll/basic linear (coll_base_exscan.c: ompi_coll_base_exscan_intra_linear)";
      break;
    default:
      return {};
  }
  if (alg.rfind("Open MPI", 0) != 0 && alg.rfind("coll/basic", 0) != 0) alg = "coll/tuned " + alg;
  out.algorithm = alg.rfind("Open MPI", 0) == 0 ? alg : "Open MPI 4.1 " + alg;
  return out;
}

}  // namespace mpiadvise::coll

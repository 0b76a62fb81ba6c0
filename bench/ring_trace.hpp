// The benches' synthetic trace, built in memory: RANKS ranks in a ring, each round an Irecv from the left,
// an Isend to the right and a Waitall, after 50-70 us of computation; every fourth message above S (128 KiB,
// the others 1 KiB), so that a quarter are rendezvous. bench/replay_bench.cpp, bench/spread_bench.cpp.
#pragma once

#include <stdexcept>

#include "replay.hpp"

namespace mpiadvise::bench {

// P ranks of `rounds` rounds (3 ops each).
inline Trace ring_trace(int P, long rounds) {
  Trace t;
  t.world_size = P;
  t.ranks.resize(P);
  t.comms.push_back(TraceComm{1, {}, {}});
  t.site_keys.resize(P);
  t.messages.reserve(static_cast<size_t>(P) * rounds);
  t.links.reserve(static_cast<size_t>(P) * rounds * 2);  // the Waitall's two: the Irecv and Isend hold their own
  for (int r = 0; r < P; r++) t.ranks[r].ops.reserve(static_cast<size_t>(rounds) * 3);
  // the message of round k from rank r to r+1: id = r * rounds + k, numbered as build_trace numbers a real
  // run's (analyzer/trace.cpp: by sender, each rank's sends in its order of sending), so that the replay
  // meets the messages where it does on logs
  for (int r = 0; r < P; r++)
    for (long k = 0; k < rounds; k++) {
      Message m;
      m.src = r;
      m.dst = (r + 1) % P;
      m.bytes = (k % 4 == 0) ? 131072 : 1024;
      m.send_op = static_cast<uint32_t>(3 * k + 1);
      m.recv_op = static_cast<uint32_t>(3 * k);  // both sides completed by op 3k + 2, the Waitall (its links)
      t.messages.push_back(m);
    }
  for (int r = 0; r < P; r++) {
    auto& ops = t.ranks[r].ops;
    uint64_t now = 1000;
    for (long k = 0; k < rounds; k++) {
      uint32_t in = static_cast<uint32_t>(((r + P - 1) % P) * rounds + k), out = static_cast<uint32_t>(r * rounds + k);
      auto add = [&](uint32_t call, OpKind kind, std::initializer_list<Link> links, uint64_t gap) {
        Op op;
        if (!op.set_times(now + gap, now + gap + 2000)) throw std::length_error("ring_trace: a time beyond an op's");
        now = op.t_exit();
        op.call = call;
        op.kind = kind;
        op.callsite = kind == OpKind::Completion ? 3 : 1;
        if (links.size() == 1) {  // held in the op, as build_trace leaves a run's (compact_links)
          set_one_link(op, *links.begin(), t.spilled_links);
        } else {
          t.set_links(op, static_cast<uint32_t>(t.links.size()), static_cast<uint32_t>(links.size()));
          for (const auto& l : links) t.links.push_back(l);
        }
        ops.push_back(op);
      };
      add(MPA_CALL_Irecv, OpKind::PostRecv, {Link{Link::PostRecv, in}}, 50000 + (r * 7919 + k * 104729) % 20000);
      add(MPA_CALL_Isend, OpKind::PostSend, {Link{Link::PostSend, out}}, 100);
      add(MPA_CALL_Waitall, OpKind::Completion, {Link{Link::DoneRecv, in}, Link{Link::DoneSend, out}}, 100);
    }
  }
  t.receives_together = receives_together(t);  // as build_trace counts them: none here (one receive a Waitall)
  return t;
}

}  // namespace mpiadvise::bench

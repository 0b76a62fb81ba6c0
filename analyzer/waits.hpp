// Wait states measured from the recorded timestamps (clock offsets applied by the reader): late
// senders, late receivers split by cause, and waiting at collectives. Each wait is charged to the call
// site that waited and, for a message, to the call site at its other end that made it wait (at a
// collective the last rank's computation, not its call, keeps the others waiting: no site is charged).
#pragma once

#include <cstdint>
#include <map>
#include <vector>

#include "loggps.hpp"
#include "trace.hpp"

namespace mpiadvise {

class OpStream;

enum class WaitCause : uint8_t {
  LateSender,          // a receive (or its wait) idles until the data is sent
  LateReceiverRendezvous,  // a send above S idles until the receive is posted
  LateReceiverSynchronous, // a synchronous-mode send (Ssend) idles until the receive is posted
  LateReceiverOther,   // a send at or below S that still waited for its receiver
  Collective,          // from a rank's arrival to the last arrival
};
const char* wait_cause_name(WaitCause c);

// One wait state: a rank idle in a call until another rank reached its side of the operation.
struct Wait {
  double from = 0, to = 0;       // when it began (the op's entry) and ended: measured, ns on rank 0's clock
  uint32_t op = 0;               // the op it waited in
  uint32_t culprit_op = kNone;   // the op of the rank it waited for whose entry, at `to` or later, ended it
  uint32_t rank : 24 = 0;        // the waiting rank (below kMaxWorldSize, 2^24)
  WaitCause cause : 8 = WaitCause::LateSender;
  int32_t culprit : 25 = -1;     // the rank it waited for (at a collective, the last to arrive); -1: none
  uint32_t size_bits : 7 = 0;    // std::bit_width of the message's bytes: 0 at a collective, else floor(log2) + 1
  double ns() const { return to - from; }
};
// 32 bytes: the report keeps every wait of the run (about one for every four MPI calls of a halo: 57 MB
// of mpiadvise report --low-memory's peak on mpiadvise-synth's halo of 64 ranks x 10^5 calls, 71 at the
// 40 bytes the message's whole size took, where only its log2 was read). Its start is its own, not looked
// up in the waiter's op, so that what adds waits up needs no trace of ops.
static_assert(sizeof(Wait) == 32);

// Every wait of the run, from the recorded times: a late receiver classified by what the model says the
// send waits for (the rendezvous above S, a synchronous send, or neither: a full eager buffer, a
// library's own progress). By message (the sender's wait first), then by collective instance and member:
// the order the streams' version gives too, so that every sum made of them is the same to the bit.
std::vector<Wait> find_waits(const Trace& trace, const LogGPS& model);

// The same waits, in the same order, from the ranks' op streams (OpStream::encode_all, packed or not)
// walked in the order their ops were entered (walk_by_entry): what the waits need of a message or a
// collective instance is held from the first of its ops met to the last, not for the whole run. held:
// the most messages and instances held at once. The same on every trace build_trace makes; a hand-made
// one may differ where it links a message from ops other than its send_op and recv_op, completes a side
// twice (the trace's takes the last), or leaves a member's op without its PostColl link.
struct WaitsHeld {
  size_t messages = 0, instances = 0;
};
std::vector<Wait> find_waits(const std::vector<OpStream>& streams, const LogGPS& model, WaitsHeld* held = nullptr);

struct SiteWaits {
  int rank = 0;
  uint32_t callsite = 0;
  uint32_t call = 0;
  std::map<WaitCause, double> waited_ns;  // time this site spent waiting, by cause
  std::map<WaitCause, double> caused_ns;  // time this site made others wait
  std::map<WaitCause, uint64_t> count;    // waits at this site
  // sizes of the messages it waited on, by cause (a site that waits both as a late receiver of large
  // messages and for small ones shows each cause with its own sizes): how many of each floor(log2(bytes)),
  // the hot spots' figure (a list of every wait's bytes was 8 bytes a wait, 17 MB of the peak of mpiadvise
  // report --low-memory on mpiadvise-synth's halo of 64 ranks x 10^5 calls)
  std::map<WaitCause, std::map<int, uint64_t>> size_log2;
};

struct WaitStates {
  std::vector<std::map<WaitCause, double>> rank_ns;   // per rank, by cause
  std::map<std::pair<int, uint32_t>, SiteWaits> sites;
  double total(WaitCause c) const;
  double send_wait_ns(int rank) const;  // late-receiver waits of the rank's sends
  double recv_wait_ns(int rank) const;  // late-sender waits of its receives
  double site_send_wait_ns(int rank, uint32_t callsite) const;
  double site_recv_wait_ns(int rank, uint32_t callsite) const;
};

// The measured waits (find_waits) added up by rank and call site.
WaitStates measure_waits(const Trace& trace, const LogGPS& model);
WaitStates measure_waits(const Trace& trace, const std::vector<Wait>& waits);
// The same, the waits' ops' call sites read from the ranks' streams (one walk of each rank's).
WaitStates measure_waits(const std::vector<OpStream>& streams, const std::vector<Wait>& waits);

}  // namespace mpiadvise

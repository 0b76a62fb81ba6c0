// The LogGPS model (Ino, Fujimoto, Hagihara 2001): the communication time of a k-byte message (Table 3)
// and the times of the MPI routines (Table 4), named as in the paper. Every other module calls these;
// no formula of the model is written anywhere else. All times in ns, sizes in bytes.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <map>
#include <stdexcept>
#include <optional>
#include <string>
#include <vector>

namespace mpiadvise {

// A speed measured at some message sizes, at size k: the logs of the factors (log_ratio, by sizes
// ascending) interpolated over log(1 + size) between the sizes either side, held at the ends.
double log_speed_at(double k, const std::vector<uint64_t>& sizes, const std::vector<double>& log_ratio);

// A parameter set (share/params/*.toml). Per-byte costs in ns per byte.
struct LogGPSParams {
  std::string name;        // e.g. "myrinet-mpich-score"
  std::string description; // where the numbers come from
  std::string library, transport;
  double L = 0;    // latency, sender to receiver
  double o = 0;    // o': overhead of sending or receiving a 0-byte message
  // mpiadvise's extension, measured by calibrate on every transport here: the receive's own overhead o_r
  // (a 0-byte receive whose message arrives while it waits; o' where the set has none) and D, what an eager
  // receive costs more when its message arrived before it was called (the library reads the data, or
  // takes it off its unexpected queue, inside the call). The model's round trips require an early
  // receive plus the latency to cost at least a late one ((12), (13)); over Open MPI's loopback TCP a late
  // receive costs 4.4 us beyond the send and an early one 1.3 us with the latency, with o' = 4.3 us for
  // the send. With one o' for both (the paper's) the fit priced the w = 0 round trips 17-51% high and
  // the late ones 17-45% low.
  std::optional<double> o_r;
  double D = 0;
  double Oss = 0, Ors = 0;  // per-byte send / receive overhead, k <= S
  double Osl = 0, Orl = 0;  // per-byte send / receive overhead, k > S
  double Gs = 0, Gl = 0;    // per-byte gap for the first s bytes / for the bytes after s
  uint64_t s = 0;  // largest message sent as one packet
  // s as the set had it before move_S first raised S: what prices the transfer of a message above S. A
  // raise of S moves s with it for the messages it makes eager (the [raised] sweep was fitted so), but a
  // message still above it goes as the rendezvous sweep measured (over UCX's shared memory a what-if S
  // capped at [raised] to_bytes below the halo's 512 KiB messages predicted 11% less time from that alone,
  // their protocol unchanged). None: s.
  std::optional<uint64_t> s_set;
  uint64_t S = 0;  // largest message sent without synchronisation (eager limit)
  // mpiadvise's extension: what the library's rendezvous protocol adds to each message above S beyond
  // the paper's REQ and ACK (o' + L each way), counted with the ACK in T5. 0 for the paper's MPICH-SCore
  // and for Open MPI's ob1; UCX over TCP, whose rendezvous moves the data in a protocol of its own,
  // measured about 65 us here (a 1 KiB rendezvous round trip took 152 us against 20 us eager).
  double R = 0;
  // Beyond the model ([mpi] in the files): what a persistent request (MPI_Send_init/MPI_Recv_init and
  // MPI_Start) saves per call against the same MPI_Isend/MPI_Irecv; negative where it costs more.
  // Unknown (not measured) when empty.
  std::optional<double> persistent_saving;
  // What a local reduction (MPI_SUM of doubles) costs per byte, inside Reduce, Allreduce, Scan, ...;
  // unknown (taken as free) when empty.
  std::optional<double> reduce_ns_per_byte;
  // What posting a non-blocking send or receive costs the caller ([mpi] isend_ns, irecv_ns in the files):
  // the time of the MPI_Isend and MPI_Irecv calls themselves, measured by calibrate. The paper prices
  // both at o' ((6), (10)); a library's are not its blocking calls' overhead: Open MPI over TCP sends a
  // small Isend's data inside the call (4.3 us against o' = 6.7 us fitted on round trips, whose o' also
  // holds the latency the fit cannot tell from it), and an Irecv only queues the request (30-90 ns): the
  // receive's own work is done when the message is taken, in the Wait. MEEP, 96k such messages at 2
  // ranks, was predicted 20% slow by o' for both. o' where the set has none.
  std::optional<double> isend_ns, irecv_ns;
  // The library's buffer for eager messages that reached a receiver before their receive ([eager] in the
  // files): a sender may have at most eager_buffer_bytes (each message counted with eager_header_bytes
  // more) and at most eager_buffer_messages such messages outstanding to one receiver; the next eager
  // send waits until the receiver takes one. Unlimited when empty. Measured by calibrate (a flood of
  // eager sends to a late receiver): Open MPI's shared memory holds 4 KiB (the per-peer fast box),
  // loopback TCP about a thousand messages or a few MiB (the sockets' buffers).
  std::optional<uint64_t> eager_buffer_bytes, eager_buffer_messages;
  uint64_t eager_header_bytes = 0;
  // Eager messages above the library's own limit ([raised] in the files): a what-if that raises S makes
  // eager messages the library sends by another eager protocol than its small ones (UCX's shared memory:
  // several 8 KiB FIFO segments instead of one), measured by calibrate's sweep with the limit raised,
  // fitted alone. Above raised_from bytes an eager message costs Oss_raised and Ors_raised per byte
  // instead of Oss and Ors. None when empty. Measured: UCX's shared memory 0.050 and 0.049 ns/B above
  // 8255 bytes, against 0.022 and 0.010 fitted over both sweeps; with those the halo example's what-if
  // for UCX_RNDV_THRESH=262144 predicted -18.7% and the real run was 6% slower.
  std::optional<uint64_t> raised_from;
  double Oss_raised = 0, Ors_raised = 0;
  // [raised] to_bytes: with the library's limit raised above every size of calibrate's sweep, the largest
  // message it still sent without waiting for its receiver, where a larger one waited: no setting makes
  // S larger (move_S stops there). Measured here (UCX_RNDV_THRESH=2097152): MPICH 4.0 over UCX's shared
  // memory 387754 bytes in four calibrations; over UCX's TCP 524288 or 655359 in two and none up to 1 MiB
  // in a third (a full socket buffer: the send waits for its receiver to read); Open MPI's TCP none up to
  // 1 MiB. None when empty.
  std::optional<uint64_t> raised_to;
  // Messages above S that the library moves by a second rendezvous protocol above large_from bytes
  // ([large] in the files): Open MPI's shared memory (vader) sends a message above S and up to its
  // btl_vader_eager_limit less ob1's 56 bytes of headers as fragments through the receiver's FIFO (two
  // copies, the send completes when the receiver takes them), and a larger one by a rendezvous whose
  // receiver reads the data with one CMA copy (process_vm_readv): a fixed cost of its own (measured here
  // 2.8 us one way: a 4040-byte round trip took 1.0 us, a 4041-byte one 6.7 us) and another cost per
  // byte. Above large_from a message takes R_large more in the handshake (with R, in T5) and Osl_large,
  // Orl_large per byte instead of Osl, Orl. None when empty: one protocol above S.
  std::optional<uint64_t> large_from;
  double R_large = 0, Osl_large = 0, Orl_large = 0;
  // Data sent again unchanged ([resend] in the files): a message the tracer marks RESENT (the buffer,
  // bytes and type of its sender's previous send, nothing written into it by MPI since) with less
  // computation between the two sends than rewriting its bytes takes (Message::cached) costs less than
  // the data just written that the round trips above measure: the library reads lines its caches hold.
  // By the path the message takes (buffered()): one the library copies through its own buffers (eager,
  // and with a [large] table up to its from_bytes) costs resend_buffered times the per-byte terms; one its
  // rendezvous moves (over shared memory the receiver's single CMA copy from the sender's pages)
  // resend_rendezvous times the per-byte terms and the protocol's own cost R (and R_large), most of which
  // is the receiver's first touches of lines the sender has just written: over Open MPI's vader a
  // 4096-byte round trip took 5.9 us with data written before each send and 3.7 us with data sent again,
  // 8 KiB 8.2 and 4.0, 1-2 KiB (copied through the FIFO) 0.84-0.89 times; MPICH's UCX shared memory above
  // its S 0.41-0.47 times, its eager 2-8 KiB about 0.85 (one untraced benchmark run each, 15 repetitions
  // a size, the two phases one after the other). Measured by calibrate (round trips with neither
  // rank writing its buffer between its sends; those figures with data written a byte a cache line, as
  // calibrate wrote it before 2026-11-28: libtrace/sent_data.h). 1 where empty.
  std::optional<double> resend_buffered, resend_rendezvous;
  // The most bytes of a message sent again that the caches still hold ([resend] cached_bytes): a larger
  // message costs its first resend_cached_bytes at the factor and the rest as data just written
  // (resent_factor). Over shared memory here (2 MiB of L2 a core) the round trip of data sent again was
  // 0.40-0.52 times that of data just written from 16 KiB to 512 KiB, 0.54-0.56 at 768 KiB, 0.67-0.72 at
  // 1 MiB and 0.85-0.93 from 1.5 to 4 MiB (vader and UCX sm alike). Fitted by calibrate; none: every
  // size at the factor.
  std::optional<uint64_t> resend_cached_bytes;
  // Beyond the model ([machine] in the files): the calibration found this machine's messages at two speeds
  // (analyzer/calibration.hpp: two_speeds within its runs, run_speeds between them), the slower
  // speeds_ratio times the faster, slow_share of the time. The set prices one speed or their mean; a run
  // at another is replayed at the speed closest to it (model_fit.hpp, run_speed). None when empty.
  std::optional<double> speeds_ratio;
  double slow_share = 0;
  // each speed the calibration saw, as a factor on the set's times (below 1: faster than the set's)
  std::vector<double> speeds;
  // Not of the files: the run's speed by message size, against the one factor its times were scaled by
  // (the report's probe of the run's own round trips, model_fit.hpp: probe_speed; filled where analyse()
  // applies it, each size's ratio held to kProbeFactorMin..kProbeFactorMax). That factor is weighted by
  // the sizes the run sends; a split what-if's point-to-point chunks take the speed of their own size (a
  // collective's parts, split to S, stay at the factor). Over shared memory here one run's 0-byte round
  // trips went at x0.78 the set's and its 256 KiB ones at x1.67: its 128 KiB messages scaled the set by
  // 1.49, and the split what-if priced its 256-byte chunks at that (+12-19% predicted in four runs here,
  // +13% in one on CI, where the split program ran 2-4% slower). By size (ascending), the log of the
  // factor, the two of one length; empty: one speed for every size.
  std::vector<uint64_t> speed_bytes;
  std::vector<double> speed_log;
  // the factor at k bytes (log_speed_at); 1 where there is none
  double speed_at(uint64_t k) const {
    return speed_bytes.empty() ? 1 : std::exp(log_speed_at(static_cast<double>(k), speed_bytes, speed_log));
  }
  static constexpr uint64_t kInfinite = std::numeric_limits<uint64_t>::max();

  // Throws ParamError naming what is wrong (negative values, s > S, ...).
  void validate(const std::string& where) const;
  // A new eager limit, as a what-if or the log's effective S sets it: s follows S where it was S (the
  // set has one eager segment, priced by Gs), and never exceeds it. A raise goes no further than
  // raised_to, the most the library reaches (where that is above the S in force).
  void move_S(uint64_t new_S) {
    if (raised_to && new_S > S && new_S > *raised_to) new_S = std::max(S, *raised_to);
    if (!s_set && new_S > S) s_set = s;  // a lowered S moves s down with it, as before
    s = s == S ? new_S : std::min(s, new_S);
    S = new_S;
  }
  // The set with every time it prices (latency, overheads, gaps, the protocols' terms, the posting and
  // persistent costs) times f: the same machine at another of its speeds ([machine]). Sizes, buffers and
  // the local reduction unchanged.
  LogGPSParams scaled(double f) const;
  // whether the library copies a k-byte message through its own buffers (eager, or up to large_from where
  // the set has a [large] protocol), else its rendezvous moves it
  bool buffered(uint64_t k) const { return k <= S || (large_from && k <= *large_from); }
  // The set for a message of data sent again unchanged on either path: every per-byte term times f, and
  // on the rendezvous path R and R_large too; the resend factors then empty. Other times and sizes unchanged.
  LogGPSParams resent(double f, bool rendezvous) const;
  // the receive's overhead at 0 bytes: o_r, or o' where the set has none
  double o_recv() const { return o_r.value_or(o); }
  // Sets one parameter by its name (L, o, o_r, D, Oss, Ors, Osl, Orl, Gs, Gl, R, s, S); throws ParamError.
  // (The [large] protocol's terms stay as they are: a what-if on Osl prices the messages below large_from.)
  void set(const std::string& key, double value, const std::string& where);
};

class ParamError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Reads a parameter file (TOML). Throws ParamError naming the file, the key and the problem.
LogGPSParams load_params(const std::filesystem::path& file);
// NAME (a file in the parameter directory, without .toml) or a path to a file.
LogGPSParams find_params(const std::string& name_or_file, const std::filesystem::path& params_dir);
std::vector<std::filesystem::path> list_params(const std::filesystem::path& params_dir);
// Where share/params is: beside the build, or installed under the prefix.
std::filesystem::path default_params_dir();

// One side of one operation as the model prices it: when it completes, and how its time divides (the
// parts add up to the time from the call to `done`).
struct SideCost {
  double done = 0;
  double overhead = 0;         // the side's own CPU work: o' and the per-byte copies
  double wait = 0;             // idle for the partner: a late receive, a late send, a full eager buffer
  double synchronisation = 0;  // the protocol's own steps: the handshake's messages, the data in flight
};

// The model's terms for one k-byte message (Table 3). senders: processes sending to the same receiver
// at once; their bandwidth is shared by dividing 1/G by it, for the largest of the three per-byte terms.
class LogGPS {
 public:
  explicit LogGPS(const LogGPSParams& p) : p_(p) {}
  const LogGPSParams& params() const { return p_; }

  bool eager(uint64_t k) const { return k <= p_.S; }
  bool single_packet(uint64_t k) const { return k <= p_.s; }

  double T1(uint64_t k, int senders = 1) const;   // o' + k Oss          send overhead, k <= S
  double T1p(uint64_t k, int senders = 1) const;  // o' + k Osl          send overhead, k > S
  double T2(uint64_t k, int senders = 1) const;   // k Gs + L            transfer, k <= s
  double T2p(uint64_t k, int senders = 1) const;  // s Gs + (k-s) Gl + L transfer, k > s
  double T3(uint64_t k, int senders = 1) const;   // o_r + k Ors         receive overhead, k <= S
  double T3p(uint64_t k, int senders = 1) const;  // o_r + k Orl         receive overhead, k > S
  // What an eager receive costs more when its message arrived before the receive was called (D, beyond
  // T3): arrival is when the data reached the receiver, tr when the receive was called.
  double late_receive(double arrival, double tr) const { return arrival < tr ? p_.D : 0.0; }
  double T4(double tr_minus_ts) const;            // max(o' + L, tr - ts) + o'   REQ seen by the receiver
  // o' + L + o' + R      ACK back to the sender (and R_large above large_from: a k-byte message's protocol)
  double T5(uint64_t k = 0) const;
  // The least a rendezvous handshake adds before the data moves: the REQ's way and the ACK's back to a
  // receiver already waiting, T4(0) + T5 = 4o' + 2L + R (what a what-if on L makes visible)
  double handshake() const { return T4(0) + T5(); }
  // whether a k-byte message above S goes by the library's second rendezvous protocol ([large])
  bool large(uint64_t k) const { return p_.large_from && k > *p_.large_from; }
  double transfer(uint64_t k, int senders = 1) const;  // T2 or T2', whichever k calls for
  // when an eager message sent at ts reaches its receiver: after the send overhead and the transfer
  double eager_arrival(uint64_t k, double ts, int senders = 1) const { return ts + T1(k, senders) + transfer(k, senders); }

  // Equations (1)-(3): communication time of a k-byte message sent at ts, received (called) at tr.
  double communication(uint64_t k, double ts, double tr, int senders = 1) const;
  // Table 4: time spent in each routine.
  double send(uint64_t k, double ts, double tr, int senders = 1) const;   // (4), (5)
  // MPI_Ssend: the rendezvous handshake whatever the size, (5) with T1' (mpiadvise's extension)
  double synchronous_send(uint64_t k, double ts, double tr, int senders = 1) const;
  double isend() const { return p_.isend_ns.value_or(p_.o); }             // (6), or as measured
  double recv(uint64_t k, double ts, double tr, int senders = 1) const;   // (7), (8), (9)
  double irecv() const { return p_.irecv_ns.value_or(p_.o); }            // (10), or as measured
  // (11), with the erratum: the work done by tw is tw - ti. t_blocking: time of the blocking
  // counterpart had it been called at ti.
  double wait(double t_blocking, double tw_minus_ti) const;
  // Table 6, equations (12)-(14): round trip of a k-byte message with blocking calls when one side
  // computes w ns before receiving (the calibration benchmark's measurement). (12), (13) with D: the
  // computing side's receive is late when w exceeds T1 + 2 T2 + T3, and then costs D more.
  double round_trip(uint64_t k, double w) const;

  // One message whose send is posted at ts and whose receive is posted at tr: when each side's blocking
  // call (or the Wait of its non-blocking one) returns. A synchronous send, or one above S, waits for
  // the receive (its completion needs tr); an eager send does not (tr unused). The receive needs ts.
  // Used for every step of a collective (analyzer/collectives.hpp).
  bool send_waits_for_receive(uint64_t k, bool synchronous) const { return synchronous || !eager(k); }
  double send_completion(uint64_t k, double ts, double tr, int senders, bool synchronous) const {  // (4), (5)
    return send_side(k, ts, tr, senders, synchronous).done;
  }
  double recv_completion(uint64_t k, double ts, double tr, int senders, bool synchronous) const {  // (7)-(9)
    return recv_side(k, ts, tr, senders, synchronous).done;
  }
  // The same with the parts of each side's time. For an eager send, ts is when it starts (after any wait
  // for room in the eager buffer, which the replay adds, since it needs the other messages).
  SideCost send_side(uint64_t k, double ts, double tr, int senders, bool synchronous) const;
  SideCost recv_side(uint64_t k, double ts, double tr, int senders, bool synchronous) const;

  // A k-byte message sent as ceil(k / chunk) eager messages of at most chunk bytes and received as many
  // (the split transformation). While the chunks fit the eager buffer the sender streams them; beyond
  // that each further chunk waits until the receiver took an earlier one, so the two sides go in step.
  // Each chunk's receive is T3, without D even where the chunk came first: D is measured on a receive
  // after the receiver computed, not on one of a row of receives (the pipeline example's split advice,
  // priced so over Open MPI's TCP, realised 100% of its cut in bench/validate.py).
  uint64_t chunks(uint64_t k, uint64_t chunk) const { return chunk ? (k + chunk - 1) / chunk : 1; }
  bool split_waits_for_receive(uint64_t k, uint64_t chunk) const { return chunks(k, chunk) > chunks_buffered(chunk); }
  SideCost split_send_side(uint64_t k, uint64_t chunk, double ts, double tr, int senders) const;
  SideCost split_recv_side(uint64_t k, uint64_t chunk, double ts, double tr, int senders) const;

  // The eager buffer (LogGPSParams::eager_buffer_*): the bytes a k-byte eager message takes in it, whether
  // `bytes` in `messages` messages fit, and how many c-byte messages fit (unlimited: the largest count).
  bool eager_buffer_limited() const { return p_.eager_buffer_bytes || p_.eager_buffer_messages; }
  uint64_t buffered_bytes(uint64_t k) const { return k + p_.eager_header_bytes; }
  bool eager_buffer_holds(uint64_t bytes, uint64_t messages) const {
    return (!p_.eager_buffer_bytes || bytes <= *p_.eager_buffer_bytes) &&
           (!p_.eager_buffer_messages || messages <= *p_.eager_buffer_messages);
  }
  uint64_t chunks_buffered(uint64_t c) const;
  // The idle parts of those times, for wait classification: how long the send waits for its receive
  // to be posted (the handshake's T4 beyond o' + L, in (5); 0 for an eager send), and how long the
  // receive waits for its data ((7), (8): the message still in flight; (9): the REQ still on its way).
  double send_wait(uint64_t k, double ts, double tr, bool synchronous) const;
  double recv_wait(uint64_t k, double ts, double tr, bool synchronous) const;
  // A local reduction of k bytes within a collective: mpiadvise's extension, priced by the optional
  // reduce_ns_per_byte of the parameter set ([mpi] in the files), free where the set has none.
  double reduction(uint64_t k) const { return k * p_.reduce_ns_per_byte.value_or(0.0); }
  // A flag one rank raises in shared memory and another waits on (MPICH's release/gather collectives):
  // seen L after it is raised, as a 0-byte message's data would arrive (mpiadvise's extension).
  double flag_seen(double raised_at) const { return raised_at + p_.L; }

 private:
  // the per-byte costs (overhead_send, gap, overhead_recv) with the largest scaled by the senders
  struct PerByte {
    double os, g, orv;
  };
  // k: the message's size (an eager one above raised_from takes the raised sweep's overheads, a long one
  // above large_from the [large] protocol's)
  PerByte per_byte(bool long_protocol, double gap, int senders, uint64_t k = 0) const;
  LogGPSParams p_;
};

// Data sent again unchanged (Message::cached, trace.hpp) is priced by the set's [resend] factor for the
// path the message takes; a split message's chunks are buffered ones. The replay (both modes) and the
// report's receive side ask it.
// The factor on what data just written costs of a `bytes`-byte message sent again, whose path's factor is
// f, where the caches hold at most `cached` bytes of it (LogGPSParams::resend_cached_bytes): the bytes
// beyond cost as data just written.
inline double resent_factor(double f, uint64_t bytes, std::optional<uint64_t> cached) {
  if (!cached || bytes <= *cached) return f;
  const double held = static_cast<double>(*cached);
  return (held * f + (static_cast<double>(bytes) - held)) / static_cast<double>(bytes);
}

// The models of messages sent again unchanged, by path, and by size beyond what the caches hold (made
// when first asked for and kept: one object for one replay, not shared between threads).
class ResentModels {
 public:
  explicit ResentModels(const LogGPSParams& p)
      : set_(p), buffered_(p.resent(p.resend_buffered.value_or(1), false)), rendezvous_(p.resent(p.resend_rendezvous.value_or(1), true)) {}
  // fresh: the set's own model, for a message not cached
  const LogGPS& of(const LogGPS& fresh, uint64_t bytes, bool cached, bool split = false) const {
    if (!cached) return fresh;
    const bool buffered = fresh.params().buffered(bytes) || split;
    if (set_.resend_cached_bytes && bytes > *set_.resend_cached_bytes) return beyond_cache(bytes, buffered);
    return buffered ? buffered_ : rendezvous_;
  }

 private:
  const LogGPS& beyond_cache(uint64_t bytes, bool buffered) const;
  LogGPSParams set_;
  LogGPS buffered_, rendezvous_;
  // by path and factor in steps of 1/kFactorSteps (at most that many models a path, whatever the sizes)
  static constexpr double kFactorSteps = 4096;
  mutable std::map<std::pair<int64_t, bool>, LogGPS> beyond_;
};

}  // namespace mpiadvise

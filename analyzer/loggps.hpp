// The LogGPS model (Ino, Fujimoto, Hagihara 2001): the communication time of a k-byte message (Table 3)
// and the times of the MPI routines (Table 4), named as in the paper. Every other module calls these;
// no formula of the model is written anywhere else. All times in ns, sizes in bytes.
#pragma once

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <stdexcept>
#include <optional>
#include <string>
#include <vector>

namespace mpiadvise {

// A parameter set (share/params/*.toml). Per-byte costs in ns per byte.
struct LogGPSParams {
  std::string name;        // e.g. "myrinet-mpich-score"
  std::string description; // where the numbers come from
  std::string library, transport;
  double L = 0;    // latency, sender to receiver
  double o = 0;    // o': overhead of sending or receiving a 0-byte message
  double Oss = 0, Ors = 0;  // per-byte send / receive overhead, k <= S
  double Osl = 0, Orl = 0;  // per-byte send / receive overhead, k > S
  double Gs = 0, Gl = 0;    // per-byte gap for the first s bytes / for the bytes after s
  uint64_t s = 0;  // largest message sent as one packet
  uint64_t S = 0;  // largest message sent without synchronisation (eager limit)
  // Beyond the model ([mpi] in the files): what a persistent request (MPI_Send_init/MPI_Recv_init and
  // MPI_Start) saves per call against the same MPI_Isend/MPI_Irecv; negative where it costs more.
  // Unknown (not measured) when empty.
  std::optional<double> persistent_saving;
  // What a local reduction (MPI_SUM of doubles) costs per byte, inside Reduce, Allreduce, Scan, ...;
  // unknown (taken as free) when empty.
  std::optional<double> reduce_ns_per_byte;
  static constexpr uint64_t kInfinite = std::numeric_limits<uint64_t>::max();

  // Throws ParamError naming what is wrong (negative values, s > S, ...).
  void validate(const std::string& where) const;
  // A new eager limit, as a what-if or the log's effective S sets it: s follows S where it was S (the
  // set has one eager segment, priced by Gs), and never exceeds it.
  void move_S(uint64_t new_S) {
    s = s == S ? new_S : std::min(s, new_S);
    S = new_S;
  }
  // Sets one parameter by its name (L, o, Oss, Ors, Osl, Orl, Gs, Gl, s, S); throws ParamError.
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
  double T3(uint64_t k, int senders = 1) const;   // o' + k Ors          receive overhead, k <= S
  double T3p(uint64_t k, int senders = 1) const;  // o' + k Orl          receive overhead, k > S
  double T4(double tr_minus_ts) const;            // max(o' + L, tr - ts) + o'   REQ seen by the receiver
  double T5() const;                              // o' + L + o'          ACK back to the sender
  double transfer(uint64_t k, int senders = 1) const;  // T2 or T2', whichever k calls for

  // Equations (1)-(3): communication time of a k-byte message sent at ts, received (called) at tr.
  double communication(uint64_t k, double ts, double tr, int senders = 1) const;
  // Table 4: time spent in each routine.
  double send(uint64_t k, double ts, double tr, int senders = 1) const;   // (4), (5)
  // MPI_Ssend: the rendezvous handshake whatever the size, (5) with T1' (mpiadvise's extension)
  double synchronous_send(uint64_t k, double ts, double tr, int senders = 1) const;
  double isend() const { return p_.o; }                                   // (6)
  double recv(uint64_t k, double ts, double tr, int senders = 1) const;   // (7), (8), (9)
  double irecv() const { return p_.o; }                                   // (10)
  // (11), with the erratum: the work done by tw is tw - ti. t_blocking: time of the blocking
  // counterpart had it been called at ti.
  double wait(double t_blocking, double tw_minus_ti) const;
  // Table 6, equations (12)-(14): round trip of a k-byte message with blocking calls when one side
  // computes w ns before receiving (the calibration benchmark's measurement).
  double round_trip(uint64_t k, double w) const;

  // One message whose send is posted at ts and whose receive is posted at tr: when each side's blocking
  // call (or the Wait of its non-blocking one) returns. A synchronous send, or one above S, waits for
  // the receive (its completion needs tr); an eager send does not (tr unused). The receive needs ts.
  // Used for every step of a collective (analyzer/collectives.hpp).
  bool send_waits_for_receive(uint64_t k, bool synchronous) const { return synchronous || !eager(k); }
  double send_completion(uint64_t k, double ts, double tr, int senders, bool synchronous) const;  // (4), (5)
  double recv_completion(uint64_t k, double ts, double tr, int senders, bool synchronous) const;  // (7)-(9)
  // The idle parts of those times, for wait classification: how long the send waits for its receive
  // to be posted (the handshake's T4 beyond o' + L, in (5); 0 for an eager send), and how long the
  // receive waits for its data ((7), (8): the message still in flight; (9): the REQ still on its way).
  double send_wait(uint64_t k, double ts, double tr, bool synchronous) const;
  double recv_wait(uint64_t k, double ts, double tr, bool synchronous) const;
  // A local reduction of k bytes within a collective: mpiadvise's extension, priced by the optional
  // reduce_ns_per_byte of the parameter set ([mpi] in the files), free where the set has none.
  double reduction(uint64_t k) const { return k * p_.reduce_ns_per_byte.value_or(0.0); }

 private:
  // the per-byte costs (overhead_send, gap, overhead_recv) with the largest scaled by the senders
  struct PerByte {
    double os, g, orv;
  };
  PerByte per_byte(bool long_protocol, double gap, int senders) const;
  LogGPSParams p_;
};

}  // namespace mpiadvise

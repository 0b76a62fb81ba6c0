#include "export.hpp"

#include <fmt/format.h>
#include <otf2/otf2.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>
#include <ostream>
#include <set>
#include <stdexcept>
#include <unordered_map>

#include <nlohmann/json.hpp>

namespace mpiadvise {
namespace {

using nlohmann::json;

// The run's first call: time 0 of both timelines.
uint64_t origin_of(const Trace& t) {
  uint64_t origin = std::numeric_limits<uint64_t>::max();
  for (const auto& r : t.ranks)
    if (!r.ops.empty()) origin = std::min(origin, r.ops.front().t_enter);
  return origin == std::numeric_limits<uint64_t>::max() ? 0 : origin;
}

// ns after origin of a measured time (which may precede it on another thread's clock: signed)
double since(uint64_t t, uint64_t origin) {
  return static_cast<double>(static_cast<int64_t>(t - origin));
}

// Where each rank's call sites are in the source, looked up once each.
class SiteNames {
 public:
  explicit SiteNames(const Analysis& a) : a_(a) {}
  const std::string& of(int rank, uint32_t callsite) {
    auto [it, fresh] = cache_.try_emplace({rank, callsite});
    if (fresh) it->second = a_.where(rank, callsite);
    return it->second;
  }

 private:
  const Analysis& a_;
  std::map<std::pair<int, uint32_t>, std::string> cache_;
};

// Each matched message whose receive completed is drawn, from its send op to the op that completed its
// receive (the trace's Done links, made into a table here: done_ops).
class Drawn {
 public:
  explicit Drawn(const Trace& t) : t_(t), recv_done_(done_ops(t, Link::DoneRecv)) {}
  bool operator()(size_t id) const { return t_.messages[id].matched() && recv_done_[id] != kNone; }
  uint32_t recv_done(size_t id) const { return recv_done_[id]; }

 private:
  const Trace& t_;
  std::vector<uint32_t> recv_done_;
};

// ---- Chrome trace events ----------------------------------------------------------------------------------

// Writes the "traceEvents" array one object at a time: a run's millions of calls are never one JSON value.
class EventStream {
 public:
  explicit EventStream(std::ostream& out) : out_(out) {}
  void put(const json& e) {
    out_ << (first_ ? "\n" : ",\n") << e.dump(-1, ' ', false, json::error_handler_t::replace);
    first_ = false;
  }

 private:
  std::ostream& out_;
  bool first_ = true;
};

json call_args(const Event& ev, const std::string& site) {
  json args = {{"site", site}};
  if (ev.has(MPA_F_PEER)) args["peer"] = ev.peer;
  if (ev.has(MPA_F_TAG)) args["tag"] = ev.tag;
  if (ev.has(MPA_F_BYTES)) args["bytes"] = ev.bytes;
  if (ev.has(MPA_F_PEER2)) args["recv_peer"] = ev.peer2;
  if (ev.has(MPA_F_TAG2)) args["recv_tag"] = ev.tag2;
  if (ev.has(MPA_F_BYTES2)) args["recv_bytes"] = ev.bytes2;
  if (ev.has(MPA_F_COMM)) args["comm"] = ev.comm;
  if (!ev.requests.empty()) args["requests"] = ev.requests;
  if (ev.has(MPA_F_COUNT)) args["calls"] = ev.count, args["in_calls_us"] = static_cast<double>(ev.incall_ns) / 1e3;
  if (ev.unfinished) args["unfinished"] = true;
  return args;
}

// A time inside the slice [enter, exit] (ns), one ns from the end asked for: a flow event binds to the
// slice that encloses it, and one at a slice's very edge may be taken for the neighbour's.
double inside(double enter, double exit, bool at_end) {
  if (!(exit - enter >= 2)) return enter;
  return at_end ? exit - 1 : enter + 1;
}

// ns as the format's microseconds, to the ns (a predicted time's fractions of a ns would only lengthen the file)
double us(double ns) { return std::round(ns) / 1e3; }

json slice(const char* cat, std::string name, double enter_ns, double exit_ns, int pid, int tid) {
  return {{"name", std::move(name)}, {"cat", cat}, {"ph", "X"}, {"ts", us(enter_ns)},
          {"dur", std::max(0.0, us(exit_ns) - us(enter_ns))}, {"pid", pid}, {"tid", tid}};
}

void flow(EventStream& s, uint64_t id, const char* cat, double send_ns, int send_pid, int send_tid, double recv_ns,
          int recv_pid, int recv_tid, uint64_t bytes) {
  s.put({{"name", "message"}, {"cat", cat}, {"ph", "s"}, {"id", id}, {"ts", us(send_ns)}, {"pid", send_pid},
         {"tid", send_tid}, {"args", {{"bytes", bytes}}}});
  s.put({{"name", "message"}, {"cat", cat}, {"ph", "f"}, {"bp", "e"}, {"id", id}, {"ts", us(recv_ns)},
         {"pid", recv_pid}, {"tid", recv_tid}});
}

// ---- OTF2 ---------------------------------------------------------------------------------------------------

OTF2_FlushType pre_flush(void*, OTF2_FileType, OTF2_LocationRef, void*, bool) { return OTF2_FLUSH; }
const OTF2_FlushCallbacks kFlush = {pre_flush, nullptr};

void check(OTF2_ErrorCode rc, const char* what) {
  if (rc != OTF2_SUCCESS)
    throw std::runtime_error(fmt::format("OTF2 refused {}: {} ({})", what, OTF2_Error_GetName(rc),
                                         OTF2_Error_GetDescription(rc)));
}

OTF2_CollectiveOp collective_op(uint32_t call) {
  switch (call) {
    case MPA_CALL_Barrier: case MPA_CALL_Ibarrier: return OTF2_COLLECTIVE_OP_BARRIER;
    case MPA_CALL_Bcast: case MPA_CALL_Ibcast: return OTF2_COLLECTIVE_OP_BCAST;
    case MPA_CALL_Gather: case MPA_CALL_Igather: return OTF2_COLLECTIVE_OP_GATHER;
    case MPA_CALL_Gatherv: case MPA_CALL_Igatherv: return OTF2_COLLECTIVE_OP_GATHERV;
    case MPA_CALL_Scatter: case MPA_CALL_Iscatter: return OTF2_COLLECTIVE_OP_SCATTER;
    case MPA_CALL_Scatterv: case MPA_CALL_Iscatterv: return OTF2_COLLECTIVE_OP_SCATTERV;
    case MPA_CALL_Allgather: case MPA_CALL_Iallgather: return OTF2_COLLECTIVE_OP_ALLGATHER;
    case MPA_CALL_Allgatherv: case MPA_CALL_Iallgatherv: return OTF2_COLLECTIVE_OP_ALLGATHERV;
    case MPA_CALL_Alltoall: case MPA_CALL_Ialltoall: return OTF2_COLLECTIVE_OP_ALLTOALL;
    case MPA_CALL_Alltoallv: case MPA_CALL_Ialltoallv: return OTF2_COLLECTIVE_OP_ALLTOALLV;
    case MPA_CALL_Alltoallw: case MPA_CALL_Ialltoallw: return OTF2_COLLECTIVE_OP_ALLTOALLW;
    case MPA_CALL_Allreduce: case MPA_CALL_Iallreduce: return OTF2_COLLECTIVE_OP_ALLREDUCE;
    case MPA_CALL_Reduce: case MPA_CALL_Ireduce: return OTF2_COLLECTIVE_OP_REDUCE;
    case MPA_CALL_Reduce_scatter: case MPA_CALL_Ireduce_scatter: return OTF2_COLLECTIVE_OP_REDUCE_SCATTER;
    case MPA_CALL_Reduce_scatter_block: case MPA_CALL_Ireduce_scatter_block:
      return OTF2_COLLECTIVE_OP_REDUCE_SCATTER_BLOCK;
    case MPA_CALL_Scan: case MPA_CALL_Iscan: return OTF2_COLLECTIVE_OP_SCAN;
    default: return OTF2_COLLECTIVE_OP_EXSCAN;
  }
}

OTF2_RegionRole region_role(int call) {
  switch (call) {
    case MPA_CALL_Barrier: case MPA_CALL_Ibarrier: return OTF2_REGION_ROLE_BARRIER;
    case MPA_CALL_Bcast: case MPA_CALL_Ibcast: case MPA_CALL_Scatter: case MPA_CALL_Iscatter:
    case MPA_CALL_Scatterv: case MPA_CALL_Iscatterv:
      return OTF2_REGION_ROLE_COLL_ONE2ALL;
    case MPA_CALL_Gather: case MPA_CALL_Igather: case MPA_CALL_Gatherv: case MPA_CALL_Igatherv:
    case MPA_CALL_Reduce: case MPA_CALL_Ireduce:
      return OTF2_REGION_ROLE_COLL_ALL2ONE;
    default:
      if (is_collective_call(call)) return OTF2_REGION_ROLE_COLL_ALL2ALL;
      switch (op_kind(call, 1)) {
        case OpKind::Send: case OpKind::SyncSend: case OpKind::Recv: case OpKind::SendRecv: case OpKind::PostSend:
        case OpKind::PostRecv: case OpKind::Completion: case OpKind::Probe:
          return OTF2_REGION_ROLE_POINT2POINT;
        default:
          return OTF2_REGION_ROLE_FUNCTION;
      }
  }
}

constexpr uint64_t kCollectiveRequest = uint64_t{1} << 63;  // request ids: messages below, collectives above

class Otf2Writer {
 public:
  Otf2Writer(const Analysis& a, const std::filesystem::path& dir) : a_(a), t_(a.trace), drawn_(a.trace) {
    archive_ = OTF2_Archive_Open(dir.c_str(), "traces", OTF2_FILEMODE_WRITE, 1 << 20, 4 << 20, OTF2_SUBSTRATE_POSIX,
                                 OTF2_COMPRESSION_NONE);
    if (!archive_) throw std::runtime_error("OTF2 could not create an archive in " + dir.string());
    check(OTF2_Archive_SetFlushCallbacks(archive_, &kFlush, nullptr), "its flush callbacks");
    check(OTF2_Archive_SetSerialCollectiveCallbacks(archive_), "its serial collective callbacks");
    check(OTF2_Archive_SetCreator(archive_, "mpiadvise export"), "the archive's creator");
    check(OTF2_Archive_SetDescription(archive_, ("MPI calls traced by mpiadvise, from " + a.dir).c_str()),
          "the archive's description");
    check(OTF2_Archive_OpenEvtFiles(archive_), "opening its event files");
    local_.resize(t_.comms.size());
    remote_.resize(t_.comms.size());
    for (size_t c = 0; c < t_.comms.size(); c++) {
      for (size_t i = 0; i < t_.comms[c].members.size(); i++) local_[c].emplace(t_.comms[c].members[i], i);
      for (size_t i = 0; i < t_.comms[c].remote.size(); i++) remote_[c].emplace(t_.comms[c].remote[i], i);
    }
  }
  ~Otf2Writer() {
    if (archive_) OTF2_Archive_Close(archive_);
  }
  Otf2Writer(const Otf2Writer&) = delete;
  Otf2Writer& operator=(const Otf2Writer&) = delete;

  ExportCounts write(const ReplayResult* predicted) {
    ExportCounts n;
    const int world = t_.world_size;
    origin_ = origin_of(t_);
    for (const auto& log : a_.job->ranks()) {
      const int r = log->rank();
      if (r < 0 || r >= world) continue;
      uint32_t i = 0;
      log->for_each_event_until(t_.cut_ns, [&](const Event& ev) {  // the trace's calls: --until's part
        if (ev.t_enter_ns < t_.from_ns) return true;                 // and --from's
        const uint32_t op = i++;
        n.calls++;
        const uint64_t loc = location(r, ev.thread, false);
        const uint32_t region = region_of(ev.call, ev.call_name);
        if (op >= t_.ranks[r].ops.size()) {
          enter_leave(loc, region, ev.t_enter_ns, ev.t_exit_ns);
          return true;
        }
        n.collectives += op_records(loc, r, op, region, ev.t_enter_ns, ev.t_exit_ns, 0);
        return true;
      });
    }
    if (predicted) {
      const uint32_t comm_offset = static_cast<uint32_t>(t_.comms.size());
      for (int r = 0; r < world && static_cast<size_t>(r) < predicted->spans.size(); r++) {
        const auto& ops = t_.ranks[r].ops;
        const uint64_t loc = location(r, 0, true);
        for (uint32_t op = 0; op < ops.size() && op < predicted->spans[r].size(); op++) {
          const auto& s = predicted->spans[r][op];
          if (std::isnan(s.enter)) continue;
          const uint64_t enter = predicted->origin_ns + static_cast<uint64_t>(std::llround(std::max(0.0, s.enter)));
          const uint64_t exit = predicted->origin_ns + static_cast<uint64_t>(std::llround(std::max(s.enter, s.exit)));
          op_records(loc, r, op, region_of(static_cast<int>(ops[op].call), call_name(static_cast<int>(ops[op].call))),
                     enter, exit, comm_offset);
          n.predicted_calls++;
        }
      }
    }
    for (size_t id = 0; id < t_.messages.size(); id++) n.messages += drawn_(id);
    finish(predicted != nullptr);
    return n;
  }

 private:
  struct Location {
    OTF2_EvtWriter* writer = nullptr;
    int rank = 0, thread = 0;
    bool predicted = false;
  };

  uint64_t location(int rank, int thread, bool predicted) {
    const uint64_t id = (static_cast<uint64_t>(rank + (predicted ? t_.world_size : 0)) << 16) | static_cast<uint16_t>(thread);
    auto [it, fresh] = locations_.try_emplace(id);
    if (fresh) {
      it->second.writer = OTF2_Archive_GetEvtWriter(archive_, id);
      if (!it->second.writer) throw std::runtime_error(fmt::format("OTF2 gave no event writer for rank {}", rank));
      it->second.rank = rank, it->second.thread = thread, it->second.predicted = predicted;
    }
    return id;
  }

  uint32_t string(const std::string& s) {
    auto [it, fresh] = strings_.try_emplace(s, static_cast<uint32_t>(strings_.size()));
    return it->second;
  }

  uint32_t region_of(int call, std::string_view name) {
    auto [it, fresh] = regions_.try_emplace(std::string(name), static_cast<uint32_t>(regions_.size()));
    if (fresh) region_calls_.push_back(call);
    return it->second;
  }

  void enter_leave(uint64_t loc, uint32_t region, uint64_t enter, uint64_t exit) {
    OTF2_EvtWriter* w = locations_[loc].writer;
    check(OTF2_EvtWriter_Enter(w, nullptr, enter, region), "an Enter record");
    check(OTF2_EvtWriter_Leave(w, nullptr, std::max(enter, exit), region), "a Leave record");
  }

  // The rank in comm, as MPI calls of rank `self` name it, of world rank `peer`: its rank in the
  // communicator, or on an intercommunicator in the group opposite self's; nullopt when it is in neither.
  std::optional<uint32_t> peer_rank(uint32_t comm, int self, int peer) const {
    if (comm >= local_.size()) return std::nullopt;
    const bool across = !t_.comms[comm].remote.empty() && local_[comm].count(self);
    const auto& group = across ? remote_[comm] : local_[comm];
    auto it = group.find(peer);
    if (it == group.end()) return std::nullopt;
    return static_cast<uint32_t>(it->second);
  }

  // Enter, the op's MPI records, Leave; returns 1 when it wrote a collective's records.
  int op_records(uint64_t loc, int r, uint32_t op_index, uint32_t region, uint64_t enter, uint64_t exit,
                 uint32_t comm_offset) {
    const Op& op = t_.ranks[r].ops[op_index];
    OTF2_EvtWriter* w = locations_[loc].writer;
    exit = std::max(enter, exit);
    check(OTF2_EvtWriter_Enter(w, nullptr, enter, region), "an Enter record");
    const bool blocking_send = op.kind == OpKind::Send || op.kind == OpKind::SyncSend || op.kind == OpKind::SendRecv;
    int collective = 0;
    const OpLinks links = t_.links_of(op);
    for (uint32_t k = 0; k < links.size(); k++) {  // what the call posts, at its entry
      const Link l = links[k];
      if (l.id == kNone) continue;
      if (l.kind == Link::PostSend || l.kind == Link::PostRecv) {
        if (!drawn_(l.id)) continue;
        const Message& m = t_.messages[l.id];
        if (l.kind == Link::PostSend) {
          auto to = peer_rank(m.comm, r, m.dst);
          if (!to) continue;
          if (blocking_send)
            check(OTF2_EvtWriter_MpiSend(w, nullptr, enter, *to, m.comm + comm_offset, static_cast<uint32_t>(m.tag), m.bytes),
                  "an MpiSend record");
          else
            check(OTF2_EvtWriter_MpiIsend(w, nullptr, enter, *to, m.comm + comm_offset, static_cast<uint32_t>(m.tag),
                                          m.bytes, l.id),
                  "an MpiIsend record");
        } else if (op.kind == OpKind::PostRecv) {
          check(OTF2_EvtWriter_MpiIrecvRequest(w, nullptr, enter, l.id), "an MpiIrecvRequest record");
        }
      } else if (l.kind == Link::PostColl) {
        if (op.kind == OpKind::Collective) check(OTF2_EvtWriter_MpiCollectiveBegin(w, nullptr, enter), "an MpiCollectiveBegin record");
        else if (op.kind == OpKind::PostCollective)
          check(OTF2_EvtWriter_NonBlockingCollectiveRequest(w, nullptr, enter, kCollectiveRequest | l.id),
                "a NonBlockingCollectiveRequest record");
      }
    }
    for (uint32_t k = 0; k < links.size(); k++) {  // what it completes, at its exit
      const Link l = links[k];
      if (l.id == kNone) continue;
      if (l.kind == Link::DoneSend || l.kind == Link::DoneRecv) {
        if (!drawn_(l.id)) continue;
        const Message& m = t_.messages[l.id];
        if (l.kind == Link::DoneSend) {
          if (op.kind == OpKind::Completion) check(OTF2_EvtWriter_MpiIsendComplete(w, nullptr, exit, l.id), "an MpiIsendComplete record");
          continue;
        }
        auto from = peer_rank(m.comm, r, m.src);
        if (!from) continue;
        if (op.kind == OpKind::Completion)
          check(OTF2_EvtWriter_MpiIrecv(w, nullptr, exit, *from, m.comm + comm_offset, static_cast<uint32_t>(m.tag),
                                        m.bytes, l.id),
                "an MpiIrecv record");
        else
          check(OTF2_EvtWriter_MpiRecv(w, nullptr, exit, *from, m.comm + comm_offset, static_cast<uint32_t>(m.tag), m.bytes),
                "an MpiRecv record");
      } else if ((l.kind == Link::PostColl && op.kind == OpKind::Collective) || l.kind == Link::DoneColl) {
        const CollectiveInstance c = t_.collectives[l.id];
        if (c.comm == kNone || c.comm >= t_.comms.size()) continue;
        uint64_t sent = 0, received = 0;
        for (size_t p = 0; p < c.members.size(); p++)
          if (c.members[p].first == r) sent = c.sent[p].value_or(0), received = c.received[p].value_or(0);
        const uint32_t root = c.root >= 0 ? peer_rank(c.comm, r, c.root).value_or(OTF2_UNDEFINED_UINT32) : OTF2_UNDEFINED_UINT32;
        if (l.kind == Link::PostColl)
          check(OTF2_EvtWriter_MpiCollectiveEnd(w, nullptr, exit, collective_op(c.call), c.comm + comm_offset, root, sent,
                                                received),
                "an MpiCollectiveEnd record");
        else
          check(OTF2_EvtWriter_NonBlockingCollectiveComplete(w, nullptr, exit, collective_op(c.call), c.comm + comm_offset,
                                                             root, sent, received, kCollectiveRequest | l.id),
                "a NonBlockingCollectiveComplete record");
        collective = 1;
      }
    }
    check(OTF2_EvtWriter_Leave(w, nullptr, exit, region), "a Leave record");
    last_ = std::max(last_, exit);
    return collective;
  }

  void finish(bool predicted) {
    std::map<uint64_t, uint64_t> events;  // location -> its number of events
    for (auto& [id, l] : locations_) {
      uint64_t n = 0;
      check(OTF2_EvtWriter_GetNumberOfEvents(l.writer, &n), "counting a location's events");
      events[id] = n;
      check(OTF2_Archive_CloseEvtWriter(archive_, l.writer), "closing an event writer");
    }
    check(OTF2_Archive_CloseEvtFiles(archive_), "closing its event files");
    check(OTF2_Archive_OpenDefFiles(archive_), "opening its definition files");
    for (const auto& [id, l] : locations_) {
      OTF2_DefWriter* d = OTF2_Archive_GetDefWriter(archive_, id);
      if (!d) throw std::runtime_error("OTF2 gave no definition writer");
      check(OTF2_Archive_CloseDefWriter(archive_, d), "closing a definition writer");
    }
    check(OTF2_Archive_CloseDefFiles(archive_), "closing its definition files");

    OTF2_GlobalDefWriter* g = OTF2_Archive_GetGlobalDefWriter(archive_);
    if (!g) throw std::runtime_error("OTF2 gave no global definition writer");
    const int world = t_.world_size;
    // every string first: the records below refer to them by number
    std::map<std::string, uint32_t> hosts;
    for (const auto& r : t_.ranks) hosts.try_emplace(r.hostname.empty() ? "unknown host" : r.hostname, 0);
    uint32_t node = 1;
    for (auto& [name, id] : hosts) id = node++, string(name);
    string("machine"), string("node"), string("MPI_COMM_WORLD"), string("");
    for (int r = 0; r < world; r++) string(fmt::format("rank {}", r)), string(fmt::format("rank {} predicted", r));
    for (const auto& [id, l] : locations_)
      string(l.predicted ? fmt::format("rank {} predicted", l.rank) : fmt::format("rank {} thread {}", l.rank, l.thread));
    for (size_t c = 0; c < t_.comms.size(); c++) string(fmt::format("communicator {}", c));
    for (const auto& [name, id] : regions_) string(name);
    std::vector<std::pair<uint32_t, std::string>> by_id;
    for (const auto& [s, id] : strings_) by_id.emplace_back(id, s);
    std::sort(by_id.begin(), by_id.end());
    for (const auto& [id, s] : by_id) check(OTF2_GlobalDefWriter_WriteString(g, id, s.c_str()), "a String definition");

    check(OTF2_GlobalDefWriter_WriteClockProperties(g, 1000000000, origin_, last_ > origin_ ? last_ - origin_ : 0,
                                                    OTF2_UNDEFINED_TIMESTAMP),
          "the ClockProperties definition");
    check(OTF2_GlobalDefWriter_WriteParadigm(g, OTF2_PARADIGM_MPI, string("MPI"), OTF2_PARADIGM_CLASS_PROCESS),
          "the Paradigm definition");
    std::vector<std::pair<uint32_t, std::string>> regions;  // in the order of their ids, as OTF2 wants
    for (const auto& [name, id] : regions_) regions.emplace_back(id, name);
    std::sort(regions.begin(), regions.end());
    for (const auto& [id, name] : regions)
      check(OTF2_GlobalDefWriter_WriteRegion(g, id, string(name), string(name), string(""), region_role(region_calls_[id]),
                                             OTF2_PARADIGM_MPI, OTF2_REGION_FLAG_NONE, string(""), 0, 0),
            "a Region definition");
    check(OTF2_GlobalDefWriter_WriteSystemTreeNode(g, 0, string("machine"), string("machine"), OTF2_UNDEFINED_SYSTEM_TREE_NODE),
          "a SystemTreeNode definition");
    for (const auto& [name, id] : hosts)
      check(OTF2_GlobalDefWriter_WriteSystemTreeNode(g, id, string(name), string("node"), 0), "a SystemTreeNode definition");
    const int groups = predicted ? 2 : 1;
    for (int set = 0; set < groups; set++)
      for (int r = 0; r < world; r++) {
        const std::string& h = t_.ranks[r].hostname;
        check(OTF2_GlobalDefWriter_WriteLocationGroup(
                  g, static_cast<uint32_t>(r + set * world),
                  string(set ? fmt::format("rank {} predicted", r) : fmt::format("rank {}", r)),
                  OTF2_LOCATION_GROUP_TYPE_PROCESS, hosts[h.empty() ? "unknown host" : h], OTF2_UNDEFINED_LOCATION_GROUP),
              "a LocationGroup definition");
      }
    for (const auto& [id, l] : locations_)
      check(OTF2_GlobalDefWriter_WriteLocation(
                g, id,
                string(l.predicted ? fmt::format("rank {} predicted", l.rank) : fmt::format("rank {} thread {}", l.rank, l.thread)),
                OTF2_LOCATION_TYPE_CPU_THREAD, events[id], static_cast<uint32_t>(l.rank + (l.predicted ? world : 0))),
            "a Location definition");
    // MPI's communicators: group 0 lists each rank's location (its first thread's), those of the
    // predicted timeline after; a communicator's group lists its members as positions in group 0
    std::vector<uint64_t> comm_locations;
    for (int set = 0; set < groups; set++)
      for (int r = 0; r < world; r++) comm_locations.push_back(static_cast<uint64_t>(r + set * world) << 16);
    check(OTF2_GlobalDefWriter_WriteGroup(g, 0, string(""), OTF2_GROUP_TYPE_COMM_LOCATIONS, OTF2_PARADIGM_MPI,
                                          OTF2_GROUP_FLAG_NONE, static_cast<uint32_t>(comm_locations.size()),
                                          comm_locations.data()),
          "the MPI locations group");
    const uint32_t n = static_cast<uint32_t>(t_.comms.size());
    uint32_t next_group = 1;
    auto group = [&](const std::vector<int32_t>& ranks, int set) {
      std::vector<uint64_t> members;
      for (int32_t m : ranks) members.push_back(static_cast<uint64_t>(m + set * world));
      check(OTF2_GlobalDefWriter_WriteGroup(g, next_group, string(""), OTF2_GROUP_TYPE_COMM_GROUP, OTF2_PARADIGM_MPI,
                                            OTF2_GROUP_FLAG_NONE, static_cast<uint32_t>(members.size()), members.data()),
            "a communicator's group");
      return next_group++;
    };
    for (int set = 0; set < groups; set++)
      for (uint32_t c = 0; c < n; c++) {
        const TraceComm& tc = t_.comms[c];
        const uint32_t id = c + set * n;
        const uint32_t name = string(c == 0 && static_cast<int>(tc.members.size()) == world && tc.remote.empty()
                                         ? "MPI_COMM_WORLD"
                                         : fmt::format("communicator {}", c));
        if (tc.remote.empty()) {
          check(OTF2_GlobalDefWriter_WriteComm(g, id, name, group(tc.members, set), OTF2_UNDEFINED_COMM, OTF2_COMM_FLAG_NONE),
                "a Comm definition");
        } else {
          const uint32_t a = group(tc.members, set), b = group(tc.remote, set);
          check(OTF2_GlobalDefWriter_WriteInterComm(g, id, name, a, b, OTF2_UNDEFINED_COMM, OTF2_COMM_FLAG_NONE),
                "an InterComm definition");
        }
      }
    check(OTF2_Archive_CloseGlobalDefWriter(archive_, g), "closing the global definitions");
    OTF2_ErrorCode rc = OTF2_Archive_Close(archive_);
    archive_ = nullptr;
    check(rc, "closing the archive");
  }

  const Analysis& a_;
  const Trace& t_;
  const Drawn drawn_;
  OTF2_Archive* archive_ = nullptr;
  std::map<uint64_t, Location> locations_;
  std::unordered_map<std::string, uint32_t> strings_;
  std::map<std::string, uint32_t> regions_;
  std::vector<int> region_calls_;
  // per communicator: world rank -> its rank there; an intercommunicator's other group in remote_
  std::vector<std::unordered_map<int32_t, size_t>> local_, remote_;
  uint64_t origin_ = 0, last_ = 0;
};

}  // namespace

ExportCounts write_trace_events(const Analysis& a, const ReplayResult* predicted, std::ostream& out) {
  const Trace& t = a.trace;
  const int world = t.world_size;
  const uint64_t origin = origin_of(t);
  ExportCounts n;
  SiteNames names(a);
  out << "{\"displayTimeUnit\":\"ns\",\"otherData\":"
      << json({{"producer", "mpiadvise export"},
               {"logs", a.dir},
               {"ranks", world},
               {"mpi", a.facts.library},
               {"origin_ns", origin},
               {"parameters", a.chosen.why},
               {"predicted", predicted != nullptr}})
             .dump(-1, ' ', false, json::error_handler_t::replace)
      << ",\"traceEvents\":[";
  EventStream s(out);
  // a rank's measured and predicted processes one above the other
  for (int r = 0; r < world; r++) {
    const std::string& host = t.ranks[r].hostname;
    s.put({{"name", "process_name"}, {"ph", "M"}, {"pid", r},
           {"args", {{"name", host.empty() ? fmt::format("rank {}", r) : fmt::format("rank {} ({})", r, host)}}}});
    s.put({{"name", "process_sort_index"}, {"ph", "M"}, {"pid", r}, {"args", {{"sort_index", 2 * r}}}});
    if (!predicted) continue;
    s.put({{"name", "process_name"}, {"ph", "M"}, {"pid", world + r},
           {"args", {{"name", fmt::format("rank {} predicted (LogGPS)", r)}}}});
    s.put({{"name", "process_sort_index"}, {"ph", "M"}, {"pid", world + r}, {"args", {{"sort_index", 2 * r + 1}}}});
    s.put({{"name", "thread_name"}, {"ph", "M"}, {"pid", world + r}, {"tid", 0}, {"args", {{"name", "predicted"}}}});
  }
  // the measured timeline, from the logs' events (one op per event, in the same order)
  std::vector<std::vector<uint16_t>> thread_of(world);
  for (const auto& log : a.job->ranks()) {
    const int r = log->rank();
    if (r < 0 || r >= world) continue;
    std::set<uint16_t> threads;
    log->for_each_event_until(t.cut_ns, [&](const Event& ev) {  // the trace's calls: --until's part
      if (ev.t_enter_ns < t.from_ns) return true;                 // and --from's
      if (threads.insert(ev.thread).second)
        s.put({{"name", "thread_name"}, {"ph", "M"}, {"pid", r}, {"tid", ev.thread},
               {"args", {{"name", ev.thread == 0 ? std::string("main thread") : fmt::format("thread {}", ev.thread)}}}});
      json e = slice("mpi", std::string(ev.call_name), since(ev.t_enter_ns, origin), since(ev.t_exit_ns, origin), r,
                     ev.thread);
      e["args"] = call_args(ev, names.of(r, ev.callsite));
      s.put(e);
      thread_of[r].push_back(ev.thread);
      n.calls++;
      return true;
    });
  }
  auto thread = [&](int r, uint32_t op) { return op < thread_of[r].size() ? thread_of[r][op] : 0; };
  const Drawn drawn(t);
  for (size_t id = 0; id < t.messages.size(); id++) {
    if (!drawn(id)) continue;
    const Message& m = t.messages[id];
    const Op& send = t.op(m.src, m.send_op);
    const Op& recv = t.op(m.dst, drawn.recv_done(id));
    flow(s, id, "message", inside(since(send.t_enter, origin), since(send.t_exit(), origin), false), m.src,
         thread(m.src, m.send_op), inside(since(recv.t_enter, origin), since(recv.t_exit(), origin), true), m.dst,
         thread(m.dst, drawn.recv_done(id)), m.bytes);
    n.messages++;
  }
  if (!predicted) {
    out << "\n]}\n";
    return n;
  }
  // the predicted timeline: the replay's times, on the same time axis
  const double shift = since(predicted->origin_ns, origin);
  auto spans = [&](int r, uint32_t op) -> const ReplayResult::Span* {
    if (static_cast<size_t>(r) >= predicted->spans.size() || op >= predicted->spans[r].size()) return nullptr;
    const auto& sp = predicted->spans[r][op];
    return std::isnan(sp.enter) ? nullptr : &sp;
  };
  for (int r = 0; r < world; r++) {
    const auto& ops = t.ranks[r].ops;
    for (uint32_t i = 0; i < ops.size(); i++) {
      const auto* sp = spans(r, i);
      if (!sp) continue;
      json e = slice("predicted", call_name(static_cast<int>(ops[i].call)), shift + sp->enter, shift + sp->exit,
                     world + r, 0);
      e["args"] = {{"site", names.of(r, ops[i].callsite)},
                   {"measured_us", static_cast<double>(ops[i].t_exit() - ops[i].t_enter) / 1e3}};
      s.put(e);
      n.predicted_calls++;
    }
  }
  for (size_t id = 0; id < t.messages.size(); id++) {
    if (!drawn(id)) continue;
    const Message& m = t.messages[id];
    const auto* send = spans(m.src, m.send_op);
    const auto* recv = spans(m.dst, drawn.recv_done(id));
    if (!send || !recv) continue;
    flow(s, t.messages.size() + id, "predicted message", shift + inside(send->enter, send->exit, false), world + m.src, 0,
         shift + inside(recv->enter, recv->exit, true), world + m.dst, 0, m.bytes);
  }
  out << "\n]}\n";
  return n;
}

ExportCounts write_otf2(const Analysis& a, const ReplayResult* predicted, const std::filesystem::path& dir) {
  Otf2Writer w(a, dir);
  return w.write(predicted);
}

}  // namespace mpiadvise

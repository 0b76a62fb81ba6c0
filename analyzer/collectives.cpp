#include "collectives.hpp"

#include <algorithm>
#include <map>
#include <numeric>
#include <stdexcept>

#include <fmt/format.h>

#include "call_ids.h"
#include "collectives_build.hpp"

namespace mpiadvise {

MpiLibrary mpi_library(const std::string& name) {
  if (name == "Open MPI") return MpiLibrary::OpenMPI;
  if (name == "MPICH") return MpiLibrary::MPICH;
  return MpiLibrary::Other;
}

const char* library_name(MpiLibrary library) {
  switch (library) {
    case MpiLibrary::OpenMPI: return "Open MPI";
    case MpiLibrary::MPICH: return "MPICH";
    case MpiLibrary::Other: break;
  }
  return "another MPI library";
}

uint64_t likely_element_bytes(uint64_t bytes) {
  for (uint64_t e : {8, 4, 2})
    if (bytes >= e && bytes % e == 0) return e;
  return 1;
}

std::string describe_steps(const std::vector<CollStep>& steps) {
  std::string out;
  uint16_t round = 0;
  for (const auto& s : steps) {
    if (!out.empty()) out += s.round != round ? " | " : "; ";
    round = s.round;
    switch (s.kind) {
      case CollStep::Send: out += fmt::format("{} {} {}", s.synchronous ? "ssend" : "send", s.peer, s.bytes); break;
      case CollStep::Recv: out += fmt::format("recv {} {}", s.peer, s.bytes); break;
      case CollStep::Isend: out += fmt::format("{} {} {}", s.synchronous ? "issend" : "isend", s.peer, s.bytes); break;
      case CollStep::Irecv: out += fmt::format("irecv {} {}", s.peer, s.bytes); break;
      case CollStep::Wait: out += fmt::format("wait {}+{}", s.first_request, s.requests); break;
      case CollStep::Reduce: out += fmt::format("reduce {}", s.bytes); break;
      case CollStep::FlagSet: out += s.stream == kReleaseFlag ? "release" : "gathered"; break;
      case CollStep::FlagWait:
        out += fmt::format("{} {}{}", s.stream == kReleaseFlag ? "await-release" : "await-gathered", s.peer,
                           s.lag ? fmt::format(" -{}", s.lag) : "");
        break;
    }
  }
  return out;
}

namespace {

// Pairs the k-th send from a to b with the k-th receive at b from a (the messages of one collective
// share a tag, and MPI does not let them overtake), gives each receive its send's size, and checks that
// every Wait names requests already posted. A schedule that fails is a defect of its algorithm's mirror.
void match(std::vector<std::vector<CollStep>>& ranks, const std::string& algorithm) {
  std::map<std::pair<int, int>, std::vector<const CollStep*>> sends;
  std::map<std::pair<int, int>, std::vector<CollStep*>> recvs;
  for (size_t pos = 0; pos < ranks.size(); pos++) {
    uint32_t posted = 0;
    for (auto& s : ranks[pos]) {
      const int me = static_cast<int>(pos);
      switch (s.kind) {
        case CollStep::Isend:
          posted++;
          [[fallthrough]];
        case CollStep::Send:
          sends[{me, s.peer}].push_back(&s);
          break;
        case CollStep::Irecv:
          posted++;
          [[fallthrough]];
        case CollStep::Recv:
          recvs[{s.peer, me}].push_back(&s);
          break;
        case CollStep::Wait:
          if (s.first_request + s.requests > posted)
            throw std::logic_error(fmt::format("{}: rank {} waits for requests {}..{} of {} posted", algorithm, pos,
                                               s.first_request, s.first_request + s.requests, posted));
          break;
        case CollStep::Reduce:
        case CollStep::FlagSet:
        case CollStep::FlagWait:
          break;
      }
      if ((s.kind == CollStep::Send || s.kind == CollStep::Isend || s.kind == CollStep::Recv ||
           s.kind == CollStep::Irecv || s.kind == CollStep::FlagWait) &&
          (s.peer < 0 || s.peer >= static_cast<int>(ranks.size()) || s.peer == me))
        throw std::logic_error(fmt::format("{}: rank {} exchanges with {}", algorithm, pos, s.peer));
    }
  }
  for (auto& [pair, rs] : recvs) {
    auto it = sends.find(pair);
    size_t n = it == sends.end() ? 0 : it->second.size();
    if (n != rs.size())
      throw std::logic_error(fmt::format("{}: {} sends from {} to {} but {} receives", algorithm, n, pair.first,
                                         pair.second, rs.size()));
    for (size_t k = 0; k < n; k++) rs[k]->bytes = it->second[k]->bytes;
  }
  for (const auto& [pair, ss] : sends)
    if (!recvs.count(pair))
      throw std::logic_error(fmt::format("{}: {} sends from {} to {} but no receive", algorithm, ss.size(),
                                         pair.first, pair.second));
}

}  // namespace

int CommLayout::position_by_bisection(int rank) const {
  const auto it = std::lower_bound(by_rank.begin(), by_rank.end(), rank, [](const auto& e, int r) { return e.first < r; });
  return it != by_rank.end() && it->first == rank ? it->second : -1;
}

CommLayout comm_layout(const Trace& trace, uint32_t comm_id) {
  const auto& comm = trace.comms.at(comm_id).members;
  CommLayout l;
  l.by_rank.reserve(comm.size());
  for (size_t i = 0; i < comm.size(); i++) l.by_rank.emplace_back(comm[i], static_cast<int>(i));
  // a rank listed twice (a damaged log) is at its last place
  std::stable_sort(l.by_rank.begin(), l.by_rank.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  size_t kept = 0;
  for (size_t i = 0; i < l.by_rank.size(); i++) {
    if (kept > 0 && l.by_rank[kept - 1].first == l.by_rank[i].first) kept--;
    l.by_rank[kept++] = l.by_rank[i];
  }
  l.by_rank.resize(kept);
  if (!l.by_rank.empty()) {
    const int64_t from = l.by_rank.front().first, span = static_cast<int64_t>(l.by_rank.back().first) - from + 1;
    if (span <= 2 * static_cast<int64_t>(l.by_rank.size()) + 64) {
      l.dense_from = static_cast<int>(from);
      l.dense.assign(static_cast<size_t>(span), -1);
      for (const auto& [rank, pos] : l.by_rank) l.dense[static_cast<size_t>(rank - from)] = pos;
    }
  }
  std::map<std::string, int> hosts;
  l.host.assign(comm.size(), 0);
  for (size_t i = 0; i < comm.size(); i++) {
    const std::string& h = comm[i] >= 0 && static_cast<size_t>(comm[i]) < trace.ranks.size() ? trace.ranks[comm[i]].hostname : "";
    l.host[i] = hosts.try_emplace(h, static_cast<int>(hosts.size())).first->second;
  }
  return l;
}

std::optional<LoggedCollective> logged_collective(const Trace& trace, uint32_t instance, MpiLibrary library,
                                                  const CommLayout* layout) {
  return logged_collective(trace, trace.collectives.at(instance), library, layout);
}

std::optional<LoggedCollective> logged_collective(const Trace& trace, const CollectiveInstance& c, MpiLibrary library,
                                                  const CommLayout* layout) {
  const auto& comm = trace.comms.at(c.comm).members;
  if (c.members.size() != comm.size() || comm.empty()) return std::nullopt;
  CommLayout made;
  if (!layout) layout = &(made = comm_layout(trace, c.comm));
  LoggedCollective out;
  CollectiveCall& call = out.call;
  call.library = library;
  call.call = c.call;
  call.size = static_cast<int>(comm.size());
  out.member_position.reserve(c.members.size());
  for (const auto& [rank, op] : c.members) {
    const int pos = layout->position(rank);
    if (pos < 0) return std::nullopt;
    out.member_position.push_back(pos);
  }
  if (c.root >= 0) {
    call.root = layout->position(c.root);
    if (call.root < 0) return std::nullopt;
  }
  call.host = layout->host;
  const uint32_t base = c.call >= MPA_CALL_Ibarrier ? c.call - (MPA_CALL_Ibarrier - MPA_CALL_Barrier) : c.call;
  call.bytes = c.bytes;
  // what each member logged, by position
  std::vector<std::optional<uint64_t>> sent(call.size), received(call.size);
  bool any_size = false;
  for (size_t m = 0; m < c.members.size(); m++) {
    if (m < c.sent.size()) sent[out.member_position[m]] = c.sent[m];
    if (m < c.received.size()) received[out.member_position[m]] = c.received[m];
    any_size |= (m < c.sent.size() && c.sent[m]) || (m < c.received.size() && c.received[m]);
  }
  // a rank's own block, from the side of the call that names it
  auto per_rank = [&](const std::vector<std::optional<uint64_t>>& side) {
    std::vector<uint64_t> v(call.size, 0);
    bool missing = false;
    for (int i = 0; i < call.size; i++) {
      if (side[i]) v[i] = *side[i];
      else if (i != call.root) missing = true;
    }
    if (missing) out.approximation = "a rank's count is not in its log (MPI_IN_PLACE): taken as 0";
    call.rank_bytes = v;
  };
  switch (base) {
    case MPA_CALL_Gatherv:
    case MPA_CALL_Allgatherv:
    case MPA_CALL_Alltoallv:
    case MPA_CALL_Alltoallw:
      per_rank(sent);  // each rank's sendcount (summed over the peers for Alltoallv/w)
      if (base == MPA_CALL_Allgatherv) {
        // a rank in place logs no sendcount: its block is what the others' leave of the total
        uint64_t total = 0, known = 0;
        int unknown = 0;
        for (int i = 0; i < call.size; i++) {
          if (received[i]) total = std::max(total, *received[i]);
          if (sent[i]) known += *sent[i];
          else unknown++;
        }
        if (unknown == 1 && total >= known) {
          for (int i = 0; i < call.size; i++)
            if (!sent[i]) call.rank_bytes[i] = total - known;
          out.approximation.clear();
        }
      }
      break;
    case MPA_CALL_Scatterv:
    case MPA_CALL_Reduce_scatter:
      per_rank(received);  // each rank's recvcount
      break;
    case MPA_CALL_Reduce_scatter_block: {
      uint64_t block = 0;
      for (const auto& r : received)
        if (r) block = std::max(block, *r);
      call.bytes = block;
      break;
    }
    default:
      break;
  }
  // MPI_IN_PLACE: the side a call in place leaves out of its log is missing where it is significant
  switch (base) {
    case MPA_CALL_Reduce: case MPA_CALL_Gather: case MPA_CALL_Gatherv:
      call.in_place = call.root >= 0 && !sent[call.root];
      break;
    case MPA_CALL_Scatter: case MPA_CALL_Scatterv:
      call.in_place = call.root >= 0 && !received[call.root];
      break;
    case MPA_CALL_Allreduce: case MPA_CALL_Allgather: case MPA_CALL_Allgatherv: case MPA_CALL_Alltoall:
    case MPA_CALL_Alltoallv: case MPA_CALL_Alltoallw: case MPA_CALL_Reduce_scatter:
    case MPA_CALL_Reduce_scatter_block: case MPA_CALL_Scan: case MPA_CALL_Exscan:
      call.in_place = std::any_of(sent.begin(), sent.end(), [](const auto& s) { return !s; });
      break;
    default:
      break;
  }
  // What the counts arrays said (MPA_F_VCOUNTS, log format 3), by position: every rank's share, where the
  // sums above leave some unknown or spread evenly.
  std::vector<const std::vector<uint64_t>*> each(call.size, nullptr);
  for (size_t m = 0; m < c.each.size() && m < out.member_position.size(); m++)
    if (c.each[m].size() == static_cast<size_t>(call.size)) each[out.member_position[m]] = &c.each[m];
  auto known_shares = [&](const std::vector<uint64_t>* shares) {
    if (!shares) return;
    call.rank_bytes = *shares;
    out.approximation.clear();
    any_size = true;
  };
  switch (base) {
    case MPA_CALL_Alltoallv:
    case MPA_CALL_Alltoallw:
      if (std::all_of(each.begin(), each.end(), [](const auto* e) { return e != nullptr; })) {
        call.peer_bytes.clear();
        for (const auto* e : each) call.peer_bytes.push_back(*e);
        for (int i = 0; i < call.size; i++)
          call.rank_bytes[i] = std::accumulate(each[i]->begin(), each[i]->end(), uint64_t{0});
        out.approximation.clear();
        any_size = true;
      }
      break;
    case MPA_CALL_Gatherv:
    case MPA_CALL_Scatterv:
      if (call.root >= 0) known_shares(each[call.root]);  // the root's counts name every rank's block
      break;
    case MPA_CALL_Allgatherv:
    case MPA_CALL_Reduce_scatter: {  // every rank's counts name every rank's block
      auto it = std::find_if(each.begin(), each.end(), [](const auto* e) { return e != nullptr; });
      if (it != each.end()) known_shares(*it);
      break;
    }
    default:
      break;
  }
  if (base != MPA_CALL_Barrier && !any_size)
    out.approximation = "no rank's log has the size (MPI_IN_PLACE everywhere): taken as 0 bytes";
  return out;
}

namespace coll {

std::vector<std::vector<uint64_t>> alltoallv_matrix(const CollectiveCall& c, std::string* approximation) {
  if (c.peer_bytes.size() == static_cast<size_t>(c.size)) return c.peer_bytes;
  *approximation = "the log has each rank's total, not its count for each peer (a log before format 3): "
                   "spread evenly over the peers";
  const uint64_t n = static_cast<uint64_t>(std::max(c.size, 1));
  std::vector<std::vector<uint64_t>> to = square(c.size, 0);
  for (int i = 0; i < c.size; i++) {
    const uint64_t total = c.rank_bytes.empty() ? c.bytes : c.rank_bytes[i];
    for (int j = 0; j < c.size; j++) to[i][j] = total / n;
  }
  return to;
}

}  // namespace coll

std::optional<CollSchedule> collective_schedule(const CollectiveCall& call, std::string* why_not) {
  const auto none = [&](std::string why) -> std::optional<CollSchedule> {
    if (why_not) *why_not = std::move(why);
    return std::nullopt;
  };
  if (call.size < 1 || call.root >= call.size ||
      (!call.rank_bytes.empty() && call.rank_bytes.size() != static_cast<size_t>(call.size)))
    return none("no algorithm to follow");
  if (!call.peer_bytes.empty() &&
      (call.peer_bytes.size() != static_cast<size_t>(call.size) ||
       std::any_of(call.peer_bytes.begin(), call.peer_bytes.end(),
                   [&](const auto& row) { return row.size() != static_cast<size_t>(call.size); })))
    return none("no algorithm to follow");
  // the algorithms add up the ranks' blocks: a total past 2^64 bytes (a damaged log's) has no schedule
  uint64_t total = 0;
  bool past = __builtin_mul_overflow(call.bytes, static_cast<uint64_t>(call.size), &total);
  for (uint64_t b : call.rank_bytes) past |= __builtin_add_overflow(total, b, &total);
  for (const auto& row : call.peer_bytes)
    for (uint64_t b : row) past |= __builtin_add_overflow(total, b, &total);
  if (past) return none("its buffers hold more than 2^64 bytes in all");
  coll::Builder b(call.size);
  coll::Chosen chosen;
  try {
    switch (call.library) {
      case MpiLibrary::OpenMPI: chosen = coll::ompi_schedule(call, b); break;
      case MpiLibrary::MPICH: chosen = coll::mpich_schedule(call, b); break;
      case MpiLibrary::Other: return none("no algorithm to follow");
    }
  } catch (const coll::TooManySteps&) {
    return none(fmt::format("the algorithm takes more than {} steps", max_schedule_steps(call.size)));
  }
  if (chosen.algorithm.empty()) return none("no algorithm to follow");
  CollSchedule s;
  s.algorithm = std::move(chosen.algorithm);
  s.approximation = std::move(chosen.approximation);
  s.node_calls = chosen.node_calls;
  s.ranks = b.take();
  try {
    match(s.ranks, s.algorithm);
  } catch (const std::logic_error& e) {
    return none(fmt::format("its sends and receives do not pair for these counts: {}", e.what()));
  }
  return s;
}

}  // namespace mpiadvise

#include "collectives.hpp"

#include <map>
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
          break;
      }
      if ((s.kind == CollStep::Send || s.kind == CollStep::Isend || s.kind == CollStep::Recv ||
           s.kind == CollStep::Irecv) &&
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

std::optional<LoggedCollective> logged_collective(const Trace& trace, uint32_t instance, MpiLibrary library) {
  const CollectiveInstance& c = trace.collectives.at(instance);
  const auto& comm = trace.comms.at(c.comm).members;
  if (c.members.size() != comm.size() || comm.empty()) return std::nullopt;
  LoggedCollective out;
  CollectiveCall& call = out.call;
  call.library = library;
  call.call = c.call;
  call.size = static_cast<int>(comm.size());
  std::map<int, int> position;
  for (size_t i = 0; i < comm.size(); i++) position[comm[i]] = static_cast<int>(i);
  for (const auto& [rank, op] : c.members) {
    auto it = position.find(rank);
    if (it == position.end()) return std::nullopt;
    out.member_position.push_back(it->second);
  }
  if (c.root >= 0) {
    auto it = position.find(c.root);
    if (it == position.end()) return std::nullopt;
    call.root = it->second;
  }
  std::map<std::string, int> hosts;
  call.host.assign(call.size, 0);
  for (size_t i = 0; i < comm.size(); i++) {
    const std::string& h = comm[i] >= 0 && static_cast<size_t>(comm[i]) < trace.ranks.size() ? trace.ranks[comm[i]].hostname : "";
    call.host[i] = hosts.try_emplace(h, static_cast<int>(hosts.size())).first->second;
  }
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
  if (base != MPA_CALL_Barrier && !any_size)
    out.approximation = "no rank's log has the size (MPI_IN_PLACE everywhere): taken as 0 bytes";
  return out;
}

std::optional<CollSchedule> collective_schedule(const CollectiveCall& call) {
  if (call.size < 1 || call.root >= call.size ||
      (!call.rank_bytes.empty() && call.rank_bytes.size() != static_cast<size_t>(call.size)))
    return std::nullopt;
  coll::Builder b(call.size);
  coll::Chosen chosen;
  switch (call.library) {
    case MpiLibrary::OpenMPI: chosen = coll::ompi_schedule(call, b); break;
    case MpiLibrary::MPICH: chosen = coll::mpich_schedule(call, b); break;
    case MpiLibrary::Other: return std::nullopt;
  }
  if (chosen.algorithm.empty()) return std::nullopt;
  CollSchedule s;
  s.algorithm = std::move(chosen.algorithm);
  s.approximation = std::move(chosen.approximation);
  s.ranks = b.take();
  match(s.ranks, s.algorithm);
  return s;
}

}  // namespace mpiadvise

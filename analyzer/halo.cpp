#include "halo.hpp"

#include <algorithm>
#include <map>
#include <numeric>
#include <optional>
#include <set>

#include "parallel.hpp"
#include "replay.hpp"

namespace mpiadvise {
namespace {

bool point_to_point(OpKind k) {
  switch (k) {
    case OpKind::Send:
    case OpKind::SyncSend:
    case OpKind::Recv:
    case OpKind::SendRecv:
    case OpKind::PostSend:
    case OpKind::PostRecv:
    case OpKind::Completion:
    case OpKind::Polling: return true;
    default: return false;
  }
}

// One rank's repeated exchange: its call sites and peers, and what it sends.
struct Pattern {
  std::vector<uint32_t> send_callsites, recv_callsites;
  std::vector<int> peers;
  bool operator<(const Pattern& o) const {
    return std::tie(send_callsites, recv_callsites, peers) < std::tie(o.send_callsites, o.recv_callsites, o.peers);
  }
};
struct Seen {
  uint64_t times = 0, bytes_max = 0;
};

int find(std::vector<int>& parent, int x) {
  while (parent[x] != x) x = parent[x] = parent[parent[x]];
  return x;
}

}  // namespace

std::vector<HaloExchange> find_halos(const Trace& t) {
  const int P = static_cast<int>(t.ranks.size());
  std::vector<std::optional<std::pair<Pattern, Seen>>> of_rank(static_cast<size_t>(P));
  for (int r = 0; r < P; r++) {
    const auto& ops = t.ranks[r].ops;
    const ReplayWindow w = replay_window(t.ranks[r]);
    std::map<Pattern, Seen> patterns;
    uint32_t i = w.first;
    while (i < w.end) {
      if (!point_to_point(ops[i].kind)) {
        i++;
        continue;
      }
      // the burst from op i
      std::map<int, std::pair<bool, bool>> peers;  // sent to, received from
      std::set<uint32_t> sends, recvs;
      uint64_t bytes = 0;
      // it ends at any other MPI call, or where a call site posts to or from a peer it posted for in this
      // burst already: the next iteration. (Not at a pause: a rank descheduled in the middle of an
      // exchange, or packing a buffer between its sends, is still in the exchange.)
      std::set<std::pair<uint32_t, int>> posted;
      uint32_t j = i;
      for (; j < w.end && point_to_point(ops[j].kind); j++) {
        const OpLinks links = t.links_of(ops[j]);
        bool again = false;
        for (uint32_t l = 0; l < links.size() && j > i; l++) {
          if (links[l].id == kNone) continue;
          const Message& m = t.messages[links[l].id];
          if (links[l].kind == Link::PostSend) again |= posted.count({ops[j].callsite, m.dst}) > 0;
          if (links[l].kind == Link::PostRecv) again |= posted.count({ops[j].callsite, m.src}) > 0;
        }
        if (again) break;
        for (uint32_t l = 0; l < links.size(); l++) {
          if (links[l].id == kNone) continue;
          if (links[l].kind == Link::PostSend) {
            const Message& m = t.messages[links[l].id];
            peers[m.dst].first = true, sends.insert(ops[j].callsite), bytes = std::max(bytes, m.bytes);
            posted.insert({ops[j].callsite, m.dst});
          } else if (links[l].kind == Link::PostRecv) {
            const Message& m = t.messages[links[l].id];
            peers[m.src].second = true, recvs.insert(ops[j].callsite), bytes = std::max(bytes, m.bytes);
            posted.insert({ops[j].callsite, m.src});
          }
        }
      }
      bool exchange = !peers.empty();
      for (const auto& [p, both] : peers) exchange &= both.first && both.second && p != r;
      if (exchange) {
        Pattern pat{{sends.begin(), sends.end()}, {recvs.begin(), recvs.end()}, {}};
        for (const auto& [p, both] : peers) pat.peers.push_back(p);
        Seen& s = patterns[pat];
        s.times++, s.bytes_max = std::max(s.bytes_max, bytes);
      }
      i = std::max(j, i + 1);
    }
    // the rank's exchange: its most repeated pattern, if repeated enough
    for (const auto& [pat, s] : patterns)
      if (s.times >= kHaloMinRepeats && (!of_rank[r] || s.times > of_rank[r]->second.times)) of_rank[r] = {pat, s};
  }
  // ranks exchanging with each other form one halo exchange
  std::vector<int> parent(static_cast<size_t>(P));
  std::iota(parent.begin(), parent.end(), 0);
  for (int r = 0; r < P; r++)
    if (of_rank[r])
      for (int p : of_rank[r]->first.peers)
        if (p >= 0 && p < P && of_rank[p]) parent[find(parent, r)] = find(parent, p);
  std::map<int, HaloExchange> halos;
  for (int r = 0; r < P; r++) {
    if (!of_rank[r]) continue;
    const auto& [pat, s] = *of_rank[r];
    auto [it, fresh] = halos.try_emplace(find(parent, r));
    HaloExchange& h = it->second;
    const int n = static_cast<int>(pat.peers.size());
    h.neighbours_min = fresh ? n : std::min(h.neighbours_min, n);
    h.neighbours_max = fresh ? n : std::max(h.neighbours_max, n);
    h.exchanges = fresh ? s.times : std::min(h.exchanges, s.times);
    h.bytes_max = std::max(h.bytes_max, s.bytes_max);
    h.ranks.push_back(r);
    for (uint32_t c : pat.send_callsites) h.send_sites.try_emplace(t.site(r, c), r, c);
    for (uint32_t c : pat.recv_callsites) h.recv_sites.try_emplace(t.site(r, c), r, c);
  }
  std::vector<HaloExchange> out;
  for (auto& [root, h] : halos)
    if (h.ranks.size() >= 2) out.push_back(std::move(h));
  return out;
}

const char* halo_change_name(HaloWhatIf::Change c) {
  switch (c) {
    case HaloWhatIf::Change::Overlap: return "overlap";
    case HaloWhatIf::Change::Split: return "split";
    case HaloWhatIf::Change::OverlapAndSplit: return "overlap_and_split";
  }
  return "?";
}

std::vector<HaloWhatIf> halo_whatifs(const Trace& t, const HaloExchange& h, const ReplayOptions& base) {
  std::vector<HaloWhatIf> out;
  std::vector<ReplayOptions> whatifs;
  auto tried = [&](HaloWhatIf::Change change, bool overlap, bool split) {
    ReplayOptions& o = whatifs.emplace_back(base);
    for (const auto& [key, at] : h.send_sites) {
      if (overlap) o.nonblocking_sites.insert(key);
      if (split) o.split_sites.insert(key);
    }
    if (overlap)
      for (const auto& [key, at] : h.recv_sites) o.prepost_sites.insert(key);
    HaloWhatIf w;
    w.change = change, w.nonblocking = w.prepost = overlap, w.split = split;
    out.push_back(w);
  };
  tried(HaloWhatIf::Change::Overlap, true, false);
  if (h.bytes_max > base.params.S) {
    tried(HaloWhatIf::Change::Split, false, true);
    tried(HaloWhatIf::Change::OverlapAndSplit, true, true);
  }
  const std::vector<ReplayResult> replayed = replay_all(t, whatifs);
  for (size_t i = 0; i < out.size(); i++) out[i].predicted_ns = replayed[i].predicted_ns;
  return out;
}

}  // namespace mpiadvise

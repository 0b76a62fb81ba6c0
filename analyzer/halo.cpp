#include "halo.hpp"

#include <algorithm>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <span>
#include <stdexcept>
#include <unordered_map>

#include <fmt/format.h>

#include "measured_walk.hpp"
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

// A post of a point-to-point op: a send's receiver or a receive's sender, and the message's bytes
struct Post {
  bool send = false;
  int peer = -1;
  uint64_t bytes = 0;
};

// One rank's bursts of point-to-point calls in its window, fed op by op in its order, and the patterns
// they made. A burst ends at any other MPI call, or where a call site posts to or from a peer it posted
// for in this burst already: the next iteration. (Not at a pause: a rank descheduled in the middle of an
// exchange, or packing a buffer between its sends, is still in the exchange.)
class Bursts {
 public:
  explicit Bursts(int rank) : rank_(rank) {}
  // whether a point-to-point op at this call site with these posts starts the next iteration: the open
  // burst posted for one of its peers at its site already
  bool again(uint32_t callsite, std::span<const Post> posts) const {
    bool again = false;
    for (const Post& p : posts) again |= open_ && posted_.count({callsite, p.peer}) > 0;
    return again;
  }
  // a point-to-point op of the window, its posts (links of no id left out), in the open burst or a new one
  void add(uint32_t callsite, std::span<const Post> posts) {
    open_ = true;
    for (const Post& p : posts) {
      auto& [to, from] = peers_[p.peer];
      (p.send ? to : from) = true;
      (p.send ? sends_ : recvs_).insert(callsite);
      bytes_ = std::max(bytes_, p.bytes);
      posted_.insert({callsite, p.peer});
    }
  }
  // a message of the open burst whose bytes were not known at its post
  void add_bytes(uint64_t bytes) { bytes_ = std::max(bytes_, bytes); }
  // ends the open burst: the counts of its pattern where it was an exchange (with every peer both ways),
  // null where it was not, or none was open
  Seen* close() {
    if (!open_) return nullptr;
    open_ = false;
    bool exchange = !peers_.empty();
    for (const auto& [p, both] : peers_) exchange &= both.first && both.second && p != rank_;
    Seen* seen = nullptr;
    if (exchange) {
      Pattern pat{{sends_.begin(), sends_.end()}, {recvs_.begin(), recvs_.end()}, {}};
      for (const auto& [p, both] : peers_) pat.peers.push_back(p);
      seen = &patterns_[pat];
      seen->times++, seen->bytes_max = std::max(seen->bytes_max, bytes_);
    }
    peers_.clear(), sends_.clear(), recvs_.clear(), posted_.clear();
    bytes_ = 0;
    return seen;
  }
  // the rank's exchange: its most repeated pattern, if repeated enough
  std::optional<std::pair<Pattern, Seen>> exchange() const {
    std::optional<std::pair<Pattern, Seen>> best;
    for (const auto& [pat, s] : patterns_)
      if (s.times >= kHaloMinRepeats && (!best || s.times > best->second.times)) best = {pat, s};
    return best;
  }

 private:
  int rank_;
  bool open_ = false;
  std::map<int, std::pair<bool, bool>> peers_;  // sent to, received from
  std::set<uint32_t> sends_, recvs_;
  uint64_t bytes_ = 0;
  std::set<std::pair<uint32_t, int>> posted_;
  std::map<Pattern, Seen> patterns_;  // a node stays where it is: close()'s pointers hold
};

// Ranks exchanging with each other form one halo exchange: each rank's exchange, joined with its peers'.
std::vector<HaloExchange> exchanges_of(const Trace& t, const std::vector<std::optional<std::pair<Pattern, Seen>>>& of_rank) {
  const int P = static_cast<int>(of_rank.size());
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

}  // namespace

std::vector<HaloExchange> find_halos(const Trace& t) {
  const int P = static_cast<int>(t.ranks.size());
  std::vector<std::optional<std::pair<Pattern, Seen>>> of_rank(static_cast<size_t>(P));
  std::vector<Post> posts;
  for (int r = 0; r < P; r++) {
    const auto& ops = t.ranks[r].ops;
    const ReplayWindow w = replay_window(t.ranks[r]);
    Bursts bursts(r);
    for (uint32_t i = w.first; i < w.end; i++) {
      if (!point_to_point(ops[i].kind)) {
        bursts.close();
        continue;
      }
      posts.clear();
      const OpLinks links = t.links_of(ops[i]);
      for (uint32_t l = 0; l < links.size(); l++) {
        if (links[l].id == kNone || (links[l].kind != Link::PostSend && links[l].kind != Link::PostRecv)) continue;
        const Message& m = t.messages[links[l].id];
        const bool send = links[l].kind == Link::PostSend;
        posts.push_back({send, send ? m.dst : m.src, m.bytes});
      }
      if (bursts.again(ops[i].callsite, posts)) bursts.close();
      bursts.add(ops[i].callsite, posts);
    }
    bursts.close();
    of_rank[r] = bursts.exchange();
  }
  return exchanges_of(t, of_rank);
}

std::vector<HaloExchange> find_halos(const Trace& t, const std::vector<OpStream>& streams, HalosHeld* held) {
  const int P = static_cast<int>(streams.size());
  if (t.ranks.size() != streams.size())
    throw std::invalid_argument(fmt::format("halos: {} ranks' op streams for a trace of {} ranks", P, t.ranks.size()));
  const Senders senders(streams);
  std::vector<Bursts> bursts;
  for (int r = 0; r < P; r++) bursts.emplace_back(r);
  // A receive some send matched carries no fields: its sender is the runs', its bytes the send's, which
  // the walk may meet before or after it. Until the two meet: the bytes of a send met first (arrived),
  // and the receives met first (awaited), each with its rank and where its bytes go: that rank's open
  // burst, or the pattern its burst made once closed (none: no exchange, or a receive posted outside any
  // burst)
  std::unordered_map<uint32_t, uint64_t> arrived;
  struct Awaited {
    int rank;
    bool open;    // in the rank's open burst
    Seen* seen;   // else: the pattern its burst made, or null
  };
  std::unordered_map<uint32_t, Awaited> awaited;
  std::vector<std::vector<uint32_t>> open_ids(static_cast<size_t>(P));  // a rank's open burst's awaited ids
  const auto close = [&](int r) {
    Seen* seen = bursts[r].close();
    for (uint32_t id : open_ids[r])
      if (const auto it = awaited.find(id); it != awaited.end()) it->second = {r, false, seen};
    open_ids[r].clear();
  };
  std::vector<Post> posts;
  std::vector<uint32_t> ids;  // the op's receives awaiting their bytes
  walk_by_entry(streams, [&](int r, uint32_t k, const StreamOp& op) {
    const ReplayWindow& w = streams[r].window();
    const bool in_burst = k >= w.first && k < w.end && point_to_point(op.kind);
    if (!in_burst) close(r);
    posts.clear(), ids.clear();
    // the op's sends first: a message one op both sends and receives (a rank's MPI_Sendrecv to itself) is
    // carried by its send alone, which leaves its bytes for its receive (a matched one's) in the same op
    const OpLinks links = op.links();
    for (uint32_t n = 0; n < 2 * links.size(); n++) {
      const Link link = links[n % links.size()];
      const bool send = link.kind == Link::PostSend;
      if (link.id == kNone || (!send && link.kind != Link::PostRecv) || send != (n < links.size())) continue;
      const auto carried = std::find_if(op.posted.begin(), op.posted.end(),
                                        [&](const auto& p) { return p.id == link.id && p.m->sent == send; });
      if (carried != op.posted.end()) {
        const StreamMessage& m = *carried->m;
        posts.push_back({send, send ? m.fields.dst : m.fields.src, m.fields.bytes});
        if (send && m.answered) {  // its receive's bytes, met before or to come
          if (const auto it = awaited.find(link.id); it != awaited.end()) {
            if (it->second.open) bursts[it->second.rank].add_bytes(m.fields.bytes);
            else if (Seen* seen = it->second.seen) seen->bytes_max = std::max(seen->bytes_max, m.fields.bytes);
            awaited.erase(it);
          } else {
            arrived[link.id] = m.fields.bytes;
          }
        }
      } else if (!send) {
        posts.push_back({false, senders.of(link.id), 0});
        if (const auto it = arrived.find(link.id); it != arrived.end()) {
          posts.back().bytes = it->second;
          arrived.erase(it);
        } else {
          awaited[link.id] = {r, in_burst, nullptr};
          if (in_burst) ids.push_back(link.id);
        }
      }
    }
    if (held) held->most = std::max(held->most, arrived.size() + awaited.size());
    if (!in_burst) return;
    if (bursts[r].again(op.callsite, posts)) close(r);
    bursts[r].add(op.callsite, posts);
    open_ids[r].insert(open_ids[r].end(), ids.begin(), ids.end());
  });
  std::vector<std::optional<std::pair<Pattern, Seen>>> of_rank(static_cast<size_t>(P));
  for (int r = 0; r < P; r++) {
    close(r);
    of_rank[r] = bursts[r].exchange();
  }
  if (held) held->at_end = arrived.size() + awaited.size();
  return exchanges_of(t, of_rank);
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

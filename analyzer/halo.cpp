#include "halo.hpp"

#include <algorithm>
#include <map>
#include <numeric>
#include <optional>
#include <set>
#include <span>
#include <stdexcept>

#include <fmt/format.h>

#include "op_stream.hpp"
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
  // ends the open burst, counted in its pattern where it was an exchange (with every peer both ways)
  void close() {
    if (!open_) return;
    open_ = false;
    bool exchange = !peers_.empty();
    for (const auto& [p, both] : peers_) exchange &= both.first && both.second && p != rank_;
    if (exchange) {
      Pattern pat{{sends_.begin(), sends_.end()}, {recvs_.begin(), recvs_.end()}, {}};
      for (const auto& [p, both] : peers_) pat.peers.push_back(p);
      Seen& seen = patterns_[pat];
      seen.times++, seen.bytes_max = std::max(seen.bytes_max, bytes_);
    }
    peers_.clear(), sends_.clear(), recvs_.clear(), posted_.clear();
    bytes_ = 0;
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
  std::map<Pattern, Seen> patterns_;
};

// A rank's exchange, its ops in the replay's window read in order by `next` (false past the last): an op's
// call site, kind and point-to-point posts (links of no id left out), in its links' order.
template <class Next>
std::optional<std::pair<Pattern, Seen>> rank_exchange(int rank, Next&& next) {
  Bursts bursts(rank);
  uint32_t callsite = 0;
  OpKind kind = OpKind::Other;
  std::vector<Post> posts;
  while (next(callsite, kind, posts)) {
    if (!point_to_point(kind)) {
      bursts.close();
      continue;
    }
    if (bursts.again(callsite, posts)) bursts.close();
    bursts.add(callsite, posts);
  }
  bursts.close();
  return bursts.exchange();
}

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
  std::vector<std::optional<std::pair<Pattern, Seen>>> of_rank(t.ranks.size());
  parallel_for(t.ranks.size(), [&](size_t r) {
    const auto& ops = t.ranks[r].ops;
    const ReplayWindow w = replay_window(t.ranks[r]);
    uint32_t i = w.first;
    of_rank[r] = rank_exchange(static_cast<int>(r), [&](uint32_t& callsite, OpKind& kind, std::vector<Post>& posts) {
      if (i >= w.end) return false;
      const Op& op = ops[i++];
      callsite = op.callsite, kind = op.kind;
      posts.clear();
      const OpLinks links = t.links_of(op);
      for (uint32_t l = 0; l < links.size(); l++) {
        if (links[l].id == kNone || (links[l].kind != Link::PostSend && links[l].kind != Link::PostRecv)) continue;
        const Message& m = t.messages[links[l].id];
        const bool send = links[l].kind == Link::PostSend;
        posts.push_back({send, send ? m.dst : m.src, m.bytes});
      }
      return true;
    });
  });
  return exchanges_of(t, of_rank);
}

std::vector<HaloExchange> find_halos(const Trace& t, const std::vector<OpStream>& streams) {
  if (t.ranks.size() != streams.size())
    throw std::invalid_argument(fmt::format("halos: {} ranks' op streams for a trace of {} ranks", streams.size(), t.ranks.size()));
  std::vector<std::optional<std::pair<Pattern, Seen>>> of_rank(streams.size());
  parallel_for(streams.size(), [&](size_t r) {
    const ReplayWindow& w = streams[r].window();
    OpCursor c(streams[r]);
    c.seek(w.first);
    StreamOp op;
    of_rank[r] = rank_exchange(static_cast<int>(r), [&](uint32_t& callsite, OpKind& kind, std::vector<Post>& posts) {
      if (c.op() >= w.end || !c.next(op)) return false;
      callsite = op.callsite, kind = op.kind;
      posts.clear();
      // each post's fields as its op carries them: a send's and a receive's no send matched (posted),
      // a matched receive's (received: the sender's fields); a hand-made trace's post from another rank's
      // op carries none, and is left out
      const OpLinks links = op.links();
      for (uint32_t l = 0; l < links.size(); l++) {
        const Link link = links[l];
        const bool send = link.kind == Link::PostSend;
        if (link.id == kNone || (!send && link.kind != Link::PostRecv)) continue;
        const auto is = [&](const StreamOp::Posted& p) { return p.id == link.id && p.m->sent == send; };
        auto it = std::find_if(op.posted.begin(), op.posted.end(), is);
        const StreamMessage* m = it != op.posted.end() ? it->m : nullptr;
        if (!m && !send)
          if (auto got = std::find_if(op.received.begin(), op.received.end(), [&](const auto& p) { return p.id == link.id; });
              got != op.received.end())
            m = got->m;
        if (m) posts.push_back({send, send ? m->fields.dst : m->fields.src, m->fields.bytes});
      }
      return true;
    });
  });
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
  replay_each(t, whatifs, [&](size_t i, const ReplayResult& r) { out[i].predicted_ns = r.predicted_ns; });
  return out;
}

}  // namespace mpiadvise

#include "causes.hpp"

#include <algorithm>
#include <map>
#include <numeric>
#include <optional>

#include "op_stream.hpp"
#include "replay.hpp"

namespace mpiadvise {
namespace {

// How far back a waiting rank's calls are searched for the last one it shared with the rank it waits
// for; beyond, the interval starts where both ranks' replays start.
constexpr int kSyncSearch = 4096;

// The recorded timeline of every rank, as the analyses below walk it.
class Timeline {
 public:
  Timeline(const Trace& t, const std::vector<Wait>& waits) : t_(t), waits_(waits) {
    windows_.reserve(t.ranks.size());
    for (const auto& r : t.ranks) windows_.push_back(replay_window(r));
    by_rank_.resize(t.ranks.size());
    for (uint32_t i = 0; i < waits.size(); i++) by_rank_[waits[i].rank].push_back(i);
    for (auto& v : by_rank_)
      std::sort(v.begin(), v.end(), [&](uint32_t x, uint32_t y) { return waits_[x].from < waits_[y].from; });
  }

  const ReplayWindow& window(int r) const { return windows_[r]; }
  bool replayed(int r) const { return windows_[r].end > windows_[r].first; }
  // The last op whose gap counts: MPI_Finalize's, or the last op where there is none.
  uint32_t last_gap_op(int r) const {
    return std::min<uint32_t>(windows_[r].end, static_cast<uint32_t>(t_.ranks[r].ops.size()) - 1);
  }
  double enter(int r, uint32_t k) const { return static_cast<double>(t_.op(r, k).t_enter); }
  double exit(int r, uint32_t k) const { return static_cast<double>(t_.op(r, k).t_exit()); }
  // The computation before op k: from the previous op's exit (the replay's start for the first) to k's entry.
  std::pair<double, double> gap(int r, uint32_t k) const {
    const double from = k > windows_[r].first ? exit(r, k - 1) : static_cast<double>(windows_[r].start_ns);
    return {from, std::max(from, enter(r, k))};
  }
  ComputationKey key(int r, uint32_t k) const { return {r, t_.op(r, k).callsite, t_.op(r, k).call}; }

  // The computations of rank r within [from, to], clipped: f(op k, ns).
  template <class F>
  void computations_within(int r, double from, double to, F f) const {
    if (!replayed(r) || to <= from) return;
    const auto& ops = t_.ranks[r].ops;
    const uint32_t first = windows_[r].first, last = last_gap_op(r);
    // the first op whose entry is after `from`: its gap is the first that can reach into the interval
    auto it = std::upper_bound(ops.begin() + first, ops.begin() + last + 1, from,
                               [](double x, const Op& op) { return x < static_cast<double>(op.t_enter); });
    for (uint32_t k = static_cast<uint32_t>(it - ops.begin()); k <= last; k++) {
      auto [g0, g1] = gap(r, k);
      if (g0 >= to) break;
      const double ns = std::min(g1, to) - std::max(g0, from);
      if (ns > 0) f(k, ns);
    }
  }

  // The waits of rank r within [from, to), clipped: f(wait index, ns).
  template <class F>
  void waits_within(int r, double from, double to, F f) const {
    const auto& v = by_rank_[r];
    auto it = std::lower_bound(v.begin(), v.end(), to, [&](uint32_t i, double x) { return waits_[i].from < x; });
    while (it != v.begin()) {
      --it;
      const Wait& w = waits_[*it];
      if (w.to <= from) break;
      const double ns = std::min(w.to, to) - std::max(w.from, from);
      if (ns > 0) f(*it, ns);
    }
  }

  // When rank a last synchronised with rank b before its op `before`: the exit of its last call that
  // exchanged a message with b or took part in a collective with it; nullopt if none is found.
  std::optional<double> last_sync(int a, uint32_t before, int b) const {
    const uint32_t first = windows_[a].first;
    int searched = 0;
    for (uint32_t k = before; k > first && searched < kSyncSearch; searched++) {
      --k;
      const Op& op = t_.op(a, k);
      const OpLinks links = t_.links_of(op);
      for (uint32_t l = 0; l < links.size(); l++) {
        const Link link = links[l];
        if (link.id == kNone) continue;
        bool with_b = false;
        if (link.kind == Link::PostColl || link.kind == Link::DoneColl) {
          for (const auto& [r, o] : t_.collectives[link.id].members) with_b |= r == b;
        } else {
          const Message& m = t_.messages[link.id];
          with_b = m.src == b || m.dst == b;
        }
        if (with_b) return exit(a, k);
      }
    }
    return std::nullopt;
  }

  const std::vector<uint32_t>& waits_of(int r) const { return by_rank_[r]; }

 private:
  const Trace& t_;
  const std::vector<Wait>& waits_;
  std::vector<ReplayWindow> windows_;
  std::vector<std::vector<uint32_t>> by_rank_;  // wait indices by rank, by start
};

}  // namespace

DelayCosts delay_costs(const Trace& t, const std::vector<Wait>& waits) {
  DelayCosts d;
  const Timeline tl(t, waits);
  // later waits first: a wait passes its cost on to earlier waits of the rank it waited for
  std::vector<uint32_t> order(waits.size());
  std::iota(order.begin(), order.end(), 0u);
  std::stable_sort(order.begin(), order.end(), [&](uint32_t x, uint32_t y) {
    return waits[x].to != waits[y].to ? waits[x].to > waits[y].to : waits[x].from > waits[y].from;
  });
  std::vector<double> inherited(waits.size(), 0.0);
  std::map<ComputationKey, RootCause> causes;
  // computations compared across ranks by their call site's key (the same code on every rank)
  std::map<SiteKey, double> waiter_time;
  std::map<uint32_t, double> late_time;  // late rank's computation by call site id
  std::vector<std::pair<uint32_t, double>> late_waits;
  for (uint32_t w : order) {
    const Wait& x = waits[w];
    d.waiting_ns += x.ns();
    const double own = x.ns(), passed = inherited[w];
    const int a = x.rank, b = x.culprit;
    if (b < 0 || b == a || x.culprit_op == kNone || !tl.replayed(b)) {
      d.unattributed_ns += own + passed;
      continue;
    }
    const double tb = tl.enter(b, x.culprit_op);
    const auto sync = tl.last_sync(a, x.op, b);
    double t_ref = sync ? *sync
                        : std::max(static_cast<double>(tl.window(a).start_ns), static_cast<double>(tl.window(b).start_ns));
    t_ref = std::min({t_ref, x.from, tb});
    // what the waiting rank computed since then, by code, and what the late rank computed and waited
    waiter_time.clear(), late_time.clear(), late_waits.clear();
    tl.computations_within(a, t_ref, x.from, [&](uint32_t k, double ns) {
      waiter_time[t.site(a, t.op(a, k).callsite)] += ns;
    });
    tl.computations_within(b, t_ref, tb, [&](uint32_t k, double ns) { late_time[t.op(b, k).callsite] += ns; });
    tl.waits_within(b, t_ref, tb, [&](uint32_t i, double ns) { late_waits.emplace_back(i, ns); });
    // the late rank's excess: computation beyond the waiting rank's in the same code, and its own waits
    std::vector<std::pair<uint32_t, double>> excess;
    double sum = 0;
    for (const auto& [callsite, ns] : late_time) {
      auto it = waiter_time.find(t.site(b, callsite));
      const double more = std::max(0.0, ns - (it == waiter_time.end() ? 0.0 : it->second));
      if (more > 0) excess.emplace_back(callsite, more), sum += more;
    }
    for (const auto& [i, ns] : late_waits) sum += ns;
    if (sum <= 0)  // the same computations, no longer: the late rank's computations share the wait
      for (const auto& [callsite, ns] : late_time) excess.emplace_back(callsite, ns), sum += ns;
    if (sum <= 0) {
      d.unattributed_ns += own + passed;
      continue;
    }
    for (const auto& [callsite, ns] : excess) {
      RootCause& c = causes[ComputationKey{b, callsite, 0}];
      c.direct_ns += own * ns / sum;
      c.indirect_ns += passed * ns / sum;
    }
    for (const auto& [i, ns] : late_waits) inherited[i] += (own + passed) * ns / sum;
  }
  for (auto& [key, c] : causes) {
    c.where = key;
    // the call that ends the computation: the first op of the rank at that call site names it
    for (const auto& op : t.ranks[key.rank].ops)
      if (op.callsite == key.callsite) {
        c.where.call = op.call;
        break;
      }
    d.causes.push_back(c);
  }
  std::sort(d.causes.begin(), d.causes.end(), [](const RootCause& x, const RootCause& y) { return x.total() > y.total(); });
  return d;
}

CriticalPath critical_path(const Trace& t, const std::vector<Wait>& waits) {
  CriticalPath p;
  const Timeline tl(t, waits);
  int r = -1;
  for (size_t i = 0; i < t.ranks.size(); i++)
    if (tl.replayed(static_cast<int>(i)) && (r < 0 || tl.window(static_cast<int>(i)).stop_ns > tl.window(r).stop_ns))
      r = static_cast<int>(i);
  if (r < 0) return p;
  p.last_rank = r;
  // the wait of each op that ended last (the one its exit waited for; of several, the first found), by
  // rank and op: 4 bytes a wait, where a map of them took about 60 (mpiadvise-synth's halo of 64 x 10^5
  // calls: 2 M waits, the report's peak 90 MB higher in this part)
  const auto op_of = [&](uint32_t i) { return std::make_pair(waits[i].rank, waits[i].op); };
  std::vector<uint32_t> last_wait(waits.size());
  std::iota(last_wait.begin(), last_wait.end(), 0u);
  std::stable_sort(last_wait.begin(), last_wait.end(), [&](uint32_t x, uint32_t y) { return op_of(x) < op_of(y); });
  size_t kept = 0;
  for (size_t i = 0; i < last_wait.size(); i++) {
    const uint32_t w = last_wait[i];
    if (kept && op_of(last_wait[kept - 1]) == op_of(w)) {
      if (waits[w].to > waits[last_wait[kept - 1]].to) last_wait[kept - 1] = w;
    } else {
      last_wait[kept++] = w;
    }
  }
  last_wait.resize(kept);
  const auto last_wait_of = [&](int rank, uint32_t op) -> const Wait* {
    const auto it = std::lower_bound(last_wait.begin(), last_wait.end(), std::make_pair(rank, op),
                                     [&](uint32_t x, const std::pair<int, uint32_t>& key) { return op_of(x) < key; });
    return it != last_wait.end() && op_of(*it) == std::make_pair(rank, op) ? &waits[*it] : nullptr;
  };
  std::map<std::pair<ComputationKey, bool>, CriticalPath::Part> parts;
  auto on_path = [&](const ComputationKey& k, bool computation, double ns) {
    if (ns <= 0) return;
    auto& part = parts[{k, computation}];
    part.where = k, part.computation = computation, part.ns += ns, part.times++;
    (computation ? p.computation_ns : p.mpi_ns) += ns;
  };
  // (r, k): the path has covered everything from op k's entry on (k: MPI_Finalize, or past the last op)
  uint32_t k = tl.last_gap_op(r);
  double now = static_cast<double>(tl.window(r).stop_ns);
  uint64_t steps = 0, limit = 16;
  for (const auto& rank : t.ranks)
    for (const Op& op : rank.ops) limit += 2 + 4 * uint64_t{t.n_links(op)};
  while (steps++ < limit) {
    auto [g0, g1] = tl.gap(r, k);
    on_path(tl.key(r, k), true, std::min(g1, now) - g0);
    now = std::min(now, g0);
    if (k <= tl.window(r).first) break;
    const uint32_t j = k - 1;
    if (const Wait* last = last_wait_of(r, j)) {
      const Wait& w = *last;
      const double tb = w.culprit >= 0 && w.culprit_op != kNone ? tl.enter(w.culprit, w.culprit_op) : now;
      if (w.culprit >= 0 && w.culprit != r && tb < now && tl.replayed(w.culprit)) {
        // the call waited until the other rank got there: the path goes on from that rank's entry
        on_path(tl.key(r, j), false, now - std::max(w.to, tl.enter(r, j)));
        r = w.culprit, k = w.culprit_op, now = tb;
        p.rank_changes++;
        continue;
      }
    }
    on_path(tl.key(r, j), false, now - tl.enter(r, j));
    now = std::min(now, tl.enter(r, j));
    k = j;
  }
  p.length_ns = p.computation_ns + p.mpi_ns;
  for (auto& [key, part] : parts) p.parts.push_back(part);
  std::sort(p.parts.begin(), p.parts.end(), [](const auto& x, const auto& y) { return x.ns > y.ns; });
  return p;
}

namespace {

// What a computation needs of the op that ends it.
struct GapOp {
  double enter = 0, exit = 0;
  uint32_t callsite = 0, call = 0;
};

// A rank's computations added to `all`: the gap before each op of its replay's window, up to its last
// whose gap counts (Timeline::gap, last_gap_op). next(): the rank's next op, from its first.
template <typename Next>
void add_computations(std::map<ComputationKey, CriticalPath::Part>& all, int r, const ReplayWindow& w, uint64_t ops,
                      Next next) {
  if (w.end <= w.first || ops == 0) return;
  const uint64_t last = std::min<uint64_t>(w.end, ops - 1);
  double prev_exit = 0;
  for (uint64_t k = 0; k <= last; k++) {
    const GapOp op = next();
    if (k >= w.first) {
      const double from = k > w.first ? prev_exit : static_cast<double>(w.start_ns), to = std::max(from, op.enter);
      const ComputationKey key{r, op.callsite, op.call};
      auto& part = all[key];
      part.where = key, part.ns += to - from, part.times++;
    }
    prev_exit = op.exit;
  }
}

std::vector<CriticalPath::Part> largest_first(const std::map<ComputationKey, CriticalPath::Part>& all) {
  std::vector<CriticalPath::Part> v;
  v.reserve(all.size());
  for (const auto& [key, part] : all) v.push_back(part);
  std::sort(v.begin(), v.end(), [](const auto& x, const auto& y) { return x.ns > y.ns; });
  return v;
}

}  // namespace

std::vector<CriticalPath::Part> computations(const Trace& t) {
  std::map<ComputationKey, CriticalPath::Part> all;
  for (size_t i = 0; i < t.ranks.size(); i++) {
    const auto& ops = t.ranks[i].ops;
    size_t k = 0;
    add_computations(all, static_cast<int>(i), replay_window(t.ranks[i]), ops.size(), [&] {
      const Op& op = ops[k++];
      return GapOp{static_cast<double>(op.t_enter), static_cast<double>(op.t_exit()), op.callsite, op.call};
    });
  }
  return largest_first(all);
}

std::vector<CriticalPath::Part> computations(const std::vector<OpStream>& streams) {
  std::map<ComputationKey, CriticalPath::Part> all;
  StreamOp op;
  for (size_t i = 0; i < streams.size(); i++) {
    OpCursor c(streams[i]);
    add_computations(all, static_cast<int>(i), streams[i].window(), streams[i].ops(), [&] {
      c.next(op);  // (the window's ops are all in the stream)
      return GapOp{static_cast<double>(op.t_enter), static_cast<double>(op.t_exit()), op.callsite, op.call};
    });
  }
  return largest_first(all);
}

}  // namespace mpiadvise

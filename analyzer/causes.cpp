#include "causes.hpp"

#include <algorithm>
#include <map>
#include <numeric>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>

#include "op_frames.hpp"
#include "op_stream.hpp"
#include "replay.hpp"

namespace mpiadvise {
namespace {

// How far back a waiting rank's calls are searched for the last one it shared with the rank it waits
// for; beyond, the interval starts where both ranks' replays start.
constexpr int kSyncSearch = 4096;

// What the analyses below read of the ops, from the trace's arrays.
class TraceOps {
 public:
  explicit TraceOps(const Trace& t) : t_(t) {
    windows_.reserve(t.ranks.size());
    for (const auto& r : t.ranks) windows_.push_back(replay_window(r));
  }
  size_t ranks() const { return t_.ranks.size(); }
  const ReplayWindow& window(int r) const { return windows_[r]; }
  uint64_t ops(int r) const { return t_.ranks[r].ops.size(); }
  double enter(int r, uint32_t k) const { return static_cast<double>(t_.op(r, k).t_enter); }
  double exit(int r, uint32_t k) const { return static_cast<double>(t_.op(r, k).t_exit()); }
  ComputationKey key(int r, uint32_t k) const { return {r, t_.op(r, k).callsite, t_.op(r, k).call}; }
  // whether op k of rank a exchanged a message with rank b or took part in a collective with it
  bool shares(int a, uint32_t k, int b) const {
    const OpLinks links = t_.links_of(t_.op(a, k));
    for (uint32_t l = 0; l < links.size(); l++) {
      const Link link = links[l];
      if (link.id == kNone) continue;
      if (link.kind == Link::PostColl || link.kind == Link::DoneColl) {
        if (link.id >= t_.collectives.size()) continue;  // (a hand-made trace's link to none)
        for (const auto& [r, o] : t_.collectives[link.id].members)
          if (r == b) return true;
      } else {
        if (link.id >= t_.messages.size()) continue;
        const Message& m = t_.messages[link.id];
        if (m.src == b || m.dst == b) return true;
      }
    }
    return false;
  }
  uint32_t entered_after(int r, uint32_t first, uint32_t end, double from) const {
    const auto& ops = t_.ranks[r].ops;
    return static_cast<uint32_t>(
        first_entered_after(first, end, from, [&](uint64_t k) { return static_cast<double>(ops[k].t_enter); }));
  }
  // the call that ends a computation at a call site: the rank's first op there names it
  uint32_t first_call(int r, uint32_t callsite) const {
    for (const auto& op : t_.ranks[r].ops)
      if (op.callsite == callsite) return op.call;
    return 0;
  }
  // the steps the critical path may take before it stops: more than any path through the ops takes
  uint64_t path_limit() const {
    uint64_t limit = 16;
    for (const auto& rank : t_.ranks)
      for (const Op& op : rank.ops) limit += 2 + 4 * uint64_t{t_.n_links(op)};
    return limit;
  }

 private:
  const Trace& t_;
  std::vector<ReplayWindow> windows_;
};

// The same from the ranks' op streams, read out of order through OpFrames.
class StreamOps {
 public:
  explicit StreamOps(const std::vector<OpStream>& streams) : frames_(streams) {}
  size_t ranks() const { return frames_.ranks(); }
  const ReplayWindow& window(int r) const { return frames_.stream(r).window(); }
  uint64_t ops(int r) const { return frames_.stream(r).ops(); }
  double enter(int r, uint32_t k) { return static_cast<double>(frames_.op(r, k).t_enter); }
  double exit(int r, uint32_t k) { return static_cast<double>(frames_.op(r, k).t_exit); }
  ComputationKey key(int r, uint32_t k) {
    const OpFrames::Op op = frames_.op(r, k);
    return {r, op.callsite, op.call};
  }
  bool shares(int a, uint32_t k, int b) { return frames_.shares(a, k, b); }
  uint32_t entered_after(int r, uint32_t first, uint32_t end, double from) {
    return static_cast<uint32_t>(frames_.entered_after(r, first, end, from));
  }
  uint32_t first_call(int r, uint32_t callsite) const { return frames_.stream(r).first_call(callsite).value_or(0); }
  uint64_t path_limit() const {
    uint64_t limit = 16;
    for (size_t r = 0; r < frames_.ranks(); r++) limit += 2 * frames_.stream(static_cast<int>(r)).ops() + 4 * frames_.stream(static_cast<int>(r)).links();
    return limit;
  }

  FramesRead read() const {
    FramesRead f;
    f.decoded = frames_.decoded(), f.held_bytes = frames_.held_bytes();
    for (size_t r = 0; r < frames_.ranks(); r++) f.frames += std::max<size_t>(frames_.stream(static_cast<int>(r)).frames(), 1);
    return f;
  }

 private:
  OpFrames frames_;
};

// The recorded timeline of every rank, as the analyses below walk it, its ops read from Ops (TraceOps,
// StreamOps: the same answers).
template <typename Ops>
class Timeline {
 public:
  // The waits' indices by rank in one array at its size, 4 bytes a wait (a vector a rank, grown by
  // doubling, held up to 8), each rank's sorted as its own vector was.
  Timeline(Ops& ops, const std::vector<Wait>& waits) : ops_(ops), waits_(waits), rank_first_(ops.ranks() + 1, 0) {
    for (const Wait& w : waits) rank_first_[static_cast<size_t>(w.rank) + 1]++;
    for (size_t r = 0; r < ops.ranks(); r++) rank_first_[r + 1] += rank_first_[r];
    by_rank_.resize(waits.size());
    std::vector<size_t> next(rank_first_.begin(), rank_first_.end() - 1);
    for (uint32_t i = 0; i < waits.size(); i++) by_rank_[next[static_cast<size_t>(waits[i].rank)]++] = i;
    for (size_t r = 0; r < ops.ranks(); r++)
      std::sort(by_rank_.begin() + static_cast<std::ptrdiff_t>(rank_first_[r]),
                by_rank_.begin() + static_cast<std::ptrdiff_t>(rank_first_[r + 1]),
                [&](uint32_t x, uint32_t y) { return waits_[x].from < waits_[y].from; });
  }

  Ops& ops() { return ops_; }
  const ReplayWindow& window(int r) const { return ops_.window(r); }
  bool replayed(int r) const { return window(r).end > window(r).first; }
  // The last op whose gap counts: MPI_Finalize's, or the last op where there is none.
  uint32_t last_gap_op(int r) const {
    return std::min<uint32_t>(window(r).end, static_cast<uint32_t>(ops_.ops(r)) - 1);
  }
  double enter(int r, uint32_t k) { return ops_.enter(r, k); }
  double exit(int r, uint32_t k) { return ops_.exit(r, k); }
  // The computation before op k: from the previous op's exit (the replay's start for the first) to k's entry.
  std::pair<double, double> gap(int r, uint32_t k) {
    const double from = k > window(r).first ? exit(r, k - 1) : static_cast<double>(window(r).start_ns);
    return {from, std::max(from, enter(r, k))};
  }
  ComputationKey key(int r, uint32_t k) { return ops_.key(r, k); }

  // The computations of rank r within [from, to], clipped: f(op k, ns).
  template <class F>
  void computations_within(int r, double from, double to, F f) {
    if (!replayed(r) || to <= from) return;
    const uint32_t first = window(r).first, last = last_gap_op(r);
    // the first op whose entry is after `from`: its gap is the first that can reach into the interval
    for (uint32_t k = ops_.entered_after(r, first, last + 1, from); k <= last; k++) {
      auto [g0, g1] = gap(r, k);
      if (g0 >= to) break;
      const double ns = std::min(g1, to) - std::max(g0, from);
      if (ns > 0) f(k, ns);
    }
  }

  // The waits of rank r within [from, to), clipped: f(wait index, ns).
  template <class F>
  void waits_within(int r, double from, double to, F f) const {
    const auto first = by_rank_.begin() + static_cast<std::ptrdiff_t>(rank_first_[static_cast<size_t>(r)]);
    const auto end = by_rank_.begin() + static_cast<std::ptrdiff_t>(rank_first_[static_cast<size_t>(r) + 1]);
    auto it = std::lower_bound(first, end, to, [&](uint32_t i, double x) { return waits_[i].from < x; });
    while (it != first) {
      --it;
      const Wait& w = waits_[*it];
      if (w.to <= from) break;
      const double ns = std::min(w.to, to) - std::max(w.from, from);
      if (ns > 0) f(*it, ns);
    }
  }

  // When rank a last synchronised with rank b before its op `before`: the exit of its last call that
  // exchanged a message with b or took part in a collective with it; nullopt if none is found.
  std::optional<double> last_sync(int a, uint32_t before, int b) {
    const uint32_t first = window(a).first;
    int searched = 0;
    for (uint32_t k = before; k > first && searched < kSyncSearch; searched++) {
      --k;
      if (ops_.shares(a, k, b)) return exit(a, k);
    }
    return std::nullopt;
  }

 private:
  Ops& ops_;
  const std::vector<Wait>& waits_;
  std::vector<size_t> rank_first_;  // rank r's waits are by_rank_[rank_first_[r], rank_first_[r + 1])
  std::vector<uint32_t> by_rank_;   // wait indices by rank, each rank's by start
};

// The delay costs, the trace's sites (not its ops) naming the waiting rank's code on the late rank.
template <typename Ops>
DelayCosts delay_costs_of(const Trace& t, Ops& ops, const std::vector<Wait>& waits) {
  DelayCosts d;
  Timeline tl(ops, waits);
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
      waiter_time[t.site(a, tl.key(a, k).callsite)] += ns;
    });
    tl.computations_within(b, t_ref, tb, [&](uint32_t k, double ns) { late_time[tl.key(b, k).callsite] += ns; });
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
    c.where.call = ops.first_call(key.rank, key.callsite);
    d.causes.push_back(c);
  }
  std::sort(d.causes.begin(), d.causes.end(), [](const RootCause& x, const RootCause& y) { return x.total() > y.total(); });
  return d;
}

template <typename Ops>
CriticalPath critical_path_of(Ops& ops, const std::vector<Wait>& waits) {
  CriticalPath p;
  Timeline tl(ops, waits);
  int r = -1;
  for (size_t i = 0; i < ops.ranks(); i++)
    if (tl.replayed(static_cast<int>(i)) && (r < 0 || tl.window(static_cast<int>(i)).stop_ns > tl.window(r).stop_ns))
      r = static_cast<int>(i);
  if (r < 0) return p;
  p.last_rank = r;
  // the wait of each op that ended last (the one its exit waited for; of several, the first found), by
  // rank and op: 4 bytes a wait, where a map of them took about 60 (mpiadvise-synth's halo of 64 x 10^5
  // calls: 2 M waits, the report's peak 90 MB higher in this part)
  const auto op_of = [&](uint32_t i) { return std::pair<int, uint32_t>(static_cast<int>(waits[i].rank), waits[i].op); };
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
  uint64_t steps = 0;
  const uint64_t limit = ops.path_limit();
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

}  // namespace

DelayCosts delay_costs(const Trace& t, const std::vector<Wait>& waits) {
  TraceOps ops(t);
  return delay_costs_of(t, ops, waits);
}

DelayCosts delay_costs(const Trace& t, const std::vector<OpStream>& streams, const std::vector<Wait>& waits,
                       FramesRead* read) {
  if (streams.size() != t.ranks.size())
    throw std::invalid_argument(fmt::format("delay costs: {} ranks' op streams for a trace of {} ranks", streams.size(), t.ranks.size()));
  StreamOps ops(streams);
  DelayCosts d = delay_costs_of(t, ops, waits);
  if (read) *read = ops.read();
  return d;
}

CriticalPath critical_path(const Trace& t, const std::vector<Wait>& waits) {
  TraceOps ops(t);
  return critical_path_of(ops, waits);
}

CriticalPath critical_path(const std::vector<OpStream>& streams, const std::vector<Wait>& waits, FramesRead* read) {
  StreamOps ops(streams);
  CriticalPath p = critical_path_of(ops, waits);
  if (read) *read = ops.read();
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

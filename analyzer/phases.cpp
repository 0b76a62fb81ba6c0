#include "phases.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <unordered_map>

#include <fmt/format.h>

#include "op_stream.hpp"

namespace mpiadvise {

namespace {

// A rank's calls as keys (call site and call), with polynomial prefix hashes: any piece of the sequence
// compared with another in constant time.
class Sequence {
 public:
  Sequence(const RankTrace& rank, const ReplayWindow& w) {
    const size_t n = w.end - w.first;
    keys_.reserve(n), prefix_.assign(n + 1, 0), power_.assign(n + 1, 1);
    for (uint32_t i = w.first; i < w.end; i++) {
      const Op& op = rank.ops[i];
      keys_.push_back((static_cast<uint64_t>(op.callsite) << 32 | op.call) * 0x9E3779B97F4A7C15ull + 1);
    }
    for (size_t i = 0; i < n; i++) {
      prefix_[i + 1] = prefix_[i] * kBase + keys_[i];
      power_[i + 1] = power_[i] * kBase;
    }
  }
  size_t size() const { return keys_.size(); }
  uint64_t key(size_t i) const { return keys_[i]; }
  uint64_t hash(size_t from, size_t to) const { return prefix_[to] - prefix_[from] * power_[to - from]; }

 private:
  static constexpr uint64_t kBase = 1000003;
  std::vector<uint64_t> keys_, prefix_, power_;  // arithmetic modulo 2^64
};

// A loop of one rank: iterations of `len` calls each, the first at `start` (positions in the window)
struct Loop {
  uint32_t start = 0, len = 0;
  size_t count = 0;
  double ns = 0;  // the measured time it covers
  std::vector<uint32_t> opens() const {
    std::vector<uint32_t> out;
    for (size_t k = 0; k <= count; k++) out.push_back(start + static_cast<uint32_t>(k * len));
    return out;
  }
};

// The loops of one rank, the one covering the most time for each count of iterations. A site whose calls
// cut the sequence into equal pieces finds a loop; the loop reaches as far before its first call and
// after its last as the sequence goes on repeating the piece (its body may begin before the site:
// "A A A A B" repeated is found from B too), and counts the whole pieces in that reach.
std::map<size_t, Loop> loops(const Sequence& s, const std::function<double(size_t, size_t)>& ns) {
  std::unordered_map<uint64_t, std::vector<uint32_t>> at;
  for (size_t i = 0; i < s.size(); i++) at[s.key(i)].push_back(static_cast<uint32_t>(i));
  // the most d in [0, most] for which equal(d) holds, equal() holding for every d up to its last
  auto reach = [](size_t most, const auto& equal) {
    size_t lo = 0, hi = most;
    while (lo < hi) {
      const size_t mid = (lo + hi + 1) / 2;
      if (equal(mid)) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  };
  std::map<size_t, Loop> out;
  for (const auto& [key, pos] : at) {
    if (pos.size() < 2) continue;
    const size_t len = pos[1] - pos[0];
    const uint64_t piece = s.hash(pos[0], pos[1]);
    bool even = true;
    for (size_t k = 1; even && k + 1 < pos.size(); k++) even = pos[k + 1] - pos[k] == len && s.hash(pos[k], pos[k + 1]) == piece;
    if (!even) continue;
    const size_t first = pos.front(), last = pos.back();
    const size_t before = reach(std::min(len - 1, first),
                                [&](size_t d) { return s.hash(first - d, first) == s.hash(first - d + len, first + len); });
    const size_t after = reach(std::min(len, s.size() - last),
                               [&](size_t d) { return s.hash(last, last + d) == s.hash(last - len, last - len + d); });
    Loop l;
    l.start = static_cast<uint32_t>(first - before), l.len = static_cast<uint32_t>(len);
    l.count = (last + after - l.start) / len;
    if (l.count < kMinIterations) continue;
    l.ns = ns(l.start, l.start + l.count * len);
    auto [it, fresh] = out.try_emplace(l.count, l);
    if (!fresh && (l.ns > it->second.ns || (l.ns == it->second.ns && l.start < it->second.start))) it->second = l;
  }
  return out;
}

// The computation before op i (the tail after the window's last op for i = w.end)
double gap_before(const RankTrace& rank, const ReplayWindow& w, uint32_t i) {
  const double left = i == w.first ? static_cast<double>(w.start_ns) : static_cast<double>(rank.ops[i - 1].t_exit());
  const double right = i < w.end ? static_cast<double>(rank.ops[i].t_enter) : static_cast<double>(w.stop_ns);
  return std::max(0.0, right - left);
}

// Whether the loop of a rank computes after the call that opens its iterations: the computation after
// its last piece is nearer one before its calls inside the loop than the computation before its first
// call is (the nearest, not a mean or median: loops alternate light and heavy iterations). opens: the
// iterations' first calls and the loop's end.
bool computes_after_opening(const RankTrace& rank, const ReplayWindow& w, const std::vector<uint32_t>& opens) {
  std::vector<double> inside;
  for (size_t k = 1; k + 1 < opens.size(); k++) inside.push_back(gap_before(rank, w, opens[k]));
  if (inside.empty()) return false;
  std::sort(inside.begin(), inside.end());
  auto distance = [&](double g) {
    const auto above = std::lower_bound(inside.begin(), inside.end(), g);
    double d = above != inside.end() ? *above - g : g - inside.back();
    if (above != inside.begin()) d = std::min(d, g - *(above - 1));
    return d;
  };
  return distance(gap_before(rank, w, opens.back())) < distance(gap_before(rank, w, opens.front()));
}

// calls: by rank, its MPI_Pcontrol calls in its window
PhaseMarks pcontrol_phases(const std::vector<std::vector<uint32_t>>& calls, const std::vector<ReplayWindow>& w) {
  PhaseMarks out;
  const size_t P = w.size();
  out.opens.resize(P);
  size_t n = SIZE_MAX;
  int first_rank = -1;
  for (size_t r = 0; r < P; r++) {
    if (w[r].end <= w[r].first) continue;
    if (n == SIZE_MAX) n = calls[r].size(), first_rank = static_cast<int>(r);
    if (calls[r].size() != n) {
      out.note = fmt::format("MPI_Pcontrol is called {} times on rank {} but {} times on rank {}: no phases",
                             calls[r].size(), r, n, first_rank);
      out.opens.assign(P, {});
      return out;
    }
    for (uint32_t i : calls[r]) out.opens[r].push_back(i + 1);
  }
  out.source = PhaseMarks::Source::Pcontrol;
  out.rank0_names = calls[0];
  out.at_entry.assign(P, false);
  return out;
}

// The marks of P ranks, each read when asked: with_rank(r, f) calls f(its ops, its replay window), the
// ops held only for that call. Each rank is read once to find its MPI_Pcontrol calls; where there are
// none, each rank with ops in its window once more to find its loops, and where the ranks share a count
// of iterations once more to find where its chosen loop's iterations start.
template <typename WithRank>
PhaseMarks find_marks(size_t P, WithRank with_rank) {
  std::vector<ReplayWindow> w(P);
  std::vector<std::vector<uint32_t>> calls(P);
  bool pcontrol = false;
  for (size_t r = 0; r < P; r++)
    with_rank(r, [&](const RankTrace& rank, const ReplayWindow& wr) {
      w[r] = wr;
      for (uint32_t i = wr.first; i < wr.end; i++)
        if (rank.ops[i].call == MPA_CALL_Pcontrol) calls[r].push_back(i);
      pcontrol |= !calls[r].empty();
    });
  if (pcontrol) return pcontrol_phases(calls, w);

  PhaseMarks out;
  if (P == 0 || w[0].end <= w[0].first) return out;  // rank 0 names the iterations
  std::vector<std::map<size_t, Loop>> each(P);
  std::map<size_t, std::pair<size_t, double>> ranks_with;  // count -> the ranks with such a loop, their time
  size_t active = 0;
  for (size_t r = 0; r < P; r++) {
    if (w[r].end <= w[r].first) continue;
    active++;
    with_rank(r, [&](const RankTrace& rank, const ReplayWindow& wr) {
      const auto& ops = rank.ops;
      auto left = [&](size_t p) { return p == 0 ? wr.start_ns : ops[wr.first + p - 1].t_exit(); };
      each[r] = loops(Sequence(rank, wr), [&](size_t from, size_t to) {
        return static_cast<double>(left(to)) - static_cast<double>(left(from));
      });
    });
    for (const auto& [count, loop] : each[r]) ranks_with[count].first++, ranks_with[count].second += loop.ns;
  }
  size_t count = 0;
  double most = -1;
  for (const auto& [c, with] : ranks_with)
    if (with.first == active && with.second > most) count = c, most = with.second;  // every rank has it
  if (count == 0) return out;
  out.source = PhaseMarks::Source::Iterations;
  out.iterations = count;
  out.opens.resize(P);
  for (size_t r = 0; r < P; r++) {
    if (w[r].end <= w[r].first) continue;
    for (uint32_t p : each[r].at(count).opens()) out.opens[r].push_back(w[r].first + p);
  }
  out.rank0_names = out.opens[0];
  out.at_entry.assign(P, false);
  for (size_t r = 0; r < P; r++)
    if (w[r].end > w[r].first)
      with_rank(r, [&](const RankTrace& rank, const ReplayWindow& wr) {
        out.at_entry[r] = computes_after_opening(rank, wr, out.opens[r]);
      });
  return out;
}

}  // namespace

PhaseMarks phase_marks(const Trace& t) {
  return find_marks(t.ranks.size(), [&](size_t r, const auto& f) { f(t.ranks[r], replay_window(t.ranks[r])); });
}

PhaseMarks phase_marks(const std::vector<OpStream>& streams) {
  RankTrace rank;  // one rank's ops at a time: their times, calls and call sites (no links)
  StreamOp op;
  return find_marks(streams.size(), [&](size_t r, const auto& f) {
    rank.ops.clear();
    rank.ops.reserve(streams[r].ops());
    for (OpCursor c(streams[r]); c.next(op);) {
      Op& o = rank.ops.emplace_back();
      o.t_enter = op.t_enter, o.duration = op.duration, o.call = op.call, o.callsite = op.callsite;
    }
    f(rank, streams[r].window());
  });
}

uint64_t PhaseMarks::opening_ns(const RankTrace& rank, const ReplayWindow& w, size_t r, size_t k) const {
  return opening_ns(
      w, r, k, [&](uint32_t i) -> uint64_t { return rank.ops[i].t_enter; }, [&](uint32_t i) { return rank.ops[i].t_exit(); });
}

}  // namespace mpiadvise

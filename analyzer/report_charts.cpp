#include "report_charts.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <tuple>
#include <vector>

#include "log_reader.hpp"
#include "loggps.hpp"
#include "message_sides.hpp"
#include "parallel.hpp"

namespace mpiadvise {
namespace {

namespace fs = std::filesystem;

// ---- predicted run time against S --------------------------------------------------------------------------
report::SSweep s_sweep(const Analysis& a, const ReplayOptions& base, std::optional<uint64_t> advised_S,
             std::optional<uint64_t> considered_S) {
  uint64_t largest = 0;
  MessageSides(a.trace).each([&](const MessageSide& x) { largest = std::max(largest, x.fields->bytes); });
  for (const auto& c : a.trace.collectives) largest = std::max(largest, c.bytes);
  uint64_t top = 65536;
  while (top < largest && top < (uint64_t{1} << 40)) top *= 2;
  std::vector<uint64_t> values;
  for (uint64_t v = top; v >= 1024 && values.size() < static_cast<size_t>(kSweepPoints); v /= 2) values.push_back(v);
  const uint64_t current = base.params.S;
  if (current != LogGPSParams::kInfinite) values.push_back(current);
  if (advised_S) values.push_back(*advised_S);
  if (considered_S) values.push_back(*considered_S);
  // each at the S it gets (a raise stops at the most the library reaches: [raised] to_bytes)
  for (uint64_t& v : values) {
    LogGPSParams p = base.params;
    p.move_S(v);
    v = p.S;
  }
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  report::SSweep sweep{{current}, advised_S, considered_S, {}};
  std::vector<ReplayOptions> whatifs(values.size(), base);
  for (size_t i = 0; i < values.size(); i++) whatifs[i].params.move_S(values[i]);
  const std::vector<ReplayResult> replayed = replay_all(a.trace, whatifs);
  for (size_t i = 0; i < values.size(); i++) {
    const uint64_t S = values[i];
    const ReplayResult& r = replayed[i];
    double send_wait = 0;
    for (const auto& rr : r.ranks) send_wait += rr.predicted.send_wait;
    sweep.points.push_back({S, r.predicted_ns, send_wait, r.rendezvous_messages + r.collective_rendezvous_messages});
  }
  return sweep;
}

// ---- messages by size and protocol ---------------------------------------------------------------------------
report::MessageSizes message_sizes(const Analysis& a, const LogGPSParams& p) {
  const LogGPS model(p);
  struct Bin {
    uint64_t eager = 0, rendezvous = 0, eager_bytes = 0, rendezvous_bytes = 0;
  };
  std::map<int, Bin> bins;  // floor(log2(bytes)), -1 for empty messages
  MessageSides(a.trace).each([&](const MessageSide& x) {
    if (!x.send || !x.matched) return;
    const Message& m = *x.fields;
    const int lg = m.bytes == 0 ? -1 : 63 - __builtin_clzll(m.bytes);
    Bin& b = bins[lg];
    if (model.send_waits_for_receive(m.bytes, m.synchronous)) b.rendezvous++, b.rendezvous_bytes += m.bytes;
    else b.eager++, b.eager_bytes += m.bytes;
  });
  report::MessageSizes sizes{{p.S}, {}};
  for (const auto& [lg, b] : bins)
    sizes.bins.push_back({lg, lg < 0 ? 0 : uint64_t{1} << lg, lg < 0 ? 0 : lg >= 63 ? UINT64_MAX : (uint64_t{1} << (lg + 1)) - 1,
                          b.eager, b.rendezvous, b.eager_bytes, b.rendezvous_bytes});
  return sizes;
}

// ---- a window of the run, measured and predicted -----------------------------------------------------------
const char* call_class(OpKind k) {
  switch (k) {
    case OpKind::Send:
    case OpKind::SyncSend:
    case OpKind::PostSend: return "send";
    case OpKind::Recv:
    case OpKind::PostRecv:
    case OpKind::Probe: return "receive";
    case OpKind::SendRecv: return "send-receive";
    case OpKind::Completion:
    case OpKind::Polling: return "wait";
    case OpKind::Collective:
    case OpKind::PostCollective: return "collective";
    case OpKind::Other: break;
  }
  return "other";
}

report::Timeline timeline(const Analysis& a, const ReplayOptions& base) {
  const Trace& t = a.trace;
  const int shown = std::min<int>(t.world_size, kTimelineRanks);
  report::Timeline out;
  out.ranks_shown = shown;
  out.ranks = t.world_size;

  // the calls the replay simulates (between MPI_Init and MPI_Finalize), earliest entry first, up to the cap
  struct Pick {
    uint64_t enter;
    int rank;
    uint32_t op;
  };
  // Ties go by rank and op. Only the cap's worth is held, the latest of them on top of a heap: a list of
  // every call of the shown ranks, sorted, took 16 bytes a call and twice that while it grew (100 MB and
  // the report's peak for 32 ranks of 10^5 calls)
  const auto earlier = [](const Pick& x, const Pick& y) { return std::tie(x.enter, x.rank, x.op) < std::tie(y.enter, y.rank, y.op); };
  std::vector<Pick> picks;
  uint64_t calls = 0;
  for (int k = 0; k < shown && k < static_cast<int>(t.ranks.size()); k++) {
    const ReplayWindow w = replay_window(t.ranks[k]);
    calls += w.end - w.first;
    for (uint32_t i = w.first; i < w.end; i++) {
      const Pick p{t.ranks[k].ops[i].t_enter, k, i};
      if (picks.size() < kTimelineCalls) {
        picks.push_back(p);
        std::push_heap(picks.begin(), picks.end(), earlier);
      } else if (earlier(p, picks.front())) {
        std::pop_heap(picks.begin(), picks.end(), earlier);
        picks.back() = p;
        std::push_heap(picks.begin(), picks.end(), earlier);
      }
    }
  }
  std::sort_heap(picks.begin(), picks.end(), earlier);
  const bool truncated = calls > kTimelineCalls;
  if (picks.empty()) return out;
  // the replay records the spans of those calls alone: each rank's up to its last one shown
  ReplayOptions o = base;
  o.record_spans = true;
  o.span_ops.assign(static_cast<size_t>(shown), 0);
  for (const Pick& p : picks) o.span_ops[p.rank] = std::max(o.span_ops[p.rank], p.op + 1);
  const ReplayResult r = replay(t, o);
  // (the replay runs every call of its window: none is left out, unless a spread replay's result lost one)
  std::erase_if(picks, [&](const Pick& p) { return std::isnan(r.spans.at(p.rank).at(p.op).enter); });
  if (picks.empty()) return out;
  const uint64_t origin = picks.front().enter;  // time 0: the first call shown (MPI_Init's end, near enough)

  // measured times from the first shown call, predicted ones on the replay's clock moved to the same zero
  const double shift = static_cast<double>(static_cast<int64_t>(r.origin_ns - origin));
  auto since = [&](uint64_t v) { return static_cast<double>(static_cast<int64_t>(v - origin)); };
  std::map<std::pair<int, uint32_t>, size_t> index;  // (rank, op) -> position in calls
  std::map<std::pair<int, uint32_t>, size_t> site_index;
  double end = 0;
  for (const Pick& p : picks) {
    const Op& op = t.op(p.rank, p.op);
    const auto& sp = r.spans[p.rank][p.op];
    auto [it, fresh] = site_index.try_emplace({p.rank, op.callsite}, out.sites.size());
    if (fresh) out.sites.push_back(a.where(p.rank, op.callsite));
    index[{p.rank, p.op}] = out.calls.size();
    const double me = since(op.t_enter), mx = since(std::max(op.t_exit(), op.t_enter));
    const double pe = shift + sp.enter, px = shift + std::max(sp.enter, sp.exit);
    end = std::max({end, mx, px});
    out.calls.push_back({p.rank, call_name(static_cast<int>(op.call)), call_class(op.kind), it->second, {me, mx}, {pe, px}});
  }
  // each message from its send to the op that completed its receive (its DoneRecv link), both shown; in
  // the order of the trace's messages
  std::vector<std::pair<uint32_t, report::TimelineMessage>> shown_messages;
  for (const Pick& p : picks) {
    const OpLinks links = t.links_of(t.op(p.rank, p.op));
    for (uint32_t k = 0; k < links.size(); k++) {
      const Link l = links[k];
      if (l.kind != Link::DoneRecv || l.id >= t.messages.size()) continue;
      const Message& m = t.messages[l.id];
      if (!m.matched()) continue;
      auto s = index.find({m.src, m.send_op});
      if (s == index.end()) continue;
      shown_messages.push_back({l.id, {s->second, index.at({p.rank, p.op}), m.bytes}});
    }
  }
  std::sort(shown_messages.begin(), shown_messages.end(), [](const auto& x, const auto& y) { return x.first < y.first; });
  for (const auto& [id, m] : shown_messages) out.messages.push_back(m);
  out.end_ns = end;
  out.truncated = truncated;
  return out;
}

}  // namespace

std::string source_line_text(const std::string& file, int line, const std::string& module) {
  if (file.empty() || line <= 0) return {};
  std::vector<fs::path> candidates = {fs::path(file)};
  if (fs::path(file).is_relative() && !module.empty()) {
    fs::path dir = fs::path(module).parent_path();
    for (int up = 0; up < 4 && !dir.empty() && dir != dir.root_path(); up++, dir = dir.parent_path())
      candidates.push_back(dir / file);
  }
  for (const auto& c : candidates) {
    std::error_code ec;
    if (!fs::is_regular_file(c, ec)) continue;
    std::ifstream in(c);
    std::string text;
    for (int n = 1; std::getline(in, text); n++)
      if (n == line) {
        const size_t first = text.find_first_not_of(" \t");
        return first == std::string::npos ? std::string() : text.substr(first, 400);
      }
  }
  return {};
}

report::Charts report_charts(const Analysis& a, const ReplayOptions& base, std::optional<uint64_t> advised_S,
                             std::optional<uint64_t> considered_S) {
  return {s_sweep(a, base, advised_S, considered_S), message_sizes(a, base.params), timeline(a, base)};
}

}  // namespace mpiadvise

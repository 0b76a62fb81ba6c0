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

// The run's messages at their posts: from the op streams where the replays walk them, else the trace's.
MessageSides sides_of(const Analysis& a, const ReplayOptions& base) {
  return base.streams ? MessageSides(*base.streams) : MessageSides(a.trace);
}

// ---- predicted run time against S --------------------------------------------------------------------------
report::SSweep s_sweep(const Analysis& a, const ReplayOptions& base, std::optional<uint64_t> advised_S,
             std::optional<uint64_t> considered_S) {
  uint64_t largest = 0;
  sides_of(a, base).each([&](const MessageSide& x) { largest = std::max(largest, x.fields->bytes); });
  if (!base.streams) {
    for (const auto& c : a.trace.collectives) largest = std::max(largest, c.bytes);
  } else {
    std::set<const InstanceTable*> tables;  // the streams of encode_all share one
    for (const OpStream& st : *base.streams)
      if (tables.insert(&st.instance_table()).second)
        for (uint32_t k = 0; k < st.instance_table().size(); k++) largest = std::max(largest, st.instance_table()[k].bytes);
  }
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
  sweep.points.resize(values.size());
  replay_each(a.trace, whatifs, [&](size_t i, const ReplayResult& r) {
    double send_wait = 0;
    for (const auto& rr : r.ranks) send_wait += rr.predicted.send_wait;
    sweep.points[i] = {values[i], r.predicted_ns, send_wait, r.rendezvous_messages + r.collective_rendezvous_messages};
  });
  return sweep;
}

// ---- messages by size and protocol ---------------------------------------------------------------------------
report::MessageSizes message_sizes(const Analysis& a, const ReplayOptions& base) {
  const LogGPSParams& p = base.params;
  const LogGPS model(p);
  struct Bin {
    uint64_t eager = 0, rendezvous = 0, eager_bytes = 0, rendezvous_bytes = 0;
  };
  std::map<int, Bin> bins;  // floor(log2(bytes)), -1 for empty messages
  sides_of(a, base).each([&](const MessageSide& x) {
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

// An op of a shown rank as the timeline reads it: its times, site and call, the matched messages it sent
// (id, bytes) and the messages whose receive it completed (ids).
struct ShownOp {
  uint64_t t_enter = 0, t_exit = 0;
  uint32_t callsite = 0;
  uint8_t call = 0;
  OpKind kind = OpKind::Other;
  std::vector<std::pair<uint32_t, uint64_t>> sent;
  std::vector<uint32_t> received;
};

// read(rank, first, end, f): f(i, op) for each op i of [first, end) of the rank, in order (a ShownOp).
template <typename Read>
report::Timeline timeline_of(const Analysis& a, const Trace& t, const ReplayOptions& base, const std::vector<ReplayWindow>& windows,
                             Read read) {
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
  for (int k = 0; k < shown && k < static_cast<int>(windows.size()); k++) {
    const ReplayWindow& w = windows[k];
    if (w.end <= w.first) continue;
    calls += w.end - w.first;
    read(k, w.first, w.end, [&](uint32_t i, const ShownOp& op) {
      const Pick p{op.t_enter, k, i};
      if (picks.size() < kTimelineCalls) {
        picks.push_back(p);
        std::push_heap(picks.begin(), picks.end(), earlier);
      } else if (earlier(p, picks.front())) {
        std::pop_heap(picks.begin(), picks.end(), earlier);
        picks.back() = p;
        std::push_heap(picks.begin(), picks.end(), earlier);
      }
    });
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

  // measured times from the first shown call, predicted ones on the replay's clock moved to the same zero;
  // the shown ops read again, each rank's from its window's first to its last shown
  const double shift = static_cast<double>(static_cast<int64_t>(r.origin_ns - origin));
  auto since = [&](uint64_t v) { return static_cast<double>(static_cast<int64_t>(v - origin)); };
  std::map<std::pair<int, uint32_t>, size_t> index;  // (rank, op) -> position in calls
  for (const Pick& p : picks) index.emplace(std::pair{p.rank, p.op}, index.size());
  std::map<std::pair<int, uint32_t>, size_t> site_index;
  out.calls.resize(picks.size());
  std::map<uint32_t, std::pair<size_t, uint64_t>> sent;  // a matched message sent by a shown call: it, bytes
  std::vector<std::pair<uint32_t, size_t>> received;      // a message whose receive a shown call completed
  std::vector<std::pair<size_t, uint32_t>> sites;         // (position, rank's site), named in the order shown
  double end = 0;
  for (int k = 0; k < shown && k < static_cast<int>(windows.size()); k++) {
    if (o.span_ops[k] <= windows[k].first) continue;
    read(k, windows[k].first, o.span_ops[k], [&](uint32_t i, const ShownOp& op) {
      const auto at = index.find({k, i});
      if (at == index.end()) return;
      const size_t c = at->second;
      const auto& sp = r.spans[k][i];
      const double me = since(op.t_enter), mx = since(std::max(op.t_exit, op.t_enter));
      const double pe = shift + sp.enter, px = shift + std::max(sp.enter, sp.exit);
      end = std::max({end, mx, px});
      out.calls[c] = {k, call_name(static_cast<int>(op.call)), call_class(op.kind), 0, {me, mx}, {pe, px}};
      sites.emplace_back(c, op.callsite);
      for (const auto& [id, bytes] : op.sent) sent[id] = {c, bytes};
      for (const uint32_t id : op.received) received.emplace_back(id, c);
    });
  }
  std::sort(sites.begin(), sites.end());
  for (const auto& [c, callsite] : sites) {
    const int rank = out.calls[c].rank;
    auto [it, fresh] = site_index.try_emplace({rank, callsite}, out.sites.size());
    if (fresh) out.sites.push_back(a.where(rank, callsite));
    out.calls[c].site = it->second;
  }
  // each message from its send to the op that completed its receive (its DoneRecv link), both shown; in
  // the order of the trace's messages
  std::sort(received.begin(), received.end());
  for (const auto& [id, c] : received)
    if (const auto s = sent.find(id); s != sent.end()) out.messages.push_back({s->second.first, c, s->second.second});
  out.end_ns = end;
  out.truncated = truncated;
  return out;
}

report::Timeline timeline(const Analysis& a, const ReplayOptions& base) {
  const Trace& t = a.trace;
  const size_t shown = static_cast<size_t>(std::min<int>(t.world_size, kTimelineRanks));
  std::vector<ReplayWindow> windows;
  ShownOp shown_op;
  auto links_of = [](ShownOp& x, OpLinks links, auto sent_bytes) {
    x.sent.clear(), x.received.clear();
    for (uint32_t j = 0; j < links.size(); j++) {
      const Link l = links[j];
      if (l.kind == Link::PostSend) {
        if (const auto bytes = sent_bytes(l.id)) x.sent.emplace_back(l.id, *bytes);
      } else if (l.kind == Link::DoneRecv) {
        x.received.push_back(l.id);
      }
    }
  };
  if (!base.streams) {
    for (size_t k = 0; k < shown && k < t.ranks.size(); k++) windows.push_back(replay_window(t.ranks[k]));
    return timeline_of(a, t, base, windows, [&](int k, uint32_t first, uint32_t end, auto&& f) {
      for (uint32_t i = first; i < end; i++) {
        const Op& op = t.op(k, i);
        shown_op.t_enter = op.t_enter, shown_op.t_exit = op.t_exit();
        shown_op.callsite = op.callsite, shown_op.call = static_cast<uint8_t>(op.call), shown_op.kind = op.kind;
        links_of(shown_op, t.links_of(op), [&](uint32_t id) -> std::optional<uint64_t> {
          if (id >= t.messages.size() || !t.messages[id].matched()) return std::nullopt;
          return t.messages[id].bytes;
        });
        f(i, std::as_const(shown_op));
      }
    });
  }
  const std::vector<OpStream>& streams = *base.streams;
  for (size_t k = 0; k < shown && k < streams.size(); k++) windows.push_back(streams[k].window());
  StreamOp op;
  return timeline_of(a, t, base, windows, [&](int k, uint32_t first, uint32_t end, auto&& f) {
    OpCursor c(streams[static_cast<size_t>(k)]);
    c.seek(first);
    for (uint32_t i = first; i < end && c.next(op); i++) {
      shown_op.t_enter = op.t_enter, shown_op.t_exit = op.t_exit();
      shown_op.callsite = op.callsite, shown_op.call = op.call, shown_op.kind = op.kind;
      links_of(shown_op, op.links(), [&](uint32_t id) -> std::optional<uint64_t> {
        for (const StreamOp::Posted& p : op.posted)
          if (p.id == id) return p.m->sent && p.m->answered ? std::optional<uint64_t>(p.m->fields.bytes) : std::nullopt;
        return std::nullopt;
      });
      f(i, std::as_const(shown_op));
    }
  });
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
  return {s_sweep(a, base, advised_S, considered_S), message_sizes(a, base), timeline(a, base)};
}

}  // namespace mpiadvise

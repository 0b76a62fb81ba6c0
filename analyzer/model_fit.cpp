#include "model_fit.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <map>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

#include "calibration.hpp"
#include "message_sides.hpp"
#include "op_stream.hpp"

namespace mpiadvise {

const char* miss_reason_name(MissReason r) {
  switch (r) {
    case MissReason::ParameterSet: return "parameter_set";
    case MissReason::Polling: return "polling";
    case MissReason::SlowCalls: return "slow_calls";
    case MissReason::Collectives: return "collectives";
    case MissReason::SlowMessages: return "slow_messages";
    case MissReason::Oversubscribed: return "oversubscribed";
    case MissReason::FastMessages: return "fast_messages";
  }
  return "?";
}

namespace {

// The ops of a rank the replay covers: MPI_Init's exit to MPI_Finalize's entry.
std::pair<size_t, size_t> window(const RankTrace& r) {
  size_t first = 0, end = r.ops.size();
  if (end && (r.ops.front().call == MPA_CALL_Init || r.ops.front().call == MPA_CALL_Init_thread)) first = 1;
  if (end > first && r.ops[end - 1].call == MPA_CALL_Finalize) end--;
  return {first, end};
}

double duration(const Op& op) { return static_cast<double>(op.t_exit() - op.t_enter); }

// A call the model never makes wait for another rank: posting a non-blocking operation, or a blocking
// send at or below S. Such a call far slower than the others at its site lost its time to something the
// model does not see (the rank descheduled, memory registration, a library-internal wait).
bool never_waits(const Trace& t, const Op& op, const LogGPSParams& p) {
  if (op.kind == OpKind::PostSend || op.kind == OpKind::PostRecv) return true;
  if (op.kind != OpKind::Send) return false;
  const OpLinks links = t.links_of(op);
  for (uint32_t k = 0; k < links.size(); k++) {
    const Link l = links[k];
    if (l.kind == Link::PostSend && l.id != kNone && t.messages[l.id].bytes > p.S) return false;
  }
  return true;
}

}  // namespace

std::optional<RunSpeed> run_speed(const Trace& trace, const RunFacts& facts, const LogGPSParams& params) {
  return run_speed(trace, nullptr, facts, params);
}

std::optional<RunSpeed> run_speed(const Trace& trace, const std::shared_ptr<const std::vector<OpStream>>& streams,
                                  const RunFacts& facts, const LogGPSParams& params) {
  if (!params.speeds_ratio || trace.ranks.empty()) return std::nullopt;
  auto error_at = [&](double f) {
    ReplayOptions o;
    o.params = params.scaled(f);
    o.streams = streams;
    replay_library(facts, o);
    return replay(trace, o).error();
  };
  RunSpeed best;
  best.error_set = best.error_run = error_at(1);
  if (std::abs(best.error_set) <= kExpectedModelError) return std::nullopt;
  for (double f : params.speeds) {
    if (std::abs(f - 1) < 0.05) continue;  // the set's own speed (its pooled runs lie within 15%)
    const double e = error_at(f);
    if (std::abs(e) < std::abs(best.error_run)) best.factor = f, best.faster = f < 1, best.error_run = e;
  }
  if (best.factor == 1) return std::nullopt;
  return best;
}

namespace {

// Each size's median round trip over the rounds of `parts` (one probe or both); none if a size has none.
std::optional<std::vector<double>> medians(const std::vector<const std::vector<std::vector<double>>*>& parts,
                                           size_t sizes) {
  std::vector<double> m;
  for (size_t i = 0; i < sizes; i++) {
    std::vector<double> rounds;
    for (const auto* part : parts)
      if (i < part->size()) rounds.insert(rounds.end(), (*part)[i].begin(), (*part)[i].end());
    if (rounds.empty()) return std::nullopt;
    m.push_back(median(rounds));
  }
  return m;
}

// The run's messages by size, as the probe's sizes weigh them: for each power-of-two band of sizes the
// run sent, its mean size and the time the set gives its messages (count x round trip / 2).
// each_message(add): add(bytes) for every message of the run, once.
template <class EachMessage>
std::vector<std::pair<double, double>> message_weights(const EachMessage& each_message, const LogGPS& model) {
  std::array<uint64_t, 65> count{}, bytes{};
  each_message([&](uint64_t b) {
    const int band = b ? 64 - __builtin_clzll(b) : 0;
    count[band]++, bytes[band] += b;
  });
  std::vector<std::pair<double, double>> w;
  for (size_t b = 0; b < count.size(); b++) {
    if (!count[b]) continue;
    const double k = static_cast<double>(bytes[b]) / static_cast<double>(count[b]);
    w.emplace_back(k, static_cast<double>(count[b]) * model.round_trip(static_cast<uint64_t>(k), 0) / 2);
  }
  return w;
}

// The factor for the run: the probe's ratios weighted by where the run's messages spend the set's time;
// their geometric mean where the run sends no point-to-point message.
std::optional<double> weighted_factor(const std::optional<std::vector<double>>& measured, const ProbeSpeed& s,
                                      const std::vector<std::pair<double, double>>& weights) {
  if (!measured) return std::nullopt;
  std::vector<double> log_ratio;
  for (size_t i = 0; i < measured->size(); i++) {
    if ((*measured)[i] <= 0 || s.model_ns[i] <= 0) return std::nullopt;
    log_ratio.push_back(std::log((*measured)[i] / s.model_ns[i]));
  }
  double sum = 0, total = 0;
  for (const auto& [k, w] : weights) sum += w * log_speed_at(k, s.bytes, log_ratio), total += w;
  if (total <= 0) {
    for (double l : log_ratio) sum += l;
    total = static_cast<double>(log_ratio.size());
  }
  return std::exp(sum / total);
}

template <class EachMessage>
std::optional<ProbeSpeed> probe_speed_of(const MessageProbe& probe, const LogGPSParams& params,
                                         const EachMessage& each_message) {
  if (probe.bytes.empty() || !std::is_sorted(probe.bytes.begin(), probe.bytes.end())) return std::nullopt;
  ProbeSpeed s;
  s.bytes = probe.bytes;
  s.partner = probe.partner;
  const LogGPS model(params);
  for (uint64_t k : probe.bytes) s.model_ns.push_back(model.round_trip(k, 0));
  std::vector<const std::vector<std::vector<double>>*> both;
  if (!probe.init.empty()) both.push_back(&probe.init);
  if (!probe.finalize.empty()) both.push_back(&probe.finalize);
  const auto measured = medians(both, s.bytes.size());
  if (both.empty() || !measured) return std::nullopt;
  s.measured_ns = *measured;
  const auto weights = message_weights(each_message, model);
  const auto f = weighted_factor(measured, s, weights);
  if (!f) return std::nullopt;
  s.factor = *f;
  if (!probe.init.empty()) s.init = weighted_factor(medians({&probe.init}, s.bytes.size()), s, weights);
  if (!probe.finalize.empty()) s.finalize = weighted_factor(medians({&probe.finalize}, s.bytes.size()), s, weights);
  return s;
}

}  // namespace

std::optional<ProbeSpeed> probe_speed(const MessageProbe& probe, const LogGPSParams& params, const Trace& trace) {
  return probe_speed_of(probe, params, [&](const auto& add) {
    for (const Message& m : trace.messages) add(m.bytes);
  });
}

std::optional<ProbeSpeed> probe_speed(const MessageProbe& probe, const LogGPSParams& params,
                                      const std::vector<OpStream>& streams) {
  return probe_speed_of(probe, params, [&](const auto& add) {
    MessageSides(streams).each([&](const MessageSide& x) {
      if (!x.send && x.matched) return;  // a matched message's receive: its send counts it
      add(x.fields->bytes);
    });
  });
}

// The share of the bytes sent that were sent again unchanged (Message::cached). The set prices them at its
// [resend] factors, or as data just written where it has none.
namespace {

// Every message once: at its send, or at its receive where it has no send (a receive no send matched).
double resend_share_of(const MessageSides& sides) {
  double sent = 0, cached = 0;
  sides.each([&](const MessageSide& x) {
    if (!x.send && x.matched) return;  // a matched message's receive: its send counts it
    sent += static_cast<double>(x.fields->bytes);
    if (x.fields->cached) cached += static_cast<double>(x.fields->bytes);
  });
  return sent > 0 ? cached / sent : 0;
}

}  // namespace

double cached_resend_share(const Trace& t) { return resend_share_of(MessageSides(t)); }
double cached_resend_share(const std::vector<OpStream>& streams) { return resend_share_of(MessageSides(streams)); }

namespace {

// An op of a rank's replay window as the fit weighs it.
struct FitOp {
  OpKind kind = OpKind::Other;
  uint32_t call = 0, callsite = 0;
  double duration = 0;
  bool messages = false;     // it completes point-to-point messages (a DoneSend or DoneRecv link)
  bool never_waits = false;  // never_waits
};

// each_op(r, f): f(FitOp) for each op of the window of t.ranks[r], in order; resent_share(): cached_resend_share.
template <typename EachOp, typename ResentShare>
ModelFit fit_of(const Trace& t, const RunFacts& facts, const LogGPSParams& params, const ReplayResult& baseline,
                EachOp each_op, ResentShare resent_share) {
  ModelFit fit;
  fit.error = baseline.error();
  fit.explained = std::fabs(fit.error) <= kExpectedModelError;
  double ranks_ns = 0;
  for (const auto& rr : baseline.ranks) {
    ranks_ns += rr.measured_ns;
    if (rr.measured_ns <= 0) continue;
    double e = (rr.predicted_ns - rr.measured_ns) / rr.measured_ns;
    if (std::fabs(e) > kExpectedModelError) fit.ranks.push_back({rr.rank, rr.measured_ns, rr.predicted_ns, e});
  }
  std::sort(fit.ranks.begin(), fit.ranks.end(),
            [](const auto& a, const auto& b) { return std::fabs(a.error) > std::fabs(b.error); });
  if (ranks_ns <= 0) return fit;

  // where: the call sites whose time inside MPI the replay misses most, summed over the ranks
  struct Site {
    int rank = -1;
    uint32_t callsite = 0, call = 0;
    double measured = 0, predicted = 0;
    bool messages = false;  // sends or completes point-to-point messages
  };
  std::map<SiteKey, Site> sites;
  double polling_ns = 0, collectives_ns = 0;
  std::map<std::pair<int, uint32_t>, double> polling_at;
  // slow calls: above 50 times the median of their site and 100 us; the excess over the median counts.
  // The durations of the calls that never wait are held for one rank at a time (its sites are its own).
  double slow_ns = 0, worst_ns = 0;
  std::pair<int, uint32_t> worst{-1, 0};
  double worst_median = 0, worst_longest = 0;
  std::map<uint32_t, std::vector<double>> quiet_calls;  // by call site of the rank
  for (size_t r = 0; r < t.ranks.size(); r++) {
    const RankTrace& rt = t.ranks[r];
    quiet_calls.clear();
    each_op(r, [&](const FitOp& op) {
      Site& s = sites[t.site(rt.rank, op.callsite)];
      if (s.rank < 0) s.rank = rt.rank, s.callsite = op.callsite, s.call = op.call;
      s.measured += op.duration;
      s.messages |= op.messages;
      if (op.kind == OpKind::Polling) polling_ns += op.duration, polling_at[{rt.rank, op.callsite}] += op.duration;
      if (op.kind == OpKind::Collective || op.kind == OpKind::PostCollective) collectives_ns += op.duration;
      if (op.never_waits) quiet_calls[op.callsite].push_back(op.duration);
    });
    for (auto& [callsite, ds] : quiet_calls) {
      if (ds.size() < 5) continue;
      std::vector<double> sorted = ds;
      std::nth_element(sorted.begin(), sorted.begin() + static_cast<long>(sorted.size() / 2), sorted.end());
      const double median = sorted[sorted.size() / 2];
      double excess = 0, longest = 0;
      for (double d : ds)
        if (d > std::max(50 * median, 100e3)) excess += d - median, longest = std::max(longest, d);
      slow_ns += excess;
      if (excess > worst_ns) worst_ns = excess, worst = {rt.rank, callsite}, worst_median = median, worst_longest = longest;
    }
  }
  for (const auto& sr : baseline.sites) {
    Site& s = sites[t.site(sr.rank, sr.callsite)];
    if (s.rank < 0) s.rank = sr.rank, s.callsite = sr.callsite, s.call = sr.call;
    s.predicted += sr.predicted.total();
  }
  double messages_measured = 0, messages_predicted = 0;
  for (const auto& [key, s] : sites)
    if (s.messages) messages_measured += s.measured, messages_predicted += s.predicted;
  std::vector<Site> ordered;
  for (const auto& [key, s] : sites)
    if (std::fabs(s.measured - s.predicted) > 0.01 * ranks_ns) ordered.push_back(s);
  std::sort(ordered.begin(), ordered.end(), [](const Site& a, const Site& b) {
    return std::fabs(a.measured - a.predicted) > std::fabs(b.measured - b.predicted);
  });
  for (size_t i = 0; i < ordered.size() && i < 3; i++)
    fit.sites.push_back({ordered[i].rank, ordered[i].callsite, ordered[i].call, ordered[i].measured, ordered[i].predicted});

  // why: what in the trace the model cannot follow
  const bool other_library = !params.library.empty() && !facts.library.empty() && params.library != facts.library;
  const bool other_transport = !params.transport.empty() && !facts.transport.empty() && facts.transport != "unknown" &&
                               params.transport != facts.transport;
  if (other_library || other_transport)
    fit.suspects.push_back({MissReason::ParameterSet, 1.0,
                            fmt::format("the parameter set {} was measured for {} over {}; this run is {} over {} "
                                        "(mpiadvise calibrate measures a set for it)",
                                        params.name, params.library.empty() ? "an unnamed library" : params.library,
                                        params.transport.empty() ? "an unnamed transport" : params.transport,
                                        facts.library.empty() ? "an unknown library" : facts.library,
                                        facts.transport.empty() ? "an unknown transport" : facts.transport)});
  {  // ranks sharing cores: one that waits in MPI polls on a core another needs to compute
    std::map<std::string, std::pair<int, uint32_t>> hosts;  // host -> ranks, CPUs
    for (const auto& r : t.ranks) {
      auto& h = hosts[r.hostname];
      h.first++;
      h.second = std::max(h.second, r.host_cpus);
    }
    for (const auto& [host, h] : hosts)
      if (h.second > 0 && static_cast<uint32_t>(h.first) > h.second) {
        fit.suspects.push_back({MissReason::Oversubscribed, 1.0,
                                fmt::format("{} ranks share the {} CPUs of {}: a rank waiting in MPI polls on a core "
                                            "another needs to compute, which the model (a core for each rank) does "
                                            "not price",
                                            h.first, h.second, host.empty() ? "their host" : host)});
        break;
      }
  }
  if (polling_ns > 0.02 * ranks_ns) {
    auto most = std::max_element(polling_at.begin(), polling_at.end(),
                                 [](const auto& a, const auto& b) { return a.second < b.second; });
    fit.suspects.push_back({MissReason::Polling, polling_ns / ranks_ns,
                            fmt::format("{:.1f}% of the ranks' time is spent polling (runs of MPI_Test or MPI_Iprobe "
                                        "that complete nothing), replayed as measured",
                                        100 * polling_ns / ranks_ns),
                            most->first.first, most->first.second});
  }
  if (slow_ns > 0.01 * ranks_ns)
    fit.suspects.push_back({MissReason::SlowCalls, slow_ns / ranks_ns,
                            fmt::format("calls that never wait for another rank (non-blocking posts, sends at or "
                                        "below S) took up to {:.0f} us against a median of {:.1f} us at their site: "
                                        "{:.1f}% of the ranks' time; the rank was descheduled, or the library waited "
                                        "for something the log does not show",
                                        worst_longest / 1e3, worst_median / 1e3, 100 * slow_ns / ranks_ns),
                            worst.first, worst.second});
  if (collectives_ns > 0.10 * ranks_ns)
    fit.suspects.push_back({MissReason::Collectives, collectives_ns / ranks_ns,
                            fmt::format("{:.1f}% of the ranks' time is inside collectives, where the replay follows "
                                        "the library least closely",
                                        100 * collectives_ns / ranks_ns)});
  // what the other suspects leave of the time the message calls took beyond their prediction
  double explained_ns = 0;
  for (const auto& s : fit.suspects)
    if (s.reason == MissReason::Polling || s.reason == MissReason::SlowCalls) explained_ns += s.share * ranks_ns;
  const double slow_messages_ns = messages_measured - messages_predicted - explained_ns;
  if (slow_messages_ns > kExpectedModelError / 2 * ranks_ns)
    fit.suspects.push_back({MissReason::SlowMessages, slow_messages_ns / ranks_ns,
                            fmt::format("the calls that send and receive messages took {:.1f}% of the ranks' time "
                                        "more than the parameter set prices them ({:.1f} ms measured, {:.1f} ms "
                                        "predicted): the machine was loaded (ranks descheduled inside MPI), or the "
                                        "set does not fit it (mpiadvise calibrate measures one)",
                                        100 * slow_messages_ns / ranks_ns, messages_measured / 1e6, messages_predicted / 1e6)});
  // the other way: a prediction too long, where the set prices the messages above what they took
  const double fast_messages_ns = messages_predicted - messages_measured;
  if (fast_messages_ns > kExpectedModelError / 2 * ranks_ns)
    fit.suspects.push_back({MissReason::FastMessages, fast_messages_ns / ranks_ns,
                            fmt::format("the calls that send and receive messages took {:.1f}% of the ranks' time "
                                        "less than the parameter set prices them ({:.1f} ms measured, {:.1f} ms "
                                        "predicted): the set was measured on a slower or loaded machine, or a "
                                        "disturbed calibration run threw it off (mpiadvise calibrate on a quiet "
                                        "machine measures one; compare several)",
                                        100 * fast_messages_ns / ranks_ns, messages_measured / 1e6, messages_predicted / 1e6)});
  for (auto& s : fit.suspects)
    if (s.reason == MissReason::FastMessages)
      if (const double resent = resent_share(); resent >= 0.10)
        s.detail += fmt::format("; {:.0f}% of the bytes sent were sent again unchanged (the buffer, bytes and type of "
                                "the sender's previous send, too little computation between to have rewritten them at "
                                "{:.0f} bytes a nanosecond): "
                                "over shared memory the receiver copies data it has just read, faster than the data "
                                "just written the set was calibrated with{}",
                                100 * resent, t.rewrite_bytes_per_ns,
                                params.resend_buffered || params.resend_rendezvous
                                    ? fmt::format(", which the replay prices at {:.2f} times what data just written costs "
                                                  "copied through the library's buffers and {:.2f} times by its rendezvous "
                                                  "([resend])",
                                                  params.resend_buffered.value_or(1), params.resend_rendezvous.value_or(1))
                                    : std::string(", which this set does not price (no [resend] table: calibrate measures it)"));
  if (params.speeds_ratio)
    for (auto& s : fit.suspects)
      if (s.reason == MissReason::SlowMessages || s.reason == MissReason::FastMessages)
        s.detail += fmt::format("; this set's calibration found the machine's messages at two speeds, the slower {:.1f} "
                                "times the faster and {:.0f}% of what it measured: a run at another speed than the set's is "
                                "off by that",
                                *params.speeds_ratio, 100 * params.slow_share);
  std::stable_sort(fit.suspects.begin(), fit.suspects.end(),
                   [](const auto& a, const auto& b) { return a.share > b.share; });
  return fit;
}

}  // namespace

ModelFit assess_fit(const Trace& t, const RunFacts& facts, const LogGPSParams& params, const ReplayResult& baseline) {
  return fit_of(
      t, facts, params, baseline,
      [&](size_t r, auto&& f) {
        const RankTrace& rt = t.ranks[r];
        auto [first, end] = window(rt);
        FitOp x;
        for (size_t i = first; i < end; i++) {
          const Op& op = rt.ops[i];
          x.kind = op.kind, x.call = op.call, x.callsite = op.callsite, x.duration = duration(op);
          const OpLinks links = t.links_of(op);
          x.messages = false;
          for (uint32_t k = 0; k < links.size(); k++) x.messages |= links[k].kind == Link::DoneSend || links[k].kind == Link::DoneRecv;
          x.never_waits = never_waits(t, op, params);
          f(std::as_const(x));
        }
      },
      [&] { return cached_resend_share(t); });
}

ModelFit assess_fit(const Trace& t, const std::vector<OpStream>& streams, const RunFacts& facts, const LogGPSParams& params,
                    const ReplayResult& baseline) {
  if (streams.size() != t.ranks.size())
    throw std::invalid_argument(fmt::format("{} ranks' op streams for a trace of {} ranks", streams.size(), t.ranks.size()));
  StreamOp op;
  return fit_of(
      t, facts, params, baseline,
      [&](size_t r, auto&& f) {
        const OpStream& stream = streams[r];
        const ReplayWindow& w = stream.window();
        OpCursor c(stream);
        c.seek(w.first);
        FitOp x;
        for (uint32_t i = w.first; i < w.end && c.next(op); i++) {
          x.kind = op.kind, x.call = op.call, x.callsite = op.callsite, x.duration = static_cast<double>(op.duration);
          const OpLinks links = op.links();
          x.messages = false;
          bool large_send = false;  // a blocking send above S: it may wait
          for (uint32_t k = 0; k < links.size(); k++) {
            const Link l = links[k];
            x.messages |= l.kind == Link::DoneSend || l.kind == Link::DoneRecv;
            if (l.kind == Link::PostSend && l.id != kNone)
              for (const StreamOp::Posted& p : op.posted)
                if (p.id == l.id && p.m->fields.bytes > params.S) large_send = true;
          }
          x.never_waits = op.kind == OpKind::PostSend || op.kind == OpKind::PostRecv || (op.kind == OpKind::Send && !large_send);
          f(std::as_const(x));
        }
      },
      [&] { return cached_resend_share(streams); });
}

}  // namespace mpiadvise

#include "efficiency.hpp"

#include <algorithm>
#include <numeric>
#include <stdexcept>

#include <fmt/format.h>

#include "op_stream.hpp"

namespace mpiadvise {

LogGPSParams ideal_network(const LogGPSParams& p) {
  LogGPSParams ideal = p;
  ideal.name = p.name + " (ideal network)";
  ideal.L = ideal.o = ideal.R = ideal.D = 0;
  ideal.o_r = 0.0;
  ideal.Oss = ideal.Ors = ideal.Osl = ideal.Orl = ideal.Gs = ideal.Gl = 0;
  ideal.Oss_raised = ideal.Ors_raised = 0;
  ideal.raised_from.reset();
  ideal.raised_to.reset();
  ideal.R_large = ideal.Osl_large = ideal.Orl_large = 0;
  ideal.large_from.reset();
  ideal.S = ideal.s = LogGPSParams::kInfinite;
  ideal.eager_buffer_bytes.reset();
  ideal.eager_buffer_messages.reset();
  ideal.eager_header_bytes = 0;
  ideal.reduce_ns_per_byte.reset();  // a reduction inside a collective is the library's, not the program's
  ideal.persistent_saving.reset();
  ideal.isend_ns = ideal.irecv_ns = 0.0;
  return ideal;
}

void EfficiencyFactors::compute() {
  load_balance = max_computation_ns > 0 ? mean_computation_ns / max_computation_ns : 1.0;
  communication = run_ns > 0 ? std::min(1.0, max_computation_ns / run_ns) : 1.0;
  parallel = load_balance * communication;
  transfer = model_ns > 0 ? std::min(1.0, ideal_ns / model_ns) : 1.0;
  serialisation = transfer > 0 ? std::min(1.0, communication / transfer) : 1.0;
}

EfficiencyFactors Efficiency::Phase::factors() const {
  EfficiencyFactors f;
  f.run_ns = run_ns, f.model_ns = model_ns, f.ideal_ns = ideal_ns;
  f.mean_computation_ns = mean_computation_ns, f.max_computation_ns = max_computation_ns;
  f.compute();
  return f;
}

namespace {

// The times of each phase, from the measured run and both replays' marks, a phase at a time across the
// ranks: each rank keeps its place in its ops (the trace's, or its stream's where options.streams has
// them: a cursor a rank, which holds the frame it unpacks where the streams are packed), so that of the
// phases nothing is held but the one at hand. A phase opens where a computation starts or ends, so each
// computation lies in one phase.
void phases(const Trace& t, const ReplayOptions& o, const PhaseMarks& pm, const ReplayResult& model,
            const ReplayResult& ideal, Efficiency* e) {
  e->phases_note = pm.note;
  if (pm.source == PhaseMarks::Source::None) return;
  const auto* streams = o.streams.get();
  const size_t P = streams ? streams->size() : t.ranks.size();
  std::vector<ReplayWindow> w(P);
  std::vector<size_t> ranks;  // those with a window
  for (size_t r = 0; r < P; r++) {
    w[r] = streams ? (*streams)[r].window() : replay_window(t.ranks[r]);
    if (w[r].end > w[r].first) ranks.push_back(r);
  }
  if (ranks.empty()) return;
  const size_t n = pm.opens[ranks.front()].size();
  for (const size_t r : ranks)
    if (pm.opens[r].size() != n || model.marks[r].size() != n || ideal.marks[r].size() != n) return;
  struct Span {
    double lo = 1e300, hi = -1e300;
    void add(double a, double b) { lo = std::min(lo, a), hi = std::max(hi, b); }
    double length() const { return hi > lo ? hi - lo : 0; }
  };
  std::vector<RankTimes> ops;  // a phase's computations and bounds read an op and the one before it
  ops.reserve(P);
  for (size_t r = 0; r < P; r++) streams ? ops.emplace_back((*streams)[r]) : ops.emplace_back(t.ranks[r].ops);
  // where opening k (1-based) of rank r starts, on the measured clock
  auto opening_ns = [&](size_t r, size_t k) {
    return pm.opening_ns(
        w[r], r, k, [&](uint32_t i) { return ops[r].enter(i); }, [&](uint32_t i) { return ops[r].exit(i); });
  };
  // the op whose computation before it (the tail for the window's end) each rank counts next, and where
  // its phase opened
  std::vector<uint32_t> next(P);
  std::vector<double> start(P);
  for (const size_t r : ranks) next[r] = w[r].first, start[r] = static_cast<double>(w[r].start_ns);
  e->phases_from = pm.source;
  e->phases.reserve(n + 1);
  e->iterations = pm.iterations;
  const uint64_t rank0_ops = streams ? (P ? (*streams)[0].ops() : 0) : t.ranks[0].ops.size();
  for (size_t k = 0; k <= n; k++) {
    Span measured, modelled, on_ideal;
    double sum_c = 0, max_c = 0;
    for (const size_t r : ranks) {
      const ReplayWindow& wr = w[r];
      auto sim = [&](const ReplayResult& res, size_t at) {
        return at == 0 ? 0.0 : at > n ? res.ranks[r].predicted_ns : res.marks[r][at - 1];
      };
      modelled.add(sim(model, k), sim(model, k + 1));
      on_ideal.add(sim(ideal, k), sim(ideal, k + 1));
      // the computation before op i is in the last phase opened at an op up to i (before i where phases
      // open at the op's entry)
      const auto& opens = pm.opens[r];
      const bool at_entry = r < pm.at_entry.size() && pm.at_entry[r];
      double c = 0;
      uint32_t i = next[r];
      for (; i <= wr.end && (k == n || (at_entry ? opens[k] >= i : opens[k] > i)); i++) {
        const double left = i == wr.first ? static_cast<double>(wr.start_ns) : static_cast<double>(ops[r].exit(i - 1));
        const double right = i < wr.end ? static_cast<double>(ops[r].enter(i)) : static_cast<double>(wr.stop_ns);
        c += std::max(0.0, right - left) * o.compute_factor;
      }
      next[r] = i;
      sum_c += c, max_c = std::max(max_c, c);
      // its end, where the next opens: read once the ops before it are
      const double stop = k == n ? static_cast<double>(wr.stop_ns) : static_cast<double>(opening_ns(r, k + 1));
      measured.add(start[r], stop);
      start[r] = stop;
    }
    Efficiency::Phase ph;
    ph.run_ns = measured.length(), ph.model_ns = modelled.length(), ph.ideal_ns = on_ideal.length();
    ph.mean_computation_ns = sum_c / static_cast<double>(ranks.size()), ph.max_computation_ns = max_c;
    ph.opened_by_rank0_op = k == 0 || pm.rank0_names.size() < k || pm.rank0_names[k - 1] >= rank0_ops
                                ? -1
                                : static_cast<int>(pm.rank0_names[k - 1]);
    e->phases.push_back(ph);
  }
}

}  // namespace

Efficiency efficiency(const Trace& trace, const ReplayOptions& options, const ReplayResult& baseline,
                      const PhaseMarks& marks) {
  Efficiency e;
  e.run_ns = baseline.measured_ns;
  e.model_ns = baseline.predicted_ns;
  for (const auto& rr : baseline.ranks) e.computation_ns.push_back(rr.predicted.computation);
  if (e.computation_ns.empty() || e.run_ns <= 0) return e;
  const auto slowest = std::max_element(e.computation_ns.begin(), e.computation_ns.end());
  e.max_computation_ns = *slowest;
  e.slowest_rank = baseline.ranks[static_cast<size_t>(slowest - e.computation_ns.begin())].rank;
  e.mean_computation_ns = std::accumulate(e.computation_ns.begin(), e.computation_ns.end(), 0.0) /
                          static_cast<double>(e.computation_ns.size());
  ReplayOptions ideal = options;
  ideal.params = ideal_network(options.params);
  const ReplayResult on_ideal = replay(trace, ideal);
  e.ideal_ns = on_ideal.predicted_ns;
  e.compute();
  if (baseline.mode == ReplayMode::Simulate) phases(trace, options, marks, baseline, on_ideal, &e);
  return e;
}

}  // namespace mpiadvise

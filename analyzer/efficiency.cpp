#include "efficiency.hpp"

#include <algorithm>
#include <numeric>

#include <fmt/format.h>

namespace mpiadvise {

LogGPSParams ideal_network(const LogGPSParams& p) {
  LogGPSParams ideal = p;
  ideal.name = p.name + " (ideal network)";
  ideal.L = ideal.o = ideal.R = 0;
  ideal.Oss = ideal.Ors = ideal.Osl = ideal.Orl = ideal.Gs = ideal.Gl = 0;
  ideal.Oss_raised = ideal.Ors_raised = 0;
  ideal.raised_from.reset();
  ideal.S = ideal.s = LogGPSParams::kInfinite;
  ideal.eager_buffer_bytes.reset();
  ideal.eager_buffer_messages.reset();
  ideal.eager_header_bytes = 0;
  ideal.reduce_ns_per_byte.reset();  // a reduction inside a collective is the library's, not the program's
  ideal.persistent_saving.reset();
  return ideal;
}

namespace {

struct Factors {
  double load_balance = 1, communication = 1, parallel = 1, transfer = 1, serialisation = 1;
};

Factors factors(double mean_c, double max_c, double run_ns, double model_ns, double ideal_ns) {
  Factors f;
  f.load_balance = max_c > 0 ? mean_c / max_c : 1.0;
  f.communication = run_ns > 0 ? std::min(1.0, max_c / run_ns) : 1.0;
  f.parallel = f.load_balance * f.communication;
  f.transfer = model_ns > 0 ? std::min(1.0, ideal_ns / model_ns) : 1.0;
  f.serialisation = f.transfer > 0 ? std::min(1.0, f.communication / f.transfer) : 1.0;
  return f;
}

// The phases MPI_Pcontrol marks, from the measured times and both replays' marks.
void phases(const Trace& t, const ReplayOptions& o, const ReplayResult& model, const ReplayResult& ideal,
            Efficiency* e) {
  const size_t P = t.ranks.size();
  std::vector<std::vector<uint32_t>> marks(P);  // Pcontrol op indices, by rank
  std::vector<ReplayWindow> w(P);
  bool any = false;
  for (size_t r = 0; r < P; r++) {
    w[r] = replay_window(t.ranks[r]);
    for (uint32_t i = w[r].first; i < w[r].end; i++)
      if (t.ranks[r].ops[i].call == MPA_CALL_Pcontrol) marks[r].push_back(i);
    any |= !marks[r].empty();
  }
  if (!any) return;
  size_t n = SIZE_MAX;
  int first_rank = -1;
  for (size_t r = 0; r < P; r++) {
    if (w[r].end <= w[r].first) continue;
    if (n == SIZE_MAX) n = marks[r].size(), first_rank = static_cast<int>(r);
    if (marks[r].size() != n || model.marks[r].size() != n || ideal.marks[r].size() != n) {
      e->phases_note = fmt::format("MPI_Pcontrol is called {} times on rank {} but {} times on rank {}: no phases",
                                   marks[r].size(), r, n, first_rank);
      return;
    }
  }
  if (n == SIZE_MAX) return;
  for (size_t k = 0; k <= n; k++) {
    double m0 = 1e300, m1 = -1e300, p0 = 1e300, p1 = -1e300, i0 = 1e300, i1 = -1e300, sum_c = 0, max_c = 0;
    size_t ranks = 0;
    for (size_t r = 0; r < P; r++) {
      if (w[r].end <= w[r].first) continue;
      const auto& ops = t.ranks[r].ops;
      const uint32_t first = k == 0 ? w[r].first : marks[r][k - 1];
      const uint32_t end = k == n ? w[r].end : marks[r][k];
      const double start = k == 0 ? static_cast<double>(w[r].start_ns) : static_cast<double>(ops[first].t_enter);
      const double stop = k == n ? static_cast<double>(w[r].stop_ns) : static_cast<double>(ops[end].t_enter);
      // computation: the gaps before each op of the phase, and the tail to its end
      double c = 0, prev = k == 0 ? start : static_cast<double>(ops[first].t_exit);
      for (uint32_t i = k == 0 ? first : first + 1; i < end; i++) {
        c += std::max(0.0, static_cast<double>(ops[i].t_enter) - prev);
        prev = static_cast<double>(ops[i].t_exit);
      }
      c += std::max(0.0, stop - prev);
      c *= o.compute_factor;
      sum_c += c, max_c = std::max(max_c, c), ranks++;
      m0 = std::min(m0, start), m1 = std::max(m1, stop);
      auto sim = [&](const ReplayResult& res, bool at_end) {
        return at_end ? (k == n ? res.ranks[r].predicted_ns : res.marks[r][k]) : (k == 0 ? 0.0 : res.marks[r][k - 1]);
      };
      p0 = std::min(p0, sim(model, false)), p1 = std::max(p1, sim(model, true));
      i0 = std::min(i0, sim(ideal, false)), i1 = std::max(i1, sim(ideal, true));
    }
    if (ranks == 0) return;
    Efficiency::Phase ph;
    ph.run_ns = m1 - m0, ph.model_ns = p1 - p0, ph.ideal_ns = i1 - i0;
    ph.mean_computation_ns = sum_c / static_cast<double>(ranks), ph.max_computation_ns = max_c;
    const Factors f = factors(ph.mean_computation_ns, ph.max_computation_ns, ph.run_ns, ph.model_ns, ph.ideal_ns);
    ph.load_balance = f.load_balance, ph.communication = f.communication, ph.parallel = f.parallel;
    ph.transfer = f.transfer, ph.serialisation = f.serialisation;
    ph.opened_by_rank0_op = k == 0 || marks[0].empty() ? -1 : static_cast<int>(marks[0][k - 1]);
    e->phases.push_back(ph);
  }
}

}  // namespace

Efficiency efficiency(const Trace& trace, const ReplayOptions& options, const ReplayResult& baseline) {
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
  const Factors f = factors(e.mean_computation_ns, e.max_computation_ns, e.run_ns, e.model_ns, e.ideal_ns);
  e.load_balance = f.load_balance, e.communication = f.communication, e.parallel = f.parallel;
  e.transfer = f.transfer, e.serialisation = f.serialisation;
  if (baseline.mode == ReplayMode::Simulate) phases(trace, options, baseline, on_ideal, &e);
  return e;
}

}  // namespace mpiadvise

#include "efficiency.hpp"

#include <algorithm>
#include <numeric>

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
  e.ideal_ns = replay(trace, ideal).predicted_ns;
  e.load_balance = e.max_computation_ns > 0 ? e.mean_computation_ns / e.max_computation_ns : 1.0;
  e.communication = std::min(1.0, e.max_computation_ns / e.run_ns);
  e.parallel = e.load_balance * e.communication;
  e.transfer = e.model_ns > 0 ? std::min(1.0, e.ideal_ns / e.model_ns) : 1.0;
  e.serialisation = e.transfer > 0 ? std::min(1.0, e.communication / e.transfer) : 1.0;
  return e;
}

}  // namespace mpiadvise

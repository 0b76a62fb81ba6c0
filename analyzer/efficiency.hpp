// Efficiency factors as the POP methodology defines them (POP Centre of Excellence, "POP standard
// metrics for parallel performance analysis"; Dimemas-based analyses at BSC): the parallel efficiency of
// a run is its load balance times its communication efficiency, and the communication efficiency is its
// serialisation efficiency times its transfer efficiency. With C_r the useful computation of rank r (its
// time outside MPI) and T the run time:
//   load balance           LB   = mean C_r / max C_r
//   communication          CommE = max C_r / T
//   parallel               PE   = LB x CommE = mean C_r / T
//   transfer               TE   = T_ideal / T_model: the replay on an ideal network (L, o', G, every
//                                 per-byte cost and R at 0, S infinite, no eager buffer limit) against
//                                 the replay with the run's own parameters, so that the model's error on
//                                 the run is not counted as transfer
//   serialisation          SerE = CommE / TE: what dependences between ranks cost when moving data is free
#pragma once

#include <string>
#include <vector>

#include "phases.hpp"
#include "replay.hpp"

namespace mpiadvise {

// The factors of a stretch of the run (the whole run, or a phase), and the times they come from.
struct EfficiencyFactors {
  double load_balance = 0, communication = 0, parallel = 0, transfer = 0, serialisation = 0;
  double run_ns = 0;    // T: measured (the replay window's, for the whole run)
  double model_ns = 0;  // the replay with the run's parameters
  double ideal_ns = 0;  // the replay on the ideal network
  double mean_computation_ns = 0, max_computation_ns = 0;
  // the factors from the times above
  void compute();
};

struct Efficiency : EfficiencyFactors {
  // The same factors for each phase (analyzer/phases.hpp: those MPI_Pcontrol marks, or the iterations
  // of the main loop): phase 0 from each rank's start to its first opening, phase k from its k-th to
  // its next (its end for the last); its time is from the first rank's start to the last rank's end,
  // measured, replayed and replayed on the ideal network.
  // A phase holds its times alone (48 bytes, where its factors and times were 96 and their sums 64 more
  // while they were gathered): a loop of collectives alone has a phase for every call.
  struct Phase {
    double run_ns = 0, model_ns = 0, ideal_ns = 0, mean_computation_ns = 0, max_computation_ns = 0;
    int opened_by_rank0_op = -1;  // the op of rank 0 that names its opening; -1: the run's start
    EfficiencyFactors factors() const;
  };
  std::vector<Phase> phases;
  PhaseMarks::Source phases_from = PhaseMarks::Source::None;
  size_t iterations = 0;  // Iterations: phases 1 to this are the main loop's
  // why there are no phases though the program called MPI_Pcontrol (ranks calling it unequally), or ""
  std::string phases_note;
  int slowest_rank = -1;      // the rank with the most computation
  std::vector<double> computation_ns;  // C_r, by rank
};

// The factors of a run from its replay with the run's parameters (baseline) and one more replay on the
// ideal network; options: those of the baseline (its program transformations and compute factor apply
// to both), whose marks must be phases.opens. Where options.streams has the ranks' op streams, the ideal
// replay and the phases' walk read them, not the trace's ops: the same factors, to the bit. The marks'
// openings on each rank must not go back (phase_marks makes them so); walking streams, a rank's that do
// is a std::logic_error.
Efficiency efficiency(const Trace& trace, const ReplayOptions& options, const ReplayResult& baseline,
                      const PhaseMarks& phases);

// The ideal network of the transfer efficiency: nothing costs time but computation.
LogGPSParams ideal_network(const LogGPSParams& p);

}  // namespace mpiadvise

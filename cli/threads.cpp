// --threads: how many of the analysis's independent replays run at once, and of the ranks' logs are read
// at once (analyzer/parallel.hpp).
#include "commands.hpp"
#include "parallel.hpp"

namespace mpiadvise::cli {

void add_threads_option(CLI::App* sub) {
  sub->add_option_function<unsigned>(
         "--threads", [](const unsigned& n) { set_analysis_threads(n); },
         "Replays run at once: the what-ifs of the advice, the sweeps, the gate's noise; and ranks' logs read at "
         "once (default: the CPUs this process may use; the result is the same for any number)")
      ->check(CLI::Range(1u, 1024u));
}

}  // namespace mpiadvise::cli

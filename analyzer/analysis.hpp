// One traced job loaded for analysis: its logs, the matched trace, the facts of the run, the parameter
// set chosen for it, the measured wait states and a symbolizer per rank. What replay, whatif and report
// all start from.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "log_reader.hpp"
#include "model_fit.hpp"
#include "run_facts.hpp"
#include "symbolizer.hpp"
#include "trace.hpp"
#include "waits.hpp"

namespace mpiadvise {

// The part of a run to analyse: the calls entered before until_s seconds after the run's start
// (run_start_ns: MPI_Init's return on rank 0, or on the lowest rank with a log), as if every rank had
// stopped there (--until), and at or after from_s seconds after it, as if every rank had started there
// (--from); neither: all of it.
struct RunPart {
  std::optional<double> until_s, from_s;
};
// The part in words, for a line of output: "the run's first 2 s (--until)", "the run from 10 s after its
// start to 12 s (--from, --until)", "the run from 10 s after its start on (--from)"; "the whole run".
std::string part_text(const std::optional<double>& from_s, const std::optional<double>& until_s);

struct Analysis {
  std::string dir;
  std::unique_ptr<JobLog> job;
  Trace trace;
  RunFacts facts;
  ChosenParams chosen;
  // The chosen set at its own speed, scaled to nothing the run shows: what the gate replays, so that a
  // machine's speed in one run against another's is no change of the program (mpiadvise-gate(1)).
  LogGPSParams set_params;
  // The run's message speed from the round trips the tracer timed inside it, against the chosen set
  // (before scaling it to them); none where the log has no probe.
  std::optional<ProbeSpeed> probe;
  bool probe_applied = false;  // the chosen set is scaled to it
  // every measured wait (find_waits) added up by rank and call site; the waits themselves, 40 bytes each
  // and about one for every four calls of a halo, are found again where a report needs them
  WaitStates measured;
  std::vector<std::unique_ptr<Symbolizer>> symbols;  // per rank
  // The ranks' ops as op streams (OpStream::encode_all, packed), where the report reads them in place of
  // the trace's ops, links, messages and collective instances (docs/streaming.md); null: the trace's.
  std::shared_ptr<const std::vector<OpStream>> streams;
  // --until and --from: the seconds after the run's start the part analysed ends and starts at, where they
  // left calls out, and about how many calls the logs hold in all (RankLog::calls_estimate)
  std::optional<double> until_s, from_s;
  uint64_t calls_in_logs = 0;
  // --until and --from as given, whether or not they left calls out: the part of the run the gate's
  // figures are of (RunFigures::until_s and from_s; a run shorter than S is its own first S seconds)
  RunPart part;

  // Where a rank's call site is in the source (module+offset without debug information).
  SourceLocation locate(int rank, uint32_t callsite) const;
  std::string where(int rank, uint32_t callsite) const;  // its text, "?" when unknown
  // The call sites of every rank at FILE:LINE (FILE may be a trailing part of the path).
  std::set<SiteKey> sites_at(const std::string& file, int line) const;
};

// Throws LogError (bad logs) or ParamError (bad parameter set); params: a name, a file, or "" to choose;
// debug_dirs: where to look first for separate debug files (see debug_dirs() in symbolizer.hpp).
// Refuses, with one line naming the figures and what helps, logs whose analysis cannot fit in the memory
// this process may still take (the system's, its cgroup's, its address-space limit), as the least of the
// trace held whole and held packed (analyse's low_memory); where it fits but not with analysis_threads()
// replays at once, lowers them to as many as fit, and says so on stderr.
// until_ns, from_ns: only the calls entered before until_ns and at or after from_ns are to be analysed
// (build_trace). analyse() checks so before it reads the logs, and again once it has read them, where
// they hold collectives, with these counted.
void check_memory(const JobLog& job, uint64_t until_ns = UINT64_MAX, uint64_t from_ns = 0);
// The memory the cgroups of this process still let it take (UINT64_MAX: none limits it): of its cgroup
// and each above it (under cgroup v2, or v1's memory controller, as self lists them: /proc/self/cgroup)
// that has a limit, the least limit less use, the use without its inactive files (page cache, such as
// the logs just read, that the kernel reclaims before it refuses memory). mount: where the cgroups are.
uint64_t cgroup_memory_left(const std::filesystem::path& mount = "/sys/fs/cgroup",
                            const std::filesystem::path& self = "/proc/self/cgroup");
// What check_memory throws: logs whose analysis cannot fit, said in one line.
class MemoryError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The speed a replay goes at: by default the run's own (its round trips, else the [machine] speeds); at_set:
// the chosen set's own (--at-set-speed); factor: the set's times multiplied by it (--speed F), e.g. the
// speed another run of the same program went at, to set a what-if beside that run.
struct ReplaySpeed {
  bool at_set = false;
  std::optional<double> factor;
};


// low_memory: the ranks' ops held packed while the logs are read and matched (build_trace's pack_ops), and
// the trace taken into packed op streams (OpStream::take_all, Analysis::streams) as soon as it is read;
// the analysis from there (the run's speed, the measured waits) and every stage after it read the
// streams, with the same results to the bit (mpiadvise report --low-memory). Not with the analysis spread
// over processes. Without it, where the memory check finds the calls fit only held so (before the reading,
// or once it has counted their collectives), analyse() holds them so, and says so in a line on stderr.
Analysis analyse(const std::string& dir, const std::string& params, const std::vector<std::string>& debug_dirs = {},
                 const ReplaySpeed& speed = {}, const RunPart& part = {}, bool low_memory = false);

// Call sites with a function but no line (a program stripped of its debug information, or whose
// debug files are not found) keyed as one site per function (module and function): their calls and
// waits add up where a reader can act on them, instead of scattering over return addresses.
void group_sites_by_function(Analysis& a);

}  // namespace mpiadvise

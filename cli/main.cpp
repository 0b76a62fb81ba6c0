// mpiadvise: trace MPI jobs with libmpiadvise and analyse their logs.
#include <fmt/format.h>

#include <malloc.h>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <map>
#include <new>

#include "commands.hpp"
#include "log_reader.hpp"
#include "replay_peers.hpp"
#include "spread.hpp"

#ifndef MPIADVISE_VERSION
#define MPIADVISE_VERSION "0.1.0"
#endif

int main(int argc, char** argv) {
  using namespace mpiadvise;
  // The analysis makes and frees arrays of megabytes phase after phase. glibc raises its mmap threshold to
  // each mmapped block freed (up to 32 MiB), and blocks below it then come from the heap, where what is
  // freed stays resident beneath what is not. A fixed threshold maps each, given back when freed:
  // mpiadvise report of mpiadvise-synth's halo of 64 ranks x 10^5 calls peaked at 354 MiB where it took
  // 371, --low-memory at 140 where 145 (docs/streaming.md, session 88). MALLOC_MMAP_THRESHOLD_, where set,
  // is the user's.
  if (!std::getenv("MALLOC_MMAP_THRESHOLD_")) mallopt(M_MMAP_THRESHOLD, 128 * 1024);
#ifdef MPIADVISE_WITH_MPI
  // the command built against an MPI (lib/mpiadvise/MPI/mpiadvise-mpi): each process replays a share of
  // the ranks (cli/spread.hpp)
  cli::SpreadSession spread(&argc, &argv);
#else
  if (const int status = cli::spread_over_processes(argc, argv); status >= 0) return status;
#endif
  CLI::App app{"mpiadvise: an MPI performance advisor (LogGPS)", "mpiadvise"};
  app.set_version_flag("--version", std::string("mpiadvise ") + MPIADVISE_VERSION);
  app.require_subcommand(1);
  std::map<CLI::App*, std::function<int()>> actions;
  auto add = [&](std::function<int()> action) { actions[app.get_subcommands({}).back()] = std::move(action); };
  add(cli::add_dump(app));
  add(cli::add_run(app));
  add(cli::add_replay(app));
  add(cli::add_whatif(app));
  add(cli::add_calibrate(app));
  add(cli::add_report(app));
  add(cli::add_gate(app));
  add(cli::add_export(app));
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // one line: the error, then where the options are listed
    std::fprintf(stderr, "mpiadvise: %s (mpiadvise --help lists the commands and their options)\n", e.what());
    return cli::kUsage;
  }
  try {
    for (auto& [sub, action] : actions)
      if (sub->parsed()) {
        if (replay_peers() && !cli::spreads(sub->get_name()))
          throw CLI::ValidationError(sub->get_name(), "mpiadvise " + sub->get_name() +
                                                          " does not run spread over processes: start it without an MPI launcher");
        return action();
      }
  } catch (const CLI::ValidationError& e) {
    return cli::failed(e.what(), cli::kUsage);
  } catch (const LogError& e) {
    return cli::failed(e.what(), cli::kUsage);
  } catch (const std::bad_alloc&) {
    return cli::failed("out of memory: the analysis of these logs needs more than this machine gave it; analyse them "
                       "where there is more, analyse a part of the run (--until S: its first S seconds; --from S: from S "
                       "seconds on; both: the part between), or trace only the part that matters (MPI_Pcontrol(0) "
                       "pauses tracing, MPI_Pcontrol(1) resumes it)",
                       cli::kUsage);
  } catch (const std::exception& e) {
    return cli::failed(e.what(), cli::kUsage);
  }
  return cli::kUsage;
}

// What `mpiadvise dump` summarises: events and bytes per call, time span, call sites, run facts.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "log_reader.hpp"
#include "symbolizer.hpp"

namespace mpiadvise {

struct CallTotals {
  uint64_t events = 0;     // events in the log (a run of unsuccessful tests is one)
  uint64_t calls = 0;      // MPI calls they stand for
  uint64_t bytes = 0;      // sent
  uint64_t bytes2 = 0;     // received (posted)
  uint64_t time_ns = 0;    // inside the calls
};

struct CallSiteTotals {
  int rank = 0;
  uint32_t id = 0;
  std::string call;        // the MPI call made there (the most frequent)
  uint64_t calls = 0;
  uint64_t time_ns = 0;
  SourceLocation where;
};

struct RankFacts {
  int rank = 0;
  std::string hostname;
  bool complete = false;   // reached MPI_Finalize
  uint64_t events = 0;
  uint64_t file_bytes = 0;
  uint64_t first_ns = 0, last_ns = 0;
};

struct JobSummary {
  std::string dir;
  int world_size = 0;
  std::string mpi_library;
  std::string thread_level;
  std::map<std::string, std::string> eager_cvars;  // MPI_T control variables, from rank 0's header
  std::vector<RankFacts> ranks;
  std::map<std::string, CallTotals> calls;         // by MPI call name
  std::vector<CallSiteTotals> callsites;           // by time inside, longest first
  uint64_t events = 0, calls_total = 0;
  uint64_t first_ns = 0, last_ns = 0;
  uint64_t log_bytes = 0;
  std::vector<ReadProblem> problems;
};

// Reads every event once. rank: only that rank; debug_dirs: where to look first for separate debug files.
JobSummary summarize(const JobLog& job, std::optional<int> rank = std::nullopt,
                     const std::vector<std::string>& debug_dirs = {});

}  // namespace mpiadvise

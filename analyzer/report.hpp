// `mpiadvise report`: the analysis of one traced job as one value (report_types.hpp; as JSON, schema
// mpiadvise-report/1, see mpiadvise-report(1)): summary, per-rank measured and predicted times, hot
// spots, per-site modelled figures, and advice each with its predicted saving. The text, Markdown and
// HTML forms present it, and `mpiadvise gate` compares the figures of two.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "analysis.hpp"
#include "report_types.hpp"

namespace mpiadvise {

inline constexpr const char* kReportSchema = "mpiadvise-report/1";
// The main loop's iterations are listed one by one in the JSON up to this many (summarised always).
inline constexpr size_t kIterationsListed = 1000;

struct ReportOptions {
  size_t top = 10;        // hot spots listed, and candidate sites replayed per kind of advice
  bool gate_figures = true;  // the "gate" object: what mpiadvise gate compares (17 more replays)
  // the "charts" object (report_charts.hpp: an S sweep, messages by size, a timeline window; a replay
  // per point of the sweep and one more) and each hot spot's source line where the file is readable
  bool charts = false;
  // every replay's computation gaps times this (ReplayOptions::compute_factor): the run replayed, and its
  // advice weighed, as if it had computed at another run's speed
  double compute_factor = 1.0;
};

// The report of an analysed run: the analysis, the advisors' what-if replays, every figure the renderers
// show. Its JSON form is build_report's (report_types.hpp).
report::Report make_report(const Analysis& a, const ReportOptions& options);
nlohmann::json build_report(const Analysis& a, const ReportOptions& options);

// A parameter set as the JSON of report and replay: name and values, "inf" for an infinite s or S.
nlohmann::json params_json(const LogGPSParams& p);

// Checks that j is a report this version reads; throws std::runtime_error naming what is wrong.
void check_report(const nlohmann::json& j, const std::string& where);

}  // namespace mpiadvise

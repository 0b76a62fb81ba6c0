// The mpiadvise command: one function per subcommand, each registered on the CLI11 app.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "report_types.hpp"

namespace mpiadvise {
struct ReplaySpeed;  // analysis.hpp
struct RunPart;
}

namespace mpiadvise::cli {

// Exit status of every command: 0 done, 1 done but the input had problems, 2 usage or input error.
inline constexpr int kOk = 0, kProblems = 1, kUsage = 2;

// Each adds its subcommand to app and returns the action to run when it was chosen.
std::function<int()> add_dump(CLI::App& app);
std::function<int()> add_run(CLI::App& app);
std::function<int()> add_replay(CLI::App& app);
std::function<int()> add_whatif(CLI::App& app);
std::function<int()> add_calibrate(CLI::App& app);
std::function<int()> add_report(CLI::App& app);
std::function<int()> add_gate(CLI::App& app);
std::function<int()> add_export(CLI::App& app);

// The report's JSON as one self-contained HTML page with its charts (report_html.cpp).
std::string render_html(const report::Report& report);

// --debug-dir DIR, on every command that names call sites: where to look first for separate debug files.
void add_debug_dir_option(CLI::App* sub, std::vector<std::string>& dirs);
// --at-set-speed and --speed F, on the commands that replay a run: the parameter set at its own speed, or
// at F times its times, not scaled to the round trips the tracer timed inside the run (analyse)
void add_speed_options(CLI::App* sub, ReplaySpeed& speed);
// --until S, on the commands that analyse one run: only its first S seconds (RunPart)
void add_part_option(CLI::App* sub, RunPart& part);
// CLI11 check of a factor from 0.01 to 100 (--speed, report's --compute-factor): "" or what is wrong with v
std::string factor_check(const std::string& v);
// --threads N: replays run at once (set_analysis_threads)
void add_threads_option(CLI::App* sub);
// The directories given with --debug-dir, then those of MPIADVISE_DEBUG_PATH; throws naming a bad one.
std::vector<std::string> debug_search_dirs(const std::vector<std::string>& given);

}  // namespace mpiadvise::cli

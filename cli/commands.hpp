// The mpiadvise command: one function per subcommand, each registered on the CLI11 app.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>

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

}  // namespace mpiadvise::cli

// mpiadvise export DIR --format perfetto|otf2 -o OUT: a traced run as a timeline for Perfetto or an OTF2
// viewer, measured and (--predicted) as the LogGPS replay has it.
#include <fmt/format.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "analysis.hpp"
#include "commands.hpp"
#include "export.hpp"
#include "replay.hpp"

namespace mpiadvise::cli {
namespace {

namespace fs = std::filesystem;

struct ExportCommand {
  std::string dir, format, out, params;
  bool predicted = false;
  ReplaySpeed speed;
  RunPart part;
  std::vector<std::string> debug_dirs;
};

int run_export(const ExportCommand& c) {
  // refuse a bad output before the logs are read: an OTF2 archive goes into a new or empty directory
  std::error_code ec;
  if (c.format == "otf2") {
    if (c.out == "-") throw CLI::ValidationError("-o", "an OTF2 archive is a directory: name one, not -");
    if (fs::exists(c.out, ec) && (!fs::is_directory(c.out, ec) || !fs::is_empty(c.out, ec)))
      throw CLI::ValidationError("-o", c.out + " exists and is not an empty directory (OTF2 writes a new archive there)");
  }
  Analysis a = analyse(c.dir, c.params, debug_search_dirs(c.debug_dirs), c.speed, c.part);
  int status = kOk;
  for (const auto& p : a.trace.problems) {
    std::fprintf(stderr, "mpiadvise: %s\n", p.text().c_str());
    if (p.corrupt) status = kProblems;
  }
  ReplayResult predicted;
  if (c.predicted) {
    ReplayOptions o;
    o.params = a.chosen.params;
    replay_library(a.facts, o);
    o.record_spans = true;
    predicted = replay(a.trace, o);
  }
  const ReplayResult* with = c.predicted ? &predicted : nullptr;
  ExportCounts n;
  if (c.format == "perfetto") {
    if (c.out == "-") {
      n = write_trace_events(a, with, std::cout);
      std::cout.flush();
      if (!std::cout) throw std::runtime_error("writing the trace to standard output failed");
    } else {
      std::ofstream f(c.out, std::ios::binary | std::ios::trunc);
      if (!f) throw CLI::ValidationError("-o", c.out + ": cannot be written");
      n = write_trace_events(a, with, f);
      f.close();
      if (!f) throw std::runtime_error(c.out + ": writing the trace failed (disk full?)");
    }
  } else {
    fs::create_directories(c.out, ec);
    if (ec) throw CLI::ValidationError("-o", c.out + ": " + ec.message());
    n = write_otf2(a, with, c.out);
  }
  std::FILE* say = c.out == "-" ? stderr : stdout;
  std::fprintf(say, "%s\n",
               fmt::format("mpiadvise export: {} MPI calls and {} messages of {} ranks{} to {}", n.calls, n.messages,
                           a.trace.world_size,
                           c.predicted ? fmt::format(", and the {} calls of the predicted timeline", n.predicted_calls) : "",
                           c.out == "-" ? "standard output" : c.out)
                   .c_str());
  if (c.out != "-")
    std::fprintf(say, "%s\n",
                 c.format == "perfetto"
                     ? "open it at https://ui.perfetto.dev (Open trace file) or in chrome://tracing"
                     : fmt::format("open {}/traces.otf2 in Vampir or another OTF2 reader (otf2-print lists it)", c.out).c_str());
  return status;
}

}  // namespace

std::function<int()> add_export(CLI::App& app) {
  auto c = std::make_shared<ExportCommand>();
  auto* sub = app.add_subcommand("export", "Write a traced run as a timeline for Perfetto or an OTF2 viewer");
  sub->add_option("dir", c->dir, "Job directory of rank-NNNNN.mpa logs")->required();
  sub->add_option("--format", c->format,
                  "perfetto: Chrome trace-event JSON (Perfetto, chrome://tracing); otf2: an OTF2 archive (Vampir)")
      ->required()
      ->check(CLI::IsMember({"perfetto", "otf2"}));
  sub->add_option("-o,--output", c->out, "perfetto: the file (- for standard output); otf2: a new or empty directory")
      ->required();
  sub->add_flag("--predicted", c->predicted, "Add the LogGPS replay's predicted timeline beside each rank");
  sub->add_option("--params", c->params, "Parameter set of the prediction: a NAME in share/params or a FILE");
  add_speed_options(sub, c->speed);
  add_part_option(sub, c->part);
  add_debug_dir_option(sub, c->debug_dirs);
  return [c] { return run_export(*c); };
}

}  // namespace mpiadvise::cli

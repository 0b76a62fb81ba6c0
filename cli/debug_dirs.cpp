// --debug-dir and MPIADVISE_DEBUG_PATH: where the commands that name call sites look for separate debug
// files (a stripped program's lines), before libdw's defaults.
#include <cstdlib>

#include "commands.hpp"
#include "symbolizer.hpp"

namespace mpiadvise::cli {

void add_debug_dir_option(CLI::App* sub, std::vector<std::string>& dirs) {
  sub->add_option("--debug-dir", dirs,
                  "Look here first for separate debug files: DIR/.build-id/xx/rest.debug or by .gnu_debuglink "
                  "name (repeatable; also MPIADVISE_DEBUG_PATH)")
      ->allow_extra_args(false);  // one DIR each time: the log directory after it stays positional
}

std::vector<std::string> debug_search_dirs(const std::vector<std::string>& given) {
  return debug_dirs(given, std::getenv("MPIADVISE_DEBUG_PATH"));
}

}  // namespace mpiadvise::cli

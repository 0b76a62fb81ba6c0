// What the tests share: running real MPI jobs (traced or not) and reading their logs.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "log_reader.hpp"

namespace mpa_test {

namespace fs = std::filesystem;

struct JobSpec {
  int np = 2;
  std::string program;                       // a name in build/tests/programs, or a path
  std::vector<std::string> args;
  std::map<std::string, std::string> env;    // forwarded to the ranks with -x
  std::vector<std::string> mpirun_options;   // e.g. {"--mca", "btl", "self,tcp"}
  bool traced = true;
  std::string log_dir;                       // MPIADVISE_DIR; default: a fresh directory
  int timeout_s = 120;
};

struct JobResult {
  int status = -1;    // exit status of mpirun
  std::string out, err;
  fs::path dir;       // the log directory
};

fs::path build_dir();
fs::path program_path(const std::string& name);
fs::path fresh_dir(const std::string& name);  // empty directory under build/tests/tmp
JobResult run_job(const JobSpec& spec);
JobResult run_command(const std::string& shell_command);  // status, stdout, stderr

// Events with their own storage (the reader reuses one Event).
struct Ev {
  std::string call;
  mpiadvise::Event e;
};
std::vector<Ev> events_of(const fs::path& dir, int rank);
std::vector<Ev> calls_named(const std::vector<Ev>& evs, const std::string& call);
std::string read_text(const fs::path& file);

// This machine's parameter set for Open MPI over loopback TCP (ob1, btl self,tcp), made once per test
// program by mpiadvise calibrate --quick. The shipped set was measured on another host of this kind, and
// loopback TCP differs from host to host (a 128 KiB halo exchange ran 41% slower than it priced on one,
// within 2% on another): tests that compare a prediction with a run here price it with what TCP costs here.
// again: calibrate anew (a calibration made while another job loaded the machine misprices every run).
fs::path calibrated_tcp_params(bool again = false);

}  // namespace mpa_test

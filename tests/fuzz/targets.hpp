// What the fuzz targets do with one input, shared by the libFuzzer binaries (fuzz_*.cpp, built with
// clang by `make fuzz-smoke`) and by tests/unit_fuzz_inputs.cpp, which runs every committed seed and
// regression input through the same code with the ordinary build.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>
#include <vector>

#include "log_header.hpp"
#include "log_reader.hpp"
#include "text_escape.hpp"
#ifndef MPA_FUZZ_READER_ONLY  // the reader's targets link the reader alone
#include "analysis.hpp"
#include "gate.hpp"
#include "loggps.hpp"
#include "parallel.hpp"
#include "report.hpp"
#endif

namespace mpa_fuzz {

// A whole log file: read as the commands read one, every event decoded, every name escaped for output.
// A LogError is the expected answer to most inputs; anything else escaping is a finding.
inline void log_file(const uint8_t* data, size_t size) {
  try {
    mpiadvise::RankLog log("fuzz.mpa", std::vector<uint8_t>(data, data + size));
    uint64_t sum = 0;
    for (int pass = 0; pass < 2; pass++)  // a second pass sees what the first one reported
      log.for_each_event([&](const mpiadvise::Event& e) {
        sum += e.t_enter_ns + e.t_exit_ns + e.bytes + e.count + e.incall_ns + static_cast<uint64_t>(e.peer + e.peer2);
        for (uint64_t r : e.requests) sum += r;
        for (const auto& st : e.statuses) sum += static_cast<uint64_t>(st.source) + st.bytes + st.cancelled;
        sum += mpiadvise::terminal_text(e.call_name).size();
      });
    for (const auto& [id, c] : log.comms())
      for (int32_t local = -5; local < static_cast<int32_t>(c.members.size()) + 2; local++) sum += static_cast<uint64_t>(c.world_rank(local));
    for (const auto& m : log.modules()) sum += mpiadvise::terminal_text(m.path).size();
    for (const auto& p : log.problems()) sum += p.text().size();
    sum += mpiadvise::dump_json(log.header()).size() + mpiadvise::dump_json(log.trailer()).size();
    for (const auto& m : log.meta()) sum += mpiadvise::dump_json(m).size();
    sum += log.to_ns(sum);
    volatile uint64_t keep = sum;
    (void)keep;
  } catch (const mpiadvise::LogError& e) {
    volatile size_t keep = std::string(e.what()).size();
    (void)keep;
  }
}

// The JSON of a header (or trailer, or META chunk) as the reader takes it.
inline void header_json(const uint8_t* data, size_t size) {
  nlohmann::json j;
  try {
    j = mpiadvise::parse_log_json(std::string_view(reinterpret_cast<const char*>(data), size));
  } catch (const std::exception&) {
    return;  // not JSON, or nested too deeply: the reader's error
  }
  std::vector<mpiadvise::ReadProblem> problems;
  nlohmann::json trailer = j, meta = j;
  mpiadvise::check_trailer(trailer, "fuzz.mpa", 4096, problems);
  mpiadvise::check_meta(meta, "fuzz.mpa", 4096, problems);
  size_t n = mpiadvise::dump_json(trailer).size() + mpiadvise::dump_json(meta).size();
  try {
    auto facts = mpiadvise::check_header(j, "fuzz.mpa", 16, problems);
    for (const auto& c : facts.calls) n += mpiadvise::terminal_text(c).size();
    // what the analyzer reads of a header, with the defaults it gives
    n += j.value("hostname", "").size() + j.value("mpi_library", "").size() + j.value("thread_level", "").size();
    const auto env = j.value("env", nlohmann::json::object());
    n += env.value("OMPI_MCA_pml", "").size();
    const auto cvars = j.value("cvars", nlohmann::json::object());
    for (const auto& [name, value] : cvars.items()) n += value.is_string() ? value.get<std::string>().size() : value.dump().size();
    const auto clock = j.value("clock", nlohmann::json::object());
    n += clock.value("source", "monotonic").size() + clock.value("offset_to_rank0_ns", int64_t{0});
    if (clock.contains("sync_tick")) n += clock["sync_tick"].get<uint64_t>();
  } catch (const mpiadvise::LogError& e) {
    n += std::string(e.what()).size();
  }
  for (const auto& p : problems) n += p.text().size();
  n += mpiadvise::dump_json(j, 2).size();
  volatile size_t keep = n;
  (void)keep;
}

// A job's logs in one input: byte 0 the number of logs n (1 to kJobLogs: 1 + byte % kJobLogs), then n - 1
// sizes (4 bytes each, little-endian), then the logs one after the other, the last one taking the rest.
// Sizes beyond the input are cut to it.
inline constexpr unsigned kJobLogs = 4;

inline std::vector<std::vector<uint8_t>> split_job(const uint8_t* data, size_t size) {
  std::vector<std::vector<uint8_t>> logs;
  if (size == 0) return logs;
  const size_t n = 1 + data[0] % kJobLogs;
  size_t at = 1 + 4 * (n - 1);
  if (at > size) at = size;
  for (size_t i = 0; i < n; i++) {
    size_t len = size - at;
    if (i + 1 < n && 1 + 4 * (i + 1) <= size) {
      uint32_t claimed;
      std::memcpy(&claimed, data + 1 + 4 * i, 4);
      len = std::min<size_t>(claimed, size - at);
    }
    logs.emplace_back(data + at, data + at + len);
    at += len;
  }
  return logs;
}

inline std::vector<uint8_t> join_job(const std::vector<std::vector<uint8_t>>& logs) {
  std::vector<uint8_t> out{static_cast<uint8_t>(logs.empty() ? 0 : (logs.size() - 1) % kJobLogs)};
  for (size_t i = 0; i + 1 < logs.size(); i++) {
    const uint32_t n = static_cast<uint32_t>(logs[i].size());
    out.insert(out.end(), reinterpret_cast<const uint8_t*>(&n), reinterpret_cast<const uint8_t*>(&n) + 4);
  }
  for (const auto& l : logs) out.insert(out.end(), l.begin(), l.end());
  return out;
}

#ifndef MPA_FUZZ_READER_ONLY
// A job's logs (split_job) analysed and reported as `mpiadvise report` does them: the logs written as
// rank-NNNNN.mpa files of a directory this process made (mkdtemp, once; removed at its exit), read,
// matched, replayed, their waits found, the report built with its advice, gate figures and charts. The
// errors a user is meant to get are LogError (bad logs), ParamError (no parameter set fits) and
// MemoryError (the logs claim more calls than fit the machine: judged against its memory, not against
// libFuzzer's -rss_limit_mb, which a log claiming tens of millions of calls could pass and then reserve
// beyond); anything else escaping, or a crash, is a finding. Returns whether the report was built.
inline bool job_analysis(const uint8_t* data, size_t size) {
  namespace fs = std::filesystem;
  static const struct TempDir {
    fs::path path;
    TempDir() {
      std::string name = (fs::temp_directory_path() / "mpiadvise-fuzz-job-XXXXXX").string();
      if (!mkdtemp(name.data())) std::abort();  // no directory to analyse: nothing this target can test
      path = name;
    }
    ~TempDir() {
      std::error_code ec;
      fs::remove_all(path, ec);
    }
  } temp;
  const fs::path& dir = temp.path;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(dir, ec)) fs::remove(e.path(), ec);  // the previous input's logs
  const auto logs = split_job(data, size);
  for (size_t i = 0; i < logs.size(); i++) {
    char name[32];
    std::snprintf(name, sizeof name, "rank-%05zu.mpa", i);
    std::ofstream out(dir / name, std::ios::binary);
    out.write(reinterpret_cast<const char*>(logs[i].data()), static_cast<std::streamsize>(logs[i].size()));
    if (!out.flush()) std::abort();  // a job not written whole would be another input than this one
  }
  mpiadvise::set_analysis_threads(1);
  size_t n = 0;
  bool reported = false;
  try {
    const mpiadvise::Analysis a = mpiadvise::analyse(dir.string(), "");
    mpiadvise::ReportOptions o;
    o.charts = true;
    n += mpiadvise::dump_json(mpiadvise::build_report(a, o)).size();  // as the commands write it
    reported = true;
  } catch (const mpiadvise::LogError& e) {
    n += std::string(e.what()).size();
  } catch (const mpiadvise::ParamError& e) {
    n += std::string(e.what()).size();
  } catch (const mpiadvise::MemoryError& e) {
    n += std::string(e.what()).size();
  }
  volatile size_t keep = n;
  (void)keep;
  return reported;
}

// A report file as mpiadvise gate reads one (gate::figures_from_report), then gated against itself, and as
// the candidate of budgets alone. FiguresError, naming the file and what is wrong, is the expected answer
// to most inputs; anything else escaping, or a crash, is a finding. Returns whether the figures were read.
inline bool report_file(const uint8_t* data, size_t size) {
  namespace gate = mpiadvise::gate;
  try {
    const gate::RunFigures f =
        gate::figures_from_report(std::string_view(reinterpret_cast<const char*>(data), size), "fuzz.json");
    gate::GateOptions o;
    size_t n = gate::compare({f}, {f}, o).checks.size();
    o.budgets.push_back({"send_wait<=10%", gate::Metric::SendWait, 0.10, true});
    o.budgets.push_back({"messages<=1000", gate::Metric::Messages, 1000, false});
    const gate::Verdict v = gate::compare({}, {f, f}, o);
    n += v.checks.size() + gate::failed_on_times_of_one_run(v);
    n += mpiadvise::dump_json(gate::figures_json(f)).size();
    volatile size_t keep = n;
    (void)keep;
    return true;
  } catch (const gate::FiguresError& e) {
    volatile size_t keep = std::string(e.what()).size();
    (void)keep;
    return false;
  }
}
#endif

}  // namespace mpa_fuzz

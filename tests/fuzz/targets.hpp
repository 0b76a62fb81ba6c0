// What the fuzz targets do with one input, shared by the libFuzzer binaries (fuzz_*.cpp, built with
// clang by `make fuzz-smoke`) and by tests/unit_fuzz_inputs.cpp, which runs every committed seed and
// regression input through the same code with the ordinary build.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "log_header.hpp"
#include "log_reader.hpp"
#include "text_escape.hpp"

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

}  // namespace mpa_fuzz

// The JSON parts of a log (the header, META and TRAILER chunks): parsed with bounded nesting, job
// strings decoded back to their bytes (text_escape.hpp), and every key the reader knows checked for its
// type. A required key that is missing or wrong is an error naming the file and the key; an
// informational key of the wrong type is dropped, with a problem saying so.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "log_reader.hpp"

namespace mpiadvise {

inline constexpr int kMaxJsonDepth = 64;           // nesting of arrays and objects in a log's JSON
inline constexpr uint32_t kMaxHeaderBytes = 16u << 20;
inline constexpr size_t kMaxCalls = 256;           // a call id is one byte
inline constexpr size_t kMaxCallNameBytes = 64;
inline constexpr int kMaxWorldSize = 1 << 24;

// Parses text as one JSON value, its strings decoded (decode_json_strings). Throws nlohmann::json::parse_error
// where it is not JSON, nlohmann::json::out_of_range (406) for a number beyond a double's range, and
// std::runtime_error where it nests deeper than kMaxJsonDepth: a caller catches all three.
nlohmann::json parse_log_json(std::string_view text);

struct HeaderFacts {
  int rank = 0, size = 0;
  std::vector<std::string> calls;
};

// Checks the header JSON (at `offset` of `file`) in place; throws LogError for a required key.
HeaderFacts check_header(nlohmann::json& header, const std::string& file, uint64_t offset,
                         std::vector<ReadProblem>& problems);
// The same for a TRAILER or META chunk; false when it is not a JSON object at all.
bool check_trailer(nlohmann::json& trailer, const std::string& file, uint64_t offset, std::vector<ReadProblem>& problems);
bool check_meta(nlohmann::json& meta, const std::string& file, uint64_t offset, std::vector<ReadProblem>& problems);

}  // namespace mpiadvise

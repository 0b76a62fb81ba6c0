#include "log_header.hpp"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "text_escape.hpp"

namespace mpiadvise {

namespace {

using nlohmann::json;

enum class Kind { String, Unsigned, Integer, Number, Bool, Object, Array, StringOrNull };

const char* kind_name(Kind k) {
  switch (k) {
    case Kind::String: return "a string";
    case Kind::Unsigned: return "a non-negative integer";
    case Kind::Integer: return "an integer";
    case Kind::Number: return "a number";
    case Kind::Bool: return "true or false";
    case Kind::Object: return "an object";
    case Kind::Array: return "an array";
    case Kind::StringOrNull: return "a string or null";
  }
  return "?";
}

bool is(const json& v, Kind k) {
  switch (k) {
    case Kind::String: return v.is_string();
    case Kind::Unsigned: return v.is_number_unsigned();
    case Kind::Integer: return v.is_number_integer();
    case Kind::Number: return v.is_number();
    case Kind::Bool: return v.is_boolean();
    case Kind::Object: return v.is_object();
    case Kind::Array: return v.is_array();
    case Kind::StringOrNull: return v.is_string() || v.is_null();
  }
  return false;
}

std::string describe(const json& v) {
  if (v.is_number_integer()) return "an integer";
  if (v.is_number()) return "a number";
  std::string t = v.type_name();  // "string", "array", "object", "boolean", "null"
  return (t == "array" || t == "object" ? "an " : "a ") + t;
}

struct Checker {
  const char* part;  // "header", "trailer", "META chunk"
  const std::string& file;
  uint64_t offset;
  std::vector<ReadProblem>& problems;

  void drop(json& obj, const std::string& key, const std::string& path, const std::string& why) {
    problems.push_back({file, offset, fmt::format("{} key '{}' is {}: ignored", part, path, why), true});
    obj.erase(key);
  }
  // Drops each of `keys` present with another type than its own.
  void check(json& obj, std::initializer_list<std::pair<const char*, Kind>> keys, const std::string& prefix = "") {
    for (const auto& [key, kind] : keys) {
      auto it = obj.find(key);
      if (it != obj.end() && !is(*it, kind))
        drop(obj, key, prefix + key, fmt::format("{}, not {}", describe(*it), kind_name(kind)));
    }
  }
  // An object whose entries must each be of one of the kinds: others are dropped one by one.
  void check_entries(json& obj, const char* key, std::initializer_list<Kind> kinds, const char* expected) {
    auto it = obj.find(key);
    if (it == obj.end() || !it->is_object()) return;
    std::vector<std::string> wrong;
    for (const auto& [name, value] : it->items()) {
      bool ok = false;
      for (Kind k : kinds) ok |= is(value, k);
      if (!ok) wrong.push_back(name);
    }
    for (const auto& name : wrong)
      drop(*it, name, fmt::format("{}.{}", key, name), fmt::format("{}, not {}", describe((*it)[name]), expected));
  }
};

// What is wrong with a probe's lists of times, one for each size, as "a list of round trips that is
// empty..." or "a round trip that is...": "" when nothing.
std::string lists_wrong(const json& lists, std::string_view what, std::string_view whats) {
  for (const auto& list : lists) {
    if (!list.is_array() || list.empty() || list.size() > 4096)
      return fmt::format("a list of {} that is empty, too long or no list", whats);
    for (const auto& t : list)
      if (!t.is_number_unsigned()) return fmt::format("a {} that is {}", what, describe(t));
  }
  return "";
}

// Rank 0's round trips timed inside the job (libtrace/probe.c), in its header and its trailer:
// {"bytes": [k...], "round_trip_ns": [[ns...] per k], "copy_ns": [[ns...] per k]}. Anything else is
// dropped whole, but for copies of another shape, dropped alone (logs before them have none).
void check_probe(json& obj, Checker& c) {
  auto it = obj.find("message_probe");
  if (it == obj.end()) return;
  const auto wrong = [&]() -> std::string {
    if (!it->is_object()) return describe(*it) + ", not an object";
    auto bytes = it->find("bytes");
    auto times = it->find("round_trip_ns");
    if (bytes == it->end() || !bytes->is_array() || times == it->end() || !times->is_array())
      return "an object without the arrays 'bytes' and 'round_trip_ns'";
    auto ranks = it->find("ranks");
    if (ranks != it->end() && (!ranks->is_array() || ranks->size() != 2 || !(*ranks)[0].is_number_unsigned() ||
                               (*ranks)[0] != 0 || !(*ranks)[1].is_number_unsigned() || (*ranks)[1] == 0 ||
                               (*ranks)[1] >= kMaxWorldSize))
      return "an object whose 'ranks' are not [0, another rank]";
    if (bytes->empty() || bytes->size() > 64 || times->size() != bytes->size())
      return fmt::format("an object with {} sizes and {} lists of round trips", bytes->size(), times->size());
    for (const auto& k : *bytes)
      if (!k.is_number_unsigned()) return fmt::format("an object with a size that is {}", describe(k));
    if (auto why = lists_wrong(*times, "round trip", "round trips"); !why.empty()) return "an object with " + why;
    return "";
  }();
  const auto copies_wrong = [&]() -> std::string {
    auto copies = it->find("copy_ns");
    if (copies == it->end()) return "";
    const size_t sizes = (*it)["bytes"].size();
    if (!copies->is_array() || copies->size() != sizes)
      return fmt::format("{}, not a list for each of the {} sizes", describe(*copies), sizes);
    if (auto why = lists_wrong(*copies, "copy", "copies"); !why.empty()) return "an array with " + why;
    return "";
  };
  if (!wrong.empty()) c.drop(obj, "message_probe", "message_probe", wrong);
  // the reader takes the sizes in order (message_probe.cpp)
  else if (auto& b = (*it)["bytes"]; !std::is_sorted(b.begin(), b.end()))
    c.drop(obj, "message_probe", "message_probe", "an object whose sizes are not in ascending order");
  else if (const auto why = copies_wrong(); !why.empty())
    c.drop(*it, "copy_ns", "message_probe.copy_ns", why);
}

}  // namespace

json parse_log_json(std::string_view text) {
  const json::parser_callback_t refuse_deep = [](int depth, json::parse_event_t, json&) {
    if (depth > kMaxJsonDepth) throw std::runtime_error(fmt::format("nested deeper than {} levels", kMaxJsonDepth));
    return true;
  };
  json j = json::parse(text.begin(), text.end(), refuse_deep);
  decode_json_strings(j);
  return j;
}

HeaderFacts check_header(json& h, const std::string& file, uint64_t offset, std::vector<ReadProblem>& problems) {
  if (!h.is_object()) throw LogError(file, offset, fmt::format("header is {}, not a JSON object", describe(h)));
  const auto required = [&](const char* key, Kind kind) -> const json& {
    auto it = h.find(key);
    if (it == h.end()) throw LogError(file, offset, fmt::format("header has no key '{}'", key));
    if (!is(*it, kind))
      throw LogError(file, offset, fmt::format("header key '{}' is {}, not {}", key, describe(*it), kind_name(kind)));
    return *it;
  };
  HeaderFacts f;
  const json& size = required("size", Kind::Integer);
  const json& rank = required("rank", Kind::Integer);
  const json& calls = required("calls", Kind::Array);
  const int64_t size_value = size.get<int64_t>(), rank_value = rank.get<int64_t>();
  if (size_value < 1 || size_value > kMaxWorldSize)
    throw LogError(file, offset, fmt::format("header key 'size': a world of {} ranks is not possible (1 to {})", size_value,
                                             kMaxWorldSize));
  if (rank_value < 0 || rank_value >= size_value)
    throw LogError(file, offset, fmt::format("header key 'rank': rank {} is not in a world of {}", rank_value, size_value));
  f.size = static_cast<int>(size_value);
  f.rank = static_cast<int>(rank_value);
  if (calls.size() > kMaxCalls)
    throw LogError(file, offset, fmt::format("header key 'calls' names {} calls; a log has at most {}", calls.size(), kMaxCalls));
  for (const auto& name : calls) {
    if (!name.is_string())
      throw LogError(file, offset, fmt::format("header key 'calls' holds {}, not only strings", describe(name)));
    const auto& s = name.get_ref<const std::string&>();
    if (s.size() > kMaxCallNameBytes)
      throw LogError(file, offset, fmt::format("header key 'calls' holds a name of {} bytes (at most {})", s.size(),
                                               kMaxCallNameBytes));
    f.calls.push_back(s);
  }

  Checker c{"header", file, offset, problems};
  c.check(h, {{"format", Kind::Unsigned}, {"tool", Kind::String}, {"pid", Kind::Integer}, {"hostname", Kind::String},
              {"host_cpus", Kind::Unsigned},
              {"program", Kind::String}, {"mpi_library", Kind::String}, {"mpi_version", Kind::String},
              {"thread_level", Kind::String}, {"start_unix_ns", Kind::Integer}, {"clock", Kind::Object},
              {"stack_depth", Kind::Integer}, {"buffer_bytes", Kind::Unsigned}, {"papi", Kind::Array},
              {"cvars", Kind::Object}, {"env", Kind::Object}, {"tsc_ghz", Kind::Number}});
  if (auto clock = h.find("clock"); clock != h.end())
    c.check(*clock, {{"source", Kind::String}, {"sync_tick", Kind::Unsigned}, {"sync_ns", Kind::Unsigned},
                     {"offset_to_rank0_ns", Kind::Integer}, {"offset_method", Kind::String},
                     {"tick_shift", Kind::Unsigned}, {"tick_hz", Kind::Unsigned}},
            "clock.");
  if (auto papi = h.find("papi"); papi != h.end()) {
    for (const auto& name : *papi)
      if (!name.is_string()) {
        c.drop(h, "papi", "papi", fmt::format("an array holding {}, not only strings", describe(name)));
        break;
      }
  }
  c.check_entries(h, "cvars", {Kind::Number, Kind::String}, "a number or a string");
  c.check_entries(h, "env", {Kind::String}, "a string");
  check_probe(h, c);
  return f;
}

bool check_trailer(json& t, const std::string& file, uint64_t offset, std::vector<ReadProblem>& problems) {
  if (!t.is_object()) {
    problems.push_back({file, offset, fmt::format("corrupt: the trailer is {}, not a JSON object; ignored", describe(t)), true});
    return false;
  }
  Checker c{"trailer", file, offset, problems};
  c.check(t, {{"complete", Kind::Bool}, {"clock_offset_finalize_ns", Kind::Integer}, {"clock_offset_method", Kind::String},
              {"events", Kind::Unsigned}, {"chunks", Kind::Unsigned}, {"raw_bytes", Kind::Unsigned},
              {"stored_bytes", Kind::Unsigned}, {"stalls", Kind::Unsigned}, {"chunks_over_budget", Kind::Unsigned},
              {"write_error", Kind::StringOrNull}, {"callsites", Kind::Array}, {"comms", Kind::Array}});
  check_probe(t, c);
  return true;
}

bool check_meta(json& m, const std::string& file, uint64_t offset, std::vector<ReadProblem>& problems) {
  if (!m.is_object()) {
    problems.push_back({file, offset, fmt::format("corrupt: a META chunk is {}, not a JSON object; ignored", describe(m)), true});
    return false;
  }
  Checker c{"META chunk", file, offset, problems};
  c.check(m, {{"aborted", Kind::Bool}, {"errorcode", Kind::Integer}});
  return true;
}

}  // namespace mpiadvise

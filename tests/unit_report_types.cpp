// The report as a value (report_types.hpp): what mpiadvise report computes on the committed logs goes
// to JSON and back unchanged, each advice carries the part of its own kind and no other, and the
// advisors' registry holds one advisor per kind of advice.
#include <catch2/catch.hpp>

#include <filesystem>
#include <set>

#include "advice.hpp"
#include "analysis.hpp"
#include "report.hpp"
#include "report_types.hpp"

using namespace mpiadvise;
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

fs::path fixture(const std::string& name) { return fs::path(MPA_SOURCE_DIR) / "tests" / "fixtures" / name; }

report::Report report_of(const std::string& name) {
  Analysis a = analyse(fixture(name).string(), "");
  ReportOptions o;
  o.gate_figures = true;
  o.charts = true;
  return make_report(a, o);
}

}  // namespace

TEST_CASE("the advisors' registry has one advisor for each kind of advice, in its order", "[report]") {
  const auto& list = advisors();
  REQUIRE(list.size() == 5);
  std::set<std::string> names;
  for (size_t k = 0; k < list.size(); k++) {
    CHECK(static_cast<size_t>(list[k].kind) == k);
    CHECK(&advisor(list[k].kind) == &list[k]);
    names.insert(advice_kind_name(list[k].kind));
    CHECK(list[k].propose != nullptr);
    CHECK(list[k].title != nullptr);
  }
  CHECK(names == std::set<std::string>{"raise_eager_limit", "split_messages", "prepost_receives", "nonblocking_send",
                                       "persistent_requests"});
}

TEST_CASE("a report goes to JSON and back unchanged, and its JSON has the schema's sections", "[report]") {
  for (const char* name : {"p2p-all", "halo-procnull", "threads", "job-strings"}) {
    INFO(name);
    const report::Report r = report_of(name);
    const json j = r;
    CHECK(j["schema"] == kReportSchema);
    for (const char* key : {"summary", "params", "model", "efficiency", "hang", "root_causes", "critical_path",
                            "receive_side", "buffering", "gate", "charts"})
      CHECK(j[key].is_object());
    for (const char* key : {"ranks", "targets", "hot_spots", "sites", "halos", "advice", "considered", "notes", "problems"})
      CHECK(j[key].is_array());
    CHECK_NOTHROW(check_report(j, name));
    const report::Report back = j.get<report::Report>();
    CHECK(json(back) == j);
    CHECK(back.ranks.size() == static_cast<size_t>(r.summary.ranks));
    // the parts a location does not have are left out, not null
    for (const auto& s : j["sites"]) {
      CHECK(s["where"]["text"].is_string());
      for (const char* key : {"file", "line", "function", "module", "offset", "source"})
        if (s["where"].contains(key)) CHECK_FALSE(s["where"][key].is_null());
    }
  }
}

TEST_CASE("each advice carries the part of its own kind and no other", "[report]") {
  size_t seen = 0;
  for (const char* name : {"p2p-all", "halo-procnull", "threads"}) {
    const report::Report r = report_of(name);
    for (const auto* list : {&r.advice, &r.considered})
      for (const auto& a : *list) {
        INFO(name << ": " << a.kind << ": " << a.title);
        seen++;
        CHECK(a.eager.has_value() == (a.kind == "raise_eager_limit"));
        CHECK(a.at.has_value() == (a.kind != "raise_eager_limit"));
        CHECK(a.split.has_value() == (a.kind == "split_messages"));
        CHECK(a.prepost.has_value() == (a.kind == "prepost_receives"));
        CHECK(a.persistent.has_value() == (a.kind == "persistent_requests"));
        CHECK(a.saving_ns == Approx(a.baseline_ns - a.predicted_ns));
        const json j = a;
        CHECK(j.contains("setting") == a.eager.has_value());
        CHECK(j.contains("chunk_bytes") == a.split.has_value());
        CHECK(j.contains("where") == a.at.has_value());
      }
  }
  // the committed logs hold blocking sends above S and receives waited on: something is weighed
  CHECK(seen > 0);
}

TEST_CASE("a parameter set's optional tables go to the report's JSON and back", "[report]") {
  report::Params p;
  p.values.name = "vader-like";
  p.values.L = 190, p.values.o = 55, p.values.Osl = 0.2, p.values.s = p.values.S = 256;
  p.values.raised_from = 65480, p.values.Oss_raised = 0.3, p.values.Ors_raised = 0.2;
  p.values.large_from = 4040, p.values.R_large = 2800, p.values.Osl_large = 0.12, p.values.Orl_large = 0.01;
  const json j = p;
  CHECK(j["large"]["from_bytes"] == 4040);
  CHECK(j["large"]["R_ns"] == 2800.0);
  const report::Params back = j.get<report::Params>();
  CHECK(back.values.large_from == p.values.large_from);
  CHECK(back.values.R_large == p.values.R_large);
  CHECK(back.values.Osl_large == p.values.Osl_large);
  CHECK(back.values.Orl_large == p.values.Orl_large);
  CHECK(back.values.raised_from == p.values.raised_from);
  CHECK(json(back) == j);
}

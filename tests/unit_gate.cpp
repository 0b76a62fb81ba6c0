// The gate's comparison without MPI: steady intervals (a pause taken out, work that varies by design
// kept), the verdict on typed figures (counts exact, times against the noise band), and figures read
// back from a report's JSON.
#include <catch2/catch.hpp>

#include <cmath>
#include <memory>
#include <stdexcept>

#include "analysis.hpp"
#include "gate.hpp"
#include "op_stream.hpp"
#include "replay.hpp"
#include "report.hpp"
#include "steady_trace.hpp"
#include "text_escape.hpp"

using namespace mpiadvise;

namespace {

// One rank: MPI_Init, then for each gap an MPI_Send at site 2 preceded by that much computation, then
// MPI_Finalize.
Trace one_rank(const std::vector<uint64_t>& gaps_ns) {
  Trace t;
  t.world_size = 1;
  t.ranks.resize(1);
  auto& ops = t.ranks[0].ops;
  uint64_t now = 1000;
  auto add = [&](uint32_t call, uint32_t site, OpKind kind, uint64_t gap) {
    Op op;
    op.call = call;
    op.callsite = site;
    op.kind = kind;
    REQUIRE(op.set_times(now + gap, now + gap + 100));
    now = op.t_exit();
    ops.push_back(op);
  };
  add(MPA_CALL_Init, 1, OpKind::Other, 0);
  for (uint64_t g : gaps_ns) add(MPA_CALL_Send, 2, OpKind::Send, g);
  add(MPA_CALL_Finalize, 3, OpKind::Other, 500);
  return t;
}

gate::RunFigures run(double predicted_ns, double noise_ns, uint64_t rendezvous, double site_wait_ns = 0) {
  gate::RunFigures f;
  f.params = "p";
  f.ranks = 2;
  f.messages = 10;
  f.bytes = 10 * 4096;
  f.rendezvous_messages = rendezvous;
  f.calls = 20;
  f.predicted = {predicted_ns, noise_ns, 0};
  gate::SiteFigures s;
  s.name = "a.c:12 (main) MPI_Send";
  s.file = "a.c";
  s.function = "main";
  s.call = "MPI_Send";
  s.line = 12;
  s.calls = 10;
  s.eager_messages = 10 - rendezvous;
  s.rendezvous_messages = rendezvous;
  s.wait = {site_wait_ns, noise_ns, 0};
  f.sites.push_back(s);
  return f;
}

const gate::FigureCheck& figure(const gate::Verdict& v, const std::string& check, const std::string& fig) {
  for (const auto& c : v.checks)
    if (c.name == check)
      for (const auto& f : c.figures)
        if (f.figure == fig) return f;
  FAIL("no figure " << fig << " in check " << check);
  static gate::FigureCheck none;
  return none;
}

}  // namespace

TEST_CASE("a pause in one instance of a repeated interval is replaced by the interval's median", "[gate][unit]") {
  std::vector<uint64_t> gaps(20, 30'000);
  for (size_t i = 0; i < gaps.size(); i++) gaps[i] += 37 * i;  // a little jitter
  gaps[7] = 30'000 + 36'000'000;                             // descheduled for 36 ms
  const Trace t = one_rank(gaps);
  const SteadyIntervals s = steady_intervals(t);
  REQUIRE(s.ranks.size() == 1);
  size_t replaced = 0, one_offs = 0;
  double steady_total = 0;
  const uint32_t finalize = static_cast<uint32_t>(gaps.size()) + 1;
  for (const auto& x : s.ranks[0]) {
    if (x.op == 1 || x.op == finalize) {
      // the gap after MPI_Init and the one before MPI_Finalize (the replay runs up to its entry) are
      // seen once: kept as measured
      one_offs++;
      CHECK_FALSE(s.of(0, x).repeated);
      CHECK(s.steady_ns(t, 0, x) == SteadyIntervals::measured_ns(t, 0, x));
      CHECK(s.of(0, x).noise_ns == 0);
      continue;
    }
    // each instance's measured time is the trace's gap before its op (op i follows gaps[i - 1])
    CHECK_FALSE(x.duration);
    CHECK(SteadyIntervals::measured_ns(t, 0, x) == static_cast<double>(gaps[x.op - 1]));
    CHECK(s.of(0, x).repeated);
    CHECK(bool(x.replaced) == (x.op == 8));  // the pause, gaps[7], and nothing else
    replaced += x.replaced;
    steady_total += s.steady_ns(t, 0, x);
    CHECK(s.of(0, x).noise_ns > 0);
    CHECK(s.of(0, x).noise_ns < 2000);
  }
  CHECK(one_offs == 2);
  CHECK(replaced == 1);
  CHECK(s.replaced == 1);
  CHECK(steady_total < 19 * 31'000);
}

TEST_CASE("work that varies by design (heavy and light items alternating) is not taken for pauses", "[gate][unit]") {
  std::vector<uint64_t> gaps;
  for (int i = 0; i < 40; i++) gaps.push_back(i % 2 ? 3'000'000 : 1'000'000);
  const Trace t = one_rank(gaps);
  const SteadyIntervals s = steady_intervals(t);
  CHECK(s.replaced == 0);
  for (const auto& x : s.ranks[0]) CHECK(s.steady_ns(t, 0, x) == SteadyIntervals::measured_ns(t, 0, x));
}

TEST_CASE("the retimed trace has the given intervals and starts every rank at MPI_Init's exit", "[gate][unit]") {
  const Trace t = one_rank({5000, 6000, 7000, 8000, 9000});
  const SteadyIntervals s = steady_intervals(t);
  std::vector<std::vector<double>> values(1);
  for (size_t i = 0; i < s.ranks[0].size(); i++) values[0].push_back(1000.0 * static_cast<double>(i + 1));
  const Trace r = retimed(t, s, values);
  const auto& ops = r.ranks[0].ops;
  REQUIRE(ops.size() == t.ranks[0].ops.size());
  for (size_t k = 0; k < s.ranks[0].size(); k++) {
    const uint32_t i = s.ranks[0][k].op;
    CHECK(ops[i].t_enter - ops[i - 1].t_exit() == 1000 * (k + 1));
    CHECK(ops[i].t_exit() - ops[i].t_enter == 100);  // the measured duration of a modelled call is kept
  }
}

TEST_CASE("a replay retimed as it goes predicts what the replay of the retimed trace does", "[gate][unit]") {
  // the gate's replays make the ops' times as they reach them (ReplayOptions::retiming) instead of
  // replaying a copy of the trace: both must give the same figures, bit for bit, under every draw
  const Trace t = one_rank({5000, 6000, 7000, 8000, 9000, 4000, 3000, 5000, 6000, 7000, 8000, 9000});
  const SteadyIntervals s = steady_intervals(t);
  ReplayOptions o;
  o.params.o = 100;
  const double measured = replay(t, o).predicted_ns;
  for (auto kind : {RetimingDraw::Floor, RetimingDraw::Steady, RetimingDraw::Noisy}) {
    const RetimingDraw draw{kind, 42, 0.03, 250};
    auto retiming = std::make_shared<const Retiming>(t, s, draw);
    const auto values = retiming->all_values();
    const ReplayResult copied = replay(retimed(t, s, values), o);
    o.retiming = retiming;
    const ReplayResult given = replay(t, o);
    o.retiming = nullptr;
    CHECK(given.predicted_ns == copied.predicted_ns);
    CHECK(given.measured_ns == copied.measured_ns);
    CHECK(given.ranks[0].predicted.computation == copied.ranks[0].predicted.computation);
    CHECK(given.predicted_ns != measured);  // the times changed the prediction
    // the same draw gives the same values; another seed other noisy ones
    CHECK(Retiming(t, s, draw).all_values() == values);
    CHECK((Retiming(t, s, {kind, 43, 0.03, 250}).all_values() == values) == (kind != RetimingDraw::Noisy));
  }
}

TEST_CASE("a retiming read from the op streams is the trace's: a rank not starting at MPI_Init, a rank of no ops", "[gate][unit]") {
  // where the first op is MPI_Init, it returns at the common start; else the first op enters there; a
  // rank of no ops has no times
  Trace with_init = one_rank({5000, 6000, 7000, 8000, 9000, 4000, 3000, 5000, 6000, 7000, 8000, 9000});
  Trace without_init = with_init;
  without_init.ranks[0].ops.erase(without_init.ranks[0].ops.begin());
  Trace with_empty = with_init;
  with_empty.world_size = 2;
  with_empty.ranks.resize(2);
  for (const Trace* t : {&with_init, &without_init, &with_empty}) {
    const SteadyIntervals s = steady_intervals(*t);
    auto streams = std::make_shared<const std::vector<OpStream>>(OpStream::encode_all(*t));
    const SteadyIntervals from = steady_intervals(*streams);
    CHECK(from.measured == s.measured);
    ReplayOptions o;
    o.params.o = 100;
    for (auto kind : {RetimingDraw::Floor, RetimingDraw::Steady, RetimingDraw::Noisy}) {
      const RetimingDraw draw{kind, 42, 0.03, 250};
      const auto values = Retiming(*t, s, draw).all_values();
      auto retiming = std::make_shared<const Retiming>(*streams, from, draw);
      CHECK(retiming->all_values() == values);
      const ReplayResult copied = replay(retimed(*t, s, values), o);
      o.retiming = retiming;
      o.streams = streams;
      const ReplayResult given = replay(*t, o);
      CHECK(given.predicted_ns == copied.predicted_ns);
      CHECK(given.measured_ns == copied.measured_ns);
      CHECK(given.ranks[0].predicted.computation == copied.ranks[0].predicted.computation);
      // the streams' retiming with the trace's ops, not these streams: refused
      o.streams = nullptr;
      CHECK_THROWS_WITH(replay(*t, o), Catch::Contains("retimes another trace, or other streams"));
      o.retiming = nullptr;
    }
  }
}

TEST_CASE("on real logs of several ranks, the replay retimed as it goes is the retimed trace's replay", "[gate][unit]") {
  // the simulation runs the ranks in the order their messages allow: each rank's times are made in its
  // ops' order whatever the order of the ranks, and every rank starts at the same time
  auto same = [](const Breakdown& a, const Breakdown& b) {
    return a.computation == b.computation && a.send_overhead == b.send_overhead && a.recv_overhead == b.recv_overhead &&
           a.send_wait == b.send_wait && a.recv_wait == b.recv_wait && a.synchronisation == b.synchronisation &&
           a.collectives == b.collectives && a.other == b.other;
  };
  for (const char* fixture : {"halo-procnull", "p2p-all", "threads"}) {
    INFO(fixture);
    const Analysis a = analyse(std::string(MPA_SOURCE_DIR) + "/tests/fixtures/" + fixture, "");
    const Trace& t = a.trace;
    const SteadyIntervals s = steady_intervals(t);
    REQUIRE(s.measured > 0);
    ReplayOptions o;
    o.params = a.set_params;
    for (uint64_t seed : {1, 2}) {
      auto retiming = std::make_shared<const Retiming>(t, s, RetimingDraw{RetimingDraw::Noisy, seed, 0.03, 250});
      const ReplayResult copied = replay(retimed(t, s, retiming->all_values()), o);
      o.retiming = retiming;
      const ReplayResult given = replay(t, o);
      o.retiming = nullptr;
      CHECK(given.predicted_ns == copied.predicted_ns);
      CHECK(given.measured_ns == copied.measured_ns);
      REQUIRE(given.ranks.size() == copied.ranks.size());
      for (size_t r = 0; r < given.ranks.size(); r++) {
        CHECK(given.ranks[r].measured_ns == copied.ranks[r].measured_ns);
        CHECK(same(given.ranks[r].predicted, copied.ranks[r].predicted));
      }
      REQUIRE(given.sites.size() == copied.sites.size());
      for (size_t k = 0; k < given.sites.size(); k++) CHECK(same(given.sites[k].predicted, copied.sites[k].predicted));
    }
  }
}

TEST_CASE("a retiming's cursor goes forward only", "[gate][unit]") {
  const Trace t = one_rank({5000, 6000, 7000, 8000, 9000, 4000, 3000});
  const SteadyIntervals s = steady_intervals(t);
  const Retiming retiming(t, s, RetimingDraw{});
  Retiming::Rank c = retiming.rank(0);
  c.at(3);
  const uint64_t enter = c.enter();
  CHECK(c.exit_before() < enter);
  c.at(3);
  CHECK(c.enter() == enter);
  CHECK_THROWS_AS(c.at(2), std::logic_error);
  CHECK_THROWS_AS(c.at(static_cast<uint32_t>(t.ranks[0].ops.size())), std::logic_error);
}

TEST_CASE("a retiming of another trace is refused", "[gate][unit]") {
  const Trace t = one_rank({5000, 6000, 7000, 8000, 9000});
  const SteadyIntervals s = steady_intervals(t);
  ReplayOptions o;
  const Trace other = t;
  o.retiming = std::make_shared<const Retiming>(other, s, RetimingDraw{});
  CHECK_THROWS_AS(replay(t, o), std::invalid_argument);
}

TEST_CASE("counts compare exactly; a time compares against the noise band", "[gate][unit]") {
  const std::vector<gate::RunFigures> base = {run(10e6, 100e3, 0, 1e6)};
  gate::GateOptions o;
  o.max_regression = 0.05;

  SECTION("an unchanged count passes; one more rendezvous message fails, naming the site") {
    gate::Verdict same = gate::compare(base, {run(10e6, 100e3, 0, 1e6)}, o);
    CHECK_FALSE(same.failed);
    gate::Verdict grown = gate::compare(base, {run(10e6, 100e3, 1, 1e6)}, o);
    CHECK(grown.failed);
    CHECK(figure(grown, "rendezvous_messages", "rendezvous_messages").failed);
    CHECK(figure(grown, "a.c:12 (main) MPI_Send", "rendezvous_messages").failed);
    CHECK(figure(grown, "a.c:12 (main) MPI_Send", "rendezvous_messages").limit == 0);
  }
  SECTION("the band is 4 standard deviations of the difference") {
    const gate::FigureCheck f = figure(gate::compare(base, {run(10e6, 100e3, 0)}, o), "predicted_time", "predicted_time");  // a copy: the verdict is a temporary
    CHECK(f.band == Approx(4 * std::sqrt(2.0) * 100e3));
    CHECK(f.limit == Approx(10e6 + 4 * std::sqrt(2.0) * 100e3 + 10e3));  // the band is above 5% of 10 ms
    CHECK_FALSE(gate::compare(base, {run(10.5e6, 100e3, 0)}, o).failed);
    CHECK(gate::compare(base, {run(10.6e6, 100e3, 0)}, o).failed);
  }
  SECTION("a quiet figure is still allowed the --max-regression share") {
    const std::vector<gate::RunFigures> quiet = {run(10e6, 0, 0)};
    const gate::FigureCheck f = figure(gate::compare(quiet, {run(10.4e6, 0, 0)}, o), "predicted_time", "predicted_time");  // a copy: the verdict is a temporary
    CHECK(f.limit == Approx(10.5e6 + 10e3));  // and 0.1% of the predicted time
    CHECK_FALSE(f.failed);
  }
  SECTION("a wait is always allowed 3% of the predicted run time more") {
    // a site's wait from 0 to 290 us in a 10 ms run passes; to 310 us fails (no noise: the band is 0)
    const std::vector<gate::RunFigures> quiet = {run(10e6, 0, 0, 0)};
    gate::Verdict v = gate::compare(quiet, {run(10e6, 0, 0, 290e3)}, o);
    CHECK_FALSE(v.failed);
    gate::Verdict w = gate::compare(quiet, {run(10e6, 0, 0, 310e3)}, o);
    CHECK(w.failed);
  }
  SECTION("what pauses could have added widens the band by as much, on each side") {
    gate::RunFigures b = run(10e6, 0, 0), c = run(10.9e6, 0, 0);
    b.predicted.pause_ns = 300e3;
    c.predicted.pause_ns = 700e3;
    const gate::FigureCheck f = figure(gate::compare({b}, {c}, o), "predicted_time", "predicted_time");  // a copy: the verdict is a temporary
    CHECK(f.band == Approx(1e6));
    CHECK_FALSE(f.failed);
  }
  SECTION("several runs per side: the medians compared, the band from the spread between the runs") {
    const std::vector<gate::RunFigures> b3 = {run(10e6, 0, 0), run(11e6, 0, 0), run(12e6, 0, 0)};
    gate::Verdict v = gate::compare(b3, {run(11e6, 0, 0), run(12e6, 0, 0), run(30e6, 0, 0)}, o);
    const auto& f = figure(v, "predicted_time", "predicted_time");
    CHECK(f.baseline == 11e6);
    CHECK(f.candidate == 12e6);  // one slow run does not move the median
    CHECK(f.band == Approx(4 * std::hypot(1.2533 * 1.4826e6 / std::sqrt(3.0), 1.2533 * 1.4826e6 / std::sqrt(3.0))));
    CHECK_FALSE(v.failed);
    CHECK(v.baseline_runs == 3);
  }
  SECTION("a count that differs between the baseline's runs is allowed their largest") {
    gate::RunFigures b1 = run(10e6, 0, 0), b2 = run(10e6, 0, 0);
    b2.calls = 24;
    gate::RunFigures c = run(10e6, 0, 0);
    c.calls = 24;
    const gate::FigureCheck f = figure(gate::compare({b1, b2}, {c}, o), "calls", "calls");  // a copy: the verdict is a temporary
    CHECK(f.varies);
    CHECK(f.limit == 24);
    CHECK_FALSE(f.failed);
  }
  SECTION("a site whose line moved with the code above it is paired with itself") {
    gate::RunFigures moved = run(10e6, 100e3, 0, 1e6);
    moved.sites[0].line = 15;
    moved.sites[0].name = "a.c:15 (main) MPI_Send";
    gate::Verdict v = gate::compare(base, {moved}, o);
    CHECK_FALSE(v.failed);
    size_t sites = 0;
    for (const auto& c : v.checks) sites += c.group == gate::CheckGroup::Sites;
    CHECK(sites == 1);
  }
}

TEST_CASE("figures read back from JSON are the figures written; a bad one is named", "[gate][unit]") {
  gate::RunFigures f = run(10e6, 100e3, 3, 2e6);
  f.sites[0].wait.pause_ns = 5;
  const nlohmann::json j = gate::figures_json(f);
  const gate::RunFigures g = gate::figures_from_json(j, "r.json");
  CHECK(g.predicted.ns == f.predicted.ns);
  CHECK(g.sites.size() == 1);
  CHECK(g.sites[0].name == f.sites[0].name);
  CHECK(g.sites[0].rendezvous_messages == 3);
  CHECK(g.sites[0].wait.pause_ns == 5);
  nlohmann::json bad = j;
  bad["sites"][0]["wait_ns"] = "slow";
  CHECK_THROWS_WITH(gate::figures_from_json(bad, "r.json"), Catch::Contains("r.json: gate.sites[0].wait_ns"));
  bad = j;
  bad.erase("calls");
  CHECK_THROWS_WITH(gate::figures_from_json(bad, "r.json"), Catch::Contains("gate.calls is missing"));
}

TEST_CASE("a report file's text gives its gate figures; text that is no report is named in one line", "[gate][unit]") {
  // job-strings: names of files and functions that are not UTF-8 nor printable, which the report holds
  // escaped (text_escape.hpp) and the reading must give back as the job's bytes
  for (const char* fixture : {"halo-procnull", "job-strings"}) {
    INFO(fixture);
    const Analysis a = analyse(std::string(MPA_SOURCE_DIR) + "/tests/fixtures/" + fixture, "");
    const std::string text = dump_json(build_report(a, {}), 2);  // as mpiadvise report --format json writes it
    const gate::RunFigures f = gate::figures_from_report(text, "r.json");
    const gate::RunFigures expected = gate::run_figures(a);
    CHECK(f.sites.size() >= 2);
    CHECK(dump_json(gate::figures_json(f)) == dump_json(gate::figures_json(expected)));
    CHECK_FALSE(gate::compare({f}, {f}, {}).failed);
  }
  const nlohmann::json report = build_report(analyse(std::string(MPA_SOURCE_DIR) + "/tests/fixtures/halo-procnull", ""), {});

  using Catch::Contains;
  CHECK_THROWS_WITH(gate::figures_from_report("{\"schema\": ", "r.json"), Contains("r.json: not JSON (byte"));
  // nested as no report is: refused before anything walks it (100,000 levels overflowed the stack of the
  // string decoding that follows the parse)
  const std::string deep = std::string(100000, '[') + std::string(100000, ']');
  CHECK_THROWS_WITH(gate::figures_from_report(deep, "r.json"), Contains("r.json: nested deeper than 64 levels"));
  CHECK_THROWS_WITH(gate::figures_from_report("[]", "r.json"), Contains("r.json: not an mpiadvise report"));
  // a number beyond a double's range is JSON the parser refuses otherwise than a syntax error (fuzz_report)
  CHECK_THROWS_WITH(gate::figures_from_report("{\"schema\": 1e999}", "r.json"), Contains("r.json: not a report from"));
  nlohmann::json old = report;
  old.erase("gate");
  CHECK_THROWS_WITH(gate::figures_from_report(old.dump(), "r.json"), Contains("r.json: the report has no \"gate\" figures"));
  nlohmann::json bad = report;
  bad["gate"]["sites"] = 7;
  CHECK_THROWS_WITH(gate::figures_from_report(bad.dump(), "r.json"), Contains("r.json: gate.sites is not an array"));
}

// `ringprof diff` on recordings made to differ in one place: the zone made
// 20% slower is `regressed` with an interval that covers +20%, the zone left
// alone is `unchanged`, kernels present on one side only are `added` or
// `removed`; the outputs and the command's exit statuses.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <memory>
#include <random>
#include <string>

#include "ringprof/tools/perf_diff.h"
#include "support/test_support.h"
#include "support/trace_builder.h"

namespace ringprof {
namespace {

struct Recipe {
  double matmul_factor = 1.0;  // scales the "matmul" zone's durations
  uint64_t seed = 1;
  bool old_kernel = true;      // "old_kernel" launched (else "new_kernel")
  const char* zone_a = "matmul";
  const char* zone_b = "load";
  double machine = 1.0;  // scales both zones: the machine's speed during the run
};

constexpr int kSteps = 100;
constexpr int kCallsPerStep = 10;

// 100 whole steps; in each, 10 calls of each zone (log-normal durations,
// medians 100 us and 50 us) and one launch of each kernel. The same seed
// draws the same durations: a recipe that only scales "matmul" differs from
// its base in that zone's work alone.
std::string record(const test::TempDir& dir, const std::string& name, const Recipe& r) {
  test::TraceBuilder b(4242, 1'000'000'000);
  const uint32_t a = b.location(r.zone_a), l = b.location(r.zone_b);
  const uint32_t th = b.thread(100, "main");
  const uint32_t gemm = b.gpu_name("gemm_kernel");
  const uint32_t other = b.gpu_name(r.old_kernel ? "old_kernel" : "new_kernel");
  std::mt19937_64 rng(r.seed);
  std::lognormal_distribution<double> slow(std::log(100000.0), 0.3), fast(std::log(50000.0), 0.3),
      kernel(std::log(30000.0), 0.2);
  uint64_t t = 2'000'000'000;
  for (int s = 0; s <= kSteps; ++s) {
    b.step(th, t, static_cast<uint64_t>(s));
    if (s == kSteps) break;  // the last step() only closes the 100th step
    for (int i = 0; i < kCallsPerStep; ++i) {
      const auto da = static_cast<uint64_t>(slow(rng) * r.matmul_factor * r.machine);
      b.begin(th, t += 1000, a);
      b.end(th, t += da);
      const auto dl = static_cast<uint64_t>(fast(rng) * r.machine);
      b.begin(th, t += 1000, l);
      b.end(th, t += dl);
    }
    for (uint32_t k : {gemm, other}) {
      GpuActivity g;
      g.kind = GpuKind::Kernel;
      g.name = k;
      g.start_ns = t;
      g.end_ns = t + static_cast<uint64_t>(kernel(rng));
      b.gpu(g);
    }
    t += 100000;
    if (s % 25 == 24) b.flush();
  }
  b.flush();
  const std::string path = dir.file(name);
  test::write_file(path, b.bytes());
  return path;
}

const DiffRow* find(const std::vector<DiffRow>& rows, const std::string& name) {
  for (const DiffRow& r : rows)
    if (r.name == name) return &r;
  return nullptr;
}

DiffResult diff(const std::string& base, const std::string& head, const DiffOptions& options = {}) {
  TraceReader b({base}), h({head});
  return compute_diff(b, h, options);
}

TEST(PerfDiff, AZoneMadeTwentyPercentSlowerIsRegressedAndTheOtherUnchanged) {
  test::TempDir dir;
  const std::string base = record(dir, "base.rpf", {1.0, 1});
  const std::string head = record(dir, "head.rpf", {1.2, 1, false});
  const DiffResult d = diff(base, head);
  EXPECT_EQ(d.base_steps, 100u);
  EXPECT_EQ(d.head_steps, 100u);
  ASSERT_EQ(d.zones.size(), 2u);
  const DiffRow* matmul = find(d.zones, "matmul");
  const DiffRow* load = find(d.zones, "load");
  ASSERT_TRUE(matmul && load);
  EXPECT_EQ(matmul->verdict, Verdict::Regressed);
  EXPECT_LE(matmul->change.ci_low_pct, 20);
  EXPECT_GE(matmul->change.ci_high_pct, 20);
  EXPECT_EQ(matmul->base.durations.calls, 1000u);
  EXPECT_EQ(matmul->head.durations.calls, 1000u);
  EXPECT_DOUBLE_EQ(matmul->base.calls_per_step, 10.0);
  EXPECT_DOUBLE_EQ(matmul->calls_change_pct, 0.0);  // time changed, calls did not
  ASSERT_TRUE(matmul->per_step_change.known);       // ten calls a step: the step's total moves by 20% too
  EXPECT_LE(matmul->per_step_change.ci_low_pct, 20);
  EXPECT_GE(matmul->per_step_change.ci_high_pct, 20);
  EXPECT_EQ(load->verdict, Verdict::Unchanged);
  EXPECT_EQ(&d.zones[0], matmul) << "worst first";
  // Kernels: one in both, one on each side only.
  ASSERT_EQ(d.kernels.size(), 3u);
  EXPECT_EQ(find(d.kernels, "gemm_kernel")->verdict, Verdict::Unchanged);
  EXPECT_EQ(find(d.kernels, "old_kernel")->verdict, Verdict::Removed);
  EXPECT_EQ(find(d.kernels, "new_kernel")->verdict, Verdict::Added);
  EXPECT_EQ(d.in_common, 3u);  // matmul, load, gemm_kernel
  EXPECT_TRUE(regressed_above(d, 10));
  EXPECT_FALSE(regressed_above(d, 30));
}

// Independent draws of one program (different seeds): the intervals hold for
// all rows at once, so no row is flagged (in about 95% of such pairs; these
// 20 seeds are checked, each pair with three rows in common).
TEST(PerfDiff, TwoRecordingsOfTheSameProgramHaveNothingRegressedOrImproved) {
  test::TempDir dir;
  int flagged_pairs = 0;
  for (uint64_t seed = 10; seed < 30; ++seed) {
    bool flagged = false;
    const DiffResult d = diff(record(dir, "a.rpf", {1.0, seed}), record(dir, "b.rpf", {1.0, seed + 100}));
    for (const auto* rows : {&d.zones, &d.kernels})
      for (const DiffRow& r : *rows)
        if (r.name != "old_kernel") flagged = flagged || r.verdict != Verdict::Unchanged;
    flagged_pairs += flagged;
  }
  EXPECT_LE(flagged_pairs, 2) << "of 20 pairs";
}

TEST(PerfDiff, OnlyIgnoreAndMinCallsChooseTheRows) {
  test::TempDir dir;
  const std::string base = record(dir, "base.rpf", {1.0, 1});
  const std::string head = record(dir, "head.rpf", {1.2, 1});
  DiffOptions only;
  only.only = {"load"};
  const DiffResult d1 = diff(base, head, only);
  ASSERT_EQ(d1.zones.size(), 1u);
  EXPECT_EQ(d1.zones[0].name, "load");
  EXPECT_TRUE(d1.kernels.empty());
  EXPECT_FALSE(regressed_above(d1, 10));
  DiffOptions ignore;
  ignore.ignore = {"matmul"};
  EXPECT_EQ(find(diff(base, head, ignore).zones, "matmul"), nullptr);
  DiffOptions min_calls;
  min_calls.min_calls = 1001;  // every row has 1000 or 100 calls a side
  const DiffResult d3 = diff(base, head, min_calls);
  EXPECT_TRUE(d3.zones.empty());
  EXPECT_TRUE(d3.kernels.empty());
}

TEST(PerfDiff, JsonHasTheDocumentedShapeAndMarkdownATable) {
  test::TempDir dir;
  const DiffResult d = diff(record(dir, "base.rpf", {1.0, 1}), record(dir, "head.rpf", {1.2, 1}));
  const nlohmann::json j = nlohmann::json::parse(format_diff(d, DiffFormat::Json));
  ASSERT_TRUE(j["zones"].is_array());
  ASSERT_TRUE(j["kernels"].is_array());
  ASSERT_TRUE(j["functions"].is_array());
  const nlohmann::json& z = j["zones"][0];
  EXPECT_EQ(z["name"], "matmul");
  EXPECT_EQ(z["verdict"], "regressed");
  for (const char* side : {"base", "head"})
    for (const char* key : {"calls", "median_ns", "p90_ns", "total_ns"}) EXPECT_TRUE(z[side][key].is_number()) << key;
  EXPECT_EQ(z["base"]["calls"], 1000);
  EXPECT_LE(z["ci_low_pct"].get<double>(), 20);
  EXPECT_GE(z["ci_high_pct"].get<double>(), 20);
  EXPECT_NEAR(z["change_pct"].get<double>(), 20, 5);
  const std::string md = format_diff(d, DiffFormat::Markdown);
  EXPECT_NE(md.find("| regressed | +"), std::string::npos) << md;
  EXPECT_NE(md.find("`matmul` |"), std::string::npos) << md;
  const std::string text = format_diff(d, DiffFormat::Text);
  EXPECT_NE(text.find("Zones: 1 regressed, 0 improved, 0 added, 0 removed, 1 unchanged"), std::string::npos) << text;
}

test::CommandResult cli(const std::string& args) { return test::run_command(std::string(RINGPROF_CLI) + " " + args); }

// Runs of one program on a machine whose speed changes from run to run
// (each run's zones all scaled by its factor, within ±10%). One pair, base
// at 1.00 and head at 1.10, flags both zones, as a pair on a busy machine
// does; five runs a side, interleaved, measure the spread and flag
// nothing, and the whole-process row says where the shift was. A real +20%
// in matmul across the same machine factors is found, with an interval
// that covers it, and load stays unchanged.
std::vector<std::string> runs(const test::TempDir& dir, const std::string& side, const std::vector<double>& machine,
                              double matmul, uint64_t seed) {
  std::vector<std::string> out;
  for (size_t i = 0; i < machine.size(); ++i) {
    Recipe r{matmul, seed + i};
    r.machine = machine[i];
    out.push_back(record(dir, side + std::to_string(i) + ".rpf", r));
  }
  return out;
}

DiffResult diff_runs(const std::vector<std::string>& base, const std::vector<std::string>& head) {
  std::vector<std::unique_ptr<TraceReader>> readers;
  std::vector<TraceReader*> b, h;
  for (const auto* side : {&base, &head})
    for (const std::string& path : *side) {
      readers.push_back(std::make_unique<TraceReader>(std::vector<std::string>{path}));
      (side == &base ? b : h).push_back(readers.back().get());
    }
  DiffOptions o;
  o.ignore = {"gemm_kernel", "old_kernel"};
  return compute_diff_runs(b, h, o);
}

TEST(PerfDiff, RunsMeasureTheMachinesSpreadThatOnePairCannot) {
  test::TempDir dir;
  const std::vector<double> base_machine = {1.00, 0.95, 1.08, 0.97, 1.03};
  const std::vector<double> head_machine = {1.10, 0.97, 0.94, 1.05, 0.98};
  const auto base = runs(dir, "base", base_machine, 1.0, 100);
  const auto same = runs(dir, "same", head_machine, 1.0, 200);

  const DiffResult pair = diff_runs({base[0]}, {same[0]});
  EXPECT_FALSE(pair.noise_measured);
  EXPECT_EQ(find(pair.zones, "matmul")->verdict, Verdict::Regressed);
  EXPECT_EQ(find(pair.zones, "load")->verdict, Verdict::Regressed);
  EXPECT_FALSE(pair.process.change.known);  // the estimate alone
  EXPECT_NEAR(pair.process.change.change_pct, 10, 1.5);

  const DiffResult five = diff_runs(base, same);
  EXPECT_TRUE(five.noise_measured);
  EXPECT_EQ(five.base_runs, 5u);
  EXPECT_EQ(five.noise_pct, 0.5);  // a resolution, no more
  for (const char* z : {"matmul", "load"}) {
    EXPECT_EQ(find(five.zones, z)->verdict, Verdict::Unchanged) << z;
    EXPECT_EQ(find(five.zones, z)->base.durations.calls, 5000u) << z;  // every run's calls in the table
  }
  DiffOptions one_zone;
  one_zone.only = {"matmul"};
  TraceReader rb({base[0]}), rh({same[0]});
  EXPECT_TRUE(compute_diff(rb, rh, one_zone).process.name.empty());  // one zone: its own row, no process row
  EXPECT_EQ(five.process.name, "(all zones, weighted by time)");
  EXPECT_TRUE(five.process.change.known);
  EXPECT_EQ(five.process.verdict, Verdict::Unchanged);

  const auto slower = runs(dir, "slower", head_machine, 1.2, 300);
  const DiffResult real = diff_runs(base, slower);
  const DiffRow* matmul = find(real.zones, "matmul");
  EXPECT_EQ(matmul->verdict, Verdict::Regressed);
  EXPECT_LE(matmul->change.ci_low_pct, 20);
  EXPECT_GE(matmul->change.ci_high_pct, 20);
  ASSERT_TRUE(matmul->per_step_change.known);
  EXPECT_EQ(find(real.zones, "load")->verdict, Verdict::Unchanged);
  EXPECT_TRUE(regressed_above(real, 5));
  EXPECT_FALSE(regressed_above(five, 5));
}

// A zone called once per run has no run figure (under 5 calls): with runs
// it is compared over all its calls as one run a side would be, not shown
// as +0%.
TEST(PerfDiff, AZoneOncePerRunIsComparedOverItsCalls) {
  test::TempDir dir;
  auto once = [&](const std::string& name, uint64_t duration_ns) {
    test::TraceBuilder b(4242, 1'000'000'000);
    const uint32_t z = b.location("setup");
    const uint32_t th = b.thread(100, "main");
    b.begin(th, 2'000'000'000, z);
    b.end(th, 2'000'000'000 + duration_ns);
    b.flush();
    test::write_file(dir.file(name), b.bytes());
    return dir.file(name);
  };
  std::vector<std::string> base, head;
  for (int i = 0; i < 5; ++i) {
    base.push_back(once("b" + std::to_string(i), 1'000'000 + 1000 * i));
    head.push_back(once("h" + std::to_string(i), 2'000'000 + 1000 * i));
  }
  const DiffResult d = diff_runs(base, head);
  const DiffRow* setup = find(d.zones, "setup");
  ASSERT_TRUE(setup);
  EXPECT_NEAR(setup->change.change_pct, 100, 0.5);  // medians 1.002 and 2.002 ms
  EXPECT_TRUE(setup->change.known);                 // five calls a side, pooled
  EXPECT_EQ(setup->verdict, Verdict::Regressed);
}

TEST(PerfDiffCommand, RunsTakesADirectoryOfRunDirectoriesPerSide) {
  test::TempDir dir;
  for (const char* side : {"base", "head"})
    for (int i = 0; i < 3; ++i) {
      std::filesystem::create_directories(dir.file(std::string(side) + "/run-" + std::to_string(i)));
      Recipe r{std::string(side) == "head" ? 1.3 : 1.0, static_cast<uint64_t>(i + (side[0] == 'h' ? 50 : 0))};
      record(dir, std::string(side) + "/run-" + std::to_string(i) + "/r.rpf", r);
    }
  const auto out = cli("diff --runs " + dir.file("base") + " " + dir.file("head") + " --fail-above 10%");
  EXPECT_EQ(out.exit_code, 3) << out.err;
  EXPECT_NE(out.out.find("runs: base 3, head 3; intervals from the run-to-run spread (0.5% resolution)"),
            std::string::npos)
      << out.out;
  const auto json =
      nlohmann::json::parse(cli("diff --runs --format json " + dir.file("base") + " " + dir.file("head")).out);
  EXPECT_EQ(json["base_runs"], 3);
  EXPECT_EQ(json["noise_measured"], true);
  EXPECT_EQ(json["zones"][0]["name"], "matmul");
  EXPECT_EQ(json["zones"][0]["verdict"], "regressed");
  // One recording a side says the noise was not measured.
  const auto pair = cli("diff " + dir.file("base/run-0/r.rpf") + " " + dir.file("head/run-0/r.rpf"));
  EXPECT_NE(pair.out.find("run-to-run noise not measured (one run a side): a 2% noise floor assumed"),
            std::string::npos)
      << pair.out;
  // A side without run directories: one line, usage status.
  const auto flat = cli("diff --runs " + dir.file("base/run-0") + " " + dir.file("head"));
  EXPECT_EQ(flat.exit_code, 1);
  EXPECT_EQ(std::count(flat.err.begin(), flat.err.end(), '\n'), 1) << flat.err;
  EXPECT_NE(flat.err.find("holds no run directory"), std::string::npos) << flat.err;
}

TEST(PerfDiffCommand, ExitStatusesACiJobActsOn) {
  test::TempDir dir;
  const std::string base = record(dir, "base.rpf", {1.0, 1});
  const std::string head = record(dir, "head.rpf", {1.2, 1});
  const auto regressed = cli("diff " + base + " " + head + " --fail-above 10%");
  EXPECT_EQ(regressed.exit_code, 3) << regressed.err;
  EXPECT_NE(regressed.out.find("regressed"), std::string::npos);
  EXPECT_NE(regressed.err.find("regressed by more than 10%"), std::string::npos) << regressed.err;
  EXPECT_EQ(cli("diff " + base + " " + head + " --fail-above 30").exit_code, 0);
  EXPECT_EQ(cli("diff " + base + " " + base + " --fail-above 1%").exit_code, 0);
  const auto json = cli("diff --format json " + base + " " + head);
  EXPECT_EQ(json.exit_code, 0);
  const nlohmann::json parsed = nlohmann::json::parse(json.out, nullptr, false);
  EXPECT_FALSE(parsed.is_discarded()) << json.out;
  EXPECT_EQ(parsed["zones"][0]["verdict"], "regressed");
}

TEST(PerfDiffCommand, BadInputIsOneLineAndItsOwnStatus) {
  test::TempDir dir;
  const std::string base = record(dir, "base.rpf", {1.0, 1});
  Recipe other;
  other.zone_a = "x";
  other.zone_b = "y";
  other.old_kernel = false;
  // Nothing in common but gemm_kernel: leave kernels out to have nothing at all.
  const std::string unrelated = record(dir, "other.rpf", other);
  const auto none = cli("diff " + base + " " + unrelated + " --ignore gemm_kernel");
  EXPECT_EQ(none.exit_code, 4);
  EXPECT_EQ(std::count(none.err.begin(), none.err.end(), '\n'), 1) << none.err;
  EXPECT_NE(none.err.find("nothing to compare"), std::string::npos) << none.err;
  const auto missing = cli("diff " + base + " " + dir.file("missing-dir"));
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_EQ(std::count(missing.err.begin(), missing.err.end(), '\n'), 1) << missing.err;
  EXPECT_TRUE(missing.out.empty());
  EXPECT_EQ(cli("diff " + base + " " + base + " --fail-above lots").exit_code, 1);
  EXPECT_EQ(cli("diff " + base).exit_code, 1);
}

}  // namespace
}  // namespace ringprof

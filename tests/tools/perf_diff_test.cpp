// `ringprof diff` on recordings made to differ in one place: the zone made
// 20% slower is `regressed` with an interval that covers +20%, the zone left
// alone is `unchanged`, kernels present on one side only are `added` or
// `removed`; the outputs and the command's exit statuses.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <algorithm>
#include <cmath>
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
      const auto da = static_cast<uint64_t>(slow(rng) * r.matmul_factor);
      b.begin(th, t += 1000, a);
      b.end(th, t += da);
      const auto dl = static_cast<uint64_t>(fast(rng));
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

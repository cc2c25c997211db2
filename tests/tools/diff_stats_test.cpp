// The statistics of `ringprof diff` against known distributions: a real
// shift is found with an interval that covers it, and two samples of one
// distribution are called different no more often than a 95% interval allows.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "ringprof/tools/diff_stats.h"

namespace ringprof {
namespace {

// Skewed, like durations: log-normal around `median_ns`, sorted.
std::vector<uint64_t> durations(std::mt19937_64& rng, size_t n, double median_ns, double sigma = 0.5) {
  std::lognormal_distribution<double> dist(std::log(median_ns), sigma);
  std::vector<uint64_t> v(n);
  for (auto& x : v) x = static_cast<uint64_t>(dist(rng));
  DurationSummary ignored = summarize_durations(v);  // sorts
  (void)ignored;
  return v;
}

TEST(DiffStats, SummaryOfKnownValues) {
  std::vector<uint64_t> v = {50, 10, 40, 20, 30, 100, 90, 80, 70, 60};
  const DurationSummary s = summarize_durations(v);
  EXPECT_EQ(s.calls, 10u);
  EXPECT_EQ(s.median_ns, 55u);   // (50 + 60) / 2
  EXPECT_EQ(s.p90_ns, 90u);      // nearest rank: the 9th of 10
  EXPECT_EQ(s.total_ns, 550u);
  EXPECT_DOUBLE_EQ(s.mean_ns, 55.0);
  std::vector<uint64_t> none;
  EXPECT_EQ(summarize_durations(none).calls, 0u);
}

// +20% on the median, many seeds: always `regressed`, and the interval covers
// +20% about 95% of the time (at least 90% of 200 seeds).
TEST(DiffStats, ATwentyPercentShiftIsFoundWithAnIntervalThatCoversIt) {
  int covered = 0, regressed = 0;
  constexpr int kSeeds = 200;
  for (int seed = 0; seed < kSeeds; ++seed) {
    std::mt19937_64 rng(seed);
    const auto base = durations(rng, 2000, 100000);
    const auto head = durations(rng, 2000, 120000);
    const Change c = median_change(base, head);
    ASSERT_TRUE(c.known);
    EXPECT_LT(c.ci_low_pct, c.change_pct);
    EXPECT_GT(c.ci_high_pct, c.change_pct);
    covered += c.ci_low_pct <= 20 && 20 <= c.ci_high_pct;
    regressed += verdict_of(c, 5) == Verdict::Regressed;
  }
  EXPECT_EQ(regressed, kSeeds);
  EXPECT_GE(covered, kSeeds * 90 / 100) << covered << " of " << kSeeds;
}

// The mirror image: 20% faster is `improved`.
TEST(DiffStats, ATwentyPercentSpeedUpIsImproved) {
  std::mt19937_64 rng(7);
  const auto base = durations(rng, 2000, 100000);
  const auto head = durations(rng, 2000, 80000);
  const Change c = median_change(base, head);
  EXPECT_NEAR(c.change_pct, -20, 3);
  EXPECT_EQ(verdict_of(c, 5), Verdict::Improved);
}

// Two samples of one distribution: the interval excludes 0 in about 5% of
// seeds (at most 8% of 1000; the bound is loose for the noise of 1000 trials,
// tight enough to catch an interval half as wide as it should be, which
// excludes 0 about a third of the time). The threshold only lowers that.
TEST(DiffStats, OneDistributionTwiceIsUnchangedAtTheStatedFalsePositiveRate) {
  int flagged = 0, flagged_at_default = 0;
  constexpr int kSeeds = 1000;
  for (int seed = 0; seed < kSeeds; ++seed) {
    std::mt19937_64 rng(1000 + seed);
    const auto base = durations(rng, 1000, 50000, 0.8);
    const auto head = durations(rng, 1000, 50000, 0.8);
    const Change c = median_change(base, head);
    flagged += verdict_of(c, 0) != Verdict::Unchanged;
    flagged_at_default += verdict_of(c, 5) != Verdict::Unchanged;
  }
  EXPECT_LE(flagged, kSeeds * 8 / 100) << flagged << " of " << kSeeds;
  EXPECT_GE(flagged, 1) << "an interval that never excludes 0 is too wide to be 95%";
  EXPECT_LE(flagged_at_default, flagged);
}

// With many calls even a real 2% shift is sure; the threshold (default 5%)
// is what keeps it from being called a regression.
TEST(DiffStats, ASureButSmallChangeIsUnchangedBelowTheThreshold) {
  std::mt19937_64 rng(11);
  const auto base = durations(rng, 200000, 100000, 0.3);
  const auto head = durations(rng, 200000, 102000, 0.3);
  const Change c = median_change(base, head);
  EXPECT_GT(c.ci_low_pct, 0);
  EXPECT_NEAR(c.change_pct, 2, 0.5);
  EXPECT_EQ(verdict_of(c, 0), Verdict::Regressed);
  EXPECT_EQ(verdict_of(c, 5), Verdict::Unchanged);
}

TEST(DiffStats, FewValuesGiveAnEstimateButNoVerdict) {
  const std::vector<uint64_t> base = {100, 100, 100}, head = {200, 200, 200};
  const Change c = median_change(base, head);
  EXPECT_DOUBLE_EQ(c.change_pct, 100.0);
  EXPECT_FALSE(c.known);
  EXPECT_EQ(verdict_of(c, 5), Verdict::Unchanged);
}

// Shares of samples: 20% of 10000 against 30% of 10000 is +50%, sure; 20 of
// 100 against 22 of 100 is not.
TEST(DiffStats, ShareChangesOfSampleCounts) {
  const Change big = share_change(2000, 10000, 3000, 10000);
  ASSERT_TRUE(big.known);
  EXPECT_NEAR(big.change_pct, 50, 1e-9);
  EXPECT_GT(big.ci_low_pct, 40);
  EXPECT_LT(big.ci_high_pct, 60);
  EXPECT_EQ(verdict_of(big, 5), Verdict::Regressed);
  const Change small = share_change(20, 100, 22, 100);
  EXPECT_NEAR(small.change_pct, 10, 1e-9);
  EXPECT_LT(small.ci_low_pct, 0);
  EXPECT_EQ(verdict_of(small, 5), Verdict::Unchanged);
  EXPECT_FALSE(share_change(0, 100, 5, 100).known);
}

// Known normal quantiles: 0.05 two-sided is 1.95996; 0.005 is 2.80703.
TEST(DiffStats, SimultaneousIntervalsWidenWithTheComparisons) {
  EXPECT_NEAR(simultaneous_z(1), 1.959964, 1e-5);
  EXPECT_NEAR(simultaneous_z(10), 2.807034, 1e-5);
  EXPECT_NEAR(simultaneous_z(0), 1.959964, 1e-5);
  std::mt19937_64 rng(3);
  const auto base = durations(rng, 500, 100000), head = durations(rng, 500, 100000);
  const Change one = median_change(base, head, simultaneous_z(1));
  const Change ten = median_change(base, head, simultaneous_z(10));
  EXPECT_DOUBLE_EQ(one.change_pct, ten.change_pct);
  EXPECT_LT(ten.ci_low_pct, one.ci_low_pct);
  EXPECT_GT(ten.ci_high_pct, one.ci_high_pct);
}

// The run-to-run noise floor: identical samples, which alone would give an
// interval of nothing but sampling noise, get at least ±2% with noise 2.
TEST(DiffStats, TheNoiseFloorWidensEveryInterval) {
  std::vector<uint64_t> same(1000, 100000);
  const Change bare = median_change(same, same, simultaneous_z(1), 0);
  EXPECT_DOUBLE_EQ(bare.ci_low_pct, 0.0);
  EXPECT_DOUBLE_EQ(bare.ci_high_pct, 0.0);
  const Change floored = median_change(same, same, simultaneous_z(1), 2);
  EXPECT_NEAR(floored.ci_low_pct, -100.0 / 102.0 * 2, 1e-9);  // exp(-log 1.02) - 1
  EXPECT_NEAR(floored.ci_high_pct, 2.0, 1e-9);
  EXPECT_EQ(verdict_of(floored, 0), Verdict::Unchanged);
}

TEST(DiffStats, VerdictNames) {
  EXPECT_STREQ(verdict_name(Verdict::Regressed), "regressed");
  EXPECT_STREQ(verdict_name(Verdict::Improved), "improved");
  EXPECT_STREQ(verdict_name(Verdict::Unchanged), "unchanged");
  EXPECT_STREQ(verdict_name(Verdict::Added), "added");
  EXPECT_STREQ(verdict_name(Verdict::Removed), "removed");
}

// Student's t quantiles against the tables (two-sided 95%: 12.706 for 1
// degree of freedom, 2.776 for 4, 2.228 for 10; 99%: 4.604 for 4) and the
// normal limit.
TEST(DiffStats, StudentsTQuantilesMatchTheTables) {
  EXPECT_NEAR(t_quantile(1, 0.05), 12.706, 0.001);
  EXPECT_NEAR(t_quantile(4, 0.05), 2.776, 0.001);
  EXPECT_NEAR(t_quantile(10, 0.05), 2.228, 0.001);
  EXPECT_NEAR(t_quantile(4, 0.01), 4.604, 0.001);
  EXPECT_NEAR(t_quantile(1e6, 0.05), simultaneous_z(1), 0.001);
  EXPECT_NEAR(t_quantile(7.5, 0.05), (t_quantile(7, 0.05) + t_quantile(8, 0.05)) / 2, 0.01);  // between
}

// Three runs a side, log medians spread by ±0.02 around 0 and 0.1: the
// change is e^0.1 - 1 = +10.52%; each side's variance 0.0004, so the
// standard error is sqrt(2 × 0.0004 / 3) = 0.01633 with Welch's 4 degrees
// of freedom, t = 2.7764, half-width 0.04534: [e^0.05466 - 1, e^0.14534 - 1].
TEST(DiffStats, RunsChangeIsWelchsIntervalOnTheRunsLogs) {
  const Change c = runs_change({0.0, 0.02, -0.02}, {0.1, 0.12, 0.08}, 1);
  ASSERT_TRUE(c.known);
  EXPECT_NEAR(c.change_pct, 10.517, 0.001);
  EXPECT_NEAR(c.ci_low_pct, 5.618, 0.01);
  EXPECT_NEAR(c.ci_high_pct, 15.644, 0.01);
  EXPECT_EQ(verdict_of(c, 5), Verdict::Regressed);
  // Two comparisons: each a 97.5% interval, wider.
  const Change two = runs_change({0.0, 0.02, -0.02}, {0.1, 0.12, 0.08}, 2);
  EXPECT_LT(two.ci_low_pct, c.ci_low_pct);
  EXPECT_GT(two.ci_high_pct, c.ci_high_pct);
  // Runs with the very same figure: the resolution floor alone, ±0.5%.
  const Change flat = runs_change({0.0, 0.0, 0.0}, {0.1, 0.1, 0.1}, 1, 0.5);
  ASSERT_TRUE(flat.known);
  EXPECT_NEAR(flat.ci_low_pct, (std::exp(0.1) / 1.005 - 1) * 100, 1e-9);
  EXPECT_NEAR(flat.ci_high_pct, (std::exp(0.1) * 1.005 - 1) * 100, 1e-9);
  // One run on a side: the estimate, no interval.
  const Change one = runs_change({0.0}, {0.1, 0.12, 0.08}, 1);
  EXPECT_FALSE(one.known);
  EXPECT_NEAR(one.change_pct, 10.517, 0.001);
  EXPECT_EQ(verdict_of(one, 5), Verdict::Unchanged);
}

}  // namespace
}  // namespace ringprof

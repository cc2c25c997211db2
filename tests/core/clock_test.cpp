// The tick converter (recording/clock.h): refining the rate never changes
// what ticks already made convert to, so a thread's times never go
// backwards when its events wait in a ring across a refine.
#include <gtest/gtest.h>

#include <vector>

#include "recording/clock.h"
#include "ringprof/ringprof.h"

using namespace ringprof;

TEST(TickConverter, RefiningKeepsOldTicksWhereTheyWereAndNeverGoesBack) {
  if (!cpu_has_invariant_tsc()) GTEST_SKIP() << "no invariant TSC: times are CLOCK_MONOTONIC already";
  TickConverter c(ClockSource::Tsc);
  const ClockCalibration first = c.calibration();
  const uint64_t t0 = first.tick_base;
  const double tps = first.ticks_per_second;
  const uint64_t second = static_cast<uint64_t>(tps);
  // Ticks of events made over the next few seconds, converted now.
  std::vector<uint64_t> ticks, before;
  for (uint64_t k = 1; k <= 40; ++k) ticks.push_back(t0 + k * second / 10);
  for (uint64_t t : ticks) before.push_back(c.to_ns(t));
  // Three refines, each finding the clock 0.1% faster or slower than
  // thought: pieces start at 1 s, 2 s and 3 s.
  const double drift[3] = {1.001, 0.999, 1.001};
  for (int i = 0; i < 3; ++i) {
    const uint64_t at = t0 + static_cast<uint64_t>(i + 1) * second;
    c.refine_at(at, first.monotonic_base_ns + static_cast<uint64_t>((i + 1) * 1e9 * drift[i]));
    EXPECT_EQ(c.calibration().tick_base, at) << i;
  }
  // Ticks before each piece's start convert as they did before it was made;
  // across the whole range the mapping only goes up.
  uint64_t last = 0;
  for (size_t k = 0; k < ticks.size(); ++k) {
    const uint64_t ns = c.to_ns(ticks[k]);
    if (ticks[k] <= t0 + second) {
      EXPECT_EQ(ns, before[k]) << k;  // made before the first refine
    }
    EXPECT_GT(ns, last) << k;
    last = ns;
  }
  // Where a piece begins, the one before it ends: no jump at the seams.
  for (int i = 1; i <= 3; ++i) {
    const uint64_t seam = t0 + static_cast<uint64_t>(i) * second;
    const uint64_t a = c.to_ns(seam - 1), b = c.to_ns(seam);
    EXPECT_LE(b - a, 2u) << i;
  }
}

TEST(TickConverter, MorePiecesThanKeptStillNeverGoBackForRecentTicks) {
  if (!cpu_has_invariant_tsc()) GTEST_SKIP() << "no invariant TSC";
  TickConverter c(ClockSource::Tsc);
  const ClockCalibration first = c.calibration();
  const uint64_t second = static_cast<uint64_t>(first.ticks_per_second);
  uint64_t last = 0;
  for (uint32_t i = 1; i <= 3 * TickConverter::kPieces; ++i) {
    const uint64_t at = first.tick_base + i * second;
    const uint64_t before = c.to_ns(at - second / 2);  // an event half a second old, not yet read
    c.refine_at(at, first.monotonic_base_ns + static_cast<uint64_t>(i * 1e9 * (i % 2 ? 1.002 : 0.998)));
    EXPECT_EQ(c.to_ns(at - second / 2), before) << i;
    EXPECT_GT(c.to_ns(at), last) << i;
    last = c.to_ns(at);
  }
}

// Timestamps: the invariant TSC where the CPU has one, CLOCK_MONOTONIC
// otherwise. The recording path stores raw ticks; the drainer turns them into
// CLOCK_MONOTONIC nanoseconds with a rate it keeps refining against the
// kernel clock, so the absolute error stays near one clock_gettime jitter
// however long the process runs.
#pragma once

#include <cstdint>

#include "ringprof/config.h"
#include "ringprof/ringprof.h"
#include "ringprof/sink.h"

namespace ringprof {

// True when CPUID says the TSC runs at a constant rate in every C/P-state.
bool cpu_has_invariant_tsc() noexcept;

uint64_t realtime_now_ns() noexcept;

// Picks the clock source for `choice` (Auto: TSC when invariant).
ClockSource choose_clock(ClockChoice choice) noexcept;

// The linear map from TSC ticks to CLOCK_MONOTONIC ns that a calibration
// gives: ns = mono_base + (ticks - tick_base) * mult / 2^32. Ticks a hair
// before the base (another core's TSC slightly behind) map back, never below
// zero. Async-signal-safe: the crash handler maps its ticks with it too.
inline uint64_t map_ticks_to_ns(uint64_t ticks, uint64_t tick_base, uint64_t mono_base, uint64_t mult) noexcept {
  __extension__ typedef unsigned __int128 u128;  // a GNU extension: -Wpedantic stays quiet
  if (ticks >= tick_base) return mono_base + static_cast<uint64_t>((static_cast<u128>(ticks - tick_base) * mult) >> 32);
  const uint64_t back = static_cast<uint64_t>((static_cast<u128>(tick_base - ticks) * mult) >> 32);
  return back < mono_base ? mono_base - back : 0;
}

// Ticks → CLOCK_MONOTONIC ns. Owned by the drainer thread.
class TickConverter {
 public:
  // Measures a first rate (about 2 ms of wall time for the TSC).
  explicit TickConverter(ClockSource source);
  // Re-measures the rate over the whole time since construction.
  void refine() noexcept;
  uint64_t to_ns(uint64_t ticks) const noexcept;
  ClockCalibration calibration() const noexcept;

 private:
  ClockSource source_;
  uint64_t cal_ticks_ = 0;  // the first pair: the baseline every rate is measured over
  uint64_t cal_mono_ = 0;
  uint64_t tick_base_ = 0;  // the current anchor of the mapping
  uint64_t mono_base_ = 0;
  uint64_t real_base_ = 0;
  uint64_t mult_ = 1ull << 32;  // ns per tick, 32.32 fixed point
  double ticks_per_second_ = 1e9;
};

}  // namespace ringprof

// Timestamps: the invariant TSC where the CPU has one, CLOCK_MONOTONIC
// otherwise. The recording path stores raw ticks; the drainer turns them into
// CLOCK_MONOTONIC nanoseconds with a rate it keeps refining against the
// kernel clock, so the absolute error stays near one clock_gettime jitter
// however long the process runs.
#pragma once

#include <cstdint>

#include "ringprof/config.h"
#include "ringprof/detail_zone.h"
#include "ringprof/internal/session_hooks.h"
#include "ringprof/memory.h"
#include "ringprof/ops.h"
#include "ringprof/rank.h"
#include "ringprof/recording.h"
#include "ringprof/sink.h"
#include "ringprof/sink.h"

namespace ringprof {

// True when CPUID says the TSC runs at a constant rate in every C/P-state.
bool cpu_has_invariant_tsc() noexcept;

// CLOCK_REALTIME now, plus `skew_ns` (Config::clock_skew_ns): every wall-clock
// time ringprof stores is read through here, so a simulated skew shifts all.
uint64_t realtime_now_ns(int64_t skew_ns = 0) noexcept;

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
//
// The mapping is piecewise linear: each refine() starts a new piece at the
// tick it was made, where the previous piece stands, with the better rate.
// Ticks before that anchor keep the piece they fall in, so an event still in
// a ring when the rate changes converts exactly as it would have before, and
// a thread's times never go backwards however old its unread events are
// (within kPieces refines: about that many seconds of backlog; older ticks
// take the oldest piece kept, extended back).
class TickConverter {
 public:
  // Measures a first rate (about 2 ms of wall time for the TSC). The wall
  // clock's base is read with `realtime_skew_ns` added (Config::clock_skew_ns).
  explicit TickConverter(ClockSource source, int64_t realtime_skew_ns = 0);
  // Re-measures the rate over the whole time since construction.
  void refine() noexcept;
  // The same with the tick/ns pair given (tests).
  void refine_at(uint64_t ticks, uint64_t mono_ns) noexcept;
  // Inline for the common case (a TSC tick in the newest piece): the drainer
  // converts every event, and the call was a sixth of its time per event.
  uint64_t to_ns(uint64_t ticks) const noexcept {
    const Piece& p = pieces_[newest_];
    if (source_ == ClockSource::Tsc && ticks >= p.tick_base)
      return map_ticks_to_ns(ticks, p.tick_base, p.mono_base, p.mult);
    return to_ns_older(ticks);
  }
  // The current piece (crash flush maps with it; files state it).
  ClockCalibration calibration() const noexcept;

  static constexpr uint32_t kPieces = 16;

 private:
  struct Piece {
    uint64_t tick_base = 0;
    uint64_t mono_base = 0;
    uint64_t mult = 1ull << 32;  // ns per tick, 32.32 fixed point
  };
  uint64_t to_ns_older(uint64_t ticks) const noexcept;

  ClockSource source_;
  uint64_t cal_ticks_ = 0;  // the first pair: the baseline every rate is measured over
  uint64_t cal_mono_ = 0;
  uint64_t real_base_ = 0;
  Piece pieces_[kPieces];   // pieces_[(newest_ - k) % kPieces]: the k-th most recent
  uint32_t newest_ = 0;
  uint32_t count_ = 1;
  double ticks_per_second_ = 1e9;
};

}  // namespace ringprof

#include "recording/clock.h"

#include <time.h>

#if defined(__x86_64__) || defined(__i386__)
#include <cpuid.h>
#include <x86intrin.h>
#endif

namespace ringprof {

bool cpu_has_invariant_tsc() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;
  if (!__get_cpuid(0x80000000u, &eax, &ebx, &ecx, &edx) || eax < 0x80000007u) return false;
  if (!__get_cpuid(0x80000007u, &eax, &ebx, &ecx, &edx)) return false;
  return (edx & (1u << 8)) != 0;
#else
  return false;
#endif
}

static uint64_t read_clock(clockid_t id) noexcept {
  timespec ts;
  clock_gettime(id, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

uint64_t realtime_now_ns() noexcept { return read_clock(CLOCK_REALTIME); }

ClockSource choose_clock(ClockChoice choice) noexcept {
  switch (choice) {
    case ClockChoice::Monotonic: return ClockSource::Monotonic;
    case ClockChoice::Tsc:
    case ClockChoice::Auto: return cpu_has_invariant_tsc() ? ClockSource::Tsc : ClockSource::Monotonic;
  }
  return ClockSource::Monotonic;
}

// A (ticks, monotonic) pair read as close together as possible: the tick read
// is bracketed by two kernel clock reads and paired with their midpoint.
static void paired_read(ClockSource source, uint64_t* ticks, uint64_t* mono) noexcept {
#if defined(__x86_64__) || defined(__i386__)
  if (source == ClockSource::Tsc) {
    uint64_t best_gap = ~0ull;
    for (int i = 0; i < 5; ++i) {
      const uint64_t a = internal::monotonic_ns();
      const uint64_t t = __rdtsc();
      const uint64_t b = internal::monotonic_ns();
      if (b - a < best_gap) {
        best_gap = b - a;
        *ticks = t;
        *mono = a + (b - a) / 2;
      }
    }
    return;
  }
#endif
  (void)source;
  *mono = internal::monotonic_ns();
  *ticks = *mono;
}

TickConverter::TickConverter(ClockSource source) : source_(source) {
  paired_read(source_, &tick_base_, &mono_base_);
  cal_ticks_ = tick_base_;
  cal_mono_ = mono_base_;
  real_base_ = realtime_now_ns() - (internal::monotonic_ns() - mono_base_);
  if (source_ == ClockSource::Tsc) {
    // A first rate over ~2 ms of spinning; refine() improves it as time passes.
    uint64_t t = 0, m = 0;
    do {
      paired_read(source_, &t, &m);
    } while (m - mono_base_ < 2000000);
    ticks_per_second_ = static_cast<double>(t - tick_base_) * 1e9 / static_cast<double>(m - mono_base_);
    mult_ = static_cast<uint64_t>(1e9 / ticks_per_second_ * 4294967296.0);
  }
}

void TickConverter::refine() noexcept {
  if (source_ != ClockSource::Tsc) return;
  uint64_t t = 0, m = 0;
  paired_read(source_, &t, &m);
  if (m - cal_mono_ < 50000000 || t <= cal_ticks_) return;  // too short a baseline to improve
  // The rate comes from the whole baseline since construction; the mapping is
  // re-anchored where the old one stands now, so converted times never jump
  // (a jump would reorder a thread's events or shorten a zone).
  const uint64_t here = to_ns(t);
  ticks_per_second_ = static_cast<double>(t - cal_ticks_) * 1e9 / static_cast<double>(m - cal_mono_);
  tick_base_ = t;
  mono_base_ = here;
  mult_ = static_cast<uint64_t>(1e9 / ticks_per_second_ * 4294967296.0);
}

uint64_t TickConverter::to_ns(uint64_t ticks) const noexcept {
  if (source_ != ClockSource::Tsc) return ticks;
  return map_ticks_to_ns(ticks, tick_base_, mono_base_, mult_);
}

ClockCalibration TickConverter::calibration() const noexcept {
  ClockCalibration c;
  c.source = source_;
  c.ticks_per_second = ticks_per_second_;
  c.tick_base = tick_base_;
  c.monotonic_base_ns = mono_base_;
  c.realtime_base_ns = mono_base_ + (real_base_ - cal_mono_);  // the same wall-clock offset at the current anchor
  return c;
}

}  // namespace ringprof

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

uint64_t realtime_now_ns(int64_t skew_ns) noexcept {
  return read_clock(CLOCK_REALTIME) + static_cast<uint64_t>(skew_ns);  // modulo 2^64: a negative skew subtracts
}

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

TickConverter::TickConverter(ClockSource source, int64_t realtime_skew_ns) : source_(source) {
  Piece& first = pieces_[0];
  paired_read(source_, &first.tick_base, &first.mono_base);
  cal_ticks_ = first.tick_base;
  cal_mono_ = first.mono_base;
  real_base_ = realtime_now_ns(realtime_skew_ns) - (internal::monotonic_ns() - first.mono_base);
  if (source_ == ClockSource::Tsc) {
    // A first rate over ~2 ms; refine() improves it as time passes. Slept,
    // not spun: the paired reads at both ends make the rate, and a spin
    // would cost every start 2 ms of CPU.
    uint64_t t = 0, m = 0;
    for (;;) {
      paired_read(source_, &t, &m);
      if (m - first.mono_base >= 2000000) break;
      const uint64_t left = 2000000 - (m - first.mono_base);
      timespec ts{0, static_cast<long>(left)};
      nanosleep(&ts, nullptr);
    }
    ticks_per_second_ = static_cast<double>(t - first.tick_base) * 1e9 / static_cast<double>(m - first.mono_base);
    first.mult = static_cast<uint64_t>(1e9 / ticks_per_second_ * 4294967296.0);
  }
}

void TickConverter::refine() noexcept {
  if (source_ != ClockSource::Tsc) return;
  uint64_t t = 0, m = 0;
  paired_read(source_, &t, &m);
  refine_at(t, m);
}

void TickConverter::refine_at(uint64_t t, uint64_t m) noexcept {
  if (source_ != ClockSource::Tsc) return;
  const Piece& current = pieces_[newest_];
  if (m - cal_mono_ < 50000000 || t <= cal_ticks_ || t <= current.tick_base) return;  // too short a baseline
  // The rate comes from the whole baseline since construction; the new piece
  // starts where the current one stands now, so converted times never jump
  // (a jump would reorder a thread's events or shorten a zone).
  Piece next;
  next.tick_base = t;
  next.mono_base = to_ns(t);
  ticks_per_second_ = static_cast<double>(t - cal_ticks_) * 1e9 / static_cast<double>(m - cal_mono_);
  next.mult = static_cast<uint64_t>(1e9 / ticks_per_second_ * 4294967296.0);
  newest_ = (newest_ + 1) % kPieces;
  pieces_[newest_] = next;
  if (count_ < kPieces) ++count_;
}

uint64_t TickConverter::to_ns_older(uint64_t ticks) const noexcept {
  if (source_ != ClockSource::Tsc) return ticks;
  // The newest piece that starts at or before `ticks`; almost always the
  // current one (events are converted within a second or so of being made).
  uint32_t i = newest_;
  for (uint32_t k = 1; k < count_ && ticks < pieces_[i].tick_base; ++k) i = (i + kPieces - 1) % kPieces;
  const Piece& p = pieces_[i];
  return map_ticks_to_ns(ticks, p.tick_base, p.mono_base, p.mult);
}

ClockCalibration TickConverter::calibration() const noexcept {
  ClockCalibration c;
  c.source = source_;
  c.ticks_per_second = ticks_per_second_;
  const Piece& p = pieces_[newest_];
  c.tick_base = p.tick_base;
  c.monotonic_base_ns = p.mono_base;
  c.realtime_base_ns = p.mono_base + (real_base_ - cal_mono_);  // the same wall-clock offset at the current anchor
  return c;
}

}  // namespace ringprof

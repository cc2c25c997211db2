// A wake-up for an idle drainer when the application runs again. Before an
// idle sleep the drainer arms a POSIX timer on the process's CPU-time clock
// (every thread's time together) for a little more CPU; its expiry sends the
// sample signal to the drainer thread, whose handler sees the alarm's key and
// wakes the drainer (drainer_wake::wake_if_idle). So an idle process's
// drainer sleeps as long with the CPU sampler on as without it, and a thread
// that starts to run meanwhile is found by the next scan within a scheduler
// tick or two instead of a sleep later.
#pragma once

#include <time.h>

#include <cstdint>
#include <memory>

namespace ringprof::sampler {

// The timer's signal value: never a slot's key (generation << 32 | slot + 1,
// with slot + 1 at most kSlots), so the handler tells them apart.
inline constexpr uint64_t kCpuAlarmKey = ~uint64_t{0};

class CpuAlarm {
 public:
  // On the thread to wake, with the sample signal `signo` installed: creates
  // the timer and unblocks `signo` on this thread (ringprof's threads block
  // every signal). Null when the timer cannot be made.
  static std::unique_ptr<CpuAlarm> create(int signo) noexcept;
  ~CpuAlarm();
  CpuAlarm(const CpuAlarm&) = delete;
  CpuAlarm& operator=(const CpuAlarm&) = delete;
  // Signals once after `cpu_ns` more CPU time of the process, replacing any
  // earlier arming. False when the kernel refuses.
  bool arm(uint64_t cpu_ns) noexcept;

 private:
  explicit CpuAlarm(timer_t id) noexcept : id_(id) {}
  timer_t id_;
};

}  // namespace ringprof::sampler

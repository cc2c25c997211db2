// A wake-up for an idle drainer when the application runs again. Right
// before an idle sleep the drainer arms a POSIX timer on the process's
// CPU-time clock (every thread's time together, ringprof's included) for a
// little more CPU and unblocks the sample signal on itself; the timer's
// expiry sends that signal to the drainer thread, whose handler sees the
// alarm's key and wakes the drainer (drainer_wake::wake_if_idle). When the
// sleep ends the drainer disarms the timer and blocks the signal again, so no
// handler runs on ringprof's thread outside that sleep (user callbacks on the
// drainer never see an EINTR of ours). So an idle process's drainer sleeps as
// long with the CPU sampler on as without it, and a thread that starts to run
// meanwhile is found by the next scan within a scheduler tick or two instead
// of a sleep later.
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
  // On the thread to wake, with the sample signal `signo` installed: the
  // timer, aimed at this thread. Null when it cannot be made.
  static std::unique_ptr<CpuAlarm> create(int signo) noexcept;
  ~CpuAlarm();
  CpuAlarm(const CpuAlarm&) = delete;
  CpuAlarm& operator=(const CpuAlarm&) = delete;
  // Signals this thread once after `cpu_ns` more CPU time of the process,
  // and unblocks the signal here (ringprof's threads block every signal).
  // False, and nothing changed, when the kernel refuses.
  bool arm(uint64_t cpu_ns) noexcept;
  // Stops the timer and blocks the signal again; a signal already sent is
  // taken first. Nothing when not armed.
  void disarm() noexcept;

 private:
  CpuAlarm(timer_t id, int signo) noexcept : id_(id), signo_(signo) {}
  timer_t id_;
  int signo_;
  bool armed_ = false;
};

}  // namespace ringprof::sampler

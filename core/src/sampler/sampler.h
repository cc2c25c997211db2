// The CPU stack sampler: picks a mechanism, keeps every thread of the process
// covered, and hands samples to the drainer. Lives on the drainer thread.
//
// Mechanisms:
//   perf_signal    (default) one perf_event_open task-clock counter per
//                  thread with a period of 1e9/hz ns of the thread's CPU time,
//                  whose overflows signal the thread; the handler unwinds
//                  there (.eh_frame, frame pointers, interpreter frames) into
//                  a per-thread sample ring (signal_thread_sampler.h).
//   timer_signal   where perf_event_open is refused (perf_event_paranoid,
//                  seccomp, containers) or RINGPROF_SAMPLER=timer: the same
//                  handler, sent by a per-thread CPU-time timer.
//   perf_event     RINGPROF_SAMPLER=perf: the kernel's user call chains
//                  (frame pointers only) into a small mmap ring per thread;
//                  the application runs no code of ours per sample.
//   off            RINGPROF_SAMPLE_HZ=0, or nothing works (one warning).
//
// Coverage: the drainer calls watch() for the thread of every new event ring,
// and upkeep() lists /proc/self/task every 100 ms to find threads that never
// record an event and to retire those that exited. The drainer thread itself
// is never sampled. Failures never reach the application: a thread that
// cannot be covered is left out (one warning per process).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "ringprof/config.h"
#include "ringprof/sink.h"
#include "sampler/frame_walker.h"
#include "sampler/sample_visitor.h"
#include "sampler/unwind_index.h"

namespace ringprof::sampler {

class CpuAlarm;
class PerfThreadEvent;
class SignalThreadSampler;

class Sampler {
 public:
  // Chooses the mechanism; call on the drainer thread (it is never sampled).
  Sampler(uint32_t hz, SamplerChoice choice);
  ~Sampler();
  Sampler(const Sampler&) = delete;
  Sampler& operator=(const Sampler&) = delete;

  // Mechanism and reason; `version` changes when sampling stops on its own.
  const SamplerState& state() const noexcept { return state_; }
  bool on() const noexcept { return mechanism_ != Mechanism::Off; }
  // Its unwind tables are published (the signal mechanisms): the heap
  // sampler's in-thread walks use them too.
  bool unwinds_in_process() const noexcept {
    return mechanism_ == Mechanism::PerfSignal || mechanism_ == Mechanism::Timer;
  }

  // When the next listing of threads is due (CLOCK_MONOTONIC ns): a drainer
  // whose application runs wakes for it.
  uint64_t next_scan_ns() const noexcept { return next_scan_ns_; }

  // Starts sampling `tid` unless it already is, is the drainer, or cannot be.
  // True when newly covered.
  bool watch(uint32_t tid);
  // Never samples `tid` (ringprof's own writer thread, like the drainer).
  void ignore(uint32_t tid) { ignored_tid_ = tid; }
  // Every 100 ms (or when `force`): refreshes the unwind tables, stops if
  // the application took the signal over, and when `scan_threads` covers new
  // threads (appended to *added) and retires exited ones after delivering
  // their last samples (appended to *removed). True when it listed them.
  bool upkeep(uint64_t now_ns, bool force, bool scan_threads, SampleVisitor& v, std::vector<uint32_t>* added,
              std::vector<uint32_t>* removed);
  // Delivers every sample ready.
  void collect(SampleVisitor& v);
  // Stops every timer and event and delivers what is left. Idempotent.
  void stop(SampleVisitor& v);

  // Switches every covered thread, and those covered later, to `hz` samples
  // per CPU second (perf_event: PERF_EVENT_IOC_PERIOD; timers:
  // timer_settime); 0 pauses sampling until the next call. Updates state()
  // (hz, version) when the rate changes. Nothing when sampling is off.
  void set_hz(uint32_t hz);

  // On the drainer thread, right before an idle sleep: signals it (its
  // handler wakes an idle drainer) once the process has used `cpu_ns` more
  // CPU (cpu_alarm.h). False where the mechanism has no signal of its own
  // (perf_event's rings, off, stopped), the application took the signal
  // over, or the timer cannot be made. disarm_cpu_alarm() when the sleep
  // ends.
  bool arm_cpu_alarm(uint64_t cpu_ns);
  void disarm_cpu_alarm() noexcept;

  // Samples taken so far: delivered, waiting, or lost.
  uint64_t taken() const noexcept;
  // Time the signal mechanisms' handler ran on the sampled threads so far.
  uint64_t handler_ns() const noexcept;

 private:
  enum class Mechanism : uint8_t { Off, Perf, PerfSignal, Timer };
  void go_off(const std::string& why, bool warn);
  void warn_thread_failure(uint32_t tid, int err);
  void close_thread(uint32_t tid, SampleVisitor& v);

  Mechanism mechanism_ = Mechanism::Off;
  SamplerState state_;
  uint32_t hz_ = 0;       // the rate threads sample at (while not paused)
  bool paused_ = false;   // set_hz(0): threads are covered but not sampled
  uint32_t self_tid_ = 0;
  uint32_t ignored_tid_ = 0;
  int signo_ = 0;
  StackReader::Mode reader_mode_ = StackReader::Mode::ProcessVmReadv;
  bool stopped_ = false;
  uint64_t next_scan_ns_ = 0;   // the next listing of threads
  uint64_t next_check_ns_ = 0;  // the next unwind refresh and signal check
  uint64_t taken_closed_ = 0;  // by threads no longer covered (timer mode)
  uint64_t handler_ns_closed_ = 0;
  uint64_t taken_perf_ = 0;    // perf mode: records read plus losses the kernel reported
  std::unordered_map<uint32_t, std::unique_ptr<PerfThreadEvent>> perf_;
  std::unordered_map<uint32_t, std::unique_ptr<SignalThreadSampler>> timers_;
  std::unordered_set<uint32_t> failed_;  // tids that could not be covered: not retried
  std::vector<unsigned char> scratch_;
  UnwindIndex unwind_;  // the signal mechanisms' view of the loaded objects' unwind tables
  std::unique_ptr<CpuAlarm> alarm_;
  bool alarm_failed_ = false;  // not retried
};

// Human text for an errno: "EACCES", or the number.
std::string errno_name(int err);

}  // namespace ringprof::sampler

// The fallback sampler for where perf_event_open is refused: a POSIX timer on
// each thread's own CPU-time clock delivers a real-time signal to that thread
// (SIGEV_THREAD_ID) every 1/hz of its CPU time, and the handler walks the
// interrupted frame pointers.
//
// Who touches what:
//   - The drainer arms a thread: it allocates the thread's sample ring (a
//     ringprof::Ring, never the thread's event ring, which the thread may be
//     writing when the signal lands) and a scratch window for guarded reads,
//     publishes them in a slot of a fixed, process-wide table, then creates
//     the timer with the slot's key (generation << 32 | slot + 1) as the
//     signal's value.
//   - The handler (on the sampled thread) finds its slot from that value,
//     checks the key and its tid, walks the stack and writes one Sample record
//     (the event plus sample_frame_slots(n) slots of frames) into the ring:
//     it is the ring's only producer. It is async-signal-safe: no allocation,
//     no lock, errno preserved. A full ring drops and counts the sample.
//   - The drainer reads the ring like an event ring. To disarm, it deletes
//     the timer, clears the key and waits until no handler is inside the slot
//     (the slot's `busy` count) before freeing anything; a signal still in
//     flight then finds a stale key and does nothing.
//   - The handler stays installed for the life of the process (a late signal
//     must never meet the default action, which would kill the process).
#pragma once

#include <time.h>

#include <cstdint>
#include <memory>
#include <string>

#include "ringprof/event.h"
#include "sampler/frame_walker.h"
#include "sampler/sample_visitor.h"

namespace ringprof::sampler {

// Installs the sample handler on a free real-time signal (one whose handler
// is the default), once per process; returns the signal, or 0 with *why set.
// Later calls return the same signal while our handler is still installed.
int ensure_sample_signal(std::string* why);
// False when the application replaced our handler on `signo` since.
bool sample_signal_intact(int signo);

class TimerThreadSampler {
 public:
  static std::unique_ptr<TimerThreadSampler> open(uint32_t tid, uint32_t hz, int signo, StackReader::Mode mode,
                                                  int* err);
  // Disarms (when not done yet) and frees.
  ~TimerThreadSampler();
  TimerThreadSampler(const TimerThreadSampler&) = delete;
  TimerThreadSampler& operator=(const TimerThreadSampler&) = delete;

  // Delivers every sample ready and the drops since the last call.
  void read(SampleVisitor& v);
  // Stops the timer and waits until the handler is out of the slot; read()
  // afterwards gets the last samples.
  void disarm();
  // Sets the timer's interval to 1/hz of the thread's CPU time, starting
  // now; hz == 0 stops it until the next set_hz (the slot stays). False
  // (errno set) when the kernel refuses or the timer is disarmed.
  bool set_hz(uint32_t hz);
  // Samples the handler took (delivered, waiting or dropped).
  uint64_t taken() const noexcept;
  uint32_t tid() const noexcept { return tid_; }

 private:
  TimerThreadSampler() = default;
  uint32_t tid_ = 0;
  uint32_t slot_ = 0;
  timer_t timer_{};
  bool has_slot_ = false;
  bool armed_ = false;
  bool leaked_ = false;  // a handler never left the slot: keep its memory forever
  uint64_t dropped_seen_ = 0;
  uint64_t frames_[kMaxSampleFrames];
};

// In a forked child: forget every slot (the parent's timers do not exist
// there; its rings leak).
void reset_timer_slots_after_fork() noexcept;

}  // namespace ringprof::sampler

// Sampling by a signal on the sampled thread, whose handler unwinds there
// (stack_unwinder.h): native frames through .eh_frame and frame pointers,
// interpreter frames through the registered hooks. Two clocks send it:
//   perf     a perf_event task-clock counter of the thread, with no ring,
//            whose every overflow sends our signal to that thread (O_ASYNC,
//            F_SETSIG, F_SETOWN_EX with F_OWNER_TID): exact periods of the
//            thread's CPU time at any rate;
//   timer    where perf_event_open is refused: a POSIX timer on the thread's
//            CPU-time clock (SIGEV_THREAD_ID), which expires on the scheduler
//            tick, so rates above CONFIG_HZ fold periods together (counted
//            as lost).
//
// Who touches what:
//   - The drainer arms a thread: it allocates the thread's sample ring (a
//     ringprof::Ring, never the thread's event ring, which the thread may be
//     writing when the signal lands), the windows for guarded reads and the
//     unwinder's buffers, publishes them in a slot of a fixed, process-wide
//     table, then creates the clock with the slot's key (generation << 32 |
//     slot + 1): as the timer's signal value, or in a table indexed by the
//     perf descriptor (the signal carries si_fd).
//   - The handler (on the sampled thread) finds its slot from that key,
//     checks the key and its tid, walks the stack and writes one Sample record
//     (the event plus sample_frame_slots(n) slots of words) into the ring: it
//     is the ring's only producer. It is async-signal-safe: no allocation, no
//     lock, errno preserved. A full ring drops and counts the sample.
//   - The drainer reads the ring like an event ring. To disarm, it clears the
//     key, deletes the clock and waits until no handler is inside the slot
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

// Words in one raw sample: native frames take one, interpreter frames two.
inline constexpr size_t kMaxSampleWords = 2 * kMaxSampleFrames;

// Installs the sample handler on a free real-time signal (one whose handler
// is the default), once per process; returns the signal, or 0 with *why set.
// Later calls return the same signal while our handler is still installed.
int ensure_sample_signal(std::string* why);
// False when the application replaced our handler on `signo` since.
bool sample_signal_intact(int signo);

// Whether a perf_event task clock can signal a thread of this process.
// 0, or the errno that refused it.
int probe_perf_clock(uint32_t hz, int signo);

class SignalThreadSampler {
 public:
  enum class Clock : uint8_t { Perf, Timer };
  static std::unique_ptr<SignalThreadSampler> open(uint32_t tid, uint32_t hz, int signo, Clock clock,
                                                   StackReader::Mode mode, int* err);
  // Disarms (when not done yet) and frees.
  ~SignalThreadSampler();
  SignalThreadSampler(const SignalThreadSampler&) = delete;
  SignalThreadSampler& operator=(const SignalThreadSampler&) = delete;

  // Delivers every sample ready and the drops since the last call.
  void read(SampleVisitor& v);
  // Stops the clock and waits until the handler is out of the slot; read()
  // afterwards gets the last samples.
  void disarm();
  // Sets the clock's period to 1/hz of the thread's CPU time; hz == 0 stops
  // it until the next set_hz (the slot stays). False (errno set) when the
  // kernel refuses or the clock is disarmed.
  bool set_hz(uint32_t hz);
  // Samples the handler took (delivered, waiting or dropped).
  uint64_t taken() const noexcept;
  // Time its handler has run so far.
  uint64_t handler_ns() const noexcept;
  uint32_t tid() const noexcept { return tid_; }

 private:
  SignalThreadSampler() = default;
  uint32_t tid_ = 0;
  uint32_t slot_ = 0;
  Clock clock_ = Clock::Timer;
  timer_t timer_{};
  int fd_ = -1;
  bool has_slot_ = false;
  bool armed_ = false;
  bool leaked_ = false;  // a handler never left the slot: keep its memory forever
  uint64_t dropped_seen_ = 0;
  bool stack_looked_up_ = false;
  uint64_t words_[kMaxSampleWords];
};

// In a forked child: forget every slot (the parent's clocks do not exist
// there; its rings leak).
void reset_signal_slots_after_fork() noexcept;

}  // namespace ringprof::sampler

// Waking the drainer: producers whose ring passes its wake fill, and the
// control calls (flush, stop), wake a drainer that sleeps between rounds.
//
// One futex word, `seq`, bumped by every wake, and one flag, `waiting`, set
// while the drainer is about to sleep or asleep. The drainer reads seq, sets
// waiting, issues a full fence, then looks at the rings (and its control
// flags) once more, and sleeps on seq only when nothing is past its wake
// fill. A producer issues a full fence after its last publish and then reads
// waiting. With both fences, either the drainer sees the producer's events
// or the producer sees the flag and wakes it: no wake is lost. The futex wait
// returns at once when seq moved after the drainer read it.
//
// Producers pay this once per wake fill (a quarter of a ring by default), in
// the ring's slow path, and make a system call only when the drainer sleeps.
// Everything is async-signal-safe (atomics and futex), as signal handlers
// write rings too.
#pragma once

#include <cstdint>

namespace ringprof::drainer_wake {

// The drainer, before it decides whether to sleep: returns the value to pass
// to sleep(). After it, anything a producer published before finding the
// drainer asleep is visible. `idle`: the drainer backs off after rounds that
// found nothing, and the next CPU sample or new thread wakes it (wake_if_idle).
// `until_event` (idle too): it sleeps until the next event, and lowers every
// ring's limit after this call (Ring::wake_at_next_claim), so the next claim
// of any thread wakes it (internal::ring_refilled, ring.h).
uint32_t prepare_to_sleep(bool idle = false, bool until_event = false) noexcept;
// For a wait on something other than events (the writer's room): the value
// to pass to wait(), which leaves the flags that producers and samplers read
// as they are (sleep() clears them). Another drainer may sleep between rounds
// meanwhile: one that a stuck disk left behind at stop() waits here while the
// next session runs.
uint32_t prepare_to_wait() noexcept;
// The drainer found work after prepare_to_sleep(): it will not sleep.
void cancel_sleep() noexcept;
// Sleeps until a wake or `timeout_ns`, unless a wake came since `seq` was read.
void sleep(uint32_t seq, uint64_t timeout_ns) noexcept;
// The same after prepare_to_wait(): the flags stay as they are.
void wait(uint32_t seq, uint64_t timeout_ns) noexcept;
// Wakes a drainer that prepared an idle sleep, once. Called by the CPU and
// heap samplers after writing a sample (its interpreter frames are named
// while their code is alive: they are read by address) and by a thread
// registering its ring (the sampler covers it once the drainer adopts it, and
// a short-lived thread would be gone first). One relaxed load when the
// drainer is not idle; async-signal-safe. What comes just before the drainer
// prepares its sleep waits for its timeout, as events below the wake fill do.
void wake_if_idle() noexcept;
// Wakes the drainer whether or not it sleeps (flush(), stop()).
void wake() noexcept;
// Wakes so far (producers and control), for the benchmarks and tests.
uint64_t wakes() noexcept;
// The drainer prepared a sleep until the next event and nothing woke it yet
// (for the tests).
bool sleeping_until_event() noexcept;
// In a forked child: no drainer waits.
void reset_after_fork() noexcept;

}  // namespace ringprof::drainer_wake

// The drainer's futex; the protocol is in drainer_wake.h.
#include "draining/drainer_wake.h"

#include <linux/futex.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <climits>

#include "ringprof/internal/ring.h"

namespace ringprof {
namespace {

constinit std::atomic<uint32_t> g_seq{0};
constinit std::atomic<uint32_t> g_waiting{0};
constinit std::atomic<uint64_t> g_wakes{0};
constinit std::atomic<uint32_t> g_idle{0};        // the drainer backs off (prepare_to_sleep's `idle`)
constinit std::atomic<uint32_t> g_next_event{0};  // it sleeps until the next event (`until_event`)

// Every waiter, not one: a drainer that a stuck disk left behind at stop()
// still waits on this word for its writer (Drainer::wait_for_writer) while
// the next session's drainer sleeps on it too, and a wake meant for the new
// one must not be taken by the old (BatchWriter.StopGivesUpOn... started a
// second session whose stop() then waited 10 s for nothing).
void futex_wake() noexcept {
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&g_seq), FUTEX_WAKE_PRIVATE, INT_MAX, nullptr, nullptr, 0);
}

}  // namespace

namespace internal {

void ring_past_wake_fill() noexcept {
  // Orders this thread's earlier publishes before the read of `waiting`
  // (the other half of the drainer's fence in prepare_to_sleep).
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (g_waiting.load(std::memory_order_relaxed) == 0) return;  // awake: it will look at the rings
  if (g_waiting.exchange(0, std::memory_order_acq_rel) == 0) return;  // another producer woke it
  g_seq.fetch_add(1, std::memory_order_release);
  g_wakes.fetch_add(1, std::memory_order_relaxed);
  futex_wake();
}

void ring_refilled() noexcept {
  // Orders this thread's store of its ring's limit before the read of the
  // flag (the other half: the drainer's fence in prepare_to_sleep, then its
  // compare-and-swap of the limit).
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (g_next_event.load(std::memory_order_relaxed) == 0) return;
  if (g_next_event.exchange(0, std::memory_order_acq_rel) == 0) return;  // another producer woke it
  drainer_wake::wake();
}

}  // namespace internal

namespace drainer_wake {

uint32_t prepare_to_sleep(bool idle, bool until_event) noexcept {
  const uint32_t seq = g_seq.load(std::memory_order_acquire);
  g_waiting.store(1, std::memory_order_relaxed);
  g_idle.store(idle || until_event ? 1 : 0, std::memory_order_relaxed);
  g_next_event.store(until_event ? 1 : 0, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  return seq;
}

uint32_t prepare_to_wait() noexcept { return g_seq.load(std::memory_order_acquire); }

void cancel_sleep() noexcept {
  g_waiting.store(0, std::memory_order_relaxed);
  g_idle.store(0, std::memory_order_relaxed);
  g_next_event.store(0, std::memory_order_relaxed);
}

void wait(uint32_t seq, uint64_t timeout_ns) noexcept {
  timespec ts{static_cast<time_t>(timeout_ns / 1000000000ull), static_cast<long>(timeout_ns % 1000000000ull)};
  // EINTR, EAGAIN (seq moved) and ETIMEDOUT all mean: go and look.
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&g_seq), FUTEX_WAIT_PRIVATE, seq, &ts, nullptr, 0);
}

void sleep(uint32_t seq, uint64_t timeout_ns) noexcept {
  wait(seq, timeout_ns);
  g_waiting.store(0, std::memory_order_relaxed);
  g_idle.store(0, std::memory_order_relaxed);
  g_next_event.store(0, std::memory_order_relaxed);
}

void wake_if_idle() noexcept {
  // A wake that lands before the futex wait moves seq, so the wait returns
  // at once: none is lost.
  if (g_idle.load(std::memory_order_relaxed) == 0) return;
  if (g_idle.exchange(0, std::memory_order_acq_rel) == 0) return;  // another caller woke it
  wake();
}

void wake() noexcept {
  g_seq.fetch_add(1, std::memory_order_release);
  g_wakes.fetch_add(1, std::memory_order_relaxed);
  futex_wake();
}

uint64_t wakes() noexcept { return g_wakes.load(std::memory_order_relaxed); }

bool sleeping_until_event() noexcept { return g_next_event.load(std::memory_order_relaxed) != 0; }

void reset_after_fork() noexcept {
  g_waiting.store(0, std::memory_order_relaxed);
  g_idle.store(0, std::memory_order_relaxed);
  g_next_event.store(0, std::memory_order_relaxed);
}

}  // namespace drainer_wake
}  // namespace ringprof

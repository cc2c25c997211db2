// The process-wide detail level: base level + window holds → effective level,
// the pause/resume of the session switch for Off, mode marks, subscribers.
#include "operation/detail_level.h"

#include <mutex>
#include <new>
#include <vector>

#include "draining/drainer_wake.h"
#include "ringprof/detail_zone.h"
#include "ringprof/internal/session_hooks.h"
#include "ringprof/memory.h"
#include "ringprof/ops.h"
#include "ringprof/rank.h"
#include "ringprof/recording.h"
#include "ringprof/sink.h"

namespace ringprof {
namespace internal {
constinit std::atomic<uint8_t> g_effective_mode{static_cast<uint8_t>(Level::AlwaysOn)};
}  // namespace internal

namespace level {
namespace {

// Guards every change of the state below; held for a few stores and at most
// one event write, never across a call into user code.
constinit std::atomic<bool> g_spin{false};
constinit uint8_t g_base = static_cast<uint8_t>(Level::AlwaysOn);
constinit uint32_t g_holds = 0;
constinit std::atomic<uint32_t> g_session_id{0};   // the running session (0: none); changed under the spin
constinit std::atomic<uint64_t> g_version{0};

inline void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#endif
}

struct SpinGuard {
  SpinGuard() noexcept {
    while (g_spin.exchange(true, std::memory_order_acquire)) {
      while (g_spin.load(std::memory_order_relaxed)) cpu_relax();
    }
  }
  ~SpinGuard() { g_spin.store(false, std::memory_order_release); }
};

Level effective() noexcept {
  if (g_session_id.load(std::memory_order_relaxed) == 0) return Level::Off;
  return g_holds ? Level::Detailed : static_cast<Level>(g_base);
}

// Applies a change from `before` to the current effective level (spin held).
void apply(Level before) noexcept {
  const Level after = effective();
  if (after == before) return;
  internal::g_effective_mode.store(static_cast<uint8_t>(after), std::memory_order_relaxed);
  g_version.fetch_add(1, std::memory_order_release);
  const uint32_t session = g_session_id.load(std::memory_order_relaxed);
  if (session == 0) return;
  // The mark goes out while recording is on: after resuming, before pausing.
  if (before == Level::Off) internal::g_session.store(session, std::memory_order_release);
  mark(kMarkMode, static_cast<uint64_t>(after));
  if (after == Level::Off) internal::g_session.store(0, std::memory_order_release);
  // The subscribers run on the drainer, which may sleep a whole drain
  // interval (10 ms): long enough for a training loop to run steps of a
  // detailed window before the GPU's detailed kinds (NVTX, syncs) are on.
  // Seen on an H200: a 20-step window's first three steps had no NVTX
  // ranges. Woken now, the drainer switches them within its wake-up time.
  // A futex wake: safe in the signal handlers that open trigger windows.
  drainer_wake::wake();
}

std::mutex g_subscribers_mutex;
std::vector<std::pair<int, ModeCallback>>* g_subscribers = nullptr;  // immortal
int g_next_subscriber = 1;

}  // namespace

void hold(Hold h, bool on) noexcept {
  SpinGuard guard;
  const Level before = effective();
  g_holds = on ? (g_holds | h) : (g_holds & ~static_cast<uint32_t>(h));
  apply(before);
}

uint32_t session_starting(uint32_t session, Level base) noexcept {
  SpinGuard guard;
  g_base = static_cast<uint8_t>(base);
  g_holds = 0;
  g_session_id.store(session, std::memory_order_relaxed);
  const Level now = effective();
  internal::g_effective_mode.store(static_cast<uint8_t>(now), std::memory_order_relaxed);
  g_version.fetch_add(1, std::memory_order_release);
  return now == Level::Off ? 0 : session;
}

void session_started() noexcept {
  SpinGuard guard;
  // A session that starts at another level than the default says so, so a
  // file tells which level its events were taken at (no mark at all means
  // always_on: sessions that never touch levels record nothing extra).
  if (effective() == Level::Detailed) mark(kMarkMode, static_cast<uint64_t>(effective()));
}

void session_stopping() noexcept {
  SpinGuard guard;
  g_session_id.store(0, std::memory_order_relaxed);
  g_holds = 0;
  internal::g_effective_mode.store(static_cast<uint8_t>(Level::Off), std::memory_order_relaxed);
  g_version.fetch_add(1, std::memory_order_release);
}

void reset_after_fork() noexcept {
  // The forking thread may have held the spin; the child has only this thread.
  g_spin.store(false, std::memory_order_relaxed);
  g_session_id.store(0, std::memory_order_relaxed);
  g_holds = 0;
  internal::g_effective_mode.store(static_cast<uint8_t>(Level::Off), std::memory_order_relaxed);
  // The subscribers are the parent's event sources (its drainer's sampler
  // and GPU source, whose perf rings are not even mapped here): a drainer
  // the child starts must never call them. The list is abandoned, not freed
  // (no allocator calls in a fork handler), and its mutex, which a parent
  // thread may have held at the fork, is made anew.
  g_subscribers = nullptr;
  new (&g_subscribers_mutex) std::mutex();
}

bool session_running() noexcept { return g_session_id.load(std::memory_order_relaxed) != 0; }

uint64_t version() noexcept { return g_version.load(std::memory_order_acquire); }

int subscribe(ModeCallback cb) {
  std::lock_guard<std::mutex> lock(g_subscribers_mutex);
  if (!g_subscribers) g_subscribers = new std::vector<std::pair<int, ModeCallback>>();
  g_subscribers->emplace_back(g_next_subscriber, std::move(cb));
  return g_next_subscriber++;
}

void unsubscribe(int id) {
  std::lock_guard<std::mutex> lock(g_subscribers_mutex);
  if (!g_subscribers) return;
  for (auto it = g_subscribers->begin(); it != g_subscribers->end(); ++it) {
    if (it->first == id) {
      g_subscribers->erase(it);
      return;
    }
  }
}

bool notify_if_changed(uint64_t* seen_version) {
  const uint64_t v = version();
  if (v == *seen_version) return false;
  *seen_version = v;
  const Level m = static_cast<Level>(internal::g_effective_mode.load(std::memory_order_relaxed));
  std::vector<ModeCallback> copy;
  {
    std::lock_guard<std::mutex> lock(g_subscribers_mutex);
    if (!g_subscribers || g_subscribers->empty()) return false;
    for (const auto& [id, cb] : *g_subscribers) copy.push_back(cb);
  }
  for (const ModeCallback& cb : copy) cb(m);  // outside the lock: a callback may subscribe
  return true;
}

}  // namespace level

// ---- public API ----

int on_level_change(std::function<void(Level level)> fn) { return level::subscribe(std::move(fn)); }
void remove_level_callback(int id) { level::unsubscribe(id); }

void set_mode(Level m) noexcept {
  level::SpinGuard guard;
  const Level before = level::effective();
  level::g_base = static_cast<uint8_t>(m);
  level::apply(before);
}

Level mode() noexcept { return static_cast<Level>(internal::g_effective_mode.load(std::memory_order_relaxed)); }

void mark(const char* static_name, uint64_t value) noexcept {
  internal::emit(EventKind::Mark, NameRef::StaticString, reinterpret_cast<uintptr_t>(static_name), value);
}

}  // namespace ringprof

// ringprof/internal/emit.h — the hot path the public recording API inlines:
// the calling thread's ring slot, the session word and emit(). Not public API:
// it may change in any release (see ringprof/README.md). Include
// ringprof/recording.h instead.
#pragma once

#include <time.h>

#include <atomic>
#include <cstdint>
#include <string_view>

#include "ringprof/event.h"
#include "ringprof/internal/ring.h"
#include "ringprof/ringprof_c.h"

namespace ringprof {

using SourceLocation = ringprof_source_location;

namespace internal {
struct ThreadSlot {
  Ring* ring;
  uint32_t session;
};
// constinit: no dynamic initialisation, so access needs no TLS wrapper call;
// initial-exec: a fixed offset from the thread pointer, no __tls_get_addr.
extern thread_local constinit ThreadSlot t_slot __attribute__((tls_model("initial-exec")));
// 0 while recording is off. Otherwise the current session: (id << 1) | 1
// when timestamps come from the TSC, (id << 1) when from CLOCK_MONOTONIC, so
// the hot path learns both from one load.
extern std::atomic<uint32_t> g_session;
inline constexpr uint32_t kSessionTscBit = 1;

// Creates and registers the calling thread's ring for `session`. When that
// fails it returns a shared ring of capacity zero, so every later event of the
// thread is refused without a branch of its own (it says so once).
Ring* attach_thread(uint32_t session) noexcept;

#define RINGPROF_HOT inline __attribute__((always_inline))

// A thread slot's session before the thread has a ring, and after it ended:
// never equal to g_session, so such a slot never passes for an attached one.
inline constexpr uint32_t kNoSession = 0xffffffffu;

// The calling thread's ring while session `s` records, nullptr while
// recording is off (s == 0). One compare on the common path: a slot holds a
// ring exactly when its session equals the current one, which is never 0.
RINGPROF_HOT Ring* ring_for(uint32_t s) noexcept {
  if (t_slot.session == s) [[likely]]
    return t_slot.ring;
  if (s == 0) return nullptr;
  return attach_thread(s);
}

RINGPROF_HOT Ring* current_ring() noexcept { return ring_for(g_session.load(std::memory_order_relaxed)); }

inline uint64_t monotonic_ns() noexcept {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

RINGPROF_HOT uint64_t now_ticks(uint32_t session) noexcept {
#if defined(__x86_64__) || defined(__i386__)
  if (session & kSessionTscBit) [[likely]]
    return __builtin_ia32_rdtsc();  // __rdtsc() without <x86intrin.h> (48k lines)
#endif
  (void)session;
  return monotonic_ns();
}

RINGPROF_HOT bool emit(EventKind kind, NameRef ref, uint64_t p0, uint64_t p1) noexcept {
  const uint32_t session = g_session.load(std::memory_order_relaxed);
  Ring* r = ring_for(session);
  if (!r) return false;  // off: the compiler folds this into ring_for's branch
  uint64_t pos;
  // A refused zone begin loses its end too: the zone records nothing more.
  if (!Ring::claim(r, 1, &pos, kind == EventKind::ZoneBegin ? 2 : 1)) [[unlikely]]
    return false;
  Event* s = r->slot_at(pos);
  s->ts = now_ticks(session);
  s->kind = kind;
  s->ref = ref;
  s->extra = 0;
  s->loc = 0;
  // Payload words the kind does not use are left as they were: the drainer
  // reads p0 only when `ref` names something and p1 only for kinds with a
  // value (kind and ref are constants here, so these tests vanish).
  if (ref != NameRef::None) s->p0 = p0;
  if (kind_has_value(kind)) s->p1 = p1;
  r->publish(pos + 1);
  return true;
}

// An event whose name is copied inline as Continuation slots.
bool emit_inline(EventKind kind, std::string_view name, uint64_t p1) noexcept;
}  // namespace internal

}  // namespace ringprof

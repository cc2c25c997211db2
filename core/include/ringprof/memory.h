// ringprof/memory.h — memory events: allocations and frees, recorded only at
// the Detailed level (ringprof/ops.h), as torch.profiler's profile_memory and
// Tracy's memory zones record them.
//
//   static const uint16_t kArena = ringprof::memory_pool("arena");
//   void* p = arena.take(n);  ringprof::memory_alloc(p, n, kArena);
//   arena.give(p);            ringprof::memory_free(p, n, kArena);
//
// Outside a detailed window each call costs one relaxed load and a
// predictable branch; inside one it is an ordinary event (one clock read, one
// 32-byte slot). The tools pair frees with allocations by pool and address,
// so a free whose size the caller does not know passes 0.
//
// A pool groups the blocks of one allocator (the C heap, a GPU caching
// allocator, an arena). Pool 0 is "heap", the default; libringprof_malloc.so
// records malloc and friends there. Included by ringprof.h.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ringprof/level.h"
#include "ringprof/recording.h"

namespace ringprof {

// Registers a pool by name and returns its index; the same name (by content)
// always gets the same index. `static_name` must have static storage duration.
// Thread-safe; takes a lock, so call it once per pool, not per event. The
// table holds kMaxMemoryPools names: past that it returns 0 ("heap") and
// warns once.
inline constexpr uint16_t kMaxMemoryPools = 256;
uint16_t memory_pool(const char* static_name) noexcept;

namespace internal {
// True on ringprof's own threads (the drainer), and on any thread while it
// creates its ring: what is allocated then is the profiler's, not the
// program's, and is never recorded.
extern thread_local constinit bool t_ringprof_thread __attribute__((tls_model("initial-exec")));

// One Alloc/Free slot: p0 = address, p1 = size, extra = pool (event.h).
RINGPROF_HOT void emit_memory(EventKind kind, const void* p, std::size_t size, uint16_t pool) noexcept {
  const uint32_t session = g_session.load(std::memory_order_relaxed);
  Ring* r = ring_for(session);
  if (!r) return;
  uint64_t pos;
  if (!Ring::claim(r, 1, &pos)) [[unlikely]] return;
  Event* s = r->slot_at(pos);
  s->ts = now_ticks(session);
  s->kind = kind;
  s->ref = NameRef::None;
  s->extra = pool;
  s->loc = 0;
  s->p0 = reinterpret_cast<uintptr_t>(p);
  s->p1 = size;
  r->publish(pos + 1);
}
}  // namespace internal

// `size` bytes at `p` were allocated from `pool`.
RINGPROF_HOT void memory_alloc(const void* p, std::size_t size, uint16_t pool = 0) noexcept {
  if (!detailed()) [[likely]] return;
  if (internal::t_ringprof_thread) return;
  internal::emit_memory(EventKind::Alloc, p, size, pool);
}

// The block at `p` was returned to `pool`; `size` 0 when not known.
RINGPROF_HOT void memory_free(const void* p, std::size_t size = 0, uint16_t pool = 0) noexcept {
  if (!detailed()) [[likely]] return;
  if (internal::t_ringprof_thread) return;
  internal::emit_memory(EventKind::Free, p, size, pool);
}

}  // namespace ringprof

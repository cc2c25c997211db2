// Ring allocation and reclamation. The slot array is allocated with the ring
// header in one block so a ring costs one allocation at a thread's first event.
#include "ringprof/ring.h"

#include <cstdlib>
#include <new>

#include "crash/crash_state.h"

namespace ringprof {

Ring* Ring::create(uint32_t capacity_events, uint32_t tid, uint32_t wake_percent) noexcept {
  uint64_t cap = 64;
  while (cap < capacity_events && cap < (1ull << 30)) cap <<= 1;
  const size_t header = (sizeof(Ring) + 63) & ~size_t{63};
  void* mem = std::aligned_alloc(64, header + cap * sizeof(Event));
  if (!mem) return nullptr;
  Ring* r = new (mem) Ring();
  r->slots_ = reinterpret_cast<Event*>(static_cast<char*>(mem) + header);
  r->capacity_ = cap;
  r->mask_ = cap - 1;
  wake_percent = wake_percent < 1 ? 1 : wake_percent > 100 ? 100 : wake_percent;
  r->wake_fill_ = cap * wake_percent / 100;
  r->limit_ = r->wake_fill_;
  r->tid_ = tid;
  return r;
}

Ring* Ring::refusing() noexcept {
  // capacity 0: every claim fails. The slot pointer is never dereferenced.
  static Ring r;
  return &r;
}

void Ring::release(Ring* r) noexcept {
  if (!r || r == refusing()) return;
  if (r->refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    // Out of the crash handler's sight first; during a crash flush nothing is
    // freed at all (the process is about to die).
    if (!crash::unregister_ring(r)) return;
    r->~Ring();
    std::free(r);
  }
}

}  // namespace ringprof

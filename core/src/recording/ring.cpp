// Ring allocation and reclamation. The slot array is allocated with the ring
// header in one block so a ring costs one allocation at a thread's first event.
//
// Freed blocks wait in a small pool for the next thread's ring. Returned to
// the heap instead, the rings of short-lived threads (512 KiB blocks by
// default, of which a short thread touches a page or two, freed by the
// drainer in its own order among the program's allocations) left it
// fragmented: a program that ran 200,000 threads one after the other grew
// from 7 to 27 MB resident, now to 17 MB, flat after the first 50,000. (Each
// ring a mapping of its own gave the pages back, but mmap, page faults and
// munmap made each thread 36 µs slower.)
#include "ringprof/internal/ring.h"

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>

#include "crash/crash_state.h"
#include "ringprof/memory.h"

namespace ringprof {

namespace {
std::atomic<uint64_t> g_grown_bytes{0};  // Ring::reserve_growth

// Freed ring blocks, by size, for reuse: at most kPooled first rings
// (grown rings are freed at once), resident in the pages their threads
// touched. Plain storage, no destructor: a ring
// freed while the process exits still finds it.
constexpr size_t kPooled = 16;
constexpr size_t kMaxPooledBytes = (1u << 20) + 4096;  // a first ring of up to 1 MiB (512 KiB by default)
struct Pooled {
  void* mem;
  size_t bytes;
};
std::mutex g_pool_mu;
Pooled g_pool[kPooled];  // under g_pool_mu
size_t g_pool_size = 0;  // under g_pool_mu

// Never waits for the pool: a child forked while another thread held its
// lock, or a handler that interrupted the holder, goes to the heap instead.
void* take_pooled(size_t bytes) noexcept {
  std::unique_lock<std::mutex> lock(g_pool_mu, std::try_to_lock);
  if (!lock.owns_lock()) return nullptr;
  for (size_t i = g_pool_size; i-- > 0;) {
    if (g_pool[i].bytes != bytes) continue;
    void* mem = g_pool[i].mem;
    g_pool[i] = g_pool[--g_pool_size];
    return mem;
  }
  return nullptr;
}

// False when the block is not pooled (one larger than a first ring, or the
// pool busy): the caller frees it. A full pool lets its oldest block go, so
// it holds the sizes freed lately, not a size no thread asks for any more.
bool pool(void* mem, size_t bytes) noexcept {
  if (bytes > kMaxPooledBytes) return false;  // a grown ring: rare, and all its pages touched
  void* evicted = nullptr;
  {
    std::unique_lock<std::mutex> lock(g_pool_mu, std::try_to_lock);
    if (!lock.owns_lock()) return false;
    if (g_pool_size == kPooled) {
      evicted = g_pool[0].mem;
      for (size_t i = 1; i < kPooled; ++i) g_pool[i - 1] = g_pool[i];
      --g_pool_size;
    }
    g_pool[g_pool_size++] = {mem, bytes};
  }
  std::free(evicted);
  return true;
}
}  // namespace

bool Ring::reserve_growth(uint64_t bytes) noexcept {
  uint64_t now = g_grown_bytes.load(std::memory_order_relaxed);
  do {
    if (now + bytes > kMaxGrownBytes) return false;
  } while (!g_grown_bytes.compare_exchange_weak(now, now + bytes, std::memory_order_relaxed));
  return true;
}

void Ring::return_growth(uint64_t bytes) noexcept { g_grown_bytes.fetch_sub(bytes, std::memory_order_relaxed); }

Ring* Ring::create(uint32_t capacity_events, uint32_t tid, uint32_t wake_percent) noexcept {
  uint64_t cap = 64;
  while (cap < capacity_events && cap < (1ull << 30)) cap <<= 1;
  const size_t header = (sizeof(Ring) + 63) & ~size_t{63};
  const size_t bytes = header + cap * sizeof(Event);
  void* mem = take_pooled(bytes);
  if (!mem) mem = std::aligned_alloc(64, bytes);
  if (!mem) return nullptr;
  Ring* r = new (mem) Ring();
  r->slots_ = reinterpret_cast<Event*>(static_cast<char*>(mem) + header);
  r->capacity_ = cap;
  r->mask_ = cap - 1;
  wake_percent = wake_percent < 1 ? 1 : wake_percent > 100 ? 100 : wake_percent;
  r->wake_percent_ = wake_percent;
  r->wake_fill_ = cap * wake_percent / 100;
  r->limit_.store(r->wake_fill_, std::memory_order_relaxed);
  r->tid_ = tid;
  return r;
}

Ring* Ring::refusing() noexcept {
  // capacity 0: every claim fails. The slot pointer is never dereferenced.
  static Ring r;
  return &r;
}

Ring* Ring::make_successor(uint64_t max_events) const noexcept {
  uint64_t cap = capacity_;
  while (cap < 4 * capacity_ && 2 * cap <= max_events) cap *= 2;
  if (cap == capacity_) return nullptr;
  const uint64_t bytes = cap * sizeof(Event);
  if (!reserve_growth(bytes)) return nullptr;
  Ring* next = create(static_cast<uint32_t>(cap), tid_, wake_percent_);
  if (!next) {
    return_growth(bytes);
    return nullptr;
  }
  next->thread_index = thread_index;
  next->session = session;
  std::memcpy(next->initial_name, initial_name, sizeof initial_name);
  next->mark_drops_ = mark_drops_;
  next->max_capacity_ = max_events;
  crash::register_ring(next);
  return next;
}

Ring* Ring::grow() noexcept {
  // ringprof's memory, not the program's: no memory event comes of the
  // allocation or of the frees below (which could otherwise record into a
  // ring while this one is half moved).
  const bool was = internal::t_ringprof_thread;
  internal::t_ringprof_thread = true;
  Ring* next = make_successor(max_capacity_);
  Ring* expected = nullptr;
  if (next && !moved_to_.compare_exchange_strong(expected, next, std::memory_order_acq_rel)) {
    // The drainer closed this ring (stop()): nobody would read the new one.
    next->refs_.store(1, std::memory_order_relaxed);
    return_growth(uint64_t{next->capacity()} * sizeof(Event));
    release(next);
    next = nullptr;
  }
  if (!next) {
    max_capacity_ = capacity_;  // not on every full claim from now on
    internal::t_ringprof_thread = was;
    return nullptr;
  }
  internal::ring_switched(this, next);
  switched_.store(true, std::memory_order_release);
  retire();
  release(this);  // not touched after this: the drainer may free it
  internal::t_ringprof_thread = was;
  return next;
}

void Ring::release(Ring* r) noexcept {
  if (!r || r == refusing()) return;
  if (r->refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) {
    // Out of the crash handler's sight first; during a crash flush nothing is
    // freed at all (the process is about to die).
    if (!crash::unregister_ring(r)) return;
    const size_t header = (sizeof(Ring) + 63) & ~size_t{63};
    const size_t bytes = header + r->capacity_ * sizeof(Event);
    r->~Ring();
    if (!pool(r, bytes)) std::free(r);
  }
}

}  // namespace ringprof

// libringprof_malloc.so — records the C heap as memory events, with no code
// change:
//
//   LD_PRELOAD=/path/libringprof_malloc.so RINGPROF_AUTOSTART=1 ./app
//
// It defines malloc, free, calloc, realloc, reallocarray, posix_memalign,
// aligned_alloc, memalign, valloc and pvalloc, and passes each to glibc's own
// implementation through its __libc_* entry points, so no dlsym(RTLD_NEXT)
// bootstrap is needed (dlsym itself allocates). C++ operator new and delete
// go through malloc and free, so they are covered too.
//
// Two records of the heap, at two costs:
// - the sampled heap profile (ringprof/heap.h), at every level while
//   recording: each allocation subtracts its size from a thread-local count,
//   each free loads one byte of a filter of the live picked blocks; about
//   one allocation per
//   RINGPROF_HEAP_INTERVAL bytes is picked, with its stack;
// - at the detailed level, every block as an Alloc or Free event in the
//   default pool ("heap") with its malloc_usable_size(), on both sides, so
//   live bytes balance exactly. Outside it: one relaxed load and a
//   predictable branch (ringprof::detailed()).
//
// Reentrancy: recording an event may allocate (a thread's first event creates
// its ring). A thread-local flag marks a thread that is inside the recorder,
// and its allocations pass through unrecorded instead of recursing.
// ringprof's own threads (the drainer) never record memory events at all
// (ringprof/memory.h). glibc only: it relies on the __libc_* symbols.
#include <errno.h>
#include <malloc.h>
#include <stdint.h>

#include <cstddef>

#include "ringprof/ringprof.h"

extern "C" {
void* __libc_malloc(size_t);
void __libc_free(void*);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void* __libc_memalign(size_t, size_t);
void* __libc_valloc(size_t);
void* __libc_pvalloc(size_t);
}

namespace {

thread_local constinit bool t_inside __attribute__((tls_model("initial-exec"))) = false;

// Slow path, taken only at the detailed level.
__attribute__((noinline)) void record_alloc(void* p) noexcept {
  if (p == nullptr || t_inside) return;
  t_inside = true;
  ringprof::memory_alloc(p, malloc_usable_size(p));
  t_inside = false;
}

// Before the block goes back: once freed, another thread may get the same
// address, and its Alloc must come after this Free.
__attribute__((noinline)) void record_free(void* p) noexcept {
  if (p == nullptr || t_inside) return;
  t_inside = true;
  ringprof::memory_free(p, malloc_usable_size(p));
  t_inside = false;
}

// The heap profile, sized by what the caller asked for (what it holds).
// Only blocks given out: a failed request (an overflowing calloc, a huge
// malloc) takes no bytes, and its size would upset the thread's count.
inline void sample_alloc(void* p, size_t n) noexcept {
  if (p != nullptr && !t_inside) ringprof::heap_alloc(p, n);
}
inline void sample_free(void* p) noexcept {
  if (p != nullptr && !t_inside) ringprof::heap_free(p);
}

inline bool power_of_two(size_t v) { return v != 0 && (v & (v - 1)) == 0; }

}  // namespace

#define RINGPROF_EXPORT extern "C" __attribute__((visibility("default")))

RINGPROF_EXPORT void* malloc(size_t n) {
  void* p = __libc_malloc(n);
  if (ringprof::detailed()) [[unlikely]] record_alloc(p);
  sample_alloc(p, n);
  return p;
}

RINGPROF_EXPORT void free(void* p) {
  if (ringprof::detailed()) [[unlikely]] record_free(p);
  sample_free(p);
  __libc_free(p);
}

RINGPROF_EXPORT void* calloc(size_t n, size_t size) {
  void* p = __libc_calloc(n, size);
  if (ringprof::detailed()) [[unlikely]] record_alloc(p);
  sample_alloc(p, n * size);  // p is null where n * size overflows (not counted)
  return p;
}

namespace {
void* realloc_recorded(void* old, size_t n) {
  if (!ringprof::detailed()) [[likely]] return __libc_realloc(old, n);
  // The old block's Free goes first, as in free(): once realloc returns it,
  // another thread may get the address and record its Alloc. Should realloc
  // fail, the old block is still the caller's and is recorded live again.
  const bool inside = t_inside;
  const size_t old_size = old && !inside ? malloc_usable_size(old) : 0;
  if (old != nullptr && !inside) {
    t_inside = true;
    ringprof::memory_free(old, old_size);
    t_inside = false;
  }
  void* p = __libc_realloc(old, n);
  if (p == nullptr && n != 0 && old != nullptr && !inside) {
    t_inside = true;
    ringprof::memory_alloc(old, old_size);
    t_inside = false;
  }
  record_alloc(p);
  return p;
}
}  // namespace

RINGPROF_EXPORT void* realloc(void* old, size_t n) {
  sample_free(old);  // a sampled old block is gone (or moved) either way
  void* p = realloc_recorded(old, n);
  if (p != nullptr && n != 0) sample_alloc(p, n);
  return p;
}

RINGPROF_EXPORT void* reallocarray(void* old, size_t n, size_t size) {
  size_t bytes;
  if (__builtin_mul_overflow(n, size, &bytes)) {
    errno = ENOMEM;
    return nullptr;
  }
  return realloc(old, bytes);
}

RINGPROF_EXPORT void* memalign(size_t alignment, size_t n) {
  void* p = __libc_memalign(alignment, n);
  if (ringprof::detailed()) [[unlikely]] record_alloc(p);
  sample_alloc(p, n);
  return p;
}

RINGPROF_EXPORT int posix_memalign(void** out, size_t alignment, size_t n) {
  if (!power_of_two(alignment) || alignment % sizeof(void*) != 0) return EINVAL;
  void* p = __libc_memalign(alignment, n);
  if (p == nullptr) return ENOMEM;
  if (ringprof::detailed()) [[unlikely]] record_alloc(p);
  sample_alloc(p, n);
  *out = p;
  return 0;
}

RINGPROF_EXPORT void* aligned_alloc(size_t alignment, size_t n) {
  if (!power_of_two(alignment)) {
    errno = EINVAL;
    return nullptr;
  }
  void* p = __libc_memalign(alignment, n);
  if (ringprof::detailed()) [[unlikely]] record_alloc(p);
  sample_alloc(p, n);
  return p;
}

RINGPROF_EXPORT void* valloc(size_t n) {
  void* p = __libc_valloc(n);
  if (ringprof::detailed()) [[unlikely]] record_alloc(p);
  sample_alloc(p, n);
  return p;
}

RINGPROF_EXPORT void* pvalloc(size_t n) {
  void* p = __libc_pvalloc(n);
  if (ringprof::detailed()) [[unlikely]] record_alloc(p);
  sample_alloc(p, n);
  return p;
}

// ringprof/heap.h — a sampled heap profile cheap enough to leave on.
//
// An allocator (libringprof_malloc.so, ringprof.torch's memory hook, an
// arena of the application's) reports every block; ringprof keeps one
// allocation in a Poisson process over the bytes allocated, with a mean
// interval of RINGPROF_HEAP_INTERVAL bytes (512 KiB by default), as tcmalloc,
// jemalloc and heapprofd sample. A block of `size` bytes is picked with
// probability 1 - exp(-size / interval), so the tools weigh each sample back
// by the inverse of that and the estimates of bytes and objects per stack are
// unbiased. A picked block becomes a HeapAlloc event with its stack (the
// sampler's unwinder, interpreter frames included) and a HeapStack; its free,
// a HeapFree. `ringprof pprof --heap` turns them into pprof's heap profile.
//
//   void* p = arena.take(n);  ringprof::heap_alloc(p, n, kArena);
//   ringprof::heap_free(p, n, kArena);  arena.give(p);
//
// Sampling runs at every level while recording. Cost per call outside a
// sample: heap_alloc subtracts from a thread-local counter and branches;
// heap_free loads one byte of a 256 KiB filter (below). A sample costs a
// stack walk.
//
// Report a block's free before handing it back to its allocator: once freed,
// another thread may get the same address.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "ringprof/internal/emit.h"

namespace ringprof {

namespace internal {
// Bytes the calling thread may still allocate before its next sample.
extern thread_local constinit int64_t t_heap_left __attribute__((tls_model("initial-exec")));
// Counts of live sampled blocks by their address's 256-byte granule, modulo
// 64 MiB of address space: a free whose counter is 0 was never sampled. No
// hash, and coarse, on purpose: frees of neighbouring blocks read the same
// few bytes, so the filter stays in the first-level cache where a hashed or
// finer one misses on most frees (measured: a tenth of an allocation loop's
// time). A free in a marked granule that was not sampled itself costs the
// lock and a probe: about (live sampled blocks x blocks per granule) /
// 262144 of frees, well under 1% at the default interval.
inline constexpr unsigned kHeapFilterBits = 18;
extern std::atomic<uint8_t> g_heap_filter[1u << kHeapFilterBits];
inline uint32_t heap_filter_index(const void* p) noexcept {
  return static_cast<uint32_t>(reinterpret_cast<uintptr_t>(p) >> 8) & ((1u << kHeapFilterBits) - 1);
}
// The slow paths (core/src/sampler/heap_sampler.cpp).
void heap_sample(const void* p, std::size_t size, uint16_t pool) noexcept;
void heap_unsample(const void* p, std::size_t size, uint16_t pool) noexcept;
}  // namespace internal

// `size` bytes at `p` were allocated from `pool` (ringprof/memory.h's pools).
RINGPROF_HOT void heap_alloc(const void* p, std::size_t size, uint16_t pool = 0) noexcept {
  internal::t_heap_left -= static_cast<int64_t>(size);
  if (internal::t_heap_left > 0) [[likely]]
    return;
  internal::heap_sample(p, size, pool);
}

// The block at `p` goes back to `pool`; `size` 0 when not known.
RINGPROF_HOT void heap_free(const void* p, std::size_t size = 0, uint16_t pool = 0) noexcept {
  // One load: the filter is all zeros while no sampled block is live.
  if (internal::g_heap_filter[internal::heap_filter_index(p)].load(std::memory_order_relaxed) == 0) [[likely]]
    return;
  internal::heap_unsample(p, size, pool);
}

// The mean sampling interval in bytes now; 0 while not sampling.
uint64_t heap_sampling_interval() noexcept;

}  // namespace ringprof

// The heap sampler's controls (ringprof/heap.h has the allocators' side).
#pragma once

#include <cstdint>

namespace ringprof::sampler {

// Starts sampling at a mean of `interval` bytes between samples, or stops it
// (0). Starting forgets the blocks an earlier session sampled. Called by
// start() and stop().
void set_heap_interval(uint64_t interval) noexcept;

// In a forked child: the lock may have been held by a thread that is gone.
void reset_heap_after_fork() noexcept;

}  // namespace ringprof::sampler

// memory_pools.h (internal) — the process-wide table of memory pool names
// (ringprof/memory.h), read by the drainer to name Alloc/Free events.
#pragma once

#include <cstdint>

namespace ringprof::memory_pools {

// The name registered for `index`, or "heap" (pool 0's) for an index never
// handed out: an event can only name a pool the producer registered, but a
// corrupt or forged index must still name something.
const char* name(uint16_t index) noexcept;

}  // namespace ringprof::memory_pools

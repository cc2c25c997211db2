// Thread indices (ThreadInfo::index): process-unique, from 1, never reused.
// A thread's first event takes one for its ring; the drainer takes one for a
// thread the sampler covers before (or without) it recording any event.
#pragma once

#include <cstdint>

namespace ringprof {

uint32_t allocate_thread_index() noexcept;

}  // namespace ringprof

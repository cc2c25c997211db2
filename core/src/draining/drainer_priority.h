// The drainer's place in the scheduler, asked for without privileges.
//
// Under load a drainer woken by a filling ring must run within the time the
// rest of the ring lasts (a quarter of a millisecond at 10 million events per
// second and 16,384 slots). Raising its priority needs CAP_SYS_NICE, which a
// production job rarely has. On Linux 6.12 and later the EEVDF scheduler
// takes a per-thread time slice for ordinary threads (sched_attr's
// sched_runtime) from any thread for itself: a short slice gives the thread
// an earlier deadline, so on wakeup it preempts a CPU hog at once instead of
// waiting for the hog's slice to end. Its share of the CPU is unchanged (same
// nice value), only its latency. Older kernels ignore the field.
#pragma once

#include <cstdint>

namespace ringprof::drainer_priority {

// Asks for a `slice_ns` time slice for the calling thread, keeping its policy
// and nice value. False when the kernel refused (the thread goes on as it was).
bool request_short_slice(uint64_t slice_ns) noexcept;

}  // namespace ringprof::drainer_priority

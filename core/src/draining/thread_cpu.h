// The calling thread's CPU time, for the drainer's and writer's own cost
// (RecorderStats::drainer_cpu_ns, writer_cpu_ns), and the process's, for the
// drainer's question whether the application ran at all. System calls: read
// once per round or batch, never on the recording path.
#pragma once

#include <time.h>

#include <cstdint>

namespace ringprof::internal {

// A CPU-time clock's reading; 0 when it cannot be read.
inline uint64_t cpu_clock_ns(clockid_t clock) noexcept {
  timespec ts{};
  if (clock_gettime(clock, &ts) != 0) return 0;
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

inline uint64_t thread_cpu_ns() noexcept { return cpu_clock_ns(CLOCK_THREAD_CPUTIME_ID); }

// Every thread's of the process together, exited ones included.
inline uint64_t process_cpu_ns() noexcept { return cpu_clock_ns(CLOCK_PROCESS_CPUTIME_ID); }

}  // namespace ringprof::internal

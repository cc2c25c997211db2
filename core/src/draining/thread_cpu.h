// The calling thread's CPU time, for the drainer's and writer's own cost
// (RecorderStats::drainer_cpu_ns, writer_cpu_ns), and the process's, for the
// drainer's question whether the application ran at all. System calls: read
// once per round or batch, never on the recording path.
#pragma once

#include <time.h>

#include <cstdint>

namespace ringprof::internal {

inline uint64_t thread_cpu_ns() noexcept {
  timespec ts{};
  if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0) return 0;
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// Every thread's of the process together, exited ones included.
inline uint64_t process_cpu_ns() noexcept {
  timespec ts{};
  if (clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) != 0) return 0;
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

}  // namespace ringprof::internal

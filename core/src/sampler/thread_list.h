// The threads of this process, as /proc/self/task lists them.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ringprof::sampler {

// Every thread id of the process (unsorted); empty when /proc is unavailable.
std::vector<uint32_t> list_threads();

// The kernel's name of a thread of this process ("" when it is gone).
std::string thread_comm(uint32_t tid);

uint32_t current_tid() noexcept;

}  // namespace ringprof::sampler

// ringprof/tools/sample_profile.h — the CPU stack samples of a trace, counted per
// (process, thread, stack), for the flame, pprof and table --samples outputs.
//
// Reading streams the files as every command does; what is kept is one
// counter per distinct (process, thread, stack) — a steady workload has a few
// thousand — plus, through the reader's process tables, the stacks and
// modules needed to name them afterwards. Samples are instants: a sample is
// kept when its time is inside the range and its thread passes the filter.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ringprof/tools/time_range.h"
#include "ringprof/tools/trace_reader.h"

namespace ringprof {

struct SampleOptions {
  RangeSpec range;
  std::string thread;  // "" every thread; else a thread name or a kernel tid
};

struct SampleCount {
  size_t process = 0;          // index into TraceReader::processes()
  uint32_t thread_index = 0;
  uint32_t stack_id = 0;
  uint64_t count = 0;
};

struct SampleProfile {
  std::vector<SampleCount> counts;  // sorted by (process, thread, stack)
  uint64_t samples = 0;             // kept, over every count
  uint64_t samples_lost = 0;        // reported lost by the sampler (whole files, not windowed)
  uint64_t first_ns = 0;            // first and last sample kept (0 when none)
  uint64_t last_ns = 0;
  // CPU time one sample stands for, from the sampler's rate (0 when no file states it).
  uint64_t period_ns = 0;
  std::string mechanism;            // the sampler mechanism files state ("" none)
};

// Reads every file of `reader` once. The reader's process tables stay filled
// afterwards, so the stacks can be resolved (StackResolver).
SampleProfile collect_samples(TraceReader& reader, const SampleOptions& options);

// Process-and-thread display for roots and labels: "name (tid)".
std::string thread_label(const ProcessState& process, uint32_t thread_index);

}  // namespace ringprof

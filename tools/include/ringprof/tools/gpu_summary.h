// ringprof/tools/gpu_summary.h — what `ringprof gpu` reports: per device, how busy
// the GPU was and how well kernels filled it; a table of kernels; copy
// bandwidth by direction; and what the GPU source lost.
//
// Utilisation is busy time (the union of kernel, copy and set intervals on
// the device, clipped to the range) over the range. SM efficiency and
// achieved occupancy are the duration-weighted means of the per-kernel
// estimates of ringprof/gpu_occupancy.h. Streaming: one row per kernel name,
// one per copy direction, and per device a bounded set of busy intervals.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ringprof/gpu.h"
#include "ringprof/tools/time_range.h"
#include "ringprof/tools/trace_reader.h"

namespace ringprof {

struct GpuSummaryOptions {
  RangeSpec range;    // records overlapping it count; busy time is clipped to it
  size_t top = 0;     // kernel rows; 0: all
};

struct GpuDeviceRow {
  uint32_t pid = 0;
  uint32_t device = 0;
  std::string name;              // "" when the files do not describe the device
  uint32_t cc_major = 0, cc_minor = 0, sm_count = 0;
  uint64_t kernels = 0;
  uint64_t kernel_ns = 0;        // summed kernel durations
  uint64_t busy_ns = 0;          // union of kernels, copies and sets, within the range
  double sm_efficiency_ns = 0;   // sum of duration x estimate (divide by occupancy_ns)
  double achieved_ns = 0;
  uint64_t occupancy_ns = 0;     // kernel time with a known device (the weights' sum)
};

struct GpuKernelRow {
  std::string name;              // demangled
  uint64_t calls = 0;
  uint64_t total_ns = 0, min_ns = 0, max_ns = 0;
  double blocks_per_sm_sum = 0;  // over calls with a known device
  double achieved_sum = 0;
  uint64_t occupancy_calls = 0;
  int32_t grid[3] = {0, 0, 0}, block[3] = {0, 0, 0};
  uint32_t registers = 0, shared_bytes = 0;
  bool varies = false;           // calls differ in grid, block, registers or shared memory
};

struct GpuCopyRow {
  GpuCopyKind kind = GpuCopyKind::Unknown;
  uint64_t count = 0, bytes = 0, total_ns = 0;
};

struct GpuSummary {
  uint64_t range_ns = 0;
  std::vector<GpuDeviceRow> devices;   // by pid, device
  std::vector<GpuKernelRow> kernels;   // by total time, descending
  std::vector<GpuCopyRow> copies;      // by direction
  uint64_t memsets = 0, memset_bytes = 0;
  uint64_t runtime_calls = 0, driver_calls = 0, syncs = 0, nvtx_ranges = 0;
  // Summed over processes.
  uint64_t dropped_records = 0, refused_buffers = 0, clock_violations = 0, unknown_records = 0;
};

GpuSummary compute_gpu_summary(TraceReader& reader, const GpuSummaryOptions& options);
// Kernel names longer than `name_width` characters are cut to that width,
// ending in "..." (C++ template kernels run to thousands of characters and
// would push every other column off the screen); 0 prints them whole.
inline constexpr size_t kGpuNameWidth = 100;
std::string format_gpu_summary(const GpuSummary& summary, size_t name_width = kGpuNameWidth);

}  // namespace ringprof

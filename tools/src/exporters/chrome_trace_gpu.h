// chrome_trace_gpu.h (internal) — the GPU part of the Chrome trace.
//
// Tracks: one per device and stream ("GPU 0 stream 7") for kernels, copies
// and sets; one per context for host waits; one for CUPTI's overhead; one
// per host thread for its NVTX ranges (they need not nest with the zones);
// API calls on the calling thread's own track; allocations as a counter of
// bytes allocated per device. A flow arrow (cat "gpu_flow", id = pid << 32 |
// correlation id) runs from each launching API call to the work it launched.
#pragma once

#include <functional>
#include <map>
#include <set>
#include <string>
#include <unordered_map>

#include "ringprof/tools/time_range.h"
#include "ringprof/tools/trace_reader.h"

namespace ringprof::internal {

class GpuTraceWriter {
 public:
  using Emit = std::function<void(const std::string& json_event)>;
  GpuTraceWriter(Emit emit, TimeRange range) : emit_(std::move(emit)), range_(range) {}

  void begin_process(const ProcessState& p);
  void segment(const SegmentView& view);

 private:
  void track(uint32_t tid, const std::string& name, uint32_t sort_index);
  void complete(const std::string& name, const char* cat, uint64_t ts, uint64_t dur, uint32_t tid,
                const std::string& args);
  void flow(const char* ph, uint64_t ts, uint32_t tid, uint32_t correlation);
  const std::string& kernel_name(const std::string& raw);

  Emit emit_;
  TimeRange range_;
  const ProcessState* process_ = nullptr;
  std::set<uint32_t> named_tracks_;
  std::map<uint32_t, int64_t> allocated_;  // device -> bytes allocated
  std::unordered_map<std::string, std::string> demangled_;
  std::string line_;
};

}  // namespace ringprof::internal

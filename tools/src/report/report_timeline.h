// report_timeline.h (internal) — what `ringprof report` draws over time,
// from one streaming read: each GPU's utilisation per time bucket, and a
// compact timeline of the busiest threads and of each GPU's busy spans.
//
// Bounded whatever the recording's length: utilisation is one number per
// bucket and device; a thread keeps only zones long enough to be seen
// (kVisibleFraction of the range or longer), at most `zones_per_thread` of
// them (the longest win); its outermost zones too short to see are drawn as
// the stretches they cover (merged across gaps too short to see), so a thread
// busy with many short requests still shows. A GPU lane merges busy spans
// whose gap is shorter than that, coarser when it would pass the same
// budget, and only the `lanes` busiest GPUs get a lane. The page zooms into
// this, not into every event: the full trace is the Perfetto file written
// beside the page.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ringprof/tools/trace_reader.h"

namespace ringprof::internal {

struct TimelineOptions {
  uint64_t begin_ns = 0;  // the range drawn
  uint64_t end_ns = 0;
  size_t buckets = 400;            // utilisation buckets (at least 1)
  size_t threads = 8;              // the busiest threads shown, and as many GPUs
  size_t zones_per_thread = 4000;  // at most
  std::string thread;              // "" all; a thread name or kernel tid (as the other commands)
};

// One 20000th of the range: shorter zones and gaps are not drawn.
inline constexpr uint64_t kVisibleFraction = 20000;

struct GpuUtilisation {
  uint32_t pid = 0;
  uint32_t device = 0;
  uint64_t busy_ns = 0;        // kernels, copies and sets, their union
  std::vector<double> busy;    // fraction of each bucket the device was busy
};

struct TimelineSpan {
  uint64_t begin_ns = 0, end_ns = 0;
  uint32_t name = 0;   // into ReportTimeline::names
  uint32_t depth = 0;  // nesting on its thread (0 outermost)
};

struct TimelineLane {
  uint32_t pid = 0;
  std::string label;     // "thread (tid)" or "GPU n"
  bool gpu = false;
  uint64_t busy_ns = 0;  // outermost zones' time (threads), union (GPUs)
  uint64_t too_short = 0;    // zones shorter than the visible length (the outermost drawn as covered stretches)
  uint64_t over_budget = 0;  // zones left out past the lane's budget (shorter than every one kept)
  std::vector<TimelineSpan> spans;  // by begin
};

// The name covered stretches of short outermost zones carry.
inline constexpr const char* kShortZones = "(short zones)";

struct ReportTimeline {
  uint64_t begin_ns = 0;
  uint64_t range_ns = 0;  // end - begin
  uint64_t bucket_ns = 0;
  std::vector<GpuUtilisation> gpus;  // by process, then device
  std::vector<std::string> names;
  std::vector<TimelineLane> lanes;   // the busiest threads by busy time, then the GPUs
};

ReportTimeline scan_timeline(TraceReader& reader, const TimelineOptions& options);

}  // namespace ringprof::internal

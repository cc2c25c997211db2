// ringprof/tools/chrome_trace.h — ringprof files to Chrome trace JSON (the Trace
// Event Format that the Perfetto UI and chrome://tracing open).
//
// Mapping: a zone is a complete event "X" (emitted when it closes, args file
// and line when known), a counter "C" (args {"value": v}), an instant "i"
// (thread scope), a step an instant of process scope named "step N", a flow
// "s"/"t"/"f" with bp "e" so each binds to the enclosing slice, process and
// thread names metadata "M", a CPU sample an instant "i" on its thread named
// after its leaf function (cat "cpu_sample", args {"stack": [root … leaf]}).
// pid is the recording pid, tid the kernel tid.
// Timestamps are CLOCK_MONOTONIC microseconds with exactly three decimals.
//
// The writer streams: it holds one decoded segment, the open-zone stacks and
// the names of open flows, whatever the size of the trace.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "ringprof/tools/time_range.h"
#include "ringprof/tools/trace_reader.h"

namespace ringprof {

struct ChromeTraceOptions {
  // Events inside the range are kept; zones that overlap it are kept whole.
  RangeSpec range;
  std::string thread;                     // "" every thread; else a thread name or a kernel tid
  std::vector<std::string> symbol_paths;  // where to look for debug files (--symbol-path)
};

struct ChromeTraceStats {
  uint64_t events_written = 0;       // every JSON event, metadata included
  uint64_t zones_written = 0;
  uint64_t samples_written = 0;
  uint64_t unmatched_zone_ends = 0;  // ends whose begin is gone: skipped
  uint64_t unterminated_zones = 0;   // still open at the end: written to the thread's last timestamp
  uint64_t zones_too_deep = 0;       // nested deeper than ZoneTracker::kMaxDepth: left out
};

ChromeTraceStats write_chrome_trace(TraceReader& reader, const ChromeTraceOptions& options, std::ostream& out);

// The same into `path` ("-" is stdout), gzip-compressed when it ends in
// ".gz". False with *error set when the output cannot be written.
bool write_chrome_trace_file(TraceReader& reader, const ChromeTraceOptions& options, const std::string& path,
                             ChromeTraceStats* stats, std::string* error);

}  // namespace ringprof

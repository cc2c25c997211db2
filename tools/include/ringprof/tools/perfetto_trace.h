// ringprof/tools/perfetto_trace.h — ringprof files to a Perfetto trace (the
// protobuf format the Perfetto UI and trace_processor read natively;
// schemas/perfetto_trace.proto states the subset written).
//
// Mapping (docs/perfetto.md has the user's view):
//   - a track per process (ProcessDescriptor: pid, name, command line) and
//     per thread (ThreadDescriptor: pid, tid, name; renamed when the files
//     rename it);
//   - zones: slice begin/end on their thread's track, names and categories
//     interned, the call site (file, line) as an interned source location;
//     zones still open at the end are closed at their thread's last
//     timestamp with the annotation unterminated = true;
//   - instants on their thread; steps as instants "step N" on the process
//     track; window, mode, trigger and crash marks as instants on the
//     process's "ringprof marks" track; ring-full gaps as slices on a
//     "ringprof drops" track under their thread;
//   - counters: one counter track per name per process; memory pools one
//     counter track each ("memory: heap", bytes);
//   - flows: an instant named after the flow at each flow event, carrying
//     the flow id (terminating it at flow_end), inside the enclosing zone;
//   - CPU samples: PerfSample packets (pid, tid) with interned callstacks,
//     frames (function, source file, line) and mappings (path, build ID);
//   - GPU activity (perfetto_trace_gpu.h): tracks per device and stream,
//     per context for host waits, per thread for CUDA API calls and NVTX,
//     launch flows, and a counter of bytes allocated per device;
//   - time: CLOCK_MONOTONIC ns, the trace's primary clock, with a clock
//     snapshot per process relating it to CLOCK_REALTIME.
// The writer streams: it holds one decoded segment, the open zones, and the
// interning tables (one entry per distinct name, location, frame, stack).
#pragma once

#include <cstdint>
#include <ostream>
#include <string>

#include "ringprof/tools/chrome_trace.h"  // ChromeTraceOptions: the same options apply
#include "ringprof/tools/trace_reader.h"

namespace ringprof {

using PerfettoTraceOptions = ChromeTraceOptions;

struct PerfettoTraceStats {
  uint64_t packets_written = 0;
  uint64_t bytes_written = 0;
  uint64_t zones_written = 0;        // slices begun and ended (thread zones)
  uint64_t samples_written = 0;
  uint64_t gpu_records_written = 0;
  uint64_t unmatched_zone_ends = 0;  // ends whose begin is gone: skipped
  uint64_t unterminated_zones = 0;   // still open at the end: ended at the thread's last timestamp
  uint64_t zones_too_deep = 0;       // nested deeper than 65536 on their thread: left out
};

PerfettoTraceStats write_perfetto_trace(TraceReader& reader, const PerfettoTraceOptions& options, std::ostream& out);

// The same into `path` ("-" is stdout, a name ending in ".gz" is gzipped).
// False with *error set when the output cannot be written.
bool write_perfetto_trace_file(TraceReader& reader, const PerfettoTraceOptions& options, const std::string& path,
                               PerfettoTraceStats* stats, std::string* error);

// True when `path` names a Perfetto trace by its extension (.pftrace,
// .perfetto-trace, with or without .gz).
bool is_perfetto_trace_path(const std::string& path);

}  // namespace ringprof

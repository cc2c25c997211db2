// ringprof/tools/trace_range.h — a RangeSpec resolved against the files it is for:
// the trace's time range (frame headers only), the wall-clock offset of its
// processes, and for --window-id the ringprof.window.begin/end marks.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ringprof/tools/time_range.h"
#include "ringprof/tools/trace_reader.h"

namespace ringprof {

// The absolute range (CLOCK_MONOTONIC ns). nullopt with *error set when the
// spec cannot be resolved (a window id no file marks, a wall-clock time with
// no process start to map it). An empty spec is the unbounded range.
//
// A window id is looked up by decoding every segment once: its begin is the
// ringprof.window.begin mark of that id, its end the ringprof.window.end mark
// (the end of the data while the window is still open). When several
// processes have a window of that id the span covers all of them.
std::optional<TimeRange> resolve_trace_range(TraceReader& reader, const RangeSpec& spec, std::string* error);

// A window as recorded by the marks, paired by process and id whatever the
// order the files hold them in (marks of one window may come from different
// threads, and file order is not time order across threads).
struct MarkedWindow {
  uint32_t pid = 0;
  uint64_t id = 0;
  uint64_t warmup_ns = 0;  // 0: no warmup
  uint64_t begin_ns = 0;
  uint64_t end_ns = 0;     // 0: still open at the end of the data
  bool triggered = false;  // opened by `ringprof trigger` / request_window()
};
// Every window the files mark, by process then begin time.
std::vector<MarkedWindow> find_marked_windows(TraceReader& reader);

}  // namespace ringprof

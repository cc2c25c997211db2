#include "ringprof/tools/trace_range.h"

#include <algorithm>
#include <map>

#include "ringprof/ops.h"

namespace ringprof {

std::vector<MarkedWindow> find_marked_windows(TraceReader& reader) {
  // Marks are paired by (process, id), never by the order they are read in.
  // File order is not time order across threads: a segment groups events by
  // thread, and one thread's ring can be drained a round later than
  // another's. A triggered window's begin is marked by the drainer thread
  // (which polls the request) and its end by the stepping thread, so when
  // the drainer is slow (a loaded machine) the end can be read first; the
  // end must still close that window, not be taken for the end of a window
  // whose begin was deleted and leave the window open to the end of the data.
  std::map<std::pair<size_t, uint64_t>, MarkedWindow> found;  // (process, id) → its marks
  reader.read([&](const SegmentView& v) {
    for (const DecodedEvent& e : v.segment.events) {
      if (e.kind != EventKind::Mark) continue;
      const std::string name = v.process.location_name(e.loc);
      const bool warmup = name == kMarkWindowWarmup, begin = name == kMarkWindowBegin, end = name == kMarkWindowEnd,
                 trigger = name == kMarkTrigger;
      if (!warmup && !begin && !end && !trigger) continue;
      MarkedWindow& w = found[std::make_pair(v.process.index, e.value)];
      w.pid = v.process.pid;
      w.id = e.value;
      if (warmup) w.warmup_ns = e.ts_ns;
      if (trigger) w.triggered = true;
      if (begin) w.begin_ns = e.ts_ns;
      if (end) w.end_ns = e.ts_ns;
    }
  });
  std::vector<MarkedWindow> out;
  for (const auto& [key, w] : found) {
    // An end alone: the marks that opened it were in a file already deleted.
    if (w.warmup_ns == 0 && w.begin_ns == 0 && !w.triggered) continue;
    out.push_back(w);
  }
  std::stable_sort(out.begin(), out.end(), [](const MarkedWindow& a, const MarkedWindow& b) {
    return std::tie(a.pid, a.begin_ns) < std::tie(b.pid, b.begin_ns);
  });
  return out;
}

std::optional<TimeRange> resolve_trace_range(TraceReader& reader, const RangeSpec& spec, std::string* error) {
  TimeRange w;
  if (spec.empty()) return w;
  if (spec.window_id) {
    bool found = false;
    for (const MarkedWindow& m : find_marked_windows(reader)) {
      if (m.id != *spec.window_id || m.begin_ns == 0) continue;
      const uint64_t end = m.end_ns ? m.end_ns : UINT64_MAX;
      w.begin_ns = found ? std::min(w.begin_ns, m.begin_ns) : m.begin_ns;
      w.end_ns = found ? std::max(w.end_ns, end) : end;
      found = true;
    }
    if (!found) {
      if (error) *error = "no window " + std::to_string(*spec.window_id) + " is marked in the files";
      return std::nullopt;
    }
    return w;
  }
  const auto range = reader.time_range();
  const bool wall = spec.from_wall_ns || spec.to_wall_ns || (spec.around && spec.around->wall);
  int64_t offset = 0;
  if (wall) {
    // CLOCK_REALTIME - CLOCK_MONOTONIC is one value for the whole machine, so
    // any process's start pair gives it.
    bool known = false;
    for (const ProcessState& p : reader.processes()) {
      if (!p.start_known || p.start_realtime_ns == 0) continue;
      offset = static_cast<int64_t>(p.start_realtime_ns) - static_cast<int64_t>(p.start_monotonic_ns);
      known = true;
      break;
    }
    if (!known) {
      if (error) *error = "no file says when its process started: wall-clock times cannot be placed";
      return std::nullopt;
    }
  }
  if (!range) {
    // No events at all: any range is empty, but still a range.
    return resolve_range(spec, 0, 0, offset);
  }
  return resolve_range(spec, range->first, range->second, offset);
}

}  // namespace ringprof

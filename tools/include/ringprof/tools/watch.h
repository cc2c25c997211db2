// ringprof/tools/watch.h — `ringprof watch DIR`: the last window of a live
// recording against a baseline window, with diff's statistics, for a cron
// job or a health check on one host.
//
// Windows: the head is the last `window_ns` of the recording (up to its
// latest event); the baseline the window before it ("previous"), the same
// window a day earlier ("day", on the same CLOCK_MONOTONIC: the host not
// rebooted in between), or a saved recording (a path: all of it). Each
// window is cut into `slices` equal parts, and the parts are compared as
// `diff --runs` compares runs: the interval comes from the spread between
// slices, so that noise that varies over time widens it instead of raising
// a false alarm.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ringprof/tools/perf_diff.h"
#include "ringprof/tools/time_range.h"
#include "ringprof/tools/trace_reader.h"

namespace ringprof {

struct WatchOptions {
  uint64_t window_ns = 600'000'000'000ull;  // 10 minutes
  std::string baseline = "previous";        // "previous", "day", or a recording's path
  unsigned slices = 5;
};

struct WatchPlan {
  bool ok = false;
  std::string error;     // when !ok: one line (the recording too short, say)
  TimeRange head, base;  // on the live recording's axis (base: the baseline recording's)
  std::vector<TimeRange> head_slices, base_slices;
  bool base_is_recording = false;  // the baseline is another recording, read in base_slices
};

// Where the windows lie. `baseline` is the saved recording when one is the
// baseline (null otherwise).
WatchPlan plan_watch(const TraceReader& live, const TraceReader* baseline, const WatchOptions& options);

// The slices of [begin, end] (both inclusive), `n` equal parts.
std::vector<TimeRange> slice_range(TimeRange r, unsigned n);

}  // namespace ringprof

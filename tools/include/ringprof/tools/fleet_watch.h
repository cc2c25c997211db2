// ringprof/tools/fleet_watch.h — `ringprof watch --clickhouse URL`: the
// comparison `ringprof watch` makes on one host's files (watch.h), made on
// what `ringprof ship` put into ClickHouse, for a host, a job or the fleet.
//
// The head window ends at the latest span end of the selection; the
// baseline is the window before it or the same window a day earlier (wall
// clock: the rows' times are UTC nanoseconds). Each window is cut into
// slices, and each slice's calls (zones, GPU kernels), step marks and
// samples are fetched and compared as diff --runs compares runs
// (compute_diff_data), so a verdict means here what it means on files.
#pragma once

#include <cstdint>
#include <string>

#include "ringprof/tools/perf_diff.h"
#include "ringprof/tools/watch.h"

namespace ringprof {

struct FleetWatchOptions {
  std::string url;
  std::string database = "ringprof";
  std::string prefix;
  std::string host;    // "" any
  std::string job;     // "" any
  WatchOptions watch;  // baseline: "previous" or "day"
};

struct FleetWatchResult {
  bool ok = false;
  std::string error;  // one line
  DiffResult diff;
  uint64_t head_end_ns = 0;  // UTC ns: the latest span end of the selection
};

FleetWatchResult watch_clickhouse(const FleetWatchOptions& options, const DiffOptions& diff);

}  // namespace ringprof

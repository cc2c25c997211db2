// ringprof/tools/overhead.h — `ringprof overhead -- CMD ARGS…`: what profiling
// costs a program, measured by running it.
//
// The command runs `runs` times at each level (after `warmup` runs per level
// that are not counted), the levels interleaved round by round, in an order
// that rotates each round, so drift on a shared machine and any order effect
// hit every level alike. Levels:
//   off        ringprof not started (RINGPROF_DISABLE=1; nothing preloaded);
//   always_on  RINGPROF_MODE=always_on, recording into a fresh directory;
//   detailed   RINGPROF_MODE=detailed.
// A program not linked against ringprof is profiled through LD_PRELOAD of
// libringprof.so with RINGPROF_AUTOSTART=1 (preload "auto" decides by
// whether the executable names ringprof). Each run's wall time, CPU time
// (user + system, children included) and peak RSS come from wait4();
// ringprof's own cost from RINGPROF_STATS_FILE (the drainer's and writer's
// CPU time) and the size of what it wrote.
//
// Slowdown: the ratio of median wall times, level ÷ off - 1, with a 95%
// interval (diff_stats.h, simultaneous over the levels compared).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ringprof/tools/diff_stats.h"

namespace ringprof {

enum class Preload { Auto, Always, Never };

struct OverheadOptions {
  std::vector<std::string> levels = {"off", "always_on", "detailed"};  // "off" first or added
  uint32_t runs = 10;
  uint32_t warmup = 1;
  std::vector<std::string> command;  // argv; command[0] looked up in PATH
  Preload preload = Preload::Auto;
  std::string library;               // libringprof.so for the preload ("" found next to the tool)
  bool show_output = false;          // the command's stdout/stderr (else /dev/null)
  std::string work_dir;              // where the per-run recordings go ("" a temporary directory)
};

struct OverheadRun {
  uint64_t wall_ns = 0;
  uint64_t cpu_ns = 0;
  uint64_t max_rss_bytes = 0;
  uint64_t ringprof_cpu_ns = 0;  // drainer + writer
  uint64_t bytes_written = 0;
};

struct OverheadLevel {
  std::string level;
  std::vector<OverheadRun> runs;  // counted runs, in order
  double wall_s_median = 0;
  double cpu_s_median = 0;
  double max_rss_mib_median = 0;
  Change slowdown;                // wall, against off (off itself: 0)
  Change cpu_change;              // CPU time, against off
  double drainer_cpu_pct = 0;     // ringprof's threads' CPU ÷ wall, median over runs, % of a core
  uint64_t bytes_written = 0;     // median over runs
};

struct OverheadResult {
  std::vector<OverheadLevel> levels;  // in the order asked, off first
  bool preloaded = false;
  std::string error;  // non-empty: why it stopped (a run failed); levels hold what was measured
  int failed_status = 0;  // the failing run's exit status (or 128 + signal)
};

// Runs the command as described above. Progress (one line per round) goes to
// `progress` when it is not null.
OverheadResult measure_overhead(const OverheadOptions& options, void (*progress)(const std::string&) = nullptr);

enum class OverheadFormat { Text, Json };
std::string format_overhead(const OverheadResult& result, OverheadFormat format);

// Whether any level's slowdown interval lies wholly above `pct`.
bool slowdown_above(const OverheadResult& result, double pct);

}  // namespace ringprof

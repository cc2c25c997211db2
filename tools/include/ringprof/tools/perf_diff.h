// ringprof/tools/perf_diff.h — `ringprof diff BASE HEAD`: what got slower (or
// faster) between two recordings, and by how much, with the statistics of
// diff_stats.h.
//
// Compared, by name, across the two recordings:
//   - zones: per-call durations (inclusive), and when both recordings hold
//     steps, each zone's total time per step (its time in each whole step,
//     a step being the span from one step() to the next);
//   - GPU kernels (demangled names): per-launch durations;
//   - sampled functions: their share of the CPU samples (self).
// Calls are shown apart from time: a zone whose calls changed but whose
// per-call time did not is `unchanged` with its calls column saying so.
//
// Memory: every zone's and kernel's duration is kept until the end (16 bytes
// per call, the begin time for the steps), so a recording of 10 million
// zones needs about 160 MB.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ringprof/tools/diff_stats.h"
#include "ringprof/tools/time_range.h"
#include "ringprof/tools/trace_reader.h"

namespace ringprof {

struct DiffOptions {
  RangeSpec range;               // applied to both sides
  std::string thread;            // "" all; a thread name or kernel tid, both sides
  double threshold_pct = 5;      // a smaller change is `unchanged` however sure
  double noise_pct = 2;          // run-to-run noise floor added to every interval (diff_stats.h)
  uint64_t min_calls = 0;        // rows with fewer calls on both sides are left out
  uint64_t min_total_ns = 0;     // rows with less total time on both sides are left out
  std::vector<std::string> only;    // non-empty: only these names
  std::vector<std::string> ignore;  // never these names
  std::vector<std::string> symbol_paths;  // for the sampled functions
  // compute_diff_runs: when not empty, the i-th reader of a side is read in
  // its i-th window alone (absolute, on the reader's time axis), instead of
  // `range` (`ringprof watch`: slices of one live recording as runs).
  std::vector<TimeRange> base_windows, head_windows;
};

struct DiffSide {
  DurationSummary durations;  // calls, median, p90, mean, total
  uint64_t steps = 0;         // whole steps in the recording (0: none)
  double total_per_step_ns = 0;   // median over whole steps of the row's time in each
  double calls_per_step = 0;      // the same for its calls (mean)
};

struct DiffRow {
  std::string name;
  DiffSide base, head;
  Change change;            // of the median per-call duration (a simultaneous 95% interval)
  Change per_step_change;   // of the median time per step (known only when both have steps)
  double calls_change_pct = 0;  // per step when both have steps, else of the raw counts
  Verdict verdict = Verdict::Unchanged;
};

struct FunctionDiffRow {
  std::string function;
  uint64_t base_samples = 0, head_samples = 0;  // self samples
  double base_share_pct = 0, head_share_pct = 0;
  Change change;  // of the share
  Verdict verdict = Verdict::Unchanged;
};

struct DiffResult {
  std::vector<DiffRow> zones;      // worst first (see sort_diff_rows)
  std::vector<DiffRow> kernels;
  std::vector<FunctionDiffRow> functions;
  uint64_t base_steps = 0, head_steps = 0;
  uint64_t base_samples = 0, head_samples = 0;
  double threshold_pct = 5;
  double noise_pct = 2;
  // Names present on both sides, of any kind: 0 means the two recordings have
  // nothing to compare (the command says so and exits 4).
  uint64_t in_common = 0;
  // Comparisons made (names on both sides, after the options, and the
  // process row): the intervals are 95% for all of them at once (diff_stats.h).
  uint64_t comparisons = 0;
  // Runs per side. With two or more on both, every interval comes from the
  // runs' spread (runs_change, diff_stats.h) with a 0.5% resolution floor
  // (noise_pct 0.5); with one on a side, from the calls' spread widened by
  // the --noise floor, the run-to-run noise not measured.
  size_t base_runs = 1, head_runs = 1;
  bool noise_measured = false;
  // The --noise floor, which sampled functions (their samples pooled over the
  // runs) and rows with fewer than two run figures a side keep with runs.
  double pooled_noise_pct = 2;
  // With two or more zones in every run: the process as a whole (the runs'
  // time-weighted mean log median call over those zones), so that a shift of
  // every zone together reads as one row. With the noise measured it has an
  // interval and a verdict, which counts for --fail-above; with one run a
  // side, the estimate alone (interval unknown). Empty name otherwise.
  DiffRow process;
};

// One run of a side as the comparison reads it: every call of each zone
// and kernel name (begin, duration), the step marks' times (sorted), and
// the sampled functions' self samples. compute_diff_runs() collects them
// from files; `ringprof watch --clickhouse` from ClickHouse's tables.
struct DiffCalls {
  std::vector<uint64_t> durations;
  std::vector<uint64_t> begins;
  void add(uint64_t begin_ns, uint64_t duration_ns) {
    durations.push_back(duration_ns);
    begins.push_back(begin_ns);
  }
};
struct DiffRunData {
  std::map<std::string, DiffCalls> zones, kernels;
  std::vector<uint64_t> steps;
  std::map<std::string, uint64_t> functions;
  uint64_t samples = 0;
};

DiffResult compute_diff(TraceReader& base, TraceReader& head, const DiffOptions& options);
// The comparison of runs already collected (options: the rows' filters,
// thresholds and noise; not the range, the thread or the windows).
DiffResult compute_diff_data(const std::vector<DiffRunData>& base, const std::vector<DiffRunData>& head,
                             const DiffOptions& options);

// Several recordings per side (each reader one run of the program).
DiffResult compute_diff_runs(const std::vector<TraceReader*>& base, const std::vector<TraceReader*>& head,
                             const DiffOptions& options);

// Worst first: regressed (largest change first), added, removed, unchanged
// (largest change first), improved (largest improvement last).
void sort_diff_rows(std::vector<DiffRow>& rows);

// Whether any zone or kernel regressed by more than `pct` (its verdict is
// `regressed` and its change exceeds pct): `--fail-above`.
bool regressed_above(const DiffResult& diff, double pct);

enum class DiffFormat { Text, Markdown, Json };
std::string format_diff(const DiffResult& diff, DiffFormat format);

}  // namespace ringprof

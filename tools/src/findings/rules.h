// findings/rules.h (internal) — the rules that turn the gathered facts into
// findings, and every threshold they use. docs/report.md#findings states the
// same numbers; change both together.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "findings/facts.h"
#include "ringprof/tools/findings.h"

namespace ringprof::internal {

// gpu_idle: the median over a process's steps of the share of the step the
// GPU did nothing (no kernel, copy or set on any device).
inline constexpr size_t kIdleMinSteps = 3;
inline constexpr double kIdleWarning = 0.30;
inline constexpr double kIdleCritical = 0.60;
// Zones' self time covering this much of the idle time: the CPU side is what
// the GPU waits for (overhead-bound); less, and the wait is outside every zone.
inline constexpr double kIdleCpuBound = 0.50;

// tiny_kernels: kernels whose launch call took longer than they ran.
inline constexpr uint64_t kTinyMinKernels = 100;
inline constexpr double kTinyWarning = 0.50;  // of the kernels whose launch is known
inline constexpr double kTinyCritical = 0.80;
inline constexpr size_t kTinyListed = 5;

// sync_in_step: synchronising calls and host reads inside the steps.
inline constexpr double kSyncPerStep = 1.0;   // per step on average: info
inline constexpr double kSyncWarning = 0.05;  // share of the steps' time the host was blocked
inline constexpr double kSyncCritical = 0.20;
inline constexpr size_t kSyncListed = 5;

// pageable_copies: copies from or to pageable host memory.
inline constexpr uint64_t kPageableMinCopies = 10;
inline constexpr double kPageableCritical = 0.10;  // their copy time over the processes' recorded time in the range

// comm_exposed: communication not hidden under computation, over step time.
inline constexpr double kCommWarning = 0.10;
inline constexpr double kCommCritical = 0.25;
inline constexpr size_t kCommListed = 8;

// slow_steps.
inline constexpr size_t kSlowMinSteps = 3;
inline constexpr double kSlowFactor = 1.5;     // a step longer than this times the median
inline constexpr double kSlowCritical = 0.20;  // time lost to slow steps over all steps' time
inline constexpr size_t kTrackedZones = 32;    // zones followed per step (most self time first)
inline constexpr size_t kSlowListed = 5;

// drops.
inline constexpr double kDropsCritical = 0.01;  // events (or GPU records) lost over those recorded

// uncovered_hot_function: leaf functions of samples taken outside every zone.
inline constexpr uint64_t kUncoveredMinSamples = 50;
inline constexpr double kUncoveredInfo = 0.10;  // of the samples kept
inline constexpr double kUncoveredWarning = 0.25;
inline constexpr size_t kUncoveredListed = 3;

// straggler: from the ranks report's stragglers; critical when the wait is
// at least this share of the job's median step.
inline constexpr double kStragglerCritical = 0.20;
// collective_stop: critical when a rank is still in its last call, or waited
// this long in it (a timeout's error ends a call too).
inline constexpr uint64_t kStopWaitNs = 1'000'000'000;

// A leaf function's samples, resolved from the processes' stacks.
struct HotFunction {
  std::string function;
  uint64_t samples = 0;
};

std::vector<Finding> rule_gpu_idle(const std::vector<ProcessFacts>& processes);
std::vector<Finding> rule_tiny_kernels(const std::vector<ProcessFacts>& processes);
std::vector<Finding> rule_sync_in_step(const std::vector<ProcessFacts>& processes);
std::vector<Finding> rule_pageable_copies(const std::vector<ProcessFacts>& processes);
// From the ranks report's rows when given (find_problems() passes them only
// for a job of several ranks with no time range and no thread filter), else
// each process's steps that touch the range.
std::vector<Finding> rule_comm_exposed(const std::vector<ProcessFacts>& processes, const RanksReport* ranks);
std::vector<Finding> rule_slow_steps(const std::vector<ProcessFacts>& processes);
std::vector<Finding> rule_drops(const std::vector<ProcessFacts>& processes);
// From the ranks report (a job of several ranks seen whole, as comm_exposed).
std::vector<Finding> rule_straggler(const RanksReport* ranks);
std::vector<Finding> rule_collective_stop(const RanksReport* ranks);
std::vector<Finding> rule_collective_mismatch(const RanksReport* ranks);
// `uncovered`: by function, samples outside every zone, most first;
// `samples`: every sample kept; `period_ns`: CPU time per sample (0: unknown).
std::vector<Finding> rule_uncovered_hot_function(const std::vector<HotFunction>& uncovered, uint64_t samples,
                                                 uint64_t period_ns);

// Text the rules share.
std::string percent_text(double share);  // 0.4567 -> "45.7"
// part / whole, 0 when whole is 0.
double share(uint64_t part, uint64_t whole);
// A duration as the evidence words it ("852.1 µs").
std::string dur(uint64_t ns);
std::string fixed_text(double value, int decimals);  // 2.0 -> "2.00"

}  // namespace ringprof::internal

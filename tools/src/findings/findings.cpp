// find_problems: the ranks scan first (step boundaries, per-step GPU
// figures, each zone's self time), then the facts collector with those known,
// then every rule, most severe finding first.
#include "ringprof/tools/findings.h"

#include <algorithm>
#include <map>
#include <memory>
#include <thread>

#include "findings/rules.h"
#include "ringprof/tools/rank_scan.h"
#include "ringprof/tools/stack_resolver.h"
#include "ringprof/tools/trace_range.h"

namespace ringprof {

const char* finding_severity_name(FindingSeverity severity) noexcept {
  switch (severity) {
    case FindingSeverity::Info: return "info";
    case FindingSeverity::Warning: return "warning";
    case FindingSeverity::Critical: return "critical";
  }
  return "info";
}

std::string Finding::figure(const std::string& name) const {
  for (const auto& [key, value] : figures)
    if (key == name) return value;
  return "";
}

std::vector<Finding> find_problems(TraceReader& reader, const FindingsOptions& options, const RanksReport* ranks) {
  using namespace internal;
  TimeRange range;
  if (!options.range.empty()) {
    if (auto w = resolve_trace_range(reader, options.range, nullptr)) range = *w;  // the CLI checked it
  }
  const unsigned threads = std::max(1u, std::thread::hardware_concurrency());
  const std::vector<RankScan> scans = scan_ranks(reader, false, threads);
  std::vector<std::unique_ptr<FactsCollector>> collectors;
  for (const RankScan& scan : scans)
    collectors.push_back(std::make_unique<FactsCollector>(scan, range, options.thread, kTrackedZones));
  reader.read_parallel([&](size_t i) -> SegmentVisitor& { return *collectors[i]; }, threads);
  std::vector<ProcessFacts> facts;
  for (auto& c : collectors) facts.push_back(std::move(c->facts()));
  collectors.clear();

  // Samples outside every zone, by their leaf function (the innermost frame,
  // an inlined function when the leaf was inlined). A stack the files no
  // longer describe names no function: it counts among the samples only.
  StackResolver resolver;
  std::map<std::string, uint64_t> by_function;
  uint64_t samples = 0, period_ns = 0;
  for (const ProcessFacts& f : facts) {
    samples += f.samples;
    if (period_ns == 0) period_ns = f.sample_period_ns;
    const ProcessState& process = reader.processes()[f.process];
    for (const auto& [stack, n] : f.uncovered_by_stack) {
      if (process.stack(stack) == nullptr) continue;
      const std::vector<ResolvedFrame>& frames = resolver.stack(process, stack);
      if (!frames.empty()) by_function[frames.front().function] += n;
    }
  }
  std::vector<HotFunction> uncovered;
  for (const auto& [function, n] : by_function) uncovered.push_back({function, n});
  std::stable_sort(uncovered.begin(), uncovered.end(),
                   [](const HotFunction& a, const HotFunction& b) { return a.samples > b.samples; });

  std::vector<Finding> out;
  auto add = [&out](std::vector<Finding> found) {
    for (Finding& f : found) out.push_back(std::move(f));
  };
  add(rule_gpu_idle(facts));
  add(rule_tiny_kernels(facts));
  add(rule_sync_in_step(facts));
  add(rule_pageable_copies(facts));
  // The ranks report's rows cover each rank's whole recording on every
  // thread: only right for a job of several ranks seen whole. Otherwise each
  // process's own steps, which follow the range.
  const bool whole_job = ranks && ranks->ranks.size() > 1 && options.range.empty() && options.thread.empty();
  add(rule_comm_exposed(facts, whole_job ? ranks : nullptr));
  add(rule_collective_stop(whole_job ? ranks : nullptr));
  add(rule_collective_mismatch(whole_job ? ranks : nullptr));
  add(rule_straggler(whole_job ? ranks : nullptr));
  add(rule_slow_steps(facts));
  add(rule_drops(facts));
  add(rule_uncovered_hot_function(uncovered, samples, period_ns));
  std::stable_sort(out.begin(), out.end(), [](const Finding& a, const Finding& b) { return a.severity > b.severity; });
  return out;
}

}  // namespace ringprof

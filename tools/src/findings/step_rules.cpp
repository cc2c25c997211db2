// The step rules: sync_in_step (the host blocked on the GPU inside the step
// loop) and slow_steps (steps far slower than the median, and the zone that
// grew in them).
#include <algorithm>

#include "common/robust_stats.h"
#include "findings/rules.h"
#include "common/text_table.h"

namespace ringprof::internal {

std::vector<Finding> rule_sync_in_step(const std::vector<ProcessFacts>& processes) {
  std::vector<Finding> out;
  for (const ProcessFacts& p : processes) {
    if (p.steps.empty() || p.syncs.empty()) continue;
    uint64_t count = 0, blocked = 0, time = 0;
    for (const auto& [name, s] : p.syncs) {
      count += s.count;
      blocked += s.blocked_ns;
    }
    for (const StepStats& s : p.steps) time += s.duration_ns();
    const double per_step = static_cast<double>(count) / static_cast<double>(p.steps.size());
    const double blocked_share = share(blocked, time);
    if (per_step < kSyncPerStep && blocked_share < kSyncWarning) continue;
    std::vector<std::pair<std::string, SyncFacts>> calls(p.syncs.begin(), p.syncs.end());
    std::stable_sort(calls.begin(), calls.end(),
                     [](const auto& a, const auto& b) { return a.second.blocked_ns > b.second.blocked_ns; });
    Finding f;
    f.rule = "sync_in_step";
    f.severity = blocked_share >= kSyncCritical  ? FindingSeverity::Critical
                 : blocked_share >= kSyncWarning ? FindingSeverity::Warning
                                                 : FindingSeverity::Info;
    f.title = std::to_string(count) + " synchronising calls in " + std::to_string(p.steps.size()) + " steps (" +
              fixed_text(per_step, 2) + " per step), the host blocked " + percent_text(blocked_share) +
              "% of step time";
    f.evidence = "In " + p.label + ", inside the step loop the host waited for the GPU " + std::to_string(count) +
                 " times, " + dur(blocked) + " in all (" + dur(blocked / p.steps.size()) + " per step):";
    for (size_t i = 0; i < calls.size() && i < kSyncListed; ++i)
      f.evidence += (i ? ", " : " ") + calls[i].first + " ×" + std::to_string(calls[i].second.count) + " (" +
                    dur(calls[i].second.blocked_ns) + ")";
    if (calls.size() > kSyncListed) f.evidence += ", and " + std::to_string(calls.size() - kSyncListed) + " more";
    f.evidence += ".";
    f.advice =
        "Each one stops the host until the GPU has caught up, so the next work is not queued in time. Keep "
        "values on the GPU (accumulate losses and metrics as tensors, read them every N steps instead of "
        ".item()/.cpu() per step), take torch.cuda.synchronize()/cudaDeviceSynchronize out of the loop (time "
        "with CUDA events), copy with non_blocking=True from pinned memory; "
        "torch.cuda.set_sync_debug_mode(\"warn\") points at the calls.";
    f.figures = {{"process", p.label},
                 {"steps", std::to_string(p.steps.size())},
                 {"syncs", std::to_string(count)},
                 {"syncs_per_step", fixed_text(per_step, 2)},
                 {"blocked_ns", std::to_string(blocked)},
                 {"blocked_pct", percent_text(blocked_share)},
                 {"top_call", calls.front().first},
                 {"top_call_count", std::to_string(calls.front().second.count)},
                 {"top_call_blocked_ns", std::to_string(calls.front().second.blocked_ns)}};
    out.push_back(std::move(f));
  }
  return out;
}

std::vector<Finding> rule_slow_steps(const std::vector<ProcessFacts>& processes) {
  std::vector<Finding> out;
  for (const ProcessFacts& p : processes) {
    const size_t n = p.steps.size();
    if (n < kSlowMinSteps) continue;
    std::vector<uint64_t> times;
    uint64_t total = 0;
    for (const StepStats& s : p.steps) {
      times.push_back(s.duration_ns());
      total += s.duration_ns();
    }
    const uint64_t med = median(times);
    std::vector<size_t> slow;
    uint64_t lost = 0;
    for (size_t i = 0; i < n; ++i) {
      if (static_cast<double>(times[i]) <= kSlowFactor * static_cast<double>(med)) continue;
      slow.push_back(i);
      lost += times[i] - med;
    }
    if (slow.empty()) continue;
    std::stable_sort(slow.begin(), slow.end(), [&](size_t a, size_t b) { return times[a] > times[b]; });

    // Each followed zone's median self time per step, then per slow step the
    // zone furthest above its median.
    const size_t zones = p.tracked.size();
    std::vector<uint64_t> zone_median(zones);
    for (size_t z = 0; z < zones; ++z) {
      std::vector<uint64_t> v(n);
      for (size_t i = 0; i < n; ++i) v[i] = p.step_zone_ns[i * zones + z];
      zone_median[z] = median(std::move(v));
    }
    auto grown = [&](size_t step, uint64_t* excess) -> std::string {
      std::string best;
      *excess = 0;
      for (size_t z = 0; z < zones; ++z) {
        const uint64_t v = p.step_zone_ns[step * zones + z];
        if (v > zone_median[z] && v - zone_median[z] > *excess) {
          *excess = v - zone_median[z];
          best = p.tracked[z];
        }
      }
      return best;
    };

    const double lost_share = share(lost, total);
    // Warm-up: the one slow step is the first looked at and the process's
    // first (numbered 0 or 1); a later first step (a rolling recording, a
    // window from the middle) is slow for a reason of its own.
    const bool warm_up_only = slow.size() == 1 && slow.front() == 0 && p.steps.front().number <= 1;
    const size_t top = slow.front();
    Finding f;
    f.rule = "slow_steps";
    f.severity = warm_up_only                  ? FindingSeverity::Info
                 : lost_share >= kSlowCritical ? FindingSeverity::Critical
                                               : FindingSeverity::Warning;
    f.title = std::to_string(slow.size()) + " of " + std::to_string(n) + " steps slower than " +
              fixed_text(kSlowFactor, 1) + "× the median (slowest: step " + std::to_string(p.steps[top].number) + ", " +
              dur(times[top]) + " against " + dur(med) + ")";
    f.evidence = "In " + p.label + " the median step took " + dur(med) + "; the slow steps took " + dur(lost) +
                 " more than that in all (" + percent_text(lost_share) + "% of the steps' time).";
    for (size_t k = 0; k < slow.size() && k < kSlowListed; ++k) {
      const size_t i = slow[k];
      uint64_t excess = 0;
      const std::string zone = grown(i, &excess);
      f.evidence += (k ? "; " : " ") + std::string("step ") + std::to_string(p.steps[i].number) + ": " + dur(times[i]) +
                    " (" +
                    fixed_text(static_cast<double>(times[i]) / static_cast<double>(std::max<uint64_t>(med, 1)), 1) +
                    "× the median)";
      f.evidence += zone.empty() ? ", no followed zone grew" : ", " + zone + " +" + dur(excess) + " over its median";
    }
    if (slow.size() > kSlowListed) f.evidence += "; and " + std::to_string(slow.size() - kSlowListed) + " more";
    f.evidence += ".";
    f.advice = warm_up_only
                   ? "Only the first step is slow: warm-up (allocator, cuDNN autotuning, compilation, lazy loading). "
                     "Leave it out when measuring (RINGPROF_SCHEDULE with skip_first or wait)."
                   : "Look at what the named zone does in those steps: periodic work (checkpoints, evaluation, "
                     "logging), garbage collection, recompilation (torch.compile guards, changing shapes), "
                     "data-loader stalls, or another job on the machine. Move periodic work out of the loop, make it "
                     "asynchronous, or spread it over more steps.";
    uint64_t top_excess = 0;
    const std::string top_zone = grown(top, &top_excess);
    f.figures = {{"process", p.label},
                 {"steps", std::to_string(n)},
                 {"slow_steps", std::to_string(slow.size())},
                 {"median_step_ns", std::to_string(med)},
                 {"slowest_step", std::to_string(p.steps[top].number)},
                 {"slowest_step_ns", std::to_string(times[top])},
                 {"slowest_zone", top_zone},
                 {"slowest_zone_excess_ns", std::to_string(top_excess)},
                 {"lost_ns", std::to_string(lost)},
                 {"lost_pct", percent_text(lost_share)}};
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace ringprof::internal

// The GPU rules: gpu_idle (the GPU waits within steps, and on what),
// tiny_kernels (launch-bound kernels), pageable_copies (copies the driver
// must stage), comm_exposed (communication not hidden under computation).
#include <algorithm>
#include <map>

#include "common/robust_stats.h"
#include "findings/rules.h"
#include "common/text_table.h"
#include "symbols/demangle.h"

namespace ringprof::internal {

namespace {

std::string bytes_text(uint64_t bytes) {
  if (bytes < 1024) return std::to_string(bytes) + " B";
  if (bytes < (1ull << 20)) return fixed_text(static_cast<double>(bytes) / 1024.0, 1) + " KiB";
  if (bytes < (1ull << 30)) return fixed_text(static_cast<double>(bytes) / (1 << 20), 1) + " MiB";
  return fixed_text(static_cast<double>(bytes) / (1ull << 30), 2) + " GiB";
}

}  // namespace

std::vector<Finding> rule_gpu_idle(const std::vector<ProcessFacts>& processes) {
  std::vector<Finding> out;
  for (const ProcessFacts& p : processes) {
    if (!p.gpu) continue;
    std::vector<double> shares;
    std::vector<uint64_t> times, idles;
    uint64_t idle_total = 0, idle_in_zones = 0;
    for (const StepStats& s : p.steps) {
      if (s.duration_ns() == 0) continue;
      shares.push_back(share(s.idle_ns(), s.duration_ns()));
      times.push_back(s.duration_ns());
      idles.push_back(s.idle_ns());
      idle_total += s.idle_ns();
      idle_in_zones += s.idle_in_zones_ns;
    }
    if (shares.size() < kIdleMinSteps) continue;
    const double idle_share = median(shares);
    if (idle_share < kIdleWarning) continue;

    // The zone with the most self time while the GPU was idle. The idle
    // time zones cover: with every thread, the time some zone was open on
    // some thread (the step chart's "GPU idle, CPU in zones"); with
    // --thread, the selected threads' zones' self time together (threads
    // may overlap: at most the idle time).
    std::string top;
    uint64_t top_ns = 0, covered = 0;
    for (const auto& [name, ns] : p.idle_self_ns) {
      covered += ns;
      if (ns > top_ns || (ns == top_ns && !top.empty() && name < top)) {
        top = name;
        top_ns = ns;
      }
    }
    covered = std::min(p.all_threads ? idle_in_zones : covered, idle_total);
    const double covered_share = share(covered, idle_total);
    const uint64_t steps = shares.size();
    const std::string bound = !top.empty() && is_data_loading_zone(top) ? "input"
                              : covered_share >= kIdleCpuBound          ? "cpu"
                                                                        : "unknown";
    Finding f;
    f.rule = "gpu_idle";
    f.severity = idle_share >= kIdleCritical ? FindingSeverity::Critical : FindingSeverity::Warning;
    const std::string pct = percent_text(idle_share);
    if (bound == "input") {
      f.title = "GPU idle " + pct + "% of each step, waiting for data loading (" + top + ")";
      f.advice =
          "The input pipeline is what the GPU waits for. Load and collate in DataLoader worker processes "
          "(num_workers, persistent_workers=True, prefetch_factor), copy from pinned memory "
          "(pin_memory=True, non_blocking=True), move decoding and augmentation to the GPU, or cache "
          "preprocessed data.";
    } else if (bound == "cpu") {
      f.title = "GPU idle " + pct + "% of each step: CPU-bound, the host is in " + top;
      f.advice =
          "The step is overhead-bound (the CPU cannot issue work fast enough; torch.profiler and HTA call "
          "this CPU-bound). Cut per-step host work and launch overhead: CUDA graphs, "
          "torch.compile(mode=\"reduce-overhead\"), fused or foreach optimizers, larger batches; move work "
          "the GPU does not wait for off the training thread.";
    } else {
      f.title = "GPU idle " + pct + "% of each step, not explained by any zone";
      f.advice =
          "The GPU waits on something no zone covers: synchronisation (see sync_in_step), I/O, or another "
          "process. Add zones around the rest of the step's CPU work, or read the CPU samples of the idle "
          "stretches (flame graph).";
    }
    f.evidence = "In " + p.label + " the GPU did nothing for a median " + pct + "% of each step over " +
                 std::to_string(steps) + " steps (median step " + dur(median(times)) + ", median idle " +
                 dur(median(idles)) + ").";
    if (!top.empty())
      f.evidence += " While it was idle the CPU was mostly in " + top + ": " + dur(top_ns / steps) + " per step (" +
                    percent_text(share(top_ns, idle_total)) + "% of the idle time); zones covered " +
                    percent_text(covered_share) + "% of the idle time.";
    else
      f.evidence += " No zone was open on the selected threads while it was idle.";
    f.figures = {{"process", p.label},
                 {"steps", std::to_string(steps)},
                 {"idle_pct_median", pct},
                 {"step_median_ns", std::to_string(median(times))},
                 {"idle_median_ns", std::to_string(median(idles))},
                 {"top_zone", top},
                 {"top_zone_idle_ns_per_step", std::to_string(top_ns / steps)},
                 {"idle_covered_pct", percent_text(covered_share)},
                 {"bound", bound}};
    out.push_back(std::move(f));
  }
  return out;
}

std::vector<Finding> rule_tiny_kernels(const std::vector<ProcessFacts>& processes) {
  std::map<std::string, KernelLaunchFacts> by_name;  // demangled
  uint64_t kernels = 0, bound = 0, seen = 0;
  for (const ProcessFacts& p : processes) {
    seen += p.kernels_seen;
    for (const auto& [raw, k] : p.kernels) {
      KernelLaunchFacts& m = by_name[demangle(raw)];
      m.kernels += k.kernels;
      m.launch_bound += k.launch_bound;
      m.run_ns.insert(m.run_ns.end(), k.run_ns.begin(), k.run_ns.end());
      m.launch_ns.insert(m.launch_ns.end(), k.launch_ns.begin(), k.launch_ns.end());
      kernels += k.kernels;
      bound += k.launch_bound;
    }
  }
  const double bound_share = share(bound, kernels);
  if (bound < kTinyMinKernels || bound_share < kTinyWarning) return {};
  std::vector<std::pair<std::string, const KernelLaunchFacts*>> rows;
  for (const auto& [name, k] : by_name)
    if (k.launch_bound) rows.emplace_back(name, &k);
  std::stable_sort(rows.begin(), rows.end(),
                   [](const auto& a, const auto& b) { return a.second->launch_bound > b.second->launch_bound; });
  Finding f;
  f.rule = "tiny_kernels";
  f.severity = bound_share >= kTinyCritical ? FindingSeverity::Critical : FindingSeverity::Warning;
  f.title = "Launch-bound: " + std::to_string(bound) + " of " + std::to_string(kernels) + " kernels (" +
            percent_text(bound_share) + "%) ran shorter than their launch call";
  f.evidence = std::to_string(bound) +
               " kernels ran for less time than the CPU spent launching them "
               "(cudaLaunchKernel/cuLaunchKernel, matched by correlation id)";
  if (seen > kernels)
    f.evidence += "; " + std::to_string(seen - kernels) +
                  " more kernels had no launch call of their own in the files (or ran in a CUDA graph) and are not "
                  "counted";
  f.evidence += ". Most often:";
  for (size_t i = 0; i < rows.size() && i < kTinyListed; ++i) {
    const KernelLaunchFacts& k = *rows[i].second;
    f.evidence += (i ? "; " : " ") + rows[i].first + ": " + std::to_string(k.launch_bound) + " of " +
                  std::to_string(k.kernels) + ", median run " + dur(median(k.run_ns)) + " vs launch " +
                  dur(median(k.launch_ns));
  }
  f.evidence += ".";
  f.advice =
      "Kernels this short leave the GPU waiting for the CPU's launches. Fuse them (torch.compile, fused or "
      "foreach optimizers, fused layers), capture the step in CUDA graphs (torch.cuda.graphs, "
      "torch.compile(mode=\"reduce-overhead\")), or give each kernel more work (larger batches).";
  const KernelLaunchFacts& top = *rows.front().second;
  f.figures = {{"kernels", std::to_string(kernels)},
               {"launch_bound", std::to_string(bound)},
               {"launch_bound_pct", percent_text(bound_share)},
               {"kernels_without_launch", std::to_string(seen - kernels)},
               {"top_kernel", rows.front().first},
               {"top_kernel_launch_bound", std::to_string(top.launch_bound)},
               {"top_kernel_run_median_ns", std::to_string(median(top.run_ns))},
               {"top_kernel_launch_median_ns", std::to_string(median(top.launch_ns))}};
  return {std::move(f)};
}

std::vector<Finding> rule_pageable_copies(const std::vector<ProcessFacts>& processes) {
  uint64_t copies = 0, bytes = 0, ns = 0, span = 0;
  std::map<uint8_t, uint64_t> by_direction;
  for (const ProcessFacts& p : processes) {
    if (p.pageable_copies == 0) continue;
    copies += p.pageable_copies;
    bytes += p.pageable_bytes;
    ns += p.pageable_ns;
    span += p.range_ns;
    for (const auto& [kind, n] : p.pageable_by_direction) by_direction[kind] += n;
  }
  if (copies < kPageableMinCopies) return {};
  const double time_share = share(ns, span);
  Finding f;
  f.rule = "pageable_copies";
  f.severity = time_share >= kPageableCritical ? FindingSeverity::Critical : FindingSeverity::Warning;
  f.title =
      std::to_string(copies) + " copies from or to pageable host memory (" + bytes_text(bytes) + ", " + dur(ns) + ")";
  std::string directions;
  for (const auto& [kind, n] : by_direction) {
    const auto k = static_cast<GpuCopyKind>(std::min<uint8_t>(kind, kGpuCopyKindCount - 1));
    directions += (directions.empty() ? "" : ", ") + std::string(gpu_copy_kind_name(k)) + " " + std::to_string(n);
  }
  f.evidence = std::to_string(copies) + " copies (" + directions + ") moved " + bytes_text(bytes) +
               " between the GPU and pageable host memory in " + dur(ns) + " of copy time, " +
               percent_text(time_share) +
               "% of the recorded time looked at. The driver stages such copies through a pinned "
               "buffer: they block the host and cannot overlap computation.";
  f.advice =
      "Pin the host buffers (DataLoader(pin_memory=True), tensor.pin_memory(), cudaHostAlloc/cudaMallocHost "
      "or cudaHostRegister) and copy asynchronously (non_blocking=True, cudaMemcpyAsync on a side stream).";
  f.figures = {{"copies", std::to_string(copies)},
               {"bytes", std::to_string(bytes)},
               {"copy_ns", std::to_string(ns)},
               {"copy_pct", percent_text(time_share)}};
  for (const auto& [kind, n] : by_direction) {
    const auto k = static_cast<GpuCopyKind>(std::min<uint8_t>(kind, kGpuCopyKindCount - 1));
    f.figures.emplace_back(gpu_copy_kind_name(k), std::to_string(n));
  }
  return {std::move(f)};
}

std::vector<Finding> rule_comm_exposed(const std::vector<ProcessFacts>& processes, const RanksReport* ranks) {
  struct Row {
    std::string label;
    uint64_t comm = 0, overlap = 0, span = 0;
    uint64_t exposed() const { return comm > overlap ? comm - overlap : 0; }
    double exposed_share() const { return share(exposed(), span); }
  };
  std::vector<Row> rows;
  if (ranks && !ranks->ranks.empty()) {
    for (const RankRow& r : ranks->ranks)
      rows.push_back({r.rank >= 0 ? "rank " + std::to_string(r.rank) : "pid " + std::to_string(r.pid), r.comm_ns,
                      r.overlap_ns, r.span_ns});
  } else {
    for (const ProcessFacts& p : processes) {
      Row row{p.rank_label};
      if (p.steps.empty()) {
        row.comm = p.whole.comm_ns;
        row.overlap = p.whole.overlap_ns;
        row.span = p.whole.duration_ns();
      }
      for (const StepStats& s : p.steps) {
        row.comm += s.comm_ns;
        row.overlap += s.overlap_ns;
        row.span += s.duration_ns();
      }
      rows.push_back(std::move(row));
    }
  }
  std::vector<Row> hit;
  for (const Row& r : rows)
    if (r.comm > 0 && r.exposed_share() >= kCommWarning) hit.push_back(r);
  if (hit.empty()) return {};
  std::stable_sort(hit.begin(), hit.end(),
                   [](const Row& a, const Row& b) { return a.exposed_share() > b.exposed_share(); });
  const Row& worst = hit.front();
  Finding f;
  f.rule = "comm_exposed";
  f.severity = worst.exposed_share() >= kCommCritical ? FindingSeverity::Critical : FindingSeverity::Warning;
  f.title = "Communication not hidden under computation: up to " + percent_text(worst.exposed_share()) +
            "% of step time (" + worst.label + ")";
  f.evidence = std::to_string(hit.size()) + " of " + std::to_string(rows.size()) +
               (rows.size() == 1 ? " rank" : " ranks") + " spent at least " + percent_text(kCommWarning) +
               "% of their step time communicating with no computation running:";
  for (size_t i = 0; i < hit.size() && i < kCommListed; ++i) {
    const Row& r = hit[i];
    f.evidence += (i ? "; " : " ") + r.label + " " + percent_text(r.exposed_share()) + "% (" + dur(r.exposed()) +
                  " of " + dur(r.span) + "; " + dur(r.comm) + " of communication, " +
                  percent_text(share(r.overlap, r.comm)) + "% of it hidden)";
  }
  if (hit.size() > kCommListed) f.evidence += "; and " + std::to_string(hit.size() - kCommListed) + " more";
  f.evidence += ".";
  f.advice =
      "Overlap communication with computation: let DDP start its all-reduces during backward (a smaller "
      "bucket_cap_mb, gradient_as_bucket_view=True, nothing synchronising between backward and the "
      "optimizer), FSDP's backward_prefetch/forward_prefetch; raise the computation per byte sent (larger "
      "batch per rank, gradient accumulation under no_sync()); check the interconnect (NCCL_DEBUG=INFO).";
  f.figures = {{"ranks_affected", std::to_string(hit.size())},
               {"ranks", std::to_string(rows.size())},
               {"worst", worst.label},
               {"worst_exposed_pct", percent_text(worst.exposed_share())},
               {"worst_exposed_ns", std::to_string(worst.exposed())},
               {"worst_comm_ns", std::to_string(worst.comm)},
               {"worst_overlap_ns", std::to_string(worst.overlap)}};
  return {std::move(f)};
}

}  // namespace ringprof::internal

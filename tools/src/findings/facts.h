// findings/facts.h (internal) — what the findings' second pass gathers from
// one process's files, for the rules (findings/rules.h) to judge.
//
// The collector is told beforehand what the first pass (the ranks scan)
// learned: the whole steps to look at and the zones worth following per step.
// It then keeps counters and small tables only: per zone name, per kernel
// name, per stack id, and one row of tracked zones per step.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "ringprof/gpu.h"
#include "ringprof/tools/rank_scan.h"
#include "ringprof/tools/time_range.h"
#include "ringprof/tools/trace_reader.h"

namespace ringprof::internal {

// A kernel name's launches, over the kernels whose launching API call is in
// the files (same correlation id) and launched them alone (not a CUDA graph).
struct KernelLaunchFacts {
  uint64_t kernels = 0;
  uint64_t launch_bound = 0;        // the launch call took longer than the kernel ran
  std::vector<uint64_t> run_ns;     // the first kMaxDurations kernels' run times...
  std::vector<uint64_t> launch_ns;  // ...and their launch calls' times
  static constexpr size_t kMaxDurations = 512;
};

// Host time blocked by one kind of synchronising call or host read.
struct SyncFacts {
  uint64_t count = 0;
  uint64_t blocked_ns = 0;
};

struct ProcessFacts {
  size_t process = 0;                  // index into TraceReader::processes()
  std::string label;                   // "rank 3 (host, pid 12)" or "trainer (pid 12)"
  std::string rank_label;              // "rank 3", or "pid 12" when the files state no rank
  uint64_t first_ns = 0, last_ns = 0;  // of the process's events and GPU records
  uint64_t range_ns = 0;               // the range within [first_ns, last_ns]: the recorded time looked at
  bool gpu = false;                    // kernels, copies or sets recorded
  StepStats whole;                     // the ranks scan's figures over everything

  // Whole steps that touch the range, in time order (contiguous).
  std::vector<StepStats> steps;
  bool all_threads = true;  // no --thread: the steps' idle_in_zones_ns speak for the selection

  // gpu_idle: per zone name, its self time (selected threads) while the GPU
  // did nothing, within the steps.
  std::unordered_map<std::string, uint64_t> idle_self_ns;
  uint64_t idle_evaluated_early = 0;  // self-time pieces judged before the GPU records of their time came

  // slow_steps: the zones followed per step, and their self time per step
  // (steps.size() rows of tracked.size()).
  std::vector<std::string> tracked;
  std::vector<uint64_t> step_zone_ns;

  // sync_in_step: by call or zone name, within the steps.
  std::map<std::string, SyncFacts> syncs;

  // tiny_kernels: by raw kernel name.
  std::unordered_map<std::string, KernelLaunchFacts> kernels;
  uint64_t kernels_seen = 0;  // with or without a known launch

  // pageable_copies.
  uint64_t pageable_copies = 0, pageable_bytes = 0, pageable_ns = 0;
  std::map<uint8_t, uint64_t> pageable_by_direction;  // GpuCopyKind -> copies

  // drops (whole files, like `ringprof info`).
  uint64_t events = 0, dropped_ring = 0, dropped_io = 0, samples_lost = 0;
  uint64_t gpu_records = 0;
  GpuStats gpu_stats;

  // uncovered_hot_function: samples kept (range, threads), and those taken
  // while no zone was open on their thread, by stack id.
  uint64_t samples = 0;
  uint64_t sample_period_ns = 0;  // CPU time per sample (0: unknown)
  std::unordered_map<uint32_t, uint64_t> uncovered_by_stack;
};

// The second pass over one process (findings/collector.h says how it follows
// zones, samples and GPU records). `scan`: its ranks scan (steps, per-name
// self times); `tracked_zones`: how many zone names to follow per step.
class FactsCollector final : public SegmentVisitor {
 public:
  FactsCollector(const RankScan& scan, TimeRange range, const std::string& thread, size_t tracked_zones);
  ~FactsCollector() override;
  void begin_process(const ProcessState& p) override;
  void segment(const SegmentView& view) override;
  void end_process(const ProcessState& p) override;
  // After end_process().
  ProcessFacts& facts();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// Zone names that say the input pipeline, judged by words: the name split at
// every character other than an ASCII letter or digit, at lower-to-upper case
// changes (DataLoader: data, loader) and between letters and digits, any case.
// Data loading: the word "dataloader", "dataset" or "collate"; "fetch" or
// "fetcher" (not "prefetch", nor "pre" "fetch"); "data" followed by "loader",
// "loading", "load", "fetch", "fetcher", "iter" or "pipeline" (data_loader,
// _MultiProcessingDataLoaderIter), or after "next", "get", "fetch", "read" or
// "load" (_next_data, load_data); "batch" after "load", "next", "get" or
// "fetch" (load_batch, next_batch). "data" followed by "parallel"
// (DataParallel, DistributedDataParallel) is not data loading, nor are words
// that merely contain "data" (metadata).
bool is_data_loading_zone(const std::string& name);
// Zones that read a tensor's value back to the host (a hidden synchronisation):
// aten::item, aten::_local_scalar_dense, and names ending in .item(), .cpu(),
// .tolist(), .numpy() (parentheses optional).
bool is_host_read_zone(const std::string& name);
// CUDA calls that block the host until the GPU is done: the Synchronize calls
// (device, stream, event, context) and copies that are not Async.
bool is_sync_call(const std::string& api_name);

}  // namespace ringprof::internal

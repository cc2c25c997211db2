// ringprof/tools/rank_scan.h — what one rank's files say about its part in a
// distributed job, gathered in one streaming pass (a SegmentVisitor).
//
// Steps are the spans between consecutive ringprof::step() events; a step is
// whole when both of its ends are in the files. Within each step the scan
// measures
//   - GPU time, all of the process's devices on one timeline: computation
//     (kernels that are not NCCL), communication (NCCL kernels), memory
//     (copies and sets), the communication hidden under computation (both at
//     once), and idle (the step's time with none of the three);
//   - CPU time in zones: the self time of every zone with an end, summed over
//     threads (on a thread that is the time some zone was open), a zone that
//     crosses a step boundary split in proportion. Zones without an end
//     (still open when the files end, or a PyTorch operator ended on another
//     thread) are left out: their length is not known;
//   - the time in zones: when some zone with an end was open on some thread
//     of the process (each instant once, whatever the number of threads),
//     and the part of it during which the GPU was idle (none of the three
//     GPU kinds at work): with the GPU's busy time it splits the step into
//     GPU work, GPU idle while the host ran zones, and idle in both.
// It also keeps the process's collective calls (ringprof/tools/collectives.h),
// for aligning clocks and finding who arrives late, and per zone name the
// self time, per kernel name the time, to tell what makes a rank slower.
//
// Memory is bounded whatever the trace's size: GPU intervals pass through a
// reorder window of kGpuWindow records (CUPTI hands records over roughly in
// time order) and are then swept once; closed zones pass through one of
// kZoneWindow zones, merged from per-thread queues (a thread's zones close
// in end order), and are accounted in end order (each thread's events
// arrive a drain round apart, so another thread's zones may come before the
// step mark that precedes them); only the latest kMaxCollectives calls are
// kept; steps cost one row each. A GPU record that starts before what the
// sweep has already passed (further out of order than the window) still
// counts in the totals but without its overlap; late_gpu_records counts them,
// and late_step_marks the marks that came after time they begin was accounted.
// The time in zones is settled in time order, keeping about the latest
// kCoverSpans/2 disjoint spans of zones and GPU work (and not past the GPU
// sweep until 4 times kCoverSpans are kept): a zone or GPU record that began
// before what is settled (a zone longer than that margin, a thread's events
// or CUPTI's records that came much later) counts only from there on;
// late_cover_spans counts them. A step's time in zones never exceeds the
// step, nor its GPU-idle part the step's idle time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "ringprof/tools/trace_reader.h"
#include "ringprof/tools/zone_tracker.h"

namespace ringprof {

// One collective call of a rank. `key` indexes RankScan::keys; so does
// `group` when PyTorch numbered the call (`seq` > 0) in that process group.
struct CollectiveCall {
  uint32_t key = 0;
  uint64_t begin_ns = 0;
  uint64_t end_ns = 0;
  uint32_t group = 0;
  uint64_t seq = 0;  // 0: not numbered; matched across ranks by when it ended
};

// One operation of a process group the rank entered (PyTorch's c10d work,
// an async span such as "gloo:all_reduce", or a zone marked with
// mark_collective), for following the ranks through each group's sequence.
struct GroupCall {
  std::string group;   // a marked zone's group; PyTorch's work: its group's name, "default" for the world's
                       // and for calls made from C++ (ringprof.torch names the group of calls made from Python)
  std::string op;      // canonical: "all_reduce", "broadcast", …
  std::string name;    // as recorded: "gloo:all_reduce"
  std::string shapes;  // the work's "Input Dims" argument; "" when none was recorded
  uint64_t begin_ns = 0;
  uint64_t end_ns = 0;     // for one not completed: where the files end
  bool completed = false;  // its end is in the files
  uint64_t seq = 0;        // PyTorch's sequence number in the group ("seq" argument); 0 when not recorded
};

struct StepStats {
  uint64_t number = 0;   // the value given to step()
  uint64_t begin_ns = 0;
  uint64_t end_ns = 0;   // the next step's begin (0 while it is the last)
  uint64_t compute_ns = 0;
  uint64_t comm_ns = 0;
  uint64_t memcpy_ns = 0;
  uint64_t overlap_ns = 0;  // communication and computation at once
  uint64_t busy_ns = 0;     // any of the three
  uint64_t cpu_zone_ns = 0;
  uint64_t in_zones_ns = 0;        // some zone open on some thread
  uint64_t idle_in_zones_ns = 0;   // of it, while the GPU was idle (in_zones_ns without GPU records)
  uint64_t duration_ns() const { return end_ns > begin_ns ? end_ns - begin_ns : 0; }
  uint64_t idle_ns() const { return duration_ns() > busy_ns ? duration_ns() - busy_ns : 0; }
};

struct RankScan {
  size_t process = 0;                  // index into TraceReader::processes()
  std::vector<std::string> keys;       // collective keys, "nccl AllReduce", "zone all_reduce", …
  std::vector<CollectiveCall> calls;   // the latest kMaxCollectives, by end time
  uint64_t calls_seen = 0;             // before the bound
  bool uses_nccl_kernels = false;      // zone collectives were left out (see collectives.h)
  std::vector<StepStats> steps;        // whole steps, in time order
  StepStats whole;                     // the same figures over everything seen (begin/end: first/last time)
  uint64_t gpu_records = 0;            // kernels, copies and sets swept
  uint64_t late_gpu_records = 0;
  uint64_t late_step_marks = 0;        // a step mark older than the GPU sweep: its GPU split is approximate
  uint64_t late_cover_spans = 0;       // zones and GPU records that began before the settled time in zones
  uint64_t first_ns = 0, last_ns = 0;  // of the events and GPU records seen
  // Per name, over the whole steps (everything when there are none): zones'
  // self time (collective zones left out) and non-NCCL kernels' time.
  std::unordered_map<std::string, uint64_t> zone_self_ns;
  std::unordered_map<std::string, uint64_t> kernel_ns;
  uint64_t zone_ends_unmatched = 0;
  // The latest kMaxCollectives group calls, in the order the rank entered
  // them (by begin time).
  std::vector<GroupCall> group_calls;

  static constexpr size_t kMaxCollectives = 16384;
  static constexpr size_t kGpuWindow = 65536;
  static constexpr size_t kZoneWindow = 65536;
  static constexpr size_t kCoverSpans = 65536;
};

// The visitor for one process: feed it that process's segments (TraceReader::
// read_parallel gives each process its own). `collectives_only` skips the
// step and time figures (what clock alignment needs).
class RankScanner final : public SegmentVisitor {
 public:
  RankScanner(size_t process, bool collectives_only);
  ~RankScanner() override;
  void begin_process(const ProcessState& p) override;
  void segment(const SegmentView& view) override;
  void end_process(const ProcessState& p) override;
  // After end_process().
  RankScan& result() { return scan_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  RankScan scan_;
};

// Scans every process of the reader, up to `threads` at once (0: one per
// hardware thread): one RankScan per process, in process order.
std::vector<RankScan> scan_ranks(TraceReader& reader, bool collectives_only, unsigned threads);

}  // namespace ringprof

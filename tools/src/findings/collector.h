// findings/collector.h (internal) — the state of the findings' collector
// (FactsCollector::Impl), shared by its two halves: findings/scan.cpp (zones,
// samples, the visitor) and findings/scan_gpu.cpp (GPU records).
//
// Three kinds of data wait for what comes later, each in a bounded queue:
//   - a piece of self time waits for the GPU records of its time (CUPTI's
//     buffers reach the files after the zones around them), then the part
//     of it during which the GPU did nothing is charged to its zone;
//   - a sample waits until its thread's own events have passed its time (the
//     drainer writes samples in runs of their own, not in time order with the
//     thread's zones), then counts as covered when a zone was open;
//   - GPU work waits for its launching API call, or the call for it; a
//     kernel waits for both the runtime and the driver record of its launch.
// A queue that overflows judges its oldest entry with what is known.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <unordered_map>
#include <vector>

#include "findings/facts.h"
#include "findings/gpu_state.h"
#include "ringprof/tools/thread_filter.h"

namespace ringprof::internal {

inline constexpr size_t kMaxZoneDepth = 1 << 16;   // open zones followed per thread (ZoneTracker's bound)
inline constexpr size_t kClosedSpans = 4096;       // a thread's latest closed outermost zones (sample coverage)
inline constexpr size_t kHostReadSpans = 1024;     // a thread's latest closed host reads (CUDA calls inside them)
inline constexpr size_t kPendingSamples = 4096;    // per thread
inline constexpr size_t kPendingPieces = 1 << 18;  // per process

struct TimeSpan {
  uint64_t b = 0, e = 0;
};

struct FactsCollector::Impl {
  struct Open {
    uint32_t loc;
    uint64_t begin;
  };
  struct PendingSample {
    uint64_t ts;
    uint32_t stack;
  };
  struct Thread {
    uint32_t index = 0;
    std::vector<Open> stack;
    uint64_t overflow = 0;        // begins past kMaxZoneDepth: their ends are swallowed
    uint64_t last_change = 0;     // the innermost zone owns the time since
    uint64_t position = 0;        // its latest event other than a sample
    std::deque<TimeSpan> closed;  // outermost zones, by end
    std::deque<PendingSample> samples;
    uint32_t host_read_depth = 0;  // host-read zones open
    uint64_t host_read_begin = 0;  // of the outermost one
    uint32_t host_read_loc = 0;
    std::deque<TimeSpan> host_reads;  // closed outermost host reads, by end
  };
  struct LocInfo {
    std::string name;
    int tracked = -1;  // index into facts.tracked
    bool host_read = false;
  };
  struct Piece {
    uint32_t loc;
    uint64_t b, e;
  };
  struct Work {
    GpuKind kind;
    uint8_t sub_kind, src_kind, dst_kind;
    uint32_t name;  // into names
    uint64_t start, end, bytes;
  };
  struct Launch {
    uint32_t tid = 0;
    uint64_t ns = 0;                       // the longest call of the id: the runtime call encloses its driver call
    bool graph = false;                    // a CUDA graph's launch: one call for many kernels, none of them its own
    bool runtime = false, driver = false;  // which of its API records have come
    // Its kernels, until both records have come (the longer one is the
    // launch time), or the launch is forgotten or the process ends.
    std::vector<Work> kernels;
  };

  Impl(const RankScan& scan, TimeRange w, const std::string& thread, size_t tracked_zones);

  ProcessFacts facts;
  TimeRange range;
  ThreadFilter filter;
  const ProcessState* process = nullptr;
  std::vector<uint64_t> step_begins;
  uint64_t loop_b = 0, loop_e = 0;  // the steps' span [b, e)
  std::unordered_map<std::string, int> tracked_index;
  std::unordered_map<uint32_t, LocInfo> locs;
  std::unordered_map<uint32_t, Thread> threads;  // by thread index
  std::unordered_map<uint32_t, uint32_t> tid_to_index;
  size_t tid_map_threads = SIZE_MAX;  // process->threads.size() when tid_to_index was built

  BusyUnion busy;
  uint64_t horizon = 0;  // latest GPU work start seen
  std::deque<Piece> pieces;
  std::unordered_map<uint32_t, uint64_t> idle_by_loc;

  std::vector<std::string> names;    // GPU names, interned across segments
  std::vector<int8_t> name_is_sync;  // is_sync_call, once per name (-1: not yet)
  std::unordered_map<std::string, uint32_t> name_ids;
  CorrelationMap<Launch> launches;
  CorrelationMap<std::vector<Work>> waiting;
  CorrelationMap<bool> counted_syncs;

  // Names and threads (findings/scan.cpp).
  LocInfo& loc(uint32_t id);
  Thread& thread(uint32_t index);
  bool selected(const Thread& t) const { return filter.empty() || filter.matches(*process, t.index); }
  // The thread index of a kernel tid (API calls name their thread so), or 0.
  uint32_t index_of_tid(uint32_t tid);
  bool tid_selected(uint32_t tid);
  bool in_loop(uint64_t ts) const { return !facts.steps.empty() && ts >= loop_b && ts < loop_e; }

  // Zones and samples (findings/scan.cpp).
  void zone_begin(Thread& t, const DecodedEvent& e);
  void zone_end(Thread& t, const DecodedEvent& e);
  // An outermost host-read zone closed: one synchronisation, as long as the zone.
  void host_read(Thread& t, uint64_t b, uint64_t e);
  bool inside_host_read(uint32_t tid, uint64_t ts);
  // Self time of zone `loc` on thread t over [b, e): per step for the
  // followed zones, and queued to be set against the GPU's busy time.
  void piece(Thread& t, uint32_t loc_id, uint64_t b, uint64_t e);
  void judge(const Piece& p) { idle_by_loc[p.loc] += (p.e - p.b) - busy.overlap(p.b, p.e); }
  void judge_settled();
  void classify(Thread& t, const PendingSample& s);
  void settle_samples(Thread& t);

  // GPU records (findings/scan_gpu.cpp).
  uint32_t intern(const std::string& s);
  void deliver(const Work& w, const Launch* launch);
  // Work whose launch is known: a kernel waits in the launch for its other
  // API record (launch-bound is judged against the longer of the two).
  void pair(const Work& w, Launch& launch);
  void flush(Launch& launch);
  Launch& launch(uint32_t correlation);
  void deliver_unpaired(std::vector<Work>& works);
  // A synchronising call, or a host wait CUPTI recorded; counted once per
  // correlation id (the runtime call, its driver call and its wait record
  // share one), and not at all inside a host-read zone (the zone counts it).
  void sync(uint32_t correlation, uint32_t tid, bool tid_known, const std::string& name, uint64_t b, uint64_t e);
  void gpu_records(const DecodedSegment& seg);
};

}  // namespace ringprof::internal

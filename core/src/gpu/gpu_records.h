// GpuRecords: where converted GPU activity waits for the next batch. Owned by
// the drainer thread (through GpuCollector); the CUPTI record converter and
// the tests fill it.
//
// Besides holding records it does the bookkeeping that needs to see them all:
// names are interned (ids dense from 1, process-wide), NVTX range starts are
// paired with their ends, devices are kept once, and every kernel, copy and
// set is checked against the API call that launched it: with one clock for
// CPU and GPU, the work can never start before the call did, and a record
// that does is counted as a clock violation.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ringprof/gpu.h"
#include "ringprof/sink.h"

namespace ringprof {

class GpuRecords {
 public:
  // Distinct names past this many share one "<too many names>" id, so NVTX
  // ranges named at run time cannot grow the drainer's memory without bound.
  static constexpr size_t kMaxNames = 1u << 20;
  // Correlation ids remembered for the clock check, per generation (two are kept).
  static constexpr size_t kCorrelationWindow = 1u << 16;
  // NVTX range starts waiting for their ends.
  static constexpr size_t kMaxOpenMarkers = 1u << 16;

  uint32_t intern(std::string_view name);
  // Adds a finished record (names already interned). Runs the clock check.
  void add(const GpuActivity& a);
  void add_device(const GpuDevice& d);

  // NVTX: a range start or end (same id), or a mark. `name` is interned on the start.
  void marker_start(uint32_t id, uint64_t ts, std::string_view name, uint32_t tid);
  void marker_end(uint32_t id, uint64_t ts);
  void marker_color(uint32_t id, uint32_t argb);
  void mark(uint64_t ts, std::string_view name, uint32_t tid);

  void count_unknown() { ++stats_.unknown_records; changed_ = true; }
  // Cumulative counts kept by the GPU source (dropped by CUPTI, refused buffers).
  void set_source_counts(uint64_t dropped, uint64_t refused);

  // The records waiting for a batch, and their time range.
  const std::vector<GpuActivity>& pending() const { return pending_; }
  uint64_t first_ns() const { return first_ns_; }
  uint64_t last_ns() const { return last_ns_; }
  void clear_pending();

  const std::vector<std::string>& names() const { return names_; }
  const std::vector<GpuDevice>& devices() const { return devices_; }
  // The counters, their version bumped when anything changed since the last call.
  const GpuStats& stats();

 private:
  void check_order(const GpuActivity& a);
  struct OpenMarker {
    uint64_t start_ns;
    uint32_t name;
    uint32_t tid;
    uint32_t color;
  };

  std::vector<GpuActivity> pending_;
  uint64_t first_ns_ = ~0ull;
  uint64_t last_ns_ = 0;
  std::vector<std::string> names_;
  std::unordered_map<std::string, uint32_t> name_ids_;
  uint32_t overflow_name_ = 0;
  std::vector<GpuDevice> devices_;
  std::unordered_map<uint32_t, OpenMarker> open_markers_;
  // Correlation id -> earliest API start (api_) or earliest work start (work_)
  // seen without its partner yet; two generations, the older dropped whole
  // when the newer fills, so memory stays bounded whatever the call mix.
  std::unordered_map<uint32_t, uint64_t> api_[2], work_[2];
  GpuStats stats_;
  bool changed_ = false;
};

}  // namespace ringprof

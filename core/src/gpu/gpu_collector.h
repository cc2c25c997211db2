// GpuCollector: the drainer's GPU side, one call per drainer round and one per
// batch, so the drainer itself stays unaware of CUPTI.
//
// In a build with CUPTI support it starts CUPTI tracing with the session
// (cupti/cupti_source.h), turns every completed CUPTI buffer into
// GpuActivity records and adds them to the next batch. In a build without it,
// or when CUPTI cannot start (no driver, no GPU, another profiler attached),
// it holds nothing and every call is a no-op after one warning.
#pragma once

#include <cstdint>
#include <memory>

#include "gpu/gpu_records.h"
#include "ringprof/config.h"
#include "ringprof/ops.h"
#include "ringprof/sink.h"

namespace ringprof {

namespace cupti {
class Converter;
}

class GpuCollector {
 public:
  explicit GpuCollector(const Config& config);
  ~GpuCollector();
  GpuCollector(const GpuCollector&) = delete;
  GpuCollector& operator=(const GpuCollector&) = delete;

  // Converts what the GPU source has completed (after asking it to hand over
  // partly filled buffers when `force`). True when the waiting records should
  // go out now: too many, or waiting longer than the flush interval.
  bool poll(bool force, uint64_t now_ns);
  bool has_pending() const { return !records_.pending().empty(); }
  // Points the batch at the waiting records, names, devices and counters and
  // widens its time range over them.
  void attach(Batch& b);
  // The sink took (or lost) the batch: the records it held are gone.
  void written();

  // The detail level changed (drainer thread): the GPU source enables or
  // disables the detailed activity kinds. Nothing when it is not active.
  void set_level(Level m);

  bool active() const { return active_; }
  GpuRecords& records() { return records_; }

 private:
  GpuRecords records_;
  bool active_ = false;
  uint64_t flush_ns_;
  size_t max_pending_;
  uint64_t pending_since_ = 0;
  std::unique_ptr<cupti::Converter> converter_;
};

}  // namespace ringprof

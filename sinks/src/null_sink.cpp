// null_sink.cpp — encodes every batch and keeps nothing.
//
// Benchmarks use it to measure the profiler's full drain cost (including
// FlatBuffers and zstd) without disk noise; the frame buffer is reused, so
// after warm-up the only work is the encoding itself.
#include <atomic>
#include <vector>

#include "ringprof/segment_codec.h"
#include "ringprof/sinks.h"

namespace ringprof {
namespace {

class NullSink final : public Sink {
 public:
  explicit NullSink(int zstd_level) : encoder_(zstd_level) {}

  void begin_session(const SessionInfo& session) override { encoder_.start_file(session); }

  bool write(const Batch& batch) override {
    frame_.clear();
    const size_t n = encoder_.encode(batch, frame_);
    if (n == 0) {
      batches_failed_.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    batches_written_.fetch_add(1, std::memory_order_relaxed);
    bytes_written_.fetch_add(n, std::memory_order_relaxed);
    return true;
  }

  void end_session() override {}

  SinkStats stats() const override {
    SinkStats s;
    s.batches_written = batches_written_.load(std::memory_order_relaxed);
    s.batches_failed = batches_failed_.load(std::memory_order_relaxed);
    s.bytes_written = bytes_written_.load(std::memory_order_relaxed);
    return s;
  }

 private:
  SegmentEncoder encoder_;
  std::vector<uint8_t> frame_;
  // stats() may be read from another thread than the drainer's.
  std::atomic<uint64_t> batches_written_{0}, batches_failed_{0}, bytes_written_{0};
};

}  // namespace

std::shared_ptr<Sink> make_null_sink(int zstd_level) { return std::make_shared<NullSink>(zstd_level); }

}  // namespace ringprof

// memory_sink.cpp — keeps every frame in one in-memory stream.
//
// Tests use it to check what the drainer produced without touching a disk.
// The stream reads like a single file (one file start, then segments), so the
// same reader code applies. fail_next_writes() imitates a full disk: the
// encoder's state is rolled back exactly as the rolling-file sink does, so a
// test can prove that lost batches are counted and later segments still
// restate what they need.
#include <mutex>
#include <vector>

#include "ringprof/segment_codec.h"
#include "ringprof/sinks.h"

namespace ringprof {

struct MemorySink::Impl {
  explicit Impl(int level) : encoder(level) {}
  SegmentEncoder encoder;  // drainer thread only
  std::vector<uint8_t> frame;

  mutable std::mutex mu;  // guards everything below: tests read from other threads
  std::vector<uint8_t> bytes;
  uint32_t fail_next = 0;
  SinkStats stats;
};

MemorySink::MemorySink(int zstd_level) : impl_(std::make_unique<Impl>(zstd_level)) {}
MemorySink::~MemorySink() = default;

void MemorySink::begin_session(const SessionInfo& session) { impl_->encoder.start_file(session); }

bool MemorySink::write(const Batch& batch) {
  Impl& m = *impl_;
  m.frame.clear();
  // Encode outside the lock; only the append is shared with readers.
  const size_t n = m.encoder.encode(batch, m.frame);
  std::lock_guard<std::mutex> lock(m.mu);
  if (n == 0) {
    ++m.stats.batches_failed;
    return false;
  }
  if (m.fail_next > 0) {
    --m.fail_next;
    m.encoder.rollback_last();
    ++m.stats.batches_failed;
    return false;
  }
  m.bytes.insert(m.bytes.end(), m.frame.begin(), m.frame.end());
  ++m.stats.batches_written;
  m.stats.bytes_written += n;
  return true;
}

void MemorySink::end_session() {}

SinkStats MemorySink::stats() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->stats;
}

std::vector<uint8_t> MemorySink::bytes() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->bytes;
}

void MemorySink::fail_next_writes(uint32_t n) {
  std::lock_guard<std::mutex> lock(impl_->mu);
  impl_->fail_next = n;
}

}  // namespace ringprof

// The writer thread (draining/batch_writer.h): the sink's write runs there,
// so the drainer goes on reading rings while a write is stuck; a writer that
// stays stuck fills its queue and the rings then drop, counted exactly; the
// trigger polls and flush() ride on the same thread.
#include <gtest/gtest.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#include "draining/batch_writer.h"
#include "ringprof/ringprof.h"
#include "support/capture_sink.h"

using namespace ringprof;
using ringprof::test::CaptureSink;

namespace {

// A capturing sink whose write() waits, while `blocked`, until released; it
// notes which thread writes.
class GateSink : public CaptureSink {
 public:
  bool write(const Batch& b) override {
    {
      std::unique_lock<std::mutex> lock(gate_mutex_);
      writer_thread = std::this_thread::get_id();
      ++writes_started;
      changed_.notify_all();
      changed_.wait(lock, [&] { return !blocked; });
    }
    return CaptureSink::write(b);
  }
  void release() {
    std::lock_guard<std::mutex> lock(gate_mutex_);
    blocked = false;
    changed_.notify_all();
  }
  bool wait_for_writes(int n, std::chrono::seconds limit) {
    std::unique_lock<std::mutex> lock(gate_mutex_);
    return changed_.wait_for(lock, limit, [&] { return writes_started >= n; });
  }
  int started() {
    std::lock_guard<std::mutex> lock(gate_mutex_);
    return writes_started;
  }
  std::thread::id writer() {
    std::lock_guard<std::mutex> lock(gate_mutex_);
    return writer_thread;
  }

  bool blocked = true;  // set before start(), then only through release()

 private:
  int writes_started = 0;
  std::thread::id writer_thread;
  std::mutex gate_mutex_;
  std::condition_variable changed_;
};

Config small_config() {
  Config c;
  c.drain_interval_ms = 2;
  c.flush_interval_ms = 1;
  c.sample_hz = 0;
  c.ring_bytes = 4096 * sizeof(Event);  // 4096 slots
  c.ring_max_bytes = 0;                 // no growth: these tests count one ring's drops
  c.batch_events = 1024;
  return c;
}

// Waits until the drainer has read everything in this thread's ring.
bool ring_read_within(std::chrono::seconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  const Ring* r = internal::t_slot.ring;
  while (r->readable() != 0) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::yield();
  }
  return true;
}

void record_zones(int n) {
  for (int i = 0; i < n; ++i) {
    RINGPROF_ZONE("w");
  }
}

}  // namespace

TEST(BatchWriter, RingsAreReadWhileTheSinkIsStuckInAWrite) {
  auto sink = std::make_shared<GateSink>();
  Config c = small_config();
  c.ring_bytes = 16384 * sizeof(Event);
  c.ring_max_bytes = 0;
  c.batch_events = 4096;
  c.flush_interval_ms = 60000;  // batches close when full, not by age
  ASSERT_TRUE(start(c, sink));
  record_zones(2100);  // one full batch, whose write then hangs
  ASSERT_TRUE(sink->wait_for_writes(1, std::chrono::seconds(30)));
  // Two more rounds, each most of a ring, while that write still hangs
  // (all of it fits in the writer's queue): the drainer reads each.
  for (int round = 0; round < 2; ++round) {
    record_zones(3000);
    EXPECT_TRUE(ring_read_within(std::chrono::seconds(30))) << "round " << round;
  }
  EXPECT_EQ(internal::t_slot.ring->dropped(), 0u);
  EXPECT_EQ(sink->started(), 1);  // still stuck in the first
  EXPECT_NE(sink->writer(), std::this_thread::get_id());
  sink->release();
  stop();
  const RecorderStats s = recorder_stats();
  EXPECT_EQ(s.events_written, 2u * (2100 + 2 * 3000));
  EXPECT_EQ(s.dropped_ring, 0u);
}

TEST(BatchWriter, AWriterThatStaysStuckMakesTheRingsDropAndEveryEventIsCounted) {
  auto sink = std::make_shared<GateSink>();
  ASSERT_TRUE(start(small_config(), sink));
  constexpr int kZones = 100000;  // far more than the writer's queue and the ring hold
  record_zones(kZones);
  EXPECT_GT(internal::t_slot.ring->dropped(), 0u);
  const uint32_t me = internal::t_slot.ring->thread_index;
  sink->release();
  stop();
  const RecorderStats s = recorder_stats();
  EXPECT_EQ(s.events_written + s.dropped_ring + s.dropped_io, 2u * kZones);
  EXPECT_GT(s.dropped_ring, 0u);
  EXPECT_EQ(s.dropped_io, 0u);
  // What was written reached the sink, and it says what was dropped.
  EXPECT_EQ(sink->count_for(me), s.events_written);
  uint64_t reported = 0;
  for (const auto& [index, t] : sink->threads) reported += t.dropped_ring;
  EXPECT_EQ(reported, s.dropped_ring);
}

TEST(BatchWriter, FlushReturnsOnceTheSinkHasEverything) {
  auto sink = std::make_shared<GateSink>();
  sink->blocked = false;
  ASSERT_TRUE(start(small_config(), sink));
  record_zones(1000);
  flush();
  EXPECT_EQ(recorder_stats().events_written, 2000u);
  {
    std::lock_guard<std::mutex> lock(sink->mutex_);
    EXPECT_EQ(sink->events.size(), 2000u);
  }
  stop();
}

namespace {
// A disk that is slow but alive: each write takes `write_ms`.
class SlowSink : public CaptureSink {
 public:
  explicit SlowSink(int write_ms) : write_ms_(write_ms) {}
  bool write(const Batch& b) override {
    std::this_thread::sleep_for(std::chrono::milliseconds(write_ms_));  // the disk's time, not a wait
    return CaptureSink::write(b);
  }

 private:
  int write_ms_;
};
}  // namespace

// stop() waits as long as the writer makes progress, past Config::stall_ms in
// all: 20 batches of 40 ms each (800 ms) against a stall limit of 200 ms.
TEST(BatchWriter, StopWaitsForASlowWriterThatKeepsWriting) {
  auto sink = std::make_shared<SlowSink>(40);
  Config c = small_config();
  c.ring_bytes = 65536 * sizeof(Event);  // all of it fits: the drainer waits for the writer
  c.stall_ms = 200;
  ASSERT_TRUE(start(c, sink));
  constexpr int kZones = 10 * 1024;  // 20 full batches of 1024 events
  record_zones(kZones);
  stop();
  const RecorderStats s = recorder_stats();
  EXPECT_EQ(s.events_written, 2u * kZones);
  EXPECT_EQ(s.dropped_ring, 0u);
  EXPECT_GE(s.batches, 20u);
  EXPECT_TRUE(sink->ended);
}

// A writer stuck for good (a dead disk): stop() gives up once it has written
// nothing for stall_ms, and the application goes on. The drainer it leaves
// behind finishes when the disk comes back.
TEST(BatchWriter, StopGivesUpOnAWriterThatWritesNothing) {
  auto sink = std::make_shared<GateSink>();
  Config c = small_config();
  c.stall_ms = 300;
  ASSERT_TRUE(start(c, sink));
  record_zones(2000);
  ASSERT_TRUE(sink->wait_for_writes(1, std::chrono::seconds(30)));
  const auto before = std::chrono::steady_clock::now();
  testing::internal::CaptureStderr();
  stop();
  const std::string err = testing::internal::GetCapturedStderr();
  const auto waited = std::chrono::steady_clock::now() - before;
  EXPECT_GE(waited, std::chrono::milliseconds(300));
  EXPECT_LT(waited, std::chrono::seconds(30));
  EXPECT_NE(err.find("wrote nothing for 300 ms while stopping"), std::string::npos) << err;
  EXPECT_FALSE(sink->ended);
  // Recording is off: a new session can start (and stop) at once.
  auto next = std::make_shared<CaptureSink>();
  ASSERT_TRUE(start(small_config(), next));
  stop();
  EXPECT_TRUE(next->ended);
  // The disk comes back: the drainer left behind writes what it held and ends.
  sink->release();
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  for (;;) {
    {
      std::lock_guard<std::mutex> lock(sink->mutex_);
      if (sink->ended) break;
    }
    ASSERT_LT(std::chrono::steady_clock::now(), deadline);
    std::this_thread::yield();
  }
  std::lock_guard<std::mutex> lock(sink->mutex_);
  EXPECT_EQ(sink->events.size(), 4000u);
}

// The columns the drainer writes beside a batch's events (Batch::columns,
// core/src/draining/batch_columns.h) encode to the very segments the events
// do. A real recording (every kind a program can record from C++: zones by
// site, static and run-time names, arguments, counters, flows, steps, async
// spans, memory at the detailed level, heap samples with their stacks, CPU
// samples, several threads) goes to a sink that encodes each batch three
// ways with three encoders that live through the same file: from the
// columns, from the events alone, and from columns spoiled so that the
// encoder must refuse them. All three frames must be equal, byte for byte.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ringprof/heap.h"
#include "ringprof/memory.h"
#include "ringprof/ringprof.h"
#include "ringprof/segment_codec.h"
#include "ringprof/sink.h"

using namespace ringprof;

namespace {

class TwinEncodeSink : public Sink {
 public:
  void begin_session(const SessionInfo& s) override {
    for (SegmentEncoder* e : {&from_columns_, &from_events_, &refused_}) e->start_file(s);
  }
  bool write(const Batch& batch) override {
    std::lock_guard<std::mutex> lock(mutex_);
    ++batches;
    if (batch.columns == nullptr) {
      ++without_columns;
      return true;
    }
    for (const Event& e : batch.events) ++kinds[e.kind];
    std::vector<uint8_t> a, b, c;
    from_columns_.encode(batch, a);
    Batch events_only = batch;
    events_only.columns = nullptr;
    from_events_.encode(events_only, b);
    // Runs' offsets gone: the encoder must see they do not fit and encode
    // the events instead.
    BatchColumns spoiled = *batch.columns;
    spoiled.run_ts = {};
    Batch refused = batch;
    refused.columns = &spoiled;
    refused_.encode(refused, c);
    if (a.empty()) ++empty_frames;
    if (a != b) ++column_mismatches;
    if (c != b) ++fallback_mismatches;
    bytes += a.size();
    return true;
  }
  void end_session() override {}

  std::mutex mutex_;
  uint64_t batches = 0, without_columns = 0, empty_frames = 0;
  uint64_t column_mismatches = 0, fallback_mismatches = 0, bytes = 0;
  std::map<EventKind, uint64_t> kinds;

 private:
  SegmentEncoder from_columns_{3}, from_events_{3}, refused_{3};
};

Config twin_config() {
  Config c;
  c.sample_hz = 997;  // the CPU sampler's Sample events
  c.detailed_sample_hz = 997;
  c.gpu = false;
  c.drain_interval_ms = 2;
  c.batch_events = 4096;  // many batches, so runs and ids cross batch ends
  c.heap_interval = 4096;
  c.ops.crash_flush = false;
  c.ops.signal_flush = false;
  c.ops.trigger_poll_ms = 0;
  return c;
}

// Spins for `ms` of CPU time, so the sampler has something to sample.
double burn(int ms) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(ms);
  double x = 1;
  while (std::chrono::steady_clock::now() < until)
    for (int i = 0; i < 1000; ++i) x = std::sqrt(x + i);
  return x;
}

void workload(int thread, std::atomic<double>& sink) {
  set_thread_name("worker-" + std::to_string(thread));
  const uint16_t pool = memory_pool("twin.arena");
  for (int round = 0; round < 40; ++round) {
    RINGPROF_ZONE("round");
    zone_arg("round", int64_t{round});
    zone_arg("phase", round % 2 ? "odd" : "even");
    {
      Zone named("runtime." + std::to_string(round % 5));
      instant("tick." + std::to_string(thread));
      counter("queue_depth", round * 1.5 + thread);
      counter("load." + std::to_string(thread), std::sqrt(double(round)));
    }
    flow_begin(uint64_t(thread) << 32 | round, "request");
    flow_step(uint64_t(thread) << 32 | round);
    flow_end(uint64_t(thread) << 32 | round);
    const uint64_t id = new_async_id();
    async_begin(id, "fetch");
    async_end(id);
    step();
    for (int i = 0; i < 64; ++i) {
      const auto* p =
          reinterpret_cast<const void*>(0x7f0000000000ull + (uint64_t(thread) << 28) + round * 65536 + i * 96);
      memory_alloc(p, 96, pool);
      heap_alloc(p, 1024, pool);
      heap_free(p, 1024, pool);
      memory_free(p, 96, pool);
    }
    for (int i = 0; i < 200; ++i) {
      RINGPROF_ZONE("inner");
    }
    sink.store(sink.load() + burn(5));
  }
}

TEST(DrainedColumns, EncodeToTheSameSegmentsAsTheEvents) {
  auto sink = std::make_shared<TwinEncodeSink>();
  ASSERT_TRUE(start(twin_config(), sink));
  set_mode(Level::Detailed);  // memory events are recorded at the detailed level only
  std::atomic<double> result{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) threads.emplace_back(workload, t, std::ref(result));
  for (std::thread& t : threads) t.join();
  set_mode(Level::AlwaysOn);
  stop();

  std::lock_guard<std::mutex> lock(sink->mutex_);
  EXPECT_GT(sink->batches, 10u);
  EXPECT_EQ(sink->without_columns, 0u);
  EXPECT_EQ(sink->empty_frames, 0u);
  EXPECT_EQ(sink->column_mismatches, 0u);
  EXPECT_EQ(sink->fallback_mismatches, 0u);
  // Every kind the workload records reached the comparison.
  for (EventKind k : {EventKind::ZoneBegin, EventKind::ZoneEnd, EventKind::Instant, EventKind::Counter,
                      EventKind::FlowBegin, EventKind::FlowStep, EventKind::FlowEnd, EventKind::Step, EventKind::Mark,
                      EventKind::Alloc, EventKind::Free, EventKind::ZoneArg, EventKind::AsyncBegin, EventKind::AsyncEnd,
                      EventKind::HeapAlloc, EventKind::HeapStack, EventKind::HeapFree, EventKind::Sample})
    EXPECT_GT(sink->kinds[k], 0u) << event_kind_name(k);
  // Exact counts where the workload fixes them: 3 threads x 40 rounds.
  EXPECT_EQ(sink->kinds[EventKind::Alloc], 3u * 40 * 64);
  EXPECT_EQ(sink->kinds[EventKind::Free], 3u * 40 * 64);
  EXPECT_EQ(sink->kinds[EventKind::ZoneArg], 3u * 40 * 2);
  EXPECT_EQ(sink->kinds[EventKind::Counter], 3u * 40 * 2);
  EXPECT_EQ(sink->kinds[EventKind::HeapAlloc], sink->kinds[EventKind::HeapStack]);
}

}  // namespace

// The cost of the recording path, against the price of reading the clock.
//
// BM_TwoTscReads is the floor: a zone must read the clock twice (begin, end).
// BM_Zone is a whole RINGPROF_ZONE (begin + end events) with recording on
// and a drainer emptying the rings into a sink that stores nothing, so only
// the application thread's cost is measured. Its ratio to BM_TwoTscReads is
// the figure the README reports; the 1/2/4-thread runs show whether the
// per-thread cost stays flat (rings are per thread and share no cache line).
#include <benchmark/benchmark.h>
#include <x86intrin.h>

#include <atomic>

#include "bench_main.h"
#include "ringprof/ringprof.h"

namespace {

// Counts what reaches it; stores nothing.
class DiscardSink : public ringprof::Sink {
 public:
  void begin_session(const ringprof::SessionInfo&) override {}
  bool write(const ringprof::Batch& b) override {
    events += b.events.size();
    return true;
  }
  void end_session() override {}
  std::atomic<uint64_t> events{0};
};

struct Recording {
  Recording() {
    ringprof::Config c;
    c.ring_bytes = 64u << 20;  // 2M events: drained long before full
    c.drain_interval_ms = 1;
    ringprof::start(c, std::make_shared<DiscardSink>());
  }
  ~Recording() { ringprof::stop(); }
};

void BM_TwoTscReads(benchmark::State& state) {
  for (auto _ : state) {
    benchmark::DoNotOptimize(__rdtsc());
    benchmark::DoNotOptimize(__rdtsc());
  }
}
BENCHMARK(BM_TwoTscReads);

void BM_ClockGettimePair(benchmark::State& state) {
  for (auto _ : state) {
    benchmark::DoNotOptimize(ringprof::detail::monotonic_ns());
    benchmark::DoNotOptimize(ringprof::detail::monotonic_ns());
  }
}
BENCHMARK(BM_ClockGettimePair);

void BM_ZoneRecordingOff(benchmark::State& state) {
  for (auto _ : state) {
    RINGPROF_ZONE("off");
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_ZoneRecordingOff);

Recording* g_recording = nullptr;

void BM_Zone(benchmark::State& state) {
  if (state.thread_index() == 0 && !g_recording) g_recording = new Recording();
  for (auto _ : state) {
    RINGPROF_ZONE("bench");
    benchmark::ClobberMemory();
  }
  state.counters["dropped"] = static_cast<double>(ringprof::detail::t_slot.ring ? ringprof::detail::t_slot.ring->dropped() : 0);
}
// CPU time per thread: each thread's own cost, whatever the core count.
BENCHMARK(BM_Zone)->Threads(1)->Threads(2)->Threads(4);

void BM_CounterEvent(benchmark::State& state) {
  if (!g_recording) g_recording = new Recording();
  double v = 0;
  for (auto _ : state) {
    RINGPROF_COUNTER("bench_counter", v);
    v += 1;
  }
}
BENCHMARK(BM_CounterEvent);

void BM_ZoneRuntimeName(benchmark::State& state) {
  if (!g_recording) g_recording = new Recording();
  for (auto _ : state) {
    ringprof::Zone z(std::string_view("runtime/name/of/24bytes"));
    benchmark::ClobberMemory();
  }
}
BENCHMARK(BM_ZoneRuntimeName);

const bool registered = [] {
  using ringprof::bench::register_ratio;
  register_ratio({"zone / two TSC reads (1 thread)", "BM_Zone/threads:1", "BM_TwoTscReads", 1.3});
  register_ratio({"zone per thread, 2 threads / 1 thread", "BM_Zone/threads:2", "BM_Zone/threads:1", 0});
  register_ratio({"zone per thread, 4 threads / 1 thread", "BM_Zone/threads:4", "BM_Zone/threads:1", 0});
  register_ratio({"zone with recording off / two TSC reads", "BM_ZoneRecordingOff", "BM_TwoTscReads", 0});
  register_ratio({"counter event / two TSC reads", "BM_CounterEvent", "BM_TwoTscReads", 0});
  return true;
}();

}  // namespace

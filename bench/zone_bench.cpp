// The cost of the recording path, against the price of reading the clock.
//
// BM_TwoTscReads is the floor: a zone must read the clock twice (begin, end).
// BM_Zone is a whole RINGPROF_ZONE (begin + end events) with recording on.
// Every 4096 iterations the timer pauses while flush() has the drainer empty
// the ring into a sink that stores nothing: the ring (512 KiB, the default)
// stays warm in cache as in a steady state, no event is ever dropped (a drop
// would skip the clock read and flatter the figure), and only the application
// thread's own cost is timed (the drainer's wake fill is set to 100%, which
// the ring never reaches between flushes). Its ratio to BM_TwoTscReads is
// the figure docs/performance.md reports; the 1/2/4-thread runs show whether the
// per-thread cost stays flat (rings are per thread and share no cache line).
// BM_ZoneDrainerAwake times the same zone with the drainer woken by fill and
// working beside the thread, as in production.
#include <benchmark/benchmark.h>
#include <x86intrin.h>

#include <atomic>

#include "bench_main.h"
#include "discard_sink.h"
#include "ringprof/ringprof.h"

namespace {

using ringprof::bench::DiscardSink;

constexpr int kFlushEvery = 4096;  // iterations between flushes: <= 3 events each fit the ring

// A recording whose drainer wakes when a ring is `drain_percent` full. At
// 100 the ring (16384 slots) never gets there between flushes (8192 slots at
// most), so the drainer only runs while the timer is paused.
struct Recording {
  explicit Recording(uint32_t percent) : drain_percent(percent) {
    ringprof::Config c;
    c.drain_interval_ms = 1000;  // the benchmark flushes; the drainer stays out of the way
    c.ring_drain_percent = percent;
    ringprof::start(c, std::make_shared<DiscardSink>());
  }
  ~Recording() { ringprof::stop(); }
  const uint32_t drain_percent;
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
    benchmark::DoNotOptimize(ringprof::internal::monotonic_ns());
    benchmark::DoNotOptimize(ringprof::internal::monotonic_ns());
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

// Starts (or restarts) the recording with the drainer's wake fill at
// `drain_percent`. Called by thread 0 before the threads start recording.
void use_recording(uint32_t drain_percent) {
  if (g_recording && g_recording->drain_percent == drain_percent) return;
  delete g_recording;
  g_recording = new Recording(drain_percent);
}

// Pauses the timer and has the drainer empty this thread's ring.
inline void drain_now(benchmark::State& state, int& n) {
  if (++n < kFlushEvery) return;
  n = 0;
  state.PauseTiming();
  ringprof::flush();
  state.ResumeTiming();
}

void check_no_drops(benchmark::State& state) {
  const ringprof::Ring* r = ringprof::internal::t_slot.ring;
  if (!r) state.SkipWithError("recording was off");
  else if (r->dropped() != 0) state.SkipWithError("events were dropped: the figure would be wrong");
}

void BM_Zone(benchmark::State& state) {
  if (state.thread_index() == 0) use_recording(100);
  int n = 0;
  ringprof::flush();  // start each run with an empty ring (not timed)
  for (auto _ : state) {
    {
      RINGPROF_ZONE("bench");
      benchmark::ClobberMemory();
    }
    drain_now(state, n);
  }
  check_no_drops(state);
}
// CPU time per thread: each thread's own cost, whatever the core count.
BENCHMARK(BM_Zone)->Threads(1)->Threads(2)->Threads(4);

// The zone as production runs it: the drainer is woken when the ring is a
// quarter full (the default) and drains while the thread goes on recording,
// so the thread also pays for sharing the ring's cache lines (and, where the
// two cores are hyperthreads of one, the core) with it. Flushed as BM_Zone is,
// so nothing is dropped.
void BM_ZoneDrainerAwake(benchmark::State& state) {
  use_recording(25);
  int n = 0;
  ringprof::flush();
  for (auto _ : state) {
    {
      RINGPROF_ZONE("bench");
      benchmark::ClobberMemory();
    }
    drain_now(state, n);
  }
  check_no_drops(state);
}
BENCHMARK(BM_ZoneDrainerAwake);

void BM_CounterEvent(benchmark::State& state) {
  use_recording(100);
  double v = 0;
  int n = 0;
  ringprof::flush();  // start each run with an empty ring (not timed)
  for (auto _ : state) {
    RINGPROF_COUNTER("bench_counter", v);
    v += 1;
    drain_now(state, n);
  }
  check_no_drops(state);
}
BENCHMARK(BM_CounterEvent);

void BM_ZoneRuntimeName(benchmark::State& state) {
  use_recording(100);
  int n = 0;
  ringprof::flush();  // start each run with an empty ring (not timed)
  for (auto _ : state) {
    {
      ringprof::Zone z(std::string_view("runtime/name/of/24bytes"));
      benchmark::ClobberMemory();
    }
    drain_now(state, n);
  }
  check_no_drops(state);
}
BENCHMARK(BM_ZoneRuntimeName);

const bool registered = [] {
  using ringprof::bench::register_ratio;
  register_ratio({"zone / two TSC reads (1 thread)", "BM_Zone/threads:1", "BM_TwoTscReads", 1.3});
  register_ratio({"zone per thread, 2 threads / 1 thread", "BM_Zone/threads:2", "BM_Zone/threads:1", 0});
  register_ratio({"zone per thread, 4 threads / 1 thread", "BM_Zone/threads:4", "BM_Zone/threads:1", 0});
  register_ratio({"zone, drainer woken by fill / two TSC reads", "BM_ZoneDrainerAwake", "BM_TwoTscReads", 0});
  register_ratio({"zone with recording off / two TSC reads", "BM_ZoneRecordingOff", "BM_TwoTscReads", 0});
  register_ratio({"counter event / two TSC reads", "BM_CounterEvent", "BM_TwoTscReads", 0});
  return true;
}();

}  // namespace

// The cost libringprof_malloc.so adds to a malloc + free pair, against
// glibc's own (__libc_malloc/__libc_free, called directly) in the same run.
//
// This binary links libringprof_malloc.so, so its malloc and free are the
// interposer's (as under LD_PRELOAD). BM_MallocFree/detailed:0 runs at the
// always_on level: the interposer costs one relaxed load and a branch per
// call. BM_MallocFree/detailed:1 runs at the detailed level: every call is
// also an Alloc or Free event (clock read, malloc_usable_size, one slot).
// As in zone_bench, the timer pauses every 4096 iterations while flush()
// empties the ring into a sink that stores nothing, so no event is dropped.
#include <benchmark/benchmark.h>

#include <atomic>
#include <cstdlib>

#include "bench_main.h"
#include "discard_sink.h"
#include "ringprof/ringprof.h"

extern "C" {
void* __libc_malloc(size_t);
void __libc_free(void*);
}

namespace {

using ringprof::bench::DiscardSink;

constexpr int kFlushEvery = 4096;  // 2 events per iteration fit the default ring
constexpr size_t kSize = 64;

void ensure_recording() {
  static const bool started = [] {
    ringprof::Config c;
    c.drain_interval_ms = 1000;  // the benchmark flushes; the drainer stays out of the way
    c.sample_hz = 0;
    c.detailed_sample_hz = 0;
    c.gpu = false;
    return ringprof::start(c, std::make_shared<DiscardSink>());
  }();
  (void)started;
}

void BM_LibcMallocFree(benchmark::State& state) {
  ensure_recording();
  for (auto _ : state) {
    void* p = __libc_malloc(kSize);
    benchmark::DoNotOptimize(p);
    __libc_free(p);
  }
}
BENCHMARK(BM_LibcMallocFree);

void BM_MallocFree(benchmark::State& state) {
  ensure_recording();
  const bool detailed = state.range(0) != 0;
  ringprof::set_mode(detailed ? ringprof::Level::Detailed : ringprof::Level::AlwaysOn);
  ringprof::flush();
  int n = 0;
  for (auto _ : state) {
    void* p = std::malloc(kSize);
    benchmark::DoNotOptimize(p);
    std::free(p);
    if (++n == kFlushEvery) {
      n = 0;
      state.PauseTiming();
      ringprof::flush();
      state.ResumeTiming();
    }
  }
  const ringprof::Ring* r = ringprof::internal::t_slot.ring;
  if (detailed && (!r || r->dropped() != 0)) state.SkipWithError("events were dropped or not recorded");
  ringprof::set_mode(ringprof::Level::AlwaysOn);
}
BENCHMARK(BM_MallocFree)->ArgName("detailed")->Arg(0)->Arg(1);

const bool registered = [] {
  using ringprof::bench::register_ratio;
  register_ratio({"malloc+free through libringprof_malloc, always_on / glibc", "BM_MallocFree/detailed:0",
                  "BM_LibcMallocFree", 0});
  register_ratio({"malloc+free through libringprof_malloc, detailed / glibc", "BM_MallocFree/detailed:1",
                  "BM_LibcMallocFree", 0});
  return true;
}();

}  // namespace

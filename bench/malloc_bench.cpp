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

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <memory>
#include <string>

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

// The heap sampler's cost on an allocation-heavy loop, counted whole: a
// fresh process (this program again) runs the loop while recording at
// always_on into a sink that stores nothing, and its CPU time (user + system,
// every thread: the loop's and the drainer interning and writing the
// samples) is the iteration's time. heap:1 samples at the default interval,
// heap:0 not at all. A process each time, so glibc's heap starts the same in
// both; run with --benchmark_repetitions and random interleaving (gate.sh).
// The loop keeps 1024 blocks live and replaces the oldest each time (so
// sampled blocks are freed and matched), 16 million times, in mixed sizes
// from 16 B to 4 KiB.
constexpr const char* kChildVariable = "RINGPROF_BENCH_ALLOC_CHILD";
constexpr int kChildOps = 16 << 20;

[[noreturn]] void alloc_child(uint64_t interval) {
  ringprof::Config c;
  c.sample_hz = 0;
  c.detailed_sample_hz = 0;
  c.gpu = false;
  c.heap_interval = interval;
  if (!ringprof::start(c, std::make_shared<DiscardSink>())) std::_Exit(2);
  constexpr size_t kLive = 1024;
  static void* live[kLive];
  uint64_t rng = 0x9E3779B97F4A7C15ull;
  size_t next = 0;
  for (int i = 0; i < kChildOps; ++i) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    const size_t base = size_t{16} << (rng % 8);  // 16 B .. 2 KiB, times 1 to 2
    const size_t n = base + (rng >> 8) % base;
    std::free(live[next]);
    live[next] = std::malloc(n);
    benchmark::DoNotOptimize(live[next]);
    next = (next + 1) % kLive;
  }
  ringprof::stop();
  std::_Exit(0);
}

void BM_AllocMixProcess(benchmark::State& state) {
  const std::string interval = state.range(0) ? std::to_string(ringprof::Config{}.heap_interval) : "0";
  for (auto _ : state) {
    const pid_t pid = fork();
    if (pid == 0) {
      setenv(kChildVariable, interval.c_str(), 1);
      execl("/proc/self/exe", "ringprof_bench_malloc", static_cast<char*>(nullptr));
      std::_Exit(3);
    }
    int status = 0;
    rusage u{};
    if (pid < 0 || wait4(pid, &status, 0, &u) != pid || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      state.SkipWithError("the child process failed");
      return;
    }
    auto seconds = [](const timeval& t) {
      return static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_usec);
    };
    state.SetIterationTime(seconds(u.ru_utime) + seconds(u.ru_stime));
  }
  state.SetItemsProcessed(state.iterations() * kChildOps);
}
BENCHMARK(BM_AllocMixProcess)->ArgName("heap")->Arg(0)->Arg(1)->Iterations(1)->UseManualTime();

const bool registered = [] {
  if (const char* child = std::getenv(kChildVariable)) alloc_child(std::strtoull(child, nullptr, 10));
  using ringprof::bench::register_ratio;
  register_ratio({"malloc+free through libringprof_malloc, always_on / glibc", "BM_MallocFree/detailed:0",
                  "BM_LibcMallocFree", 0});
  register_ratio({"malloc+free through libringprof_malloc, detailed / glibc", "BM_MallocFree/detailed:1",
                  "BM_LibcMallocFree", 0});
  register_ratio({"allocation loop, whole process: heap sampling at the default interval / off",
                  "BM_AllocMixProcess/heap:1/iterations:1/manual_time",
                  "BM_AllocMixProcess/heap:0/iterations:1/manual_time", 1.02});
  return true;
}();

}  // namespace

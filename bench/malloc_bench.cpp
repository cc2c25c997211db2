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
#include <vector>

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
// always_on into a sink that counts the heap samples and stores nothing, and
// its CPU time (user + system, every thread: the loop's and the drainer
// interning the samples) is the run's time. A process each time, so glibc's
// heap starts the same. The loop keeps 1024 blocks live and replaces the
// oldest each time (so sampled blocks are freed and matched), 16 million
// times, in mixed sizes from 16 B to 4 KiB: about 12 GB.
//
// One benchmark runs rounds of three processes in a rotating order: off
// (interval 0), the default interval, and a 16 times shorter one. On this
// 2-core machine one run's time varies by 10% or more, so the default's
// ratio to off (about 1% apart) cannot be told from noise run by run; the
// shorter interval takes 16 times the samples, whose cost then stands out of
// the noise, and gives the cost of one sample (paired within its round).
// That cost times the default's own sample count, over the time off, is the
// default's slowdown; the direct paired ratio is printed beside it.
constexpr const char* kChildVariable = "RINGPROF_BENCH_ALLOC_CHILD";
constexpr const char* kChildOutVariable = "RINGPROF_BENCH_ALLOC_OUT";  // fd the child writes its sample count to
constexpr int kChildOps = 16 << 20;
constexpr int kAllocRounds = 12;

class HeapCountingSink final : public ringprof::Sink {
 public:
  void begin_session(const ringprof::SessionInfo&) override {}
  bool write(const ringprof::Batch& b) override {
    for (const ringprof::Event& e : b.events)
      if (e.kind == ringprof::EventKind::HeapAlloc) ++samples;
    return true;
  }
  void end_session() override {}
  uint64_t samples = 0;  // the writer thread's only; read after stop()
};

[[noreturn]] void alloc_child(uint64_t interval) {
  ringprof::Config c;
  c.sample_hz = 0;
  c.detailed_sample_hz = 0;
  c.gpu = false;
  c.heap_interval = interval;
  auto sink = std::make_shared<HeapCountingSink>();
  if (!ringprof::start(c, sink)) std::_Exit(2);
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
  if (const char* fd = std::getenv(kChildOutVariable)) {
    const uint64_t n = sink->samples;
    if (write(std::atoi(fd), &n, sizeof n) != static_cast<ssize_t>(sizeof n)) std::_Exit(4);
  }
  std::_Exit(0);
}

struct ChildRun {
  double cpu_s = 0;
  uint64_t samples = 0;
};

// One child process with the given interval; false when it failed.
bool run_alloc_child(uint64_t interval, ChildRun* out) {
  int fds[2];
  if (pipe(fds) != 0) return false;
  const pid_t pid = fork();
  if (pid == 0) {
    close(fds[0]);
    setenv(kChildVariable, std::to_string(interval).c_str(), 1);
    setenv(kChildOutVariable, std::to_string(fds[1]).c_str(), 1);
    execl("/proc/self/exe", "ringprof_bench_malloc", static_cast<char*>(nullptr));
    std::_Exit(3);
  }
  close(fds[1]);
  int status = 0;
  rusage u{};
  const bool ok = pid > 0 && wait4(pid, &status, 0, &u) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0 &&
                  read(fds[0], &out->samples, sizeof out->samples) == static_cast<ssize_t>(sizeof out->samples);
  close(fds[0]);
  auto seconds = [](const timeval& t) { return static_cast<double>(t.tv_sec) + 1e-6 * static_cast<double>(t.tv_usec); };
  out->cpu_s = seconds(u.ru_utime) + seconds(u.ru_stime);
  return ok;
}

void BM_HeapSamplingCost(benchmark::State& state) {
  const uint64_t interval = ringprof::Config{}.heap_interval;
  const uint64_t intervals[3] = {0, interval, interval / 16};
  std::vector<double> ratio_default, per_sample_ns, slowdown_estimate, samples_default;
  for (auto _ : state) {
    for (int round = 0; round < kAllocRounds; ++round) {
      ChildRun runs[3];
      for (int k = 0; k < 3; ++k) {
        const int which = (round + k) % 3;
        if (!run_alloc_child(intervals[which], &runs[which])) {
          state.SkipWithError("the child process failed");
          return;
        }
      }
      const ChildRun &off = runs[0], &def = runs[1], &dense = runs[2];
      ratio_default.push_back(def.cpu_s / off.cpu_s);
      const double per_sample = dense.samples ? (dense.cpu_s - off.cpu_s) / static_cast<double>(dense.samples) : 0;
      per_sample_ns.push_back(per_sample * 1e9);
      slowdown_estimate.push_back(1.0 + per_sample * static_cast<double>(def.samples) / off.cpu_s);
      samples_default.push_back(static_cast<double>(def.samples) / off.cpu_s);
    }
  }
  using ringprof::bench::report_figure;
  report_figure("allocation loop: heap samples per second of the loop at the default interval",
                ringprof::bench::median(samples_default), "/s");
  report_figure("allocation loop: CPU per heap sample (interval / 16 against off, paired)",
                ringprof::bench::median(per_sample_ns), "ns");
  report_figure("allocation loop, whole process: heap sampling at the default interval / off, from the cost per sample",
                ringprof::bench::median(slowdown_estimate), "x");
  report_figure("allocation loop, whole process: heap sampling at the default interval / off, measured (paired)",
                ringprof::bench::median(ratio_default), "x");
}
BENCHMARK(BM_HeapSamplingCost)->Iterations(1)->Unit(benchmark::kSecond);

const bool registered = [] {
  if (const char* child = std::getenv(kChildVariable)) alloc_child(std::strtoull(child, nullptr, 10));
  using ringprof::bench::register_ratio;
  register_ratio({"malloc+free through libringprof_malloc, always_on / glibc", "BM_MallocFree/detailed:0",
                  "BM_LibcMallocFree", 0});
  register_ratio({"malloc+free through libringprof_malloc, detailed / glibc", "BM_MallocFree/detailed:1",
                  "BM_LibcMallocFree", 0});
  return true;
}();

}  // namespace

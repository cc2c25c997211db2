// What CPU sampling costs.
//
// BM_CpuWork/<mode>: a CPU-bound workload (a dependency chain of multiplies,
//   about 2 ms per iteration) on the benchmark thread while recording is on
//   with sampling off, at 99 Hz through perf_event (kernel call chains), at
//   99 Hz through the timer-signal fallback, off again (mode 3: the noise
//   floor of the ratio), and at 99 Hz through perf_signal (mode 4: the
//   default, unwinding in the handler). Run with --benchmark_enable_random_interleaving so the modes
//   see the same machine. The time is the benchmark thread's own CPU time,
//   which includes what the kernel and our signal handler spend on it per
//   sample. Ratios against sampling off, in the same run, are the slowdown.
// BM_DrainerPerSample/0,1: the drainer thread's CPU time per sample (reading
//   the perf rings (0) or the handler's sample rings (1), interning stacks,
//   building Sample events, encoding nothing: the sink discards), from its
//   schedstat, with 4 threads sampled at 1000 Hz, minus the same drainer's
//   time with sampling off.
#include <benchmark/benchmark.h>
#include <dirent.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "bench_main.h"
#include "discard_sink.h"
#include "ringprof/ringprof.h"

namespace {

using ringprof::bench::DiscardSink;

__attribute__((noinline)) uint64_t work(uint64_t n) {
  uint64_t x = n;
  for (uint64_t i = 0; i < n; ++i) {
    x = x * 0x9e3779b97f4a7c15ull + i;
    asm volatile("" : "+r"(x));
  }
  return x;
}

ringprof::Config config(uint32_t hz, ringprof::SamplerChoice choice) {
  ringprof::Config c;
  c.sample_hz = hz;
  c.sampler = choice;
  return c;
}

void BM_CpuWork(benchmark::State& state) {
  const auto mode = state.range(0);
  const ringprof::Config c = mode == 0 || mode == 3 ? config(0, ringprof::SamplerChoice::Auto)
                             : mode == 1            ? config(99, ringprof::SamplerChoice::Perf)
                             : mode == 2            ? config(99, ringprof::SamplerChoice::Timer)
                                                    : config(99, ringprof::SamplerChoice::PerfSignal);
  ringprof::start(c, std::make_shared<DiscardSink>());
  for (auto _ : state) benchmark::DoNotOptimize(work(1 << 20));
  ringprof::stop();
  // Samples per iteration: 2 ms of CPU at 99 Hz is ~0.2 (0 would mean the
  // mechanism is refused here, and the ratio meaningless).
  const ringprof::RecorderStats s = ringprof::recorder_stats();
  state.counters["samples_per_iter"] = static_cast<double>(s.samples_taken) / static_cast<double>(state.iterations());
  // The signal mechanisms' handler time per sample (0 for perf_event, whose
  // unwinding is the kernel's).
  if (s.samples_taken)
    state.counters["handler_ns_per_sample"] =
        static_cast<double>(s.sample_handler_ns) / static_cast<double>(s.samples_taken);
}
BENCHMARK(BM_CpuWork)->Arg(0)->Arg(1)->Arg(2)->Arg(3)->Arg(4)->ArgName("off0_perf1_timer2_signal4");

// CPU time of the drainer thread so far (ns), from schedstat.
uint64_t drainer_cpu_ns() {
  DIR* d = opendir("/proc/self/task");
  if (!d) return 0;
  uint64_t ns = 0;
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] == '.') continue;
    const std::string dir = std::string("/proc/self/task/") + e->d_name;
    std::string comm;
    std::ifstream(dir + "/comm") >> comm;
    if (comm != "ringprof-drain") continue;
    std::ifstream(dir + "/schedstat") >> ns;
  }
  closedir(d);
  return ns;
}

// The drainer's CPU over `seconds` of 4 busy threads, and the samples taken.
std::pair<uint64_t, uint64_t> drainer_run(uint32_t hz, double seconds, int n_threads = 4,
                                          ringprof::SamplerChoice choice = ringprof::SamplerChoice::Perf) {
  ringprof::start(config(hz, choice), std::make_shared<DiscardSink>());
  std::atomic<bool> quit{false};
  std::vector<std::thread> threads;
  for (int t = 0; t < n_threads; ++t)
    threads.emplace_back([&] {
      while (!quit.load(std::memory_order_relaxed)) benchmark::DoNotOptimize(work(1 << 14));
    });
  // Leave out the start (module scan, first thread scan): steady state only.
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  ringprof::flush();
  const uint64_t before = drainer_cpu_ns(), taken_before = ringprof::recorder_stats().samples_taken;
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  ringprof::flush();
  const uint64_t after = drainer_cpu_ns(), taken_after = ringprof::recorder_stats().samples_taken;
  quit = true;
  for (auto& t : threads) t.join();
  ringprof::stop();
  return {after - before, taken_after - taken_before};
}

void BM_DrainerPerSample(benchmark::State& state) {
  const auto choice = state.range(0) ? ringprof::SamplerChoice::PerfSignal : ringprof::SamplerChoice::Perf;
  for (auto _ : state) {
    const auto [off_ns, off_samples] = drainer_run(0, 3.0, 4, choice);
    const auto [on_ns, samples] = drainer_run(1000, 3.0, 4, choice);
    (void)off_samples;
    if (samples == 0) {
      state.SkipWithError("no samples taken: perf_event_open refused?");
      break;
    }
    const double per = (static_cast<double>(on_ns) - static_cast<double>(off_ns)) / static_cast<double>(samples);
    state.counters["ns_per_sample"] = per;
    state.counters["samples"] = static_cast<double>(samples);
    ringprof::bench::report_figure(state.range(0) ? "drainer CPU per sample (perf_signal, 4 threads)"
                                                  : "drainer CPU per sample (perf_event, 4 threads)",
                                   per, "ns");
  }
}
BENCHMARK(BM_DrainerPerSample)->Arg(0)->Arg(1)->ArgName("perf0_signal1")->Iterations(1)->Unit(benchmark::kMillisecond);

// The drainer's extra CPU at the default rate with one busy thread, as a
// share of one core: what the sampler costs the process beyond the threads.
void BM_DrainerAt99Hz(benchmark::State& state) {
  for (auto _ : state) {
    const auto [off_ns, unused] = drainer_run(0, 3.0, 1);
    const auto [on_ns, samples] = drainer_run(99, 3.0, 1);
    (void)unused;
    const double share = (static_cast<double>(on_ns) - static_cast<double>(off_ns)) / 3e9;
    state.counters["core_share"] = share;
    state.counters["samples"] = static_cast<double>(samples);
    ringprof::bench::report_figure("drainer extra CPU at 99 Hz, 1 busy thread", share * 100, "% of a core");
  }
}
BENCHMARK(BM_DrainerAt99Hz)->Iterations(1)->Unit(benchmark::kMillisecond);

const bool registered = [] {
  using ringprof::bench::register_ratio;
  register_ratio({"CPU work, sampling 99 Hz perf_event / off", "BM_CpuWork/off0_perf1_timer2_signal4:1",
                  "BM_CpuWork/off0_perf1_timer2_signal4:0", 1.005});
  register_ratio({"CPU work, sampling 99 Hz timer signal / off", "BM_CpuWork/off0_perf1_timer2_signal4:2",
                  "BM_CpuWork/off0_perf1_timer2_signal4:0", 1.005});
  register_ratio({"CPU work, sampling 99 Hz perf_signal (in-process unwind) / off",
                  "BM_CpuWork/off0_perf1_timer2_signal4:4", "BM_CpuWork/off0_perf1_timer2_signal4:0", 1.005});
  register_ratio({"CPU work, sampling off / off (noise floor)", "BM_CpuWork/off0_perf1_timer2_signal4:3",
                  "BM_CpuWork/off0_perf1_timer2_signal4:0", 0});
  return true;
}();

}  // namespace

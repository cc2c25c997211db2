// PyTorch operator capture (ringprof.torch): what one operator costs under
// each way of recording it. One benchmark runs the four configurations in
// interleaved rounds, so the machine's noise falls on all of them alike, and
// reports each one's median over the rounds:
//   none            at::add of two 1-element tensors, no RecordFunction callback
//   noop callback   a global RecordFunction callback that does nothing: the
//                   floor any capture through RecordFunction pays
//   ringprof        ringprof.torch's callbacks (python/src/torch_capture.h),
//                   recording (null sink, sampler off)
//   torch.profiler  PyTorch's own profiler, CPU activities (Kineto), events
//                   kept in memory as it keeps them
//   sampled 1%      the no-op callback and ringprof's capture at
//                   RecordFunction's sampling probability 0.01 (the
//                   "sampled" ops level)
//   with shapes     ringprof's capture at the detailed level (input shapes
//                   and dtypes as zone arguments) and torch.profiler with
//                   record_shapes=True
//   without async   ringprof's capture at always_on and sampled 1% without
//                   its second callback, the one for async records (c10d's
//                   work), to measure what that callback costs operators
// and the differences that matter: ringprof's and torch.profiler's added
// time per operator over the floor, and the sampled capture's over nothing.
#include <ATen/ATen.h>
#include <benchmark/benchmark.h>
#include <torch/csrc/autograd/profiler_kineto.h>

#include <algorithm>
#include <chrono>
#include <vector>

#include "bench_main.h"
#include "ringprof/ops.h"
#include "ringprof/ringprof.h"
#include "torch_capture.h"
#include "torch_memory.h"

namespace {

using ringprof::bench::median;

constexpr int kOpsPerBlock = 20000;
constexpr int kRounds = 24;

double ns_per_op(const at::Tensor& a, const at::Tensor& b) {
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < kOpsPerBlock; ++i) benchmark::DoNotOptimize(at::add(a, b));
  const auto t1 = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::nano>(t1 - t0).count() / kOpsPerBlock;
}

// The median over rounds of a - b, each round's two figures taken within
// the same ~150 ms: a slow drift of the machine (frequency, a neighbour)
// cancels out, where a difference of two medians would keep it.
double median_difference(const std::vector<double>& a, const std::vector<double>& b) {
  std::vector<double> d(a.size());
  for (size_t i = 0; i < a.size(); ++i) d[i] = a[i] - b[i];
  return median(std::move(d));
}

void BM_TorchOpCosts(benchmark::State& state) {
  using namespace torch::autograd::profiler;
  namespace impl = torch::profiler::impl;
  const at::Tensor a = at::ones({1});
  const at::Tensor b = at::ones({1});
  ringprof::Config config;
  config.sink = "null";
  config.sample_hz = 0;
  ringprof::start(config);
  std::vector<double> none, noop, ringprof_ns, torch_ns, noop_sampled, ringprof_sampled, ringprof_shapes, torch_shapes,
      ringprof_no_async, sampled_no_async;
  const impl::ProfilerConfig cfg(impl::ProfilerState::KINETO);
  const impl::ProfilerConfig cfg_shapes(impl::ProfilerState::KINETO, /*report_input_shapes=*/true);
  const std::set<impl::ActivityType> cpu{impl::ActivityType::CPU};
  // Each round runs the four in a different order, so none always follows
  // the same one (a callback just removed, a profiler just stopped).
  auto run_case = [&](int which) {
    switch (which) {
      case 0: none.push_back(ns_per_op(a, b)); break;
      case 1:
        ringprof::torch_operators::set_noop_callback(true);
        noop.push_back(ns_per_op(a, b));
        ringprof::torch_operators::set_noop_callback(false);
        break;
      case 2:
        ringprof::torch_operators::set_level(ringprof::torch_operators::kAlwaysOn);
        ringprof::torch_operators::enable();
        ringprof_ns.push_back(ns_per_op(a, b));
        ringprof::torch_operators::disable();
        break;
      case 3:
        ringprof::torch_operators::set_noop_callback(true, 0.01);
        noop_sampled.push_back(ns_per_op(a, b));
        ringprof::torch_operators::set_noop_callback(false);
        break;
      case 4:
        ringprof::torch_operators::set_level(ringprof::torch_operators::kSampled);
        ringprof::torch_operators::set_sampling(0.01);
        ringprof::torch_operators::enable();
        ringprof_sampled.push_back(ns_per_op(a, b));
        ringprof::torch_operators::disable();
        break;
      case 5:
        ringprof::set_mode(ringprof::Level::Detailed);
        ringprof::torch_operators::set_level(ringprof::torch_operators::kAlwaysOn);
        ringprof::torch_operators::enable();
        ringprof_shapes.push_back(ns_per_op(a, b));
        ringprof::torch_operators::disable();
        ringprof::set_mode(ringprof::Level::AlwaysOn);
        break;
      case 8:
      case 9:
        ringprof::torch_operators::set_async_capture(false);
        ringprof::torch_operators::set_level(which == 8 ? ringprof::torch_operators::kAlwaysOn
                                                        : ringprof::torch_operators::kSampled);
        ringprof::torch_operators::set_sampling(0.01);
        ringprof::torch_operators::enable();
        (which == 8 ? ringprof_no_async : sampled_no_async).push_back(ns_per_op(a, b));
        ringprof::torch_operators::disable();
        ringprof::torch_operators::set_async_capture(true);
        break;
      case 6:
        prepareProfiler(cfg_shapes, cpu);
        enableProfiler(cfg_shapes, cpu);
        torch_shapes.push_back(ns_per_op(a, b));
        benchmark::DoNotOptimize(disableProfiler());
        break;
      case 7:
        prepareProfiler(cfg, cpu);
        enableProfiler(cfg, cpu);
        torch_ns.push_back(ns_per_op(a, b));
        benchmark::DoNotOptimize(disableProfiler());
    }
  };
  for (auto _ : state) {
    for (int round = 0; round < kRounds; ++round)
      for (int k = 0; k < 10; ++k) run_case((round + k) % 10);
  }
  ringprof::stop();
  const double floor = median(noop);
  using ringprof::bench::report_figure;
  report_figure("torch op: no callback, ns", median(none), "ns");
  report_figure("torch op: no-op RecordFunction callback, ns", floor, "ns");
  report_figure("torch op: ringprof capture, ns", median(ringprof_ns), "ns");
  report_figure("torch op: torch.profiler (CPU), ns", median(torch_ns), "ns");
  report_figure("torch op: ringprof capture over the no-op callback, ns", median_difference(ringprof_ns, noop), "ns");
  report_figure("torch op: torch.profiler over the no-op callback, ns", median_difference(torch_ns, noop), "ns");
  report_figure("torch op: no-op callback sampled 1%, ns", median(noop_sampled), "ns");
  report_figure("torch op: ringprof capture sampled 1%, ns", median(ringprof_sampled), "ns");
  report_figure("torch op: ringprof sampled 1% over no callback, ns", median_difference(ringprof_sampled, none), "ns");
  report_figure("torch op: ringprof detailed with shapes over the no-op callback, ns",
                median_difference(ringprof_shapes, noop), "ns");
  report_figure("torch op: torch.profiler record_shapes over the no-op callback, ns",
                median_difference(torch_shapes, noop), "ns");
  report_figure("torch op: the async callback's cost at always_on, ns",
                median_difference(ringprof_ns, ringprof_no_async), "ns");
  report_figure("torch op: the async callback's cost at sampled 1%, ns",
                median_difference(ringprof_sampled, sampled_no_async), "ns");
}
BENCHMARK(BM_TorchOpCosts)->Iterations(1)->Unit(benchmark::kMillisecond);

// PyTorch's allocations under the memory hook (torch_memory.h, profile_memory):
// at::empty of 1 KiB and its free, per allocation, in interleaved rounds:
//   none         no hook on the thread
//   hook idle    ringprof's hook installed, ringprof at always_on (how a
//                thread stands between windows)
//   hook         ringprof's hook at the detailed level: an Alloc and a Free
//                event per allocation, with PyTorch's total as a counter
//   torch        torch.profiler with profile_memory=True (CPU activities)
//   heap         the heap profile's hook as ringprof.torch installs it by
//                default (RINGPROF_TORCH_HEAP=1): PyTorch's CPU allocator
//                does not report to it
//   heap all     RINGPROF_TORCH_HEAP=all: the CPU allocator reports every
//                block, and the sampler picks one per 512 KiB
// No operator callback is registered in any of them: this is the hook alone.
constexpr int kAllocsPerBlock = 20000;

double ns_per_alloc() {
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < kAllocsPerBlock; ++i) benchmark::DoNotOptimize(at::empty({256}));
  const auto t1 = std::chrono::steady_clock::now();
  return std::chrono::duration<double, std::nano>(t1 - t0).count() / kAllocsPerBlock;
}

void BM_TorchMemoryHookCost(benchmark::State& state) {
  using namespace torch::autograd::profiler;
  namespace impl = torch::profiler::impl;
  ringprof::Config config;
  config.sink = "null";
  config.sample_hz = 0;
  ringprof::start(config);
  const impl::ProfilerConfig cfg(impl::ProfilerState::KINETO, /*report_input_shapes=*/false,
                                 /*profile_memory=*/true);
  const std::set<impl::ActivityType> cpu{impl::ActivityType::CPU};
  std::vector<double> none, idle, hook, torch_ns, heap, heap_all;
  auto run_case = [&](int which) {
    switch (which) {
      case 0: none.push_back(ns_per_alloc()); break;
      case 1:
        ringprof::torch_operators::install_memory_reporting();
        idle.push_back(ns_per_alloc());
        ringprof::torch_operators::uninstall_memory_reporting();
        break;
      case 2:
        ringprof::set_mode(ringprof::Level::Detailed);
        ringprof::torch_operators::install_memory_reporting();
        hook.push_back(ns_per_alloc());
        ringprof::torch_operators::uninstall_memory_reporting();
        ringprof::set_mode(ringprof::Level::AlwaysOn);
        break;
      case 3:
        prepareProfiler(cfg, cpu);
        enableProfiler(cfg, cpu);
        torch_ns.push_back(ns_per_alloc());
        benchmark::DoNotOptimize(disableProfiler());
        break;
      case 4:
        ringprof::torch_operators::install_heap_reporting(false);
        heap.push_back(ns_per_alloc());
        ringprof::torch_operators::uninstall_heap_reporting();
        break;
      case 5:
        ringprof::torch_operators::install_heap_reporting(true);
        heap_all.push_back(ns_per_alloc());
        ringprof::torch_operators::uninstall_heap_reporting();
        break;
    }
  };
  for (auto _ : state) {
    for (int round = 0; round < kRounds; ++round)
      for (int k = 0; k < 6; ++k) run_case((round + k) % 6);
  }
  ringprof::stop();
  using ringprof::bench::report_figure;
  report_figure("torch alloc: at::empty(1 KiB) and free, no hook, ns", median(none), "ns");
  report_figure("torch alloc: ringprof hook installed, not detailed, over none, ns", median_difference(idle, none),
                "ns");
  report_figure("torch alloc: ringprof hook recording (detailed), over none, ns", median_difference(hook, none), "ns");
  report_figure("torch alloc: torch.profiler profile_memory, over none, ns", median_difference(torch_ns, none), "ns");
  report_figure("torch alloc: ringprof heap hook (default, CPU allocator silent), over none, ns",
                median_difference(heap, none), "ns");
  report_figure("torch alloc: ringprof heap hook with the CPU allocator (all), over none, ns",
                median_difference(heap_all, none), "ns");
}
BENCHMARK(BM_TorchMemoryHookCost)->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace

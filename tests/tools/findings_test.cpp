// The report's findings: for each rule a hand-built recording that triggers
// it, with the severity and the evidence figures worked out from the events
// placed, and one just under its threshold that does not. Times are exact
// microseconds, so every figure is exact.
#include <gtest/gtest.h>

#include <functional>
#include <map>

#include "ringprof/tools/findings.h"
#include "ringprof/tools/rank_report.h"
#include "support/job_builder.h"
#include "support/test_support.h"
#include "support/trace_builder.h"

namespace ringprof {
namespace {

constexpr uint64_t kUs = 1000;
constexpr uint64_t kMs = 1000 * kUs;
constexpr uint64_t kT0 = 2'000'000'000;  // where each recording's steps begin
constexpr uint32_t kTid = 100;           // the trainer thread's kernel tid
constexpr uint8_t kPageable = 1, kPinned = 2, kDevice = 3;  // CUpti_ActivityMemoryKind
const char* const kAllReduce = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)";

// One process ("trainer", pid 4242) with a thread "trainer" (tid 100),
// written through the real encoder.
class Recording {
 public:
  Recording() : b_(4242, 1'000'000'000) { th_ = b_.thread(kTid, "trainer"); }

  test::TraceBuilder& builder() { return b_; }
  uint32_t thread() const { return th_; }

  uint32_t loc(const std::string& name) {
    auto it = locs_.find(name);
    if (it != locs_.end()) return it->second;
    return locs_[name] = b_.location(name);
  }
  void open(const std::string& name, uint64_t ts) { b_.begin(th_, ts, loc(name)); }
  void close(uint64_t ts) { b_.end(th_, ts); }
  void zone(const std::string& name, uint64_t begin, uint64_t end) {
    open(name, begin);
    close(end);
  }
  // Marks s = 0..n at kT0 + s * step_ns (n whole steps), calling each(s, begin) for the first n.
  void steps(uint64_t n, uint64_t step_ns, const std::function<void(uint64_t, uint64_t)>& each) {
    for (uint64_t s = 0; s <= n; ++s) {
      const uint64_t t = kT0 + s * step_ns;
      b_.step(th_, t, s);
      if (s < n) each(s, t);
    }
  }

  uint32_t gpu_name(const std::string& name) {
    auto it = gpu_names_.find(name);
    if (it != gpu_names_.end()) return it->second;
    return gpu_names_[name] = b_.gpu_name(name);
  }
  void kernel(const std::string& name, uint64_t start, uint64_t end, uint32_t correlation = 0) {
    GpuActivity a;
    a.kind = GpuKind::Kernel;
    a.name = gpu_name(name);
    a.start_ns = start;
    a.end_ns = end;
    a.correlation = correlation;
    a.stream = 7;
    b_.gpu(a);
  }
  void api(GpuKind kind, const std::string& name, uint64_t start, uint64_t end, uint32_t correlation,
           uint32_t tid = kTid) {
    GpuActivity a;
    a.kind = kind;
    a.name = gpu_name(name);
    a.start_ns = start;
    a.end_ns = end;
    a.correlation = correlation;
    a.tid = tid;
    b_.gpu(a);
  }
  void copy(GpuCopyKind direction, uint8_t src, uint8_t dst, uint64_t bytes, uint64_t start, uint64_t end) {
    GpuActivity a;
    a.kind = GpuKind::Memcpy;
    a.sub_kind = static_cast<uint8_t>(direction);
    a.src_kind = src;
    a.dst_kind = dst;
    a.bytes = bytes;
    a.start_ns = start;
    a.end_ns = end;
    b_.gpu(a);
  }
  void sync_record(uint8_t type, uint64_t start, uint64_t end, uint32_t correlation) {
    GpuActivity a;
    a.kind = GpuKind::Sync;
    a.sub_kind = type;
    a.start_ns = start;
    a.end_ns = end;
    a.correlation = correlation;
    b_.gpu(a);
  }

  std::string write(const test::TempDir& dir, const std::string& name = "rec.rpf") {
    b_.flush();
    const std::string path = dir.file(name);
    test::write_file(path, b_.bytes());
    return path;
  }

 private:
  test::TraceBuilder b_;
  uint32_t th_ = 0;
  std::map<std::string, uint32_t> locs_;
  std::map<std::string, uint32_t> gpu_names_;
};

std::vector<Finding> findings_of(const std::string& path, const FindingsOptions& options = {}) {
  TraceReader reader({path});
  return find_problems(reader, options, nullptr);
}

const Finding* find_rule(const std::vector<Finding>& all, const std::string& rule) {
  for (const Finding& f : all)
    if (f.rule == rule) return &f;
  return nullptr;
}

size_t count_rule(const std::vector<Finding>& all, const std::string& rule) {
  size_t n = 0;
  for (const Finding& f : all) n += f.rule == rule;
  return n;
}

void expect_figures(const Finding& f, const std::vector<std::pair<std::string, std::string>>& expected) {
  for (const auto& [name, value] : expected) EXPECT_EQ(f.figure(name), value) << f.rule << " figure " << name;
}

void expect_text(const Finding& f) {
  EXPECT_FALSE(f.title.empty());
  EXPECT_FALSE(f.evidence.empty());
  EXPECT_FALSE(f.advice.empty());
  EXPECT_EQ(f.title.find('\n'), std::string::npos) << "a title is one line";
}

// ---- gpu_idle ----

// 10 steps of 1 ms; the GPU busy `busy_us` at the end of each step; the
// zone `cpu_zone` fills the start of the step until the kernel begins.
std::string write_idle(const test::TempDir& dir, uint64_t busy_us, const std::string& cpu_zone) {
  Recording r;
  r.steps(10, kMs, [&](uint64_t, uint64_t t) {
    const uint64_t gpu_from = t + (1000 - busy_us) * kUs;
    r.zone(cpu_zone, t, gpu_from);
    r.zone("forward", gpu_from, t + kMs);  // launches while the GPU runs: no idle time of its own
    r.kernel("gemm", gpu_from, t + kMs);
  });
  return r.write(dir);
}

TEST(FindingsGpuIdle, InputBoundStepsAreCriticalAndNameTheLoader) {
  test::TempDir dir;
  Recording r;
  r.steps(10, kMs, [&](uint64_t, uint64_t t) {
    r.zone("data_loader", t, t + 500 * kUs);     // GPU idle throughout
    r.zone("forward", t + 500 * kUs, t + 900 * kUs);
    r.kernel("gemm", t + 500 * kUs, t + 900 * kUs);
    // 900-1000 µs: GPU idle, no zone open.
  });
  const auto all = findings_of(r.write(dir));
  ASSERT_EQ(count_rule(all, "gpu_idle"), 1u);
  const Finding& f = *find_rule(all, "gpu_idle");
  expect_text(f);
  EXPECT_EQ(f.severity, FindingSeverity::Critical);  // 600 of 1000 µs idle: 60%
  expect_figures(f, {{"process", "trainer (pid 4242)"},
                     {"steps", "10"},
                     {"idle_pct_median", "60.0"},
                     {"step_median_ns", "1000000"},
                     {"idle_median_ns", "600000"},
                     {"top_zone", "data_loader"},
                     {"top_zone_idle_ns_per_step", "500000"},
                     {"idle_covered_pct", "83.3"},  // 500 of the 600 idle µs
                     {"bound", "input"}});
  EXPECT_NE(f.title.find("data_loader"), std::string::npos);
  EXPECT_NE(f.advice.find("num_workers"), std::string::npos);
  EXPECT_EQ(all.front().severity, FindingSeverity::Critical);
}

TEST(FindingsGpuIdle, ThirtyPercentIsAWarningAndCpuBound) {
  test::TempDir dir;
  const auto all = findings_of(write_idle(dir, 700, "optimizer_step"));
  ASSERT_EQ(count_rule(all, "gpu_idle"), 1u);
  const Finding& f = *find_rule(all, "gpu_idle");
  EXPECT_EQ(f.severity, FindingSeverity::Warning);
  expect_figures(f, {{"idle_pct_median", "30.0"},
                     {"idle_median_ns", "300000"},
                     {"top_zone", "optimizer_step"},
                     {"top_zone_idle_ns_per_step", "300000"},
                     {"idle_covered_pct", "100.0"},
                     {"bound", "cpu"}});
  EXPECT_NE(f.advice.find("CUDA graphs"), std::string::npos);
}

TEST(FindingsGpuIdle, JustUnderThirtyPercentIsQuiet) {
  test::TempDir dir;
  EXPECT_EQ(count_rule(findings_of(write_idle(dir, 701, "optimizer_step")), "gpu_idle"), 0u);  // 29.9%
}

// The idle time's zone says data loading by its words, not by "data" or
// "fetch" somewhere inside them.
TEST(FindingsGpuIdle, DataLoadingIsJudgedByWords) {
  test::TempDir dir;
  auto bound = [&](const std::string& zone) {
    const auto all = findings_of(write_idle(dir, 700, zone));
    const Finding* f = find_rule(all, "gpu_idle");
    return f ? f->figure("top_zone") + " " + f->figure("bound") : zone + " no finding";
  };
  for (const char* name : {"DataLoader", "data_loader", "dataloader", "_MultiProcessingDataLoaderIter.__next__",
                           "_next_data", "load_data", "default_collate", "collate_fn", "fetch",
                           "_MapDatasetFetcher.fetch", "load_batch", "next_batch", "get_batch"})
    EXPECT_EQ(bound(name), std::string(name) + " input");
  for (const char* name : {"DistributedDataParallel.forward", "nn.DataParallel", "data_parallel", "metadata",
                           "update_metadata", "prefetch", "FSDP::_prefetch_handle", "pre_fetch", "data_ptr",
                           "batch_norm", "cudnn_batch_norm", "batched_gemm", "batch"})
    EXPECT_EQ(bound(name), std::string(name) + " cpu");
}

// Two threads in zones over the same idle stretch cover it once: 10 steps
// of 1 ms, the kernel [600,1000), zones [0,200) on the trainer and on a
// logging thread. Zones cover 200 of the 600 idle µs (33.3%): not CPU-bound,
// as the step chart shows it; summed per thread they would seem to cover
// 400 (66.7%). With --thread the selected thread's zones speak.
TEST(FindingsGpuIdle, ZonesOfOverlappingThreadsCoverTheIdleTimeOnce) {
  test::TempDir dir;
  Recording r;
  const uint32_t logger = r.builder().thread(kTid + 1, "logger");
  r.steps(10, kMs, [&](uint64_t, uint64_t t) {
    r.zone("optimizer_step", t, t + 200 * kUs);
    r.builder().begin(logger, t, r.loc("write_log"));
    r.builder().end(logger, t + 200 * kUs);
    r.kernel("gemm", t + 600 * kUs, t + kMs);
  });
  const std::string path = r.write(dir);
  const auto all = findings_of(path);
  ASSERT_EQ(count_rule(all, "gpu_idle"), 1u);
  expect_figures(*find_rule(all, "gpu_idle"), {{"idle_pct_median", "60.0"},
                                               {"idle_covered_pct", "33.3"},
                                               {"bound", "unknown"}});
  FindingsOptions logger_only;
  logger_only.thread = "logger";
  const auto selected = findings_of(path, logger_only);
  ASSERT_EQ(count_rule(selected, "gpu_idle"), 1u);
  expect_figures(*find_rule(selected, "gpu_idle"), {{"top_zone", "write_log"}, {"idle_covered_pct", "33.3"}});
}

TEST(FindingsGpuIdle, FewerThanThreeStepsOrNoGpuIsQuiet) {
  test::TempDir dir;
  Recording two;
  two.steps(2, kMs, [&](uint64_t, uint64_t t) { two.kernel("gemm", t, t + 100 * kUs); });
  EXPECT_EQ(count_rule(findings_of(two.write(dir, "two.rpf")), "gpu_idle"), 0u);
  Recording cpu_only;
  cpu_only.steps(10, kMs, [&](uint64_t, uint64_t t) { cpu_only.zone("forward", t, t + 100 * kUs); });
  EXPECT_EQ(count_rule(findings_of(cpu_only.write(dir, "cpu.rpf")), "gpu_idle"), 0u);
}

// ---- tiny_kernels ----

// `tiny` kernels of 5 µs launched by a 10 µs cudaLaunchKernel (its 8 µs
// cuLaunchKernel shares the correlation id), `long_ones` of 50 µs, and 200
// of 5 µs launched together by one 50 µs cudaGraphLaunch (not each its own
// launch). The first 50 tiny kernels reach the files a segment before their
// launches.
std::string write_kernels(const test::TempDir& dir, uint32_t tiny, uint32_t long_ones) {
  Recording r;
  r.zone("train", kT0, kT0 + 1000 * kMs);  // names the launching thread in the files
  uint32_t corr = 1;
  uint64_t t = kT0;
  std::vector<std::pair<uint64_t, uint32_t>> early;
  for (uint32_t i = 0; i < tiny; ++i, ++corr, t += 100 * kUs) {
    if (i < 50) {
      r.kernel("_Z4tinyPf", t + 20 * kUs, t + 25 * kUs, corr);
      early.emplace_back(t, corr);
      continue;
    }
    r.api(GpuKind::RuntimeApi, "cudaLaunchKernel", t, t + 10 * kUs, corr);
    r.api(GpuKind::DriverApi, "cuLaunchKernel", t + 1 * kUs, t + 9 * kUs, corr);
    r.kernel("_Z4tinyPf", t + 20 * kUs, t + 25 * kUs, corr);
  }
  for (uint32_t i = 0; i < long_ones; ++i, ++corr, t += 100 * kUs) {
    r.api(GpuKind::RuntimeApi, "cudaLaunchKernel", t, t + 10 * kUs, corr);
    r.kernel("_Z4gemmPf", t + 20 * kUs, t + 70 * kUs, corr);
  }
  r.api(GpuKind::RuntimeApi, "cudaGraphLaunch", t, t + 50 * kUs, corr);
  r.api(GpuKind::DriverApi, "cuGraphLaunch", t + 1 * kUs, t + 49 * kUs, corr);
  for (uint64_t i = 0; i < 200; ++i) {
    const uint64_t at = t + 60 * kUs + i * 10 * kUs;
    r.kernel("_Z4tinyPf", at, at + 5 * kUs, corr);
  }
  r.builder().flush();
  for (const auto& [at, c] : early) {
    r.api(GpuKind::RuntimeApi, "cudaLaunchKernel", at, at + 10 * kUs, c);
    r.api(GpuKind::DriverApi, "cuLaunchKernel", at + 1 * kUs, at + 9 * kUs, c);
  }
  return r.write(dir);
}

TEST(FindingsTinyKernels, LaunchBoundKernelsAreNamedWithRunAndLaunchTimes) {
  test::TempDir dir;
  const std::string path = write_kernels(dir, 100, 10);
  const auto all = findings_of(path);
  ASSERT_EQ(count_rule(all, "tiny_kernels"), 1u);
  const Finding& f = *find_rule(all, "tiny_kernels");
  expect_text(f);
  EXPECT_EQ(f.severity, FindingSeverity::Critical);  // 100 of 110: 90.9%
  expect_figures(f, {{"kernels", "110"},
                     {"launch_bound", "100"},
                     {"launch_bound_pct", "90.9"},
                     {"kernels_without_launch", "200"},  // the graph's
                     {"top_kernel", "tiny(float*)"},
                     {"top_kernel_launch_bound", "100"},
                     {"top_kernel_run_median_ns", "5000"},
                     {"top_kernel_launch_median_ns", "10000"}});  // the runtime call, not the driver's
  EXPECT_NE(f.advice.find("CUDA graphs"), std::string::npos);
  // Launched by "trainer": another thread's view has none.
  FindingsOptions other;
  other.thread = "loader";
  EXPECT_EQ(count_rule(findings_of(path, other), "tiny_kernels"), 0u);
  other.thread = "trainer";
  EXPECT_EQ(count_rule(findings_of(path, other), "tiny_kernels"), 1u);
}

TEST(FindingsTinyKernels, HalfOfTheKernelsIsAWarning) {
  test::TempDir dir;
  const auto all = findings_of(write_kernels(dir, 100, 100));
  ASSERT_EQ(count_rule(all, "tiny_kernels"), 1u);
  EXPECT_EQ(find_rule(all, "tiny_kernels")->severity, FindingSeverity::Warning);
  EXPECT_EQ(find_rule(all, "tiny_kernels")->figure("launch_bound_pct"), "50.0");
}

TEST(FindingsTinyKernels, JustUnderEitherThresholdIsQuiet) {
  test::TempDir dir;
  EXPECT_EQ(count_rule(findings_of(write_kernels(dir, 99, 0)), "tiny_kernels"), 0u);    // 99 < 100 kernels
  EXPECT_EQ(count_rule(findings_of(write_kernels(dir, 100, 101)), "tiny_kernels"), 0u);  // 49.8% < 50%
}

// 100 kernels of 9 µs; each one's 8 µs cuLaunchKernel comes with it, its
// 10 µs cudaLaunchKernel (the longer: the launch time) a segment later.
TEST(FindingsTinyKernels, TheLongerApiRecordCountsWhenTheyComeInDifferentSegments) {
  test::TempDir dir;
  Recording r;
  r.zone("train", kT0, kT0 + 100 * kMs);
  for (uint32_t i = 0; i < 100; ++i) {
    const uint64_t t = kT0 + i * 100 * kUs;
    r.api(GpuKind::DriverApi, "cuLaunchKernel", t + 1 * kUs, t + 9 * kUs, 1 + i);
    r.kernel("_Z4tinyPf", t + 20 * kUs, t + 29 * kUs, 1 + i);
  }
  r.builder().flush();
  for (uint32_t i = 0; i < 100; ++i) {
    const uint64_t t = kT0 + i * 100 * kUs;
    r.api(GpuKind::RuntimeApi, "cudaLaunchKernel", t, t + 10 * kUs, 1 + i);
  }
  const auto all = findings_of(r.write(dir));
  ASSERT_EQ(count_rule(all, "tiny_kernels"), 1u);
  const Finding& f = *find_rule(all, "tiny_kernels");
  EXPECT_EQ(f.severity, FindingSeverity::Critical);  // 100 of 100: 10 µs launches, 9 µs runs
  expect_figures(f, {{"kernels", "100"},
                     {"launch_bound", "100"},
                     {"launch_bound_pct", "100.0"},
                     {"kernels_without_launch", "0"},
                     {"top_kernel_run_median_ns", "9000"},
                     {"top_kernel_launch_median_ns", "10000"}});

  // Launches with a driver record only: judged with it at the end.
  Recording driver_only;
  driver_only.zone("train", kT0, kT0 + 100 * kMs);
  for (uint32_t i = 0; i < 100; ++i) {
    const uint64_t t = kT0 + i * 100 * kUs;
    driver_only.api(GpuKind::DriverApi, "cuLaunchKernel", t, t + 10 * kUs, 1 + i);
    driver_only.kernel("_Z4tinyPf", t + 20 * kUs, t + 25 * kUs, 1 + i);
  }
  const auto alone = findings_of(driver_only.write(dir, "driver.rpf"));
  ASSERT_EQ(count_rule(alone, "tiny_kernels"), 1u);
  expect_figures(*find_rule(alone, "tiny_kernels"), {{"kernels", "100"},
                                                     {"launch_bound", "100"},
                                                     {"top_kernel_run_median_ns", "5000"},
                                                     {"top_kernel_launch_median_ns", "10000"}});
}

// ---- sync_in_step ----

TEST(FindingsSyncInStep, SyncCallsAndHostReadsCountOnceEach) {
  test::TempDir dir;
  Recording r;
  // Before the loop: not counted.
  r.api(GpuKind::RuntimeApi, "cudaDeviceSynchronize", kT0 - 500 * kUs, kT0 - 100 * kUs, 1);
  r.steps(10, kMs, [&](uint64_t s, uint64_t t) {
    const auto c = static_cast<uint32_t>(s);
    // One synchronisation as CUPTI reports it: the runtime call, its driver
    // call and the wait record share the correlation id.
    r.api(GpuKind::RuntimeApi, "cudaStreamSynchronize", t + 100 * kUs, t + 200 * kUs, 1000 + c);
    r.api(GpuKind::DriverApi, "cuStreamSynchronize", t + 110 * kUs, t + 190 * kUs, 1000 + c);
    r.sync_record(3, t + 120 * kUs, t + 190 * kUs, 1000 + c);
    // loss.item(): the zone counts, the calls inside it do not again.
    r.open("aten::item", t + 300 * kUs);
    r.open("aten::_local_scalar_dense", t + 305 * kUs);
    r.api(GpuKind::RuntimeApi, "cudaMemcpyAsync", t + 310 * kUs, t + 320 * kUs, 2000 + c);
    r.api(GpuKind::RuntimeApi, "cudaStreamSynchronize", t + 320 * kUs, t + 340 * kUs, 3000 + c);
    r.close(t + 345 * kUs);
    r.close(t + 350 * kUs);
    // A GPU-side wait blocks no host thread.
    r.sync_record(2, t + 400 * kUs, t + 600 * kUs, 0);
  });
  const auto all = findings_of(r.write(dir));
  ASSERT_EQ(count_rule(all, "sync_in_step"), 1u);
  const Finding& f = *find_rule(all, "sync_in_step");
  expect_text(f);
  EXPECT_EQ(f.severity, FindingSeverity::Warning);  // 150 of 1000 µs per step: 15%
  expect_figures(f, {{"process", "trainer (pid 4242)"},
                     {"steps", "10"},
                     {"syncs", "20"},
                     {"syncs_per_step", "2.00"},
                     {"blocked_ns", "1500000"},
                     {"blocked_pct", "15.0"},
                     {"top_call", "cudaStreamSynchronize"},
                     {"top_call_count", "10"},
                     {"top_call_blocked_ns", "1000000"}});
  EXPECT_NE(f.evidence.find("aten::item ×10"), std::string::npos) << f.evidence;
  EXPECT_NE(f.advice.find("set_sync_debug_mode"), std::string::npos);
}

// `calls` cudaDeviceSynchronize of 10 µs each over 10 steps of 1 ms.
std::string write_syncs(const test::TempDir& dir, uint32_t calls, uint64_t each_us = 10) {
  Recording r;
  r.steps(10, kMs, [&](uint64_t s, uint64_t t) {
    const auto c = static_cast<uint32_t>(s);
    if (s < calls) r.api(GpuKind::RuntimeApi, "cudaDeviceSynchronize", t, t + each_us * kUs, 1 + c);
  });
  return r.write(dir);
}

TEST(FindingsSyncInStep, OnePerStepIsInfoAndLessIsQuiet) {
  test::TempDir dir;
  const auto all = findings_of(write_syncs(dir, 10));  // 1.00 per step, 1% blocked
  ASSERT_EQ(count_rule(all, "sync_in_step"), 1u);
  EXPECT_EQ(find_rule(all, "sync_in_step")->severity, FindingSeverity::Info);
  expect_figures(*find_rule(all, "sync_in_step"), {{"syncs_per_step", "1.00"}, {"blocked_pct", "1.0"}});
  EXPECT_EQ(count_rule(findings_of(write_syncs(dir, 9)), "sync_in_step"), 0u);  // 0.90 per step, 0.9%
}

TEST(FindingsSyncInStep, LongBlockingIsCriticalEvenWhenRare) {
  test::TempDir dir;
  const auto all = findings_of(write_syncs(dir, 5, 400));  // 2000 of 10000 µs: 20%
  ASSERT_EQ(count_rule(all, "sync_in_step"), 1u);
  EXPECT_EQ(find_rule(all, "sync_in_step")->severity, FindingSeverity::Critical);
  EXPECT_EQ(find_rule(all, "sync_in_step")->figure("syncs_per_step"), "0.50");
}

// ---- pageable_copies ----

// `pageable` copies of 1 MiB (half HtoD from pageable memory, half DtoH to
// it), each `each_us` long, 100 pinned copies, over 100 ms of recording.
std::string write_copies(const test::TempDir& dir, uint32_t pageable, uint64_t each_us) {
  Recording r;
  r.zone("train", kT0, kT0 + 100 * kMs);
  for (uint32_t i = 0; i < pageable; ++i) {
    const uint64_t t = kT0 + i * 2 * kMs;
    if (i % 2 == 0) r.copy(GpuCopyKind::HtoD, kPageable, kDevice, 1 << 20, t, t + each_us * kUs);
    else r.copy(GpuCopyKind::DtoH, kDevice, kPageable, 1 << 20, t, t + each_us * kUs);
  }
  for (uint32_t i = 0; i < 100; ++i)
    r.copy(GpuCopyKind::HtoD, kPinned, kDevice, 1 << 20, kT0 + i * kMs + 500 * kUs, kT0 + i * kMs + 600 * kUs);
  return r.write(dir);
}

TEST(FindingsPageableCopies, CountsBytesAndTimeOfPageableCopiesOnly) {
  test::TempDir dir;
  const auto all = findings_of(write_copies(dir, 10, 100));
  ASSERT_EQ(count_rule(all, "pageable_copies"), 1u);
  const Finding& f = *find_rule(all, "pageable_copies");
  expect_text(f);
  EXPECT_EQ(f.severity, FindingSeverity::Warning);  // 1 ms of 100 ms
  expect_figures(f, {{"copies", "10"},
                     {"bytes", "10485760"},
                     {"copy_ns", "1000000"},
                     {"copy_pct", "1.0"},
                     {"HtoD", "5"},
                     {"DtoH", "5"}});
  EXPECT_NE(f.advice.find("pin_memory"), std::string::npos);
  EXPECT_NE(f.advice.find("cudaHostAlloc"), std::string::npos);
}

TEST(FindingsPageableCopies, TenPercentOfTheTimeIsCriticalAndNineCopiesAreQuiet) {
  test::TempDir dir;
  const auto all = findings_of(write_copies(dir, 10, 1000));  // 10 ms of 100 ms
  ASSERT_EQ(count_rule(all, "pageable_copies"), 1u);
  EXPECT_EQ(find_rule(all, "pageable_copies")->severity, FindingSeverity::Critical);
  EXPECT_EQ(find_rule(all, "pageable_copies")->figure("copy_pct"), "10.0");
  EXPECT_EQ(count_rule(findings_of(write_copies(dir, 9, 1000)), "pageable_copies"), 0u);
}

TEST(FindingsPageableCopies, TheCriticalShareIsOfTheWindow) {
  test::TempDir dir;
  // 10 copies of 500 µs in the first 20 ms of 100 ms: 5% of the whole
  // recording (a warning), 25% of a window on those 20 ms (critical).
  const std::string path = write_copies(dir, 10, 500);
  const auto whole = findings_of(path);
  ASSERT_EQ(count_rule(whole, "pageable_copies"), 1u);
  EXPECT_EQ(find_rule(whole, "pageable_copies")->severity, FindingSeverity::Warning);
  EXPECT_EQ(find_rule(whole, "pageable_copies")->figure("copy_pct"), "5.0");
  FindingsOptions first;
  first.range.to_ns = 20 * kMs;
  const auto windowed = findings_of(path, first);
  ASSERT_EQ(count_rule(windowed, "pageable_copies"), 1u);
  const Finding& f = *find_rule(windowed, "pageable_copies");
  EXPECT_EQ(f.severity, FindingSeverity::Critical);
  expect_figures(f, {{"copies", "10"}, {"copy_ns", "5000000"}, {"copy_pct", "25.0"}});
}

// ---- comm_exposed ----

// Per 1 ms step: computation 0-400 µs, an all-reduce from `comm_from` µs for `comm_us`.
std::string write_comm(const test::TempDir& dir, uint64_t comm_from, uint64_t comm_us) {
  Recording r;
  r.steps(10, kMs, [&](uint64_t, uint64_t t) {
    r.kernel("gemm", t, t + 400 * kUs);
    r.kernel(kAllReduce, t + comm_from * kUs, t + (comm_from + comm_us) * kUs);
  });
  return r.write(dir);
}

TEST(FindingsCommExposed, FromTheProcessStepsWithoutARanksReport) {
  test::TempDir dir;
  const auto all = findings_of(write_comm(dir, 350, 200));  // 50 µs hidden, 150 exposed: 15%
  ASSERT_EQ(count_rule(all, "comm_exposed"), 1u);
  const Finding& f = *find_rule(all, "comm_exposed");
  expect_text(f);
  EXPECT_EQ(f.severity, FindingSeverity::Warning);
  expect_figures(f, {{"ranks_affected", "1"},
                     {"ranks", "1"},
                     {"worst", "pid 4242"},
                     {"worst_exposed_pct", "15.0"},
                     {"worst_exposed_ns", "1500000"},
                     {"worst_comm_ns", "2000000"},
                     {"worst_overlap_ns", "500000"}});
}

TEST(FindingsCommExposed, JustUnderTenPercentIsQuiet) {
  test::TempDir dir;
  EXPECT_EQ(count_rule(findings_of(write_comm(dir, 300, 199)), "comm_exposed"), 0u);  // 99 µs exposed: 9.9%
}

TEST(FindingsCommExposed, NamesTheRanksOfTheRanksReport) {
  test::TempDir dir;
  for (int k = 0; k < 2; ++k) {
    test::SimRank r({"node", 1'000'000'000ull, 0}, 100 + k, k, 2, "job7");
    for (uint64_t s = 0; s <= 10; ++s) {
      const uint64_t t = 10 * kMs + s * kMs;
      r.step(t, s);
      if (s == 10) break;
      r.gpu(GpuKind::Kernel, "gemm", t, t + 400 * kUs);
      // Rank 0's all-reduce hides under the computation; rank 1's runs 300 µs past it.
      r.gpu(GpuKind::Kernel, kAllReduce, t + 350 * kUs, t + (k == 0 ? 400 : 700) * kUs);
    }
    r.write(dir.path(), "rank" + std::to_string(k));
  }
  TraceReader reader({dir.path()});
  const RanksReport ranks = analyse_ranks(reader, {});
  ASSERT_EQ(ranks.ranks.size(), 2u);
  const auto all = find_problems(reader, {}, &ranks);
  ASSERT_EQ(count_rule(all, "comm_exposed"), 1u);
  const Finding& f = *find_rule(all, "comm_exposed");
  EXPECT_EQ(f.severity, FindingSeverity::Critical);  // 300 of 1000 µs
  expect_figures(f, {{"ranks_affected", "1"},
                     {"ranks", "2"},
                     {"worst", "rank 1"},
                     {"worst_exposed_pct", "30.0"},
                     {"worst_exposed_ns", "3000000"},
                     {"worst_comm_ns", "3500000"},
                     {"worst_overlap_ns", "500000"}});
  EXPECT_EQ(f.evidence.find("rank 0"), std::string::npos) << f.evidence;
}

// The ranks report covers each rank's whole recording: with a window (or a
// thread filter), or with one process only, the process's own steps count.
TEST(FindingsCommExposed, AWindowIsHonouredEvenWithARanksReport) {
  test::TempDir dir;
  Recording r;
  // Steps 0-4: computation 0-400 µs, then an all-reduce 400-800 µs, none of
  // it hidden (40% of the step); steps 5-9: computation only.
  r.steps(10, kMs, [&](uint64_t s, uint64_t t) {
    r.kernel("gemm", t, t + 400 * kUs);
    if (s < 5) r.kernel(kAllReduce, t + 400 * kUs, t + 800 * kUs);
  });
  const std::string path = r.write(dir);
  TraceReader reader({path});
  const RanksReport ranks = analyse_ranks(reader, {});
  ASSERT_EQ(ranks.ranks.size(), 1u);
  // The second half (from 5.5 ms, steps 5-9): no communication at all.
  FindingsOptions second;
  second.range.from_ns = 5500 * kUs;
  EXPECT_EQ(count_rule(find_problems(reader, second, &ranks), "comm_exposed"), 0u);
  // The first half (to 4.5 ms, steps 0-4): 400 of 1000 µs per step.
  FindingsOptions first;
  first.range.to_ns = 4500 * kUs;
  const auto all = find_problems(reader, first, &ranks);
  ASSERT_EQ(count_rule(all, "comm_exposed"), 1u);
  const Finding& f = *find_rule(all, "comm_exposed");
  EXPECT_EQ(f.severity, FindingSeverity::Critical);
  expect_figures(f, {{"worst", "pid 4242"},
                     {"worst_exposed_pct", "40.0"},
                     {"worst_exposed_ns", "2000000"},
                     {"worst_comm_ns", "2000000"},
                     {"worst_overlap_ns", "0"}});
}

// ---- slow_steps ----

// `count` steps numbered from `first`, 1 ms each but `slow_us` for the
// `slow`-th; forward 500 µs, then the optimizer for the rest of the step but 200 µs.
std::string write_steps(const test::TempDir& dir, uint64_t count, uint64_t slow, uint64_t slow_us,
                        uint64_t first = 0) {
  Recording r;
  uint64_t t = kT0;
  for (uint64_t s = 0; s <= count; ++s) {
    r.builder().step(r.thread(), t, first + s);
    if (s == count) break;
    const uint64_t len = (s == slow ? slow_us : 1000) * kUs;
    r.zone("forward", t, t + 500 * kUs);
    r.zone("optimizer", t + 500 * kUs, t + len - 200 * kUs);
    t += len;
  }
  return r.write(dir);
}

TEST(FindingsSlowSteps, NamesTheSlowStepAndTheZoneThatGrew) {
  test::TempDir dir;
  const auto all = findings_of(write_steps(dir, 10, 5, 2000));
  ASSERT_EQ(count_rule(all, "slow_steps"), 1u);
  const Finding& f = *find_rule(all, "slow_steps");
  expect_text(f);
  EXPECT_EQ(f.severity, FindingSeverity::Warning);  // 1 ms lost of 11 ms: 9.1%
  expect_figures(f, {{"process", "trainer (pid 4242)"},
                     {"steps", "10"},
                     {"slow_steps", "1"},
                     {"median_step_ns", "1000000"},
                     {"slowest_step", "5"},
                     {"slowest_step_ns", "2000000"},
                     {"slowest_zone", "optimizer"},  // 1300 µs against its median 300 µs
                     {"slowest_zone_excess_ns", "1000000"},
                     {"lost_ns", "1000000"},
                     {"lost_pct", "9.1"}});
  EXPECT_NE(f.evidence.find("step 5"), std::string::npos) << f.evidence;
}

TEST(FindingsSlowSteps, OneAndAHalfTimesTheMedianIsNotSlow) {
  test::TempDir dir;
  EXPECT_EQ(count_rule(findings_of(write_steps(dir, 10, 5, 1500)), "slow_steps"), 0u);
  EXPECT_EQ(count_rule(findings_of(write_steps(dir, 2, 1, 5000)), "slow_steps"), 0u);  // two steps: too few
}

TEST(FindingsSlowSteps, AFirstSlowStepIsWarmUpAndManyAreCritical) {
  test::TempDir dir;
  const auto warm = findings_of(write_steps(dir, 10, 0, 3000));
  ASSERT_EQ(count_rule(warm, "slow_steps"), 1u);
  EXPECT_EQ(find_rule(warm, "slow_steps")->severity, FindingSeverity::Info);
  EXPECT_NE(find_rule(warm, "slow_steps")->advice.find("warm-up"), std::string::npos);
  // Step 3 at 4 ms: 3 ms lost of 13 ms (23.1%).
  const auto big = findings_of(write_steps(dir, 10, 3, 4000));
  ASSERT_EQ(count_rule(big, "slow_steps"), 1u);
  EXPECT_EQ(find_rule(big, "slow_steps")->severity, FindingSeverity::Critical);
  EXPECT_EQ(find_rule(big, "slow_steps")->figure("lost_pct"), "23.1");
}

// Warm-up is the process's first step (numbered 0 or 1) only: the first step
// of a rolling recording, or of a window from the middle, is slow for a reason.
TEST(FindingsSlowSteps, AFirstSlowStepLaterInTheRunIsNotWarmUp) {
  test::TempDir dir;
  // Steps 500-509, step 500 at 3 ms: 2 ms lost of 12 ms (16.7%).
  const auto rolling = findings_of(write_steps(dir, 10, 0, 3000, 500));
  ASSERT_EQ(count_rule(rolling, "slow_steps"), 1u);
  const Finding& f = *find_rule(rolling, "slow_steps");
  EXPECT_EQ(f.severity, FindingSeverity::Warning);
  expect_figures(f, {{"slowest_step", "500"}, {"lost_pct", "16.7"}});
  EXPECT_EQ(f.advice.find("warm-up"), std::string::npos) << f.advice;
  // Steps 0-9, step 3 at 3 ms; from 3.5 ms the window touches steps 3-9:
  // step 3 comes first, 2 ms lost of 9 ms (22.2%).
  FindingsOptions from;
  from.range.from_ns = 3500 * kUs;
  const auto windowed = findings_of(write_steps(dir, 10, 3, 3000), from);
  ASSERT_EQ(count_rule(windowed, "slow_steps"), 1u);
  EXPECT_EQ(find_rule(windowed, "slow_steps")->severity, FindingSeverity::Critical);
  expect_figures(*find_rule(windowed, "slow_steps"), {{"steps", "7"}, {"slowest_step", "3"}, {"lost_pct", "22.2"}});
  // Numbered from 1 (a loop counting from one): warm-up still.
  const auto one = findings_of(write_steps(dir, 10, 0, 3000, 1));
  ASSERT_EQ(count_rule(one, "slow_steps"), 1u);
  EXPECT_EQ(find_rule(one, "slow_steps")->severity, FindingSeverity::Info);
}

// ---- drops ----

TEST(FindingsDrops, CountsEachKindAndNamesTheSettings) {
  test::TempDir dir;
  Recording r;
  for (uint64_t i = 0; i < 1000; ++i) r.zone("work", kT0 + i * kUs, kT0 + i * kUs + 500);
  r.builder().drops(r.thread(), 5, 2);
  r.builder().samples_lost(r.thread(), 3);
  const auto all = findings_of(r.write(dir));
  ASSERT_EQ(count_rule(all, "drops"), 1u);
  const Finding& f = *find_rule(all, "drops");
  expect_text(f);
  EXPECT_EQ(f.severity, FindingSeverity::Warning);  // 7 of 2007 events: 0.35%
  expect_figures(f, {{"dropped_ring", "5"},
                     {"dropped_io", "2"},
                     {"events", "2000"},
                     {"dropped_pct", "0.3"},
                     {"samples_lost", "3"},
                     {"cupti_dropped", "0"}});
  for (const char* setting : {"RINGPROF_RING_MAX_BYTES", "RINGPROF_DIR", "RINGPROF_SAMPLE_HZ"})
    EXPECT_NE(f.advice.find(setting), std::string::npos) << setting;
}

TEST(FindingsDrops, CuptiDropsOverOnePercentAreCriticalAndNoDropsAreQuiet) {
  test::TempDir dir;
  Recording r;
  for (uint64_t i = 0; i < 10; ++i) r.kernel("gemm", kT0 + i * kUs, kT0 + i * kUs + 500);
  GpuStats& st = r.builder().gpu_stats();
  st.records = 10;
  st.dropped_records = 4;
  const auto all = findings_of(r.write(dir));
  ASSERT_EQ(count_rule(all, "drops"), 1u);
  EXPECT_EQ(find_rule(all, "drops")->severity, FindingSeverity::Critical);  // 4 of 14 records
  EXPECT_EQ(find_rule(all, "drops")->figure("cupti_dropped"), "4");
  EXPECT_NE(find_rule(all, "drops")->advice.find("RINGPROF_CUPTI_BUFFERS"), std::string::npos);

  Recording clean;
  clean.zone("work", kT0, kT0 + kMs);
  EXPECT_EQ(count_rule(findings_of(clean.write(dir, "clean.rpf")), "drops"), 0u);
}

TEST(FindingsDrops, CoverEveryThreadWhateverTheThreadFilter) {
  test::TempDir dir;
  Recording r;
  const uint32_t loader = r.builder().thread(200, "loader");
  for (uint64_t i = 0; i < 1000; ++i) r.zone("work", kT0 + i * kUs, kT0 + i * kUs + 500);
  r.builder().drops(loader, 5, 2);
  r.builder().samples_lost(loader, 3);
  FindingsOptions trainer;
  trainer.thread = "trainer";
  const auto all = findings_of(r.write(dir), trainer);
  ASSERT_EQ(count_rule(all, "drops"), 1u);  // the loader's, though only the trainer is looked at
  expect_figures(*find_rule(all, "drops"),
                 {{"dropped_ring", "5"}, {"dropped_io", "2"}, {"events", "2000"}, {"samples_lost", "3"}});
}

// ---- uncovered_hot_function ----

// 100 samples at 100 Hz: 90 with leaf 0x2000 inside zone "work", `outside`
// with leaf 0x1000 after it, the rest of the 0x1000 ones inside. The samples
// reach the files a segment before the zone's events.
std::string write_samples(const test::TempDir& dir, uint32_t outside) {
  Recording r;
  r.builder().sampler("perf_event", 100);
  const uint32_t hot = r.builder().stack({0x1000, 0x3000});
  const uint32_t covered = r.builder().stack({0x2000, 0x3000});
  for (uint64_t i = 0; i < 90; ++i) r.builder().sample(r.thread(), kT0 + (i + 1) * kMs, covered);
  for (uint64_t i = 0; i < 10; ++i) {
    const uint64_t at = i < outside ? kT0 + 200 * kMs + i * kMs : kT0 + 95 * kMs + i;
    r.builder().sample(r.thread(), at, hot);
  }
  r.builder().flush();
  r.zone("work", kT0, kT0 + 100 * kMs);
  return r.write(dir);
}

TEST(FindingsUncoveredHotFunction, ALeafOutsideEveryZoneIsNamed) {
  test::TempDir dir;
  const auto all = findings_of(write_samples(dir, 10));
  ASSERT_EQ(count_rule(all, "uncovered_hot_function"), 1u);
  const Finding& f = *find_rule(all, "uncovered_hot_function");
  expect_text(f);
  EXPECT_EQ(f.severity, FindingSeverity::Info);  // 10 of 100
  expect_figures(f, {{"function", "0x1000"},
                     {"samples", "10"},
                     {"samples_total", "100"},
                     {"samples_pct", "10.0"},
                     {"cpu_ns", "100000000"}});  // 10 samples of 10 ms
  EXPECT_NE(f.advice.find("zone"), std::string::npos);
}

TEST(FindingsUncoveredHotFunction, NineOfAHundredIsQuiet) {
  test::TempDir dir;
  EXPECT_EQ(count_rule(findings_of(write_samples(dir, 9)), "uncovered_hot_function"), 0u);
}

// ---- everything together ----

TEST(Findings, MostSevereFirstAndWindowed) {
  test::TempDir dir;
  Recording r;
  // 10 steps: the GPU idle 60% (critical), step 5 twice as long (warning).
  uint64_t t = kT0;
  for (uint64_t s = 0; s <= 10; ++s) {
    r.builder().step(r.thread(), t, s);
    if (s == 10) break;
    const uint64_t len = (s == 5 ? 2000 : 1000) * kUs;
    r.zone("forward", t, t + len - 600 * kUs);
    r.kernel("gemm", t + len - 400 * kUs, t + len);
    t += len;
  }
  const std::string path = r.write(dir);
  const auto all = findings_of(path);
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[0].rule, "gpu_idle");
  EXPECT_EQ(all[0].severity, FindingSeverity::Critical);
  EXPECT_EQ(all[1].rule, "slow_steps");
  EXPECT_STREQ(finding_severity_name(all[0].severity), "critical");
  EXPECT_STREQ(finding_severity_name(FindingSeverity::Warning), "warning");
  EXPECT_STREQ(finding_severity_name(FindingSeverity::Info), "info");
  // The first 3.5 ms of the trace (it starts with step 0's mark) touch
  // steps 0-3 only: no slow step among them.
  FindingsOptions first;
  first.range.to_ns = 3500 * kUs;
  const auto windowed = findings_of(path, first);
  EXPECT_EQ(count_rule(windowed, "slow_steps"), 0u);
  ASSERT_EQ(count_rule(windowed, "gpu_idle"), 1u);
  EXPECT_EQ(find_rule(windowed, "gpu_idle")->figure("steps"), "4");
}

TEST(Findings, DamagedOrEmptyInputGivesNoFindings) {
  test::TempDir dir;
  std::vector<uint8_t> junk(4096);
  for (size_t i = 0; i < junk.size(); ++i) junk[i] = static_cast<uint8_t>(i * 131 + 7);
  test::write_file(dir.file("junk.rpf"), junk);
  EXPECT_TRUE(findings_of(dir.file("junk.rpf")).empty());
  EXPECT_TRUE(findings_of(dir.file("missing.rpf")).empty());

  // Ends without begins, records naming no name, waits and copies with no
  // call, work that never ends: nothing to find, nothing to crash on.
  Recording odd;
  odd.close(kT0);
  odd.close(kT0 + 1);
  odd.builder().step(odd.thread(), kT0 + 2, 0);
  odd.builder().step(odd.thread(), kT0 + 2, 1);
  GpuActivity nameless;
  nameless.kind = GpuKind::Kernel;
  nameless.name = 0;
  nameless.start_ns = kT0 + 10;
  nameless.end_ns = kT0 + 5;
  nameless.correlation = 9;
  odd.builder().gpu(nameless);
  odd.sync_record(1, kT0 + 3, kT0 + 3, 0);
  odd.api(GpuKind::RuntimeApi, "cudaMemcpy", kT0 + 2, kT0 + 1, 0, 0);
  odd.open("never_closed", kT0 + 20);
  const auto found = findings_of(odd.write(dir, "odd.rpf"));
  EXPECT_EQ(count_rule(found, "gpu_idle") + count_rule(found, "slow_steps") + count_rule(found, "tiny_kernels"), 0u);
}

}  // namespace
}  // namespace ringprof

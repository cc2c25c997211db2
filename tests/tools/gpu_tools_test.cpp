// GPU views in the tools, over a trace whose numbers are known by
// construction: the occupancy calculation for hand-worked launch
// configurations, `ringprof gpu` output exactly, the table's Self GPU / GPU
// total per zone (and NVTX range), the Chrome trace's GPU tracks and launch
// flows, and `ringprof info`'s GPU lines.
#include <gtest/gtest.h>

#include <cstdlib>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support/trace_builder.h"
#include "ringprof/tools/chrome_trace.h"
#include "ringprof/tools/gpu_occupancy.h"
#include "ringprof/tools/gpu_summary.h"
#include "ringprof/tools/op_table.h"
#include "ringprof/tools/trace_info.h"
#include "support/test_support.h"

namespace ringprof {
namespace {

// An A100 (compute capability 8.0) as CUPTI describes it.
GpuDevice a100() {
  GpuDevice d;
  d.id = 0;
  d.name = "NVIDIA A100-SXM4-40GB";
  d.cc_major = 8;
  d.cc_minor = 0;
  d.sm_count = 108;
  d.max_threads_per_block = 1024;
  d.max_warps_per_sm = 64;
  d.max_blocks_per_sm = 32;
  d.regs_per_sm = 65536;
  d.regs_per_block = 65536;
  d.smem_per_sm = 167936;
  d.smem_per_block = 49152;
  d.warp_size = 32;
  return d;
}

GpuActivity launch(int grid, int block, uint32_t regs, uint32_t static_smem, uint32_t dynamic_smem) {
  GpuActivity k;
  k.kind = GpuKind::Kernel;
  k.grid[0] = grid;
  k.grid[1] = k.grid[2] = 1;
  k.block[0] = block;
  k.block[1] = k.block[2] = 1;
  k.registers = regs;
  k.static_smem = static_smem;
  k.dynamic_smem = dynamic_smem;
  return k;
}

TEST(GpuOccupancy, FullOccupancyLimitedByWarps) {
  // 256 threads = 8 warps per block.
  //   warps:     64 warps per SM / 8        = 8 blocks
  //   registers: 32 x 32 = 1024 per warp (a multiple of 256); 65536 / 4 sub-partitions
  //              = 16384 -> 16 warps each, 64 per SM -> 64 / 8 = 8 blocks
  //   shared:    0 + 1 KiB reserved = 1024 -> 167936 / 1024 = 164 blocks
  //   blocks:    32
  // -> 8 blocks x 8 warps = 64 of 64 warps: 100 %. The grid (1024 blocks over
  // 108 SMs, 9.48 each) has more than the 8 that fit, so achieved is 100 % too.
  const Occupancy o = compute_occupancy(a100(), launch(1024, 256, 32, 0, 0));
  ASSERT_TRUE(o.known);
  EXPECT_EQ(o.warps_per_block, 8u);
  EXPECT_EQ(o.blocks_per_sm, 8u);
  EXPECT_STREQ(o.limiter, "warps");  // warps and registers tie at 8; warps is checked first
  EXPECT_DOUBLE_EQ(o.theoretical, 1.0);
  EXPECT_NEAR(o.grid_blocks_per_sm, 1024.0 / 108, 1e-12);
  EXPECT_DOUBLE_EQ(o.achieved, 1.0);
  EXPECT_DOUBLE_EQ(o.sm_efficiency, 1.0);
}

TEST(GpuOccupancy, SharedMemoryLimitAndASmallGrid) {
  // 128 threads = 4 warps per block.
  //   warps:     64 / 4 = 16 blocks
  //   registers: 64 x 32 = 2048 per warp; 16384 / 2048 = 8 warps per sub-partition,
  //              32 per SM -> 32 / 4 = 8 blocks
  //   shared:    16384 + 8192 + 1024 reserved = 25600 (a multiple of 128);
  //              167936 / 25600 = 6.56 -> 6 blocks       <- the limit
  // -> 6 x 4 = 24 of 64 warps: 37.5 %. But the grid has 64 blocks for 108 SMs:
  // 0.593 blocks per SM on average, so achieved = 0.593 x 4 / 64 = 3.7 % and
  // only 59.3 % of the SMs get any work.
  const Occupancy o = compute_occupancy(a100(), launch(64, 128, 64, 16384, 8192));
  EXPECT_EQ(o.blocks_per_sm, 6u);
  EXPECT_STREQ(o.limiter, "shared memory");
  EXPECT_DOUBLE_EQ(o.theoretical, 0.375);
  EXPECT_NEAR(o.achieved, 64.0 / 108 * 4 / 64, 1e-12);
  EXPECT_NEAR(o.sm_efficiency, 64.0 / 108, 1e-12);
}

TEST(GpuOccupancy, RegisterLimitWithAllocationGranularity) {
  // 1024 threads = 32 warps; 40 registers: 40 x 32 = 1280 per warp, rounded
  // up to 1536 (units of 256). 16384 / 1536 = 10 warps per sub-partition, 40
  // per SM -> 40 / 32 = 1 block = 32 warps: 50 %. Without the rounding it
  // would be 12 warps per sub-partition, still 1 block: the granularity
  // matters with 168 registers: 168 x 32 = 5376 -> 5376 (21 x 256); 16384 /
  // 5376 = 3 warps per sub-partition, 12 per SM, and a 512-thread block (16
  // warps) does not fit at all.
  const Occupancy o = compute_occupancy(a100(), launch(4096, 1024, 40, 0, 0));
  EXPECT_EQ(o.blocks_per_sm, 1u);
  EXPECT_STREQ(o.limiter, "registers");
  EXPECT_DOUBLE_EQ(o.theoretical, 0.5);
  const Occupancy none = compute_occupancy(a100(), launch(4096, 512, 168, 0, 0));
  EXPECT_EQ(none.blocks_per_sm, 0u);
  EXPECT_DOUBLE_EQ(none.theoretical, 0.0);
  GpuDevice unknown;
  EXPECT_FALSE(compute_occupancy(unknown, launch(1, 32, 8, 0, 0)).known);
}

// ---- a trace with known GPU numbers ----
//
// Thread "trainer" (tid 100), times in us from the 1 s mark:
//   train_step [1000, 2000]
//     forward  [1100, 1500]
//       matmul_op [1200, 1300]  launches corr 1 at 1210 -> matmul kernel [1220, 1320]   100 us
//       (forward itself)        launches corr 2 at 1400 -> relu kernel   [1410, 1430]    20 us
//                               (the kernel record comes before its launch record)
//     backward [1500, 1900]     cudaMemcpy corr 3 at 1600 -> HtoD copy [1610, 1660]      50 us, 1 MB
//   NVTX range nvtx_block [2050, 2200] launches corr 4 at 2100 -> relu [2110, 2130]        20 us
//   no zone                     launches corr 5 at 2300 -> relu [2310, 2330]              20 us
constexpr uint64_t kBase = 1'000'000'000ull;
constexpr uint64_t us(uint64_t v) { return kBase + v * 1000; }

struct GpuTrace {
  test::TempDir dir;
  std::string path;
};

void write_trace(GpuTrace& t) {
  test::TraceBuilder b(4242, kBase);
  const uint32_t th = b.thread(100, "trainer");
  const uint32_t step = b.location("train_step"), fwd = b.location("forward"), mm = b.location("matmul_op"),
                 bwd = b.location("backward");
  b.begin(th, us(1000), step);
  b.begin(th, us(1100), fwd);
  b.begin(th, us(1200), mm);
  b.end(th, us(1300));
  b.end(th, us(1500));
  b.begin(th, us(1500), bwd);
  b.end(th, us(1900));
  b.end(th, us(2000));
  b.gpu_device(a100());
  const uint32_t launch_name = b.gpu_name("cudaLaunchKernel"), memcpy_name = b.gpu_name("cudaMemcpy"),
                 matmul = b.gpu_name("_Z6matmulPfS_S_i"), relu = b.gpu_name("_Z4reluPf"),
                 nvtx = b.gpu_name("nvtx_block");
  auto api = [&](uint32_t name, uint64_t start, uint64_t end, uint32_t corr) {
    GpuActivity a;
    a.kind = GpuKind::RuntimeApi;
    a.name = name;
    a.start_ns = us(start);
    a.end_ns = us(end);
    a.tid = 100;
    a.correlation = corr;
    b.gpu(a);
  };
  auto kern = [&](uint32_t name, uint64_t start, uint64_t end, uint32_t corr, GpuActivity k) {
    k.name = name;
    k.start_ns = us(start);
    k.end_ns = us(end);
    k.correlation = corr;
    k.stream = 7;
    k.context = 1;
    b.gpu(k);
  };
  api(launch_name, 1210, 1215, 1);
  kern(matmul, 1220, 1320, 1, launch(1024, 256, 32, 0, 0));
  kern(relu, 1410, 1430, 2, launch(64, 128, 64, 16384, 8192));
  api(launch_name, 1400, 1405, 2);
  b.flush();  // one segment ends here; the rest is in the next
  api(memcpy_name, 1600, 1700, 3);
  GpuActivity copy;
  copy.kind = GpuKind::Memcpy;
  copy.sub_kind = static_cast<uint8_t>(GpuCopyKind::HtoD);
  copy.bytes = 1'000'000;
  copy.start_ns = us(1610);
  copy.end_ns = us(1660);
  copy.correlation = 3;
  copy.stream = 7;
  b.gpu(copy);
  GpuActivity range;
  range.kind = GpuKind::Marker;
  range.sub_kind = 1;
  range.name = nvtx;
  range.start_ns = us(2050);
  range.end_ns = us(2200);
  range.tid = 100;
  b.gpu(range);
  api(launch_name, 2100, 2105, 4);
  kern(relu, 2110, 2130, 4, launch(64, 128, 64, 16384, 8192));
  api(launch_name, 2300, 2305, 5);
  kern(relu, 2310, 2330, 5, launch(64, 128, 64, 16384, 8192));
  GpuStats& st = b.gpu_stats();
  st.records = 13;
  st.dropped_records = 7;
  st.refused_buffers = 2;
  st.clock_violations = 1;
  b.flush();
  t.path = t.dir.file("gpu.rpf");
  test::write_file(t.path, b.bytes());
  // Regenerates the golden file (only when the format gains something).
  if (std::getenv("RINGPROF_WRITE_GPU_GOLDEN")) test::write_file(std::string(RINGPROF_TEST_DATA) + "/v1_gpu.rpf", b.bytes());
}

// `ringprof gpu` of the trace above, worked out by hand:
// Window 1000..2330 us = 1330 us. Busy: 100 + 20 + 50 + 20 + 20 = 210 us ->
// 15.79 %. SM efficiency: matmul 100 us x 1 + relu 60 us x 64/108 = 84.7 %;
// achieved occupancy: 100 us x 100 % + 60 us x 3.7 % = 63.9 % (see the
// occupancy tests for the per-kernel figures). 1 MB in 50 us = 20 GB/s.
const char* const kExpectedSummary =
    "Time range: 1330.000 us\n"
    "Devices: 1\n"
    "  pid 4242 GPU 0 \"NVIDIA A100-SXM4-40GB\" (cc 8.0, 108 SMs)\n"
    "    utilization 15.79% (busy 210.000 us), 4 kernels, 160.000 us\n"
    "    SM efficiency (est.) 84.7%, achieved occupancy (est.) 63.9%\n"
    "Kernels: 2\n"
    "  Name                                 Calls  Total (us)  Mean (us)  Min (us)  Max (us)  Blocks/SM  "
    "Occupancy      Grid    Block  Regs  Shared (B)\n"
    "  matmul(float*, float*, float*, int)      1     100.000    100.000   100.000   100.000       9.48     "
    "100.0%  1024x1x1  256x1x1    32           0\n"
    "  relu(float*)                             3      60.000     20.000    20.000    20.000       0.59       "
    "3.7%    64x1x1  128x1x1    64       24576\n"
    "Memcpy: 1 directions\n"
    "  Direction  Count    Bytes  Total (us)   GB/s\n"
    "  HtoD           1  1000000      50.000  20.00\n"
    "Memset: 0 (0 bytes)\n"
    "API calls: 5 runtime, 0 driver; syncs: 0; NVTX ranges: 1\n"
    "Lost: 7 records dropped by CUPTI, 2 buffers refused (pool full), 0 unknown records\n"
    "Clock order violations: 1\n";

TEST(GpuSummaryTest, OutputIsExact) {
  GpuTrace t;
  write_trace(t);
  TraceReader reader({t.path});
  const GpuSummary s = compute_gpu_summary(reader, {});
  EXPECT_EQ(format_gpu_summary(s), kExpectedSummary);
  EXPECT_FALSE(reader.has_problems());
}

// The same trace as written by format version 1 with GPU tables: files
// written now must stay readable by every later version.
TEST(GpuSummaryTest, GoldenFileStillDecodes) {
  TraceReader reader({std::string(RINGPROF_TEST_DATA) + "/v1_gpu.rpf"});
  EXPECT_EQ(format_gpu_summary(compute_gpu_summary(reader, {})), kExpectedSummary);
  EXPECT_FALSE(reader.has_problems());
}

TEST(GpuSummaryTest, WindowClipsBusyTime) {
  GpuTrace t;
  write_trace(t);
  TraceReader reader({t.path});
  GpuSummaryOptions o;
  o.range.from_ns = 1'250'000;  // 2250 us: only the last relu [2310, 2330]
  const GpuSummary s = compute_gpu_summary(reader, o);
  ASSERT_EQ(s.devices.size(), 1u);
  EXPECT_EQ(s.range_ns, 80'000u);
  EXPECT_EQ(s.devices[0].busy_ns, 20'000u);
  EXPECT_EQ(s.devices[0].kernels, 1u);
}

TEST(GpuTableTest, SelfGpuAndGpuTotalPerZone) {
  GpuTrace t;
  write_trace(t);
  TraceReader reader({t.path});
  const TableResult r = compute_table(reader, TableOptions{});
  ASSERT_TRUE(r.has_gpu);
  std::map<std::string, std::pair<uint64_t, uint64_t>> gpu;  // name -> (self, total) in us
  for (const TableRow& row : r.rows) gpu[row.name] = {row.gpu_self_ns / 1000, row.gpu_total_ns / 1000};
  EXPECT_EQ(gpu["matmul_op"], std::make_pair(uint64_t{100}, uint64_t{100}));
  EXPECT_EQ(gpu["forward"], std::make_pair(uint64_t{20}, uint64_t{120}));
  EXPECT_EQ(gpu["backward"], std::make_pair(uint64_t{50}, uint64_t{50}));
  EXPECT_EQ(gpu["train_step"], std::make_pair(uint64_t{0}, uint64_t{170}));
  EXPECT_EQ(gpu["nvtx_block"], std::make_pair(uint64_t{20}, uint64_t{20}));
  EXPECT_EQ(r.sum_gpu_ns, 210'000u);
  EXPECT_EQ(r.gpu_outside_zones_ns, 20'000u);
  const std::string text = format_table(r, TableFormat::Text);
  EXPECT_NE(text.find("Self GPU (us)"), std::string::npos) << text;
  EXPECT_NE(text.find("GPU time total: 210.000 us; outside any zone: 20.000 us"), std::string::npos) << text;
  const std::string csv = format_table(r, TableFormat::Csv);
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "name,calls,total_us,total_pct,self_us,self_pct,avg_us,min_us,max_us,self_gpu_us,gpu_total_us");
  EXPECT_NE(csv.find("\nforward,1,400.000,"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",20.000,120.000\n"), std::string::npos) << csv;
}

TEST(GpuTableTest, NoGpuColumnsWithoutGpuRecords) {
  test::TempDir dir;
  test::TraceBuilder b;
  const uint32_t th = b.thread(1, "main");
  b.begin(th, us(1), b.location("z"));
  b.end(th, us(2));
  b.flush();
  test::write_file(dir.file("cpu.rpf"), b.bytes());
  TraceReader reader({dir.file("cpu.rpf")});
  const TableResult r = compute_table(reader, TableOptions{});
  EXPECT_FALSE(r.has_gpu);
  EXPECT_EQ(format_table(r, TableFormat::Text).find("GPU"), std::string::npos);
}

TEST(GpuChromeTraceTest, TracksArgsAndLaunchFlows) {
  GpuTrace t;
  write_trace(t);
  TraceReader reader({t.path});
  std::ostringstream out;
  write_chrome_trace(reader, ChromeTraceOptions{}, out);
  const nlohmann::json doc = nlohmann::json::parse(out.str());
  std::map<std::string, int> names;
  std::map<uint64_t, std::vector<std::string>> flows;  // id -> phases
  const nlohmann::json* matmul = nullptr;
  const nlohmann::json* copy = nullptr;
  for (const auto& e : doc["traceEvents"]) {
    if (e["ph"] == "M" && e["name"] == "thread_name") ++names[e["args"]["name"].get<std::string>()];
    if (e.value("cat", "") == "gpu_flow") flows[e["id"].get<uint64_t>()].push_back(e["ph"].get<std::string>());
    if (e["ph"] == "X" && e["name"] == "matmul(float*, float*, float*, int)") matmul = &e;
    if (e["ph"] == "X" && e["name"] == "Memcpy HtoD") copy = &e;
  }
  EXPECT_EQ(names["GPU 0 stream 7"], 1);
  EXPECT_EQ(names["NVTX (thread 100)"], 1);
  ASSERT_NE(matmul, nullptr);
  EXPECT_EQ((*matmul)["dur"].get<double>(), 100.0);
  EXPECT_EQ((*matmul)["args"]["grid"], "1024x1x1");
  EXPECT_EQ((*matmul)["args"]["block"], "256x1x1");
  EXPECT_EQ((*matmul)["args"]["registers_per_thread"], 32);
  EXPECT_EQ((*matmul)["args"]["est_achieved_occupancy_pct"].get<double>(), 100.0);
  EXPECT_EQ((*matmul)["args"]["occupancy_limited_by"], "warps");
  ASSERT_NE(copy, nullptr);
  EXPECT_EQ((*copy)["args"]["bytes"], 1000000);
  EXPECT_EQ((*copy)["args"]["bandwidth_gb_per_s"].get<double>(), 20.0);
  // Every launch (corr 1..5) has its arrow: "s" at the API call, "f" at the work.
  ASSERT_EQ(flows.size(), 5u);
  for (const auto& [id, phases] : flows) {
    EXPECT_EQ(id >> 32, 4242u);
    std::vector<std::string> sorted = phases;
    std::sort(sorted.begin(), sorted.end());
    EXPECT_EQ(sorted, (std::vector<std::string>{"f", "s"})) << "flow " << (id & 0xffffffff);
  }
}

TEST(GpuInfoTest, CountsDevicesAndLosses) {
  GpuTrace t;
  write_trace(t);
  TraceReader reader({t.path});
  const TraceInfo info = collect_info(reader);
  EXPECT_EQ(info.gpu_records, 11u);  // 4 kernels, 1 copy, 5 API calls, 1 NVTX range
  EXPECT_EQ(info.gpu_by_kind[static_cast<size_t>(GpuKind::Kernel)], 4u);
  EXPECT_EQ(info.gpu_stats.clock_violations, 1u);
  const std::string text = format_info(info);
  EXPECT_NE(text.find("GPU records: 11\n  kernel: 4\n  memcpy: 1\n  runtime_api: 5\n  marker: 1\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("GPU device: pid 4242 GPU 0 \"NVIDIA A100-SXM4-40GB\" (cc 8.0, 108 SMs)"), std::string::npos);
  EXPECT_NE(text.find("GPU lost: 7 records dropped by CUPTI, 2 buffers refused (pool full), 0 unknown records; "
                      "clock order violations: 1"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("Time range: 1001000.000 .. 1002330.000 us"), std::string::npos) << text;
}

TEST(GpuCliTest, GpuCommand) {
  GpuTrace t;
  write_trace(t);
  const auto r = test::run_command(std::string(RINGPROF_CLI) + " gpu --top 1 " + test::shell_quote(t.path));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("Kernels: 1\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Clock order violations: 1"), std::string::npos) << r.out;
  const auto bad = test::run_command(std::string(RINGPROF_CLI) + " gpu --sort x " + test::shell_quote(t.path));
  EXPECT_EQ(bad.exit_code, 1);
}

}  // namespace
}  // namespace ringprof

// Template kernels (cuDNN's, CUTLASS's) have names of thousands of characters:
// the text table cuts them to --name-width, so the other columns stay on screen.
namespace ringprof {

TEST(GpuSummaryTest, LongKernelNamesAreCutToTheNameWidth) {
  GpuSummary s;
  GpuKernelRow k;
  k.name = "void cutlass::Kernel<" + std::string(300, 'T') + ">(Params)";
  k.calls = 3;
  k.total_ns = k.min_ns = k.max_ns = 3000;
  s.kernels.push_back(k);
  const std::string cut = format_gpu_summary(s);
  const std::string row = cut.substr(cut.find("  void cutlass"));
  const std::string shown = "void cutlass::Kernel<" + std::string(kGpuNameWidth - 3 - 21, 'T') + "...";
  EXPECT_EQ(row.substr(2, kGpuNameWidth), shown);
  EXPECT_EQ(cut.find("(Params)"), std::string::npos);
  EXPECT_LT(row.find('\n'), kGpuNameWidth + 120) << "the row stays about a screen wide";
  const std::string whole = format_gpu_summary(s, 0);
  EXPECT_NE(whole.find(k.name), std::string::npos);
  EXPECT_NE(format_gpu_summary(s, 40).find(k.name.substr(0, 37) + "..."), std::string::npos);
}

}  // namespace ringprof

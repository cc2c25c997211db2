// `ringprof ranks` on a large synthetic job: how long reading and analysing
// it takes, and how far it raises the process's peak RSS (VmHWM, reset
// through /proc/self/clear_refs before it) — which should grow with the
// number of ranks, not with the size of each rank's trace.
//
// The job (tests/support/trace_builder.h), written once to a temporary
// directory, one directory per rank: RINGPROF_BENCH_JOB_RANKS ranks (default
// 64) of RINGPROF_BENCH_JOB_EVENTS events each (default 1 million). A step is
// a step mark, a train_step zone around 100 operator zones, a gloo:all_reduce
// zone, and on the GPU 100 kernels and an NCCL all-reduce; rank 5 spends
// 200 µs more per step in one operator. Segments of about 65536 events.
// Measured with one worker and with one per hardware thread.
// RINGPROF_BENCH_JOB_DIR=PATH writes the job there and keeps it (to time the
// CLI on it).
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "bench_main.h"
#include "ringprof/tools/rank_report.h"
#include "ringprof/tools/trace_reader.h"
#include "support/trace_builder.h"

namespace {

using namespace ringprof;

uint64_t env_or(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  return v ? std::strtoull(v, nullptr, 10) : fallback;
}
const uint64_t kRanks = env_or("RINGPROF_BENCH_JOB_RANKS", 64);
const uint64_t kEvents = env_or("RINGPROF_BENCH_JOB_EVENTS", 1'000'000);

void write_rank(const std::string& dir, uint32_t rank) {
  test::TraceBuilder b(1000 + rank, 1'000'000'000ull);
  b.rank(static_cast<int32_t>(rank), static_cast<int32_t>(kRanks), "scale-job");
  const uint32_t th = b.thread(1000 + rank, "trainer");
  const uint32_t step_loc = b.location("train_step"), reduce = b.location("gloo:all_reduce");
  uint32_t ops[100];
  for (int i = 0; i < 100; ++i) ops[i] = b.location("aten::op" + std::to_string(i));
  const uint32_t gemm = b.gpu_name("sm90_gemm_bf16"), nccl = b.gpu_name("ncclDevKernel_AllReduce_Sum_bf16_RING_LL");
  uint64_t t = 2'000'000'000ull, events = 0, since_flush = 0, step = 0;
  for (; events < kEvents; ++step) {
    b.step(th, t, step);
    b.begin(th, t, step_loc);
    uint64_t u = t;
    for (int i = 0; i < 100; ++i) {
      const uint64_t len = 2'000 + (rank == 5 && i == 42 ? 200'000 : 0);
      b.begin(th, u, ops[i]);
      b.end(th, u + len);
      GpuActivity k;
      k.kind = GpuKind::Kernel;
      k.name = gemm;
      k.start_ns = u + 5'000;
      k.end_ns = u + 6'500;
      b.gpu(k);
      u += len + 100;
    }
    const uint64_t meet = t + 600'000;  // every rank's step ends together
    b.begin(th, u, reduce);
    b.end(th, meet);
    GpuActivity c;
    c.kind = GpuKind::Kernel;
    c.name = nccl;
    c.start_ns = u + 10'000;
    c.end_ns = meet;
    b.gpu(c);
    b.end(th, meet + 1'000);
    t = meet + 2'000;
    events += 205;
    since_flush += 205;
    if (since_flush >= 65536) {
      b.flush();
      since_flush = 0;
    }
  }
  b.step(th, t, step);  // ends the last step
  b.flush();
  const std::string sub = dir + "/rank" + std::to_string(rank);
  std::filesystem::create_directories(sub);
  std::ofstream(sub + "/ringprof-" + std::to_string(1000 + rank) + "-1-000000.rpf", std::ios::binary)
      .write(reinterpret_cast<const char*>(b.bytes().data()), static_cast<std::streamsize>(b.bytes().size()));
}

const std::string& job() {
  static const std::string dir = [] {
    const char* keep = std::getenv("RINGPROF_BENCH_JOB_DIR");
    const std::string d =
        keep ? std::string(keep)
             : (std::filesystem::temp_directory_path() / ("ringprof-job-bench-" + std::to_string(getpid()))).string();
    for (uint32_t r = 0; r < kRanks; ++r) write_rank(d, r);
    return d;
  }();
  return dir;
}

void analyse(benchmark::State& state, unsigned threads, const std::string& label) {
  const std::string& dir = job();
  const bench::PeakRss peak;
  size_t stragglers = 0;
  RanksOptions options;
  options.threads = threads;
  for (auto _ : state) {
    TraceReader reader({dir});
    const RanksReport report = analyse_ranks(reader, options);
    stragglers = report.stragglers.size();
    benchmark::DoNotOptimize(format_ranks(report, RanksFormat::Json, false));
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * kRanks * kEvents));
  bench::report_figure("ranks: " + label + " peak RSS growth", peak.growth_mib(), "MiB");
  bench::report_figure("ranks: stragglers found (1 expected)", double(stragglers), "");
}

void BM_RanksOneWorker(benchmark::State& state) { analyse(state, 1, "1 worker"); }
BENCHMARK(BM_RanksOneWorker)->Unit(benchmark::kMillisecond)->Iterations(1)->UseRealTime();

void BM_RanksAllWorkers(benchmark::State& state) {
  analyse(state, std::max(1u, std::thread::hardware_concurrency()), "all workers");
  if (!std::getenv("RINGPROF_BENCH_JOB_DIR")) std::filesystem::remove_all(job());
}
BENCHMARK(BM_RanksAllWorkers)->Unit(benchmark::kMillisecond)->Iterations(1)->UseRealTime();

[[maybe_unused]] const bool registered = [] {
  bench::register_ratio({"ranks: all workers time / 1 worker time", "BM_RanksAllWorkers/iterations:1/real_time",
                         "BM_RanksOneWorker/iterations:1/real_time", 0});
  return true;
}();

}  // namespace

// The always-on level's steady-state cost on the demo's workload, against
// recording off, in one run (docs/performance.md's overhead figure; target <= 1%).
//
// One iteration is one request as examples/demo.cpp's workers handle it: a
// handle_request zone around parse, compute (three layer zones) and
// serialize, a flow end and a counter, with the demo's amounts of real work
// (spin loops, ~15-20 us in all), plus the dispatcher's step() and a
// RINGPROF_ZONE_DETAIL zone that only a detailed window would record.
//
//   BM_DemoRequest/on:0  set_mode(Off): events are not recorded (the hot
//                        path is the not-recording one)
//   BM_DemoRequest/on:1  set_mode(AlwaysOn) into the rolling-file sink (zstd
//                        3) in a temporary directory
//   BM_DemoRequestCoarse the same request with its three per-layer zones
//                        written RINGPROF_ZONE_DETAIL: 11 events and 4 gaps
//                        between blocks of work at the always-on level
//                        instead of 17 events and 6 gaps (see
//                        clock_cost_bench.cpp for why gaps are what cost)
// Both run inside one recording session, the drainer running throughout as
// in production.
// Times are the benchmark thread's CPU time; the drainer's and the sink's CPU
// (on another core) is reported beside it per request. Run with
// --benchmark_enable_random_interleaving=true so both variants see the same
// machine conditions.
#include <benchmark/benchmark.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#include <atomic>
#include <filesystem>
#include <string>

#include "bench_main.h"
#include "ringprof/ringprof.h"

namespace {

std::atomic<uint64_t> g_sink{0};

uint64_t spin(int iterations) {
  uint64_t x = 1469598103934665603ull;
  for (int i = 0; i < iterations; ++i) x = (x ^ static_cast<uint64_t>(i)) * 1099511628211ull;
  return x;
}

void parse(int size) {
  RINGPROF_ZONE("parse");
  g_sink += spin(2000 + size * 10);
}

void compute(int size) {
  RINGPROF_ZONE("compute");
  for (int layer = 0; layer < 3; ++layer) {
    RINGPROF_ZONE("layer");
    g_sink += spin(4000 + size * 20);
  }
}

// The same, with the per-layer zones kept for detailed windows.
void compute_coarse(int size) {
  RINGPROF_ZONE("compute");
  for (int layer = 0; layer < 3; ++layer) {
    RINGPROF_ZONE_DETAIL("layer");
    g_sink += spin(4000 + size * 20);
  }
}

void serialize(int size) {
  RINGPROF_ZONE("serialize");
  g_sink += spin(1500);
  RINGPROF_COUNTER("bytes_out", size * 64);
}

template <bool kCoarse>
void request(uint64_t id) {
  ringprof::step();
  const int size = static_cast<int>(id * 13 % 50);
  RINGPROF_ZONE("handle_request");
  ringprof::flow_end(id);
  RINGPROF_ZONE_DETAIL("request_detail");
  parse(size);
  if constexpr (kCoarse) {
    compute_coarse(size);
  } else {
    compute(size);
  }
  serialize(size);
}

uint64_t cpu_ns(int who) {
  rusage u{};
  getrusage(who, &u);
  auto ns = [](const timeval& t) { return static_cast<uint64_t>(t.tv_sec) * 1000000000ull + t.tv_usec * 1000ull; };
  return ns(u.ru_utime) + ns(u.ru_stime);
}

// One recording session for the whole run, as in production: the levels
// switch at run time, so "off" is set_mode(Off) (the recording path is then
// exactly the not-recording one) and the drainer never restarts.
struct Session {
  Session() {
    char tmpl[] = "/tmp/ringprof-bench-XXXXXX";
    dir = mkdtemp(tmpl);
    ringprof::Config c = ringprof::config_from_env();  // RINGPROF_* may vary the setup
    c.dir = dir;
    c.max_bytes = 64ull << 20;
    c.ops.mode = ringprof::Level::AlwaysOn;
    ringprof::start(c);
  }
  ~Session() {
    ringprof::stop();
    std::filesystem::remove_all(dir);
  }
  std::string dir;
};

template <bool kCoarse>
void BM_DemoRequest(benchmark::State& state) {
  static Session session;
  const bool on = state.range(0) != 0;
  ringprof::set_mode(on ? ringprof::Level::AlwaysOn : ringprof::Level::Off);
  const uint64_t process_before = cpu_ns(RUSAGE_SELF), thread_before = cpu_ns(RUSAGE_THREAD);
  const ringprof::RecorderStats before = ringprof::recorder_stats();
  uint64_t id = 0;
  for (auto _ : state) request<kCoarse>(++id);
  // Everything else the process spent meanwhile: the drainer and the sink.
  const uint64_t background = (cpu_ns(RUSAGE_SELF) - process_before) - (cpu_ns(RUSAGE_THREAD) - thread_before);
  state.counters["drainer_ns_per_request"] =
      benchmark::Counter(static_cast<double>(background) / static_cast<double>(state.iterations()));
  const ringprof::RecorderStats after = ringprof::recorder_stats();
  state.counters["dropped"] =
      static_cast<double>(after.dropped_ring + after.dropped_io - before.dropped_ring - before.dropped_io);
}
BENCHMARK(BM_DemoRequest<false>)->Name("BM_DemoRequest")->ArgName("on")->Arg(0)->Arg(1);
BENCHMARK(BM_DemoRequest<true>)->Name("BM_DemoRequestCoarse")->ArgName("on")->Arg(0)->Arg(1);

const bool registered = [] {
  ringprof::bench::register_ratio({"demo request: always_on / off (CPU of the app thread)", "BM_DemoRequest/on:1",
                                   "BM_DemoRequest/on:0", 1.01});
  ringprof::bench::register_ratio({"demo request, per-layer zones detailed-only: always_on / off",
                                   "BM_DemoRequestCoarse/on:1", "BM_DemoRequestCoarse/on:0", 1.01});
  return true;
}();

}  // namespace

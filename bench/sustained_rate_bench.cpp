// Sustained rates: threads that record zones paced to a steady rate for a
// while, with default settings (rolling files in a temporary directory,
// zstd 3, the stack sampler and GPU tracing off; RINGPROF_* variables apply,
// RINGPROF_RING_BYTES say, to try other settings), then stop() and
// recorder_stats(). What matters is whether the drainer keeps up: events
// dropped on full rings, and what reading them costs the drainer.
//
//   BM_SustainedRate/M/T  T threads, each recording M million events per
//                         second (zones: a begin and an end each), for
//                         RINGPROF_BENCH_SECONDS (default 1) seconds;
//                         RINGPROF_BENCH_KEEP=1 keeps the recordings.
//
// Each thread paces itself against the clock and spins when it is ahead, so
// it keeps a core busy the whole time, as a hot service thread does.
// Counters per case:
//   dropped_pct      events lost on full rings ÷ events recorded, in %
//   drainer_cpu_pct  the drainer thread's CPU time ÷ wall time, in % of a core
//   drainer_ns_ev    the drainer's CPU time per event written, in ns
//   writer_cpu_pct   the same for the writer thread (encoding, zstd, files)
//   writer_ns_ev
// The case fails itself when written + dropped differs from recorded: every
// event is either in the files or counted.
#include <benchmark/benchmark.h>
#include <stdlib.h>
#include <time.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "bench_main.h"
#include "ringprof/ringprof.h"

namespace {

uint64_t now_ns() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

double seconds_per_case() {
  const char* s = getenv("RINGPROF_BENCH_SECONDS");
  const double v = s ? std::atof(s) : 1.0;
  return v > 0 ? v : 1.0;
}

// RINGPROF_BENCH_KEEP=1 keeps each case's recording (its path is printed),
// to see where drops fell: `ringprof info` / `ringprof convert` on it.
bool keep_files() {
  const char* s = getenv("RINGPROF_BENCH_KEEP");
  return s && *s && std::strcmp(s, "0") != 0;
}

// A ringprof thread's CPU time so far (ns), from /proc, by its name
// ("ringprof-drain" reads the rings, "ringprof-write" encodes and writes).
// 0 when it cannot be found.
uint64_t thread_cpu_ns(const std::string& thread_name) {
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream comm(task.path() / "comm");
    std::string name;
    std::getline(comm, name);
    if (name != thread_name) continue;
    std::ifstream stat(task.path() / "schedstat");  // on-CPU ns, wait ns, slices
    uint64_t on_cpu = 0;
    stat >> on_cpu;
    return on_cpu;
  }
  return 0;
}

// Records zones at `events_per_second` for `ns`, spinning when ahead.
// Returns the events recorded (two per zone).
uint64_t paced_zones(uint64_t events_per_second, uint64_t ns) {
  const uint64_t total = static_cast<uint64_t>(static_cast<double>(events_per_second) * static_cast<double>(ns) / 1e9);
  const uint64_t t0 = now_ns();
  uint64_t emitted = 0;
  while (emitted + 2 <= total) {
    const uint64_t elapsed = now_ns() - t0;
    uint64_t due = static_cast<uint64_t>(static_cast<double>(events_per_second) * static_cast<double>(elapsed) / 1e9);
    if (due > total) due = total;
    while (emitted + 2 <= due) {
      RINGPROF_ZONE("paced");
      emitted += 2;
    }
  }
  return emitted;
}

void BM_SustainedRate(benchmark::State& state) {
  const uint64_t rate = static_cast<uint64_t>(state.range(0)) * 1000000ull;
  const int threads = static_cast<int>(state.range(1));
  const uint64_t ns = static_cast<uint64_t>(seconds_per_case() * 1e9);
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("ringprof-sustained-" + std::to_string(getpid()));
  for (auto _ : state) {
    std::filesystem::remove_all(dir);
    ringprof::Config c = ringprof::config_from_env();  // the defaults unless RINGPROF_* says otherwise, but for these
    c.dir = dir.string();
    c.sample_hz = 0;
    c.gpu = false;
    if (!ringprof::start(c)) {
      state.SkipWithError("start() failed");
      return;
    }
    std::atomic<uint64_t> recorded{0};
    const uint64_t cpu0 = thread_cpu_ns("ringprof-drain"), wcpu0 = thread_cpu_ns("ringprof-write");
    const uint64_t t0 = now_ns();
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t) workers.emplace_back([&] { recorded += paced_zones(rate, ns); });
    for (auto& w : workers) w.join();
    const uint64_t wall = now_ns() - t0;
    const uint64_t cpu = thread_cpu_ns("ringprof-drain") - cpu0;
    const uint64_t wcpu = thread_cpu_ns("ringprof-write") - wcpu0;
    ringprof::stop();
    const ringprof::RecorderStats st = ringprof::recorder_stats();
    if (keep_files()) {
      std::filesystem::path kept = dir;
      kept += "-M" + std::to_string(state.range(0)) + "-T" + std::to_string(threads);
      std::filesystem::remove_all(kept);
      std::filesystem::rename(dir, kept);
      std::fprintf(stderr, "kept %s\n", kept.c_str());
    }
    std::filesystem::remove_all(dir);
    const uint64_t n = recorded.load();
    if (st.events_written + st.dropped_ring + st.dropped_io != n) {
      state.SkipWithError(("written " + std::to_string(st.events_written) + " + dropped " +
                           std::to_string(st.dropped_ring + st.dropped_io) + " != recorded " + std::to_string(n))
                              .c_str());
      return;
    }
    const double dropped_pct = 100.0 * static_cast<double>(st.dropped_ring + st.dropped_io) / static_cast<double>(n);
    state.counters["dropped_pct"] = dropped_pct;
    state.counters["drainer_cpu_pct"] = 100.0 * static_cast<double>(cpu) / static_cast<double>(wall);
    state.counters["drainer_ns_ev"] =
        st.events_written ? static_cast<double>(cpu) / static_cast<double>(st.events_written) : 0.0;
    state.counters["writer_cpu_pct"] = 100.0 * static_cast<double>(wcpu) / static_cast<double>(wall);
    state.counters["writer_ns_ev"] =
        st.events_written ? static_cast<double>(wcpu) / static_cast<double>(st.events_written) : 0.0;
    ringprof::bench::report_figure("dropped at " + std::to_string(state.range(0)) + " M/s x " +
                                       std::to_string(threads) + " thread(s)",
                                   dropped_pct, "%");
  }
}
BENCHMARK(BM_SustainedRate)
    ->ArgNames({"M", "T"})
    ->Args({1, 1})
    ->Args({2, 1})
    ->Args({3, 1})
    ->Args({5, 1})
    ->Args({10, 1})
    ->Args({20, 1})
    ->Args({1, 2})
    ->Args({2, 2})
    ->Args({5, 2})
    ->Args({10, 2})
    ->Args({20, 2})
    ->Iterations(1)
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

}  // namespace

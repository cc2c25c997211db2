// What ringprof's own threads cost the process: the drainer (reading rings,
// interning, batching) and the writer (encoding, compressing, writing the
// files), as recorder_stats() counts their CPU, per event recorded.
//
// BM_BackgroundCost/zones_per_s:R/even:E — one thread records R zones a
//   second (two events each) for 5 seconds, into the files a default
//   configuration writes (a temporary directory; the CPU sampler off, so only
//   the events count). E = 0: in bursts of R/1000 zones at the start of every
//   millisecond, sleeping the rest of it (5 k to 5 M zones a second: 10 k to
//   10 M events). E = 1: one zone every 1/R s, the thread waiting on the
//   clock between them (spinning: a sleep is too coarse below 100 µs), so
//   the rings fill as slowly as the rate allows. Figures: drainer, writer
//   and their sum in ns per event, and bytes on disk per event.
// BM_HostCopyFloor/record_bytes:B/sleep_ms:S — what this host charges for
//   the data alone, for comparison with the drainer in the same run: one
//   thread writes B-byte records at 2 M a second (the 1 M zones/s row's
//   events) in bursts at the start of every millisecond into a 2 MiB ring,
//   and another wakes every S ms and copies what is there into a 2 MiB
//   buffer, as the drainer copies rings into its batch. Figure: the reader's
//   CPU per record, its wake-ups included (S = 1 to 20 ms for 32-byte
//   records: the slope gives the cost of one wake-up). No naming, no clock,
//   no encoding: a floor under the drainer's share, which moves with the
//   host's speed as the figures do.
// BM_IdleCost/sampler:S — a recording started with the default configuration
//   and nothing recorded for 5 seconds, with the CPU sampler and the heap
//   sampler off (S = 0) or at their defaults (S = 1: 99 Hz, 512 KiB): the
//   drainer's and the writer's CPU over the first 5 s (starting included),
//   per second after the first, and from start to stop (stopping included).
//   A second start in this process: the library's code and the samplers'
//   signal are warm from the first.
// BM_IdleFreshProcess/sampler:S — the same first 5 s in a process of its own
//   (ringprof_bench_idle_child, linked to libringprof.so), whose start
//   touches everything for the first time, as an application's does; 5 runs.
//
// All of them measure elapsed time by design (paced workloads and idle
// ones), so they sleep; they are benchmarks, never tests.
#include <benchmark/benchmark.h>

#include <time.h>
#include <unistd.h>

#include <cstdio>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "bench_main.h"
#include "draining/thread_cpu.h"
#include "ringprof/ringprof.h"

namespace {

using ringprof::bench::report_figure;

std::string fresh_dir(const char* what) {
  const auto d =
      std::filesystem::temp_directory_path() / (std::string("ringprof-") + what + "-" + std::to_string(getpid()));
  std::filesystem::remove_all(d);
  return d.string();
}

uint64_t dir_bytes(const std::string& d) {
  uint64_t n = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(d))
    if (e.is_regular_file()) n += e.file_size();
  return n;
}

ringprof::Config config_for(const std::string& dir) {
  ringprof::Config c;
  c.dir = dir;
  c.sample_hz = 0;
  c.detailed_sample_hz = 0;
  c.gpu = false;
  c.heap_interval = 0;
  return c;
}

void add_ns(timespec* t, long ns) {
  t->tv_nsec += ns;
  while (t->tv_nsec >= 1000000000L) {
    t->tv_nsec -= 1000000000L;
    ++t->tv_sec;
  }
}

void record_in_bursts(int64_t zones_per_s, int millis) {
  const int64_t per_ms = zones_per_s / 1000;
  timespec next{};
  clock_gettime(CLOCK_MONOTONIC, &next);
  for (int ms = 0; ms < millis; ++ms) {
    for (int64_t i = 0; i < per_ms; ++i) {
      RINGPROF_ZONE("paced");
      benchmark::ClobberMemory();
    }
    add_ns(&next, 1000000);
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, nullptr);
  }
}

void record_evenly(int64_t zones_per_s, int millis) {
  const uint64_t start = ringprof::internal::monotonic_ns();
  const int64_t zones = zones_per_s * millis / 1000;
  for (int64_t i = 0; i < zones; ++i) {
    // Zone i is due i/R s after the start: a late one does not shift the rest.
    const uint64_t due = start + static_cast<uint64_t>(i) * 1000000000ull / static_cast<uint64_t>(zones_per_s);
    while (ringprof::internal::monotonic_ns() < due) {
    }
    RINGPROF_ZONE("paced");
    benchmark::ClobberMemory();
  }
}

void BM_BackgroundCost(benchmark::State& state) {
  constexpr int kMillis = 5000;
  const bool even = state.range(1) != 0;
  for (auto _ : state) {
    const std::string dir = fresh_dir("background");
    if (!ringprof::start(config_for(dir))) {
      state.SkipWithError("ringprof did not start");
      return;
    }
    if (even) {
      record_evenly(state.range(0), kMillis);
    } else {
      record_in_bursts(state.range(0), kMillis);
    }
    ringprof::stop();
    const ringprof::RecorderStats s = ringprof::recorder_stats();
    const double events = static_cast<double>(s.events_written);
    const uint64_t bytes = dir_bytes(dir);
    std::filesystem::remove_all(dir);
    if (events == 0 || s.dropped_io != 0) {
      state.SkipWithError("nothing was written, or events were lost on the way to the files");
      return;
    }
    const std::string rate = std::to_string(state.range(0)) + (even ? " (even)" : "");
    // A ring that overflows before the drainer comes drops what does not fit
    // and grows (RINGPROF_RING_MAX_BYTES): at 10 M events a second the first
    // 512 KiB ring lasts 1.6 ms, and a busy machine may keep the drainer off
    // its core longer. Said beside the figures rather than hidden.
    if (s.dropped_ring != 0)
      report_figure("background at " + rate + " zones/s: events dropped in the rings",
                    static_cast<double>(s.dropped_ring), "");
    report_figure("background at " + rate + " zones/s: drainer ns per event", s.drainer_cpu_ns / events, "ns");
    report_figure("background at " + rate + " zones/s: writer ns per event", s.writer_cpu_ns / events, "ns");
    report_figure("background at " + rate + " zones/s: drainer + writer ns per event",
                  (s.drainer_cpu_ns + s.writer_cpu_ns) / events, "ns");
    report_figure("background at " + rate + " zones/s: bytes on disk per event", bytes / events, "B");
  }
}
BENCHMARK(BM_BackgroundCost)
    ->ArgNames({"zones_per_s", "even"})
    ->Args({5000, 0})
    ->Args({10000, 0})
    ->Args({100000, 0})
    ->Args({1000000, 0})
    ->Args({5000000, 0})
    ->Args({10000, 1})
    ->Args({100000, 1})
    ->Args({1000000, 1})
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

template <size_t Bytes>
struct Record {
  uint64_t words[Bytes / 8];
};

// The reader's CPU per record copied; negative when the ring overflowed.
template <size_t Bytes>
double copy_floor_ns(int sleep_ms, int millis) {
  static_assert(Bytes == 16 || Bytes == 32);
  constexpr size_t kSlots = (size_t{2} << 20) / Bytes;  // a power of two
  constexpr int kPerMs = 2000;
  std::vector<Record<Bytes>> ring(kSlots), copy(kSlots);
  std::atomic<uint64_t> head{0}, tail{0};
  std::atomic<bool> done{false};
  uint64_t reader_ns = 0, copied = 0;
  std::thread reader([&] {
    const uint64_t start = ringprof::internal::thread_cpu_ns();
    uint64_t t = 0;
    timespec due{};  // wakes every sleep_ms, however long its copy took
    clock_gettime(CLOCK_MONOTONIC, &due);
    for (;;) {
      const bool last = done.load(std::memory_order_acquire);
      const uint64_t h = head.load(std::memory_order_acquire);
      for (; t < h; ++t) copy[t & (kSlots - 1)] = ring[t & (kSlots - 1)];
      benchmark::DoNotOptimize(copy.data());
      benchmark::ClobberMemory();
      tail.store(t, std::memory_order_release);
      if (last) break;
      add_ns(&due, sleep_ms * 1000000L);
      clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &due, nullptr);
    }
    reader_ns = ringprof::internal::thread_cpu_ns() - start;
    copied = t;
  });
  bool overflowed = false;
  uint64_t h = 0;
  timespec next{};
  clock_gettime(CLOCK_MONOTONIC, &next);
  for (int ms = 0; ms < millis; ++ms) {
    for (int i = 0; i < kPerMs; ++i) {
      if (h - tail.load(std::memory_order_acquire) == kSlots) {
        overflowed = true;
        continue;
      }
      Record<Bytes>& r = ring[h & (kSlots - 1)];
      for (size_t w = 0; w < Bytes / 8; ++w) r.words[w] = h + w;
      head.store(++h, std::memory_order_release);
    }
    add_ns(&next, 1000000);
    clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, nullptr);
  }
  done.store(true, std::memory_order_release);
  reader.join();
  if (overflowed || copied == 0) return -1;
  return static_cast<double>(reader_ns) / static_cast<double>(copied);
}

void BM_HostCopyFloor(benchmark::State& state) {
  const auto bytes = state.range(0);
  const auto sleep_ms = static_cast<int>(state.range(1));
  for (auto _ : state) {
    if (bytes != 16 && bytes != 32) {
      state.SkipWithError("records of 16 or 32 bytes only");
      return;
    }
    const double ns = bytes == 16 ? copy_floor_ns<16>(sleep_ms, 2000) : copy_floor_ns<32>(sleep_ms, 2000);
    if (ns < 0) {
      state.SkipWithError("the reader fell a whole ring behind");
      return;
    }
    report_figure("host copy floor: " + std::to_string(bytes) + "-byte records, reader every " +
                      std::to_string(sleep_ms) + " ms: ns per record",
                  ns, "ns");
  }
}
BENCHMARK(BM_HostCopyFloor)
    ->ArgNames({"record_bytes", "sleep_ms"})
    ->Args({32, 1})
    ->Args({32, 2})
    ->Args({32, 5})
    ->Args({32, 10})
    ->Args({32, 20})
    ->Args({16, 10})
    ->Iterations(1)
    ->Unit(benchmark::kMillisecond);

void BM_IdleCost(benchmark::State& state) {
  const bool samplers = state.range(0) != 0;
  for (auto _ : state) {
    const std::string dir = fresh_dir("idle");
    ringprof::Config config = config_for(dir);
    if (samplers) {
      const ringprof::Config defaults;
      config.sample_hz = defaults.sample_hz;
      config.detailed_sample_hz = defaults.detailed_sample_hz;
      config.heap_interval = defaults.heap_interval;
    }
    if (!ringprof::start(config)) {
      state.SkipWithError("ringprof did not start");
      return;
    }
    auto cpu = [] {
      const ringprof::RecorderStats s = ringprof::recorder_stats();
      return static_cast<double>(s.drainer_cpu_ns + s.writer_cpu_ns) / 1e6;
    };
    std::this_thread::sleep_for(std::chrono::seconds(1));
    const double after_1s = cpu();
    std::this_thread::sleep_for(std::chrono::seconds(4));
    const double after_5s = cpu();
    ringprof::stop();
    const ringprof::RecorderStats s = ringprof::recorder_stats();
    std::filesystem::remove_all(dir);
    const std::string what = samplers ? "idle recording, samplers on" : "idle recording";
    report_figure(what + ": drainer + writer CPU in the first 5 s (start included), ms", after_5s, "ms");
    report_figure(what + ": drainer + writer CPU per second after the first, ms", (after_5s - after_1s) / 4, "ms");
    report_figure(what + ": drainer + writer CPU, start to stop (5 s), ms",
                  static_cast<double>(s.drainer_cpu_ns + s.writer_cpu_ns) / 1e6, "ms");
  }
}
BENCHMARK(BM_IdleCost)->ArgName("sampler")->Arg(0)->Arg(1)->Iterations(1)->Unit(benchmark::kMillisecond);

// The idle child's output: its drainer + writer CPU in ms; negative on failure.
double run_idle_child(const std::string& dir, bool samplers) {
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  const std::string child = std::filesystem::path(self).parent_path() / "ringprof_bench_idle_child";
  const std::string cmd = "'" + child + "' '" + dir + "' " + (samplers ? "1" : "0");
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return -1;
  double ms = -1;
  if (std::fscanf(p, "%lf", &ms) != 1) ms = -1;
  if (pclose(p) != 0) return -1;
  return ms;
}

void BM_IdleFreshProcess(benchmark::State& state) {
  const bool samplers = state.range(0) != 0;
  for (auto _ : state) {
    std::vector<double> runs;
    for (int i = 0; i < 5; ++i) {
      const std::string dir = fresh_dir("idle-child");
      const double ms = run_idle_child(dir, samplers);
      std::filesystem::remove_all(dir);
      if (ms < 0) {
        state.SkipWithError("the idle child failed");
        return;
      }
      runs.push_back(ms);
    }
    std::sort(runs.begin(), runs.end());
    const std::string what = samplers ? "fresh idle process, samplers on" : "fresh idle process";
    report_figure(what + ": drainer + writer CPU in the first 5 s, least of 5 runs, ms", runs.front(), "ms");
    report_figure(what + ": drainer + writer CPU in the first 5 s, median of 5 runs, ms", runs[2], "ms");
    report_figure(what + ": drainer + writer CPU in the first 5 s, most of 5 runs, ms", runs.back(), "ms");
  }
}
BENCHMARK(BM_IdleFreshProcess)->ArgName("sampler")->Arg(0)->Arg(1)->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace

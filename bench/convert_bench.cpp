// `ringprof convert` to Chrome JSON and to Perfetto's protobuf format, the
// same recording in one run: CPU time per event of each, their ratio, the
// bytes each writes per event, and how far each raised the process's peak
// RSS above what it was before converting (VmHWM, reset through
// /proc/self/clear_refs; the writers stream: it should not grow with the
// trace).
//
// The recording is built in memory once (tests/support/trace_builder.h): two
// threads, each a "train_step" zone around three inner zones (forward,
// backward, optimizer_step), every zone with its call site, 100 ns apart.
// RINGPROF_BENCH_CONVERT_EVENTS sets its size (default 2 million events);
// RINGPROF_BENCH_CONVERT_FILE=PATH keeps it there (to time the CLI on it).
// Output goes to a stream that counts bytes and discards them, so the figures
// are the writers' own, not the disk's.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <ostream>
#include <streambuf>
#include <string>

#include "bench_main.h"
#include "ringprof/tools/chrome_trace.h"
#include "ringprof/tools/perfetto_trace.h"
#include "ringprof/tools/trace_reader.h"
#include "support/trace_builder.h"

namespace {

using namespace ringprof;

class CountingBuf final : public std::streambuf {
 public:
  uint64_t bytes = 0;

 protected:
  std::streamsize xsputn(const char*, std::streamsize n) override {
    bytes += static_cast<uint64_t>(n);
    return n;
  }
  int_type overflow(int_type c) override {
    if (c != traits_type::eof()) ++bytes;
    return traits_type::not_eof(c);
  }
};

uint64_t event_count() {
  if (const char* v = std::getenv("RINGPROF_BENCH_CONVERT_EVENTS")) return std::strtoull(v, nullptr, 10);
  return 2'000'000;
}

// The recording's path, written once.
const std::string& recording() {
  static const std::string path = [] {
    const char* keep = std::getenv("RINGPROF_BENCH_CONVERT_FILE");
    const std::string p = keep ? std::string(keep)
                               : (std::filesystem::temp_directory_path() /
                                  ("ringprof-convert-bench-" + std::to_string(getpid()) + ".rpf"))
                                     .string();
    test::TraceBuilder b;
    // Names and call sites as a training loop's zones have them (__FILE__ is
    // the path the compiler was given).
    const uint32_t names[4] = {b.location("train_step", "/src/trainer/train.cpp", 118),
                               b.location("forward", "/src/trainer/model.cpp", 42),
                               b.location("backward", "/src/trainer/model.cpp", 97),
                               b.location("optimizer_step", "/src/trainer/optim.cpp", 12)};
    const uint32_t threads[2] = {b.thread(101, "trainer-0"), b.thread(102, "trainer-1")};
    const uint64_t per_iteration = 8;  // events: iteration begin/end + 3 inner zones
    uint64_t ts = 1'000'000'000;
    for (uint64_t done = 0; done < event_count(); done += 2 * per_iteration) {
      for (uint32_t th : threads) {
        uint64_t t = ts;
        b.begin(th, t += 100, names[0]);
        for (int i = 1; i < 4; ++i) {
          b.begin(th, t += 100, names[i]);
          b.end(th, t += 100);
        }
        b.end(th, t += 100);
      }
      ts += 800;
      if ((done / (2 * per_iteration)) % 4096 == 4095) b.flush();  // segments of 65536 events
    }
    b.flush();
    std::ofstream(p, std::ios::binary).write(reinterpret_cast<const char*>(b.bytes().data()),
                                              static_cast<std::streamsize>(b.bytes().size()));
    return p;
  }();
  return path;
}

uint64_t g_json_bytes = 0;

// Converts the recording with `write` once per iteration; returns the bytes
// written and reports the peak RSS growth under `label`.
template <typename Write>
uint64_t convert_each_iteration(benchmark::State& state, const std::string& label, Write write) {
  const std::string& path = recording();
  const bench::PeakRss peak;
  uint64_t bytes = 0;
  for (auto _ : state) {
    TraceReader reader({path});
    CountingBuf buf;
    std::ostream out(&buf);
    write(reader, out);
    bytes = buf.bytes;
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * event_count()));
  bench::report_figure("convert: " + label + " bytes per event", double(bytes) / double(event_count()), "bytes");
  bench::report_figure("convert: " + label + " peak RSS growth", peak.growth_mib(), "MiB");
  return bytes;
}

void BM_ConvertChrome(benchmark::State& state) {
  g_json_bytes = convert_each_iteration(state, "JSON", [](TraceReader& r, std::ostream& out) {
    write_chrome_trace(r, {}, out);
  });
}
BENCHMARK(BM_ConvertChrome)->Unit(benchmark::kMillisecond)->Iterations(2);

void BM_ConvertPerfetto(benchmark::State& state) {
  const uint64_t bytes = convert_each_iteration(state, "perfetto", [](TraceReader& r, std::ostream& out) {
    write_perfetto_trace(r, {}, out);
  });
  if (g_json_bytes) bench::report_figure("convert: perfetto bytes / JSON bytes", double(bytes) / double(g_json_bytes), "");
  if (!std::getenv("RINGPROF_BENCH_CONVERT_FILE")) std::filesystem::remove(recording());
}
BENCHMARK(BM_ConvertPerfetto)->Unit(benchmark::kMillisecond)->Iterations(2);

[[maybe_unused]] const bool registered = [] {
  bench::register_ratio({"convert: perfetto time / JSON time", "BM_ConvertPerfetto/iterations:2", "BM_ConvertChrome/iterations:2", 0});
  return true;
}();

}  // namespace

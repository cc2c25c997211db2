// The drainer's side: how many events per second one core turns into
// compressed segments, and how many bytes an event costs on disk.
//
// BM_EncodeSegment: SegmentEncoder (columns, deltas, FlatBuffers, zstd) over
//   realistic batches of nested zones on four threads.
// BM_DrainerFlush: the whole drainer path — ring → names → clock → encode →
//   zstd → null sink — timed around flush() after a thread filled its ring.
// BM_DemoBytesPerEvent: the demo's kind of workload (nested zones, counters,
//   flows, steps on several threads) recorded into a memory sink; reports
//   bytes on disk per event and per zone event.
#include <benchmark/benchmark.h>
#include <zstd.h>

#include <time.h>

#include <algorithm>
#include <map>
#include <thread>
#include <vector>

#include "support/service_batch.h"
#include "bench_main.h"
#include "draining/thread_cpu.h"
#include "ringprof/ringprof.h"
#include "ringprof/segment_codec.h"
#include "ringprof/sinks.h"

namespace {

using namespace ringprof;

double thread_cpu_seconds() { return static_cast<double>(internal::thread_cpu_ns()) * 1e-9; }

void BM_EncodeSegment(benchmark::State& state) {
  const test::OwnedBatch s = test::service_batch(65536);
  const Batch b = s.batch();
  SegmentEncoder enc(static_cast<int>(state.range(0)));
  SessionInfo session;
  session.pid = 1;
  enc.start_file(session);
  std::vector<uint8_t> out;
  size_t bytes = 0;
  // CPU time of this thread, as Google Benchmark's items_per_second: a
  // loaded machine delays the encoder but does not make it slower.
  const double t0 = thread_cpu_seconds();
  for (auto _ : state) {
    out.clear();
    bytes = enc.encode(b, out);
    benchmark::DoNotOptimize(out.data());
  }
  const double took = thread_cpu_seconds() - t0;
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * b.events.size()));
  // The best repetition's rate: what the code can do when the machine lets
  // it (the figure a budget checks; the table's median is the one to quote).
  static std::map<int64_t, double> best;
  const double rate = static_cast<double>(state.iterations() * b.events.size()) / took / 1e6;
  best[state.range(0)] = std::max(best[state.range(0)], rate);
  ringprof::bench::report_figure("encode: M events/s (zstd " + std::to_string(state.range(0)) + ", best repetition)",
                                 best[state.range(0)], "M/s");
  state.counters["bytes_per_event"] = static_cast<double>(bytes) / static_cast<double>(b.events.size());
  ringprof::bench::report_figure("encode: bytes per zone event (zstd " + std::to_string(state.range(0)) + ")",
                                 static_cast<double>(bytes) / static_cast<double>(b.events.size()), "B");
}
BENCHMARK(BM_EncodeSegment)->Arg(1)->Arg(3);

// The yardstick for the encoder: zstd 3 over the same batch's raw 32-byte
// events, with no columns and no FlatBuffers. The ratio of the two, taken in
// one run, moves with the encoder's own code and hardly with the machine.
void BM_ZstdRawEvents(benchmark::State& state) {
  const test::OwnedBatch s = test::service_batch(65536);
  const size_t raw = s.events.size() * sizeof(Event);
  std::vector<char> out(ZSTD_compressBound(raw));
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  for (auto _ : state) {
    const size_t n = ZSTD_compressCCtx(cctx, out.data(), out.size(), s.events.data(), raw, 3);
    benchmark::DoNotOptimize(n);
  }
  ZSTD_freeCCtx(cctx);
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * s.events.size()));
}
BENCHMARK(BM_ZstdRawEvents);

const bool kRatios = [] {
  ringprof::bench::register_ratio(
      {"encode (zstd 3) / zstd 3 of the raw events", "BM_EncodeSegment/3", "BM_ZstdRawEvents", 0});
  return true;
}();

void BM_DrainerFlush(benchmark::State& state) {
  Config c;
  c.ring_bytes = 64u << 20;
  c.drain_interval_ms = 1000;  // only flush() drains
  c.flush_interval_ms = 600000;
  c.batch_events = 65536;
  start(c, make_null_sink(3));
  constexpr int kZones = 250000;  // 500k events per round
  for (auto _ : state) {
    state.PauseTiming();
    for (int i = 0; i < kZones; ++i) {
      RINGPROF_ZONE("drained");
    }
    state.ResumeTiming();
    flush();
  }
  stop();
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations()) * kZones * 2);
}
// Real time: flush() waits while the drainer thread does the work.
BENCHMARK(BM_DrainerFlush)->UseRealTime()->Unit(benchmark::kMillisecond);

uint64_t spin(int n) {
  uint64_t x = 1;
  for (int i = 0; i < n; ++i) x = x * 6364136223846793005ull + 1442695040888963407ull;
  return x;
}

void BM_DemoBytesPerEvent(benchmark::State& state) {
  for (auto _ : state) {
    auto sink = std::make_shared<MemorySink>(3);
    Config c;
    c.ring_bytes = 16u << 20;
    // Events only: the figure is bytes per recorded event, and samples (with
    // their stack and module tables) are counted apart from events.
    c.sample_hz = 0;
    c.gpu = false;
    start(c, sink);
    std::vector<std::thread> workers;
    std::atomic<uint64_t> out{0};
    for (int w = 0; w < 3; ++w) {
      workers.emplace_back([&, w] {
        set_thread_name("worker-" + std::to_string(w));
        for (int r = 0; r < 20000; ++r) {
          RINGPROF_ZONE("handle_request");
          flow_end(static_cast<uint64_t>(w) * 100000 + r);
          {
            RINGPROF_ZONE("parse");
            out += spin(200);
          }
          {
            RINGPROF_ZONE("compute");
            for (int l = 0; l < 3; ++l) {
              RINGPROF_ZONE("layer");
              out += spin(400);
            }
          }
          RINGPROF_COUNTER("bytes_out", r % 50);
        }
      });
    }
    for (int r = 0; r < 2000; ++r) step();
    for (auto& t : workers) t.join();
    stop();
    const RecorderStats st = recorder_stats();
    const double bytes = static_cast<double>(sink->bytes().size());
    state.counters["bytes_per_event"] = bytes / static_cast<double>(st.events_written);
    ringprof::bench::report_figure("demo workload: bytes on disk per event", bytes / static_cast<double>(st.events_written), "B");
    ringprof::bench::report_figure("demo workload: events recorded", static_cast<double>(st.events_written), "");
  }
}
BENCHMARK(BM_DemoBytesPerEvent)->Iterations(1)->Unit(benchmark::kMillisecond);

}  // namespace

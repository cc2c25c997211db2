// What one clock read costs between blocks of real work, and why events cost
// more there than in a tight loop.
//
// Each iteration runs 16 blocks of a latency-bound dependency chain (the kind
// of work the demo and the always-on benchmark do: 1000 multiplies, ~1.3 us)
// and, between blocks, one of:
//
//   BM_WorkBlocks/none          nothing: the floor
//   BM_WorkBlocks/rdtsc         one TSC read
//   BM_WorkBlocks/rdtsc_x3      three TSC reads back to back
//   BM_WorkBlocks/lfence        an LFENCE: no later instruction starts until
//                               every earlier one has finished
//   BM_WorkBlocks/event         one ringprof instant (clock read + ring store)
//   BM_WorkBlocks/event_x3      three instants back to back
//
// Out-of-order execution normally starts the next block's chain while the
// previous block's chain is still finishing. A clock read that behaves like a
// fence (RDTSC on the CPUs measured here costs what an LFENCE costs) ends
// that overlap once per gap between blocks,
// however many events are recorded in the gap. The ratios printed at the end
// show it: rdtsc ≈ lfence, and three events cost little more than one. So an
// instrumented program pays per *gap* between blocks of work, not per event;
// the overhead guidance in docs/performance.md follows from this.
#include <benchmark/benchmark.h>
#include <x86intrin.h>

#include <atomic>
#include <memory>

#include "bench_main.h"
#include "discard_sink.h"
#include "ringprof/ringprof.h"

namespace {

using ringprof::bench::DiscardSink;

volatile uint64_t g_out;

// A dependency chain of multiplies: each step needs the previous one.
uint64_t chain(int steps) {
  uint64_t x = 1469598103934665603ull;
  for (int i = 0; i < steps; ++i) x = (x ^ static_cast<uint64_t>(i)) * 1099511628211ull;
  return x;
}

enum Gap { kNone, kRdtsc, kRdtscX3, kLfence, kEvent, kEventX3 };

// Starts the one recording session of the run (first call); false after
// reporting the error when it could not start.
bool BM_WorkBlocksStarted(benchmark::State& state) {
  static const bool started = [] {
    ringprof::Config c;
    c.gpu = false;
    c.sample_hz = 0;
    c.ring_bytes = 4u << 20;  // 128k events: three per gap never fill it between drains
    return ringprof::start(c, std::make_shared<DiscardSink>());
  }();
  if (!started) state.SkipWithError("recording did not start");
  return started;
}

void BM_WorkBlocks(benchmark::State& state) {
  if (!BM_WorkBlocksStarted(state)) return;
  const auto gap = static_cast<Gap>(state.range(0));
  const ringprof::RecorderStats before = ringprof::recorder_stats();
  for (auto _ : state) {
    for (int block = 0; block < 16; ++block) {
      g_out = chain(1000);
      switch (gap) {
        case kNone: break;
        case kRdtsc: g_out = __rdtsc(); break;
        case kRdtscX3:
          g_out = __rdtsc();
          g_out = __rdtsc();
          g_out = __rdtsc();
          break;
        case kLfence: _mm_lfence(); break;
        case kEvent: RINGPROF_INSTANT("gap"); break;
        case kEventX3:
          RINGPROF_INSTANT("gap");
          RINGPROF_INSTANT("gap");
          RINGPROF_INSTANT("gap");
          break;
      }
    }
  }
  // A dropped event skips its clock read and would flatter the figure. At
  // up to 48 events per ~20 us a 128k-event ring drained every 10 ms never
  // fills; the check makes sure.
  const ringprof::RecorderStats after = ringprof::recorder_stats();
  if (after.dropped_ring != before.dropped_ring) state.SkipWithError("events were dropped");
}
BENCHMARK(BM_WorkBlocks)->ArgName("gap")->Arg(kNone)->Arg(kRdtsc)->Arg(kRdtscX3)->Arg(kLfence)->Arg(kEvent)->Arg(kEventX3);

// The guidance in docs/performance.md, checked: blocks of about 10 us (7500 multiplies)
// with three events in each gap (a zone's end, the next begin, a counter),
// against the same blocks with nothing between them.
void BM_LongWorkBlocks(benchmark::State& state) {
  if (!BM_WorkBlocksStarted(state)) return;
  const bool events = state.range(0) != 0;
  for (auto _ : state) {
    for (int block = 0; block < 4; ++block) {
      g_out = chain(7500);
      if (events) {
        RINGPROF_INSTANT("gap");
        RINGPROF_INSTANT("gap");
        RINGPROF_INSTANT("gap");
      }
    }
  }
}
BENCHMARK(BM_LongWorkBlocks)->ArgName("events")->Arg(0)->Arg(1);

const bool registered = [] {
  using ringprof::bench::register_ratio;
  register_ratio({"16 work blocks + a TSC read in each gap / no gap work", "BM_WorkBlocks/gap:1", "BM_WorkBlocks/gap:0"});
  register_ratio({"16 work blocks + an LFENCE in each gap / no gap work", "BM_WorkBlocks/gap:3", "BM_WorkBlocks/gap:0"});
  register_ratio({"16 work blocks + three TSC reads in each gap / one", "BM_WorkBlocks/gap:2", "BM_WorkBlocks/gap:1"});
  register_ratio({"16 work blocks + one event in each gap / no gap work", "BM_WorkBlocks/gap:4", "BM_WorkBlocks/gap:0"});
  register_ratio({"16 work blocks + three events in each gap / one", "BM_WorkBlocks/gap:5", "BM_WorkBlocks/gap:4"});
  register_ratio({"4 blocks of ~10 us + three events in each gap / none", "BM_LongWorkBlocks/events:1",
                  "BM_LongWorkBlocks/events:0", 1.01});
  return true;
}();

}  // namespace

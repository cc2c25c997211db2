// The heap sampler's statistics and bookkeeping, through the recording path
// into files (ringprof/heap.h), with blocks reported by hand at made-up
// addresses: how often each size is picked against 1 - exp(-size /
// interval), every picked block's free matched once, none of the others'.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>

#include "ringprof/ringprof.h"
#include "ringprof/sinks.h"
#include "ringprof/tools/trace_info.h"
#include "ringprof/tools/trace_reader.h"
#include "support/recording_config.h"
#include "support/test_support.h"

using namespace ringprof;

namespace {

constexpr uint64_t kInterval = 64 << 10;

Config heap_config(const std::string& dir) {
  Config c = test::quiet_file_config(dir);
  c.ring_bytes = 8u << 20;
  c.heap_interval = kInterval;
  return c;
}

struct Counts {
  std::map<uint64_t, uint64_t> picked;     // size -> HeapAlloc events
  std::map<uint64_t, uint64_t> freed;      // address -> HeapFree events
  std::map<uint64_t, uint64_t> picked_at;  // address -> HeapAlloc events
  uint64_t stacks = 0, intervals_right = 0;
};

Counts read_back(const std::string& dir) {
  Counts c;
  TraceReader reader({dir});
  struct Visitor : SegmentVisitor {
    Counts* c;
    void segment(const SegmentView& v) override {
      const auto& ev = v.segment.events;
      for (size_t i = 0; i < ev.size(); ++i) {
        const DecodedEvent& e = ev[i];
        if (e.kind == EventKind::HeapAlloc) {
          ++c->picked[e.value];
          ++c->picked_at[e.address];
          if (i + 1 < ev.size() && ev[i + 1].kind == EventKind::HeapStack && ev[i + 1].loc != 0) {
            ++c->stacks;
            if (ev[i + 1].value == kInterval) ++c->intervals_right;
          }
        } else if (e.kind == EventKind::HeapFree) {
          ++c->freed[e.address];
        }
      }
    }
  } visitor;
  visitor.c = &c;
  reader.read(visitor);
  EXPECT_TRUE(reader.problems().empty());
  return c;
}

// Three sizes, each reported and freed 20,000 times, interleaved. Picks per
// size are binomial(20000, 1 - exp(-size / 64 KiB)); the bound is 5 standard
// deviations (a false failure about once in 3.5 million runs per size).
TEST(HeapSampler, EachSizeIsPickedWithItsPoissonProbabilityAndItsFreeMatched) {
  test::TempDir dir;
  const Config config = heap_config(dir.path());
  ASSERT_TRUE(start(config, make_rolling_file_sink(config)));
  const uint64_t sizes[] = {4 << 10, 64 << 10, 256 << 10};
  constexpr int kRounds = 20000;
  for (int i = 0; i < kRounds; ++i) {
    for (int s = 0; s < 3; ++s) {
      // Distinct addresses, 256-byte apart (the filter's granule).
      const auto* p = reinterpret_cast<const void*>(static_cast<uintptr_t>(0x10000000ull + (3ull * i + s) * 256));
      heap_alloc(p, sizes[s]);
      heap_free(p);
    }
    if (i % 1000 == 999) flush();
  }
  stop();
  {
    TraceReader counted({dir.path()});
    const TraceInfo info = collect_info(counted);
    ASSERT_EQ(info.dropped_ring + info.dropped_io, 0u);
  }
  const Counts c = read_back(dir.path());
  uint64_t total = 0;
  for (uint64_t size : sizes) {
    const double p = -std::expm1(-static_cast<double>(size) / kInterval);
    const double mean = kRounds * p, sd = std::sqrt(kRounds * p * (1 - p));
    const auto got = static_cast<double>(c.picked.count(size) ? c.picked.at(size) : 0);
    EXPECT_NEAR(got, mean, 5 * sd) << size << " bytes: p = " << p;
    total += static_cast<uint64_t>(got);
  }
  // Every pick carries its stack and the interval it was picked at.
  EXPECT_EQ(c.stacks, total);
  EXPECT_EQ(c.intervals_right, total);
  // Each picked block's free is recorded once, and no other free is.
  EXPECT_EQ(c.freed.size(), c.picked_at.size());
  for (const auto& [address, n] : c.picked_at) {
    EXPECT_EQ(n, 1u);
    EXPECT_EQ(c.freed.count(address) ? c.freed.at(address) : 0, 1u) << std::hex << address;
  }
}

// Off: nothing is picked, and a free finds nothing to match.
TEST(HeapSampler, IntervalZeroPicksNothing) {
  test::TempDir dir;
  Config config = heap_config(dir.path());
  config.heap_interval = 0;
  ASSERT_TRUE(start(config, make_rolling_file_sink(config)));
  EXPECT_EQ(heap_sampling_interval(), 0u);
  RINGPROF_INSTANT("files to read");
  for (int i = 0; i < 1000; ++i) {
    const auto* p = reinterpret_cast<const void*>(static_cast<uintptr_t>(0x20000000ull + i * 256ull));
    heap_alloc(p, 1 << 20);
    heap_free(p);
  }
  stop();
  const Counts c = read_back(dir.path());
  EXPECT_TRUE(c.picked.empty());
  EXPECT_TRUE(c.freed.empty());
}

}  // namespace

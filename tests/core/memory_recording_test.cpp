// Memory events through the recording path into files: nothing at the
// always-on level, every call at the detailed level, exactly (addresses,
// sizes, pools), and as many events in the files as the recorder says it
// wrote. Also the pool table (idempotent by content, full table → "heap").
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <string>
#include <vector>

#include "ringprof/ringprof.h"
#include "ringprof/tools/trace_reader.h"
#include "support/recording_config.h"
#include "support/test_support.h"

using namespace ringprof;

namespace {

Config file_config(const std::string& dir) { return test::quiet_file_config(dir); }

struct MemoryEvent {
  EventKind kind;
  std::string pool;
  uint64_t address;
  uint64_t size;
};

struct ReadBack {
  std::vector<MemoryEvent> memory;
  uint64_t events = 0;  // every event decoded
  size_t problems = 0;
};

ReadBack read_back(const std::string& dir) {
  ReadBack out;
  TraceReader reader({dir});
  reader.read([&](const SegmentView& v) {
    for (const DecodedEvent& e : v.segment.events) {
      ++out.events;
      if (kind_is_exact_memory(e.kind))
        out.memory.push_back({e.kind, v.process.location_name(e.loc), e.address, e.value});
    }
  });
  out.problems = reader.problems().size();
  return out;
}

TEST(MemoryPools, SameNameSameIndex) {
  EXPECT_EQ(memory_pool("heap"), 0);
  const uint16_t a = memory_pool("pool.a");
  EXPECT_GT(a, 0);
  static const char copy[] = "pool.a";  // another pointer, the same content
  EXPECT_EQ(memory_pool(copy), a);
  const uint16_t b = ringprof_memory_pool("pool.b");
  EXPECT_NE(b, a);
  EXPECT_EQ(memory_pool("pool.b"), b);
  EXPECT_EQ(memory_pool(nullptr), 0);
}

TEST(MemoryRecording, OnlyDetailedLevelRecordsEveryCallExactly) {
  test::TempDir dir;
  ASSERT_TRUE(start(file_config(dir.path())));
  const uint16_t arena = memory_pool("arena");
  constexpr int kN = 1000;
  auto burst = [&](uint64_t base) {
    for (int i = 0; i < kN; ++i) {
      const auto* p = reinterpret_cast<const void*>(base + uint64_t(i) * 64);
      if (i % 2 == 0) {
        memory_alloc(p, size_t(i) + 1);
        memory_free(p);
      } else {
        ringprof_memory_alloc(p, size_t(i) * 3, arena);
        ringprof_memory_free(p, size_t(i) * 3, arena);
      }
    }
  };
  set_mode(Level::AlwaysOn);
  burst(0x100000);  // nothing
  set_mode(Level::Detailed);
  ASSERT_TRUE(detailed());
  burst(0x200000);  // all of it
  set_mode(Level::AlwaysOn);
  burst(0x300000);  // nothing
  stop();
  const RecorderStats stats = recorder_stats();
  burst(0x400000);  // not recording: nothing, and no crash

  const ReadBack r = read_back(dir.path());
  EXPECT_EQ(r.problems, 0u);
  EXPECT_EQ(stats.dropped_ring, 0u);
  EXPECT_EQ(r.events, stats.events_written);  // written = decoded
  ASSERT_EQ(r.memory.size(), size_t{2 * kN});
  for (int i = 0; i < kN; ++i) {
    SCOPED_TRACE(i);
    const MemoryEvent& a = r.memory[2 * i];
    const MemoryEvent& f = r.memory[2 * i + 1];
    const uint64_t addr = 0x200000 + uint64_t(i) * 64;
    EXPECT_EQ(a.kind, EventKind::Alloc);
    EXPECT_EQ(f.kind, EventKind::Free);
    EXPECT_EQ(a.address, addr);
    EXPECT_EQ(f.address, addr);
    EXPECT_EQ(a.pool, i % 2 == 0 ? "heap" : "arena");
    EXPECT_EQ(f.pool, a.pool);
    EXPECT_EQ(a.size, i % 2 == 0 ? uint64_t(i) + 1 : uint64_t(i) * 3);
    EXPECT_EQ(f.size, i % 2 == 0 ? 0u : uint64_t(i) * 3);
  }
}

// Last: it fills the process-wide table (ctest runs each test alone anyway).
TEST(MemoryPoolTable, FullTableFallsBackToHeap) {
  static std::vector<std::string> names;  // static storage for the test's names
  names.reserve(kMaxMemoryPools + 8);
  std::vector<uint16_t> got;
  for (size_t i = 0; i < kMaxMemoryPools + 4; ++i) {
    names.push_back("full." + std::to_string(i));
    got.push_back(memory_pool(names.back().c_str()));
  }
  // Dense indices up to the last slot, then "heap" for every name past it.
  ASSERT_GT(got[0], 0);
  size_t i = 1;
  for (; i < got.size() && got[i] != 0; ++i) EXPECT_EQ(got[i], got[i - 1] + 1);
  EXPECT_EQ(got[i - 1], kMaxMemoryPools - 1);
  for (; i < got.size(); ++i) EXPECT_EQ(got[i], 0);
  EXPECT_EQ(memory_pool("full.0"), got[0]);  // earlier ones keep their index
}

}  // namespace

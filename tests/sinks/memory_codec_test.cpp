// Memory events in the file format: Alloc/Free keep their pool (a location),
// size and address exactly through encode → decode, across runs of several
// threads and address deltas in both directions; a segment without memory
// events has no address column; a damaged address column is refused.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "support/owned_batch.h"
#include "support/frame_stream.h"
#include "ringprof/format.h"
#include "ringprof/segment_codec.h"

namespace ringprof {
namespace {

SessionInfo session() {
  SessionInfo s;
  s.pid = 91;
  s.command_line = {"./alloc"};
  return s;
}

Event ev(EventKind k, uint64_t ts, uint32_t loc, uint64_t address, uint64_t size) {
  Event e{};
  e.ts = ts;
  e.kind = k;
  e.loc = loc;
  e.p0 = address;
  e.p1 = size;
  return e;
}

struct Expected {
  EventKind kind;
  uint32_t thread;
  uint64_t ts;
  uint32_t pool;
  uint64_t address;
  uint64_t size;
};

TEST(MemoryCodec, AllocFreeRoundTripExactly) {
  test::OwnedBatch b;
  b.locations.push_back(Location{1, "heap", "", "", 0});
  b.locations.push_back(Location{2, "cuda", "", "", 0});
  b.locations.push_back(Location{3, "step", "train", "train.cpp", 12});
  b.threads.push_back(ThreadInfo{1, 500, "main", 1, 0, 0, 0});
  b.threads.push_back(ThreadInfo{2, 501, "worker", 1, 0, 0, 0});
  const std::vector<Expected> want = {
      // thread 1: a zone around allocations; addresses go up, down, and to
      // the top of the address space (large deltas both ways)
      {EventKind::ZoneBegin, 1, 1000, 3, 0, 0},
      {EventKind::Alloc, 1, 1100, 1, 0x7f00'0000'1000ull, 64},
      {EventKind::Alloc, 1, 1200, 1, 0x7f00'0000'0800ull, 4096},
      {EventKind::Alloc, 1, 1300, 2, 0xffff'ffff'ffff'f000ull, 1ull << 40},
      {EventKind::Free, 1, 1400, 1, 0x7f00'0000'1000ull, 0},
      {EventKind::Free, 1, 1500, 2, 0xffff'ffff'ffff'f000ull, 1ull << 40},
      {EventKind::ZoneEnd, 1, 1600, 0, 0, 0},
      // thread 2: its own run, address deltas start from 0 again
      {EventKind::Alloc, 2, 1150, 1, 0x10, 1},
      {EventKind::Free, 2, 1250, 1, 0x7f00'0000'0800ull, 4096},
      {EventKind::Alloc, 2, 1350, 2, 0, 0},
  };
  for (const Expected& x : want) b.events.push_back(ev(x.kind, x.ts, x.pool, x.address, x.size));
  b.runs.push_back(EventRun{1, 0, 7});
  b.runs.push_back(EventRun{2, 7, 3});

  SegmentEncoder enc;
  enc.start_file(session());
  std::vector<uint8_t> bytes;
  ASSERT_GT(enc.encode(b.batch(), bytes), 0u);
  test::DecodedStream s;
  ASSERT_TRUE(test::decode_stream(bytes, &s));
  ASSERT_EQ(s.segments.size(), 1u);
  const DecodedSegment& seg = s.segments[0];
  ASSERT_EQ(seg.events.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    SCOPED_TRACE(i);
    const DecodedEvent& e = seg.events[i];
    EXPECT_EQ(e.kind, want[i].kind);
    EXPECT_EQ(e.thread_index, want[i].thread);
    EXPECT_EQ(e.ts_ns, want[i].ts);
    const bool memory = kind_is_memory(want[i].kind);
    EXPECT_EQ(e.loc, memory || want[i].kind == EventKind::ZoneBegin ? want[i].pool : 0u);
    EXPECT_EQ(e.address, memory ? want[i].address : 0u);
    EXPECT_EQ(e.value, memory ? want[i].size : 0u);
  }
  // The pools are stated as locations of the file, like any other name.
  ASSERT_EQ(seg.locations.size(), 3u);
  std::map<uint32_t, std::string> names;
  for (const Location& l : seg.locations) names[l.id] = l.name;
  EXPECT_EQ(names[1], "heap");
  EXPECT_EQ(names[2], "cuda");
}

TEST(MemoryCodec, NoAddressColumnWithoutMemoryEvents) {
  // A segment of ordinary events must encode byte for byte as before memory
  // events existed: same size as a batch whose events carry stale p0 values.
  test::OwnedBatch b;
  b.locations.push_back(Location{1, "zone", "", "", 0});
  b.threads.push_back(ThreadInfo{1, 500, "main", 1, 0, 0, 0});
  b.events = {ev(EventKind::ZoneBegin, 10, 1, 0, 0), ev(EventKind::ZoneEnd, 20, 0, 0, 0)};
  b.runs.push_back(EventRun{1, 0, 2});
  test::OwnedBatch stale = b;
  stale.events[0].p0 = 0x1234;
  stale.events[1].p0 = 0xdeadbeef;
  std::vector<uint8_t> x, y;
  SegmentEncoder e1, e2;
  e1.start_file(session());
  e2.start_file(session());
  ASSERT_GT(e1.encode(b.batch(), x), 0u);
  ASSERT_GT(e2.encode(stale.batch(), y), 0u);
  EXPECT_EQ(x.size(), y.size());
  test::DecodedStream s;
  ASSERT_TRUE(test::decode_stream(y, &s));
  for (const DecodedEvent& e : s.segments[0].events) EXPECT_EQ(e.address, 0u);
}

TEST(MemoryCodec, ManyAllocationsAcrossSegmentsAndFiles) {
  // Thousands of events, two segments per file, two files: every address and
  // size comes back, and each file states its pool names again.
  SegmentEncoder enc;
  std::vector<std::vector<uint8_t>> files(2);
  std::vector<Expected> want;
  uint64_t ts = 100;
  for (int f = 0; f < 2; ++f) {
    enc.start_file(session());
    for (int seg = 0; seg < 2; ++seg) {
      test::OwnedBatch b;
      b.locations.push_back(Location{1, "heap", "", "", 0});
      b.locations.push_back(Location{2, "arena", "", "", 0});
      b.threads.push_back(ThreadInfo{1, 500, "main", 1, 0, 0, 0});
      const size_t first = want.size();
      for (uint64_t i = 0; i < 2500; ++i) {
        const uint64_t addr = 0x5555'0000'0000ull + ((i * 7919) % 1000) * 48;
        const uint32_t pool = 1 + static_cast<uint32_t>(i % 2);
        const EventKind k = i % 3 == 2 ? EventKind::Free : EventKind::Alloc;
        want.push_back({k, 1, ts += 17, pool, addr, k == EventKind::Free ? (i % 2 ? 0 : i) : i * 16 + 1});
        b.events.push_back(ev(k, want.back().ts, pool, addr, want.back().size));
      }
      b.runs.push_back(EventRun{1, 0, static_cast<uint32_t>(want.size() - first)});
      ASSERT_GT(enc.encode(b.batch(), files[f]), 0u);
    }
  }
  size_t i = 0;
  for (const auto& file : files) {
    test::DecodedStream s;
    ASSERT_TRUE(test::decode_stream(file, &s));
    ASSERT_EQ(s.segments.size(), 2u);
    EXPECT_EQ(s.segments[0].locations.size(), 2u);  // stated once per file
    EXPECT_EQ(s.segments[1].locations.size(), 0u);
    for (const DecodedSegment& seg : s.segments)
      for (const DecodedEvent& e : seg.events) {
        ASSERT_LT(i, want.size());
        ASSERT_EQ(e.kind, want[i].kind) << i;
        ASSERT_EQ(e.ts_ns, want[i].ts) << i;
        ASSERT_EQ(e.loc, want[i].pool) << i;
        ASSERT_EQ(e.address, want[i].address) << i;
        ASSERT_EQ(e.value, want[i].size) << i;
        ++i;
      }
  }
  EXPECT_EQ(i, want.size());
}

}  // namespace
}  // namespace ringprof

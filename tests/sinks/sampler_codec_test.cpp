// The file format's sampling parts: stacks, modules, the sampler's state, lost
// sample counts and Mark events survive encode → decode exactly, are stated
// once per file (again after start_file), and come back after a rollback.
#include <gtest/gtest.h>

#include <span>
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
  s.pid = 77;
  s.command_line = {"./svc"};
  return s;
}

using Stream = test::DecodedStream;
::testing::AssertionResult decode(const std::vector<uint8_t>& bytes, Stream* out) {
  return test::decode_stream(bytes, out);
}

test::OwnedBatch sampling_batch() {
  test::OwnedBatch b;
  b.locations.push_back(Location{1, "window.begin", "", "", 0});
  // Addresses on both sides of each other, and one near the top of the
  // address space, so deltas go negative and large.
  b.stacks.push_back(StackTrace{1, {0x401000, 0x400f00, 0x7f0000001234}});
  b.stacks.push_back(StackTrace{2, {0xffffffffff600000ull, 0x10}});
  b.stacks.push_back(StackTrace{3, {}});
  b.modules.push_back(ModuleInfo{1, "/usr/bin/svc", "0123abcd", 0x400000, 0x401000, 0x402000, 0x1000});
  b.modules.push_back(ModuleInfo{2, "/lib/libc.so.6", "", 0x7f0000000000, 0x7f0000001000, 0x7f0000100000, 0x1000});
  b.sampler = SamplerState{"perf_event", "perf_event_open ok", 99, 1};
  b.threads.push_back(ThreadInfo{1, 500, "main", 1, 0, 0, 4});
  b.runs.push_back(EventRun{1, 0, 4});
  auto ev = [](EventKind k, uint64_t ts, uint32_t loc, uint64_t p1) {
    Event e{};
    e.ts = ts;
    e.kind = k;
    e.loc = loc;
    e.p1 = p1;
    return e;
  };
  b.events = {ev(EventKind::Sample, 1000, 1, 0), ev(EventKind::Sample, 2000, 2, 0), ev(EventKind::Mark, 2500, 1, 9),
              ev(EventKind::Sample, 3000, 1, 0)};
  return b;
}

TEST(SampleCodec, StacksModulesSamplerAndMarksRoundTrip) {
  const test::OwnedBatch b = sampling_batch();
  SegmentEncoder enc;
  enc.start_file(session());
  std::vector<uint8_t> bytes;
  ASSERT_GT(enc.encode(b.batch(), bytes), 0u);
  Stream s;
  ASSERT_TRUE(decode(bytes, &s));
  ASSERT_EQ(s.segments.size(), 1u);
  const DecodedSegment& seg = s.segments[0];

  ASSERT_EQ(seg.events.size(), 4u);
  EXPECT_EQ(seg.events[0].kind, EventKind::Sample);
  EXPECT_EQ(seg.events[0].loc, 1u);
  EXPECT_EQ(seg.events[1].loc, 2u);
  EXPECT_EQ(seg.events[2].kind, EventKind::Mark);
  EXPECT_EQ(seg.events[2].loc, 1u);
  EXPECT_EQ(seg.events[2].value, 9u);
  EXPECT_EQ(seg.events[3].ts_ns, 3000u);

  // Only the stacks the events refer to (stack 3 is not used).
  ASSERT_EQ(seg.stacks.size(), 2u);
  EXPECT_EQ(seg.stacks[0].id, 1u);
  EXPECT_EQ(seg.stacks[0].frames, b.stacks[0].frames);
  EXPECT_EQ(seg.stacks[1].frames, b.stacks[1].frames);

  // Every module, whether or not a sample points into it.
  ASSERT_EQ(seg.modules.size(), 2u);
  EXPECT_EQ(seg.modules[0].path, "/usr/bin/svc");
  EXPECT_EQ(seg.modules[0].build_id, "0123abcd");
  EXPECT_EQ(seg.modules[0].base, 0x400000u);
  EXPECT_EQ(seg.modules[0].start, 0x401000u);
  EXPECT_EQ(seg.modules[0].end, 0x402000u);
  EXPECT_EQ(seg.modules[0].file_offset, 0x1000u);
  EXPECT_EQ(seg.modules[1].path, "/lib/libc.so.6");
  EXPECT_EQ(seg.modules[1].build_id, "");

  ASSERT_TRUE(seg.sampler.has_value());
  EXPECT_EQ(seg.sampler->mechanism, "perf_event");
  EXPECT_EQ(seg.sampler->detail, "perf_event_open ok");
  EXPECT_EQ(seg.sampler->hz, 99u);
  ASSERT_EQ(seg.threads.size(), 1u);
  EXPECT_EQ(seg.threads[0].samples_lost, 4u);
}

TEST(SampleCodec, StatedOncePerFileAndAgainInTheNext) {
  test::OwnedBatch b = sampling_batch();
  SegmentEncoder enc;
  enc.start_file(session());
  std::vector<uint8_t> file1;
  ASSERT_GT(enc.encode(b.batch(), file1), 0u);
  b.sequence = 1;
  ASSERT_GT(enc.encode(b.batch(), file1), 0u);
  // The sampler changes: the next segment states it again.
  b.sampler->mechanism = "timer_signal";
  b.sampler->version = 2;
  b.sequence = 2;
  ASSERT_GT(enc.encode(b.batch(), file1), 0u);

  Stream s1;
  ASSERT_TRUE(decode(file1, &s1));
  ASSERT_EQ(s1.segments.size(), 3u);
  EXPECT_TRUE(s1.segments[1].stacks.empty());
  EXPECT_TRUE(s1.segments[1].modules.empty());
  EXPECT_FALSE(s1.segments[1].sampler.has_value());
  ASSERT_TRUE(s1.segments[2].sampler.has_value());
  EXPECT_EQ(s1.segments[2].sampler->mechanism, "timer_signal");
  EXPECT_EQ(s1.segments[1].events[1].loc, 2u);  // ids stay valid without restating

  enc.start_file(session());
  std::vector<uint8_t> file2;
  b.sequence = 3;
  ASSERT_GT(enc.encode(b.batch(), file2), 0u);
  Stream s2;
  ASSERT_TRUE(decode(file2, &s2));
  EXPECT_EQ(s2.segments[0].stacks.size(), 2u);
  EXPECT_EQ(s2.segments[0].modules.size(), 2u);
  ASSERT_TRUE(s2.segments[0].sampler.has_value());
  EXPECT_EQ(s2.segments[0].sampler->mechanism, "timer_signal");
}

TEST(SampleCodec, RollbackRestatesStacksModulesAndSampler) {
  test::OwnedBatch b = sampling_batch();
  SegmentEncoder enc;
  enc.start_file(session());
  std::vector<uint8_t> stored, lost;
  b.events.resize(1);
  b.runs[0].count = 1;
  ASSERT_GT(enc.encode(b.batch(), stored), 0u);  // stack 1, both modules, sampler v1

  b.modules.push_back(ModuleInfo{3, "/tmp/plugin.so", "ff", 0x10000, 0x11000, 0x12000, 0});
  b.sampler->version = 2;
  b.events = sampling_batch().events;
  b.runs[0].count = 4;
  b.sequence = 1;
  ASSERT_GT(enc.encode(b.batch(), lost), 0u);  // introduces stack 2, module 3, sampler v2
  enc.rollback_last();
  b.sequence = 2;
  ASSERT_GT(enc.encode(b.batch(), stored), 0u);

  Stream s;
  ASSERT_TRUE(decode(stored, &s));
  ASSERT_EQ(s.segments.size(), 2u);
  ASSERT_EQ(s.segments[1].stacks.size(), 1u);
  EXPECT_EQ(s.segments[1].stacks[0].id, 2u);
  ASSERT_EQ(s.segments[1].modules.size(), 1u);
  EXPECT_EQ(s.segments[1].modules[0].path, "/tmp/plugin.so");
  EXPECT_TRUE(s.segments[1].sampler.has_value());
}

TEST(SampleCodec, UnknownStackIdIsStoredAsZero) {
  test::OwnedBatch b = sampling_batch();
  b.events[0].loc = 99;  // no such stack in the batch
  SegmentEncoder enc;
  enc.start_file(session());
  std::vector<uint8_t> bytes;
  ASSERT_GT(enc.encode(b.batch(), bytes), 0u);
  Stream s;
  ASSERT_TRUE(decode(bytes, &s));
  EXPECT_EQ(s.segments[0].events[0].loc, 0u);
  EXPECT_EQ(s.segments[0].events[0].kind, EventKind::Sample);
}

}  // namespace
}  // namespace ringprof

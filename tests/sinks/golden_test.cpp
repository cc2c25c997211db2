// Format compatibility: files written by format version 1 must stay readable
// by every later ringprof. tests/data/v1_all_kinds.rpf was written once by
// this test's own builder (RINGPROF_WRITE_GOLDEN=1 regenerates it, only when
// the format version changes and a new golden file is added beside it); the
// test decodes the committed bytes and checks every event against the
// builder's description, which is independent of the decoder.
#include <gtest/gtest.h>

#include <cstdlib>

#include "support/trace_builder.h"
#include "ringprof/format.h"
#include "ringprof/segment_codec.h"
#include "support/test_support.h"

using namespace ringprof;

namespace {

const std::string kGolden = std::string(RINGPROF_TEST_DATA) + "/v1_all_kinds.rpf";

// Two segments, two threads, every event kind, a rename and drop counts.
std::vector<uint8_t> build_golden() {
  ringprof::testing::TraceBuilder b(777, 5'000'000'000ull);
  const uint32_t main_t = b.thread(100, "main");
  const uint32_t worker = b.thread(101, "worker");
  const uint32_t zone = b.location("forward", "model.cpp", 42);
  const uint32_t tick = b.location("tick");
  const uint32_t depth = b.location("queue_depth");
  const uint32_t req = b.location("request");
  b.step(main_t, 5'000'000'000ull, 0);
  b.begin(main_t, 5'000'000'100ull, zone);
  b.instant(main_t, 5'000'000'150ull, tick);
  b.counter(main_t, 5'000'000'175ull, depth, 3.25);
  b.flow_begin(main_t, 5'000'000'180ull, 9001, req);
  b.end(main_t, 5'000'001'000ull);
  b.flow_step(worker, 5'000'000'900ull, 9001);
  b.flow_end(worker, 5'000'002'000ull, 9001);
  b.drops(worker, 5, 2);
  b.flush();
  b.rename(worker, "worker-renamed");
  b.begin(worker, 5'000'003'000ull, zone);
  b.counter(worker, 5'000'003'500ull, depth, -1.5);
  b.end(worker, 5'000'004'000ull);
  b.flush();
  return b.bytes();
}

struct Flat {
  uint64_t ts;
  EventKind kind;
  uint32_t thread;
  std::string name;
  uint64_t value;
};

}  // namespace

TEST(Golden, Version1FileStillDecodesExactly) {
  if (std::getenv("RINGPROF_WRITE_GOLDEN")) test::write_file(kGolden, build_golden());
  const std::vector<uint8_t> bytes = test::read_file(kGolden);
  ASSERT_FALSE(bytes.empty()) << "missing " << kGolden;

  std::vector<std::string> strings;
  std::vector<Flat> events;
  std::map<uint32_t, std::string> location_names, thread_names;
  uint64_t dropped_ring = 0, dropped_io = 0;
  size_t off = 0;
  int segments = 0;
  std::optional<DecodedProcess> process;
  while (off < bytes.size()) {
    std::string err;
    auto h = format::parse_frame_header({bytes.data() + off, bytes.size() - off}, &err);
    ASSERT_TRUE(h) << err;
    EXPECT_EQ(h->version, 1);
    EXPECT_EQ(h->pid, 777u);
    DecodedSegment seg;
    ASSERT_TRUE(decode_segment(*h, {bytes.data() + off + h->header_size, h->stored_size}, strings, seg, &err)) << err;
    EXPECT_EQ(h->sequence, static_cast<uint64_t>(segments));
    if (segments == 0) process = seg.process;
    for (const Location& l : seg.locations) location_names[l.id] = l.name;
    for (const DecodedThread& t : seg.threads) {
      if (t.has_name) thread_names[t.index] = t.name;
      dropped_ring += t.dropped_ring;
      dropped_io += t.dropped_io;
    }
    for (const DecodedEvent& e : seg.events)
      events.push_back({e.ts_ns, e.kind, e.thread_index, e.loc ? location_names[e.loc] : "", e.value});
    off += h->header_size + h->stored_size;
    ++segments;
  }
  EXPECT_EQ(segments, 2);
  ASSERT_TRUE(process.has_value());
  EXPECT_EQ(process->pid, 777u);
  EXPECT_EQ(process->hostname, "node1");
  EXPECT_EQ(process->command_line, (std::vector<std::string>{"/usr/bin/trainer", "--epochs", "3"}));
  EXPECT_EQ(thread_names[1], "main");
  EXPECT_EQ(thread_names[2], "worker-renamed");
  EXPECT_EQ(dropped_ring, 5u);
  EXPECT_EQ(dropped_io, 2u);

  // Per thread, in recording order; the builder groups a segment's events by thread.
  const std::vector<Flat> expected = {
      {5'000'000'000ull, EventKind::Step, 1, "", 0},
      {5'000'000'100ull, EventKind::ZoneBegin, 1, "forward", 0},
      {5'000'000'150ull, EventKind::Instant, 1, "tick", 0},
      {5'000'000'175ull, EventKind::Counter, 1, "queue_depth", double_bits(3.25)},
      {5'000'000'180ull, EventKind::FlowBegin, 1, "request", 9001},
      {5'000'001'000ull, EventKind::ZoneEnd, 1, "", 0},
      {5'000'000'900ull, EventKind::FlowStep, 2, "", 9001},
      {5'000'002'000ull, EventKind::FlowEnd, 2, "", 9001},
      {5'000'003'000ull, EventKind::ZoneBegin, 2, "forward", 0},
      {5'000'003'500ull, EventKind::Counter, 2, "queue_depth", double_bits(-1.5)},
      {5'000'004'000ull, EventKind::ZoneEnd, 2, "", 0},
  };
  ASSERT_EQ(events.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(events[i].ts, expected[i].ts) << i;
    EXPECT_EQ(events[i].kind, expected[i].kind) << i;
    EXPECT_EQ(events[i].thread, expected[i].thread) << i;
    EXPECT_EQ(events[i].name, expected[i].name) << i;
    EXPECT_EQ(events[i].value, expected[i].value) << i;
  }
}

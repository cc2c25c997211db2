// Format compatibility: files written by format version 1 must stay readable
// by every later ringprof. tests/data/v1_all_kinds.rpf (the first nine kinds,
// as the first files held them) and tests/data/v1_every_kind.rpf (every kind a
// file can hold, samples, marks, memory and zone arguments among them) were
// written once by this test's own builders (RINGPROF_WRITE_GOLDEN=1 writes
// them again, only when the format version changes and new golden files are
// added beside them); the tests decode the committed bytes and check every
// event against the builders' descriptions, which are independent of the
// decoder. A kind the table (ringprof/event.h) lets into files without a case
// in the second file fails Golden.EveryFileKindHasAGoldenCase.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <set>

#include "support/trace_builder.h"
#include "ringprof/format.h"
#include "ringprof/segment_codec.h"
#include "support/test_support.h"

using namespace ringprof;

namespace {

const std::string kGolden = std::string(RINGPROF_TEST_DATA) + "/v1_all_kinds.rpf";

// Two segments, two threads, the first nine kinds, a rename and drop counts.
std::vector<uint8_t> build_golden() {
  ringprof::test::TraceBuilder b(777, 5'000'000'000ull);
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

TEST(Golden, Version1FirstKindsStillDecodeExactly) {
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

namespace {

const std::string kEveryKind = std::string(RINGPROF_TEST_DATA) + "/v1_every_kind.rpf";

// One segment, one thread, every kind a file holds.
std::vector<uint8_t> build_every_kind() {
  ringprof::test::TraceBuilder b(888, 7'000'000'000ull);
  const uint32_t t = b.thread(200, "main");
  const uint32_t zone = b.location("forward", "model.cpp", 42);
  const uint32_t tick = b.location("tick");
  const uint32_t depth = b.location("queue_depth");
  const uint32_t req = b.location("request");
  const uint32_t window = b.location("ringprof.window.start");
  const uint32_t pool = b.location("malloc");
  const uint32_t key = b.location("Input Dims");
  const uint32_t dims = b.location("[[8, 16]]");
  b.sampler("perf_event", 99);
  const uint32_t stack = b.stack({0x401000, 0x402000});
  // A zone's Python stack: one interpreter frame, a location of its own.
  const uint32_t py_stack = b.stack({kInterpreterFrameTag | b.location("train_step", "train.py", 12)});
  b.step(t, 7'000'000'000ull, 3);
  b.mark(t, 7'000'000'010ull, window, 5);
  b.begin(t, 7'000'000'100ull, zone);
  b.zone_stack(t, 7'000'000'105ull, py_stack);
  b.arg(t, 7'000'000'110ull, key, dims);
  b.instant(t, 7'000'000'150ull, tick);
  b.counter(t, 7'000'000'175ull, depth, 2.5);
  b.flow_begin(t, 7'000'000'180ull, 77, req);
  b.flow_step(t, 7'000'000'190ull, 77);
  b.flow_end(t, 7'000'000'195ull, 77);
  b.alloc(t, 7'000'000'200ull, pool, 0x7f0000001000ull, 4096);
  b.sample(t, 7'000'000'250ull, stack);
  b.free(t, 7'000'000'300ull, pool, 0x7f0000001000ull);
  b.async_begin(t, 7'000'000'400ull, 91, req);
  b.async_end(t, 7'000'000'500ull, 91);
  b.heap_alloc(t, 7'000'000'600ull, pool, 0x7f0000200000ull, 1 << 20, stack, 524288);
  b.heap_free(t, 7'000'000'700ull, pool, 0x7f0000200000ull, 1 << 20);
  b.end(t, 7'000'001'000ull);
  b.flush();
  return b.bytes();
}

struct Decoded {
  std::vector<DecodedEvent> events;
  std::map<uint32_t, std::string> names;  // location id -> name
  std::map<uint32_t, std::vector<uint64_t>> stacks;  // stack id -> frames
};

Decoded decode_every_kind() {
  if (std::getenv("RINGPROF_WRITE_GOLDEN")) test::write_file(kEveryKind, build_every_kind());
  const std::vector<uint8_t> bytes = test::read_file(kEveryKind);
  Decoded d;
  std::vector<std::string> strings;
  size_t off = 0;
  while (off < bytes.size()) {
    std::string err;
    auto h = format::parse_frame_header({bytes.data() + off, bytes.size() - off}, &err);
    EXPECT_TRUE(h) << err;
    if (!h) break;
    EXPECT_EQ(h->version, 1);
    DecodedSegment seg;
    EXPECT_TRUE(decode_segment(*h, {bytes.data() + off + h->header_size, h->stored_size}, strings, seg, &err)) << err;
    for (const Location& l : seg.locations) d.names[l.id] = l.name;
    for (const StackTrace& st : seg.stacks) d.stacks[st.id] = st.frames;
    d.events.insert(d.events.end(), seg.events.begin(), seg.events.end());
    off += h->header_size + h->stored_size;
  }
  return d;
}

}  // namespace

TEST(Golden, EveryFileKindDecodesExactly) {
  const Decoded d = decode_every_kind();
  ASSERT_FALSE(d.events.empty()) << "missing " << kEveryKind;
  auto name = [&](uint32_t loc) { return d.names.count(loc) ? d.names.at(loc) : std::string(); };
  struct Want {
    uint64_t ts;
    EventKind kind;
    std::string name;  // of loc (stacks: "" and loc checked apart)
    uint64_t value;
    uint64_t address;
  };
  const std::vector<Want> want = {
      {7'000'000'000ull, EventKind::Step, "", 3, 0},
      {7'000'000'010ull, EventKind::Mark, "ringprof.window.start", 5, 0},
      {7'000'000'100ull, EventKind::ZoneBegin, "forward", 0, 0},
      {7'000'000'105ull, EventKind::ZoneStack, "", 0, 0},
      {7'000'000'110ull, EventKind::ZoneArg, "Input Dims", 0, 0},  // value: the text's location, below
      {7'000'000'150ull, EventKind::Instant, "tick", 0, 0},
      {7'000'000'175ull, EventKind::Counter, "queue_depth", double_bits(2.5), 0},
      {7'000'000'180ull, EventKind::FlowBegin, "request", 77, 0},
      {7'000'000'190ull, EventKind::FlowStep, "", 77, 0},
      {7'000'000'195ull, EventKind::FlowEnd, "", 77, 0},
      {7'000'000'200ull, EventKind::Alloc, "malloc", 4096, 0x7f0000001000ull},
      {7'000'000'250ull, EventKind::Sample, "", 0, 0},
      {7'000'000'300ull, EventKind::Free, "malloc", 0, 0x7f0000001000ull},
      {7'000'000'400ull, EventKind::AsyncBegin, "request", 91, 0},
      {7'000'000'500ull, EventKind::AsyncEnd, "", 91, 0},
      {7'000'000'600ull, EventKind::HeapAlloc, "malloc", 1 << 20, 0x7f0000200000ull},
      {7'000'000'600ull, EventKind::HeapStack, "", 524288, 0},
      {7'000'000'700ull, EventKind::HeapFree, "malloc", 1 << 20, 0x7f0000200000ull},
      {7'000'001'000ull, EventKind::ZoneEnd, "", 0, 0},
  };
  ASSERT_EQ(d.events.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    const DecodedEvent& e = d.events[i];
    EXPECT_EQ(e.ts_ns, want[i].ts) << i;
    EXPECT_EQ(e.kind, want[i].kind) << i;
    EXPECT_EQ(e.thread_index, 1u) << i;
    if (e.kind == EventKind::Sample || e.kind == EventKind::HeapStack) {
      EXPECT_EQ(e.loc, 1u) << "the first stack's id";
    } else if (e.kind == EventKind::ZoneStack) {
      EXPECT_EQ(e.loc, 2u) << "the second stack's id";
      ASSERT_EQ(d.stacks.count(2), 1u);
      ASSERT_EQ(d.stacks.at(2).size(), 1u);
      EXPECT_TRUE(d.stacks.at(2)[0] & kInterpreterFrameTag);
      EXPECT_EQ(name(static_cast<uint32_t>(d.stacks.at(2)[0] & ~kInterpreterFrameTag)), "train_step");
    } else {
      EXPECT_EQ(name(e.loc), want[i].name) << i;
    }
    if (e.kind == EventKind::ZoneArg) {
      EXPECT_EQ(name(static_cast<uint32_t>(e.value)), "[[8, 16]]");
    } else {
      EXPECT_EQ(e.value, want[i].value) << i;
    }
    EXPECT_EQ(e.address, want[i].address) << i;
  }
}

// Every kind the recorder writes to a file has a case in the golden file, so
// a kind added later fails here until a golden file covers it. (None, the
// empty event, is carried by the codec but recorded by nothing:
// segment_round_trip_test keeps it.)
TEST(Golden, EveryFileKindHasAGoldenCase) {
  const Decoded d = decode_every_kind();
  std::set<EventKind> seen;
  for (const DecodedEvent& e : d.events) seen.insert(e.kind);
  for (unsigned k = 0; k < kEventKindCount; ++k) {
    const auto kind = static_cast<EventKind>(k);
    if (event_kind_traits(kind).in_file && kind != EventKind::None) {
      EXPECT_TRUE(seen.count(kind)) << event_kind_name(kind) << " can be in a file but has no golden case";
    } else {
      EXPECT_FALSE(seen.count(kind)) << event_kind_name(kind);
    }
  }
}

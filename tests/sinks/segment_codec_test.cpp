// Segment codec: exact round trips, once-per-file metadata, rollback, and
// corrupt input that must give a clean error (never a crash).
#include <flatbuffers/flatbuffers.h>
#include <gtest/gtest.h>
#include <zstd.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <string>
#include <vector>

#include "support/owned_batch.h"
#include "support/frame_stream.h"
#include "ringprof/format.h"
#include "ringprof/segment_codec.h"
#include "ringprof/sinks.h"

namespace ringprof {
namespace {

// Owns everything a Batch points to, with builders for hand-made events.
struct BatchData : ringprof::testing::OwnedBatch {
  void add_location(std::string name, std::string function, std::string file, uint32_t line) {
    locations.push_back(Location{static_cast<uint32_t>(locations.size() + 1), std::move(name), std::move(function),
                                 std::move(file), line});
  }
  void begin_run(uint32_t thread) {
    runs.push_back(EventRun{thread, static_cast<uint32_t>(events.size()), 0});
  }
  void add(EventKind kind, uint64_t ts, uint32_t loc = 0, uint64_t p1 = 0) {
    Event e{};
    e.ts = ts;
    e.kind = kind;
    e.loc = loc;
    e.p1 = p1;
    events.push_back(e);
    ++runs.back().count;
  }
};

SessionInfo test_session() {
  SessionInfo s;
  s.pid = 4242;
  s.hostname = "host-a";
  s.command_line = {"./train", "--epochs", "3"};
  s.start_monotonic_ns = 1000;
  s.start_realtime_ns = 1700000000000000000ull;
  s.clock.source = ClockSource::Tsc;
  s.clock.ticks_per_second = 2.5e9;
  s.clock.tick_base = 77;
  s.clock.monotonic_base_ns = 1000;
  s.clock.realtime_base_ns = 1700000000000000000ull;
  s.ringprof_version = "0.1.0";
  return s;
}

using Decoded = test::DecodedStream;
using test::decode_stream;

// A batch using every kind the file format stores.
BatchData every_kind_batch() {
  BatchData d;
  d.sequence = 7;
  d.add_location("step", "train_step", "train.cpp", 42);
  d.add_location("loss", "", "", 0);
  d.add_location("allreduce", "sync", "dist.cpp", 9);
  d.threads.push_back(ThreadInfo{1, 100, "main", 1, 3, 0});
  d.threads.push_back(ThreadInfo{2, 101, "", 0, 0, 5});
  d.threads.push_back(ThreadInfo{3, 102, "idle", 2, 9, 1});  // drops only, no events
  d.begin_run(1);
  d.add(EventKind::ZoneBegin, 5'000'000'000, 1);
  d.add(EventKind::Instant, 5'000'000'010, 3);
  d.add(EventKind::Counter, 5'000'000'020, 2, double_bits(-3.25));
  d.add(EventKind::Counter, 5'000'000'020, 2, double_bits(std::numeric_limits<double>::infinity()));
  d.add(EventKind::FlowBegin, 5'000'000'030, 0, 77);
  d.add(EventKind::FlowStep, 5'000'000'040, 0, std::numeric_limits<uint64_t>::max());
  d.add(EventKind::FlowEnd, 5'000'000'050, 0, 0);
  d.add(EventKind::Step, 5'000'000'060, 0, 123456789);
  d.add(EventKind::ZoneEnd, 5'000'100'000);
  d.add(EventKind::None, 5'000'100'001);
  d.begin_run(2);
  d.add(EventKind::ZoneBegin, 5'000'000'500, 3);
  d.add(EventKind::ZoneEnd, 5'000'000'400);  // out of order: negative delta
  d.add(EventKind::Instant, 4'999'999'999, 1);  // before the batch's first event of run 1
  d.begin_run(1);
  d.add(EventKind::Step, 5'000'200'000, 0, 124);
  return d;
}

TEST(SegmentCodec, RoundTripsEveryKindExactly) {
  BatchData d = every_kind_batch();
  SegmentEncoder enc(3);
  enc.start_file(test_session());
  std::vector<uint8_t> bytes;
  const size_t n = enc.encode(d.batch(), bytes);
  ASSERT_GT(n, format::kHeaderSize);
  ASSERT_EQ(n, bytes.size());

  Decoded dec;
  ASSERT_TRUE(decode_stream(bytes, &dec));
  ASSERT_EQ(dec.segments.size(), 1u);
  const DecodedSegment& s = dec.segments[0];

  const Batch b = d.batch();
  EXPECT_EQ(s.header.version, format::kVersion);
  EXPECT_EQ(s.header.flags, format::kFrameZstd | format::kFrameFileStart);
  EXPECT_EQ(s.header.sequence, 7u);
  EXPECT_EQ(s.header.first_ns, b.first_ns);
  EXPECT_EQ(s.header.last_ns, b.last_ns);
  EXPECT_EQ(s.header.first_ns, 4'999'999'999u);
  EXPECT_EQ(s.header.pid, 4242u);
  EXPECT_EQ(s.header.event_count, d.events.size());
  EXPECT_EQ(s.raw_bytes, s.header.raw_size);

  ASSERT_TRUE(s.process.has_value());
  EXPECT_EQ(s.process->pid, 4242u);
  EXPECT_EQ(s.process->hostname, "host-a");
  EXPECT_EQ(s.process->command_line, (std::vector<std::string>{"./train", "--epochs", "3"}));
  EXPECT_EQ(s.process->start_monotonic_ns, 1000u);
  EXPECT_EQ(s.process->start_realtime_ns, 1700000000000000000ull);
  EXPECT_EQ(s.process->ringprof_version, "0.1.0");
  ASSERT_TRUE(s.clock.has_value());
  EXPECT_EQ(s.clock->source, ClockSource::Tsc);
  EXPECT_EQ(s.clock->ticks_per_second, 2.5e9);
  EXPECT_EQ(s.clock->tick_base, 77u);
  EXPECT_EQ(s.clock->monotonic_base_ns, 1000u);
  EXPECT_EQ(s.clock->realtime_base_ns, 1700000000000000000ull);

  // Strings are interned once, in first-use order: location 1, 3, 2.
  const std::vector<std::pair<uint32_t, std::string>> want_strings = {
      {1, "step"}, {2, "train_step"}, {3, "train.cpp"}, {4, "allreduce"}, {5, "sync"}, {6, "dist.cpp"}, {7, "loss"}};
  EXPECT_EQ(s.strings, want_strings);
  ASSERT_EQ(dec.strings.size(), 8u);
  EXPECT_EQ(dec.strings[0], "");

  ASSERT_EQ(s.locations.size(), 3u);
  for (const Location& got : s.locations) {
    const Location& want = d.locations[got.id - 1];
    EXPECT_EQ(got.name, want.name);
    EXPECT_EQ(got.function, want.function);
    EXPECT_EQ(got.file, want.file);
    EXPECT_EQ(got.line, want.line);
  }
  EXPECT_EQ(s.locations[0].id, 1u);
  EXPECT_EQ(s.locations[1].id, 3u);
  EXPECT_EQ(s.locations[2].id, 2u);

  ASSERT_EQ(s.threads.size(), 3u);
  for (size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(s.threads[i].index, d.threads[i].index);
    EXPECT_EQ(s.threads[i].tid, d.threads[i].tid);
    EXPECT_TRUE(s.threads[i].has_name);
    EXPECT_EQ(s.threads[i].name, d.threads[i].name);
    EXPECT_EQ(s.threads[i].dropped_ring, d.threads[i].dropped_ring);
    EXPECT_EQ(s.threads[i].dropped_io, d.threads[i].dropped_io);
  }

  ASSERT_EQ(s.events.size(), d.events.size());
  size_t i = 0;
  for (const EventRun& run : d.runs) {
    for (uint32_t k = 0; k < run.count; ++k, ++i) {
      const Event& want = d.events[run.begin + k];
      const DecodedEvent& got = s.events[i];
      SCOPED_TRACE("event " + std::to_string(i));
      EXPECT_EQ(got.ts_ns, want.ts);
      EXPECT_EQ(got.kind, want.kind);
      EXPECT_EQ(got.thread_index, run.thread_index);
      EXPECT_EQ(got.loc, kind_has_location(want.kind) ? want.loc : 0u);
      EXPECT_EQ(got.value, kind_has_value(want.kind) ? want.p1 : 0u);
    }
  }
  EXPECT_EQ(bits_double(s.events[2].value), -3.25);
  EXPECT_TRUE(std::isinf(bits_double(s.events[3].value)));
}

TEST(SegmentCodec, EmptyBatchStillCarriesThreadsAndDrops) {
  BatchData d;
  d.threads.push_back(ThreadInfo{4, 200, "loader", 0, 17, 2});
  SegmentEncoder enc;
  enc.start_file(test_session());
  std::vector<uint8_t> bytes;
  ASSERT_GT(enc.encode(d.batch(), bytes), 0u);
  Decoded dec;
  ASSERT_TRUE(decode_stream(bytes, &dec));
  ASSERT_EQ(dec.segments.size(), 1u);
  EXPECT_EQ(dec.segments[0].header.event_count, 0u);
  EXPECT_TRUE(dec.segments[0].events.empty());
  ASSERT_EQ(dec.segments[0].threads.size(), 1u);
  EXPECT_EQ(dec.segments[0].threads[0].name, "loader");
  EXPECT_EQ(dec.segments[0].threads[0].dropped_ring, 17u);
  EXPECT_EQ(dec.segments[0].threads[0].dropped_io, 2u);
}

// Three batches into one file, then a new file: metadata is stated once per
// file, and restated in full after start_file.
TEST(SegmentCodec, MetadataWrittenOncePerFileAndAgainAfterStartFile) {
  BatchData d;
  d.add_location("a", "fa", "x.cpp", 1);
  d.add_location("b", "fb", "x.cpp", 2);  // shares the file string with "a"
  d.threads.push_back(ThreadInfo{1, 10, "main", 1, 0, 0});
  d.begin_run(1);
  d.add(EventKind::ZoneBegin, 100, 1);
  d.add(EventKind::ZoneEnd, 200);

  SegmentEncoder enc;
  enc.start_file(test_session());
  std::vector<uint8_t> file1;
  ASSERT_GT(enc.encode(d.batch(), file1), 0u);  // segment 0: loc 1, "main"

  BatchData d2 = d;
  d2.sequence = 1;
  d2.threads.push_back(ThreadInfo{2, 11, "worker", 1, 0, 0});
  d2.runs.clear();
  d2.events.clear();
  d2.begin_run(1);
  d2.add(EventKind::ZoneBegin, 300, 1);
  d2.add(EventKind::Instant, 310, 2);
  d2.begin_run(2);
  d2.add(EventKind::Instant, 320, 2);
  ASSERT_GT(enc.encode(d2.batch(), file1), 0u);  // segment 1: loc 2 only, "worker" only

  BatchData d3 = d2;
  d3.sequence = 2;
  d3.threads[0].name = "main-renamed";
  d3.threads[0].name_version = 2;
  ASSERT_GT(enc.encode(d3.batch(), file1), 0u);  // segment 2: nothing new but the rename

  Decoded dec;
  ASSERT_TRUE(decode_stream(file1, &dec));
  ASSERT_EQ(dec.segments.size(), 3u);
  const auto& s0 = dec.segments[0];
  const auto& s1 = dec.segments[1];
  const auto& s2 = dec.segments[2];
  EXPECT_TRUE(s0.header.flags & format::kFrameFileStart);
  EXPECT_FALSE(s1.header.flags & format::kFrameFileStart);
  EXPECT_FALSE(s2.header.flags & format::kFrameFileStart);
  EXPECT_TRUE(s0.process.has_value());
  EXPECT_FALSE(s1.process.has_value());
  EXPECT_FALSE(s1.clock.has_value());

  EXPECT_EQ(s0.strings, (std::vector<std::pair<uint32_t, std::string>>{{1, "a"}, {2, "fa"}, {3, "x.cpp"}}));
  ASSERT_EQ(s0.locations.size(), 1u);
  EXPECT_EQ(s1.strings, (std::vector<std::pair<uint32_t, std::string>>{{4, "b"}, {5, "fb"}}));
  ASSERT_EQ(s1.locations.size(), 1u);
  EXPECT_EQ(s1.locations[0].id, 2u);
  EXPECT_EQ(s1.locations[0].file, "x.cpp");  // resolved through the earlier segment's string
  EXPECT_TRUE(s2.strings.empty());
  EXPECT_TRUE(s2.locations.empty());

  ASSERT_EQ(s1.threads.size(), 2u);
  EXPECT_FALSE(s1.threads[0].has_name);
  EXPECT_TRUE(s1.threads[1].has_name);
  EXPECT_EQ(s1.threads[1].name, "worker");
  ASSERT_EQ(s2.threads.size(), 2u);
  EXPECT_TRUE(s2.threads[0].has_name);
  EXPECT_EQ(s2.threads[0].name, "main-renamed");
  EXPECT_FALSE(s2.threads[1].has_name);

  // A new file restates everything its first segment uses.
  enc.start_file(test_session());
  std::vector<uint8_t> file2;
  d3.sequence = 3;
  ASSERT_GT(enc.encode(d3.batch(), file2), 0u);
  Decoded dec2;
  ASSERT_TRUE(decode_stream(file2, &dec2));
  ASSERT_EQ(dec2.segments.size(), 1u);
  const auto& f = dec2.segments[0];
  EXPECT_TRUE(f.header.flags & format::kFrameFileStart);
  EXPECT_TRUE(f.process.has_value());
  EXPECT_EQ(f.strings, (std::vector<std::pair<uint32_t, std::string>>{
                           {1, "a"}, {2, "fa"}, {3, "x.cpp"}, {4, "b"}, {5, "fb"}}));
  EXPECT_EQ(f.locations.size(), 2u);
  ASSERT_EQ(f.threads.size(), 2u);
  EXPECT_TRUE(f.threads[0].has_name);
  EXPECT_EQ(f.threads[0].name, "main-renamed");
  EXPECT_TRUE(f.threads[1].has_name);
}

TEST(SegmentCodec, RollbackLastRestatesWhatTheLostFrameIntroduced) {
  BatchData d;
  d.add_location("a", "", "", 0);
  d.add_location("b", "", "", 0);
  d.threads.push_back(ThreadInfo{1, 10, "main", 1, 0, 0});
  d.begin_run(1);
  d.add(EventKind::Instant, 100, 1);

  SegmentEncoder enc;
  enc.start_file(test_session());
  std::vector<uint8_t> stored;
  // The file-start frame itself is lost: the next one must be a file start again.
  std::vector<uint8_t> lost;
  ASSERT_GT(enc.encode(d.batch(), lost), 0u);
  enc.rollback_last();
  ASSERT_GT(enc.encode(d.batch(), stored), 0u);

  BatchData d2 = d;
  d2.sequence = 1;
  d2.threads.push_back(ThreadInfo{2, 11, "w", 1, 0, 0});
  d2.events.clear();
  d2.runs.clear();
  d2.begin_run(2);
  d2.add(EventKind::Instant, 200, 2);
  lost.clear();
  ASSERT_GT(enc.encode(d2.batch(), lost), 0u);  // introduces "b", loc 2, thread "w"
  enc.rollback_last();
  d2.sequence = 2;
  ASSERT_GT(enc.encode(d2.batch(), stored), 0u);  // must introduce them again

  Decoded dec;
  ASSERT_TRUE(decode_stream(stored, &dec));
  ASSERT_EQ(dec.segments.size(), 2u);
  EXPECT_TRUE(dec.segments[0].header.flags & format::kFrameFileStart);
  EXPECT_TRUE(dec.segments[0].process.has_value());
  EXPECT_FALSE(dec.segments[1].header.flags & format::kFrameFileStart);
  EXPECT_EQ(dec.segments[1].strings, (std::vector<std::pair<uint32_t, std::string>>{{2, "b"}}));
  ASSERT_EQ(dec.segments[1].locations.size(), 1u);
  EXPECT_EQ(dec.segments[1].locations[0].name, "b");
  ASSERT_EQ(dec.segments[1].threads.size(), 2u);
  EXPECT_FALSE(dec.segments[1].threads[0].has_name);
  EXPECT_TRUE(dec.segments[1].threads[1].has_name);
  EXPECT_EQ(dec.segments[1].threads[1].name, "w");

  // A second rollback is a no-op: it must not undo the stored frame before
  // (if it did, the next frame would restate "b" under an id already taken).
  BatchData d3 = d2;
  d3.add_location("c", "", "", 0);
  d3.events.clear();
  d3.runs.clear();
  d3.begin_run(1);
  d3.add(EventKind::Instant, 300, 3);
  d3.add(EventKind::Instant, 301, 2);
  lost.clear();
  ASSERT_GT(enc.encode(d3.batch(), lost), 0u);
  enc.rollback_last();
  enc.rollback_last();
  d3.sequence = 3;
  ASSERT_GT(enc.encode(d3.batch(), stored), 0u);
  Decoded dec2;
  ASSERT_TRUE(decode_stream(stored, &dec2));
  ASSERT_EQ(dec2.segments.size(), 3u);
  EXPECT_EQ(dec2.segments[2].strings, (std::vector<std::pair<uint32_t, std::string>>{{3, "c"}}));
  ASSERT_EQ(dec2.segments[2].locations.size(), 1u);
  EXPECT_EQ(dec2.segments[2].locations[0].id, 3u);
}

TEST(MemorySink, FailedWritesAreRolledBackAndTheStreamStillDecodes) {
  BatchData d;
  d.add_location("a", "", "", 0);
  d.threads.push_back(ThreadInfo{1, 10, "main", 1, 0, 0});
  d.begin_run(1);
  d.add(EventKind::Instant, 100, 1);

  MemorySink sink(1);
  sink.begin_session(test_session());
  sink.fail_next_writes(2);
  EXPECT_FALSE(sink.write(d.batch()));  // the file start is lost...
  d.sequence = 1;
  EXPECT_FALSE(sink.write(d.batch()));
  EXPECT_TRUE(sink.bytes().empty());
  d.sequence = 2;
  EXPECT_TRUE(sink.write(d.batch()));  // ...so this one is the file start
  d.sequence = 3;
  EXPECT_TRUE(sink.write(d.batch()));
  sink.end_session();

  Decoded dec;
  ASSERT_TRUE(decode_stream(sink.bytes(), &dec));
  ASSERT_EQ(dec.segments.size(), 2u);
  EXPECT_EQ(dec.segments[0].header.sequence, 2u);
  EXPECT_TRUE(dec.segments[0].header.flags & format::kFrameFileStart);
  EXPECT_EQ(dec.segments[0].strings.size(), 1u);
  EXPECT_TRUE(dec.segments[0].threads[0].has_name);
  EXPECT_FALSE(dec.segments[1].threads[0].has_name);
  const SinkStats st = sink.stats();
  EXPECT_EQ(st.batches_failed, 2u);
  EXPECT_EQ(st.batches_written, 2u);
  EXPECT_EQ(st.bytes_written, sink.bytes().size());
}

TEST(NullSink, EncodesAndCountsButKeepsNothing) {
  BatchData d = every_kind_batch();
  auto sink = make_null_sink(1);
  sink->begin_session(test_session());
  EXPECT_TRUE(sink->write(d.batch()));
  EXPECT_TRUE(sink->write(d.batch()));
  sink->end_session();
  const SinkStats st = sink->stats();
  EXPECT_EQ(st.batches_written, 2u);
  EXPECT_GT(st.bytes_written, 2 * format::kHeaderSize);
}

// Builds an uncompressed frame around any raw payload (the crash path's form).
std::vector<uint8_t> uncompressed_frame(const std::vector<uint8_t>& raw, uint32_t event_count, uint32_t extra_flags = 0) {
  format::FrameHeader h;
  h.flags = format::kFrameUncompressed | extra_flags;
  h.stored_size = static_cast<uint32_t>(raw.size());
  h.raw_size = h.stored_size;
  h.event_count = event_count;
  h.payload_crc32 = format::crc32(raw);
  std::vector<uint8_t> out(format::kHeaderSize);
  format::write_frame_header(h, out.data());
  out.insert(out.end(), raw.begin(), raw.end());
  return out;
}

std::vector<uint8_t> raw_payload_of(const std::vector<uint8_t>& frame) {
  auto h = format::parse_frame_header(frame, nullptr);
  EXPECT_TRUE(h.has_value());
  std::vector<uint8_t> raw(h->raw_size);
  const size_t n = ZSTD_decompress(raw.data(), raw.size(), frame.data() + format::kHeaderSize, h->stored_size);
  EXPECT_EQ(n, raw.size());
  return raw;
}

TEST(SegmentCodec, AcceptsUncompressedFrames) {
  BatchData d = every_kind_batch();
  SegmentEncoder enc;
  enc.start_file(test_session());
  std::vector<uint8_t> z;
  ASSERT_GT(enc.encode(d.batch(), z), 0u);
  const std::vector<uint8_t> raw = raw_payload_of(z);
  const std::vector<uint8_t> frame =
      uncompressed_frame(raw, static_cast<uint32_t>(d.events.size()), format::kFrameFileStart);

  Decoded a, b;
  ASSERT_TRUE(decode_stream(z, &a));
  ASSERT_TRUE(decode_stream(frame, &b));
  ASSERT_EQ(a.segments[0].events.size(), b.segments[0].events.size());
  for (size_t i = 0; i < a.segments[0].events.size(); ++i) {
    EXPECT_EQ(a.segments[0].events[i].ts_ns, b.segments[0].events[i].ts_ns);
    EXPECT_EQ(a.segments[0].events[i].value, b.segments[0].events[i].value);
  }
  EXPECT_EQ(a.strings, b.strings);

  // stored_size must equal raw_size for an uncompressed frame.
  auto h = format::parse_frame_header(frame, nullptr);
  ASSERT_TRUE(h);
  h->raw_size += 1;
  std::vector<std::string> strings;
  DecodedSegment seg;
  std::string err;
  EXPECT_FALSE(decode_segment(*h, std::span<const uint8_t>(frame).subspan(format::kHeaderSize), strings, seg, &err));
  EXPECT_FALSE(err.empty());
}

TEST(FrameHeader, RoundTripsAndRejectsBadHeaders) {
  format::FrameHeader h;
  h.flags = format::kFrameZstd;
  h.stored_size = 10;
  h.raw_size = 20;
  h.event_count = 3;
  h.sequence = 0x0102030405060708ull;
  h.first_ns = 11;
  h.last_ns = 12;
  h.pid = 99;
  h.payload_crc32 = 0xdeadbeef;
  uint8_t buf[format::kHeaderSize];
  format::write_frame_header(h, buf);
  EXPECT_EQ(std::memcmp(buf, "RPSG", 4), 0);
  EXPECT_EQ(buf[24], 0x08);  // little-endian sequence
  EXPECT_EQ(buf[31], 0x01);
  std::string err;
  auto p = format::parse_frame_header({buf, sizeof buf}, &err);
  ASSERT_TRUE(p) << err;
  EXPECT_EQ(p->flags, h.flags);
  EXPECT_EQ(p->stored_size, 10u);
  EXPECT_EQ(p->raw_size, 20u);
  EXPECT_EQ(p->event_count, 3u);
  EXPECT_EQ(p->sequence, h.sequence);
  EXPECT_EQ(p->first_ns, 11u);
  EXPECT_EQ(p->last_ns, 12u);
  EXPECT_EQ(p->pid, 99u);
  EXPECT_EQ(p->payload_crc32, 0xdeadbeefu);
  EXPECT_EQ(p->header_size, format::kHeaderSize);

  EXPECT_FALSE(format::parse_frame_header({buf, 63}, &err));
  EXPECT_EQ(err, "short header");

  auto reseal = [](uint8_t* b) {
    const uint32_t crc = format::crc32({b, 60});
    for (int i = 0; i < 4; ++i) b[60 + i] = static_cast<uint8_t>(crc >> (8 * i));
  };
  uint8_t bad[format::kHeaderSize];
  std::memcpy(bad, buf, sizeof bad);
  bad[0] = 'X';
  EXPECT_FALSE(format::parse_frame_header({bad, sizeof bad}, &err));
  EXPECT_EQ(err, "bad magic");

  std::memcpy(bad, buf, sizeof bad);
  bad[40] ^= 1;
  EXPECT_FALSE(format::parse_frame_header({bad, sizeof bad}, &err));
  EXPECT_EQ(err, "header checksum mismatch");

  std::memcpy(bad, buf, sizeof bad);
  bad[4] = 7;
  reseal(bad);
  EXPECT_FALSE(format::parse_frame_header({bad, sizeof bad}, &err));
  EXPECT_EQ(err, "unsupported version 7");

  std::memcpy(bad, buf, sizeof bad);
  bad[4] = 0;
  reseal(bad);
  EXPECT_FALSE(format::parse_frame_header({bad, sizeof bad}, &err));

  std::memcpy(bad, buf, sizeof bad);
  bad[6] = 32;
  reseal(bad);
  EXPECT_FALSE(format::parse_frame_header({bad, sizeof bad}, &err));

  std::memcpy(bad, buf, sizeof bad);
  bad[15] = 0x7f;  // stored_size far beyond kMaxPayload
  reseal(bad);
  EXPECT_FALSE(format::parse_frame_header({bad, sizeof bad}, &err));

  // A longer header (a future minor layout) is accepted; the reader skips it.
  std::memcpy(bad, buf, sizeof bad);
  bad[6] = 96;
  reseal(bad);
  auto longer = format::parse_frame_header({bad, sizeof bad}, &err);
  ASSERT_TRUE(longer) << err;
  EXPECT_EQ(longer->header_size, 96u);
}

// ---- hand-built payloads, for errors the encoder never produces ----

// Field slots of table Segment / Location in schemas/segment.fbs.
constexpr flatbuffers::voffset_t slot(int index) { return static_cast<flatbuffers::voffset_t>(4 + 2 * index); }
enum SegmentField { kProcess, kClock, kStringBase, kStrings, kLocations, kThreads, kBaseNs, kRunThread, kRunCount,
                    kKinds, kTs, kLocs, kValues };

struct RawSegment {
  uint32_t string_base = 1;
  std::vector<std::string> strings;
  struct Loc {
    uint32_t id, name, function, file, line;
  };
  std::vector<Loc> locations;
  uint64_t base_ns = 1000;
  std::vector<uint32_t> run_thread{1};
  std::vector<uint32_t> run_count{2};
  std::vector<uint8_t> kinds{3, 2};  // Instant, ZoneEnd
  std::vector<uint8_t> ts{4, 6};     // +2, +3
  std::vector<uint8_t> locs{1};
  std::vector<uint8_t> values;

  std::vector<uint8_t> build() const {
    flatbuffers::FlatBufferBuilder fbb;
    auto strs = fbb.CreateVectorOfStrings(strings);
    std::vector<flatbuffers::Offset<void>> locs_off;
    for (const Loc& l : locations) {
      const auto start = fbb.StartTable();
      fbb.AddElement<uint32_t>(slot(0), l.id, 0);
      fbb.AddElement<uint32_t>(slot(1), l.name, 0);
      fbb.AddElement<uint32_t>(slot(2), l.function, 0);
      fbb.AddElement<uint32_t>(slot(3), l.file, 0);
      fbb.AddElement<uint32_t>(slot(4), l.line, 0);
      locs_off.push_back(flatbuffers::Offset<void>(fbb.EndTable(start)));
    }
    auto locv = fbb.CreateVector(locs_off);
    auto rt = fbb.CreateVector(run_thread);
    auto rc = fbb.CreateVector(run_count);
    auto k = fbb.CreateVector(kinds);
    auto t = fbb.CreateVector(ts);
    auto l = fbb.CreateVector(locs);
    auto v = fbb.CreateVector(values);
    const auto start = fbb.StartTable();
    fbb.AddElement<uint32_t>(slot(kStringBase), string_base, 0);
    fbb.AddOffset(slot(kStrings), strs);
    fbb.AddOffset(slot(kLocations), locv);
    fbb.AddElement<uint64_t>(slot(kBaseNs), base_ns, 0);
    fbb.AddOffset(slot(kRunThread), rt);
    fbb.AddOffset(slot(kRunCount), rc);
    fbb.AddOffset(slot(kKinds), k);
    fbb.AddOffset(slot(kTs), t);
    fbb.AddOffset(slot(kLocs), l);
    fbb.AddOffset(slot(kValues), v);
    fbb.Finish(flatbuffers::Offset<void>(fbb.EndTable(start)));
    return std::vector<uint8_t>(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
  }
  uint32_t event_count() const {
    uint32_t n = 0;
    for (uint32_t c : run_count) n += c;
    return n;
  }
};

// Decodes one frame; returns the error ("" on success).
std::string decode_error(const std::vector<uint8_t>& frame, std::vector<std::string>* strings = nullptr,
                         DecodedSegment* seg_out = nullptr) {
  std::string err;
  auto h = format::parse_frame_header(frame, &err);
  if (!h) return err.empty() ? "?" : err;
  std::vector<std::string> local;
  DecodedSegment seg;
  const size_t off = std::min<size_t>(frame.size(), h->header_size);
  if (decode_segment(*h, std::span<const uint8_t>(frame).subspan(off), strings ? *strings : local, seg, &err)) {
    if (seg_out) *seg_out = seg;
    return "";
  }
  return err.empty() ? "?" : err;
}

std::string decode_raw(const RawSegment& r, int event_count_delta = 0) {
  return decode_error(uncompressed_frame(r.build(), r.event_count() + event_count_delta));
}

TEST(SegmentDecoder, HandBuiltPayloadDecodes) {
  RawSegment r;
  r.strings = {"n"};
  r.locations = {{1, 1, 0, 0, 5}};
  DecodedSegment seg;
  ASSERT_EQ(decode_error(uncompressed_frame(r.build(), 2), nullptr, &seg), "");
  ASSERT_EQ(seg.events.size(), 2u);
  EXPECT_EQ(seg.events[0].ts_ns, 1002u);
  EXPECT_EQ(seg.events[0].loc, 1u);
  EXPECT_EQ(seg.events[1].ts_ns, 1005u);
  ASSERT_EQ(seg.locations.size(), 1u);
  EXPECT_EQ(seg.locations[0].name, "n");
  EXPECT_EQ(seg.locations[0].line, 5u);
}

TEST(SegmentDecoder, RejectsBadColumnsWithAShortMessage) {
  {
    RawSegment r;
    r.ts = {4, 0x86};  // second varint never ends
    EXPECT_EQ(decode_raw(r), "bad varint in ts column");
  }
  {
    RawSegment r;
    r.ts = {4, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02};  // > 64 bits
    EXPECT_EQ(decode_raw(r), "bad varint in ts column");
  }
  {
    RawSegment r;
    r.ts = {4, 6, 8};
    EXPECT_EQ(decode_raw(r), "trailing bytes in ts column");
  }
  {
    RawSegment r;
    r.run_count = {3};  // more events than kinds
    EXPECT_EQ(decode_raw(r), "run counts do not match the kinds column");
  }
  {
    RawSegment r;
    r.run_count = {0xffffffffu, 0xffffffffu};
    r.run_thread = {1, 2};
    EXPECT_EQ(decode_raw(r), "run counts do not match the kinds column");
  }
  {
    RawSegment r;
    r.run_thread = {1, 2};  // two threads, one count
    EXPECT_EQ(decode_raw(r), "run columns differ in length");
  }
  {
    RawSegment r;
    EXPECT_EQ(decode_raw(r, 1), "event count does not match the header");
  }
  for (uint8_t bad : {uint8_t{9}, uint8_t{10}, uint8_t{kEventKindCount}, uint8_t{200}}) {
    RawSegment r;
    r.kinds = {3, bad};
    EXPECT_EQ(decode_raw(r), "bad event kind " + std::to_string(bad));
  }
  {
    RawSegment r;
    r.locs = {};
    EXPECT_EQ(decode_raw(r), "bad varint in locs column");
  }
  {
    RawSegment r;
    r.locs = {0x80, 0x80, 0x80, 0x80, 0x10};  // 2^32: not a location id
    EXPECT_EQ(decode_raw(r), "location id out of range");
  }
  {
    RawSegment r;
    r.kinds = {4, 2};  // Counter needs 8 value bytes
    r.values = {1, 2, 3, 4, 5, 6, 7};
    EXPECT_EQ(decode_raw(r), "values column too short");
  }
  {
    RawSegment r;
    r.kinds = {8, 2};  // Step: varint value
    r.locs = {};
    r.values = {0x81};
    EXPECT_EQ(decode_raw(r), "bad varint in values column");
  }
  {
    RawSegment r;
    r.strings = {"n"};
    r.locations = {{1, 2, 0, 0, 0}};  // string 2 does not exist
    EXPECT_EQ(decode_raw(r), "location 1: string id out of range");
  }
  {
    RawSegment r;
    r.strings = {"n"};
    r.string_base = 0;  // would redefine id 0
    EXPECT_EQ(decode_raw(r), "string_base 0 overlaps the string table");
  }
  {
    RawSegment r;
    r.strings = {"n"};
    r.string_base = 0xfffffff0u;
    EXPECT_EQ(decode_raw(r), "string_base 4294967280 out of range");
  }
  {
    std::vector<uint8_t> garbage(64, 0xab);
    EXPECT_EQ(decode_error(uncompressed_frame(garbage, 0)), "flatbuffers verification failed");
    EXPECT_EQ(decode_error(uncompressed_frame({}, 0)), "flatbuffers verification failed");
  }
}

TEST(SegmentDecoder, StringTableIsOnlyUpdatedOnSuccessAndPadsGaps) {
  std::vector<std::string> strings;
  RawSegment bad;
  bad.strings = {"x"};
  bad.kinds = {3, 11};
  EXPECT_NE(decode_error(uncompressed_frame(bad.build(), 2), &strings), "");
  EXPECT_TRUE(strings.empty());

  // A reader that lost a segment sees ids start past its table: the gap is
  // padded so later segments still decode.
  RawSegment r;
  r.string_base = 4;
  r.strings = {"d"};
  r.locations = {{1, 4, 0, 0, 0}};
  DecodedSegment seg;
  ASSERT_EQ(decode_error(uncompressed_frame(r.build(), 2), &strings, &seg), "");
  EXPECT_EQ(strings, (std::vector<std::string>{"", "", "", "", "d"}));
  EXPECT_EQ(seg.strings, (std::vector<std::pair<uint32_t, std::string>>{{4, "d"}}));
}

// The encoded frame for the corruption sweeps: small, with every column.
std::vector<uint8_t> small_frame() {
  BatchData d;
  d.add_location("z", "f", "g.cpp", 3);
  d.threads.push_back(ThreadInfo{1, 10, "t", 1, 1, 0});
  d.begin_run(1);
  d.add(EventKind::ZoneBegin, 100, 1);
  d.add(EventKind::Counter, 110, 1, double_bits(1.5));
  d.add(EventKind::Step, 120, 0, 9);
  d.add(EventKind::ZoneEnd, 130);
  SegmentEncoder enc;
  SessionInfo s;
  s.pid = 1;
  enc.start_file(s);
  std::vector<uint8_t> out;
  enc.encode(d.batch(), out);
  return out;
}

TEST(SegmentDecoder, EveryTruncationFailsCleanly) {
  const std::vector<uint8_t> frame = small_frame();
  ASSERT_EQ(decode_error(frame), "");
  for (size_t len = 0; len < frame.size(); ++len) {
    const std::vector<uint8_t> cut(frame.begin(), frame.begin() + static_cast<std::ptrdiff_t>(len));
    EXPECT_NE(decode_error(cut), "") << "length " << len;
  }
  // The raw FlatBuffer cut short inside a re-checksummed uncompressed frame:
  // its last bytes may be alignment padding, so a cut may still decode;
  // otherwise it must fail cleanly. Cutting into the root table always fails.
  const std::vector<uint8_t> raw = raw_payload_of(frame);
  size_t failures = 0;
  for (size_t len = 0; len < raw.size(); ++len) {
    const std::vector<uint8_t> cut(raw.begin(), raw.begin() + static_cast<std::ptrdiff_t>(len));
    DecodedSegment seg;
    if (decode_error(uncompressed_frame(cut, 4), nullptr, &seg).empty()) {
      EXPECT_EQ(seg.events.size(), 4u) << "raw length " << len;
    } else {
      ++failures;
    }
  }
  EXPECT_GE(failures, raw.size() - 8);
}

TEST(SegmentDecoder, BitFlipsGiveAnErrorOrAValidDecode) {
  const std::vector<uint8_t> frame = small_frame();
  // Flips in the stored frame are caught by the checksums.
  for (size_t i = 0; i < frame.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      std::vector<uint8_t> f = frame;
      f[i] ^= static_cast<uint8_t>(1u << bit);
      EXPECT_NE(decode_error(f), "") << "byte " << i << " bit " << bit;
    }
  }
  // Flips in the raw FlatBuffer, re-checksummed, reach the verifier and the
  // column checks: each must decode or fail cleanly (ASan/UBSan builds make
  // "cleanly" strict).
  const std::vector<uint8_t> raw = raw_payload_of(frame);
  size_t decoded = 0, failed = 0;
  for (size_t i = 0; i < raw.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      std::vector<uint8_t> r = raw;
      r[i] ^= static_cast<uint8_t>(1u << bit);
      std::vector<std::string> strings;
      DecodedSegment seg;
      const std::string err = decode_error(uncompressed_frame(r, 4, format::kFrameFileStart), &strings, &seg);
      if (err.empty()) {
        ++decoded;
        EXPECT_EQ(seg.events.size(), 4u);
      } else {
        ++failed;
      }
    }
  }
  EXPECT_EQ(decoded + failed, raw.size() * 8);
  EXPECT_GT(failed, 0u);
  EXPECT_GT(decoded, 0u);  // e.g. flips inside a timestamp or a string
}

TEST(SegmentDecoder, RejectsWrongEncodingFlagsAndSizes) {
  std::vector<uint8_t> frame = small_frame();
  auto h = format::parse_frame_header(frame, nullptr);
  ASSERT_TRUE(h);
  std::span<const uint8_t> payload = std::span<const uint8_t>(frame).subspan(format::kHeaderSize);
  std::vector<std::string> strings;
  DecodedSegment seg;
  std::string err;

  format::FrameHeader both = *h;
  both.flags |= format::kFrameUncompressed;
  EXPECT_FALSE(decode_segment(both, payload, strings, seg, &err));
  EXPECT_EQ(err, "unknown payload encoding");

  format::FrameHeader neither = *h;
  neither.flags &= ~format::kFrameZstd;
  EXPECT_FALSE(decode_segment(neither, payload, strings, seg, &err));
  EXPECT_EQ(err, "unknown payload encoding");

  format::FrameHeader big = *h;
  big.raw_size = format::kMaxPayload + 1;
  EXPECT_FALSE(decode_segment(big, payload, strings, seg, &err));
  EXPECT_EQ(err, "raw size too large");

  format::FrameHeader small = *h;
  small.raw_size -= 1;
  EXPECT_FALSE(decode_segment(small, payload, strings, seg, &err));
  EXPECT_FALSE(err.empty());

  EXPECT_FALSE(decode_segment(*h, payload.first(payload.size() - 1), strings, seg, &err));
  EXPECT_EQ(err, "truncated payload");
  EXPECT_TRUE(strings.empty());

  EXPECT_TRUE(decode_segment(*h, payload, strings, seg, &err)) << err;
}

}  // namespace
}  // namespace ringprof

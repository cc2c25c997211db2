// Segment codec round trips: every event kind, the process and clock of a
// file start, and the same payload stored compressed (at any zstd level) or
// uncompressed.
#include <gtest/gtest.h>
#include <zstd.h>

#include <cmath>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "support/frame_bytes.h"
#include "support/frame_stream.h"
#include "support/segment_batches.h"
#include "support/service_batch.h"
#include "ringprof/format.h"
#include "ringprof/segment_codec.h"

namespace ringprof {
namespace {

using test::BatchData;
using test::every_kind_batch;
using test::test_session;
using Decoded = test::DecodedStream;
using test::decode_stream;
using test::raw_payload_of;
using test::uncompressed_frame;

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

// Levels 0-3 keep zstd's match tables small and others do not
// (segment_encoder.cpp): every level stores a payload that decodes whole, and
// level 3's small tables compress event columns as well as zstd's own within
// 2% (here exactly as well: on these jittered columns every match is local).
// What the small tables save is time, which bench/background_cost_bench.cpp
// measures; this test guards the ratio.
TEST(SegmentCodec, EveryLevelStoresTheSamePayload) {
  const test::OwnedBatch d = test::service_batch(65536);  // nested zones, as BM_EncodeSegment encodes
  std::vector<uint8_t> level3;
  {
    SegmentEncoder enc(3);
    enc.start_file(test_session());
    ASSERT_GT(enc.encode(d.batch(), level3), 0u);
  }
  const std::vector<uint8_t> raw = raw_payload_of(level3);
  ASSERT_GT(raw.size(), 100'000u);  // past the sizes at which zstd shrinks its tables itself

  for (int level : {0, 1, 2, 4, 9, 19, -5}) {
    SCOPED_TRACE(level);
    SegmentEncoder enc(level);
    enc.start_file(test_session());
    std::vector<uint8_t> bytes;
    ASSERT_GT(enc.encode(d.batch(), bytes), 0u);
    EXPECT_EQ(raw_payload_of(bytes), raw);
    Decoded dec;
    ASSERT_TRUE(decode_stream(bytes, &dec));
    ASSERT_EQ(dec.segments.size(), 1u);
    EXPECT_EQ(dec.segments[0].events.size(), d.events.size());
  }

  // zstd at level 3 with the tables it picks for this size, over the same bytes.
  std::vector<uint8_t> reference(ZSTD_compressBound(raw.size()));
  const size_t want = ZSTD_compress(reference.data(), reference.size(), raw.data(), raw.size(), 3);
  ASSERT_FALSE(ZSTD_isError(want));
  const size_t got = level3.size() - format::kHeaderSize;
  EXPECT_LE(static_cast<double>(got), 1.02 * static_cast<double>(want)) << got << " bytes against zstd's " << want;
  // It still compresses: the jitter is random, ~11 bits a delta, so about
  // half of the columns' bytes are left.
  EXPECT_LT(got * 5, raw.size() * 3);
}

}  // namespace
}  // namespace ringprof

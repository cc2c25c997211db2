// Segment codec metadata: strings, locations and thread names stated once per
// file and again after start_file, a lost frame's rollback, and the memory
// and null sinks that go through the encoder.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "support/frame_stream.h"
#include "support/segment_batches.h"
#include "ringprof/format.h"
#include "ringprof/segment_codec.h"
#include "ringprof/sinks.h"

namespace ringprof {
namespace {

using test::BatchData;
using test::every_kind_batch;
using test::test_session;
using Decoded = test::DecodedStream;
using test::decode_stream;

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

}  // namespace
}  // namespace ringprof

// The rank in the segment codec: stated at each file start and whenever its
// version changes, never otherwise, and decoded field by field.
#include <gtest/gtest.h>

#include "ringprof/segment_codec.h"
#include "support/frame_stream.h"
#include "support/segment_batches.h"

namespace ringprof {
namespace {

TEST(SegmentCodec, RankStatedAtFileStartAndOnChange) {
  test::BatchData d;
  d.add_location("z", "", "", 0);
  d.threads.push_back(ThreadInfo{1, 10, "main", 1, 0, 0});
  d.begin_run(1);
  d.add(EventKind::ZoneBegin, 100, 1);
  d.add(EventKind::ZoneEnd, 200);
  RankInfo rank;
  rank.rank = 3;
  rank.local_rank = 1;
  rank.world_size = 8;
  rank.job_id = "job42";
  rank.source = "RANK";
  rank.version = 1;
  SegmentEncoder enc;
  enc.start_file(test::test_session());
  std::vector<uint8_t> file1, file2;
  Batch b = d.batch();
  b.rank = &rank;
  ASSERT_GT(enc.encode(b, file1), 0u);  // file start: stated
  b.sequence = 1;
  ASSERT_GT(enc.encode(b, file1), 0u);  // same version: not stated
  rank.rank = 5;
  rank.version = 2;
  b.sequence = 2;
  ASSERT_GT(enc.encode(b, file1), 0u);  // changed: stated
  enc.start_file(test::test_session());
  b.sequence = 3;
  ASSERT_GT(enc.encode(b, file2), 0u);  // a new file: stated again

  test::DecodedStream dec;
  ASSERT_TRUE(test::decode_stream(file1, &dec));
  ASSERT_EQ(dec.segments.size(), 3u);
  ASSERT_TRUE(dec.segments[0].rank.has_value());
  const RankInfo& r0 = *dec.segments[0].rank;
  EXPECT_EQ(r0.rank, 3);
  EXPECT_EQ(r0.local_rank, 1);
  EXPECT_EQ(r0.world_size, 8);
  EXPECT_EQ(r0.job_id, "job42");
  EXPECT_EQ(r0.source, "RANK");
  EXPECT_FALSE(dec.segments[1].rank.has_value());
  ASSERT_TRUE(dec.segments[2].rank.has_value());
  EXPECT_EQ(dec.segments[2].rank->rank, 5);
  test::DecodedStream dec2;
  ASSERT_TRUE(test::decode_stream(file2, &dec2));
  ASSERT_TRUE(dec2.segments.at(0).rank.has_value());
  EXPECT_EQ(dec2.segments[0].rank->rank, 5);
}

TEST(SegmentCodec, NoRankNoTable) {
  test::BatchData d;
  d.threads.push_back(ThreadInfo{1, 10, "main", 1, 0, 0});
  SegmentEncoder enc;
  enc.start_file(test::test_session());
  std::vector<uint8_t> file;
  ASSERT_GT(enc.encode(d.batch(), file), 0u);
  test::DecodedStream dec;
  ASSERT_TRUE(test::decode_stream(file, &dec));
  EXPECT_FALSE(dec.segments.at(0).rank.has_value());
}

}  // namespace
}  // namespace ringprof

// ZoneArg in the segment codec: an argument's key and value are both
// locations, and a value id the batch cannot describe is stored as 0
// ("unknown") as for any location, never as a dangling id.
#include <gtest/gtest.h>

#include "ringprof/segment_codec.h"
#include "support/frame_stream.h"
#include "support/segment_batches.h"

namespace ringprof {
namespace {

TEST(SegmentCodec, ZoneArgKeepsKeyAndValueLocations) {
  test::BatchData d;
  d.add_location("op", "", "", 0);
  d.add_location("Input Dims", "", "", 0);
  d.add_location("[[2, 3]]", "", "", 0);
  d.threads.push_back(ThreadInfo{1, 10, "main", 1, 0, 0});
  d.begin_run(1);
  d.add(EventKind::ZoneBegin, 100, 1);
  d.add(EventKind::ZoneArg, 100, 2, 3);
  d.add(EventKind::ZoneArg, 101, 2, 99);  // no location 99 in the batch
  d.add(EventKind::ZoneEnd, 200);
  SegmentEncoder enc;
  enc.start_file(test::test_session());
  std::vector<uint8_t> file;
  ASSERT_GT(enc.encode(d.batch(), file), 0u);
  test::DecodedStream dec;
  ASSERT_TRUE(test::decode_stream(file, &dec));
  ASSERT_EQ(dec.segments.size(), 1u);
  const DecodedSegment& s = dec.segments[0];
  ASSERT_EQ(s.events.size(), 4u);
  EXPECT_EQ(s.events[1].kind, EventKind::ZoneArg);
  EXPECT_EQ(s.events[1].loc, 2u);
  EXPECT_EQ(s.events[1].value, 3u);
  EXPECT_EQ(s.events[2].value, 0u);
  ASSERT_EQ(s.locations.size(), 3u);  // op, the key, the value: each stated once
  EXPECT_EQ(s.locations[2].name, "[[2, 3]]");
}

}  // namespace
}  // namespace ringprof

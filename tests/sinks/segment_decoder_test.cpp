// Segment decoder on hand-built payloads, for errors the encoder never
// produces: bad columns, bad string and location ids, and a string table that
// changes only when a whole segment decodes.
#include <flatbuffers/flatbuffers.h>
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "support/frame_bytes.h"
#include "ringprof/format.h"
#include "ringprof/segment_codec.h"

namespace ringprof {
namespace {

using test::decode_error;
using test::uncompressed_frame;

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

}  // namespace
}  // namespace ringprof

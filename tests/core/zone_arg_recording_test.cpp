// Zone arguments on the recording path: zone_arg() and ringprof_zone_arg()
// (mark_collective() too) put a ZoneArg in the calling thread's ring (the
// value inline, the key as a static string), and the drainer hands the sink an
// event whose loc names the key and whose p1 is the value text's location id.
#include <gtest/gtest.h>

#include <string>

#include "ringprof/ringprof.h"
#include "ringprof/ringprof_c.h"
#include "support/capture_sink.h"

namespace ringprof {
namespace {

TEST(ZoneArgRecording, KeyAndValueReachTheSinkAsLocations) {
  auto sink = std::make_shared<test::CaptureSink>();
  Config c;
  c.sample_hz = 0;
  c.drain_interval_ms = 2;
  ASSERT_TRUE(start(c, sink));
  const std::string long_value(kMaxInlineName + 100, 'v');
  ASSERT_TRUE(zone_begin_static("op"));
  zone_arg("shape", "[[2, 3]]");
  zone_arg("count", int64_t{-42});
  zone_arg("long", long_value);
  ringprof_zone_arg("from C", "abc", 2);
  zone_arg("shape", std::string("[[2, 3]]"));  // the same text: the same location
  zone_end();
  stop();
  std::vector<std::pair<std::string, std::string>> args;
  std::vector<uint32_t> shape_values;
  size_t begins = 0, ends = 0;
  for (const test::CapturedEvent& e : sink->events) {
    begins += e.event.kind == EventKind::ZoneBegin;
    ends += e.event.kind == EventKind::ZoneEnd;
    if (e.event.kind != EventKind::ZoneArg) continue;
    const auto value = static_cast<uint32_t>(e.event.p1);
    args.emplace_back(sink->location_name(e.event.loc), sink->location_name(value));
    if (args.back().first == "shape") shape_values.push_back(value);
  }
  EXPECT_EQ(begins, 1u);
  EXPECT_EQ(ends, 1u);
  ASSERT_EQ(args.size(), 5u);
  EXPECT_EQ(args[0], (std::pair<std::string, std::string>{"shape", "[[2, 3]]"}));
  EXPECT_EQ(args[1], (std::pair<std::string, std::string>{"count", "-42"}));
  EXPECT_EQ(args[2].first, "long");
  EXPECT_EQ(args[2].second, long_value.substr(0, kMaxInlineName));  // cut, as inline names are
  EXPECT_EQ(args[3], (std::pair<std::string, std::string>{"from C", "ab"}));
  ASSERT_EQ(shape_values.size(), 2u);
  EXPECT_EQ(shape_values[0], shape_values[1]);
  // Every event is accounted for: what the sink got is what was written.
  EXPECT_EQ(recorder_stats().events_written, sink->events.size());
  EXPECT_EQ(recorder_stats().dropped_ring, 0u);
}

// mark_collective() is the zone argument "collective" = the group's name;
// the C function's NULL (and "") group is "world".
TEST(ZoneArgRecording, MarkCollectiveIsTheCollectiveArgument) {
  auto sink = std::make_shared<test::CaptureSink>();
  Config c;
  c.sample_hz = 0;
  c.drain_interval_ms = 2;
  ASSERT_TRUE(start(c, sink));
  ASSERT_TRUE(zone_begin_static("all_reduce"));
  mark_collective("tp0");
  zone_end();
  ASSERT_TRUE(zone_begin_static("barrier"));
  ringprof_mark_collective(nullptr);
  ringprof_mark_collective("");
  mark_collective();
  zone_end();
  stop();
  std::vector<std::pair<std::string, std::string>> args;
  for (const test::CapturedEvent& e : sink->events)
    if (e.event.kind == EventKind::ZoneArg)
      args.emplace_back(sink->location_name(e.event.loc), sink->location_name(static_cast<uint32_t>(e.event.p1)));
  using Arg = std::pair<std::string, std::string>;
  ASSERT_EQ(args.size(), 4u);
  EXPECT_EQ(args[0], (Arg{"collective", "tp0"}));
  EXPECT_EQ(args[1], (Arg{"collective", "world"}));
  EXPECT_EQ(args[2], (Arg{"collective", "world"}));
  EXPECT_EQ(args[3], (Arg{kCollectiveArgKey, "world"}));
}

}  // namespace
}  // namespace ringprof

// The event kind table (ringprof/event.h): its rows agree with each other and
// with what the recorder and the codec do with each kind.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "ringprof/event.h"

using namespace ringprof;

namespace {

std::vector<EventKind> all_kinds() {
  std::vector<EventKind> k;
  for (unsigned i = 0; i < kEventKindCount; ++i) k.push_back(static_cast<EventKind>(i));
  return k;
}

}  // namespace

TEST(EventKindTable, RowsAreConsistent) {
  std::set<std::string> names;
  for (EventKind k : all_kinds()) {
    const EventKindTraits t = event_kind_traits(k);
    ASSERT_NE(t.name, nullptr);
    EXPECT_TRUE(names.insert(t.name).second) << "two kinds named " << t.name;
    const std::string n = t.name;
    // What the drainer writes as an event is in the file; a crash flush writes
    // only ring records; a value that names something is a value.
    EXPECT_TRUE(!t.ring_record || t.in_file) << n;
    EXPECT_TRUE(!t.in_crash_segment || t.ring_record) << n;
    EXPECT_TRUE(!t.value_is_location || t.has_value) << n;
    EXPECT_FALSE(t.has_stack && t.has_location) << n << ": loc is one or the other";
    EXPECT_TRUE(!t.is_memory || (t.has_location && t.has_value)) << n << ": pool name and size";
    EXPECT_TRUE(t.in_file || !(t.has_location || t.has_value || t.has_stack || t.is_memory)) << n;
  }
}

TEST(EventKindTable, WhatTheRecorderAndTheCodecRelyOn) {
  // Consumed by the drainer, never in a file.
  for (EventKind k : {EventKind::ThreadName, EventKind::Continuation}) {
    EXPECT_FALSE(valid_file_kind(static_cast<uint8_t>(k))) << event_kind_name(k);
    EXPECT_FALSE(valid_crash_kind(static_cast<uint8_t>(k))) << event_kind_name(k);
  }
  // The empty event: carried by the codec as it always was, never recorded.
  EXPECT_TRUE(valid_file_kind(0));
  EXPECT_FALSE(kind_is_ring_record(EventKind::None));
  EXPECT_FALSE(valid_crash_kind(0));
  // Samples reach the file through the sampling path, not as ring records,
  // and stay out of crash flushes.
  EXPECT_TRUE(valid_file_kind(static_cast<uint8_t>(EventKind::Sample)));
  EXPECT_FALSE(kind_is_ring_record(EventKind::Sample));
  EXPECT_FALSE(valid_crash_kind(static_cast<uint8_t>(EventKind::Sample)));
  EXPECT_TRUE(kind_has_stack(EventKind::Sample));
  // The crash format has one name per event and no address.
  for (EventKind k : {EventKind::Alloc, EventKind::Free, EventKind::ZoneArg})
    EXPECT_FALSE(valid_crash_kind(static_cast<uint8_t>(k))) << event_kind_name(k);
  EXPECT_TRUE(valid_crash_kind(static_cast<uint8_t>(EventKind::Mark))) << "a crash segment carries its mark";
  EXPECT_TRUE(kind_value_is_location(EventKind::ZoneArg));
  EXPECT_TRUE(kind_is_memory(EventKind::Alloc) && kind_is_memory(EventKind::Free));
  // Bytes past the table, from a damaged file.
  for (unsigned bad : {unsigned{kEventKindCount}, 100u, 255u}) {
    EXPECT_FALSE(valid_file_kind(static_cast<uint8_t>(bad)));
    EXPECT_FALSE(valid_crash_kind(static_cast<uint8_t>(bad)));
    EXPECT_STREQ(event_kind_name(static_cast<EventKind>(bad)), "unknown");
  }
  EXPECT_STREQ(event_kind_name(EventKind::ZoneArg), "zone_arg");
}

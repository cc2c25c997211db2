// tests/support/segment_batches.h — hand-made batches for the segment codec
// tests: a Batch builder that owns its data, a session to start files with,
// and a batch holding every event kind the file format stores.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <utility>

#include "support/owned_batch.h"
#include "ringprof/event.h"
#include "ringprof/sink.h"

namespace ringprof::test {

// Owns everything a Batch points to, with builders for hand-made events.
struct BatchData : ringprof::test::OwnedBatch {
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

inline SessionInfo test_session() {
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

// A batch using every kind the file format stores.
inline BatchData every_kind_batch() {
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

}  // namespace ringprof::test

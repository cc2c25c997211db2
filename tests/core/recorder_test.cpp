// The recording path end to end into a capturing sink: every event is
// accounted for (recorded = written + dropped, exactly), names and payloads
// arrive intact, threads come and go without leaking rings.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "draining/drainer_wake.h"
#include "support/capture_sink.h"
#include "recording/clock.h"
#include "ringprof/ringprof.h"
#include "support/sanitizers.h"

using namespace ringprof;
using ringprof::test::CaptureSink;

namespace {

Config quiet_config() {
  Config c;
  c.drain_interval_ms = 2;
  c.flush_interval_ms = 20;
  // These tests identify threads by their ring's index. The sampler (tested
  // in sampler_test) may give a thread it finds before its first event an
  // index of its own, which its ring then joins.
  c.sample_hz = 0;
  return c;
}

// Names the capturing sink gave to a thread's events, in order.
std::vector<std::string> names_of(const CaptureSink& sink, uint32_t thread_index) {
  std::vector<std::string> out;
  for (const auto& e : sink.events)
    if (e.thread_index == thread_index && kind_has_location(e.event.kind)) out.push_back(sink.location_name(e.event.loc));
  return out;
}

}  // namespace

TEST(Recorder, OffIsANoOp) {
  ASSERT_FALSE(is_recording());
  RINGPROF_ZONE("never");
  EXPECT_FALSE(zone_begin(std::string_view("nope")));
  counter("c", 1.0);
  EXPECT_EQ(internal::current_ring(), nullptr);
}

TEST(Recorder, ProducersTimesEventsAllArriveWithLargeRings) {
  auto sink = std::make_shared<CaptureSink>();
  Config c = quiet_config();
  c.ring_bytes = 64u << 20;  // 2M events per thread: nothing can be dropped
  ASSERT_TRUE(start(c, sink));
  constexpr int kThreads = 4;
  constexpr uint64_t kZones = 200000;
  std::vector<uint32_t> index(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (uint64_t i = 0; i < kZones; ++i) {
        RINGPROF_ZONE("work");
      }
      index[t] = internal::t_slot.ring->thread_index;
    });
  }
  for (auto& th : threads) th.join();
  stop();
  EXPECT_TRUE(sink->began);
  EXPECT_TRUE(sink->ended);
  for (int t = 0; t < kThreads; ++t) {
    EXPECT_EQ(sink->count_for(index[t]), 2 * kZones) << "thread " << t;
    EXPECT_EQ(sink->threads[index[t]].dropped_ring, 0u);
  }
  const RecorderStats s = recorder_stats();
  EXPECT_EQ(s.events_written, kThreads * 2 * kZones);
  EXPECT_EQ(s.dropped_ring, 0u);
  EXPECT_EQ(s.rings_live, 0u);
  // Within a thread, timestamps never go backwards and begin/end alternate.
  for (int t = 0; t < kThreads; ++t) {
    uint64_t last = 0;
    EventKind expect = EventKind::ZoneBegin;
    for (const auto& e : sink->events) {
      if (e.thread_index != index[t]) continue;
      ASSERT_GE(e.event.ts, last);
      ASSERT_EQ(e.event.kind, expect);
      last = e.event.ts;
      expect = expect == EventKind::ZoneBegin ? EventKind::ZoneEnd : EventKind::ZoneBegin;
    }
  }
  // Batches are numbered without gaps from 0.
  for (size_t i = 0; i < sink->sequences.size(); ++i) EXPECT_EQ(sink->sequences[i], i);
}

TEST(Recorder, SmallRingsDropAndEveryEventIsAccountedFor) {
  auto sink = std::make_shared<CaptureSink>();
  Config c = quiet_config();
  c.ring_bytes = 4096;          // 128 events
  c.ring_max_bytes = 4096;      // no growth
  c.drain_interval_ms = 50;     // the drainer is slow on purpose
  ASSERT_TRUE(start(c, sink));
  constexpr int kThreads = 3;
  constexpr uint64_t kEvents = 300000;
  std::vector<uint32_t> index(kThreads);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (uint64_t i = 0; i < kEvents; ++i) counter("n", static_cast<double>(i));
      index[t] = internal::t_slot.ring->thread_index;
    });
  }
  for (auto& th : threads) th.join();
  stop();
  uint64_t total_dropped = 0;
  for (int t = 0; t < kThreads; ++t) {
    const uint64_t written = sink->count_for(index[t]);
    const uint64_t dropped = sink->threads[index[t]].dropped_ring;
    EXPECT_EQ(written + dropped, kEvents) << "thread " << t;
    EXPECT_GT(dropped, 0u) << "a 128-slot ring drained every 50 ms must overflow";
    total_dropped += dropped;
    // Survivors keep their values in increasing order: drops leave no torn
    // events. Each gap is marked where it happened: a begin and an end mark
    // whose count is exactly the number of values missing between the
    // counter before them and the counter after.
    double last = -1;
    uint64_t marked = 0;
    std::optional<uint64_t> gap;  // the count of the marks just seen
    for (const auto& e : sink->events) {
      if (e.thread_index != index[t]) continue;
      if (sink->is_drop_mark(e)) {
        const bool begin = sink->location_name(e.event.loc) == kMarkDropsBegin;
        if (begin) {
          ASSERT_FALSE(gap) << "two begin marks in a row";
          gap = e.event.p1;
        } else {
          ASSERT_TRUE(gap && *gap == e.event.p1) << "an end mark without its begin, or another count";
        }
        continue;
      }
      const double v = bits_double(e.event.p1);
      ASSERT_GT(v, last);
      if (gap) {
        EXPECT_EQ(static_cast<uint64_t>(v - last - 1), *gap) << "the marks count the values that are missing";
        marked += *gap;
        gap.reset();
      } else {
        EXPECT_EQ(v, last + 1) << "values missing without a drop mark";
      }
      last = v;
    }
    // Drops after the last event the thread recorded are counted but never
    // marked: no later event closed that gap.
    EXPECT_EQ(marked + static_cast<uint64_t>(kEvents - 1 - last), dropped) << "thread " << t;
  }
  EXPECT_EQ(recorder_stats().dropped_ring, total_dropped);
  // recorder_stats() has the same losses per thread, by tid.
  const RecorderStats rs = recorder_stats();
  EXPECT_EQ(rs.thread_drops.size(), static_cast<size_t>(kThreads)) << "every thread overflowed";
  for (int t = 0; t < kThreads; ++t) {
    const ThreadInfo& info = sink->threads[index[t]];
    uint64_t found = 0;
    for (const ThreadDrops& d : rs.thread_drops)
      if (d.tid == info.tid) found += d.dropped_ring;
    EXPECT_EQ(found, info.dropped_ring) << "thread " << t;
  }
}

// `dropped` counts events: a zone whose begin a full ring refuses records no
// end either, and counts as two. So zones recorded × 2 = written + dropped
// exactly, and no end is written without its begin (an end refused alone
// counts one and leaves its begin open).
TEST(Recorder, DroppedZonesCountTheirBeginAndEnd) {
  auto sink = std::make_shared<CaptureSink>();
  Config c = quiet_config();
  c.ring_bytes = 4096;  // 128 events
  c.ring_max_bytes = 4096;  // no growth
  c.drain_interval_ms = 50;
  ASSERT_TRUE(start(c, sink));
  constexpr uint64_t kZones = 200000;
  uint32_t index = 0;
  std::thread worker([&] {
    for (uint64_t i = 0; i < kZones; ++i) {
      if (i % 2) {
        RINGPROF_ZONE("static_zone");
      } else {
        Zone z(std::string_view("runtime_zone"));  // an inline name: a record of several slots
      }
    }
    index = internal::t_slot.ring->thread_index;
  });
  worker.join();
  stop();
  const uint64_t written = sink->count_for(index);
  const uint64_t dropped = sink->threads[index].dropped_ring;
  EXPECT_GT(dropped, 0u) << "a 128-slot ring must overflow";
  EXPECT_EQ(written + dropped, 2 * kZones);
  EXPECT_EQ(recorder_stats().dropped_ring, dropped);
  // Zones do not nest here: an end always closes the begin just before it.
  bool open = false;
  for (const auto& e : sink->events) {
    if (e.thread_index != index || sink->is_drop_mark(e)) continue;
    if (e.event.kind == EventKind::ZoneEnd) {
      ASSERT_TRUE(open) << "an end without its begin";
    }
    open = e.event.kind == EventKind::ZoneBegin;
  }
}

TEST(Recorder, NamesPayloadsAndThreadNamesArriveIntact) {
  auto sink = std::make_shared<CaptureSink>();
  ASSERT_TRUE(start(quiet_config(), sink));
  uint32_t me = 0;
  std::thread worker([&] {
    set_thread_name("worker-7");
    const std::string long_name(300, 'x');  // 10 continuation slots
    {
      RINGPROF_ZONE("outer");
      zone_begin(std::string_view("dyn/" + std::to_string(42)));
      zone_end();
      zone_begin(std::string_view(long_name));
      zone_end();
      RINGPROF_INSTANT("tick");
      instant(std::string_view("runtime-instant"));
      counter("queue", 2.5);
      counter(std::string_view("runtime-counter"), -7.0);
      flow_begin(99, "request");
      flow_step(99);
      flow_end(99);
      step(12);
    }
    me = internal::t_slot.ring->thread_index;
  });
  worker.join();
  stop();
  const std::vector<std::string> expected_names = {"outer", "dyn/42", std::string(300, 'x'), "tick",
                                                   "runtime-instant", "queue", "runtime-counter", "request"};
  EXPECT_EQ(names_of(*sink, me), expected_names);
  std::vector<EventKind> kinds;
  std::vector<uint64_t> values;
  for (const auto& e : sink->events) {
    if (e.thread_index != me) continue;
    kinds.push_back(e.event.kind);
    if (kind_has_value(e.event.kind)) values.push_back(e.event.p1);
  }
  const std::vector<EventKind> expected_kinds = {
      EventKind::ZoneBegin, EventKind::ZoneBegin, EventKind::ZoneEnd,   EventKind::ZoneBegin,
      EventKind::ZoneEnd,   EventKind::Instant,   EventKind::Instant,   EventKind::Counter,
      EventKind::Counter,   EventKind::FlowBegin, EventKind::FlowStep,  EventKind::FlowEnd,
      EventKind::Step,      EventKind::ZoneEnd};
  EXPECT_EQ(kinds, expected_kinds);
  const std::vector<uint64_t> expected_values = {double_bits(2.5), double_bits(-7.0), 99, 99, 99, 12};
  EXPECT_EQ(values, expected_values);
  EXPECT_EQ(sink->threads[me].name, "worker-7");
  // The static zone keeps its call site.
  bool found = false;
  for (const Location& l : sink->locations) {
    if (l.name == "outer") {
      found = true;
      EXPECT_NE(l.file.find("recorder_test.cpp"), std::string::npos);
      EXPECT_GT(l.line, 0u);
      EXPECT_FALSE(l.function.empty());
    }
  }
  EXPECT_TRUE(found);
}

TEST(Recorder, ShortLivedThreadsLeaveNoRingsBehind) {
  auto sink = std::make_shared<CaptureSink>();
  Config c = quiet_config();
  c.ring_bytes = 16384;
  ASSERT_TRUE(start(c, sink));
  constexpr int kThreads = 10000;
  constexpr int kParallel = 8;
  uint64_t max_live = 0;
  for (int base = 0; base < kThreads; base += kParallel) {
    std::vector<std::thread> batch;
    for (int i = 0; i < kParallel; ++i) {
      batch.emplace_back([] {
        RINGPROF_ZONE("short");
        RINGPROF_INSTANT("alive");
      });
    }
    for (auto& th : batch) th.join();
    if (base % 800 == 0) max_live = std::max(max_live, recorder_stats().rings_live);
  }
  flush();
  const RecorderStats during = recorder_stats();
  stop();
  const RecorderStats after = recorder_stats();
  EXPECT_EQ(after.threads_seen, static_cast<uint64_t>(kThreads));
  EXPECT_EQ(after.events_written, 3ull * kThreads);
  EXPECT_EQ(after.dropped_ring, 0u);
  EXPECT_EQ(sink->events.size(), 3ull * kThreads);
  EXPECT_EQ(after.rings_live, 0u);
  // Rings are reclaimed as threads end, not kept until stop(): however many
  // threads have come and gone, only a handful of rings are alive at a time.
  EXPECT_LT(max_live, 2000u);
  EXPECT_LT(during.rings_live, 100u);
}

TEST(Recorder, FailedWritesAreCountedAsDroppedAndReportedLater) {
  auto sink = std::make_shared<CaptureSink>();
  sink->fail_writes = 2;
  Config c = quiet_config();
  ASSERT_TRUE(start(c, sink));
  uint32_t me = 0;
  std::thread t([&] {
    for (int round = 0; round < 4; ++round) {
      for (int i = 0; i < 1000; ++i) RINGPROF_INSTANT("e");
      flush();  // one batch per round: the first two are refused
    }
    me = internal::t_slot.ring->thread_index;
  });
  t.join();
  stop();
  EXPECT_EQ(sink->failed_batches, 2);
  EXPECT_EQ(sink->count_for(me), 2000u);
  EXPECT_EQ(sink->threads[me].dropped_io, 2000u);
  EXPECT_EQ(recorder_stats().dropped_io, 2000u);
  EXPECT_EQ(recorder_stats().events_written, 2000u);
  // Per thread, in recorder_stats() too: this thread lost those 2000.
  const RecorderStats rs = recorder_stats();
  ASSERT_EQ(rs.thread_drops.size(), 1u);
  EXPECT_EQ(rs.thread_drops[0].tid, sink->threads[me].tid);
  EXPECT_EQ(rs.thread_drops[0].dropped_io, 2000u);
  EXPECT_EQ(rs.thread_drops[0].dropped_ring, 0u);
}

TEST(Recorder, RestartsWithANewSessionOnLiveThreads) {
  for (int session = 0; session < 3; ++session) {
    auto sink = std::make_shared<CaptureSink>();
    ASSERT_TRUE(start(quiet_config(), sink));
    EXPECT_FALSE(start(quiet_config(), std::make_shared<CaptureSink>()));  // already on
    for (int i = 0; i < 10; ++i) RINGPROF_INSTANT("main-thread");
    stop();
    EXPECT_EQ(sink->events.size(), 10u) << "session " << session;
  }
}

TEST(Recorder, ForkedChildRecordsNothingIntoTheParent) {
  auto sink = std::make_shared<CaptureSink>();
  ASSERT_TRUE(start(quiet_config(), sink));
  RINGPROF_INSTANT("before-fork");
  const pid_t pid = fork();
  if (pid == 0) {
    // In the child: recording is off and nothing hangs on the parent's drainer.
    const bool off = !is_recording();
    RINGPROF_INSTANT("in-child");
    flush();
    stop();
    _exit(off ? 0 : 3);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  RINGPROF_INSTANT("after-fork");
  stop();
  ASSERT_EQ(sink->events.size(), 2u);
  EXPECT_EQ(sink->location_name(sink->events[0].event.loc), "before-fork");
  EXPECT_EQ(sink->location_name(sink->events[1].event.loc), "after-fork");
}

TEST(Recorder, ForkedChildCanRecordIntoItsOwnSink) {
#ifdef RINGPROF_SANITIZED_RUNTIME
  // The sanitizer runtimes of clang 14 are not fork-safe for a child that
  // allocates and starts threads: their own allocator lock, held by a parent
  // thread at fork, deadlocks the child inside the runtime (seen under load).
  // glibc's malloc is fork-safe; the release build runs this test.
  GTEST_SKIP() << "sanitizer runtime cannot start threads in the child of a multi-threaded fork";
#endif
  auto sink = std::make_shared<CaptureSink>();
  ASSERT_TRUE(start(quiet_config(), sink));
  RINGPROF_INSTANT("parent-before");  // the forking thread owns a ring at fork time
  const pid_t pid = fork();
  if (pid == 0) {
    auto child_sink = std::make_shared<CaptureSink>();
    if (!start(quiet_config(), child_sink)) _exit(10);
    for (int i = 0; i < 100; ++i) RINGPROF_INSTANT("child-main");
    std::thread t([] {
      for (int i = 0; i < 50; ++i) RINGPROF_INSTANT("child-thread");
    });
    t.join();
    stop();
    if (child_sink->events.size() != 150) _exit(11);
    for (const auto& e : child_sink->events) {
      const std::string n = child_sink->location_name(e.event.loc);
      if (n != "child-main" && n != "child-thread") _exit(12);  // nothing of the parent's
    }
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0) << "10: start failed, 11: events lost, 12: parent events leaked in";
  RINGPROF_INSTANT("parent-after");
  stop();
  EXPECT_EQ(sink->events.size(), 2u);
}

TEST(Recorder, OneBusyThreadDoesNotStarveTheOthers) {
  // A thread recording flat out must not keep the drainer on its ring: a
  // second thread's events and flush() still get through.
  auto sink = std::make_shared<CaptureSink>();
  Config c = quiet_config();
  c.ring_bytes = 1u << 20;
  ASSERT_TRUE(start(c, sink));
  std::atomic<bool> quit{false};
  std::thread busy([&] {
    while (!quit.load(std::memory_order_relaxed)) {
      RINGPROF_ZONE("busy");
    }
  });
  uint32_t me = 0;
  std::thread quiet([&] {
    for (int i = 0; i < 100; ++i) RINGPROF_INSTANT("quiet");
    me = internal::t_slot.ring->thread_index;
  });
  quiet.join();
  const auto t0 = std::chrono::steady_clock::now();
  flush();
  const auto waited = std::chrono::steady_clock::now() - t0;
  quit = true;
  busy.join();
  stop();
  EXPECT_EQ(sink->count_for(me), 100u);
  EXPECT_LT(waited, std::chrono::seconds(5)) << "flush() must not wait for a busy ring to run dry";
}

// Timestamps reach the sink as CLOCK_MONOTONIC nanoseconds whichever clock
// recorded them: an event recorded between two kernel clock reads lands
// between them (exactly for the monotonic fallback; within the TSC
// calibration's error, far below 50 µs, for the TSC).
class ClockTest : public ::testing::TestWithParam<ClockChoice> {};

TEST_P(ClockTest, EventTimesAreMonotonicNanoseconds) {
  auto sink = std::make_shared<CaptureSink>();
  Config c = quiet_config();
  c.clock = GetParam();
  ASSERT_TRUE(start(c, sink));
  std::vector<std::pair<uint64_t, uint64_t>> brackets;
  for (int i = 0; i < 50; ++i) {
    const uint64_t before = internal::monotonic_ns();
    RINGPROF_INSTANT("timed");
    const uint64_t after = internal::monotonic_ns();
    brackets.emplace_back(before, after);
    std::this_thread::sleep_for(std::chrono::milliseconds(1));  // pacing between instants, not a wait
  }
  stop();
  ASSERT_EQ(sink->events.size(), brackets.size());
  const uint64_t slack = GetParam() == ClockChoice::Monotonic ? 0 : 50000;
  for (size_t i = 0; i < brackets.size(); ++i) {
    EXPECT_GE(sink->events[i].event.ts + slack, brackets[i].first) << i;
    EXPECT_LE(sink->events[i].event.ts, brackets[i].second + slack) << i;
  }
  EXPECT_EQ(sink->session.clock.source, GetParam() == ClockChoice::Monotonic ? ClockSource::Monotonic
                                         : cpu_has_invariant_tsc()                 ? ClockSource::Tsc
                                                                                   : ClockSource::Monotonic);
}

INSTANTIATE_TEST_SUITE_P(Clocks, ClockTest, ::testing::Values(ClockChoice::Auto, ClockChoice::Monotonic));

// Growth: a thread that fills its ring moves to a larger one (offered by the
// drainer, or made by the thread itself when nothing was offered), up to
// ring_max_bytes; nothing is dropped on the way and its events stay in order
// across the moves.
TEST(Recorder, AThreadThatOverflowsItsRingGetsALargerOneAndKeepsItsOrder) {
  auto sink = std::make_shared<CaptureSink>();
  Config c = quiet_config();
  c.ring_bytes = 64 * sizeof(Event);       // 64 slots: overflows at once
  c.ring_max_bytes = 16384 * sizeof(Event);  // grows 64 → 256 → 1024 → 4096 → 16384
  ASSERT_TRUE(start(c, sink));
  uint64_t zones = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  do {  // (the thread's ring exists from its first event on)
    for (int i = 0; i < 1000; ++i, ++zones) {
      RINGPROF_ZONE("grow");
    }
  } while (internal::t_slot.ring->capacity() < 16384 && std::chrono::steady_clock::now() < deadline);
  Ring* grown = internal::t_slot.ring;
  ASSERT_EQ(grown->capacity(), 16384u);
  const uint32_t me = grown->thread_index;
  // Now a burst that fits the grown ring whole: nothing of it is dropped.
  flush();
  const uint64_t dropped_before = grown->dropped();
  for (int i = 0; i < 5000; ++i, ++zones) {
    RINGPROF_ZONE("grow");
  }
  EXPECT_EQ(grown->dropped(), dropped_before);
  stop();
  const RecorderStats s = recorder_stats();
  EXPECT_EQ(s.dropped_ring, 0u);  // a full ring grew instead of dropping
  EXPECT_EQ(s.events_written, 2 * zones);
  EXPECT_EQ(sink->count_for(me), s.events_written);
  EXPECT_EQ(sink->threads[me].dropped_ring, s.dropped_ring);
  // In order across the moves. A zone's end never comes without its begin
  // (a refused begin loses its end too), so every end follows a begin (an
  // end refused alone leaves a begin followed by the next begin).
  uint64_t last = 0;
  EventKind previous = EventKind::ZoneEnd;
  for (const auto& e : sink->events) {
    if (e.thread_index != me || sink->is_drop_mark(e)) continue;
    ASSERT_GE(e.event.ts, last);
    if (e.event.kind == EventKind::ZoneEnd) {
      ASSERT_EQ(previous, EventKind::ZoneBegin);
    }
    last = e.event.ts;
    previous = e.event.kind;
  }
}

TEST(Recorder, RingsDoNotGrowPastRingMaxBytes) {
  auto sink = std::make_shared<CaptureSink>();
  Config c = quiet_config();
  c.ring_bytes = 64 * sizeof(Event);
  c.ring_max_bytes = 64 * sizeof(Event);  // no growth
  ASSERT_TRUE(start(c, sink));
  for (int i = 0; i < 100000; ++i) {
    RINGPROF_ZONE("flat");
  }
  EXPECT_EQ(internal::t_slot.ring->capacity(), 64u);
  EXPECT_GT(internal::t_slot.ring->dropped(), 0u);
  stop();
  const RecorderStats s = recorder_stats();
  EXPECT_EQ(s.events_written + s.dropped_ring, 200000u);
}

// flush() right after the thread moved to a larger ring: what the thread
// wrote into the new ring is written too (the drainer reads the old ring to
// its end and goes on in the new one in the same pass).
TEST(Recorder, FlushAfterAMoveToALargerRingHasEveryEvent) {
  auto sink = std::make_shared<CaptureSink>();
  Config c = quiet_config();
  c.ring_bytes = 64 * sizeof(Event);
  c.ring_max_bytes = 65536 * sizeof(Event);
  ASSERT_TRUE(start(c, sink));
  struct StopAtEnd {
    ~StopAtEnd() { stop(); }
  } stop_at_end;  // also when an assertion returns early
  uint64_t zones = 0;
  int moves = 0;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  RINGPROF_ZONE("first");  // the thread's ring exists from here on
  ++zones;
  while (internal::t_slot.ring->capacity() < 65536 && std::chrono::steady_clock::now() < deadline) {
    const Ring* before = internal::t_slot.ring;
    for (int i = 0; i < 200 && internal::t_slot.ring == before; ++i, ++zones) {
      RINGPROF_ZONE("move");
    }
    if (internal::t_slot.ring == before) continue;
    // Moved: a few events in the new ring, then flush().
    for (int i = 0; i < 3; ++i, ++zones) {
      RINGPROF_ZONE("after");
    }
    ++moves;
    flush();
    const RecorderStats s = recorder_stats();
    // The zone "first" is still open: its end is not recorded yet.
    ASSERT_EQ(s.events_written + s.dropped_ring + s.dropped_io, 2 * zones - 1) << "after move " << moves;
  }
  EXPECT_GE(moves, 3);  // 64 → 256 → 1024 → 4096 → 16384 → 65536, at most 4x a move
}

namespace {
// Waits, at most `limit`, until `done()`.
template <typename Done>
bool wait_for(Done done, std::chrono::milliseconds limit) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

size_t events_named(const CaptureSink& sink, const std::string& name) {
  std::lock_guard<std::mutex> lock(sink.mutex_);
  size_t n = 0;
  for (const auto& e : sink.events) n += kind_has_location(e.event.kind) && sink.location_name(e.event.loc) == name;
  return n;
}
}  // namespace

// Idle, the drainer sleeps until the next event: no rounds at all, not even
// the back-off's. One instant recorded then, far below its ring's wake fill,
// still reaches the sink within the flush interval, because the thread's
// next record wakes the drainer; without that wake it would wait for the
// sleep's 10 s limit. The bound (3 s, against 10 s) fails only on a machine
// that keeps the drainer off a core for seconds.
TEST(Recorder, AnEventAfterAnIdleStretchArrivesWithinTheFlushInterval) {
  auto sink = std::make_shared<CaptureSink>();
  Config c = quiet_config();
  c.flush_interval_ms = 50;
  c.heap_interval = 0;
  ASSERT_TRUE(start(c, sink));
  RINGPROF_INSTANT("before");  // this thread's ring exists from here on
  ASSERT_TRUE(wait_for([&] { return events_named(*sink, "before") == 1; }, std::chrono::seconds(10)));
  ASSERT_TRUE(wait_for([] { return drainer_wake::sleeping_until_event(); }, std::chrono::seconds(10)))
      << "the drainer never slept until the next event";
  const RecorderStats asleep = recorder_stats();
  RINGPROF_INSTANT("after");
  ASSERT_TRUE(wait_for([&] { return events_named(*sink, "after") == 1; }, std::chrono::seconds(3)))
      << "the record did not wake the sleeping drainer";
  EXPECT_GT(recorder_stats().drainer_cpu_ns, asleep.drainer_cpu_ns) << "a round ran for it";
  stop();
  EXPECT_EQ(recorder_stats().events_written, 2u);
}

namespace {
// The voluntary context switches of this process's thread named `comm`
// (each sleep of the drainer is one), or nullopt when it is not found.
std::optional<uint64_t> voluntary_switches(const std::string& comm) {
  for (const auto& task : std::filesystem::directory_iterator("/proc/self/task")) {
    std::ifstream name(task.path() / "comm");
    std::string n;
    std::getline(name, n);
    if (n != comm) continue;
    std::ifstream status(task.path() / "status");
    for (std::string line; std::getline(status, line);)
      if (line.rfind("voluntary_ctxt_switches:", 0) == 0) return std::stoull(line.substr(24));
  }
  return std::nullopt;
}

// The drainer's sleeps while this thread records 500 instants "slow", one
// every 2 ms: paced like a slow workload (the pause is the workload's, not a
// wait). nullopt when the drainer's thread is not found.
std::optional<uint64_t> drainer_sleeps_over_slow_instants() {
  const std::optional<uint64_t> before = voluntary_switches("ringprof-drain");
  for (int i = 0; i < 500; ++i) {
    RINGPROF_INSTANT("slow");
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  const std::optional<uint64_t> after = voluntary_switches("ringprof-drain");
  if (!before || !after) return std::nullopt;
  return *after - *before;
}
}  // namespace

// Events that come slowly (one every 2 ms, far below the ring's wake fill)
// back the drainer off as idle rounds do: it went round every
// RINGPROF_DRAIN_MS (here 10 ms: 100 rounds in the second) and now doubles its
// sleep up to the batch's due time. Each event still arrives: the last within
// 2 s (a batch is due RINGPROF_FLUSH_MS, 200 ms, after its oldest event).
// The bound of 40 sleeps leaves room for the sleeps before the first event
// and for whatever wakes it besides.
TEST(Recorder, EventsBelowTheWakeFillBackTheDrainerOff) {
  auto sink = std::make_shared<CaptureSink>();
  Config c = quiet_config();
  c.drain_interval_ms = 10;
  c.flush_interval_ms = 200;
  c.heap_interval = 0;
  ASSERT_TRUE(start(c, sink));
  RINGPROF_INSTANT("first");
  ASSERT_TRUE(wait_for([&] { return events_named(*sink, "first") == 1; }, std::chrono::seconds(10)));
  const std::optional<uint64_t> sleeps = drainer_sleeps_over_slow_instants();
  RINGPROF_INSTANT("last");
  ASSERT_TRUE(wait_for([&] { return events_named(*sink, "last") == 1; }, std::chrono::seconds(2)));
  ASSERT_TRUE(sleeps.has_value());
  EXPECT_LT(*sleeps, 40u) << "the drainer went round on the interval while events came";
  stop();
  EXPECT_EQ(events_named(*sink, "slow"), 500u);
  EXPECT_EQ(recorder_stats().dropped_ring, 0u);
}

// A small ring read across its end many times, with plain records (zones
// and instants named at their call site, which the drainer copies in a loop
// of their own) between ones it handles one at a time (static-string names,
// run-time names in continuation slots): every record arrives, in order, with
// its name, its value only where its kind has one, and no stale payload.
TEST(Recorder, MixedRecordsAcrossTheRingsEndArriveInOrder) {
  auto sink = std::make_shared<CaptureSink>();
  Config c = quiet_config();
  c.ring_bytes = 256 * sizeof(Event);  // 64 slots wake the drainer
  c.ring_max_bytes = c.ring_bytes;     // and it never grows
  ASSERT_TRUE(start(c, sink));
  uint32_t me = 0;
  constexpr int kRounds = 300;
  std::thread worker([&] {
    for (int r = 0; r < kRounds; ++r) {
      {
        RINGPROF_ZONE("outer");
        RINGPROF_COUNTER("depth", r);
        instant(std::string_view("runtime-" + std::to_string(r % 3)));
        RINGPROF_INSTANT("tick");
      }
      flow_begin(static_cast<uint64_t>(r), "hop");
      if (r % 20 == 19) flush();  // the ring is read at other offsets each time
    }
    me = internal::t_slot.ring->thread_index;
  });
  worker.join();
  stop();
  ASSERT_EQ(recorder_stats().dropped_ring, 0u);
  std::vector<std::string> names;
  std::vector<EventKind> kinds;
  std::vector<uint64_t> values;
  for (const auto& e : sink->events) {
    if (e.thread_index != me) continue;
    kinds.push_back(e.event.kind);
    if (kind_has_location(e.event.kind)) names.push_back(sink->location_name(e.event.loc));
    values.push_back(e.event.p1);
  }
  std::vector<std::string> expected_names;
  std::vector<EventKind> expected_kinds;
  std::vector<uint64_t> expected_values;
  for (int r = 0; r < kRounds; ++r) {
    for (const char* n : {"outer", "depth"}) expected_names.push_back(n);
    expected_names.push_back("runtime-" + std::to_string(r % 3));
    for (const char* n : {"tick", "hop"}) expected_names.push_back(n);
    for (EventKind k : {EventKind::ZoneBegin, EventKind::Counter, EventKind::Instant, EventKind::Instant,
                        EventKind::ZoneEnd, EventKind::FlowBegin})
      expected_kinds.push_back(k);
    for (uint64_t v : {uint64_t{0}, double_bits(r), uint64_t{0}, uint64_t{0}, uint64_t{0}, static_cast<uint64_t>(r)})
      expected_values.push_back(v);
  }
  EXPECT_EQ(kinds, expected_kinds);
  EXPECT_EQ(names, expected_names);
  EXPECT_EQ(values, expected_values);
}

// The same back-off beside threads the CPU sampler samples a thousand times a
// second each: a sample does not end a sleep taken while events come (it
// would, every one of them, were it the back-off of an idle drainer), so the
// drainer sleeps about as often as without them; only a sample ring past its
// wake fill wakes it (a quarter of 1024 slots: tens of samples). Skipped where
// the sampler cannot run or took almost no samples.
TEST(Recorder, SamplesDoNotEndTheBackOffWhileEventsCome) {
  auto sink = std::make_shared<CaptureSink>();
  Config c = quiet_config();
  c.drain_interval_ms = 10;
  c.flush_interval_ms = 200;
  c.heap_interval = 0;
  c.sample_hz = 1000;
  ASSERT_TRUE(start(c, sink));
  std::atomic<bool> done{false};
  std::vector<std::thread> spinners;
  for (int t = 0; t < 2; ++t)
    spinners.emplace_back([&] {
      uint64_t x = 1;
      while (!done.load(std::memory_order_relaxed)) x = x * 6364136223846793005ull + 1;
      EXPECT_NE(x, 0u);
    });
  RINGPROF_INSTANT("first");
  ASSERT_TRUE(wait_for([&] { return events_named(*sink, "first") == 1; }, std::chrono::seconds(10)));
  const uint64_t samples_before = recorder_stats().samples_taken;
  const std::optional<uint64_t> sleeps = drainer_sleeps_over_slow_instants();
  const uint64_t samples = recorder_stats().samples_taken - samples_before;
  done = true;
  for (auto& t : spinners) t.join();
  stop();
  if (samples < 200) GTEST_SKIP() << "the sampler took " << samples << " samples";
  ASSERT_TRUE(sleeps.has_value());
  EXPECT_LT(*sleeps, samples / 4) << samples << " samples";
  EXPECT_EQ(events_named(*sink, "slow"), 500u);
}

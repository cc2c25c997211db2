// Async spans from the recording API to the tools: a producer thread begins
// each span (with an argument), a consumer thread ends it, as a worker pool
// or a collective's backend thread does. Through the rings, the drainer and
// the files, the tools pair every span by id across the two threads.
// (The tools alone: tools/async_spans_test.cpp; PyTorch's c10d work:
// python/test_torch_distributed.py.)
#include <gtest/gtest.h>

#include <condition_variable>
#include <deque>
#include <mutex>
#include <set>
#include <thread>

#include "ringprof/ringprof.h"
#include "ringprof/tools/op_table.h"
#include "ringprof/tools/trace_info.h"
#include "ringprof/tools/trace_reader.h"
#include "ringprof/tools/zone_tracker.h"
#include "support/test_support.h"

namespace ringprof {
namespace {

constexpr int kSpans = 500;

TEST(AsyncSpan, BegunOnOneThreadEndedOnAnotherArePairedById) {
  test::TempDir dir;
  Config c;
  c.dir = dir.path();
  c.sample_hz = 0;
  c.gpu = false;
  EXPECT_FALSE(async_begin(new_async_id(), "request"));  // not recording: nothing
  ASSERT_TRUE(start(c));
  std::mutex mu;
  std::condition_variable cv;
  std::deque<uint64_t> queue;
  bool done = false;
  std::thread consumer([&] {
    set_thread_name("consumer");
    for (;;) {
      std::unique_lock<std::mutex> l(mu);
      cv.wait(l, [&] { return done || !queue.empty(); });
      if (queue.empty()) return;
      const uint64_t id = queue.front();
      queue.pop_front();
      l.unlock();
      async_end(id);
    }
  });
  std::set<uint64_t> ids;
  for (int i = 0; i < kSpans; ++i) {
    const uint64_t id = new_async_id();
    ids.insert(id);
    ASSERT_TRUE(i % 2 ? async_begin(id, "request")
                      : async_begin(id, std::string_view("request")));  // static and run-time names
    zone_arg("size", int64_t{i % 2});
    {
      std::lock_guard<std::mutex> l(mu);
      queue.push_back(id);
    }
    cv.notify_one();
  }
  {
    std::lock_guard<std::mutex> l(mu);
    done = true;
  }
  cv.notify_one();
  consumer.join();
  stop();
  EXPECT_EQ(ids.size(), static_cast<size_t>(kSpans));  // new_async_id() never repeats

  std::vector<ClosedZone> spans;
  uint64_t unterminated = 0, unmatched = 0;
  {
    TraceReader reader({dir.path()});
    ZoneTracker tracker([](const ClosedZone&) {});
    tracker.set_on_async([&](const ClosedZone& z) { spans.push_back(z); });
    reader.read([&](const SegmentView& v) {
      for (const DecodedEvent& e : v.segment.events) tracker.add(e);
    });
    tracker.finish();
    unterminated = tracker.unterminated();
    unmatched = tracker.unmatched_async_ends();
    EXPECT_FALSE(reader.has_problems());
  }
  EXPECT_EQ(unterminated, 0u);
  EXPECT_EQ(unmatched, 0u);
  ASSERT_EQ(spans.size(), static_cast<size_t>(kSpans));
  std::set<uint64_t> seen;
  for (const ClosedZone& z : spans) {
    seen.insert(z.async_id);
    EXPECT_NE(z.thread_index, z.end_thread_index);  // begun by the producer, ended by the consumer
    EXPECT_LE(z.begin_ns, z.end_ns);
    ASSERT_EQ(z.args.size(), 1u);
  }
  EXPECT_EQ(seen, ids);

  TraceReader reader({dir.path()});
  TableOptions by_args;
  by_args.group_by_args = true;
  const TableResult t = compute_table(reader, by_args);
  uint64_t calls = 0;
  for (const TableRow& r : t.rows) {
    ASSERT_EQ(r.name, "request");
    EXPECT_TRUE(r.args == "size=0" || r.args == "size=1") << r.args;
    EXPECT_EQ(r.calls, static_cast<uint64_t>(kSpans / 2));
    EXPECT_EQ(r.self_ns, 0u);
    calls += r.calls;
  }
  EXPECT_EQ(calls, static_cast<uint64_t>(kSpans));
  EXPECT_EQ(t.unterminated_zones, 0u);
  TraceReader again({dir.path()});
  const TraceInfo info = collect_info(again);
  EXPECT_EQ(info.events_by_kind[static_cast<size_t>(EventKind::AsyncBegin)], static_cast<uint64_t>(kSpans));
  EXPECT_EQ(info.events_by_kind[static_cast<size_t>(EventKind::AsyncEnd)], static_cast<uint64_t>(kSpans));
}

}  // namespace
}  // namespace ringprof

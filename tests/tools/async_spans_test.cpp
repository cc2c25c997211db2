// Async spans (AsyncBegin/AsyncEnd) in the tools: pairing by id across
// threads, whichever thread's events come first; arguments; the table's
// rows; the Chrome trace's async pairs; extraction restating spans that
// cross the range's edges. (The Perfetto trace's lanes:
// perfetto_trace_test.cpp; a real recording: end_to_end/async_span_test.cpp.)
//
// The workload, one segment, times in µs from T. The builder writes a
// segment's events thread by thread in thread order, so every event of
// "worker" (thread 1) reaches the tools before any of "main" (thread 2):
//   main:   outer [0, 100] (a zone)
//           work#7 begins at 10 with Input Dims=[[2]]    ends at 150 on worker
//           work#8 begins at 200                           ends at 260 on main
//           hang#10 begins at 400, never ends
//           tail [450, 500] (a zone): main's last event at 500
//   worker: an end of #99, whose begin was never recorded, at 50
//           work#9 begins at 220                           ends at 300 on main
// So: work 3 calls, 140 + 60 + 80 = 280 µs, min 60, max 140, no self time;
// hang 1 call, unterminated, 100 µs (it closes at the process's last event,
// 500); outer keeps its 100 µs of self time (a span is nobody's child).
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "ringprof/tools/chrome_trace.h"
#include "ringprof/tools/extract.h"
#include "ringprof/tools/op_table.h"
#include "ringprof/tools/trace_reader.h"
#include "ringprof/tools/zone_tracker.h"
#include "support/test_support.h"
#include "support/trace_builder.h"

namespace ringprof {
namespace {

using test::TraceBuilder;
constexpr uint64_t T = 1'000'000'000ull;
constexpr uint64_t kUs = 1000;

class AsyncSpansTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = dir_.file("async.rpf");
    TraceBuilder b(4242, T);
    const uint32_t worker = b.thread(101, "worker");
    const uint32_t main_t = b.thread(100, "main");
    const uint32_t work = b.location("work"), hang = b.location("hang");
    const uint32_t outer = b.location("outer"), tail = b.location("tail");
    const uint32_t dims = b.location("Input Dims"), two = b.location("[[2]]");
    b.async_end(worker, T + 50 * kUs, 99);
    b.begin(main_t, T, outer);
    b.async_begin(main_t, T + 10 * kUs, 7, work);
    b.arg(main_t, T + 10 * kUs, dims, two);
    b.end(main_t, T + 100 * kUs);
    b.async_end(worker, T + 150 * kUs, 7);
    b.async_begin(main_t, T + 200 * kUs, 8, work);
    b.async_end(main_t, T + 260 * kUs, 8);
    b.async_begin(worker, T + 220 * kUs, 9, work);
    b.async_end(main_t, T + 300 * kUs, 9);
    b.async_begin(main_t, T + 400 * kUs, 10, hang);
    b.begin(main_t, T + 450 * kUs, tail);
    b.end(main_t, T + 500 * kUs);
    b.flush();
    test::write_file(path_, b.bytes());
  }
  test::TempDir dir_;
  std::string path_;
};

TEST_F(AsyncSpansTest, PairedByIdWhicheverThreadComesFirst) {
  std::vector<ClosedZone> zones, spans;
  ZoneTracker tracker([&](const ClosedZone& z) { zones.push_back(z); });
  tracker.set_on_async([&](const ClosedZone& z) { spans.push_back(z); });
  TraceReader reader({path_});
  reader.read([&](const SegmentView& v) {
    for (const DecodedEvent& e : v.segment.events) tracker.add(e);
  });
  tracker.finish();
  ASSERT_EQ(zones.size(), 2u);  // outer and tail: spans never reach on_close
  std::map<uint64_t, ClosedZone> by_id;
  for (const ClosedZone& z : spans) by_id[z.async_id] = z;
  ASSERT_EQ(by_id.size(), 4u);
  const ClosedZone& a = by_id.at(7);
  EXPECT_TRUE(a.async);
  EXPECT_EQ(a.begin_ns, T + 10 * kUs);
  EXPECT_EQ(a.end_ns, T + 150 * kUs);
  EXPECT_EQ(a.thread_index, 2u);      // main
  EXPECT_EQ(a.end_thread_index, 1u);  // worker
  EXPECT_EQ(a.depth, 0u);
  EXPECT_EQ(a.children_ns, 0u);
  ASSERT_EQ(a.args.size(), 1u);
  EXPECT_FALSE(a.unterminated);
  EXPECT_EQ(by_id.at(8).duration_ns(), 60 * kUs);
  EXPECT_TRUE(by_id.at(8).args.empty());
  EXPECT_EQ(by_id.at(9).thread_index, 1u);
  EXPECT_EQ(by_id.at(9).end_thread_index, 2u);
  EXPECT_EQ(by_id.at(9).duration_ns(), 80 * kUs);
  EXPECT_TRUE(by_id.at(10).unterminated);
  EXPECT_EQ(by_id.at(10).end_ns, T + 500 * kUs);
  EXPECT_EQ(tracker.unterminated(), 1u);
  EXPECT_EQ(tracker.unmatched_async_ends(), 1u);  // #99
  EXPECT_EQ(tracker.unmatched_ends(), 0u);
  // The argument after work#7's begin is the span's, not outer's.
  for (const ClosedZone& z : zones) EXPECT_TRUE(z.args.empty());
}

TEST_F(AsyncSpansTest, TableCountsCallsAndDurationsButNoSelfTime) {
  TraceReader reader({path_});
  const TableResult t = compute_table(reader, {});
  std::map<std::string, TableRow> rows;
  for (const TableRow& r : t.rows) rows[r.name] = r;
  const TableRow& work = rows.at("work");
  EXPECT_EQ(work.calls, 3u);
  EXPECT_EQ(work.total_ns, 280 * kUs);
  EXPECT_EQ(work.self_ns, 0u);
  EXPECT_EQ(work.min_ns, 60 * kUs);
  EXPECT_EQ(work.max_ns, 140 * kUs);
  EXPECT_EQ(rows.at("hang").calls, 1u);
  EXPECT_EQ(rows.at("hang").total_ns, 100 * kUs);
  EXPECT_EQ(rows.at("outer").self_ns, 100 * kUs);
  EXPECT_EQ(t.sum_self_ns, 150 * kUs);  // outer and tail: the spans add none
  EXPECT_EQ(t.unterminated_zones, 1u);
  TableOptions by_args;
  by_args.group_by_args = true;
  TraceReader again({path_});
  const TableResult split = compute_table(again, by_args);
  size_t work_rows = 0;
  for (const TableRow& r : split.rows) {
    if (r.name != "work") continue;
    ++work_rows;
    EXPECT_EQ(r.calls, r.args.empty() ? 2u : 1u) << r.args;
  }
  EXPECT_EQ(work_rows, 2u);
}

TEST_F(AsyncSpansTest, ChromeTraceWritesAsyncPairsScopedToTheProcess) {
  TraceReader reader({path_});
  std::ostringstream out;
  write_chrome_trace(reader, {}, out);
  const nlohmann::json j = nlohmann::json::parse(out.str());
  std::map<std::string, nlohmann::json> begins, ends;
  for (const auto& e : j["traceEvents"]) {
    if (e.value("cat", "") != "async") continue;
    const std::string id = e["id2"]["local"];
    (e["ph"] == "b" ? begins : ends)[id] = e;
    EXPECT_EQ(e["pid"], 4242);
  }
  ASSERT_EQ(begins.size(), 4u);
  ASSERT_EQ(ends.size(), 4u);
  EXPECT_EQ(begins.at("0x7")["tid"], 100);
  EXPECT_EQ(ends.at("0x7")["tid"], 101);
  EXPECT_EQ(begins.at("0x7")["args"]["Input Dims"], "[[2]]");
  EXPECT_DOUBLE_EQ(ends.at("0x7")["ts"].get<double>() - begins.at("0x7")["ts"].get<double>(), 140.0);
  EXPECT_EQ(begins.at("0xa")["name"], "hang");
  EXPECT_EQ(begins.at("0xa")["args"]["unterminated"], true);
  for (const auto& [id, b] : begins) EXPECT_EQ(ends.at(id)["name"], b["name"]) << id;
  // No span is written as a complete ("X") slice of a thread.
  for (const auto& e : j["traceEvents"]) {
    if (e.value("ph", "") == "X") {
      EXPECT_TRUE(e["name"] == "outer" || e["name"] == "tail") << e.dump();
    }
  }
}

// Extracting [120, 280]: work#7 crosses the start (its begin restated at 120
// with its argument, its end kept at 150), work#8 lies inside, work#9
// crosses the end (ended at 280); hang and the stray end of #99 lie outside.
TEST_F(AsyncSpansTest, ExtractRestatesSpansCrossingTheRangeEdges) {
  ExtractOptions o;
  o.output_dir = dir_.file("x");
  o.range.from_ns = 120 * kUs;
  o.range.to_ns = 280 * kUs;
  const ExtractResult r = extract_range({path_}, o);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.clipped_zones, 2u);  // #7's begin, #9's end
  std::map<uint64_t, ClosedZone> by_id;
  ZoneTracker tracker([](const ClosedZone&) {});
  tracker.set_on_async([&](const ClosedZone& z) { by_id[z.async_id] = z; });
  TraceReader reader({o.output_dir});
  reader.read([&](const SegmentView& v) {
    for (const DecodedEvent& e : v.segment.events) tracker.add(e);
  });
  tracker.finish();
  EXPECT_FALSE(reader.has_problems());
  EXPECT_EQ(tracker.unterminated(), 0u);
  EXPECT_EQ(tracker.unmatched_async_ends(), 0u);
  ASSERT_EQ(by_id.size(), 3u);
  EXPECT_EQ(by_id.at(7).begin_ns, T + 120 * kUs);
  EXPECT_EQ(by_id.at(7).end_ns, T + 150 * kUs);
  EXPECT_EQ(by_id.at(7).args.size(), 1u);
  EXPECT_EQ(by_id.at(7).thread_index, 2u);
  EXPECT_EQ(by_id.at(7).end_thread_index, 1u);
  EXPECT_EQ(by_id.at(8).duration_ns(), 60 * kUs);
  EXPECT_EQ(by_id.at(9).begin_ns, T + 220 * kUs);
  EXPECT_EQ(by_id.at(9).end_ns, T + 280 * kUs);
}

}  // namespace
}  // namespace ringprof

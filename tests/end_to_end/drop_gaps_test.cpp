// Back-pressure made visible, from the recording to the tools: a thread that
// outruns a tiny ring loses events, its ring marks every gap where it
// happened, the files carry the marks and the per-thread counts, `ringprof
// info` names the gaps, and the Chrome trace draws each gap on the thread's
// track with its count. Every number is checked against the counter values
// that are missing.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "ringprof/ringprof.h"
#include "ringprof/sinks.h"
#include "ringprof/tools/chrome_trace.h"
#include "ringprof/tools/trace_info.h"
#include "ringprof/tools/trace_reader.h"
#include "support/named_events.h"
#include "support/test_support.h"

namespace ringprof {
namespace {

using nlohmann::json;

TEST(DropGaps, MarkedInTheFilesCountedByInfoAndDrawnInTheChromeTrace) {
  test::TempDir dir;
  Config c;
  c.dir = dir.path();
  c.ring_bytes = 64 * sizeof(Event);  // 64 events: a tight loop outruns any drainer
  c.ring_max_bytes = 0;               // and the ring may not grow
  c.sample_hz = 0;
  c.gpu = false;
  c.ops.crash_flush = false;
  c.ops.signal_flush = false;
  ASSERT_TRUE(start(c));
  constexpr uint64_t kEvents = 200000;
  std::thread worker([] {
    set_thread_name("flooder");
    for (uint64_t i = 0; i < kEvents - 1; ++i) counter("n", static_cast<double>(i));
    // Once the drainer has emptied the ring, one last value closes the last
    // gap, so every drop is inside a marked gap.
    flush();
    counter("n", static_cast<double>(kEvents - 1));
  });
  worker.join();
  stop();
  const RecorderStats st = recorder_stats();
  ASSERT_GT(st.dropped_ring, 0u) << "a 64-slot ring must overflow";
  // The thread name, its first record, goes to the thread's info, not to the
  // events; the ring is empty then, so it is never the one dropped.
  ASSERT_EQ(st.events_written + st.dropped_ring, kEvents);

  // The files: the flooder's counters with gaps, each gap marked by a begin
  // and an end mark whose count is the number of values missing there.
  const test::NamedTrace t = test::read_named({dir.path()});
  ASSERT_TRUE(t.problems.empty());
  uint64_t gaps = 0, marked = 0;
  double last = -1;
  bool in_gap = false;  // between a begin mark and the next counter
  uint64_t gap = 0;     // that mark's count
  for (const test::NamedEvent& e : t.events) {
    if (e.thread != "flooder") continue;
    if (e.kind == EventKind::Mark && e.name == kMarkDropsBegin) {
      ASSERT_FALSE(in_gap);
      in_gap = true;
      gap = e.value;
    } else if (e.kind == EventKind::Mark && e.name == kMarkDropsEnd) {
      ASSERT_TRUE(in_gap && gap == e.value);
    } else if (e.kind == EventKind::Counter) {
      const double v = bits_double(e.value);
      const uint64_t missing = static_cast<uint64_t>(v - last - 1);
      EXPECT_EQ(missing, in_gap ? gap : 0) << "after value " << last;
      if (in_gap) {
        ++gaps;
        marked += gap;
      }
      in_gap = false;
      last = v;
    }
  }
  ASSERT_GT(gaps, 0u);
  EXPECT_EQ(last, static_cast<double>(kEvents - 1));
  EXPECT_EQ(marked, st.dropped_ring);

  // ringprof info: the thread's drops, in events, and its gaps.
  {
    TraceReader reader({dir.path()});
    const TraceInfo info = collect_info(reader);
    const std::string text = format_info(info);
    const std::string expected = "dropped " + std::to_string(st.dropped_ring) + " events (ring full, " +
                                 std::to_string(gaps) + (gaps == 1 ? " gap" : " gaps") + ")";
    EXPECT_NE(text.find(expected), std::string::npos) << text;
    EXPECT_EQ(text.find("events dropped from here"), std::string::npos) << "gaps are summed, not listed as marks";
  }

  // The Chrome trace: one slice per gap on the flooder's track, its count in
  // args and its name, spanning from the first lost event to the next kept one.
  TraceReader reader({dir.path()});
  std::ostringstream out;
  write_chrome_trace(reader, ChromeTraceOptions{}, out);
  const json doc = json::parse(out.str());
  uint64_t slices = 0, in_slices = 0;
  for (const json& e : doc.at("traceEvents")) {
    if (e.value("cat", "") != "ringprof.dropped") continue;
    EXPECT_EQ(e.at("ph"), "X");
    EXPECT_GE(e.at("dur").get<double>(), 0.0);
    const uint64_t n = e.at("args").at("dropped").get<uint64_t>();
    EXPECT_EQ(e.at("name"), "ringprof: " + std::to_string(n) + " events dropped (ring full)");
    ++slices;
    in_slices += n;
  }
  EXPECT_EQ(slices, gaps);
  EXPECT_EQ(in_slices, marked);
}

}  // namespace
}  // namespace ringprof

// The progress line long reads show on a terminal: silent for the first
// second, at most ten redraws a second, bytes and files as the reader
// reports them, cleared at the end, and nothing at all when disabled.
#include "ringprof/tools/progress.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "ringprof/tools/trace_reader.h"
#include "support/test_support.h"
#include "support/trace_builder.h"

namespace ringprof {
namespace {

constexpr uint64_t kMs = 1'000'000;
constexpr uint64_t kMiB = 1024 * 1024;

// A reporter writing into `out`, on a clock the test moves by hand.
struct Harness {
  std::vector<std::string> writes;
  uint64_t now = 0;
  ProgressReporter progress{"reading", [this](std::string_view s) { writes.emplace_back(s); }, [this] { return now; }};
};

TEST(Progress, SilentDuringTheFirstSecond) {
  Harness h;
  h.progress.start(4 * kMiB, 2);
  for (h.now = 0; h.now < 1000 * kMs; h.now += 50 * kMs) h.progress.update(h.now / kMs * 1024, 0);
  EXPECT_TRUE(h.writes.empty());
  h.progress.finish();
  EXPECT_TRUE(h.writes.empty()) << "nothing drawn, nothing to clear";
}

TEST(Progress, DrawsAfterTheDelayThrottledToTenPerSecond) {
  Harness h;
  h.progress.start(4 * kMiB, 3);
  h.now = 1000 * kMs;
  h.progress.update(kMiB, 1);
  ASSERT_EQ(h.writes.size(), 1u);
  EXPECT_EQ(h.writes[0], "\rreading: 1.0 of 4.0 MiB (25%), file 2 of 3");
  // Updates every 10 ms for a second: one redraw per 100 ms.
  for (int i = 1; i <= 100; ++i) {
    h.now = 1000 * kMs + i * 10 * kMs;
    h.progress.update(kMiB + static_cast<uint64_t>(i) * 1000, 1);
  }
  EXPECT_EQ(h.writes.size(), 11u);
}

TEST(Progress, ReportsBytesAndFilesAndClearsItsLine) {
  Harness h;
  h.progress.start(10 * kMiB, 4);
  h.now = 2000 * kMs;
  h.progress.update(10 * kMiB, 4);
  ASSERT_EQ(h.writes.size(), 1u);
  const std::string line = "reading: 10.0 of 10.0 MiB (100%), file 4 of 4";
  EXPECT_EQ(h.writes[0], "\r" + line);
  h.progress.finish();
  ASSERT_EQ(h.writes.size(), 2u);
  EXPECT_EQ(h.writes[1], "\r" + std::string(line.size(), ' ') + "\r");
  h.progress.finish();
  EXPECT_EQ(h.writes.size(), 2u) << "cleared once";
}

TEST(Progress, AShorterLineCoversTheLongerOne) {
  Harness h;
  h.progress.start(100 * kMiB, 12);
  h.now = 1000 * kMs;
  h.progress.update(99 * kMiB, 10);  // "... 99.0 of 100.0 MiB (99%), file 11 of 12"
  h.progress.start(kMiB, 1);         // a second pass over the input
  h.now += 100 * kMs;
  h.progress.update(0, 0);
  ASSERT_EQ(h.writes.size(), 2u);
  EXPECT_EQ(h.writes[1].size(), h.writes[0].size());
  EXPECT_EQ(h.writes[1].rfind("\rreading: 0.0 of 1.0 MiB (0%), file 1 of 1 ", 0), 0u) << h.writes[1];
}

TEST(Progress, DisabledWritesNothing) {
  ProgressReporter none;
  EXPECT_FALSE(none.enabled());
  none.start(kMiB, 1);
  none.update(kMiB, 1);
  none.finish();

  // Not a terminal: a file stands in for a pipe.
  std::FILE* file = std::tmpfile();
  ASSERT_NE(file, nullptr);
  {
    ProgressReporter reporter = ProgressReporter::for_terminal(file, "reading");
    EXPECT_FALSE(reporter.enabled());
    reporter.start(kMiB, 1);
    reporter.update(kMiB / 2, 0);
    reporter.finish();
  }
  EXPECT_EQ(std::ftell(file), 0L);
  std::fclose(file);
}

TEST(Progress, FedByTheReader) {
  test::TempDir dir;
  uint64_t total = 0;
  for (const char* name : {"a.rpf", "b.rpf"}) {
    test::TraceBuilder b(name[0] == 'a' ? 1 : 2);
    const uint32_t th = b.thread(7, "main");
    const uint32_t work = b.location("work");
    for (uint64_t k = 0; k < 3; ++k) {
      b.begin(th, 1'000'000'000 + k * 1000, work);
      b.end(th, 1'000'000'000 + k * 1000 + 500);
      b.flush();
    }
    test::write_file(dir.file(name), b.bytes());
    total += b.bytes().size();
  }
  // Every clock reading is 100 ms after the last: the reporter draws as soon
  // as the delay has passed and at every update after it.
  std::vector<std::string> writes;
  uint64_t now = 0;
  ProgressReporter progress(
      "reading", [&](std::string_view s) { writes.emplace_back(s); }, [&] { return now += 100 * kMs; },
      ProgressReporter::Timing{300 * kMs, 100 * kMs});
  TraceReader reader({dir.path()});
  reader.set_progress(&progress);
  reader.read([](const SegmentView&) {});
  ASSERT_GE(writes.size(), 3u);
  const std::string mib = ProgressReporter::format_line("reading", total, total, 2, 2);
  EXPECT_EQ(writes[writes.size() - 2], "\r" + mib) << "the last update: every byte of both files";
  EXPECT_EQ(writes.back(), "\r" + std::string(mib.size(), ' ') + "\r") << "cleared when the read ends";
  EXPECT_EQ(writes[0].rfind("\rreading: ", 0), 0u) << writes[0];
}

}  // namespace
}  // namespace ringprof

// `ringprof overhead` on real child processes: the levels are run
// interleaved, `off` records nothing, the recording levels report ringprof's
// own CPU and bytes, a program not linked against ringprof gets it preloaded,
// and a failing command stops the measurement with its own status.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <algorithm>
#include <string>

#include "ringprof/tools/overhead.h"
#include "support/sanitizers.h"
#include "support/test_support.h"

namespace ringprof {
namespace {

OverheadOptions helper(uint32_t runs, const std::string& events) {
  OverheadOptions o;
  o.levels = {"always_on"};
  o.runs = runs;
  o.warmup = 0;
  o.command = {RINGPROF_TEST_HELPER, "record", "1", events, "return"};
  return o;
}

TEST(Overhead, OffRecordsNothingAndTheRecordingLevelReportsItsCost) {
  const OverheadResult r = measure_overhead(helper(3, "200000"));
  ASSERT_TRUE(r.error.empty()) << r.error;
  EXPECT_FALSE(r.preloaded);  // the helper is linked against libringprof.so
  ASSERT_EQ(r.levels.size(), 2u);
  EXPECT_EQ(r.levels[0].level, "off");  // always measured, first
  EXPECT_EQ(r.levels[1].level, "always_on");
  for (const OverheadLevel& l : r.levels) {
    ASSERT_EQ(l.runs.size(), 3u);
    for (const OverheadRun& run : l.runs) {
      EXPECT_GT(run.wall_ns, 0u);
      EXPECT_GT(run.max_rss_bytes, 0u);
      if (l.level == "off") {
        EXPECT_EQ(run.ringprof_cpu_ns, 0u);  // RINGPROF_DISABLE=1: start() did nothing
        EXPECT_EQ(run.bytes_written, 0u);
      } else {
        EXPECT_GT(run.ringprof_cpu_ns, 0u);  // from RINGPROF_STATS_FILE
        EXPECT_GT(run.bytes_written, 0u);
      }
    }
  }
  EXPECT_GT(r.levels[1].drainer_cpu_pct, 0.0);
  EXPECT_GT(r.levels[1].bytes_written, 0u);
  EXPECT_FALSE(r.levels[1].slowdown.known);  // 3 runs: an estimate, no interval
}

TEST(Overhead, AProgramNotLinkedAgainstRingprofGetsItPreloaded) {
#if defined(RINGPROF_SANITIZED_RUNTIME)
  GTEST_SKIP() << "a sanitized libringprof.so cannot be preloaded into a program built without the sanitizer";
#endif
  OverheadOptions o;
  o.levels = {"always_on"};
  o.runs = 1;
  o.warmup = 0;
  o.command = {"true"};  // from PATH; returns from main, so exit() flushes
  o.library = RINGPROF_SHARED_LIBRARY;
  const OverheadResult r = measure_overhead(o);
  ASSERT_TRUE(r.error.empty()) << r.error;
  EXPECT_TRUE(r.preloaded);
  ASSERT_EQ(r.levels.size(), 2u);
  EXPECT_GT(r.levels[1].runs.at(0).ringprof_cpu_ns, 0u) << "RINGPROF_AUTOSTART in the preloaded library ran";
  EXPECT_EQ(r.levels[0].runs.at(0).ringprof_cpu_ns, 0u);
}

TEST(Overhead, AFailingCommandStopsWithItsStatus) {
  OverheadOptions o;
  o.runs = 2;
  o.command = {"false"};
  const OverheadResult r = measure_overhead(o);
  EXPECT_NE(r.error.find("exited with status 1"), std::string::npos) << r.error;
  EXPECT_EQ(r.failed_status, 1);
  o.command = {"/nonexistent/program"};
  const OverheadResult missing = measure_overhead(o);
  EXPECT_NE(missing.error.find("cannot run '/nonexistent/program'"), std::string::npos) << missing.error;
}

test::CommandResult cli(const std::string& args) { return test::run_command(std::string(RINGPROF_CLI) + " " + args); }

TEST(OverheadCommand, JsonShapeAndExitStatuses) {
  const std::string cmd = std::string(" -- ") + RINGPROF_TEST_HELPER + " record 1 2000000 return";
  // 2 million events recorded and written against none: far more than 100%
  // slower, so the interval of 5 runs lies wholly above 100%.
  const auto r = cli("overhead --runs 5 --warmup 0 --levels always_on --format json --max-slowdown 100%" + cmd);
  EXPECT_EQ(r.exit_code, 3) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out, nullptr, false);
  ASSERT_FALSE(j.is_discarded()) << r.out;
  ASSERT_EQ(j["levels"].size(), 2u);
  for (const auto& l : j["levels"])
    for (const char* key : {"runs", "wall_s_median", "slowdown_pct", "ci_low_pct", "ci_high_pct", "drainer_cpu_pct",
                            "bytes_written"})
      EXPECT_TRUE(l[key].is_number()) << key;
  EXPECT_EQ(j["levels"][1]["level"], "always_on");
  EXPECT_EQ(j["levels"][1]["runs"], 5);
  EXPECT_GT(j["levels"][1]["ci_low_pct"].get<double>(), 100.0);
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << r.err;
  const auto failing = cli("overhead --runs 1 -- false");
  EXPECT_EQ(failing.exit_code, 5);
  EXPECT_EQ(std::count(failing.err.begin(), failing.err.end(), '\n'), 1) << failing.err;
  EXPECT_EQ(cli("overhead --levels off,fast -- true").exit_code, 1);
  EXPECT_EQ(cli("overhead --runs 1").exit_code, 1);  // no command
}

}  // namespace
}  // namespace ringprof

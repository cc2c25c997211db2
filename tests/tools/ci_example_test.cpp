// The CI example (examples/ci/perf-check.sh, which the workflow in
// examples/ci/github-workflow.yml runs) on the test helper: it records five
// runs of base and of head (ringprof ab), writes the Markdown and JSON comparisons and the overhead, and
// exits 0 when nothing crossed its limits. This tests the script, not the
// verdicts (perf_diff_test does): the helper's zones take well under a
// microsecond, and two runs of them differ by 10% or more under TSan, so the
// limits are set out of reach and any verdict is accepted.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "support/test_support.h"

namespace ringprof {
namespace {

std::string read(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST(CiExample, PerfCheckRecordsComparesAndMeasures) {
  test::TempDir dir;
  const std::string out = dir.file("perf");
  const std::string program = std::string(RINGPROF_TEST_HELPER) + " schedule 300";
  const std::string script = std::string(RINGPROF_SOURCE_DIR) + "/examples/ci/perf-check.sh";
  const auto r = test::run_command("RINGPROF=" + std::string(RINGPROF_CLI) +
                                   " RUNS=5 FAIL_ABOVE=100000% MAX_SLOWDOWN=100000% " + script +
                                   " " + out + " '" + program + "' '" + program + "'");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const std::string md = read(out + "/diff.md");
  EXPECT_NE(md.find("#### Zones ("), std::string::npos) << md;
  EXPECT_NE(md.find("`step_work` |"), std::string::npos) << md;
  EXPECT_NE(md.find("`detail_work` |"), std::string::npos) << md;
  const nlohmann::json diff = nlohmann::json::parse(read(out + "/diff.json"), nullptr, false);
  ASSERT_FALSE(diff.is_discarded());
  ASSERT_EQ(diff["zones"].size(), 2u);
  EXPECT_EQ(diff["base_runs"], 5);
  EXPECT_EQ(diff["noise_measured"], true);
  for (const auto& z : diff["zones"]) {
    EXPECT_EQ(z["base"]["calls"], 5 * 300);  // one of each zone per step, 300 steps, 5 runs
    EXPECT_EQ(z["head"]["calls"], 5 * 300);
  }
  for (const char* side : {"/base/run-05", "/head/run-05"})
    EXPECT_TRUE(std::filesystem::is_directory(out + side)) << side;
  const nlohmann::json overhead = nlohmann::json::parse(read(out + "/overhead.json"), nullptr, false);
  ASSERT_FALSE(overhead.is_discarded());
  ASSERT_EQ(overhead["levels"].size(), 3u);
  EXPECT_EQ(overhead["levels"][2]["runs"], 5);
}

}  // namespace
}  // namespace ringprof

// A real multi-process job (examples/ranks_job.cpp: one process per rank,
// meeting in a shared barrier marked as a collective) in which one rank does
// extra work before every collective: the ranks analysis names that rank,
// with its extra time, and the zone it spent it in.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "ringprof/tools/rank_report.h"
#include "ringprof/tools/zone_tracker.h"
#include "support/test_support.h"

namespace ringprof {
namespace {

// The median duration of a rank's extra_work zones, read straight from its files.
int64_t median_extra_work_ns(const std::string& dir) {
  TraceReader reader({dir});
  std::vector<int64_t> d;
  const ProcessState* process = nullptr;
  ZoneTracker tracker([&](const ClosedZone& z) {
    if (process->location_name(z.loc) == "extra_work") d.push_back(static_cast<int64_t>(z.duration_ns()));
  });
  reader.read([&](const SegmentView& v) {
    process = &v.process;
    for (const DecodedEvent& e : v.segment.events) tracker.add(e);
  });
  if (d.empty()) return 0;
  std::sort(d.begin(), d.end());
  return d[d.size() / 2];
}

TEST(RanksJob, TheRankDoingExtraWorkIsTheStraggler) {
  test::TempDir dir;
  const std::string job = dir.file("job");
  // Milliseconds, not microseconds: the machine running the tests is shared,
  // and a rank woken a few hundred µs late must not blur the 10% measured.
  constexpr int64_t kExtraUs = 20000;
  const test::CommandResult run = test::run_command(std::string(RINGPROF_RANKS_JOB) + " " + test::shell_quote(job) +
                                                    " --world 3 --straggler 1 --extra-us " +
                                                    std::to_string(kExtraUs) + " --work-us 5000 --steps 40");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  for (int r = 0; r < 3; ++r) ASSERT_FALSE(test::list_files(job + "/rank-" + std::to_string(r), ".rpf").empty());

  TraceReader reader({job});
  const RanksReport report = analyse_ranks(reader, {});
  EXPECT_FALSE(reader.has_problems());
  EXPECT_TRUE(report.problems.empty());
  EXPECT_EQ(report.world_size, 3);
  ASSERT_EQ(report.ranks.size(), 3u);
  for (int r = 0; r < 3; ++r) {
    EXPECT_EQ(report.ranks[r].rank, r);
    EXPECT_GE(report.ranks[r].steps, 39u);   // step marks 0..39: 39 whole steps
    EXPECT_GE(report.ranks[r].matched, 39u);  // (nearly) every barrier, in one collective with the other two
  }
  ASSERT_EQ(report.stragglers.size(), 1u) << format_ranks(report, RanksFormat::Text, false);
  const Straggler& s = report.stragglers[0];
  EXPECT_EQ(s.rank, 1);
  EXPECT_EQ(s.kind, "late at collectives");
  // Its extra time, within 10%: what its extra_work zones took (a spin to
  // a deadline overshoots when the rank is preempted there, so the nominal
  // time is only a lower bound on a busy machine).
  const int64_t extra = median_extra_work_ns(job + "/rank-1");
  EXPECT_GE(extra, kExtraUs * 1000);
  EXPECT_LE(std::llabs(s.late_ns_median - extra), extra / 10) << s.late_ns_median << " against " << extra;
  EXPECT_EQ(s.reason.rfind("zone extra_work: +", 0), 0u) << s.reason;

  // The CLI says the same in JSON.
  const test::CommandResult cli =
      test::run_command(std::string(RINGPROF_CLI) + " ranks --format json " + test::shell_quote(job));
  ASSERT_EQ(cli.exit_code, 0) << cli.err;
  const nlohmann::json j = nlohmann::json::parse(cli.out);
  ASSERT_EQ(j["stragglers"].size(), 1u);
  EXPECT_EQ(j["stragglers"][0]["rank"], 1);
  EXPECT_EQ(j["job_id"].get<std::string>().rfind("ranks-job-", 0), 0u);
}

}  // namespace
}  // namespace ringprof

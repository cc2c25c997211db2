// A distributed job read at once: a directory of per-rank directories, its
// processes in rank order, and each rank's process group in the Chrome and
// Perfetto traces named "rank N (host, pid)".
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "ringprof/tools/chrome_trace.h"
#include "ringprof/tools/trace_info.h"
#include "ringprof/tools/trace_reader.h"
#include "support/test_support.h"
#include "support/trace_builder.h"

namespace ringprof {
namespace {

using testing::TraceBuilder;
constexpr uint64_t T = 1'000'000'000ull;

// Ranks 2, 0 and 1 (pids 300, 100, 200) on two hosts, each in its own
// directory under job/, plus a worker process without a rank in rank 0's.
std::string write_job(test::TempDir& dir) {
  const std::string job = dir.file("job");
  const std::map<int, std::pair<uint32_t, std::string>> ranks = {{2, {300, "hostB"}}, {0, {100, "hostA"}},
                                                                 {1, {200, "hostA"}}};
  for (const auto& [rank, who] : ranks) {
    const std::string sub = job + "/rank" + std::to_string(rank);
    std::filesystem::create_directories(sub);
    TraceBuilder b(who.first, T);
    b.host(who.second);
    b.rank(rank, 3, "job7");
    const uint32_t th = b.thread(who.first, "main");
    b.begin(th, T + 10, b.location("step"));
    b.end(th, T + 20);
    b.flush();
    test::write_file(sub + "/ringprof-" + std::to_string(who.first) + "-1-000000.rpf", b.bytes());
  }
  TraceBuilder w(150, T);
  const uint32_t th = w.thread(150, "worker");
  w.instant(th, T + 5, w.location("load"));
  w.flush();
  test::write_file(job + "/rank0/ringprof-150-1-000000.rpf", w.bytes());
  return job;
}

TEST(JobReading, ADirectoryOfRankDirectoriesIsReadInRankOrder) {
  test::TempDir dir;
  TraceReader reader({write_job(dir)});
  EXPECT_FALSE(reader.has_problems());
  std::vector<std::string> names;
  for (const ProcessState& p : reader.processes()) names.push_back(p.trace_name());
  EXPECT_EQ(names, (std::vector<std::string>{"rank 0 (hostA, 100)", "rank 1 (hostA, 200)", "rank 2 (hostB, 300)",
                                             "trainer"}));
  ASSERT_TRUE(reader.processes()[2].rank.has_value());
  EXPECT_EQ(reader.processes()[2].rank->world_size, 3);
  EXPECT_EQ(reader.processes()[2].rank->job_id, "job7");
  EXPECT_EQ(format_rank(*reader.processes()[2].rank), "rank 2 of 3, job job7 (from RANK)");
}

TEST(JobReading, ChromeTraceHasOneNamedSortedProcessGroupPerRank) {
  test::TempDir dir;
  TraceReader reader({write_job(dir)});
  std::ostringstream out;
  write_chrome_trace(reader, {}, out);
  const nlohmann::json j = nlohmann::json::parse(out.str());
  std::map<uint32_t, std::string> names;
  std::map<uint32_t, uint64_t> sort_index;
  for (const auto& e : j["traceEvents"]) {
    if (e["name"] == "process_name") names[e["pid"]] = e["args"]["name"];
    if (e["name"] == "process_sort_index") sort_index[e["pid"]] = e["args"]["sort_index"];
  }
  EXPECT_EQ(names, (std::map<uint32_t, std::string>{{100, "rank 0 (hostA, 100)"},
                                                    {150, "trainer"},
                                                    {200, "rank 1 (hostA, 200)"},
                                                    {300, "rank 2 (hostB, 300)"}}));
  EXPECT_EQ(sort_index, (std::map<uint32_t, uint64_t>{{100, 0}, {200, 1}, {300, 2}}));
}

TEST(JobReading, AnEmptyJobDirectorySaysSoInOneLine) {
  test::TempDir dir;
  std::filesystem::create_directories(dir.file("job/rank0"));
  TraceReader reader({dir.file("job")});
  const std::vector<Problem> problems = reader.problems();
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_EQ(problems[0].reason, "no *.rpf or *.rpf.part files in directory (nor in its subdirectories)");
}

}  // namespace
}  // namespace ringprof

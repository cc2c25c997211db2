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
  w.host("hostA");
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

// Two hosts whose monotonic clocks differ by 5 s (booted at different times):
// by wall clock the two zones happened at the same moment, so the reader
// puts them at the same time on rank 0's axis, and says how it aligned them.
TEST(JobReading, ProcessesOnTwoHostsAreAlignedByWallClock) {
  test::TempDir dir;
  const uint64_t wall = 1'700'000'000'000'000'000ull;
  auto write = [&](uint32_t pid, const std::string& host, int rank, uint64_t mono_start) {
    TraceBuilder b(pid, mono_start);
    b.wall_start(wall);
    b.host(host);
    b.rank(rank, 2);
    const uint32_t th = b.thread(pid, "main");
    b.begin(th, mono_start + 1000, b.location("allreduce"));  // 1 µs after start, by each host's clock
    b.end(th, mono_start + 3000);
    b.flush();
    test::write_file(dir.file("ringprof-" + std::to_string(pid) + ".rpf"), b.bytes());
  };
  write(100, "hostA", 0, 2'000'000'000ull);
  write(200, "hostB", 1, 7'000'000'000ull);
  TraceReader reader({dir.file("ringprof-100.rpf"), dir.file("ringprof-200.rpf")});
  ASSERT_EQ(reader.processes().size(), 2u);
  EXPECT_EQ(reader.processes()[0].clock_offset_ns, 0);
  EXPECT_EQ(reader.processes()[1].clock_offset_ns, -5'000'000'000ll);
  EXPECT_EQ(reader.processes()[1].start_monotonic_ns, 2'000'000'000ull);
  EXPECT_NE(reader.clock_note().find("2 hosts: their times are aligned by wall clock"), std::string::npos)
      << reader.clock_note();
  std::vector<std::pair<uint32_t, uint64_t>> begins;  // pid, ts
  reader.read([&](const SegmentView& v) {
    for (const DecodedEvent& e : v.segment.events)
      if (e.kind == EventKind::ZoneBegin) begins.emplace_back(v.process.pid, e.ts_ns);
    EXPECT_EQ(v.segment.header.first_ns, 2'000'001'000ull);  // the frame's range too
  });
  EXPECT_EQ(begins, (std::vector<std::pair<uint32_t, uint64_t>>{{100, 2'000'001'000ull}, {200, 2'000'001'000ull}}));
  const auto range = reader.time_range();
  ASSERT_TRUE(range.has_value());
  EXPECT_EQ(range->first, 2'000'001'000ull);
  EXPECT_EQ(range->second, 2'000'003'000ull);
  // The command line says it once, on stderr, and reads on.
  const auto r = test::run_command(std::string(RINGPROF_CLI) + " table " + test::shell_quote(dir.path()));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.err.find("ringprof: warning: the processes ran on 2 hosts"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("allreduce"), std::string::npos) << r.out;
}

TEST(JobReading, OneHostNeedsNoAlignment) {
  test::TempDir dir;
  const std::string job = write_job(dir);
  TraceReader reader({job + "/rank0", job + "/rank1"});  // ranks 0 and 1 and the worker, all on hostA
  EXPECT_EQ(reader.processes().size(), 3u);
  for (const ProcessState& p : reader.processes()) EXPECT_EQ(p.clock_offset_ns, 0);
  EXPECT_EQ(reader.clock_note(), "");
}

// Ranks in containers on two hosts, both pid 100, and a second process on
// host B whose own wall-clock reading is 3 µs off: the traces keep the two
// pid-100 processes apart, and host B's processes share one offset.
TEST(JobReading, SamePidOnTwoHostsAndOneOffsetPerHost) {
  test::TempDir dir;
  const uint64_t wall = 1'700'000'000'000'000'000ull;
  auto write = [&](uint32_t pid, const std::string& host, int rank, uint64_t mono_start, uint64_t wall_start) {
    TraceBuilder b(pid, mono_start);
    b.wall_start(wall_start);
    b.host(host);
    b.rank(rank, 3);
    const uint32_t th = b.thread(pid, "main");
    b.instant(th, mono_start + 1000, b.location("x"));
    b.flush();
    test::write_file(dir.file("ringprof-" + std::to_string(rank) + ".rpf"), b.bytes());
  };
  write(100, "hostA", 0, 2'000'000'000ull, wall);
  write(100, "hostB", 1, 7'000'000'000ull, wall);
  write(200, "hostB", 2, 7'000'000'000ull, wall + 3000);  // same monotonic moment, wall clock read 3 µs later
  TraceReader reader({dir.path()});
  ASSERT_EQ(reader.processes().size(), 3u);
  EXPECT_EQ(reader.processes()[1].clock_offset_ns, -5'000'000'000ll);
  EXPECT_EQ(reader.processes()[2].clock_offset_ns, -5'000'000'000ll);  // host B's, not its own reading's
  EXPECT_EQ(reader.processes()[0].trace_pid, 100u);
  EXPECT_EQ(reader.processes()[1].trace_pid, (1u << 22) + 1);
  EXPECT_EQ(reader.processes()[2].trace_pid, 200u);
  std::ostringstream out;
  write_chrome_trace(reader, {}, out);
  const nlohmann::json j = nlohmann::json::parse(out.str());
  std::map<uint32_t, std::string> names;
  for (const auto& e : j["traceEvents"])
    if (e["name"] == "process_name") names[e["pid"]] = e["args"]["name"];
  EXPECT_EQ(names, (std::map<uint32_t, std::string>{{100, "rank 0 (hostA, 100)"},
                                                    {(1u << 22) + 1, "rank 1 (hostB, 100)"},
                                                    {200, "rank 2 (hostB, 200)"}}));
}

}  // namespace
}  // namespace ringprof

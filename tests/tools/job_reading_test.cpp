// A distributed job read at once: a directory of per-rank directories, its
// processes in rank order, and each rank's process group in the Chrome and
// Perfetto traces named "rank N (host, pid)".
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>
#include <nlohmann/json.hpp>
#include <sstream>

#include "ringprof/tools/chrome_trace.h"
#include "ringprof/tools/rank_select.h"
#include "ringprof/tools/trace_info.h"
#include "ringprof/tools/trace_reader.h"
#include "support/test_support.h"
#include "support/trace_builder.h"

namespace ringprof {
namespace {

using test::TraceBuilder;
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

// --rank LIST (ringprof/tools/rank_select.h): the list, then which paths a
// selection keeps, then the option on the commands.
TEST(RankSelection, ListsAndRangesSortedOnce) {
  std::string error;
  EXPECT_EQ(parse_rank_list("0,2,5-7", &error), (std::vector<int32_t>{0, 2, 5, 6, 7}));
  EXPECT_EQ(parse_rank_list("3,1,1,2-3", &error), (std::vector<int32_t>{1, 2, 3}));
  EXPECT_EQ(parse_rank_list("4-4", &error), (std::vector<int32_t>{4}));
  for (const std::string bad : {"", "a", "3-1", "-1", "1,,2", "1-", "1,2-x", "99999999999", "0-2000000000", "1.5"}) {
    error.clear();
    EXPECT_FALSE(parse_rank_list(bad, &error).has_value()) << bad;
    EXPECT_NE(error.find("bad rank list '" + bad + "'"), std::string::npos) << error;
  }
  EXPECT_EQ(format_rank_list({0, 1, 2, 3, 5}), "0-3,5");
  EXPECT_EQ(format_rank_list({0, 1, 4}), "0,1,4");
  EXPECT_EQ(parse_rank_list(format_rank_list({0, 1, 2, 3, 5, 7, 8}), &error), (std::vector<int32_t>{0, 1, 2, 3, 5, 7, 8}))
      << "what the error message lists can be given back to --rank";
  EXPECT_EQ(format_rank_list({7}), "7");
}

TEST(RankSelection, KeepsTheChosenRanksFilesAndNothingElse) {
  test::TempDir dir;
  const std::string job = write_job(dir);
  const RankSelection sel = select_ranks({job}, {0, 2});
  EXPECT_EQ(sel.paths, (std::vector<std::string>{job + "/rank0/ringprof-100-1-000000.rpf",
                                                 job + "/rank2/ringprof-300-1-000000.rpf"}))
      << "rank 1's file and the worker without a rank are left out";
  EXPECT_TRUE(sel.missing.empty());
  EXPECT_EQ(sel.present, (std::vector<int32_t>{0, 1, 2}));
  TraceReader reader(sel.paths);
  EXPECT_FALSE(reader.has_problems());
  std::vector<std::string> names;
  for (const ProcessState& p : reader.processes()) names.push_back(p.trace_name());
  EXPECT_EQ(names, (std::vector<std::string>{"rank 0 (hostA, 100)", "rank 2 (hostB, 300)"}));

  const RankSelection absent = select_ranks({job}, {1, 5, 6});
  EXPECT_EQ(absent.missing, (std::vector<int32_t>{5, 6}));
  EXPECT_EQ(absent.paths, (std::vector<std::string>{job + "/rank1/ringprof-200-1-000000.rpf"}));
}

TEST(RankSelection, PathsThatYieldNoFileStayForTheReaderToReport) {
  test::TempDir dir;
  const std::string job = write_job(dir);
  // rank1 (no files) must not pass for holding rank10's: a path is a
  // directory prefix only up to a slash.
  std::filesystem::rename(job + "/rank1", job + "/rank10");
  std::filesystem::create_directories(job + "/rank1");
  const std::string garbage = dir.file("garbage.rpf");
  test::write_file(garbage, std::vector<uint8_t>(64, 0x5a));
  const std::string gone = dir.file("gone.rpf");
  const std::vector<std::string> paths = {job + "/rank1", job + "/rank10", garbage, gone, job + "/rank2/"};
  const RankSelection sel = select_ranks(paths, {2});
  EXPECT_EQ(sel.paths, (std::vector<std::string>{job + "/rank1", gone, garbage, job + "/rank2/ringprof-300-1-000000.rpf"}));
  TraceReader reader(sel.paths);
  reader.read([](const SegmentView&) {});
  EXPECT_EQ(reader.problems().size(), 3u) << "the empty directory, the missing file and the unreadable one";
}

TEST(RankSelection, EveryCommandTakesRank) {
  test::TempDir dir;
  const std::string job = write_job(dir);
  const std::string out = dir.file("trace.json");
  auto run = [&](const std::string& args) {
    return test::run_command(std::string(RINGPROF_CLI) + " " + args + " " + test::shell_quote(job));
  };
  const test::CommandResult convert = run("convert --rank 1,2 -o " + test::shell_quote(out));
  ASSERT_EQ(convert.exit_code, 0) << convert.err;
  std::set<std::string> names;
  const nlohmann::json trace = nlohmann::json::parse(test::read_text(out));
  for (const auto& e : trace["traceEvents"])
    if (e["name"] == "process_name") names.insert(e["args"]["name"].get<std::string>());
  EXPECT_EQ(names, (std::set<std::string>{"rank 1 (hostA, 200)", "rank 2 (hostB, 300)"}));

  // The ranks left out are not "ranks with no files" (exit 0, nothing on stderr).
  const test::CommandResult ranks = run("ranks --format json --rank 2");
  ASSERT_EQ(ranks.exit_code, 0) << ranks.err;
  EXPECT_EQ(ranks.err, "");
  const nlohmann::json j = nlohmann::json::parse(ranks.out);
  ASSERT_EQ(j["ranks"].size(), 1u);
  EXPECT_EQ(j["ranks"][0]["rank"], 2);

  const test::CommandResult absent = run("table --rank 1,7");
  EXPECT_EQ(absent.exit_code, 2);
  EXPECT_EQ(absent.out, "");
  EXPECT_EQ(absent.err, "ringprof: --rank: no file states rank 7 (the files state ranks 0-2)\n");

  // Usage errors come before --rank reads the files (exit 1, not 2).
  const test::CommandResult no_output = run("extract --last 1s --rank 7");
  EXPECT_EQ(no_output.exit_code, 1) << no_output.err;
  EXPECT_NE(no_output.err.find("extract needs -o DIR"), std::string::npos) << no_output.err;
  const test::CommandResult convert_no_output = run("convert --rank 7");
  EXPECT_EQ(convert_no_output.exit_code, 1) << convert_no_output.err;
  EXPECT_NE(convert_no_output.err.find("convert needs -o OUT"), std::string::npos) << convert_no_output.err;
  const test::CommandResult bad_sort = run("table --samples --sort calls --rank 7");
  EXPECT_EQ(bad_sort.exit_code, 1) << bad_sort.err;
  EXPECT_NE(bad_sort.err.find("bad --sort column: 'calls'"), std::string::npos) << bad_sort.err;
  const test::CommandResult backwards = run("table --rank 7 --from 2s --to 1s");
  EXPECT_EQ(backwards.exit_code, 1) << backwards.err;
  EXPECT_NE(backwards.err.find("--to is before --from"), std::string::npos) << backwards.err;

  const test::CommandResult bad = run("info --rank 3-1");
  EXPECT_EQ(bad.exit_code, 1);
  EXPECT_NE(bad.err.find("--rank: bad rank list '3-1' at '3-1' (try 0,2,5-7)"), std::string::npos) << bad.err;
  EXPECT_EQ(std::count(bad.err.begin(), bad.err.end(), '\n'), 1);
}

}  // namespace
}  // namespace ringprof

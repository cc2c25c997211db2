// Whole-process tests: a child program linked against libringprof records
// into rolling files; the files are decoded and every event accounted for.
// Covers exit flush, autostart, kill -9 at random moments, and disk trouble.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <random>
#include <sstream>
#include <thread>

#include "ringprof/event.h"
#include "support/test_support.h"

using namespace ringprof::test;

namespace {

const std::string kHelper = RINGPROF_TEST_HELPER;
constexpr int kCounter = static_cast<int>(ringprof::EventKind::Counter);

std::string helper_env(const std::string& dir, const std::string& extra = "") {
  // RINGPROF_GPU=0: these tests count stderr lines; a CUPTI build on a
  // machine without a GPU adds its one warning (cupti_source_test covers it).
  return "RINGPROF_DIR=" + shell_quote(dir) + " RINGPROF_RING_BYTES=16M RINGPROF_GPU=0 " + extra + " ";
}

// "recorded N written W dropped_ring R dropped_io I" → values by key.
std::map<std::string, uint64_t> parse_stats(const std::string& line) {
  std::map<std::string, uint64_t> m;
  std::istringstream in(line);
  std::string key;
  uint64_t v;
  while (in >> key >> v) m[key] = v;
  return m;
}

}  // namespace

TEST(EndToEnd, ReturnFromMainFlushesEveryEvent) {
  TempDir dir;
  const auto r = run_command(helper_env(dir.path()) + kHelper + " record 4 50000 return");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const FileTally t = tally_dir(dir.path(), /*include_part=*/true);
  EXPECT_TRUE(t.problems.empty()) << t.problems.front();
  EXPECT_TRUE(list_files(dir.path(), ".rpf.part").empty()) << "exit seals every file";
  EXPECT_EQ(t.by_kind.at(kCounter), 200000u);
  EXPECT_EQ(t.dropped_ring + t.dropped_io, 0u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(t.by_thread_name.at("rec-" + std::to_string(i)), 50000u);
}

TEST(EndToEnd, ExitFromAnotherThreadFlushesEveryEvent) {
  TempDir dir;
  const auto r = run_command(helper_env(dir.path()) + kHelper + " record 2 30000 exit");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const FileTally t = tally_dir(dir.path());
  EXPECT_TRUE(t.problems.empty());
  EXPECT_EQ(t.by_kind.at(kCounter), 60000u);
}

TEST(EndToEnd, FlushAtExitOffLeavesTheFileUnsealed) {
  TempDir dir;
  // With RINGPROF_FLUSH_AT_EXIT=0 exit() does not stop the recorder. The
  // batch is far from full and far from old, so the drainer never wrote it:
  // nothing reached the disk and nothing was sealed.
  const auto r = run_command(helper_env(dir.path(), "RINGPROF_FLUSH_AT_EXIT=0 RINGPROF_FLUSH_MS=600000") + kHelper +
                             " record 1 1000 return");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_TRUE(list_files(dir.path(), ".rpf").empty());
  EXPECT_EQ(tally_dir(dir.path()).events, 0u);
}

TEST(EndToEnd, AutostartRecordsWithoutAnyStartCall) {
  TempDir dir;
  // The helper calls start() only when recording is not already on; with
  // RINGPROF_AUTOSTART=1 the library started it before main, so the helper's
  // own start() is never reached. Either way every event must be there.
  const auto r = run_command(helper_env(dir.path(), "RINGPROF_AUTOSTART=1") + kHelper + " record 3 10000 return");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const FileTally t = tally_dir(dir.path());
  EXPECT_EQ(t.by_kind.at(kCounter), 30000u);
  EXPECT_TRUE(r.err.empty()) << r.err;  // started exactly once: no "already recording" warning
}

TEST(EndToEnd, ExplicitStopAccountsForEveryEvent) {
  TempDir dir;
  const auto r = run_command(helper_env(dir.path(), "RINGPROF_RING_BYTES=4K RINGPROF_RING_MAX_BYTES=4K RINGPROF_DRAIN_MS=200") + kHelper +
                             " record 2 200000 stop");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto stats = parse_stats(r.out);
  const FileTally t = tally_dir(dir.path());
  EXPECT_TRUE(t.problems.empty());
  // recorded = written + dropped, in the process and in the files alike.
  EXPECT_EQ(stats.at("written") + stats.at("dropped_ring") + stats.at("dropped_io"), stats.at("recorded"));
  EXPECT_GT(stats.at("dropped_ring"), 0u) << "a 128-event ring drained every 200 ms must overflow";
  EXPECT_EQ(t.by_kind.at(kCounter), stats.at("written"));
  EXPECT_EQ(t.dropped_ring, stats.at("dropped_ring"));
}

TEST(EndToEnd, KillNineAtRandomMomentsLeavesDecodableFiles) {
  std::mt19937 rng(12345);
  for (int round = 0; round < 6; ++round) {
    TempDir dir;
    const std::string cmd = helper_env(dir.path(), "RINGPROF_FILE_BYTES=64K RINGPROF_FLUSH_MS=5 RINGPROF_ZSTD_LEVEL=1") +
                            kHelper + " stream";
    FILE* p = popen((cmd + " & echo $!; wait").c_str(), "r");
    ASSERT_NE(p, nullptr);
    char line[64] = {};
    ASSERT_NE(fgets(line, sizeof line, p), nullptr);
    const pid_t pid = static_cast<pid_t>(std::atoi(line));
    ASSERT_NE(fgets(line, sizeof line, p), nullptr);  // "ready"
    ASSERT_STREQ(line, "ready\n");
    std::this_thread::sleep_for(std::chrono::milliseconds(std::uniform_int_distribution<int>(20, 400)(rng)));
    ASSERT_EQ(kill(pid, SIGKILL), 0);
    pclose(p);

    const auto sealed = list_files(dir.path(), ".rpf");
    const auto parts = list_files(dir.path(), ".rpf.part");
    // At most the file being written stays .part; none when the kill lands
    // between sealing one file and opening the next.
    EXPECT_LE(parts.size(), 1u);
    // Every sealed file decodes completely.
    for (const auto& f : sealed) {
      FileTally one;
      tally_file(f, one);
      EXPECT_TRUE(one.problems.empty()) << "round " << round << ": " << one.problems.front();
      EXPECT_GT(one.frames, 0u);
    }
    // The part file decodes up to at most one torn tail.
    for (const auto& f : parts) {
      FileTally one;
      tally_file(f, one);
      EXPECT_LE(one.problems.size(), 1u);
    }
    // The CLI reads the whole directory without crashing: 0 when clean, 2 when
    // it had to report a torn tail.
    const auto info = run_command(std::string(RINGPROF_CLI) + " info " + shell_quote(dir.path()));
    EXPECT_TRUE(info.exit_code == 0 || info.exit_code == 2) << info.exit_code << " " << info.err;
  }
}

TEST(EndToEnd, UnwritableDirectoryLeavesTheApplicationUnharmed) {
  TempDir dir;
  // A regular file where the directory should be: nothing can be created.
  write_file(dir.file("blocker"), {'x'});
  const auto r = run_command(helper_env(dir.file("blocker") + "/sub") + kHelper + " record 2 20000 stop");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto stats = parse_stats(r.out);
  EXPECT_EQ(stats.at("written"), 0u);
  EXPECT_EQ(stats.at("dropped_io") + stats.at("dropped_ring"), 40000u);
  // One warning, not one per batch.
  size_t warnings = 0;
  for (size_t p = r.err.find("ringprof: warning"); p != std::string::npos; p = r.err.find("ringprof: warning", p + 1))
    ++warnings;
  EXPECT_EQ(warnings, 1u) << r.err;
}

TEST(EndToEnd, FileSizeLimitCapsEachFileWithoutKillingTheProcess) {
  TempDir dir;
  // ulimit -f is in KiB: files may not grow past 96 KiB. Writing past it
  // would raise SIGXFSZ and kill the process; the sink rotates below it.
  // Batches of at most 4096 events (under 12 bytes each even before zstd)
  // always fit a fresh file, so nothing needs to be dropped.
  const auto r = run_command("bash -c " + shell_quote("ulimit -f 96; " +
                             helper_env(dir.path(), "RINGPROF_FILE_BYTES=1M RINGPROF_ZSTD_LEVEL=1 RINGPROF_BATCH_EVENTS=4096") +
                             kHelper + " record 4 400000 stop"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto stats = parse_stats(r.out);
  EXPECT_EQ(stats.at("written") + stats.at("dropped_ring") + stats.at("dropped_io"), 1600000u);
  EXPECT_EQ(stats.at("dropped_io"), 0u);
  const FileTally t = tally_dir(dir.path());
  EXPECT_TRUE(t.problems.empty()) << t.problems.front();
  EXPECT_EQ(t.by_kind.count(kCounter) ? t.by_kind.at(kCounter) : 0, stats.at("written"));
  const auto files = list_files(dir.path(), ".rpf");
  EXPECT_GT(files.size(), 1u) << "the limit forces rotation";
  for (const auto& f : files) {
    struct stat st {};
    ASSERT_EQ(stat(f.c_str(), &st), 0);
    EXPECT_LE(st.st_size, 96 * 1024);
  }
}

TEST(EndToEnd, FrameLargerThanTheFileSizeLimitIsDroppedAndCounted) {
  TempDir dir;
  // One batch of 1.6M events (written at stop) cannot fit under a 4 KiB file
  // limit: it is refused and counted, and the process exits normally.
  const auto r = run_command("bash -c " + shell_quote("ulimit -f 4; " +
                             helper_env(dir.path(), "RINGPROF_FLUSH_MS=600000 RINGPROF_BATCH_EVENTS=4194304 RINGPROF_DRAIN_MS=1000") +
                             kHelper + " record 4 400000 stop"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto stats = parse_stats(r.out);
  EXPECT_EQ(stats.at("written") + stats.at("dropped_ring") + stats.at("dropped_io"), 1600000u);
  EXPECT_GT(stats.at("dropped_io"), 0u) << r.out;
  EXPECT_NE(r.err.find("ringprof: warning"), std::string::npos);
  const FileTally t = tally_dir(dir.path());
  EXPECT_TRUE(t.problems.empty()) << t.problems.front();
}

TEST(EndToEnd, FullTmpfsLeavesTheApplicationUnharmed) {
  TempDir dir;
  // A 256 KiB tmpfs in a private mount namespace, when this machine allows it.
  const std::string mnt = dir.file("small");
  const std::string inner = "mkdir -p " + shell_quote(mnt) + " && mount -t tmpfs -o size=256k tmpfs " + shell_quote(mnt) +
                            " && " + helper_env(mnt + "/rp", "RINGPROF_FILE_BYTES=1M RINGPROF_ZSTD_LEVEL=1 RINGPROF_FLUSH_MS=1") +
                            kHelper + " record 4 400000 stop && ls -l " + shell_quote(mnt + "/rp");
  const auto probe = run_command("unshare -m true");
  if (probe.exit_code != 0) GTEST_SKIP() << "no mount namespaces here: " << probe.err;
  const auto r = run_command("unshare -m sh -c " + shell_quote(inner));
  if (r.err.find("mount:") != std::string::npos) GTEST_SKIP() << "tmpfs mount refused: " << r.err;
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto stats = parse_stats(r.out.substr(0, r.out.find('\n')));
  EXPECT_EQ(stats.at("written") + stats.at("dropped_ring") + stats.at("dropped_io"), 1600000u);
  EXPECT_GT(stats.at("dropped_io"), 0u);
  EXPECT_NE(r.err.find("ringprof: warning"), std::string::npos);
}

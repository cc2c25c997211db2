// Paths a careless user or another user controls: a FIFO, a directory, a
// symbolic link or a full device where ringprof expects a regular file. The
// profiled program must finish with one warning; every command must finish
// within its timeout with a one-line error. Each command runs under
// `timeout 20`, so a hang shows as exit status 124 instead of a stuck suite.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <thread>
#include <vector>

#include "ringprof/control_file.h"
#include "support/test_support.h"

using namespace ringprof::test;

namespace {

const std::string kHelper = RINGPROF_TEST_HELPER;
const std::string kCli = RINGPROF_CLI;

size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

CommandResult record_with_stats_file(const TempDir& dir, const std::string& stats) {
  return run_command("timeout 20 env RINGPROF_DIR=" + shell_quote(dir.file("rp")) +
                     " RINGPROF_GPU=0 RINGPROF_STATS_FILE=" + shell_quote(stats) + " " + kHelper +
                     " record 1 1000 stop");
}

}  // namespace

TEST(HostilePaths, StatsFileThatIsNoRegularFileNeverBlocksAndWarnsOnce) {
  TempDir dir;
  // The working case first: one JSON line per stop().
  const CommandResult ok = record_with_stats_file(dir, dir.file("stats.jsonl"));
  ASSERT_EQ(ok.exit_code, 0) << ok.err;
  EXPECT_EQ(count_of(ok.err, "RINGPROF_STATS_FILE"), 0u) << ok.err;
  std::ifstream in(dir.file("stats.jsonl"));
  const std::string line((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(line.rfind("{\"pid\":", 0), 0u) << line;
  EXPECT_EQ(count_of(line, "\n"), 1u) << line;

  ASSERT_EQ(mkfifo(dir.file("fifo").c_str(), 0600), 0);
  ASSERT_EQ(mkdir(dir.file("a-directory").c_str(), 0700), 0);
  write_file(dir.file("target"), {});
  ASSERT_EQ(symlink(dir.file("target").c_str(), dir.file("link").c_str()), 0);
  for (const std::string& path :
       {dir.file("fifo"), dir.file("a-directory"), dir.file("link"), std::string("/dev/full")}) {
    const CommandResult r = record_with_stats_file(dir, path);
    EXPECT_EQ(r.exit_code, 0) << path << " (124: it hung)\n" << r.err;
    EXPECT_EQ(count_of(r.err, "RINGPROF_STATS_FILE"), 1u) << path << ":\n" << r.err;
    EXPECT_NE(r.out.find("recorded 1000 "), std::string::npos) << path << ": " << r.out;
  }
  struct stat st {};
  ASSERT_EQ(stat(dir.file("target").c_str(), &st), 0);
  EXPECT_EQ(st.st_size, 0) << "the link was written through";
}

TEST(HostilePaths, AFifoNamedAsInputIsRefusedInOneLine) {
  TempDir dir;
  const std::string fifo = dir.file("x.rpf");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  ASSERT_EQ(mkfifo(dir.file("y.rpf.part").c_str(), 0600), 0);
  for (const std::string& path : {fifo, dir.file("y.rpf.part")}) {
    for (const std::string& command :
         std::vector<std::string>{"info", "table", "convert -o " + shell_quote(dir.file("t.json")) + " --",
                                  "flame -o - --", "extract --last 1s -o " + shell_quote(dir.file("out")) + " --"}) {
      const CommandResult r = run_command("timeout 20 " + kCli + " " + command + " " + shell_quote(path));
      EXPECT_NE(r.exit_code, 124) << command << " " << path << " hung";
      EXPECT_NE(r.exit_code, 0) << command << " " << path;
      EXPECT_NE(r.err.find("not a regular file"), std::string::npos) << command << " " << path << ":\n" << r.err;
      EXPECT_NE(r.err.find(path), std::string::npos) << command << ": the message names the file:\n" << r.err;
    }
  }
}

// Another user's FIFO at the answer's name (in a shared directory, where the
// requester cannot remove it): `trigger` must keep to its --timeout. It is
// planted here once the request is written, after trigger removed any
// stale answer, as such a user would.
TEST(HostilePaths, TriggerKeepsItsTimeoutWithAFifoForAnAnswer) {
  TempDir dir;
  const uint32_t pid = static_cast<uint32_t>(getpid());  // alive, and never answers
  const std::string request = ringprof::control::request_path(dir.path(), pid);
  const std::string answer = ringprof::control::answer_path(dir.path(), pid);
  CommandResult r;
  const auto started = std::chrono::steady_clock::now();
  std::thread trigger([&] {
    r = run_command("timeout 20 " + kCli + " trigger " + std::to_string(pid) + " --dir " + shell_quote(dir.path()) +
                    " --timeout 2");
  });
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (access(request.c_str(), F_OK) != 0 && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  const bool planted = access(request.c_str(), F_OK) == 0 && mkfifo(answer.c_str(), 0600) == 0;
  trigger.join();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  ASSERT_TRUE(planted) << "the request never appeared, or the FIFO could not be made";
  EXPECT_NE(r.exit_code, 124) << "trigger hung on the FIFO";
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.err.find("did not answer within the timeout"), std::string::npos) << r.err;
  EXPECT_LT(seconds, 15.0);
}

// On/off settings take 1, true, yes, on / 0, false, no, off; anything else
// gets one warning and the default, never a silent "off".
TEST(HostileSettings, GarbageInOnOffSettingsWarnsOnceAndKeepsTheDefault) {
  TempDir dir;
  auto run = [&](const std::string& env) {
    return run_command("timeout 20 env RINGPROF_DIR=" + shell_quote(dir.file("rp")) + " " + env + " " + kHelper +
                       " record 1 1000 stop");
  };
  for (const char* value : {"abc", "-1", "2"}) {
    const CommandResult disable = run("RINGPROF_GPU=0 RINGPROF_DISABLE=" + std::string(value));
    EXPECT_EQ(disable.exit_code, 0) << disable.err;
    EXPECT_EQ(count_of(disable.err, "ignoring RINGPROF_DISABLE="), 1u) << value << ": " << disable.err;
    EXPECT_EQ(disable.out.find("recorded 1000 written 0 "), std::string::npos) << "still records: " << disable.out;
    EXPECT_NE(disable.out.find("recorded 1000 written "), std::string::npos) << disable.out;

    // The helper starts itself when autostart did not: it records either way.
    const CommandResult autostart = run("RINGPROF_GPU=0 RINGPROF_AUTOSTART=" + std::string(value));
    EXPECT_EQ(autostart.exit_code, 0) << autostart.err;
    EXPECT_EQ(count_of(autostart.err, "ignoring RINGPROF_AUTOSTART="), 1u) << value << ": " << autostart.err;

    const CommandResult gpu = run("RINGPROF_GPU=" + std::string(value));
    EXPECT_EQ(gpu.exit_code, 0) << gpu.err;
    EXPECT_EQ(count_of(gpu.err, "ignoring RINGPROF_GPU="), 1u) << value << ": " << gpu.err;
    EXPECT_EQ(count_of(gpu.err, "GPU tracing off"), 0u) << "the warning meant for an explicit 1:\n" << gpu.err;
  }
  const CommandResult yes = run("RINGPROF_GPU=0 RINGPROF_DISABLE=yes");
  EXPECT_EQ(yes.err, "");
  EXPECT_NE(yes.out.find("recorded 1000 written 0 "), std::string::npos) << "yes disables: " << yes.out;
}

// A sealed file of 0 bytes is not a recording: one line naming it, and the
// exit status of damaged input; an empty `.part` (a writer that has just
// created its file) is not a problem.
TEST(HostilePaths, AnEmptySealedFileIsNamedAndFailsTheCommand) {
  TempDir dir;
  write_file(dir.file("empty.rpf"), {});
  CommandResult r = run_command("timeout 20 " + kCli + " info " + shell_quote(dir.file("empty.rpf")));
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(r.exit_code, 124);
  EXPECT_EQ(count_of(r.err, "\n"), 1u) << r.err;
  EXPECT_NE(r.err.find(dir.file("empty.rpf") + ": offset 0: empty file (0 bytes)"), std::string::npos) << r.err;

  TempDir live;
  write_file(live.file("ringprof-1-0001.rpf.part"), {});
  r = run_command("timeout 20 " + kCli + " info " + shell_quote(live.path()));
  EXPECT_EQ(r.err.find("empty file"), std::string::npos) << r.err;
}

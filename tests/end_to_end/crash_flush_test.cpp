// Crash flush: a child process records on many threads and then crashes
// (segfault, abort, integer division by zero, illegal instruction) with
// nothing flushed on purpose. The events still in memory at the crash must be
// in its files, the process must die of the same signal, and with core dumps
// enabled the core must still be produced.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <set>

#include "support/named_events.h"
#include "ringprof/ops.h"
#include "support/sanitizers.h"
#include "support/test_support.h"

using namespace ringprof;
using namespace ringprof::test;

namespace {

constexpr int kThreads = 8;
constexpr uint64_t kEvents = 3000;

[[maybe_unused]] std::string core_pattern() {
  std::string p = read_text("/proc/sys/kernel/core_pattern");
  while (!p.empty() && (p.back() == '\n' || p.back() == ' ')) p.pop_back();
  return p;
}

// Runs the helper in `dir` (its working directory, where a core lands) and
// returns the raw wait status.
int run_crashing_child(const std::string& dir, const std::string& how) {
  const pid_t pid = fork();
  if (pid == 0) {
    struct rlimit unlimited {RLIM_INFINITY, RLIM_INFINITY};
    setrlimit(RLIMIT_CORE, &unlimited);
    if (chdir(dir.c_str()) != 0) _exit(120);
    setenv("RINGPROF_DIR", (dir + "/rp").c_str(), 1);
    setenv("RINGPROF_RING_BYTES", "1M", 1);
    // Sanitizer runtimes would catch the signal themselves and exit(1).
    const char* common = "handle_segv=0:handle_abort=0:handle_sigfpe=0:handle_sigill=0:handle_sigbus=0";
    setenv("ASAN_OPTIONS", common, 1);
    std::string tsan = std::string(common) + ":die_after_fork=0";
    setenv("TSAN_OPTIONS", tsan.c_str(), 1);
    execl(RINGPROF_TEST_HELPER, RINGPROF_TEST_HELPER, "crash", how.c_str(), std::to_string(kThreads).c_str(),
          std::to_string(kEvents).c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  return status;
}

void check_crash(const std::string& how, int signal_number) {
  TempDir dir;
  const int status = run_crashing_child(dir.path(), how);
  ASSERT_TRUE(WIFSIGNALED(status)) << how << ": status " << status;
  EXPECT_EQ(WTERMSIG(status), signal_number) << how;
#ifndef RINGPROF_SANITIZED_RUNTIME
  EXPECT_TRUE(WCOREDUMP(status)) << how << ": the default action (with its core dump) must still happen";
  const std::string pattern = core_pattern();
  if (!pattern.empty() && pattern[0] != '|' && pattern.find('/') == std::string::npos) {
    // A plain pattern ("core", "core.%p"): the file lands in the child's cwd.
    bool found = false;
    for (const auto& f : list_files(dir.path(), "")) found |= f.find("/core") != std::string::npos;
    EXPECT_TRUE(found) << how << ": no core file in " << dir.path() << " (core_pattern " << pattern << ")";
  }
#endif

  const NamedTrace trace = read_named({dir.path() + "/rp"});
  for (const Problem& p : trace.problems) ADD_FAILURE() << how << ": " << format_problem(p);
  // Every thread's counters, in full: they sat in the rings or the drainer's
  // unwritten batch when the process died.
  std::map<std::string, std::set<uint64_t>> seq;
  std::map<std::string, int> done;
  size_t crash_marks = 0, last_instant = 0;
  for (const NamedEvent& e : trace.events) {
    if (e.kind == EventKind::Counter && e.name == "seq") seq[e.thread].insert(static_cast<uint64_t>(bits_double(e.value)));
    if (e.kind == EventKind::Counter && e.name == "done") ++done[e.thread];
    if (e.kind == EventKind::Instant && e.name == "about-to-crash") ++last_instant;
    if (e.kind == EventKind::Mark && e.name == kMarkCrash) {
      ++crash_marks;
      EXPECT_EQ(static_cast<int>(e.value & 0xffffffffu), signal_number);
      EXPECT_EQ(e.value >> 32, e.pid) << "the main thread (tid = pid) crashed";
    }
  }
  EXPECT_EQ(crash_marks, 1u) << how;
  EXPECT_EQ(last_instant, 1u) << how << ": the main thread's last event before the crash";
  for (int t = 0; t < kThreads; ++t) {
    const std::string name = "crash-" + std::to_string(t);
    EXPECT_EQ(seq[name].size(), kEvents) << how << ": " << name;
    EXPECT_EQ(done[name], 1) << how << ": " << name;
  }
}

}  // namespace

TEST(CrashFlush, Segfault) { check_crash("segv", SIGSEGV); }
TEST(CrashFlush, Abort) { check_crash("abort", SIGABRT); }
TEST(CrashFlush, DivideByZero) { check_crash("fpe", SIGFPE); }
TEST(CrashFlush, IllegalInstruction) { check_crash("ill", SIGILL); }

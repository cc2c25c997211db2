// Callers through code without frame pointers: ringprof_unwind_workload and
// its library are built -O2 -fomit-frame-pointer without -g (as
// distributions build), so every caller above the sampled function must come
// from .eh_frame. Each mechanism that runs the in-process unwinder records
// the workload at 999 Hz; `ringprof flame` must give the exact chain from
// the thread's root (_start, or clone3 for the second thread) down to the
// sampled function for at least 99% of the samples in the workload's code.
// A frame-pointer walk gets none of them (the control, RINGPROF_SAMPLER=perf).
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "support/sanitizers.h"
#include "support/test_support.h"

namespace ringprof {
namespace {

using test::run_command;
using test::shell_quote;

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string part;
  std::istringstream in(s);
  while (std::getline(in, part, sep)) out.push_back(part);
  return out;
}

struct Census {
  uint64_t in_workload = 0;  // samples whose leaf is the workload's own code
  uint64_t exact = 0;        // ... with the whole chain from the thread's root
  std::string first_bad;
};

// Folded stacks ("root;...;leaf count") → how many of the workload's samples
// carry their whole chain.
Census census(const std::string& folded) {
  static const std::vector<std::string> kLib = {"uwlib_outer", "uwlib_middle", "uwlib_inner"};
  Census c;
  std::istringstream in(folded);
  std::string line;
  while (std::getline(in, line)) {
    const size_t space = line.rfind(' ');
    if (space == std::string::npos) continue;
    const uint64_t n = std::stoull(line.substr(space + 1));
    const std::vector<std::string> frames = split(line.substr(0, space), ';');
    if (frames.empty()) continue;
    // Which of the workload's functions is the leaf, and the chain above it.
    const std::string& leaf = frames.back();
    size_t depth = 0;  // how many library frames the chain must end with
    for (size_t i = 0; i < kLib.size(); ++i)
      if (leaf == kLib[i]) depth = i + 1;
    const bool worker_leaf = leaf == "work_main(long)" || leaf == "work_thread(long)";
    if (depth == 0 && !worker_leaf) continue;
    c.in_workload += n;
    const size_t caller = frames.size() - 1 - depth;  // index of work_main / work_thread
    bool ok = frames.size() > depth + 1;
    for (size_t i = 0; ok && i < depth; ++i) ok = frames[caller + 1 + i] == kLib[i];
    if (ok) {
      const std::string& worker = frames[caller];
      if (worker == "work_main(long)") {
        ok = caller >= 2 && frames[caller - 1] == "main" && frames.front() == "_start";
      } else if (worker == "work_thread(long)") {
        ok = frames.front().find("clone") != std::string::npos && line.find(";start_thread;") != std::string::npos;
      } else {
        ok = false;
      }
    }
    if (ok)
      c.exact += n;
    else if (c.first_bad.empty())
      c.first_bad = line;
  }
  return c;
}

Census record(const std::string& sampler, const test::TempDir& dir) {
  const std::string env = "RINGPROF_DIR=" + shell_quote(dir.path()) +
                          " RINGPROF_GPU=0 RINGPROF_SAMPLE_HZ=999 RINGPROF_SAMPLER=" + sampler + " ";
  const auto run = run_command(env + RINGPROF_UNWIND_WORKLOAD + std::string(" 30000"));
  EXPECT_EQ(run.exit_code, 0) << run.err;
  const auto flame = run_command(std::string(RINGPROF_CLI) + " flame " + shell_quote(dir.path()));
  EXPECT_EQ(flame.exit_code, 0) << flame.err;
  return census(flame.out);
}

class UnwindEndToEnd : public ::testing::TestWithParam<const char*> {};

TEST_P(UnwindEndToEnd, CallersComeFromCallFrameInformation) {
#ifdef RINGPROF_TSAN
  // TSan runs a signal handler at its own safe point, later, with the
  // registers of the moment the signal came: the stack has moved on since.
  GTEST_SKIP() << "TSan defers signal handlers: the interrupted stack is gone when ours runs";
#endif
  test::TempDir dir;
  const Census c = record(GetParam(), dir);
  // 30000 rounds take about 2.5 CPU seconds here: hundreds of samples at
  // the timer's 250 per second, thousands with perf.
  ASSERT_GE(c.in_workload, 100u);
  EXPECT_GE(static_cast<double>(c.exact), 0.99 * static_cast<double>(c.in_workload))
      << c.exact << " of " << c.in_workload << " exact; first wrong stack: " << c.first_bad;
}

INSTANTIATE_TEST_SUITE_P(Mechanisms, UnwindEndToEnd, ::testing::Values("perf_signal", "timer"),
                         [](const auto& p) { return std::string(p.param); });

// The control: the kernel's frame-pointer call chains lose the callers of
// code built without frame pointers, so the census above can fail.
TEST(UnwindEndToEnd, FramePointerChainsLoseTheCallers) {
  test::TempDir dir;
  const Census c = record("perf", dir);
  ASSERT_GE(c.in_workload, 100u);
  EXPECT_LT(static_cast<double>(c.exact), 0.5 * static_cast<double>(c.in_workload))
      << c.exact << " of " << c.in_workload;
}

}  // namespace
}  // namespace ringprof

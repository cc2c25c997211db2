// CPU sampling from the application to the tools, with each mechanism: a
// workload program with CPU shares known by construction records through
// libringprof.so, then `ringprof table --samples` and `ringprof flame` read its
// files. The names must come out symbolized by the tools (ELF + DWARF, no
// help from the process), and the shares must match within a tolerance
// derived from the sample count (false-failure rate below 1e-4, see
// support/sampling_statistics.h):
//   - thread "before" (created before start()): hot_a 70%, hot_b 30%;
//   - thread "after" (created after start()): hot_c;
//   - the main thread: ringprof_plugin_spin, in a library dlopened after start().
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <regex>
#include <sstream>
#include <string>

#include "support/sampling_statistics.h"
#include "support/sanitizers.h"
#include "support/test_support.h"

namespace ringprof {
namespace {

using test::run_command;
using test::shell_quote;

struct Row {
  uint64_t self = 0;
  uint64_t total = 0;
};

// `ringprof table --samples --format csv` → function → (self, total). Names
// may hold commas (parameter lists), quoted by the CSV writer.
std::map<std::string, Row> sample_rows(const std::string& csv) {
  std::map<std::string, Row> rows;
  std::istringstream in(csv);
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::string name;
    size_t pos = 0;
    if (!line.empty() && line[0] == '"') {
      const size_t end = line.find("\",", 1);
      name = line.substr(1, end - 1);
      pos = end + 2;
    } else {
      pos = line.find(',');
      name = line.substr(0, pos);
      ++pos;
    }
    std::istringstream f(line.substr(pos));
    std::string self, self_pct, total;
    std::getline(f, self, ',');
    std::getline(f, self_pct, ',');
    std::getline(f, total, ',');
    rows[name] = Row{std::stoull(self), std::stoull(total)};
  }
  return rows;
}

// A thread's samples kept and lost, from `ringprof info`.
struct InfoCounts {
  uint64_t kept = 0, lost = 0;
  bool found = false;
};
InfoCounts info_counts(const std::string& info, long tid) {
  const std::regex line("thread " + std::to_string(tid) + R"([^\n]*, (\d+) samples \((\d+) lost\))");
  std::smatch m;
  InfoCounts c;
  if (std::regex_search(info, m, line)) {
    c.kept = std::stoull(m[1]);
    c.lost = std::stoull(m[2]);
    c.found = true;
  }
  return c;
}

class SamplingEndToEnd : public ::testing::TestWithParam<const char*> {};

TEST_P(SamplingEndToEnd, SharesAndNamesComeOutOfTheTools) {
  test::TempDir dir;
  const std::string env = std::string("RINGPROF_DIR=") + shell_quote(dir.path()) + " RINGPROF_GPU=0 RINGPROF_SAMPLE_HZ=1000 RINGPROF_SAMPLER=" +
                          GetParam() + " ";
  // CPU-time timers fire on the kernel's tick (often 250 Hz), so the fallback
  // gets fewer samples per CPU second than asked; it runs longer to have as
  // many (about 1000 in hot_a + hot_b, a standard error of 1.5 points).
  // perf and perf_signal take every period of CPU time; the timer folds them.
  const bool perf = std::string(GetParam()) != "timer";
  const std::string cpu_ms = perf ? "1500" : "4000";
  const uint64_t cpu_before_ns = std::stoull(cpu_ms) * 1000000ull, cpu_other_ns = cpu_before_ns / 3;
  const auto run = run_command(env + RINGPROF_SAMPLER_WORKLOAD + std::string(" ") + RINGPROF_SAMPLER_PLUGIN + " " + cpu_ms);
  ASSERT_EQ(run.exit_code, 0) << run.err;
  long before = 0, after = 0, main_tid = 0;
  ASSERT_EQ(std::sscanf(run.out.c_str(), "before=%ld after=%ld main=%ld", &before, &after, &main_tid), 3) << run.out;

  const auto info = run_command(std::string(RINGPROF_CLI) + " info " + shell_quote(dir.path()));
  ASSERT_EQ(info.exit_code, 0) << info.err;
  const std::string mechanism = std::string(GetParam()) == "perf"    ? "perf_event"
                                : std::string(GetParam()) == "timer" ? "timer_signal"
                                                                     : "perf_signal";
  EXPECT_NE(info.out.find("sampling: " + mechanism + " at 1000 Hz"), std::string::npos) << info.out;
  // ringprof's own threads are not sampled.
  EXPECT_EQ(info.out.find("\"ringprof-write\""), std::string::npos) << info.out;
  EXPECT_EQ(info.out.find("\"ringprof-drain\""), std::string::npos) << info.out;

  // The statistical model (support/sampling_statistics.h): every period of a
  // watched thread's CPU time is a sample kept or counted lost, as far as the
  // kernel delivers periods (covered_floor); the samples kept are Poisson(periods delivered × the worst
  // delivered fraction), bounded below at a false-failure rate under 1e-4.
  // A CPU-time timer cannot deliver more than one signal per scheduler tick
  // (CONFIG_HZ, 250 on the machines measured; the other periods come as
  // overruns, counted lost), so its deliverable periods are 250 per CPU
  // second, not 1000.
  const double deliverable_hz = perf ? 1000.0 : 250.0;
  // "before" and main are watched from start() on (the sampler's first scan);
  // "after" records no ringprof event and is found by the /proc/self/task
  // scan, every 100 ms, within 100 ms of its CPU time.
  const uint64_t kScanCpuNs = 100000000;
  struct Watched {
    const char* name;
    long tid;
    uint64_t covered_ns;
  };
  for (const Watched& w : {Watched{"before", before, cpu_before_ns}, Watched{"after", after, cpu_other_ns - kScanCpuNs},
                           Watched{"main", main_tid, cpu_other_ns}}) {
    const InfoCounts c = info_counts(info.out, w.tid);
    ASSERT_TRUE(c.found) << "no samples for thread " << w.name << " (" << w.tid << ") in:\n" << info.out;
    EXPECT_GE(c.kept + c.lost, test::covered_floor(1000 * w.covered_ns / 1000000000ull))
        << w.name << ": " << c.kept << " kept + " << c.lost << " lost";
  }
  auto min_kept = [&](uint64_t covered_ns, double share) {
    return test::poisson_lower_bound(deliverable_hz * static_cast<double>(covered_ns) / 1e9 *
                                     test::kWorstDeliveredFraction * share);
  };

  auto table = [&](long tid) {
    const auto r = run_command(std::string(RINGPROF_CLI) + " table --samples --format csv --thread " +
                               std::to_string(tid) + " " + shell_quote(dir.path()));
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return sample_rows(r.out);
  };

  // Thread created before start(): 7 units of hot_a to 3 of hot_b.
  auto rows = table(before);
  const uint64_t a = rows["workload::hot_a(unsigned long)"].self;
  const uint64_t b = rows["workload::hot_b(unsigned long)"].self;
  // Over 90% of its CPU time is in hot_a and hot_b. Bound: perf 1500
  // periods, 94; timer 1000 deliverable, 57.
  ASSERT_GE(a + b, min_kept(cpu_before_ns, 0.9)) << "too few samples in hot_a/hot_b; rows: " << rows.size();
  const double share_a = 100.0 * static_cast<double>(a) / static_cast<double>(a + b);
  // Binomial(a + b, 0.7): 3.9 standard errors, a two-sided false-failure
  // rate below 1e-4 (8.9 points at 400 samples, 5.0 at 1300).
  double tolerance = 100.0 * test::share_tolerance(0.7, a + b);
#ifdef RINGPROF_TSAN
  // Under TSan the signal mechanisms' signals reach the workload at TSan's own
  // safe points rather than where they fired (see sampler_test, which skips
  // the fallback there), which moves a few points of share between the two
  // functions: a systematic error, added to the statistical one; the bound
  // still tells 70/30 from 50/50 or 30/70.
  if (std::string(GetParam()) != "perf") tolerance += 5.0;
#endif
  // Below min_trials_for_share the tolerance could not tell 70% from an even
  // split: the share says nothing, and the accounting above carries the test.
  if (a + b >= test::min_trials_for_share(0.7)) {
    EXPECT_NEAR(share_a, 70.0, tolerance) << "hot_a " << a << " hot_b " << b;
  } else {
    std::printf("  %llu samples in hot_a/hot_b are too few to check a share of 70%%\n",
                static_cast<unsigned long long>(a + b));
  }

  // Thread created after start(): hot_c is where its time went.
  rows = table(after);
  uint64_t after_samples = 0;
  for (const auto& [name, row] : rows) after_samples += row.self;
  // Poisson bound at 1e-4 (perf 400 periods, 19; timer 308 deliverable, 12).
  ASSERT_GE(after_samples, min_kept(cpu_other_ns - kScanCpuNs, 1.0));
  // A property of the workload, not of chance: the loop around hot_c is a
  // few percent of the thread's time.
  EXPECT_GT(rows["workload::hot_c(unsigned long)"].self * 100, after_samples * 90) << after_samples;

  // The main thread spent its time in the dlopened plugin, named by the tools.
  rows = table(main_tid);
  uint64_t main_samples = 0;
  for (const auto& [name, row] : rows) main_samples += row.self;
  // Poisson bound at 1e-4 (perf 500 periods, 26; timer 333 deliverable, 14).
  ASSERT_GE(main_samples, min_kept(cpu_other_ns, 1.0));
  EXPECT_GT(rows["ringprof_plugin_spin"].self * 100, main_samples * 90) << main_samples;

  // The flame graph of thread "before" has the same counts, under the same names.
  const auto flame = run_command(std::string(RINGPROF_CLI) + " flame --thread " + std::to_string(before) + " " +
                                 shell_quote(dir.path()));
  ASSERT_EQ(flame.exit_code, 0) << flame.err;
  uint64_t flame_a = 0, flame_b = 0;
  std::istringstream lines(flame.out);
  for (std::string line; std::getline(lines, line);) {
    const size_t space = line.rfind(' ');
    ASSERT_NE(space, std::string::npos) << line;
    const std::string stack = line.substr(0, space);
    const uint64_t n = std::stoull(line.substr(space + 1));
    const std::string leaf = stack.substr(stack.rfind(';') == std::string::npos ? 0 : stack.rfind(';') + 1);
    if (leaf == "workload::hot_a(unsigned long)") flame_a += n;
    if (leaf == "workload::hot_b(unsigned long)") flame_b += n;
  }
  EXPECT_EQ(flame_a, a);
  EXPECT_EQ(flame_b, b);
}

INSTANTIATE_TEST_SUITE_P(Mechanisms, SamplingEndToEnd, ::testing::Values("perf", "perf_signal", "timer"),
                         [](const auto& p) { return std::string(p.param); });

}  // namespace
}  // namespace ringprof

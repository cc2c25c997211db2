// The sampled heap profile on a real program: tests/programs/heap_sites.c,
// built without frame pointers, run with libringprof_malloc.so preloaded and
// nothing else changed. Its two call sites ask for 70% and 30% of 1 GiB in
// blocks of mixed sizes and keep one block in four; it prints the truth.
//
// At a mean interval of 32 KiB (about 32,000 samples) the estimates' spread,
// simulated with the program's own size mix and the same weighting, is 0.2
// points for a site's share of the bytes and 0.5% for the bytes in use: the
// bounds the issue sets (3 points, 5%) are 15 and 10 standard deviations
// away, so a false failure does not happen in practice. A profile that
// dropped frees, or lost the weights, or the stacks through the
// frame-pointer-less code, misses them by far (in use 4x, shares 50/50, no
// site at all).
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <sstream>
#include <string>

#include "ringprof/tools/heap_profile.h"
#include "ringprof/tools/stack_resolver.h"
#include "ringprof/tools/trace_info.h"
#include "ringprof/tools/trace_reader.h"
#include "support/test_support.h"

namespace ringprof {
namespace {

struct Truth {
  double a_alloc = 0, b_alloc = 0, a_held = 0, b_held = 0;
};

class HeapProfileTest : public ::testing::Test {
 protected:
  void SetUp() override {
#if defined(RINGPROF_SANITIZED_RUNTIME) || !defined(RINGPROF_MALLOC_LIB)
    GTEST_SKIP() << "ASan and TSan interpose malloc themselves; libringprof_malloc.so is not built with sanitizers";
#else
    // The CPU sampler off: the heap sampler's walks use unwind tables of
    // their own then. A ring large enough that the burst of samples never
    // overflows it (drops would bias the estimates; checked below).
    const std::string cmd =
        "RINGPROF_GPU=0 RINGPROF_SAMPLE_HZ=0 RINGPROF_AUTOSTART=1 RINGPROF_RING_BYTES=8M "
        "RINGPROF_HEAP_INTERVAL=32K RINGPROF_DIR=" +
        test::shell_quote(dir_.path()) + " LD_PRELOAD=" + test::shell_quote(RINGPROF_MALLOC_LIB) + " " +
        test::shell_quote(RINGPROF_HEAP_SITES);
    const auto r = test::run_command(cmd);
    ASSERT_EQ(r.exit_code, 0) << r.err;
    std::istringstream in(r.out);
    ASSERT_TRUE(in >> truth_.a_alloc >> truth_.b_alloc >> truth_.a_held >> truth_.b_held) << r.out;
#endif
  }

  test::TempDir dir_;
  Truth truth_;
};

TEST_F(HeapProfileTest, SharesAndBytesInUseMatchWhatTheProgramDid) {
  {
    TraceReader counted({dir_.path()});
    const TraceInfo info = collect_info(counted);
    ASSERT_EQ(info.dropped_ring + info.dropped_io, 0u);
  }
  TraceReader reader({dir_.path()});
  const HeapProfile profile = collect_heap(reader, {});
  ASSERT_TRUE(reader.problems().empty());
  // About 16,000: a block picked at most once, sum(1 - exp(-size / 32 KiB)).
  ASSERT_GT(profile.samples.size(), 10000u);
  EXPECT_EQ(profile.interval, 32u << 10);
  EXPECT_GT(profile.frees_matched, profile.samples.size() / 2);  // three blocks in four are freed

  // Each sample's site: the first frame that is one of the two.
  StackResolver resolver;
  std::map<std::string, double> alloc, held;
  double held_all = 0;
  for (const HeapStackTotal& t : heap_by_stack(profile)) {
    std::string site = "elsewhere";
    for (const ResolvedFrame& f : resolver.stack(reader.processes()[t.process], t.stack_id)) {
      if (f.function == "site_a" || f.function == "site_b") {
        site = f.function;
        break;
      }
    }
    alloc[site] += t.alloc_bytes;
    held[site] += t.inuse_bytes;
    held_all += t.inuse_bytes;
  }
  const double a = alloc["site_a"], b = alloc["site_b"];
  ASSERT_GT(a + b, 0);
  // Nearly everything the program allocated is under its two sites.
  EXPECT_LT(alloc["elsewhere"], 0.01 * (a + b));
  const double true_share = truth_.a_alloc / (truth_.a_alloc + truth_.b_alloc);
  EXPECT_NEAR(100 * a / (a + b), 100 * true_share, 3.0);
  EXPECT_NEAR(100 * b / (a + b), 100 * (1 - true_share), 3.0);
  // The estimate of the whole: within a few percent (far tighter than the share bound).
  EXPECT_NEAR((a + b) / (truth_.a_alloc + truth_.b_alloc), 1.0, 0.05);
  // In use at exit: what the program still held, frees matched.
  const double truly_held = truth_.a_held + truth_.b_held;
  EXPECT_NEAR(held["site_a"] + held["site_b"], truly_held, 0.05 * truly_held);
  EXPECT_LT(held_all - held["site_a"] - held["site_b"], 0.01 * truly_held);
}

TEST_F(HeapProfileTest, GoToolPprofReadsTheHeapProfile) {
  const std::string out = dir_.path() + "/heap.pb.gz";
  const auto made = test::run_command(std::string(RINGPROF_CLI) + " pprof --heap " + test::shell_quote(dir_.path()) +
                                      " -o " + test::shell_quote(out));
  ASSERT_EQ(made.exit_code, 0) << made.err;
  // -top lines: flat flat% sum% cum cum% name; cum% is unit-free, and the
  // sites' share (malloc's caller, inlined into them, is the leaf).
  auto cum_percent = [&](const std::string& index) {
    const auto top = test::run_command("HOME=" + dir_.path() + " GOCACHE=" + dir_.path() +
                                       "/gocache go tool pprof -top -sample_index=" + index + " -symbolize=none " +
                                       test::shell_quote(out));
    EXPECT_EQ(top.exit_code, 0) << top.err;
    std::map<std::string, double> pct;
    std::istringstream lines(top.out);
    for (std::string line; std::getline(lines, line);) {
      std::istringstream f(line);
      std::string flat, flat_pct, sum_pct, cum, cum_pct, name;
      if (!(f >> flat >> flat_pct >> sum_pct >> cum >> cum_pct >> name)) continue;
      if (cum_pct.empty() || cum_pct.back() != '%') continue;
      pct[name] = std::stod(cum_pct.substr(0, cum_pct.size() - 1));
    }
    return pct;
  };
  const double true_a = 100 * truth_.a_alloc / (truth_.a_alloc + truth_.b_alloc);
  std::map<std::string, double> space = cum_percent("alloc_space");
  EXPECT_NEAR(space["site_a"], true_a, 3.0);
  EXPECT_NEAR(space["site_b"], 100 - true_a, 3.0);
  const double true_held_a = 100 * truth_.a_held / (truth_.a_held + truth_.b_held);
  std::map<std::string, double> inuse = cum_percent("inuse_space");
  EXPECT_NEAR(inuse["site_a"], true_held_a, 5.0);
  EXPECT_GT(inuse["site_b"], 10.0);
}

}  // namespace
}  // namespace ringprof

// A distributed job analysed across ranks: which names are collectives, the
// hosts' clocks aligned from the ends of collectives, GPU time split per step
// (exact on hand-made records), stragglers named with their reason, and the
// job's problems said one line each while the rest is analysed.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>

#include "ringprof/tools/clock_alignment.h"
#include "ringprof/tools/collectives.h"
#include "ringprof/tools/rank_report.h"
#include "support/job_builder.h"
#include "support/test_support.h"

namespace ringprof {
namespace {

using test::SimHost;
using test::SimRank;
constexpr uint64_t kUs = 1000;
constexpr uint64_t kMs = 1000 * kUs;

RanksOptions reading_threads(unsigned threads) {
  RanksOptions o;
  o.threads = threads;
  return o;
}

TEST(Collectives, ZoneNamesAsProcessGroupsGiveThem) {
  bool nccl = false;
  EXPECT_EQ(zone_collective("nccl:all_reduce", &nccl), "all_reduce");
  EXPECT_TRUE(nccl);
  EXPECT_EQ(zone_collective("gloo:broadcast", &nccl), "broadcast");
  EXPECT_FALSE(nccl);
  EXPECT_EQ(zone_collective("allreduce_"), "all_reduce");
  EXPECT_EQ(zone_collective("c10d::allreduce_"), "");  // the dispatcher's operator only enqueues the work
  EXPECT_EQ(zone_collective("nccl:_allgather_base"), "all_gather");
  EXPECT_EQ(zone_collective("all_gather_into_tensor"), "all_gather");
  EXPECT_EQ(zone_collective("nccl:reduce_scatter_tensor_coalesced"), "reduce_scatter");
  EXPECT_EQ(zone_collective("barrier"), "barrier");
  EXPECT_EQ(zone_collective("gloo:reduce"), "reduce");
  // Generic words only with a backend prefix; point-to-point never.
  EXPECT_EQ(zone_collective("reduce"), "");
  EXPECT_EQ(zone_collective("gather"), "");
  EXPECT_EQ(zone_collective("nccl:send"), "");
  EXPECT_EQ(zone_collective("forward"), "");
}

TEST(Collectives, NcclKernelsMangledOrNot) {
  EXPECT_TRUE(is_nccl_kernel("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)"));
  EXPECT_EQ(nccl_kernel_collective("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)"), "");
  EXPECT_EQ(nccl_kernel_collective("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"),
            "AllReduce");
  EXPECT_EQ(nccl_kernel_collective("_Z38ncclDevKernel_AllGather_RING_LL24ncclDevKernelArgsStorageILm4096EE"),
            "AllGather");
  EXPECT_EQ(nccl_kernel_collective("ncclKernel_ReduceScatter_RING_LL_Sum_half(ncclWorkElem)"), "ReduceScatter");
  EXPECT_FALSE(is_nccl_kernel("ampere_sgemm_128x64_nn"));
  EXPECT_EQ(nccl_kernel_collective("ampere_sgemm_128x64_nn"), "");
}

// The true end of collective k: spacing that varies (as real steps do), so
// that only one offset lines every call up.
uint64_t call_end(size_t k) {
  uint64_t t = 5 * kMs;
  for (size_t i = 0; i < k; ++i) t += kMs + (i * 7919 % 13) * 23 * kUs;
  return t;
}
// A few µs of disagreement between ranks about the same end.
int64_t jitter(size_t k, int rank) { return static_cast<int64_t>((k * 31 + rank * 17) % 5) * 1000 - 2000; }

struct SkewedJob {
  std::vector<SimHost> hosts = {{"hostA", 10 * 1'000'000'000ull, 0},
                                {"hostB", 77 * 1'000'000'000ull, 3'200'000},
                                {"hostC", 5 * 1'000'000'000ull, -1'700'000},
                                {"hostD", 123 * 1'000'000'000ull, 450'000}};
};

// One rank per host; collectives as zones named `zone_name`, rank 3's first
// 100 calls lost (its oldest files deleted). With `kernels`, NCCL kernels
// carry the meeting points and the zones end when the launch returns.
std::string write_skewed_job(test::TempDir& dir, const SkewedJob& job, const std::string& zone_name,
                             bool kernels = false, int plain_rank = -1) {
  const std::string root = dir.file("job");
  for (int r = 0; r < 4; ++r) {
    SimRank rank(job.hosts[r], 100 + r, r, 4, "job1");
    if (r == plain_rank) {  // records no collective at all
      rank.zone("forward", kMs, 2 * kMs);
      rank.write(root, "rank" + std::to_string(r));
      continue;
    }
    for (size_t k = r == 3 ? 100 : 0; k < 300; ++k) {
      const uint64_t end = static_cast<uint64_t>(static_cast<int64_t>(call_end(k)) + jitter(k, r));
      const uint64_t begin = call_end(k) - 300 * kUs - r * 10 * kUs;
      if (kernels) {
        rank.zone(zone_name, begin, begin + 20 * kUs + (k % 3) * kUs * r);  // returns at once, whenever
        rank.gpu(GpuKind::Kernel, "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
                 begin + 30 * kUs, end);
      } else {
        rank.zone(zone_name, begin, end);
      }
      if (k % 50 == 49) rank.flush();
    }
    rank.write(root, "rank" + std::to_string(r));
  }
  return root;
}

void expect_recovered(const TraceReader& reader, const ClockAlignment& a, const SkewedJob& job) {
  EXPECT_EQ(a.method, "collectives");
  ASSERT_EQ(a.hosts.size(), 4u);
  EXPECT_TRUE(a.hosts[0].reference);
  for (int r = 0; r < 4; ++r) {
    const ProcessState& p = reader.processes()[r];
    ASSERT_EQ(p.rank->rank, r);
    // The offset that puts this host's clock on rank 0's: the difference of
    // their boot times, whatever their wall clocks said.
    const int64_t truth =
        static_cast<int64_t>(job.hosts[0].monotonic_at_zero) - static_cast<int64_t>(job.hosts[r].monotonic_at_zero);
    EXPECT_LE(std::llabs(p.clock_offset_ns - truth), 10'000) << "rank " << r;
    // What the collectives added undoes the wall clock's skew.
    EXPECT_LE(std::llabs(a.hosts[r].correction_ns + (job.hosts[r].wall_skew_ns - job.hosts[0].wall_skew_ns)), 10'000);
    if (r) {
      EXPECT_TRUE(a.hosts[r].aligned);
      EXPECT_LE(a.hosts[r].residual_ns, 3'000u);
      EXPECT_GE(a.hosts[r].matched, r == 3 ? 190u : 290u);
    }
  }
  EXPECT_NE(a.note.find("aligned by the ends of their collective operations"), std::string::npos) << a.note;
}

TEST(ClockAlignment, RecoversMillisecondWallClockErrorsFromZoneCollectives) {
  test::TempDir dir;
  SkewedJob job;
  const std::string root = write_skewed_job(dir, job, "gloo:all_reduce");
  TraceReader reader({root});
  ASSERT_FALSE(reader.has_problems());
  // The wall clock alone leaves each host off by its skew.
  for (int r = 1; r < 4; ++r) {
    const int64_t truth = static_cast<int64_t>(job.hosts[0].monotonic_at_zero) -
                          static_cast<int64_t>(job.hosts[r].monotonic_at_zero);
    EXPECT_EQ(reader.processes()[r].clock_offset_ns - truth, job.hosts[r].wall_skew_ns);
  }
  const ClockAlignment a = align_clocks_by_collectives(reader, 2);
  expect_recovered(reader, a, job);
  EXPECT_EQ(reader.clock_note(), a.note);
}

TEST(ClockAlignment, NcclKernelsNotTheirLaunchZones) {
  test::TempDir dir;
  SkewedJob job;
  TraceReader reader({write_skewed_job(dir, job, "nccl:all_reduce", /*kernels=*/true)});
  expect_recovered(reader, align_clocks_by_collectives(reader, 2), job);
}

TEST(ClockAlignment, MarkedZonesAreCollectives) {
  test::TempDir dir;
  SkewedJob job;
  const std::string root = dir.file("job");
  for (int r = 0; r < 4; ++r) {
    SimRank rank(job.hosts[r], 100 + r, r, 4, "job1");
    const uint32_t key = rank.loc("collective"), group = rank.loc("world");
    for (size_t k = 0; k < 200; ++k) {
      const uint64_t end = static_cast<uint64_t>(static_cast<int64_t>(call_end(k)) + jitter(k, r));
      rank.builder().begin(rank.thread(), rank.at(end - 100 * kUs), rank.loc("sync_weights"));
      rank.builder().arg(rank.thread(), rank.at(end - 100 * kUs), key, group);
      rank.builder().end(rank.thread(), rank.at(end));
    }
    rank.write(root, "rank" + std::to_string(r));
  }
  TraceReader reader({root});
  const ClockAlignment a = align_clocks_by_collectives(reader, 1);
  EXPECT_EQ(a.method, "collectives");
  for (int r = 1; r < 4; ++r)
    EXPECT_LE(std::llabs(a.hosts[r].correction_ns + job.hosts[r].wall_skew_ns), 10'000) << r;
}

TEST(ClockAlignment, NoCollectivesFallsBackToWallClockWithAWarning) {
  test::TempDir dir;
  SkewedJob job;
  const std::string root = write_skewed_job(dir, job, "forward");  // not a collective
  TraceReader reader({root});
  std::vector<int64_t> before;
  for (const ProcessState& p : reader.processes()) before.push_back(p.clock_offset_ns);
  const ClockAlignment a = align_clocks_by_collectives(reader, 2);
  EXPECT_EQ(a.method, "wall clock");
  EXPECT_NE(a.note.find("warning"), std::string::npos);
  EXPECT_NE(a.note.find("recorded no collective operation in common"), std::string::npos) << a.note;
  for (size_t i = 0; i < before.size(); ++i) EXPECT_EQ(reader.processes()[i].clock_offset_ns, before[i]);
}

TEST(ClockAlignment, AHostWithoutCollectivesKeepsItsWallClock) {
  test::TempDir dir;
  SkewedJob job;
  TraceReader reader({write_skewed_job(dir, job, "gloo:all_reduce", false, /*plain_rank=*/2)});
  const int64_t wall2 = reader.processes()[2].clock_offset_ns;
  const ClockAlignment a = align_clocks_by_collectives(reader, 2);
  EXPECT_EQ(a.method, "collectives and wall clock");
  EXPECT_NE(a.note.find("1 of them share no collective operation"), std::string::npos) << a.note;
  EXPECT_FALSE(a.hosts[2].aligned);
  EXPECT_EQ(reader.processes()[2].clock_offset_ns, wall2);
  for (int r : {1, 3}) {
    EXPECT_TRUE(a.hosts[r].aligned);
    EXPECT_LE(std::llabs(a.hosts[r].correction_ns + job.hosts[r].wall_skew_ns), 10'000) << r;
  }
}

// Ranks 0-1 meet in one group, ranks 1-2 and 2-3 in others: host D is
// reached through B and C, never meeting rank 0.
TEST(ClockAlignment, AHostReachedThroughAnother) {
  test::TempDir dir;
  SkewedJob job;
  const std::string root = dir.file("job");
  for (int r = 0; r < 4; ++r) {
    SimRank rank(job.hosts[r], 100 + r, r, 4, "job1");
    const uint32_t key = rank.loc("collective");
    for (int g = 0; g < 3; ++g) {
      if (r != g && r != g + 1) continue;  // group g: ranks g and g+1
      const uint32_t group = rank.loc("pair" + std::to_string(g));
      for (size_t k = 0; k < 100; ++k) {
        const uint64_t end = call_end(k * 3 + g);
        rank.builder().begin(rank.thread(), rank.at(end - 50 * kUs), rank.loc("exchange"));
        rank.builder().arg(rank.thread(), rank.at(end - 50 * kUs), key, group);
        rank.builder().end(rank.thread(), rank.at(end));
      }
    }
    rank.write(root, "rank" + std::to_string(r));
  }
  TraceReader reader({root});
  const ClockAlignment a = align_clocks_by_collectives(reader, 2);
  EXPECT_EQ(a.method, "collectives");
  for (int r = 1; r < 4; ++r) {
    EXPECT_TRUE(a.hosts[r].aligned) << r;
    EXPECT_LE(std::llabs(a.hosts[r].correction_ns + job.hosts[r].wall_skew_ns), 10'000) << r;
  }
}

TEST(ClockAlignment, OneHostNeedsNothingAndReadsNothing) {
  test::TempDir dir;
  SkewedJob job;
  for (SimHost& h : job.hosts) h = {"same", 10 * 1'000'000'000ull, 0};
  TraceReader reader({write_skewed_job(dir, job, "gloo:all_reduce")});
  const ClockAlignment a = align_clocks_by_collectives(reader, 2);
  EXPECT_EQ(a.method, "one host");
  EXPECT_TRUE(a.note.empty());
  for (const FileSummary& f : reader.files()) EXPECT_EQ(f.segments, 0u);  // no read happened
}

// One rank, three whole steps of hand-placed GPU work (µs from step 0):
//   step 0 [0,1000):    compute [100,400) [300,600); NCCL [500,800); copy [900,950)
//   step 1 [1000,2000): compute [1900,2100) (crosses into step 2); NCCL [1200,1300); copy [1250,1400)
//   step 2 [2000,3000): NCCL [2050,2250)
// and a CPU zone [50,950) with a child (counted once).
TEST(RankReport, GpuTimeSplitPerStepExactly) {
  test::TempDir dir;
  SimRank rank({"node", 1'000'000'000ull, 0}, 100, 0, 1, "job1");
  const uint64_t z = 10 * kMs;  // step 0's true start
  auto us = [&](uint64_t v) { return z + v * kUs; };
  for (uint64_t s = 0; s <= 3; ++s) rank.step(us(s * 1000), s);
  rank.zone("outer_inner_parent", us(50), us(950));
  rank.flush();
  // Records in an order the sweep must sort out, over two segments.
  const std::string nccl = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)";
  rank.gpu(GpuKind::Kernel, nccl, us(2050), us(2250));
  rank.gpu(GpuKind::Memcpy, "", us(1250), us(1400));
  rank.gpu(GpuKind::Kernel, "gemm", us(1900), us(2100));
  rank.flush();
  rank.gpu(GpuKind::Kernel, "gemm", us(300), us(600));
  rank.gpu(GpuKind::Kernel, nccl, us(1200), us(1300));
  rank.gpu(GpuKind::Memset, "", us(900), us(950));
  rank.gpu(GpuKind::Kernel, "gemm", us(100), us(400));
  rank.gpu(GpuKind::Kernel, nccl, us(500), us(800));
  rank.write(dir.path(), "rank0");
  TraceReader reader({dir.path()});
  const RanksReport r = analyse_ranks(reader, {});
  ASSERT_EQ(r.ranks.size(), 1u);
  ASSERT_EQ(r.steps.size(), 3u);
  struct Want {
    uint64_t compute, comm, memcpy, overlap, busy, cpu;
  };
  const Want want[3] = {{500, 300, 50, 100, 750, 900}, {100, 100, 150, 0, 300, 0}, {100, 200, 0, 50, 250, 0}};
  for (size_t s = 0; s < 3; ++s) {
    ASSERT_EQ(r.steps[s].ranks.size(), 1u);
    const StepStats& st = r.steps[s].ranks[0].stats;
    EXPECT_EQ(st.number, s);
    EXPECT_EQ(st.duration_ns(), 1000 * kUs);
    EXPECT_EQ(st.compute_ns, want[s].compute * kUs) << s;
    EXPECT_EQ(st.comm_ns, want[s].comm * kUs) << s;
    EXPECT_EQ(st.memcpy_ns, want[s].memcpy * kUs) << s;
    EXPECT_EQ(st.overlap_ns, want[s].overlap * kUs) << s;
    EXPECT_EQ(st.busy_ns, want[s].busy * kUs) << s;
    EXPECT_EQ(st.idle_ns(), (1000 - want[s].busy) * kUs) << s;
    EXPECT_EQ(st.cpu_zone_ns, want[s].cpu * kUs) << s;
    // The zone [50,950) is open 900 µs of step 0; the GPU idles in it over
    // [50,100) and [800,900).
    EXPECT_EQ(st.in_zones_ns, (s == 0 ? 900 : 0) * kUs) << s;
    EXPECT_EQ(st.idle_in_zones_ns, (s == 0 ? 150 : 0) * kUs) << s;
  }
  const RankRow& row = r.ranks[0];
  EXPECT_TRUE(row.gpu);
  EXPECT_EQ(row.steps, 3u);
  EXPECT_EQ(row.step_time_median_ns, 1000 * kUs);
  EXPECT_EQ(row.compute_ns, 700 * kUs);
  EXPECT_EQ(row.comm_ns, 600 * kUs);
  EXPECT_EQ(row.memcpy_ns, 200 * kUs);
  EXPECT_EQ(row.overlap_ns, 150 * kUs);
  EXPECT_DOUBLE_EQ(row.overlap_pct(), 25.0);
  EXPECT_EQ(row.idle_ns, 1700 * kUs);
  EXPECT_EQ(row.in_zones_ns, 900 * kUs);
  EXPECT_EQ(row.idle_in_zones_ns, 150 * kUs);
  EXPECT_EQ(r.late_gpu_records, 0u);
  EXPECT_EQ(r.late_cover_spans, 0u);
  // JSON carries the fields with these values.
  const nlohmann::json j = nlohmann::json::parse(format_ranks(r, RanksFormat::Json, true));
  EXPECT_EQ(j["ranks"][0]["compute_ns"], 700 * kUs);
  EXPECT_EQ(j["ranks"][0]["comm_ns"], 600 * kUs);
  EXPECT_EQ(j["ranks"][0]["overlap_pct"], 25.0);
  EXPECT_EQ(j["ranks"][0]["idle_ns"], 1700 * kUs);
  EXPECT_EQ(j["ranks"][0]["step_time_median_ns"], 1000 * kUs);
  EXPECT_EQ(j["steps"][1]["times"][0]["memcpy_ns"], 150 * kUs);
  EXPECT_EQ(j["steps"][0]["times"][0]["in_zones_ns"], 900 * kUs);
  EXPECT_EQ(j["steps"][0]["times"][0]["idle_in_zones_ns"], 150 * kUs);
  EXPECT_EQ(j["ranks"][0]["idle_in_zones_ns"], 150 * kUs);
}

// Four ranks on one host, 100 steps: forward 500 µs, then rank 2 does 2 ms
// of extra work, then all meet in gloo:all_reduce.
std::string write_straggler_job(test::TempDir& dir, const std::string& job_id = "job9", int world = 4,
                                const std::vector<int>& ranks = {0, 1, 2, 3}) {
  const std::string root = dir.file("job");
  const SimHost host{"node", 50 * 1'000'000'000ull, 0};
  for (int r : ranks) {
    SimRank rank(host, 200 + r, r, world, job_id);
    uint64_t t = kMs;
    for (uint64_t s = 0; s < 100; ++s) {
      rank.step(t + r * kUs, s);
      rank.zone("forward", t + r * kUs, t + 500 * kUs);
      uint64_t entry = t + 500 * kUs + ((s + r) % 3) * kUs;
      if (r == 2) {
        rank.zone("extra_work", entry, entry + 2 * kMs);
        entry += 2 * kMs;
      }
      const uint64_t end = t + 2600 * kUs + ((s * 7 + r) % 4) * kUs;
      rank.zone("gloo:all_reduce", entry, end);
      t = t + 2700 * kUs;
      if (s % 25 == 24) rank.flush();
    }
    rank.step(t, 100);
    rank.write(root, "rank" + std::to_string(r));
  }
  return root;
}

TEST(RankReport, NamesTheRankThatArrivesLateAndWhy) {
  test::TempDir dir;
  TraceReader reader({write_straggler_job(dir)});
  const RanksReport r = analyse_ranks(reader, reading_threads(2));
  EXPECT_TRUE(r.problems.empty());
  EXPECT_EQ(r.job_id, "job9");
  EXPECT_EQ(r.world_size, 4);
  ASSERT_EQ(r.ranks.size(), 4u);
  for (const RankRow& row : r.ranks) {
    EXPECT_EQ(row.steps, 100u);
    EXPECT_FALSE(row.gpu);
    EXPECT_EQ(row.collectives, 100u);
    EXPECT_EQ(row.matched, 100u);
  }
  ASSERT_EQ(r.stragglers.size(), 1u);
  const Straggler& s = r.stragglers[0];
  EXPECT_EQ(s.rank, 2);
  EXPECT_EQ(s.kind, "late at collectives");
  EXPECT_EQ(s.collectives, 100u);
  // Entries jitter by 0-2 µs: 2 ms late, within 3 µs.
  EXPECT_LE(std::llabs(s.late_ns_median - 2'000'000), 3'000);
  EXPECT_EQ(s.reason, "zone extra_work: +2.00 ms per step over the other ranks' median");
  // The steps' spread: ranks mark their steps 0-3 µs apart, the same each step.
  ASSERT_EQ(r.steps.size(), 100u);
  for (const StepRow& st : r.steps) EXPECT_EQ(st.ranks.size(), 4u);
  // The text names it too.
  const std::string text = format_ranks(r, RanksFormat::Text, false);
  EXPECT_NE(text.find("rank 2 (node, pid 202): late at collectives by 2.00 ms (median over 100)"), std::string::npos)
      << text;
}

// Three ranks of 40 steps, rank 1's work 3 ms where the others' is 2 ms.
// With `collective`, each step ends in an all_reduce every rank leaves
// together (lockstep, rank 1 late to it), and rank 2 marks its steps late by
// 0, 0.3, 0.6, 0.9 ms in turn: three of its four steps last 4.3 ms, one
// 3.1 ms, against 4 ms for the others. Without, the ranks never meet.
std::string write_slow_step_job(test::TempDir& dir, bool collective) {
  const std::string root = dir.file("job");
  const SimHost host{"node", 50 * 1'000'000'000ull, 0};
  for (int r = 0; r < 3; ++r) {
    SimRank rank(host, 300 + r, r, 3, "slow");
    uint64_t t = kMs;
    for (uint64_t s = 0; s < 40; ++s) {
      const uint64_t mark = t + (collective && r == 2 ? (s % 4) * 300 * kUs : 0);
      rank.step(mark, s);
      const uint64_t work = r == 1 ? 3 * kMs : 2 * kMs;
      rank.zone("compute", mark, mark + work);
      if (collective) {
        rank.zone("gloo:all_reduce", mark + work, t + 4 * kMs);
        t += 4 * kMs;
      } else {
        t += work + kMs / 2;
      }
    }
    rank.step(t, 40);
    rank.write(root, "rank" + std::to_string(r));
  }
  return root;
}

TEST(RankReport, SlowStepsOnlyForRanksNotInLockstep) {
  {
    test::TempDir dir;
    TraceReader reader({write_slow_step_job(dir, false)});
    const RanksReport r = analyse_ranks(reader, {});
    ASSERT_EQ(r.stragglers.size(), 1u) << format_ranks(r, RanksFormat::Text, false);
    EXPECT_EQ(r.stragglers[0].rank, 1);
    EXPECT_EQ(r.stragglers[0].kind, "slow steps");
    EXPECT_EQ(r.stragglers[0].late_ns_median, 1'000'000);  // 3.5 ms steps against 2.5 ms
    EXPECT_EQ(r.stragglers[0].reason, "zone compute: +1.00 ms per step over the other ranks' median");
  }
  {
    // In lockstep every rank's steps take 4 ms over the run; rank 2's
    // median of 4.3 ms (7.5% over) comes of where its marks fall, and must
    // not make it a slow rank.
    test::TempDir dir;
    TraceReader reader({write_slow_step_job(dir, true)});
    const RanksReport r = analyse_ranks(reader, {});
    ASSERT_EQ(r.ranks.size(), 3u);
    for (const RankRow& row : r.ranks) EXPECT_EQ(row.matched, 40u);
    ASSERT_EQ(r.stragglers.size(), 1u) << format_ranks(r, RanksFormat::Text, false);
    EXPECT_EQ(r.stragglers[0].rank, 1);
    EXPECT_EQ(r.stragglers[0].kind, "late at collectives");
  }
}

TEST(RankReport, JobProblemsOneLineEachTheRestAnalysed) {
  test::TempDir dir;
  // Ranks 0-2 of a world of 4 (rank 3 has no files), and a process of
  // another job left in the same directory.
  const std::string root = write_straggler_job(dir, "job9", 4, {0, 1, 2});
  {
    SimRank other({"node", 50 * 1'000'000'000ull, 0}, 999, 1, 4, "job-other");
    other.zone("forward", kMs, 2 * kMs);
    other.write(root, "stale");
  }
  // Rank 1's file torn: its writer died mid-frame (a .part file cut short).
  const std::string rank1 = root + "/rank1/ringprof-201-1-000000.rpf";
  std::vector<uint8_t> bytes = test::read_file(rank1);
  std::filesystem::remove(rank1);
  bytes.resize(bytes.size() - 10);
  test::write_file(rank1 + ".part", bytes);

  TraceReader reader({root});
  const RanksReport r = analyse_ranks(reader, {});
  ASSERT_EQ(r.problems.size(), 2u);
  EXPECT_NE(r.problems[0].find("ringprof: " + root + "/stale/ringprof-999-1-000000.rpf: from job job-other, not job "
                                                     "job9 (the job of most processes): left out"),
            std::string::npos)
      << r.problems[0];
  EXPECT_EQ(r.problems[1], "ringprof: job job9: 1 of 4 ranks have no files: 3");
  const std::vector<Problem> file_problems = reader.problems();
  ASSERT_EQ(file_problems.size(), 1u);
  EXPECT_EQ(file_problems[0].kind, ProblemKind::TornTail);
  // The rest analysed: three ranks, rank 1 up to its last whole segment.
  ASSERT_EQ(r.ranks.size(), 3u);
  EXPECT_EQ(r.ranks[0].rank, 0);
  EXPECT_EQ(r.ranks[1].rank, 1);
  EXPECT_EQ(r.ranks[2].rank, 2);
  EXPECT_EQ(r.ranks[0].steps, 100u);
  EXPECT_EQ(r.ranks[1].steps, 99u);  // its last segment (the final step mark) torn off
  ASSERT_EQ(r.stragglers.size(), 1u);
  EXPECT_EQ(r.stragglers[0].rank, 2);
}

TEST(RankReport, ReadInParallelSameAsOneAtATime) {
  test::TempDir dir;
  const std::string root = write_straggler_job(dir);
  TraceReader one({root}), many({root});
  const std::string a = format_ranks(analyse_ranks(one, reading_threads(1)), RanksFormat::Json, true);
  const std::string b = format_ranks(analyse_ranks(many, reading_threads(4)), RanksFormat::Json, true);
  EXPECT_EQ(a, b);
}

TEST(RanksCli, JsonOnAJob) {
  test::TempDir dir;
  const std::string root = write_straggler_job(dir);
  const test::CommandResult res =
      test::run_command(std::string(RINGPROF_CLI) + " ranks --format json " + test::shell_quote(root));
  ASSERT_EQ(res.exit_code, 0) << res.err;
  EXPECT_EQ(res.err, "");
  const nlohmann::json j = nlohmann::json::parse(res.out);
  ASSERT_EQ(j["ranks"].size(), 4u);
  for (const char* k : {"rank", "host", "steps", "step_time_median_ns", "compute_ns", "comm_ns", "overlap_pct",
                        "idle_ns"})
    EXPECT_TRUE(j["ranks"][0].contains(k)) << k;
  ASSERT_EQ(j["stragglers"].size(), 1u);
  EXPECT_EQ(j["stragglers"][0]["rank"], 2);
  EXPECT_TRUE(j["stragglers"][0].contains("reason"));
  EXPECT_TRUE(j["stragglers"][0].contains("late_ns_median"));
  EXPECT_EQ(j["clock"]["method"], "one host");
  // CSV: a header and one row per rank.
  const test::CommandResult csv =
      test::run_command(std::string(RINGPROF_CLI) + " ranks --format csv " + test::shell_quote(root));
  ASSERT_EQ(csv.exit_code, 0);
  EXPECT_EQ(std::count(csv.out.begin(), csv.out.end(), '\n'), 5);
  EXPECT_EQ(csv.out.substr(0, csv.out.find('\n')),
            "rank,host,pid,steps,step_time_median_ns,span_ns,compute_ns,comm_ns,memcpy_ns,overlap_ns,overlap_pct,"
            "idle_ns,cpu_zone_ns,in_zones_ns,idle_in_zones_ns,collectives,late_ns_median");
}

}  // namespace
}  // namespace ringprof

namespace ringprof {
namespace {

// Every command puts a job's hosts on one axis from its collectives and says
// so on stderr: here `convert`, whose Chrome trace then has rank 3's call
// ends where rank 0's are.
TEST(RanksCli, EveryCommandAlignsHostsByCollectives) {
  test::TempDir dir;
  SkewedJob job;
  const std::string root = write_skewed_job(dir, job, "gloo:all_reduce");
  const std::string out = dir.file("trace.json");
  const test::CommandResult res = test::run_command(std::string(RINGPROF_CLI) + " convert " +
                                                    test::shell_quote(root) + " -o " + test::shell_quote(out));
  ASSERT_EQ(res.exit_code, 0) << res.err;
  EXPECT_NE(res.err.find("ringprof: note: the processes ran on 4 hosts, aligned by the ends of their collective "
                         "operations"),
            std::string::npos)
      << res.err;
  const nlohmann::json j = nlohmann::json::parse(test::read_text(out));
  // The last all_reduce (k = 299) on ranks 0 and 3: ends ("E" events or X
  // ts+dur) within 10 µs on the trace's axis (µs).
  std::map<uint32_t, double> last_end;
  std::map<uint32_t, uint32_t> rank_of_pid;
  for (const auto& e : j["traceEvents"]) {
    if (e["name"] == "process_name") {
      const std::string name = e["args"]["name"];
      if (name.rfind("rank ", 0) == 0) rank_of_pid[e["pid"]] = static_cast<uint32_t>(std::stoul(name.substr(5)));
    }
    if (e.value("name", "") != "gloo:all_reduce") continue;
    double end = 0;
    if (e["ph"] == "X") end = e["ts"].get<double>() + e["dur"].get<double>();
    else if (e["ph"] == "E") end = e["ts"].get<double>();
    else continue;
    last_end[e["pid"]] = std::max(last_end[e["pid"]], end);
  }
  ASSERT_EQ(rank_of_pid.size(), 4u);
  std::map<uint32_t, double> by_rank;
  for (auto [pid, end] : last_end) by_rank[rank_of_pid[pid]] = end;
  ASSERT_EQ(by_rank.size(), 4u);
  for (int r = 1; r < 4; ++r) EXPECT_NEAR(by_rank[r], by_rank[0], 10.0) << r;
}

}  // namespace
}  // namespace ringprof

namespace ringprof {
namespace {

// Rank 0's host has eight ranks; host C's rank meets only host B's: it is
// still reached (every aligned host offers anchors, not only the first eight
// processes).
TEST(ClockAlignment, ReachedThroughAnotherHostBehindAFullReferenceHost) {
  test::TempDir dir;
  const std::string root = dir.file("job");
  const SimHost a{"hostA", 10'000'000'000ull, 0}, b{"hostB", 20'000'000'000ull, 2'500'000},
      c{"hostC", 30'000'000'000ull, -4'000'000};
  auto write = [&](const SimHost& h, int r, const std::vector<std::string>& groups) {
    SimRank rank(h, 100 + r, r, 10, "job1");
    const uint32_t key = rank.loc("collective");
    for (size_t g = 0; g < groups.size(); ++g) {
      const uint32_t group = rank.loc(groups[g]);
      const size_t which = groups[g] == "g0" ? 0 : 1;
      for (size_t k = 0; k < 100; ++k) {
        const uint64_t end = call_end(k * 2 + which);
        rank.builder().begin(rank.thread(), rank.at(end - 50 * kUs), rank.loc("exchange"));
        rank.builder().arg(rank.thread(), rank.at(end - 50 * kUs), key, group);
        rank.builder().end(rank.thread(), rank.at(end));
      }
    }
    rank.write(root, "rank" + std::to_string(r));
  };
  for (int r = 0; r < 8; ++r) write(a, r, {"g0"});
  write(b, 8, {"g0", "g1"});
  write(c, 9, {"g1"});
  TraceReader reader({root});
  const ClockAlignment al = align_clocks_by_collectives(reader, 2);
  EXPECT_EQ(al.method, "collectives") << al.note;
  ASSERT_EQ(al.hosts.size(), 3u);
  EXPECT_LE(std::llabs(al.hosts[1].correction_ns + b.wall_skew_ns), 10'000);
  EXPECT_LE(std::llabs(al.hosts[2].correction_ns + c.wall_skew_ns), 10'000);
}

// Writes the rank's file and scans it alone, as scan_ranks() scans each process.
RankScan scan_one_rank(SimRank& rank, const test::TempDir& dir) {
  rank.write(dir.path(), "rank0");
  TraceReader reader({dir.path()});
  RankScanner scanner(0, false);
  reader.read(scanner);
  return std::move(scanner.result());
}

// A worker thread's zones arrive before the step marks that precede them (a
// segment holds one run of events per thread), and a zone never ends (an
// operator PyTorch ends on another thread): per-step CPU time is still the
// worker's 100 µs and the main thread's 200 µs per step, the open zone not
// counted, and the names' totals cover the whole steps.
TEST(RankScan, ZonesOfOtherThreadsAndZonesWithoutAnEnd) {
  test::TempDir dir;
  SimRank rank({"node", 1'000'000'000ull, 0}, 100, 0, 1, "job1");
  test::TraceBuilder& b = rank.builder();
  const uint32_t worker = b.thread(101, "worker"), comm = b.thread(102, "comm");
  const uint32_t work = rank.loc("work"), main_zone = rank.loc("main_part"), reduce = rank.loc("gloo:all_reduce");
  const uint64_t z = 10 * kMs;
  for (uint64_t seg = 0; seg < 2; ++seg) {
    // Worker first, then main: as a drain round lays them out.
    for (uint64_t s = seg * 5; s < seg * 5 + 5; ++s) {
      b.begin(worker, rank.at(z + s * kMs + 300 * kUs), work);
      b.end(worker, rank.at(z + s * kMs + 400 * kUs));
    }
    if (seg == 0) b.begin(comm, rank.at(z + 50 * kUs), reduce);  // never ends
    for (uint64_t s = seg * 5; s < seg * 5 + 5; ++s) {
      b.step(rank.thread(), rank.at(z + s * kMs), s);
      b.begin(rank.thread(), rank.at(z + s * kMs + 500 * kUs), main_zone);
      b.end(rank.thread(), rank.at(z + s * kMs + 700 * kUs));
    }
    if (seg == 1) b.step(rank.thread(), rank.at(z + 10 * kMs), 10);
    b.flush();
  }
  const RankScan scan = scan_one_rank(rank, dir);
  ASSERT_EQ(scan.steps.size(), 10u);
  for (const StepStats& st : scan.steps) {
    EXPECT_EQ(st.cpu_zone_ns, 300 * kUs) << st.number;
    // The two threads' zones do not meet; the open collective is left out;
    // without GPU records all of it is GPU idle.
    EXPECT_EQ(st.in_zones_ns, 300 * kUs) << st.number;
    EXPECT_EQ(st.idle_in_zones_ns, 300 * kUs) << st.number;
  }
  EXPECT_EQ(scan.late_cover_spans, 0u);
  EXPECT_EQ(scan.zone_self_ns.at("work"), 10 * 100 * kUs);
  EXPECT_EQ(scan.zone_self_ns.at("main_part"), 10 * 200 * kUs);
  EXPECT_EQ(scan.zone_self_ns.count("gloo:all_reduce"), 0u);
  EXPECT_TRUE(scan.calls.empty());  // the open collective is no meeting point
  EXPECT_EQ(scan.late_step_marks, 0u);
}

// The time in zones counts each instant once, whatever the threads, and is
// settled in bounded memory: 100000 steps of 100 µs, each with zones on two
// threads that overlap ([10,50) with a child, and [30,70)) around a kernel
// [40,60): 60 µs in zones, 40 of them with the GPU idle. The GPU records of
// each drain round reach the files one round late, and the worker's zones
// come before the main thread's, as the drainer lays them out.
TEST(RankScan, TimeInZonesIsTheUnionOverThreadsInBoundedMemory) {
  test::TempDir dir;
  SimRank rank({"node", 1'000'000'000ull, 0}, 100, 0, 1, "job1");
  test::TraceBuilder& b = rank.builder();
  const uint32_t worker = b.thread(101, "worker");
  const uint32_t outer = rank.loc("outer"), child = rank.loc("child"), other = rank.loc("other");
  constexpr uint64_t kSteps = 100'000, kRound = 1000;
  static_assert(kSteps > RankScan::kGpuWindow + RankScan::kCoverSpans / 2);
  const uint64_t z = 10 * kMs;
  auto t = [&](uint64_t s, uint64_t us) { return z + s * 100 * kUs + us * kUs; };
  for (uint64_t round = 0; round <= kSteps / kRound; ++round) {
    const uint64_t from = round * kRound, to = std::min(kSteps, from + kRound);
    for (uint64_t s = from; s < to; ++s) {
      b.begin(worker, rank.at(t(s, 30)), other);
      b.end(worker, rank.at(t(s, 70)));
    }
    for (uint64_t s = from; s < to; ++s) {
      b.step(rank.thread(), rank.at(t(s, 0)), s);
      b.begin(rank.thread(), rank.at(t(s, 10)), outer);
      b.begin(rank.thread(), rank.at(t(s, 15)), child);
      b.end(rank.thread(), rank.at(t(s, 20)));
      b.end(rank.thread(), rank.at(t(s, 50)));
    }
    if (round > 0)
      for (uint64_t s = from - kRound; s < from; ++s) rank.gpu(GpuKind::Kernel, "gemm", t(s, 40), t(s, 60));
    b.flush();
  }
  const RankScan scan = scan_one_rank(rank, dir);
  ASSERT_EQ(scan.steps.size(), kSteps - 1);
  EXPECT_EQ(scan.late_cover_spans, 0u);
  EXPECT_EQ(scan.late_gpu_records, 0u);
  EXPECT_EQ(scan.late_step_marks, 0u);
  size_t wrong = 0;
  for (const StepStats& st : scan.steps) {
    if (st.in_zones_ns != 60 * kUs || st.idle_in_zones_ns != 40 * kUs || st.busy_ns != 20 * kUs) {
      if (++wrong <= 5)
        ADD_FAILURE() << "step " << st.number << ": in zones " << st.in_zones_ns << ", GPU idle in them "
                      << st.idle_in_zones_ns << ", GPU busy " << st.busy_ns;
    }
  }
  EXPECT_EQ(wrong, 0u);
  // The whole: every step's 60 µs (the last one, after its mark, too).
  EXPECT_EQ(scan.whole.in_zones_ns, kSteps * 60 * kUs);
  EXPECT_EQ(scan.whole.idle_in_zones_ns, kSteps * 40 * kUs);
}

// Without GPU records the time in zones is settled once the spans pass
// their bound: 80000 steps of 100 µs with zones [10,50) on the main thread
// and [60,70) on a worker (50 µs a step), and an "epoch" zone on a third
// thread around all of them, which closes last. What was settled before it
// closed cannot see it: those steps keep their 50 µs, the later ones are
// wholly in zones, and the note's count (late_cover_spans) says one zone came so.
TEST(RankScan, AZoneLongerThanTheSettledMarginCountsFromThereOn) {
  test::TempDir dir;
  SimRank rank({"node", 1'000'000'000ull, 0}, 100, 0, 1, "job1");
  test::TraceBuilder& b = rank.builder();
  const uint32_t worker = b.thread(101, "worker"), epoch_thread = b.thread(102, "epoch");
  const uint32_t main_zone = rank.loc("main_part"), work = rank.loc("work"), epoch = rank.loc("epoch");
  constexpr uint64_t kSteps = 80'000;
  static_assert(2 * kSteps > RankScan::kCoverSpans);
  const uint64_t z = 10 * kMs;
  auto t = [&](uint64_t s, uint64_t us) { return rank.at(z + s * 100 * kUs + us * kUs); };
  b.begin(epoch_thread, t(0, 0), epoch);
  for (uint64_t s = 0; s < kSteps; ++s) {
    b.step(rank.thread(), t(s, 0), s);
    b.begin(rank.thread(), t(s, 10), main_zone);
    b.end(rank.thread(), t(s, 50));
    b.begin(worker, t(s, 60), work);
    b.end(worker, t(s, 70));
    if (s % 1000 == 999) b.flush();
  }
  b.step(rank.thread(), t(kSteps, 0), kSteps);
  b.end(epoch_thread, t(kSteps, 0));
  const RankScan scan = scan_one_rank(rank, dir);
  ASSERT_EQ(scan.steps.size(), kSteps);
  EXPECT_EQ(scan.late_cover_spans, 1u);
  size_t before = 0, after = 0, between = 0;
  for (const StepStats& st : scan.steps) {
    EXPECT_EQ(st.idle_in_zones_ns, st.in_zones_ns);  // no GPU: all of it idle
    if (st.in_zones_ns == 50 * kUs && after == 0 && between == 0) {
      ++before;
    } else if (st.in_zones_ns == 100 * kUs) {
      ++after;
    } else {
      ++between;
      EXPECT_EQ(after, 0u) << "step " << st.number << ": " << st.in_zones_ns;
      EXPECT_GT(st.in_zones_ns, 50 * kUs);
      EXPECT_LT(st.in_zones_ns, 100 * kUs);
    }
  }
  EXPECT_LE(between, 1u);
  EXPECT_GT(before, 0u);  // settled before the epoch zone closed
  EXPECT_GT(after, 0u);   // what remained is wholly in zones
  EXPECT_EQ(before + between + after, kSteps);
}

// Steps numbered again (per epoch): each number once per occurrence.
TEST(RankReport, StepNumbersUsedAgainAreKeptApart) {
  test::TempDir dir;
  for (int r = 0; r < 2; ++r) {
    SimRank rank({"node", 1'000'000'000ull, 0}, 100 + r, r, 2, "job1");
    for (uint64_t i = 0; i <= 6; ++i) rank.step(10 * kMs + i * kMs + r * kUs, i % 3);
    rank.write(dir.path(), "rank" + std::to_string(r));
  }
  TraceReader reader({dir.path()});
  const RanksReport rep = analyse_ranks(reader, {});
  ASSERT_EQ(rep.steps.size(), 6u);
  std::vector<std::pair<uint32_t, uint64_t>> keys;
  for (const StepRow& s : rep.steps) {
    keys.emplace_back(s.repeat, s.step);
    EXPECT_EQ(s.ranks.size(), 2u);
    EXPECT_NE(s.ranks[0].row, s.ranks[1].row);
  }
  EXPECT_EQ(keys, (std::vector<std::pair<uint32_t, uint64_t>>{{0, 0}, {0, 1}, {0, 2}, {1, 0}, {1, 1}, {1, 2}}));
}

// A stale process of another job, on a host of its own and claiming rank 0,
// is left out of the clock alignment too: the job's two hosts align to each
// other, and the report counts two hosts.
TEST(RankReport, AnotherJobsProcessTakesNoPartInAlignment) {
  test::TempDir dir;
  SkewedJob job;
  const std::string root = write_skewed_job(dir, job, "gloo:all_reduce");
  {
    SimRank other({"hostX", 3'000'000'000ull, 9'000'000}, 5, 0, 4, "job-other");
    other.zone("gloo:all_reduce", kMs, 2 * kMs);
    other.write(root, "stale");
  }
  TraceReader reader({root});
  const RanksReport rep = analyse_ranks(reader, {});
  ASSERT_EQ(rep.problems.size(), 1u);
  EXPECT_EQ(rep.hosts, 4u);
  EXPECT_EQ(rep.clock.method, "collectives");
  for (const HostClock& h : rep.clock.hosts) EXPECT_NE(h.host, "hostX");
  ASSERT_EQ(rep.ranks.size(), 4u);
  // (The axis is the stale process's, the first in rank order, as the wall
  // clock left it; what matters is that the job's ranks line up.)
  const int64_t offset0 = reader.processes()[rep.ranks[0].process].clock_offset_ns;
  for (int r = 1; r < 4; ++r) {
    const ProcessState& p = reader.processes()[rep.ranks[r].process];
    const int64_t truth =
        static_cast<int64_t>(job.hosts[0].monotonic_at_zero) - static_cast<int64_t>(job.hosts[r].monotonic_at_zero);
    EXPECT_LE(std::llabs(p.clock_offset_ns - offset0 - truth), 10'000) << r;
  }
}

// read_parallel() hands each visitor exactly what read() does.
TEST(RankReport, ParallelReadSeesWhatReadSees) {
  test::TempDir dir;
  const std::string root = write_straggler_job(dir);
  TraceReader reader({root});
  std::vector<std::vector<uint64_t>> serial(reader.processes().size());
  reader.read([&](const SegmentView& v) {
    for (const DecodedEvent& e : v.segment.events) serial[v.process.index].push_back(e.ts_ns ^ (e.loc << 1));
  });
  struct Collect final : SegmentVisitor {
    std::vector<uint64_t> seen;
    void segment(const SegmentView& v) override {
      for (const DecodedEvent& e : v.segment.events) seen.push_back(e.ts_ns ^ (e.loc << 1));
    }
  };
  std::vector<Collect> visitors(reader.processes().size());
  reader.read_parallel([&](size_t i) -> SegmentVisitor& { return visitors[i]; }, 3);
  for (size_t i = 0; i < visitors.size(); ++i) {
    EXPECT_FALSE(serial[i].empty());
    EXPECT_EQ(visitors[i].seen, serial[i]) << i;
  }
}

// follow_groups on hand-made calls: with PyTorch's sequence numbers, calls
// are ordered and matched by them (two of rank 1's entered the other way
// round, as gloo's two workers may begin them), and the one rank 0 never
// made is the stop; one call without a number numbers the group by entry
// order again.
TEST(GroupSequences, NumberedByPyTorchsSequenceNumbersWhenEveryCallHasOne) {
  auto call = [](const char* op, uint64_t seq, uint64_t begin_ms, bool completed = true) {
    GroupCall c;
    c.group = "1";
    c.op = op;
    c.name = std::string("gloo:") + op;
    c.shapes = "[[10]]";
    c.begin_ns = begin_ms * kMs;
    c.end_ns = c.begin_ns + kMs;
    c.completed = completed;
    c.seq = seq;
    return c;
  };
  RankScan r0, r1;
  r0.group_calls = {call("all_reduce", 101, 0), call("broadcast", 102, 10), call("all_reduce", 103, 20, false)};
  // Rank 1 also made 104; its files began at 102 (the first rolled away).
  r1.group_calls = {call("all_reduce", 103, 21), call("broadcast", 102, 20), call("broadcast", 104, 30)};
  std::vector<RankRow> rows(2);
  rows[0].rank = 0;
  rows[1].rank = 1;
  std::vector<GroupSequence> g = follow_groups({&r0, &r1}, rows);
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0].seq_base, 101u);
  EXPECT_EQ(g[0].ranks[0].first_seq, 1u);
  EXPECT_EQ(g[0].ranks[0].last_seq, 3u);
  EXPECT_EQ(g[0].ranks[1].first_seq, 2u);
  EXPECT_EQ(g[0].ranks[1].last_seq, 4u);
  EXPECT_EQ(g[0].ranks[1].last_op, "broadcast");
  EXPECT_TRUE(g[0].mismatches.empty());  // entry order would pair broadcast with all_reduce at #2 and #3
  ASSERT_TRUE(g[0].stop.has_value());
  EXPECT_EQ(g[0].stop->seq, 4u);
  EXPECT_EQ(g[0].stop->entered, std::vector<size_t>{1});
  EXPECT_EQ(g[0].stop->missing, std::vector<size_t>{0});
  EXPECT_EQ(g[0].stop->op, "broadcast");

  r1.group_calls[2].seq = 0;  // a call made from C++: no number
  g = follow_groups({&r0, &r1}, rows);
  ASSERT_EQ(g.size(), 1u);
  EXPECT_EQ(g[0].seq_base, 0u);
  EXPECT_FALSE(g[0].mismatches.empty());  // in the order recorded, an all_reduce lines up with a broadcast
}

}  // namespace
}  // namespace ringprof

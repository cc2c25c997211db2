// libringprof_malloc.so end to end: a child program run with it preloaded
// (tests/memory_workload) mallocs and frees known blocks at the always-on
// level, then inside zone "alloc_burst" at the detailed level, then at the
// always-on level again. The files must hold every detailed block as an
// Alloc in that zone, with a usable size at least the requested one, each
// matched by a Free of the same size, and no memory event outside the
// detailed stretch (between its ringprof.mode marks).
#include <gtest/gtest.h>

#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "ringprof/ops.h"
#include "ringprof/tools/trace_reader.h"
#include "ringprof/tools/zone_tracker.h"
#include "support/sanitizers.h"
#include "support/test_support.h"

namespace ringprof {
namespace {

TEST(MallocPreload, DetailedBlocksRecordedInTheirZoneAndBalanced) {
#if defined(RINGPROF_SANITIZED_RUNTIME) || !defined(RINGPROF_MALLOC_LIB)
  GTEST_SKIP() << "ASan and TSan interpose malloc themselves; libringprof_malloc.so is not built with sanitizers";
#else
  test::TempDir dir;
  const std::string cmd = "RINGPROF_GPU=0 RINGPROF_SAMPLE_HZ=0 RINGPROF_DETAILED_SAMPLE_HZ=0 LD_PRELOAD=" +
                          test::shell_quote(RINGPROF_MALLOC_LIB) + " " + test::shell_quote(RINGPROF_MEMORY_WORKLOAD) +
                          " " + test::shell_quote(dir.path());
  const auto r = test::run_command(cmd);
  ASSERT_EQ(r.exit_code, 0) << r.err;

  std::map<uint64_t, uint64_t> requested;  // address -> size the program asked for
  std::istringstream lines(r.out);
  uint64_t address, size;
  while (lines >> address >> size) requested[address] = size;
  ASSERT_EQ(requested.size(), 1000u);  // distinct addresses: all were live at once

  struct Memory {
    EventKind kind;
    uint64_t ts, address, size;
    std::string zone, pool;
  };
  std::vector<Memory> memory;
  std::vector<std::pair<uint64_t, uint64_t>> mode_marks;  // (ts, mode)
  TraceReader reader({dir.path()});
  const ProcessState* process = nullptr;
  ZoneTracker zones([](const ClosedZone&) {});
  struct Visitor : SegmentVisitor {
    std::function<void(const SegmentView&)> fn;
    void segment(const SegmentView& v) override { fn(v); }
  } visitor;
  visitor.fn = [&](const SegmentView& v) {
    process = &v.process;
    for (const DecodedEvent& e : v.segment.events) {
      zones.add(e);
      if (e.kind == EventKind::Mark && v.process.location_name(e.loc) == kMarkMode)
        mode_marks.emplace_back(e.ts_ns, e.value);
      if (!kind_is_exact_memory(e.kind)) continue;
      const uint32_t z = zones.innermost(e.thread_index);
      memory.push_back({e.kind, e.ts_ns, e.address, e.value, z ? v.process.location_name(z) : "",
                        v.process.location_name(e.loc)});
    }
  };
  reader.read(visitor);
  ASSERT_TRUE(reader.problems().empty());

  // The detailed stretch: from the mark that raised the level to the next one.
  uint64_t begin = 0, end = UINT64_MAX;
  for (size_t i = 0; i < mode_marks.size(); ++i) {
    if (mode_marks[i].second != static_cast<uint64_t>(Level::Detailed)) continue;
    begin = mode_marks[i].first;
    if (i + 1 < mode_marks.size()) end = mode_marks[i + 1].first;
    break;
  }
  ASSERT_GT(begin, 0u) << "no ringprof.mode mark for the detailed level";

  // Every block, the workload's and the runtime's: an address is never
  // allocated twice without a Free between (a Free is recorded before the
  // block goes back, realloc's included), and a Free gives back the size its
  // Alloc took (usable size on both sides: live bytes balance).
  std::map<uint64_t, uint64_t> live;       // address -> usable size
  std::map<uint64_t, uint64_t> last_size;  // the workload's final blocks: size of their last Alloc
  size_t burst_allocs = 0, matched_final_frees = 0;
  for (const Memory& m : memory) {
    EXPECT_GE(m.ts, begin);
    EXPECT_LE(m.ts, end);
    EXPECT_EQ(m.pool, "heap");
    if (m.kind == EventKind::Alloc) {
      EXPECT_EQ(live.count(m.address), 0u) << "allocated twice without a free: " << m.address;
      live[m.address] = m.size;
      if (m.zone == "alloc_burst") ++burst_allocs;
      if (requested.count(m.address)) {
        EXPECT_EQ(m.zone, "alloc_burst");
        last_size[m.address] = m.size;
      }
    } else {
      auto it = live.find(m.address);
      if (it == live.end()) {  // a block from before the detailed stretch (the runtime's)
        EXPECT_EQ(requested.count(m.address), 0u) << "free of a workload block before its alloc: " << m.address;
        continue;
      }
      EXPECT_EQ(m.size, it->second);
      live.erase(it);
      if (requested.count(m.address) && last_size.count(m.address) && last_size[m.address] >= requested[m.address])
        ++matched_final_frees;
    }
  }
  // kBlocks mallocs, then kBlocks reallocs: each an Alloc in the zone.
  EXPECT_GE(burst_allocs, 2 * requested.size());
  // Each final block: its last Alloc holds at least the size asked of realloc,
  // and its Free follows.
  EXPECT_EQ(last_size.size(), requested.size());
  EXPECT_EQ(matched_final_frees, requested.size());
  for (const auto& [final_address, final_size] : requested)
    EXPECT_EQ(live.count(final_address), 0u) << "never freed: " << final_address << " (" << final_size << " B)";
#endif
}

}  // namespace
}  // namespace ringprof

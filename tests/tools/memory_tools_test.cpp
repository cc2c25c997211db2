// Memory events in the tools, over a trace whose numbers are worked out by
// hand below: the table's Self Mem / Mem, `ringprof memory` (library and
// CLI), the Chrome trace's per-pool counters and `ringprof info`'s counts.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "support/trace_builder.h"
#include "ringprof/tools/chrome_trace.h"
#include "ringprof/tools/memory_summary.h"
#include "ringprof/tools/op_table.h"
#include "ringprof/tools/trace_info.h"
#include "support/test_support.h"

namespace ringprof {
namespace {

constexpr uint64_t T = 1'000'000'000ull;  // the builder's process start

// Thread main (tid 100):
//   1000 step {                               step self: +100
//   1100   alloc heap  A000 100
//   1200   forward {                          forward self: +1000 +50 -100 = +950
//   1300     alloc heap  B000 1000
//   1400     alloc arena C000 50
//   1500     free  heap  A000 (size 0 → 100 from its alloc)
//   1600   }
//   1700   backward {                         backward self: +400 -1000 = -600
//   1800     alloc heap  D000 400
//   1900     free  heap  B000 1000
//   2000   }
//   2100 }                                    step total: 100 + 950 - 600 = 450
// Thread worker (tid 101), a later run of the same segment, no zones:
//   1450 free  arena C000 (size 0 → 50: paired in time order across threads)
//   1550 free  heap  E000 (size 0, never allocated: unmatched, 0 bytes)
//   1650 alloc heap  F000 64                  live at the end
//   1750 free  heap  9000 30 (never allocated: unmatched, its own 30 bytes)
// Second segment, main:
//   3000 forward { 3100 alloc heap A000 200 } live at the end (address reused)
// Writes the trace into `dir`; returns the file's path.
std::string memory_trace(const test::TempDir& dir) {
  test::TraceBuilder b;
  const uint32_t heap = b.location("heap"), arena = b.location("arena");
  const uint32_t step = b.location("step"), forward = b.location("forward"), backward = b.location("backward");
  const uint32_t main = b.thread(100, "main"), worker = b.thread(101, "worker");
  b.begin(main, T + 1000, step);
  b.alloc(main, T + 1100, heap, 0xA000, 100);
  b.begin(main, T + 1200, forward);
  b.alloc(main, T + 1300, heap, 0xB000, 1000);
  b.alloc(main, T + 1400, arena, 0xC000, 50);
  b.free(main, T + 1500, heap, 0xA000);
  b.end(main, T + 1600);
  b.begin(main, T + 1700, backward);
  b.alloc(main, T + 1800, heap, 0xD000, 400);
  b.free(main, T + 1900, heap, 0xB000, 1000);
  b.end(main, T + 2000);
  b.end(main, T + 2100);
  b.free(worker, T + 1450, arena, 0xC000);
  b.free(worker, T + 1550, heap, 0xE000);
  b.alloc(worker, T + 1650, heap, 0xF000, 64);
  b.free(worker, T + 1750, heap, 0x9000, 30);
  b.flush();
  b.begin(main, T + 3000, forward);
  b.alloc(main, T + 3100, heap, 0xA000, 200);
  b.end(main, T + 3200);
  b.flush();
  test::write_file(dir.file("mem.rpf"), b.bytes());
  return dir.file("mem.rpf");
}

TEST(MemoryTable, SelfMemAndMemPerZone) {
  const test::TempDir dir;
  const std::string path = memory_trace(dir);
  TraceReader reader({path});
  TableOptions o;
  o.sort = TableColumn::Mem;
  const TableResult r = compute_table(reader, o);
  ASSERT_TRUE(r.has_memory);
  ASSERT_EQ(r.rows.size(), 3u);
  // Sorted by Mem, descending.
  EXPECT_EQ(r.rows[0].name, "forward");  // two calls: 950 + 200
  EXPECT_EQ(r.rows[0].calls, 2u);
  EXPECT_EQ(r.rows[0].self_mem, 1150);
  EXPECT_EQ(r.rows[0].mem, 1150);
  EXPECT_EQ(r.rows[1].name, "step");
  EXPECT_EQ(r.rows[1].self_mem, 100);
  EXPECT_EQ(r.rows[1].mem, 450);
  EXPECT_EQ(r.rows[2].name, "backward");
  EXPECT_EQ(r.rows[2].self_mem, -600);
  EXPECT_EQ(r.rows[2].mem, -600);
  EXPECT_EQ(r.mem_allocated, 100u + 1000 + 50 + 400 + 64 + 200);
  EXPECT_EQ(r.mem_freed, 100u + 1000 + 50 + 0 + 30);
  EXPECT_EQ(r.mem_outside_zones, -50 + 64 - 30);
  EXPECT_EQ(r.unmatched_frees, 2u);

  const std::string text = format_table(r, TableFormat::Text);
  EXPECT_NE(text.find("Self Mem (B)"), std::string::npos) << text;
  EXPECT_NE(text.find("Memory: 1814 B allocated, 1180 B freed; outside any zone: -16 B; 2 frees without their allocation"),
            std::string::npos)
      << text;
  const std::string csv = format_table(r, TableFormat::Csv);
  EXPECT_NE(csv.find(",self_mem_bytes,mem_bytes\n"), std::string::npos) << csv;
  EXPECT_NE(csv.find(",-600,-600\n"), std::string::npos) << csv;
}

TEST(MemoryTable, NoMemoryColumnsWithoutMemoryEvents) {
  test::TraceBuilder b;
  const uint32_t z = b.location("z");
  const uint32_t th = b.thread(1, "t");
  b.begin(th, T + 10, z);
  b.end(th, T + 20);
  b.flush();
  test::TempDir dir;
  test::write_file(dir.file("a.rpf"), b.bytes());
  TraceReader reader({dir.file("a.rpf")});
  const TableResult r = compute_table(reader, TableOptions{});
  EXPECT_FALSE(r.has_memory);
  EXPECT_EQ(format_table(r, TableFormat::Text).find("Mem"), std::string::npos);
}

TEST(MemorySummaryTest, PoolsZonesAndLiveBlocks) {
  const test::TempDir dir;
  const std::string path = memory_trace(dir);
  TraceReader reader({path});
  const MemorySummary s = compute_memory_summary(reader, MemoryOptions{});
  EXPECT_EQ(s.memory_events, 11u);
  ASSERT_EQ(s.pools.size(), 2u);
  const MemoryPoolRow& arena = s.pools[0];
  EXPECT_EQ(arena.pool, "arena");
  EXPECT_EQ(arena.allocs, 1u);
  EXPECT_EQ(arena.frees, 1u);
  EXPECT_EQ(arena.bytes_allocated, 50u);
  EXPECT_EQ(arena.bytes_freed, 50u);
  EXPECT_EQ(arena.net(), 0);
  EXPECT_EQ(arena.peak, 50);
  EXPECT_EQ(arena.unmatched_frees, 0u);
  const MemoryPoolRow& heap = s.pools[1];
  EXPECT_EQ(heap.pool, "heap");
  EXPECT_EQ(heap.allocs, 5u);
  EXPECT_EQ(heap.frees, 4u);
  EXPECT_EQ(heap.bytes_allocated, 1764u);
  EXPECT_EQ(heap.bytes_freed, 1130u);
  EXPECT_EQ(heap.net(), 634);
  // Running heap bytes in time order: 100, 1100, 1000, 1000, 1064, 1034, 1434, 434, 634.
  EXPECT_EQ(heap.peak, 1434);
  EXPECT_EQ(heap.unmatched_frees, 2u);

  ASSERT_EQ(s.zones.size(), 4u);
  EXPECT_EQ(s.zones[0].zone, "forward");
  EXPECT_EQ(s.zones[0].allocs, 3u);
  EXPECT_EQ(s.zones[0].bytes, 1250u);
  EXPECT_EQ(s.zones[1].zone, "backward");
  EXPECT_EQ(s.zones[1].bytes, 400u);
  EXPECT_EQ(s.zones[2].zone, "step");
  EXPECT_EQ(s.zones[2].bytes, 100u);
  EXPECT_EQ(s.zones[3].zone, kNoZone);
  EXPECT_EQ(s.zones[3].bytes, 64u);

  ASSERT_EQ(s.live.size(), 3u);
  EXPECT_EQ(s.live[0].zone, "backward");
  EXPECT_EQ(s.live[0].allocs, 1u);
  EXPECT_EQ(s.live[0].bytes, 400u);
  EXPECT_EQ(s.live[1].zone, "forward");
  EXPECT_EQ(s.live[1].bytes, 200u);
  EXPECT_EQ(s.live[2].zone, kNoZone);
  EXPECT_EQ(s.live[2].bytes, 64u);
}

TEST(MemorySummaryTest, ThreadFilterCountsThatThreadOnly) {
  const test::TempDir dir;
  const std::string path = memory_trace(dir);
  TraceReader reader({path});
  MemoryOptions o;
  o.thread = "worker";
  const MemorySummary s = compute_memory_summary(reader, o);
  ASSERT_EQ(s.pools.size(), 2u);
  // The worker's arena free still finds main's allocation (pairing sees every thread).
  EXPECT_EQ(s.pools[0].frees, 1u);
  EXPECT_EQ(s.pools[0].bytes_freed, 50u);
  EXPECT_EQ(s.pools[0].net(), -50);
  EXPECT_EQ(s.pools[0].peak, 0);
  EXPECT_EQ(s.pools[0].unmatched_frees, 0u);
  EXPECT_EQ(s.pools[1].allocs, 1u);
  EXPECT_EQ(s.pools[1].frees, 2u);
  EXPECT_EQ(s.pools[1].bytes_freed, 30u);
  EXPECT_EQ(s.pools[1].peak, 64);  // 0, 64, 34
  EXPECT_EQ(s.pools[1].unmatched_frees, 2u);
  ASSERT_EQ(s.live.size(), 1u);
  EXPECT_EQ(s.live[0].zone, kNoZone);
  EXPECT_EQ(s.live[0].bytes, 64u);
}

TEST(MemorySummaryTest, CliCsvExactly) {
  const test::TempDir dir;
  const std::string path = memory_trace(dir);
  const auto r = test::run_command(std::string(RINGPROF_CLI) + " memory --format csv " + test::shell_quote(path));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "pool,allocs,frees,allocated_bytes,freed_bytes,net_bytes,peak_bytes,unmatched_frees\n"
            "arena,1,1,50,50,0,50,0\n"
            "heap,5,4,1764,1130,634,1434,2\n"
            "\n"
            "zone,allocs,allocated_bytes\n"
            "forward,3,1250\n"
            "backward,1,400\n"
            "step,1,100\n"
            "(no zone),1,64\n"
            "\n"
            "live_zone,blocks,live_bytes\n"
            "backward,1,400\n"
            "forward,1,200\n"
            "(no zone),1,64\n");
  const auto text = test::run_command(std::string(RINGPROF_CLI) + " memory --top 1 " + test::shell_quote(path));
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_NE(text.out.find("Peak (B)"), std::string::npos) << text.out;
  EXPECT_EQ(text.out.find("backward,"), std::string::npos);
  const auto bad = test::run_command(std::string(RINGPROF_CLI) + " memory --format xml " + test::shell_quote(path));
  EXPECT_EQ(bad.exit_code, 1);
}

TEST(MemoryChromeTrace, CounterTrackPerPool) {
  const test::TempDir dir;
  const std::string path = memory_trace(dir);
  TraceReader reader({path});
  std::ostringstream out;
  write_chrome_trace(reader, ChromeTraceOptions{}, out);
  const auto j = nlohmann::json::parse(out.str());
  std::map<std::string, std::vector<std::pair<double, int64_t>>> tracks;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] != "C") continue;
    const std::string name = e["name"];
    if (name.rfind("memory: ", 0) != 0) continue;
    tracks[name].emplace_back(e["ts"].get<double>(), e["args"]["bytes"].get<int64_t>());
  }
  ASSERT_EQ(tracks.size(), 2u);
  std::vector<int64_t> heap, arena;
  for (const auto& [ts, v] : tracks["memory: heap"]) heap.push_back(v);
  for (const auto& [ts, v] : tracks["memory: arena"]) arena.push_back(v);
  EXPECT_EQ(heap, (std::vector<int64_t>{100, 1100, 1000, 1000, 1064, 1034, 1434, 434, 634}));
  EXPECT_EQ(arena, (std::vector<int64_t>{50, 0}));
}

TEST(MemoryInfo, KindCounts) {
  const test::TempDir dir;
  const std::string path = memory_trace(dir);
  TraceReader reader({path});
  const TraceInfo info = collect_info(reader);
  EXPECT_EQ(info.events_by_kind[static_cast<size_t>(EventKind::Alloc)], 6u);
  EXPECT_EQ(info.events_by_kind[static_cast<size_t>(EventKind::Free)], 5u);
  const std::string text = format_info(info);
  EXPECT_NE(text.find("alloc: 6"), std::string::npos) << text;
  EXPECT_NE(text.find("free: 5"), std::string::npos) << text;
}

}  // namespace
}  // namespace ringprof

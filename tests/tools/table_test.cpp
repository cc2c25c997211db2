// Operator table: a workload whose times are known by construction, checked
// to the nanosecond.
//
//   main (tid 100), three times, period 2000 us from the first event:
//     outer [0, 1000] us containing A [100, 400] and B [500, 600]
//   worker (tid 200): A [0, 50] us
//
// So: outer 3 calls, total 3000, self 3 x (1000 - 300 - 100) = 1800, min = max
//     = avg = 1000; A 4 calls, total 950, self 950, min 50, max 300, avg
//     237.5; B 3 calls, total 300, self 300, min = max = avg = 100.
//     Sum of self: 1800 + 950 + 300 = 3050 us.
#include <gtest/gtest.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <thread>

#include "support/trace_builder.h"
#include "ringprof/ringprof.h"
#include "ringprof/sinks.h"
#include "ringprof/tools/op_table.h"
#include "ringprof/tools/trace_reader.h"
#include "support/recording_config.h"
#include "support/test_support.h"

namespace ringprof {
namespace {

using test::TraceBuilder;
constexpr uint64_t T = 1'000'000'000ull;
constexpr uint64_t kUs = 1000;
using V = std::vector<std::string>;

V names(const TableResult& r) {
  V v;
  for (const TableRow& row : r.rows) v.push_back(row.name);
  return v;
}

class TableTest : public ::testing::Test {
 protected:
  void SetUp() override {
    TraceBuilder b;
    const uint32_t outer = b.location("outer", "o.cpp", 1);
    const uint32_t a = b.location("A");
    const uint32_t bb = b.location("B");
    const uint32_t main_th = b.thread(100, "main");
    const uint32_t worker = b.thread(200, "worker");
    for (uint64_t i = 0; i < 3; ++i) {
      const uint64_t at = T + i * 2000 * kUs;
      b.begin(main_th, at, outer);
      b.begin(main_th, at + 100 * kUs, a);
      b.end(main_th, at + 400 * kUs);
      b.begin(main_th, at + 500 * kUs, bb);
      b.end(main_th, at + 600 * kUs);
      b.end(main_th, at + 1000 * kUs);
      if (i == 0) {
        b.begin(worker, T, a);
        b.end(worker, T + 50 * kUs);
      }
      b.flush();
    }
    test::write_file(dir_.file("t.rpf"), b.bytes());
  }

  TableResult table(const TableOptions& o = {}) {
    TraceReader reader({dir_.file("t.rpf")});
    TableResult r = compute_table(reader, o);
    EXPECT_FALSE(reader.has_problems());
    return r;
  }

  test::TempDir dir_;
};

TEST_F(TableTest, ExactAggregates) {
  const TableResult r = table();
  ASSERT_EQ(names(r), V({"outer", "A", "B"}));  // default: total, descending
  const TableRow& outer = r.rows[0];
  EXPECT_EQ(outer.calls, 3u);
  EXPECT_EQ(outer.total_ns, 3000 * kUs);
  EXPECT_EQ(outer.self_ns, 1800 * kUs);
  EXPECT_EQ(outer.min_ns, 1000 * kUs);
  EXPECT_EQ(outer.max_ns, 1000 * kUs);
  EXPECT_EQ(outer.avg_ns(), 1000 * kUs);
  const TableRow& a = r.rows[1];
  EXPECT_EQ(a.calls, 4u);
  EXPECT_EQ(a.total_ns, 950 * kUs);
  EXPECT_EQ(a.self_ns, 950 * kUs);
  EXPECT_EQ(a.min_ns, 50 * kUs);
  EXPECT_EQ(a.max_ns, 300 * kUs);
  EXPECT_EQ(a.avg_ns(), 237'500u);
  const TableRow& b = r.rows[2];
  EXPECT_EQ(b.calls, 3u);
  EXPECT_EQ(b.total_ns, 300 * kUs);
  EXPECT_EQ(b.self_ns, 300 * kUs);
  EXPECT_EQ(b.min_ns, 100 * kUs);
  EXPECT_EQ(b.max_ns, 100 * kUs);
  EXPECT_EQ(r.sum_self_ns, 3050 * kUs);
  EXPECT_EQ(r.zones, 10u);
  EXPECT_EQ(r.unmatched_zone_ends, 0u);
  EXPECT_EQ(r.unterminated_zones, 0u);
}

TEST_F(TableTest, Percentages) {
  EXPECT_EQ(format_percent(1800, 3050), "59.02");  // 59.016..
  EXPECT_EQ(format_percent(950, 3050), "31.15");   // 31.147..
  EXPECT_EQ(format_percent(300, 3050), "9.84");    // 9.836..
  EXPECT_EQ(format_percent(3000, 3050), "98.36");  // 98.360..
  EXPECT_EQ(format_percent(1, 1), "100.00");
  EXPECT_EQ(format_percent(1, 0), "0.00");
  EXPECT_EQ(format_percent(1, 20000), "0.01");  // 0.005 rounds up
}

TEST_F(TableTest, SortColumns) {
  TableOptions o;
  o.sort = TableColumn::Calls;  // A 4; B and outer 3 each, tie by name
  EXPECT_EQ(names(table(o)), V({"A", "B", "outer"}));
  o.sort = TableColumn::Self;  // 1800, 950, 300
  EXPECT_EQ(names(table(o)), V({"outer", "A", "B"}));
  o.sort = TableColumn::Min;  // 1000, 100, 50
  EXPECT_EQ(names(table(o)), V({"outer", "B", "A"}));
  o.sort = TableColumn::Max;  // 1000, 300, 100
  EXPECT_EQ(names(table(o)), V({"outer", "A", "B"}));
  o.sort = TableColumn::Avg;  // 1000, 237.5, 100
  EXPECT_EQ(names(table(o)), V({"outer", "A", "B"}));
  o.sort = TableColumn::Name;
  EXPECT_EQ(names(table(o)), V({"A", "B", "outer"}));

  EXPECT_EQ(parse_table_column("self"), TableColumn::Self);
  EXPECT_EQ(parse_table_column("avg"), TableColumn::Avg);
  EXPECT_FALSE(parse_table_column("Self").has_value());
  EXPECT_FALSE(parse_table_column("").has_value());
}

TEST_F(TableTest, TopKeepsTheDenominator) {
  TableOptions o;
  o.top = 1;
  const TableResult r = table(o);
  EXPECT_EQ(names(r), V({"outer"}));
  EXPECT_EQ(r.sum_self_ns, 3050 * kUs);
}

TEST_F(TableTest, ThreadByNameOrTid) {
  TableOptions o;
  o.thread = "worker";
  TableResult r = table(o);
  ASSERT_EQ(names(r), V({"A"}));
  EXPECT_EQ(r.rows[0].calls, 1u);
  EXPECT_EQ(r.rows[0].total_ns, 50 * kUs);

  o.thread = "100";  // main's tid
  r = table(o);
  ASSERT_EQ(names(r), V({"outer", "A", "B"}));
  EXPECT_EQ(r.rows[1].calls, 3u);
  EXPECT_EQ(r.rows[1].total_ns, 900 * kUs);
  EXPECT_EQ(r.sum_self_ns, (1800 + 900 + 300) * kUs);

  o.thread = "nobody";
  EXPECT_TRUE(table(o).rows.empty());
}

TEST_F(TableTest, WindowCountsOverlappingZonesWhole) {
  TableOptions o;
  o.range.from_ns = 2100 * kUs;  // inside the second outer's A [2100, 2400]
  o.range.to_ns = 2200 * kUs;
  const TableResult r = table(o);
  ASSERT_EQ(names(r), V({"outer", "A"}));
  EXPECT_EQ(r.rows[0].calls, 1u);
  EXPECT_EQ(r.rows[0].total_ns, 1000 * kUs);
  EXPECT_EQ(r.rows[0].self_ns, 600 * kUs);  // both children subtract, in the range or not
  EXPECT_EQ(r.rows[1].calls, 1u);
  EXPECT_EQ(r.rows[1].total_ns, 300 * kUs);

  TableOptions last;
  last.range.last_ns = 350 * kUs;  // trace ends at 5000 us: 4650 .. 5000, only the third outer
  const TableResult l = table(last);
  ASSERT_EQ(names(l), V({"outer"}));
  EXPECT_EQ(l.rows[0].calls, 1u);
}

TEST_F(TableTest, CsvIsExact) {
  TableOptions o;
  o.sort = TableColumn::Name;
  EXPECT_EQ(format_table(table(o), TableFormat::Csv),
            "name,calls,total_us,total_pct,self_us,self_pct,avg_us,min_us,max_us\n"
            "A,4,950.000,31.15,950.000,31.15,237.500,50.000,300.000\n"
            "B,3,300.000,9.84,300.000,9.84,100.000,100.000,100.000\n"
            "outer,3,3000.000,98.36,1800.000,59.02,1000.000,1000.000,1000.000\n");
}

TEST_F(TableTest, TextIsAligned) {
  const std::string text = format_table(table(), TableFormat::Text);
  std::vector<std::string> lines;
  for (size_t at = 0, nl; (nl = text.find('\n', at)) != std::string::npos; at = nl + 1)
    lines.push_back(text.substr(at, nl - at));
  ASSERT_EQ(lines.size(), 7u);  // header, rule, 3 rows, rule, total
  EXPECT_EQ(lines[0].substr(0, 5), "Name ");
  EXPECT_EQ(lines[2].substr(0, 6), "outer ");
  // Right-aligned numbers: every row ends at the same column as the header.
  for (int i : {0, 2, 3, 4}) EXPECT_EQ(lines[static_cast<size_t>(i)].size(), lines[0].size()) << lines[static_cast<size_t>(i)];
  EXPECT_EQ(lines[1], std::string(lines[0].size(), '-'));
  EXPECT_NE(lines[2].find("3000.000"), std::string::npos);
  EXPECT_NE(lines[2].find("59.02"), std::string::npos);
  EXPECT_EQ(lines[6], "Self time total: 3050.000 us over 10 zones");
}

TEST(Table, SelfTimeOfNestedAndRecursiveZones) {
  // f [0, 100] > f [10, 60] > g [20, 30]: outer f self 50, inner f self 40, g 10.
  test::TempDir dir;
  TraceBuilder b;
  const uint32_t th = b.thread(1, "t");
  const uint32_t f = b.location("f");
  const uint32_t g = b.location("g");
  b.begin(th, T, f);
  b.begin(th, T + 10, f);
  b.begin(th, T + 20, g);
  b.end(th, T + 30);
  b.end(th, T + 60);
  b.end(th, T + 100);
  b.end(th, T + 101);  // no open zone: skipped and counted
  b.flush();
  test::write_file(dir.file("n.rpf"), b.bytes());
  TraceReader reader({dir.file("n.rpf")});
  const TableResult r = compute_table(reader, {});
  ASSERT_EQ(names(r), V({"f", "g"}));
  EXPECT_EQ(r.rows[0].calls, 2u);
  EXPECT_EQ(r.rows[0].total_ns, 150u);
  EXPECT_EQ(r.rows[0].self_ns, 90u);
  EXPECT_EQ(r.rows[1].self_ns, 10u);
  EXPECT_EQ(r.sum_self_ns, 100u);
  EXPECT_EQ(r.unmatched_zone_ends, 1u);
}

// FLOPs, exactly, from a hand-built trace (times known to the nanosecond):
//   step [0, 1000] us
//     aten::mm    [100, 200] us  flops=1000000
//     aten::mm    [300, 500] us  flops=2500000
//     aten::relu  [600, 650] us  (no arguments)
//     aten::addmm [700, 900] us  flops=300000
//       aten::copy_ [750, 800] us
// So aten::mm: 2 calls, 300 us, 3500000 FLOPs, 3500000 / 300000 ns = 11.667
// GFLOP/s; aten::addmm 300000 FLOPs over its total 200000 ns (not its self
// 150000) = 1.500; the others none (step's children's FLOPs are not its own).
// step self: 1000 - 100 - 200 - 50 - 200 = 450 us; sum of self 1000 us.
std::string flops_trace(const test::TempDir& dir) {
  TraceBuilder b;
  const uint32_t th = b.thread(100, "main");
  const uint32_t step = b.location("step"), mm = b.location("aten::mm"), relu = b.location("aten::relu");
  const uint32_t addmm = b.location("aten::addmm"), copy = b.location("aten::copy_");
  const uint32_t flops = b.location("flops");
  b.begin(th, T, step);
  b.begin(th, T + 100 * kUs, mm);
  b.arg(th, T + 100 * kUs, flops, b.location("1000000"));
  b.end(th, T + 200 * kUs);
  b.begin(th, T + 300 * kUs, mm);
  b.arg(th, T + 300 * kUs, flops, b.location("2500000"));
  b.end(th, T + 500 * kUs);
  b.begin(th, T + 600 * kUs, relu);
  b.end(th, T + 650 * kUs);
  b.begin(th, T + 700 * kUs, addmm);
  b.arg(th, T + 700 * kUs, flops, b.location("300000"));
  b.begin(th, T + 750 * kUs, copy);
  b.end(th, T + 800 * kUs);
  b.end(th, T + 900 * kUs);
  b.end(th, T + 1000 * kUs);
  b.flush();
  test::write_file(dir.file("flops.rpf"), b.bytes());
  return dir.file("flops.rpf");
}

// A row whose calls carry FLOPs only in part (operators recorded outside a
// window have none): the rate is over the calls that carry them.
TEST(TableFlops, RateIsOverTheCallsThatCarryFlops) {
  const test::TempDir dir;
  TraceBuilder b;
  const uint32_t th = b.thread(100, "main");
  const uint32_t mm = b.location("aten::mm"), flops = b.location("flops");
  b.begin(th, T, mm);  // 800 us without FLOPs
  b.end(th, T + 800 * kUs);
  for (uint64_t at : {900u, 1100u}) {  // two of 100 us with 1,000,000 each
    b.begin(th, T + at * kUs, mm);
    b.arg(th, T + at * kUs, flops, b.location("1000000"));
    b.end(th, T + (at + 100) * kUs);
  }
  b.flush();
  test::write_file(dir.file("part.rpf"), b.bytes());
  TraceReader reader({dir.file("part.rpf")});
  const TableResult r = compute_table(reader, TableOptions{});
  ASSERT_EQ(r.rows.size(), 1u);
  EXPECT_EQ(r.rows[0].calls, 3u);
  EXPECT_EQ(r.rows[0].flops, 2'000'000u);
  EXPECT_EQ(r.rows[0].flops_ns, 200 * kUs);
  // 2,000,000 FLOP in 200 us: 10 GFLOP/s (over all 1000 us it would read 2.000).
  const std::string csv = format_table(r, TableFormat::Csv);
  EXPECT_NE(csv.find(",2000000,10.000\n"), std::string::npos) << csv;
}

TEST(TableFlops, SummedPerRowWithRateColumnsAndSort) {
  const test::TempDir dir;
  const std::string path = flops_trace(dir);
  auto table = [&](TableColumn sort) {
    TraceReader reader({path});
    TableOptions o;
    o.sort = sort;
    TableResult r = compute_table(reader, o);
    EXPECT_FALSE(reader.has_problems());
    return r;
  };
  const TableResult r = table(TableColumn::Name);
  EXPECT_TRUE(r.has_flops);
  ASSERT_EQ(names(r), V({"aten::addmm", "aten::copy_", "aten::mm", "aten::relu", "step"}));
  EXPECT_EQ(r.rows[0].flops, 300'000u);
  EXPECT_EQ(r.rows[1].flops, 0u);
  EXPECT_EQ(r.rows[2].calls, 2u);
  EXPECT_EQ(r.rows[2].flops, 3'500'000u);
  EXPECT_EQ(r.rows[3].flops, 0u);
  EXPECT_EQ(r.rows[4].flops, 0u);  // a parent does not take its children's FLOPs
  EXPECT_EQ(format_table(r, TableFormat::Csv),
            "name,calls,total_us,total_pct,self_us,self_pct,avg_us,min_us,max_us,flops,gflops_per_s\n"
            "aten::addmm,1,200.000,20.00,150.000,15.00,200.000,200.000,200.000,300000,1.500\n"
            "aten::copy_,1,50.000,5.00,50.000,5.00,50.000,50.000,50.000,,\n"
            "aten::mm,2,300.000,30.00,300.000,30.00,150.000,100.000,200.000,3500000,11.667\n"
            "aten::relu,1,50.000,5.00,50.000,5.00,50.000,50.000,50.000,,\n"
            "step,1,1000.000,100.00,450.000,45.00,1000.000,1000.000,1000.000,,\n");

  const std::string text = format_table(r, TableFormat::Text);
  const std::string header = text.substr(0, text.find('\n'));
  EXPECT_NE(header.find("  FLOPs"), std::string::npos) << text;
  EXPECT_NE(header.find("  GFLOP/s"), std::string::npos) << text;
  EXPECT_LT(header.find("  Max"), header.find("  FLOPs")) << text;
  EXPECT_LT(header.find("  FLOPs"), header.find("  GFLOP/s")) << text;
  const size_t mm_line = text.find("\naten::mm ");
  ASSERT_NE(mm_line, std::string::npos) << text;
  const std::string mm = text.substr(mm_line + 1, text.find('\n', mm_line + 1) - mm_line - 1);
  EXPECT_NE(mm.find(" 3500000 "), std::string::npos) << mm;
  EXPECT_EQ(mm.substr(mm.size() - 7), " 11.667") << mm;  // the last column, right-aligned

  // --sort flops: descending, ties (no FLOPs) by name; neither the total's
  // order (step, mm, addmm, copy_, relu) nor the name's.
  EXPECT_EQ(parse_table_column("flops"), TableColumn::Flops);
  EXPECT_FALSE(parse_table_column("FLOPs").has_value());
  EXPECT_EQ(names(table(TableColumn::Flops)), V({"aten::mm", "aten::addmm", "aten::copy_", "aten::relu", "step"}));
  EXPECT_EQ(names(table(TableColumn::Total)), V({"step", "aten::mm", "aten::addmm", "aten::copy_", "aten::relu"}));
}

// Tables of files recorded in this process by the library itself, at the
// detailed level so that memory events are recorded (ringprof/memory.h).

template <class Body>
void record(const test::TempDir& dir, Body&& body) {
  const Config c = test::quiet_file_config(dir.path());
  ASSERT_TRUE(start(c, make_rolling_file_sink(c)));
  set_mode(Level::Detailed);
  ASSERT_TRUE(detailed());
  body();
  stop();
  EXPECT_EQ(recorder_stats().dropped_ring, 0u);
}

TableResult recorded_table(const test::TempDir& dir, const TableOptions& o = {}) {
  TraceReader reader({dir.path()});
  TableResult r = compute_table(reader, o);
  EXPECT_FALSE(reader.has_problems());
  return r;
}

// The row of `name` (and, grouped by arguments, of `args`); fails the test when none.
const TableRow& row_of(const TableResult& r, const std::string& name, const std::string& args = "") {
  for (const TableRow& row : r.rows)
    if (row.name == name && row.args == args) return row;
  ADD_FAILURE() << "no row " << name << " [" << args << "]";
  static const TableRow kNone;
  return kNone;
}

const void* address(uintptr_t a) { return reinterpret_cast<const void*>(a); }

// zone_arg("flops", int64) as ringprof.torch's with_flops records it: summed
// per row, whether given before or after the operator's other arguments.
TEST(TableFlops, RecordedFlopsArgumentsAreSummedPerRow) {
  const test::TempDir dir;
  record(dir, [] {
    ASSERT_TRUE(zone_begin_static("step"));
    ASSERT_TRUE(zone_begin_static("aten::mm"));
    zone_arg("flops", int64_t{100});
    zone_end();
    ASSERT_TRUE(zone_begin_static("aten::mm"));
    zone_arg("flops", int64_t{300});
    zone_end();
    ASSERT_TRUE(zone_begin_static("aten::addmm"));
    zone_arg("Input Dims", "[[4], [4, 4], [4, 4]]");
    zone_arg("flops", int64_t{128});
    zone_end();
    ASSERT_TRUE(zone_begin_static("aten::relu"));
    zone_end();
    zone_end();
  });
  TableOptions o;
  o.sort = TableColumn::Flops;
  const TableResult r = recorded_table(dir, o);
  EXPECT_TRUE(r.has_flops);
  EXPECT_FALSE(r.has_args);
  ASSERT_EQ(names(r), V({"aten::mm", "aten::addmm", "aten::relu", "step"}));
  EXPECT_EQ(r.rows[0].calls, 2u);
  EXPECT_EQ(r.rows[0].flops, 400u);
  EXPECT_EQ(r.rows[1].flops, 128u);
  EXPECT_EQ(r.rows[2].flops, 0u);
  EXPECT_EQ(r.rows[3].flops, 0u);
  EXPECT_EQ(r.zones, 5u);
  const std::string csv = format_table(r, TableFormat::Csv);
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "name,calls,total_us,total_pct,self_us,self_pct,avg_us,min_us,max_us,flops,gflops_per_s");
  EXPECT_NE(csv.find(",400,"), std::string::npos) << csv;
  EXPECT_NE(format_table(r, TableFormat::Text).find("GFLOP/s"), std::string::npos);
}

// Grouped by arguments, "flops" is a measure and not a part of the key: two
// calls with the same shapes and different FLOPs are one row, whose
// arguments are the shapes only; a call whose only argument is "flops" joins
// the row of the calls without arguments.
TEST(TableFlops, NotAPartOfTheRowKeyWhenGroupedByArguments) {
  const test::TempDir dir;
  record(dir, [] {
    ASSERT_TRUE(zone_begin_static("aten::mm"));
    zone_arg("flops", int64_t{100});  // before the shapes
    zone_arg("Input Dims", "[[2, 3], [3, 4]]");
    zone_end();
    ASSERT_TRUE(zone_begin_static("aten::mm"));
    zone_arg("Input Dims", "[[2, 3], [3, 4]]");
    zone_arg("flops", int64_t{300});  // after them
    zone_end();
    ASSERT_TRUE(zone_begin_static("aten::mm"));
    zone_arg("Input Dims", "[[4, 4], [4, 4]]");
    zone_arg("flops", int64_t{128});
    zone_end();
    ASSERT_TRUE(zone_begin_static("aten::mm"));
    zone_arg("flops", int64_t{7});
    zone_end();
    ASSERT_TRUE(zone_begin_static("aten::mm"));
    zone_end();
  });
  TableOptions o;
  o.group_by_args = true;
  o.sort = TableColumn::Flops;
  const TableResult r = recorded_table(dir, o);
  EXPECT_TRUE(r.has_args);
  EXPECT_TRUE(r.has_flops);
  ASSERT_EQ(r.rows.size(), 3u);
  using Args = std::vector<std::pair<std::string, std::string>>;
  EXPECT_EQ(r.rows[0].name, "aten::mm");
  EXPECT_EQ(r.rows[0].args, "Input Dims=[[2, 3], [3, 4]]");
  EXPECT_EQ(r.rows[0].arg_list, (Args{{"Input Dims", "[[2, 3], [3, 4]]"}}));
  EXPECT_EQ(r.rows[0].calls, 2u);
  EXPECT_EQ(r.rows[0].flops, 400u);
  EXPECT_EQ(r.rows[1].args, "Input Dims=[[4, 4], [4, 4]]");
  EXPECT_EQ(r.rows[1].arg_list, (Args{{"Input Dims", "[[4, 4], [4, 4]]"}}));
  EXPECT_EQ(r.rows[1].calls, 1u);
  EXPECT_EQ(r.rows[1].flops, 128u);
  EXPECT_EQ(r.rows[2].args, "");
  EXPECT_TRUE(r.rows[2].arg_list.empty());
  EXPECT_EQ(r.rows[2].calls, 2u);
  EXPECT_EQ(r.rows[2].flops, 7u);
  const std::string csv = format_table(r, TableFormat::Csv);
  EXPECT_EQ(csv.find("flops="), std::string::npos) << csv;
  EXPECT_NE(csv.find("aten::mm,\"Input Dims=[[2, 3], [3, 4]]\",2,"), std::string::npos) << csv;
}

// Without a "flops" argument (other arguments, a key that only starts with
// "flops") there are no FLOPs columns.
TEST(TableFlops, NoFlopsColumnsWithoutTheArgument) {
  const test::TempDir dir;
  record(dir, [] {
    ASSERT_TRUE(zone_begin_static("aten::relu"));
    zone_arg("Input Dims", "[[8]]");
    zone_arg("flops_estimate", int64_t{5});
    zone_end();
  });
  for (const bool by_args : {false, true}) {
    SCOPED_TRACE(by_args);
    TableOptions o;
    o.group_by_args = by_args;
    const TableResult r = recorded_table(dir, o);
    EXPECT_FALSE(r.has_flops);
    ASSERT_EQ(names(r), V({"aten::relu"}));
    EXPECT_EQ(r.rows[0].flops, 0u);
    const std::string text = format_table(r, TableFormat::Text);
    EXPECT_EQ(text.find("FLOP"), std::string::npos) << text;
    const std::string csv = format_table(r, TableFormat::Csv);
    EXPECT_EQ(csv.substr(0, csv.find('\n')).find("flops"), std::string::npos) << csv;
    EXPECT_EQ(csv.find("gflops_per_s"), std::string::npos) << csv;
  }
}

TEST(TableDeviceMemory, DevicePoolNames) {
  EXPECT_TRUE(is_device_pool_name("torch:cuda:0"));
  EXPECT_TRUE(is_device_pool_name("torch:cuda:1"));
  EXPECT_TRUE(is_device_pool_name("torch:xpu:0"));
  EXPECT_FALSE(is_device_pool_name("torch:cpu"));
  EXPECT_FALSE(is_device_pool_name("heap"));
  EXPECT_FALSE(is_device_pool_name("cuda:0"));
  EXPECT_FALSE(is_device_pool_name(""));
}

// Memory in device pools ("torch:cuda:N") is counted in the device columns
// and in the ordinary ones; host pools ("torch:cpu", "heap") only in the
// ordinary ones. On one thread:
//   step {                                  step self:    cuda0 +1000 -4000, cpu +10    = -2990
//     alloc torch:cuda:0 0x1000 1000                       device -3000
//     alloc torch:cpu    0x2000 10
//     forward {                             forward self: cuda0 +4000 -1000, cpu +200, heap +7 = 3207
//       alloc torch:cuda:0 0x3000 4000                     device 3000
//       alloc torch:cpu    0x4000 200
//       free  torch:cuda:0 0x1000 (size 0: 1000 from its alloc)
//       alloc heap         0x5000 7
//       aten::empty {                       empty self:   cuda1 +64, cpu -10            = 54
//         alloc torch:cuda:1 0x6000 64                     device 64
//         free  torch:cpu    0x2000 10
//       }
//     }                                     forward total: 3207 + 54 = 3261, device 3000 + 64 = 3064
//     free torch:cuda:0 0x3000 4000
//   }                                       step total: -2990 + 3261 = 271, device -3000 + 3064 = 64
TEST(TableDeviceMemory, DevicePoolsAlsoCountInTheDeviceColumns) {
  static const uint16_t cuda0 = memory_pool("torch:cuda:0");
  static const uint16_t cuda1 = memory_pool("torch:cuda:1");
  static const uint16_t cpu = memory_pool("torch:cpu");
  const test::TempDir dir;
  record(dir, [] {
    ASSERT_TRUE(zone_begin_static("step"));
    memory_alloc(address(0x1000), 1000, cuda0);
    memory_alloc(address(0x2000), 10, cpu);
    ASSERT_TRUE(zone_begin_static("forward"));
    memory_alloc(address(0x3000), 4000, cuda0);
    memory_alloc(address(0x4000), 200, cpu);
    memory_free(address(0x1000), 0, cuda0);
    memory_alloc(address(0x5000), 7);  // heap
    ASSERT_TRUE(zone_begin_static("aten::empty"));
    memory_alloc(address(0x6000), 64, cuda1);
    memory_free(address(0x2000), 10, cpu);
    zone_end();
    zone_end();
    memory_free(address(0x3000), 4000, cuda0);
    zone_end();
  });
  const TableResult r = recorded_table(dir);
  ASSERT_TRUE(r.has_memory);
  ASSERT_EQ(r.rows.size(), 3u);
  const TableRow& step = row_of(r, "step");
  EXPECT_EQ(step.self_mem, -2990);
  EXPECT_EQ(step.mem, 271);
  EXPECT_EQ(step.self_device_mem, -3000);
  EXPECT_EQ(step.device_mem, 64);
  const TableRow& forward = row_of(r, "forward");
  EXPECT_EQ(forward.self_mem, 3207);
  EXPECT_EQ(forward.mem, 3261);
  EXPECT_EQ(forward.self_device_mem, 3000);
  EXPECT_EQ(forward.device_mem, 3064);
  const TableRow& empty = row_of(r, "aten::empty");
  EXPECT_EQ(empty.self_mem, 54);
  EXPECT_EQ(empty.mem, 54);
  EXPECT_EQ(empty.self_device_mem, 64);
  EXPECT_EQ(empty.device_mem, 64);
  EXPECT_EQ(r.mem_allocated, 1000u + 10 + 4000 + 200 + 7 + 64);
  EXPECT_EQ(r.mem_freed, 1000u + 10 + 4000);
  EXPECT_EQ(r.mem_outside_zones, 0);
  EXPECT_EQ(r.mem_outside_events, 0u);
  EXPECT_EQ(r.unmatched_frees, 0u);
}

// Memory events with no zone open on their thread are counted, whether no
// zone is open anywhere or one is open on another thread only:
//   main:   alloc torch:cpu 0x7000 100; free torch:cpu 0x7000 100
//           step { alloc torch:cuda:0 0x8000 50 (in step);
//                  worker: alloc torch:cpu 0x9000 32 (no zone on its thread) }
//           alloc heap 0xA000 5
// Outside: 4 events, 100 - 100 + 32 + 5 = 37 bytes; main alone: 3 events, 5 bytes.
TEST(TableMemoryOutsideZones, CountsTheEventsWithNoZoneOpenOnTheirThread) {
  static const uint16_t cuda0 = memory_pool("torch:cuda:0");
  static const uint16_t cpu = memory_pool("torch:cpu");
  const test::TempDir dir;
  const long main_tid = syscall(SYS_gettid);
  record(dir, [] {
    memory_alloc(address(0x7000), 100, cpu);
    memory_free(address(0x7000), 100, cpu);
    ASSERT_TRUE(zone_begin_static("step"));
    memory_alloc(address(0x8000), 50, cuda0);
    std::thread([] { memory_alloc(address(0x9000), 32, cpu); }).join();
    zone_end();
    memory_alloc(address(0xA000), 5);
  });
  const TableResult r = recorded_table(dir);
  ASSERT_TRUE(r.has_memory);
  EXPECT_EQ(r.mem_outside_events, 4u);
  EXPECT_EQ(r.mem_outside_zones, 37);
  ASSERT_EQ(names(r), V({"step"}));
  EXPECT_EQ(r.rows[0].self_mem, 50);
  EXPECT_EQ(r.rows[0].self_device_mem, 50);
  EXPECT_EQ(r.mem_allocated, 100u + 50 + 32 + 5);
  EXPECT_EQ(r.mem_freed, 100u);

  TableOptions main_only;
  main_only.thread = std::to_string(main_tid);
  const TableResult m = recorded_table(dir, main_only);
  EXPECT_EQ(m.mem_outside_events, 3u);
  EXPECT_EQ(m.mem_outside_zones, 5);
}

TEST(TimeRange, Durations) {
  EXPECT_EQ(parse_duration_ns("500ms"), 500'000'000u);
  EXPECT_EQ(parse_duration_ns("2.5s"), 2'500'000'000u);
  EXPECT_EQ(parse_duration_ns("1m"), 60'000'000'000u);
  EXPECT_EQ(parse_duration_ns("1h"), 3'600'000'000'000u);
  EXPECT_EQ(parse_duration_ns("30"), 30'000'000'000u);  // bare number: seconds
  EXPECT_EQ(parse_duration_ns("0.25"), 250'000'000u);
  EXPECT_EQ(parse_duration_ns("1.5us"), 1'500u);
  EXPECT_EQ(parse_duration_ns("10ns"), 10u);
  EXPECT_EQ(parse_duration_ns(".5s"), 500'000'000u);
  EXPECT_EQ(parse_duration_ns("0.123456789s"), 123'456'789u);
  for (const char* bad : {"", "ms", "-1s", "1.s", "1..5s", "1.5ns", "0.0000000001s", "5parsecs", "1 s", "1e3",
                          "99999999999999999999s", "18446744073709551616ns"})
    EXPECT_FALSE(parse_duration_ns(bad).has_value()) << bad;
}

TEST(TimeRange, ResolveAgainstTheTrace) {
  RangeSpec s;
  s.from_ns = 10;
  s.to_ns = 20;
  TimeRange w = resolve_range(s, 1000, 5000);
  EXPECT_EQ(w.begin_ns, 1010u);
  EXPECT_EQ(w.end_ns, 1020u);
  RangeSpec last;
  last.last_ns = 300;
  w = resolve_range(last, 1000, 5000);
  EXPECT_EQ(w.begin_ns, 4700u);
  EXPECT_EQ(w.end_ns, UINT64_MAX);
  last.last_ns = 1'000'000;  // longer than the trace: everything
  EXPECT_EQ(resolve_range(last, 1000, 5000).begin_ns, 0u);
  EXPECT_TRUE(w.overlaps(4000, 4700));
  EXPECT_FALSE(w.overlaps(4000, 4699));
}

TEST(TimeRange, MicrosecondsWithThreeDecimals) {
  EXPECT_EQ(format_us(0), "0.000");
  EXPECT_EQ(format_us(7), "0.007");
  EXPECT_EQ(format_us(1'234'567), "1234.567");
  EXPECT_EQ(format_us(1'000'002'100), "1000002.100");
  EXPECT_EQ(format_us(UINT64_MAX), "18446744073709551.615");
}

}  // namespace
}  // namespace ringprof

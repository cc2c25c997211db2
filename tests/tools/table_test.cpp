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

#include "support/trace_builder.h"
#include "ringprof/tools/op_table.h"
#include "ringprof/tools/trace_reader.h"
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

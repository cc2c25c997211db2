// Zone arguments (ZoneArg events) in the tools: which zone an argument
// belongs to, the Chrome trace's args, `ringprof table --group-by-args` (CPU
// and GPU columns split by the same key), extraction keeping them, and the
// codec stating a value's text again in each file.
//
// The workload, on one thread (times in µs from T):
//   op [0, 100]   Input Dims=[[8, 16]]  (first given as [[1]], then replaced)
//     child [10, 30]                    (no arguments; an argument given while
//                                        it is open belongs to it, not to op)
//   op [200, 260] Input Dims=[[4, 4]]
//   op [300, 340] Input Dims=[[8, 16]]
//   op [400, 410]                       (no arguments)
// So by arguments: op [[8, 16]] 2 calls, total 140 µs, self 120 µs;
// op [[4, 4]] 1 call, 60 µs; op without arguments 1 call, 10 µs;
// child 1 call, 20 µs, with arguments tag=x.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "ringprof/segment_codec.h"
#include "ringprof/tools/chrome_trace.h"
#include "ringprof/tools/extract.h"
#include "ringprof/tools/op_table.h"
#include "ringprof/tools/trace_reader.h"
#include "ringprof/tools/zone_tracker.h"
#include "support/test_support.h"
#include "support/trace_builder.h"

namespace ringprof {
namespace {

using test::TraceBuilder;
constexpr uint64_t T = 1'000'000'000ull;
constexpr uint64_t kUs = 1000;

struct Names {
  uint32_t op, child, dims, tag, big, small, one, x;
};

Names write_workload(TraceBuilder& b, uint32_t th) {
  Names n;
  n.op = b.location("op");
  n.child = b.location("child");
  n.dims = b.location("Input Dims");
  n.tag = b.location("tag");
  n.big = b.location("[[8, 16]]");
  n.small = b.location("[[4, 4]]");
  n.one = b.location("[[1]]");
  n.x = b.location("x");
  b.begin(th, T, n.op);
  b.arg(th, T, n.dims, n.one);
  b.begin(th, T + 10 * kUs, n.child);
  b.arg(th, T + 12 * kUs, n.tag, n.x);
  b.end(th, T + 30 * kUs);
  b.arg(th, T + 40 * kUs, n.dims, n.big);  // after the child closed: op's again
  b.end(th, T + 100 * kUs);
  b.begin(th, T + 200 * kUs, n.op);
  b.arg(th, T + 200 * kUs, n.dims, n.small);
  b.end(th, T + 260 * kUs);
  b.flush();
  b.begin(th, T + 300 * kUs, n.op);
  b.arg(th, T + 300 * kUs, n.dims, n.big);
  b.end(th, T + 340 * kUs);
  b.begin(th, T + 400 * kUs, n.op);
  b.end(th, T + 410 * kUs);
  b.flush();
  return n;
}

// "name args calls" per row, in the table's order.
std::vector<std::string> row_texts(const TableResult& table) {
  std::vector<std::string> rows;
  for (const TableRow& row : table.rows) rows.push_back(row.name + " " + row.args + " " + std::to_string(row.calls));
  return rows;
}

// One zone "op" with one argument k=value, in a file of its own.
void write_one_zone_with_arg(const std::string& path, const std::string& value) {
  TraceBuilder b(4242, T);
  const uint32_t th = b.thread(100, "main");
  const uint32_t op = b.location("op"), key = b.location("k"), text = b.location(value);
  b.begin(th, T, op);
  b.arg(th, T, key, text);
  b.end(th, T + kUs);
  b.flush();
  test::write_file(path, b.bytes());
}

class ZoneArgsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    TraceBuilder b(4242, T);
    names_ = write_workload(b, b.thread(100, "main"));
    path_ = dir_.file("a.rpf");
    test::write_file(path_, b.bytes());
  }
  test::TempDir dir_;
  std::string path_;
  Names names_{};
};

TEST_F(ZoneArgsTest, TrackerGivesEachArgumentToTheInnermostOpenZone) {
  std::vector<std::pair<std::string, std::string>> seen;  // zone name, its arguments' text
  TraceReader reader({path_});
  const ProcessState* process = nullptr;
  ZoneTracker tracker([&](const ClosedZone& z) {
    seen.emplace_back(process->location_name(z.loc), zone_args_text(*process, z.args));
  });
  reader.read([&](const SegmentView& v) {
    process = &v.process;
    for (const DecodedEvent& e : v.segment.events) tracker.add(e);
  });
  tracker.finish();
  EXPECT_FALSE(reader.has_problems());
  EXPECT_EQ(seen, (std::vector<std::pair<std::string, std::string>>{{"child", "tag=x"},
                                                                    {"op", "Input Dims=[[8, 16]]"},
                                                                    {"op", "Input Dims=[[4, 4]]"},
                                                                    {"op", "Input Dims=[[8, 16]]"},
                                                                    {"op", ""}}));
  EXPECT_EQ(tracker.dropped_args(), 0u);
}

TEST(ZoneArgs, AZoneKeepsAtMostKMaxArgsAndCountsTheRest) {
  std::vector<ClosedZone> closed;
  ZoneTracker tracker([&](const ClosedZone& z) { closed.push_back(z); });
  DecodedEvent e;
  e.kind = EventKind::ZoneBegin;
  e.loc = 1;
  tracker.add(e);
  const uint32_t extra = 5;
  for (uint32_t k = 0; k < ZoneTracker::kMaxArgs + extra; ++k) {
    DecodedEvent a;
    a.kind = EventKind::ZoneArg;
    a.loc = 100 + k;  // distinct keys
    a.value = 7;
    tracker.add(a);
  }
  e.kind = EventKind::ZoneEnd;
  tracker.add(e);
  ASSERT_EQ(closed.size(), 1u);
  EXPECT_EQ(closed[0].args.size(), ZoneTracker::kMaxArgs);
  EXPECT_EQ(tracker.dropped_args(), extra);
}

TEST_F(ZoneArgsTest, TableGroupsByArgumentsOnlyWhenAsked) {
  {
    TraceReader reader({path_});
    const TableResult plain = compute_table(reader, {});
    EXPECT_FALSE(plain.has_args);
    ASSERT_EQ(plain.rows.size(), 2u);
    EXPECT_EQ(plain.rows[0].name, "op");
    EXPECT_EQ(plain.rows[0].calls, 4u);
    EXPECT_EQ(plain.rows[0].args, "");
  }
  TraceReader reader({path_});
  TableOptions o;
  o.group_by_args = true;
  o.sort = TableColumn::Total;
  const TableResult r = compute_table(reader, o);
  EXPECT_TRUE(r.has_args);
  ASSERT_EQ(r.rows.size(), 4u);
  EXPECT_EQ(r.rows[0].name, "op");
  EXPECT_EQ(r.rows[0].args, "Input Dims=[[8, 16]]");
  EXPECT_EQ(r.rows[0].calls, 2u);
  EXPECT_EQ(r.rows[0].total_ns, 140 * kUs);
  EXPECT_EQ(r.rows[0].self_ns, 120 * kUs);
  EXPECT_EQ(r.rows[1].args, "Input Dims=[[4, 4]]");
  EXPECT_EQ(r.rows[1].total_ns, 60 * kUs);
  EXPECT_EQ(r.rows[2].name, "child");
  EXPECT_EQ(r.rows[2].args, "tag=x");
  EXPECT_EQ(r.rows[3].name, "op");
  EXPECT_EQ(r.rows[3].args, "");
  EXPECT_EQ(r.rows[3].total_ns, 10 * kUs);
  EXPECT_EQ(r.zones, 5u);
  const std::string text = format_table(r, TableFormat::Text);
  const std::string header = text.substr(0, text.find('\n'));
  EXPECT_EQ(header.rfind("Name ", 0), 0u) << header;
  EXPECT_LT(header.find("  Args "), header.find("  Calls")) << header;
  const std::string csv = format_table(r, TableFormat::Csv);
  EXPECT_EQ(csv.substr(0, csv.find('\n')).substr(0, 10), "name,args,");
  // A CSV field holding commas is quoted.
  EXPECT_NE(csv.find("op,\"Input Dims=[[8, 16]]\",2,"), std::string::npos) << csv;
}

TEST_F(ZoneArgsTest, ChromeTraceCarriesTheArgumentsOfEachZone) {
  TraceReader reader({path_});
  std::ostringstream out;
  write_chrome_trace(reader, {}, out);
  const nlohmann::json j = nlohmann::json::parse(out.str());
  std::vector<std::string> dims;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] != "X") continue;
    if (e["name"] == "child") {
      EXPECT_EQ(e["args"]["tag"], "x");
      EXPECT_FALSE(e["args"].contains("Input Dims"));
    }
    if (e["name"] != "op") continue;
    dims.push_back(e.contains("args") && e["args"].contains("Input Dims") ? e["args"]["Input Dims"].get<std::string>()
                                                                          : "-");
  }
  EXPECT_EQ(dims, (std::vector<std::string>{"[[8, 16]]", "[[4, 4]]", "[[8, 16]]", "-"}));
}

// GPU work launched inside a zone goes to the row of its arguments: with two
// shapes of one operator, each row gets its own kernel's time.
TEST(ZoneArgs, GpuColumnsFollowTheArgumentRows) {
  test::TempDir dir;
  TraceBuilder b(4242, T);
  const uint32_t th = b.thread(100, "main");
  const uint32_t op = b.location("aten::mm"), dims = b.location("Input Dims");
  const uint32_t big = b.location("[[64, 64]]"), small = b.location("[[2, 2]]");
  const uint32_t launch = b.gpu_name("cudaLaunchKernel"), kernel = b.gpu_name("gemm");
  auto call = [&](uint64_t at_us, uint32_t shape, uint32_t corr, uint64_t kernel_us) {
    b.begin(th, T + at_us * kUs, op);
    b.arg(th, T + at_us * kUs, dims, shape);
    GpuActivity api;
    api.kind = GpuKind::RuntimeApi;
    api.name = launch;
    api.start_ns = T + (at_us + 1) * kUs;
    api.end_ns = T + (at_us + 2) * kUs;
    api.tid = 100;
    api.correlation = corr;
    b.gpu(api);
    GpuActivity k;
    k.kind = GpuKind::Kernel;
    k.name = kernel;
    k.start_ns = T + (at_us + 5) * kUs;
    k.end_ns = T + (at_us + 5 + kernel_us) * kUs;
    k.correlation = corr;
    b.gpu(k);
    b.end(th, T + (at_us + 3) * kUs);
  };
  call(0, big, 1, 50);
  call(100, small, 2, 4);
  call(200, big, 3, 50);
  b.flush();
  test::write_file(dir.file("g.rpf"), b.bytes());
  TraceReader reader({dir.file("g.rpf")});
  TableOptions o;
  o.group_by_args = true;
  const TableResult r = compute_table(reader, o);
  ASSERT_TRUE(r.has_gpu);
  std::map<std::string, std::pair<uint64_t, uint64_t>> gpu;  // args -> (self GPU, calls)
  for (const TableRow& row : r.rows) gpu[row.args] = {row.gpu_self_ns, row.calls};
  EXPECT_EQ(gpu, (std::map<std::string, std::pair<uint64_t, uint64_t>>{
                     {"Input Dims=[[64, 64]]", {100 * kUs, 2}}, {"Input Dims=[[2, 2]]", {4 * kUs, 1}}}));
  EXPECT_EQ(r.gpu_outside_zones_ns, 0u);
}

TEST_F(ZoneArgsTest, ExtractKeepsTheArguments) {
  ExtractOptions o;
  o.output_dir = dir_.file("x");
  const ExtractResult r = extract_range({path_}, o);
  ASSERT_TRUE(r.ok) << r.error;
  TraceReader reader({o.output_dir});
  TableOptions t;
  t.group_by_args = true;
  const TableResult table = compute_table(reader, t);
  EXPECT_FALSE(reader.has_problems());
  std::vector<std::string> rows = row_texts(table);
  EXPECT_EQ(rows, (std::vector<std::string>{"op Input Dims=[[8, 16]] 2", "op Input Dims=[[4, 4]] 1", "child tag=x 1",
                                            "op  1"}));
}

// A window that begins inside a zone: extraction clips the zone's begin to
// the window and gives it again the arguments it had before the window.
TEST_F(ZoneArgsTest, ExtractRestatesTheArgumentsOfAZoneCrossingTheWindowStart) {
  ExtractOptions o;
  o.output_dir = dir_.file("x");
  o.range.from_ns = 50 * kUs;  // from the trace's start (T): inside the first op, after its argument
  o.range.to_ns = 250 * kUs;
  const ExtractResult r = extract_range({path_}, o);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.clipped_zones, 2u);  // op's begin at the window start, the second op's end at its end
  TraceReader reader({o.output_dir});
  TableOptions t;
  t.group_by_args = true;
  const TableResult table = compute_table(reader, t);
  std::vector<std::string> rows = row_texts(table);
  std::sort(rows.begin(), rows.end());
  EXPECT_EQ(rows, (std::vector<std::string>{"op Input Dims=[[4, 4]] 1", "op Input Dims=[[8, 16]] 1"}));
}

// An empty value is an empty string, not a location placeholder.
TEST(ZoneArgs, AnEmptyValueStaysEmpty) {
  test::TempDir dir;
  write_one_zone_with_arg(dir.file("e.rpf"), "");
  TraceReader reader({dir.file("e.rpf")});
  std::ostringstream out;
  write_chrome_trace(reader, {}, out);
  const nlohmann::json j = nlohmann::json::parse(out.str());
  size_t seen = 0;
  for (const auto& e : j["traceEvents"]) {
    if (e["ph"] != "X") continue;
    EXPECT_EQ(e["args"]["k"], "");
    ++seen;
  }
  EXPECT_EQ(seen, 1u);
}

// Each file states the locations its events refer to, the value's text
// included: a second file whose first argument reuses a value of the first
// file resolves it alone.
TEST(ZoneArgs, EachFileStatesTheValueTextItRefersTo) {
  test::TempDir dir;
  TraceBuilder b(4242, T);
  const uint32_t th = b.thread(100, "main");
  const uint32_t op = b.location("op"), key = b.location("k"), value = b.location("the value");
  b.begin(th, T, op);
  b.arg(th, T, key, value);
  b.end(th, T + kUs);
  b.flush();
  test::write_file(dir.file("1.rpf"), b.new_file());
  b.begin(th, T + 2 * kUs, op);
  b.arg(th, T + 2 * kUs, key, value);
  b.end(th, T + 3 * kUs);
  b.flush();
  test::write_file(dir.file("2.rpf"), b.bytes());
  TraceReader reader({dir.file("2.rpf")});
  std::vector<std::string> args;
  reader.read([&](const SegmentView& v) {
    for (const DecodedEvent& e : v.segment.events)
      if (e.kind == EventKind::ZoneArg)
        args.push_back(v.process.location_name(e.loc) + "=" + v.process.location_name(static_cast<uint32_t>(e.value)));
  });
  EXPECT_FALSE(reader.has_problems());
  EXPECT_EQ(args, std::vector<std::string>{"k=the value"});
}

TEST_F(ZoneArgsTest, CliTableGroupByArgs) {
  const auto r = test::run_command(std::string(RINGPROF_CLI) + " table --group-by-args --format csv " +
                                   test::shell_quote(path_));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out.substr(0, r.out.find('\n')).substr(0, 10), "name,args,");
  EXPECT_NE(r.out.find("op,\"Input Dims=[[8, 16]]\",2,"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace ringprof

// `ringprof report`: the page is self-contained (no network), its embedded
// data carries exactly the figures `ringprof table` and `ringprof gpu`
// compute, a name that would close the script element cannot, and a job
// gets its ranks section.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <sstream>

#include "ringprof/tools/gpu_summary.h"
#include "ringprof/tools/html_report.h"
#include "ringprof/tools/op_table.h"
#include "support/job_builder.h"
#include "support/test_support.h"

namespace ringprof {
namespace {

using testing::SimRank;
constexpr uint64_t kUs = 1000;

std::string write_recording(test::TempDir& dir) {
  SimRank r({"node", 1'000'000'000ull, 0}, 100, -1, -1, "");
  for (uint64_t s = 0; s < 10; ++s) {
    const uint64_t t = 10'000 * kUs + s * 1000 * kUs;
    r.step(t, s);
    r.zone("forward", t, t + 300 * kUs);
    r.zone("</script><b>evil", t + 300 * kUs, t + 310 * kUs);
    r.gpu(GpuKind::Kernel, "gemm_kernel", t + 50 * kUs, t + 250 * kUs);
    r.gpu(GpuKind::Memcpy, "", t + 260 * kUs, t + 280 * kUs);
  }
  return r.write(dir.path(), "rec");
}

nlohmann::json page_data(const std::string& html) {
  const std::string open = "<script id=\"ringprof-data\" type=\"application/json\">";
  const size_t a = html.find(open);
  EXPECT_NE(a, std::string::npos);
  const size_t b = html.find("</script>", a);
  return nlohmann::json::parse(html.substr(a + open.size(), b - a - open.size()));
}

TEST(Report, SelfContainedPageWhoseDataEqualsTheTables) {
  test::TempDir dir;
  const std::string path = write_recording(dir);
  TraceReader reader({path});
  std::ostringstream out;
  write_html_report(reader, {}, out);
  const std::string html = out.str();
  EXPECT_EQ(html.rfind("<!doctype html>", 0), 0u);
  // Nothing fetched: no src, no link, no fetch, no URL but SVG's namespace.
  for (const char* never : {" src=", "<link", "url(", "fetch(", "XMLHttpRequest", "import(", "https://"})
    EXPECT_EQ(html.find(never), std::string::npos) << never;
  size_t urls = 0, svg_ns = 0;
  for (size_t at = 0; (at = html.find("http://", at)) != std::string::npos; ++at) ++urls;
  for (size_t at = 0; (at = html.find("http://www.w3.org/2000/svg", at)) != std::string::npos; ++at) ++svg_ns;
  EXPECT_EQ(urls, svg_ns);
  // The hostile name did not end the data early: exactly the page's two
  // scripts are closed.
  size_t closes = 0;
  for (size_t at = 0; (at = html.find("</script>", at)) != std::string::npos; ++at) ++closes;
  EXPECT_EQ(closes, 2u);

  const nlohmann::json d = page_data(html);
  TraceReader again({path});
  const TableResult table = compute_table(again, {});
  ASSERT_EQ(d["operators"]["rows"].size(), table.rows.size());
  for (size_t i = 0; i < table.rows.size(); ++i) {
    const nlohmann::json& row = d["operators"]["rows"][i];
    EXPECT_EQ(row["name"], table.rows[i].name);
    EXPECT_EQ(row["calls"], table.rows[i].calls);
    EXPECT_EQ(row["total_ns"], table.rows[i].total_ns);
    EXPECT_EQ(row["self_ns"], table.rows[i].self_ns);
    EXPECT_EQ(row["gpu_total_ns"], table.rows[i].gpu_total_ns);
  }
  EXPECT_EQ(d["operators"]["rows"][0]["name"], "forward");
  EXPECT_EQ(d["operators"]["rows"][0]["total_ns"], 10 * 300 * kUs);
  EXPECT_EQ(d["operators"]["has_gpu"], table.has_gpu);

  const GpuSummary gpu = compute_gpu_summary(again, {});
  ASSERT_EQ(d["gpu"]["kernels"].size(), gpu.kernels.size());
  EXPECT_EQ(d["gpu"]["kernels"][0]["name"], "gemm_kernel");
  EXPECT_EQ(d["gpu"]["kernels"][0]["calls"], 10);
  EXPECT_EQ(d["gpu"]["kernels"][0]["total_ns"], 10 * 200 * kUs);
  EXPECT_EQ(d["gpu"]["copies"][0]["total_ns"], 10 * 20 * kUs);
  EXPECT_EQ(d["overview"]["events"], 10 * 5 + 0);  // a step mark and two zones (two events each) per step
  EXPECT_TRUE(d["ranks"].is_null());  // one process: no ranks section
  // The step chart's data: steps 0-8 whole (step 9 has no end), 1 ms each,
  // kernels 200 µs, the copy 20 µs, idle the rest.
  ASSERT_EQ(d["steps"].size(), 1u);
  const nlohmann::json& steps = d["steps"][0]["steps"];
  ASSERT_EQ(steps.size(), 9u);
  for (size_t s = 0; s < 9; ++s) {
    EXPECT_EQ(steps[s]["step"], s);
    EXPECT_EQ(steps[s]["time_ns"], 1000 * kUs);
    EXPECT_EQ(steps[s]["compute_ns"], 200 * kUs);
    EXPECT_EQ(steps[s]["memcpy_ns"], 20 * kUs);
    EXPECT_EQ(steps[s]["idle_ns"], 780 * kUs);
    EXPECT_EQ(steps[s]["cpu_zone_ns"], 310 * kUs);
  }
}

TEST(Report, AJobHasItsRanks) {
  test::TempDir dir;
  for (int k = 0; k < 2; ++k) {
    SimRank r({"node", 1'000'000'000ull, 0}, 100 + k, k, 2, "job5");
    for (uint64_t s = 0; s <= 4; ++s) r.step(10'000 * kUs + s * 1000 * kUs, s);
    r.write(dir.path(), "rank" + std::to_string(k));
  }
  TraceReader reader({dir.path()});
  std::ostringstream out;
  write_html_report(reader, {}, out);
  const nlohmann::json d = page_data(out.str());
  ASSERT_TRUE(d["ranks"].is_object());
  EXPECT_EQ(d["ranks"]["job_id"], "job5");
  ASSERT_EQ(d["ranks"]["ranks"].size(), 2u);
  EXPECT_EQ(d["ranks"]["ranks"][1]["steps"], 4);
}

TEST(ReportCli, WritesThePage) {
  test::TempDir dir;
  const std::string path = write_recording(dir);
  const std::string page = dir.file("report.html");
  const test::CommandResult r = test::run_command(std::string(RINGPROF_CLI) + " report " + test::shell_quote(path) +
                                                  " -o " + test::shell_quote(page));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(page_data(test::read_text(page))["operators"]["rows"].size(), 2u);
  // -o is required.
  EXPECT_EQ(test::run_command(std::string(RINGPROF_CLI) + " report " + test::shell_quote(path)).exit_code, 1);
}

}  // namespace
}  // namespace ringprof

// `ringprof report`: the page is self-contained (no network), its embedded
// data carries exactly the figures `ringprof table`, `ringprof gpu`,
// `ringprof memory` and `ringprof table --samples` compute, the charts over
// time and the flame graph's tree are exact on hand-placed events, a name
// that would close the script element cannot, and a job gets its ranks
// section.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "ringprof/tools/gpu_summary.h"
#include "ringprof/tools/html_report.h"
#include "ringprof/ops.h"
#include "ringprof/tools/mark_text.h"
#include "ringprof/tools/memory_summary.h"
#include "ringprof/tools/op_table.h"
#include "ringprof/tools/sample_table.h"
#include "support/job_builder.h"
#include "support/test_support.h"
#include "support/trace_builder.h"

namespace ringprof {
namespace {

using test::SimRank;
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
  // Nothing fetched: no src, no link, no fetch, no URL but SVG's namespace
  // and the Perfetto UI, which only a click on its button opens.
  for (const char* never : {" src=", "<link", "url(", "fetch(", "XMLHttpRequest", "import(", "@import"})
    EXPECT_EQ(html.find(never), std::string::npos) << never;
  auto count = [&](const std::string& what) {
    size_t n = 0;
    for (size_t at = 0; (at = html.find(what, at)) != std::string::npos; ++at) ++n;
    return n;
  };
  EXPECT_EQ(count("http://"), count("http://www.w3.org/2000/svg"));
  EXPECT_EQ(count("https://"), count("https://ui.perfetto.dev"));
  EXPECT_EQ(count("https://ui.perfetto.dev"), 1u);
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
  // kernels 200 µs, the copy 20 µs, idle the rest, 90 µs of it in zones.
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
    // Zones cover [0,310) of the step; the kernel and the copy 220 µs of it.
    EXPECT_EQ(steps[s]["in_zones_ns"], 310 * kUs);
    EXPECT_EQ(steps[s]["idle_in_zones_ns"], 90 * kUs);
  }
}

// Hand-placed memory, samples, GPU records and zones over a range of exactly
// 400 us, so each of the 400 buckets of the charts over time is 1 us wide.
constexpr uint64_t T = 5'000'000'000ull;

std::string write_detailed(test::TempDir& dir) {
  test::TraceBuilder b(777, T - 1'000'000);
  const uint32_t main_t = b.thread(100, "main"), small = b.thread(101, "small");
  const uint32_t run = b.location("run"), tick = b.location("tick"), blip = b.location("blip"), heap = b.location("heap");
  b.begin(main_t, T, run);  // the range's first event
  b.alloc(main_t, T + 10'000, heap, 0xa000, 1000);
  b.alloc(main_t, T + 20'500, heap, 0xb000, 500);
  b.free(main_t, T + 30'000, heap, 0xa000);
  b.free(main_t, T + 50'000, heap, 0xb000);
  b.alloc(main_t, T + 60'000, heap, 0xc000, 64);  // still live at the end
  // Stacks, leaf first: 0x10 under 0x20 (3 samples), 0x30 under 0x20 (1), 0x20 alone (2).
  const uint32_t s1 = b.stack({0x10, 0x20}), s2 = b.stack({0x30, 0x20}), s3 = b.stack({0x20});
  b.sampler("perf_event", 1000);
  for (int i = 0; i < 3; ++i) b.sample(main_t, T + 70'000 + i * 1000, s1);
  b.sample(main_t, T + 80'000, s2);
  for (int i = 0; i < 2; ++i) b.sample(main_t, T + 90'000 + i * 1000, s3);
  b.begin(small, T + 1000, tick);
  b.end(small, T + 2000);
  b.begin(small, T + 3000, blip);
  b.end(small, T + 3010);  // 10 ns: under a 20000th of the range, not drawn
  b.end(main_t, T + 399'999);  // the range's last event
  // Two kernels on two streams overlapping (their union is 3.5 us) and a copy of 250 ns.
  const uint32_t k = b.gpu_name("kern");
  GpuActivity a;
  a.kind = GpuKind::Kernel;
  a.name = k;
  a.start_ns = T + 100'000, a.end_ns = T + 102'000, a.stream = 1;
  b.gpu(a);
  a.start_ns = T + 101'000, a.end_ns = T + 103'500, a.stream = 2;
  b.gpu(a);
  GpuActivity c;
  c.kind = GpuKind::Memcpy;
  c.sub_kind = static_cast<uint8_t>(GpuCopyKind::HtoD);
  c.bytes = 4096;
  c.start_ns = T + 200'000, c.end_ns = T + 200'250;
  b.gpu(c);
  b.flush();
  const std::string path = dir.file("detailed.rpf");
  test::write_file(path, b.bytes());
  return path;
}

TEST(Report, MemorySamplesGpuOverTimeAndTimelineAreExact) {
  test::TempDir dir;
  const std::string path = write_detailed(dir);
  TraceReader reader({path});
  std::ostringstream out;
  write_html_report(reader, {}, out);
  const nlohmann::json d = page_data(out.str());

  // Memory: the same rows as `ringprof memory`, and the live bytes per bucket.
  TraceReader again({path});
  MemoryOptions mo;
  const MemorySummary mem = compute_memory_summary(again, mo);
  const nlohmann::json& m = d["memory"];
  ASSERT_TRUE(m.is_object());
  ASSERT_EQ(m["pools"].size(), mem.pools.size());
  EXPECT_EQ(m["pools"][0]["pool"], "heap");
  EXPECT_EQ(m["pools"][0]["peak_bytes"], 1500);
  EXPECT_EQ(m["pools"][0]["allocated_bytes"], mem.pools[0].bytes_allocated);
  EXPECT_EQ(m["pools"][0]["net_bytes"], 64);
  ASSERT_EQ(m["live"].size(), 1u);
  EXPECT_EQ(m["live"][0]["zone"], "run");
  EXPECT_EQ(m["live"][0]["bytes"], 64);
  EXPECT_EQ(m["timeline"]["begin_ns"], T);
  EXPECT_EQ(m["timeline"]["bucket_ns"], 1000);
  ASSERT_EQ(m["timeline"]["lines"].size(), 1u);
  const nlohmann::json& high = m["timeline"]["lines"][0]["high"];
  ASSERT_EQ(high.size(), 400u);
  for (size_t i = 0; i < 400; ++i) {
    // 1000 B from 10 us, 1500 from 20.5 us, the free at 30 us leaves 500 (the
    // bucket keeps its high of 1500), 0 from 50 us, 64 from 60 us.
    const int64_t want = i < 10 ? 0 : i < 20 ? 1000 : i <= 30 ? 1500 : i < 50 ? 500 : i == 50 ? 500 : i < 60 ? 0 : 64;
    EXPECT_EQ(high[i], want) << "bucket " << i;
  }

  // Samples: the top functions are `ringprof table --samples`'s rows; the
  // tree is all(6) -> 0x20(6, self 2) -> {0x10(3), 0x30(1)}, heaviest first.
  StackResolver resolver;
  TraceReader third({path});
  const SampleTable st = compute_sample_table(third, collect_samples(third, {}), resolver);
  const nlohmann::json& sm = d["samples"];
  ASSERT_TRUE(sm.is_object());
  EXPECT_EQ(sm["samples"], 6);
  ASSERT_EQ(sm["top"].size(), st.rows.size());
  for (size_t i = 0; i < st.rows.size(); ++i) {
    EXPECT_EQ(sm["top"][i]["function"], st.rows[i].function);
    EXPECT_EQ(sm["top"][i]["self"], st.rows[i].self);
    EXPECT_EQ(sm["top"][i]["total"], st.rows[i].total);
  }
  const nlohmann::json& names = sm["flame"]["names"];
  std::vector<std::string> tree;
  for (const nlohmann::json& n : sm["flame"]["nodes"])
    tree.push_back(names[n[0].get<size_t>()].get<std::string>() + " parent " + std::to_string(n[1].get<int>()) +
                   " total " + std::to_string(n[2].get<int>()) + " self " + std::to_string(n[3].get<int>()));
  EXPECT_EQ(tree, (std::vector<std::string>{"all parent 0 total 6 self 0", "0x20 parent 0 total 6 self 2",
                                            "0x10 parent 1 total 3 self 3", "0x30 parent 1 total 1 self 1"}));

  // The copy's bandwidth: 4096 bytes in 250 ns.
  ASSERT_EQ(d["gpu"]["copies"].size(), 1u);
  EXPECT_DOUBLE_EQ(d["gpu"]["copies"][0]["gb_per_s"].get<double>(), 4096.0 / 250.0);
  // GPU utilisation: buckets 100-102 busy whole, 103 half, 200 a quarter.
  const nlohmann::json& u = d["gpu"]["utilization_over_time"];
  ASSERT_EQ(u["devices"].size(), 1u);
  EXPECT_EQ(u["devices"][0]["busy_ns"], 3500 + 250);
  const nlohmann::json& busy = u["devices"][0]["busy"];
  ASSERT_EQ(busy.size(), 400u);
  for (size_t i = 0; i < 400; ++i) {
    const double want = (i >= 100 && i <= 102) ? 1.0 : i == 103 ? 0.5 : i == 200 ? 0.25 : 0.0;
    EXPECT_DOUBLE_EQ(busy[i].get<double>(), want) << "bucket " << i;
  }

  // Timeline: main (busy the whole range), then small, then the GPU's two
  // busy spans; the 10 ns zone is left out.
  const nlohmann::json& tl = d["timeline"];
  ASSERT_EQ(tl["lanes"].size(), 3u);
  EXPECT_EQ(tl["lanes"][0]["label"], "main (100)");
  EXPECT_EQ(tl["lanes"][0]["busy_ns"], 399'999);
  EXPECT_EQ(tl["lanes"][1]["label"], "small (101)");
  EXPECT_EQ(tl["lanes"][1]["busy_ns"], 1010);
  EXPECT_EQ(tl["lanes"][1]["too_short"], 1);  // its 10 ns stretch is too short to draw as covered, too
  EXPECT_EQ(tl["lanes"][1]["over_budget"], 0);
  ASSERT_EQ(tl["lanes"][1]["spans"].size(), 1u);
  const nlohmann::json& span = tl["lanes"][1]["spans"][0];  // [begin, end] from the range's start, name, depth
  EXPECT_EQ(span[0], 1000);
  EXPECT_EQ(span[1], 2000);
  EXPECT_EQ(tl["names"][span[2].get<size_t>()], "tick");
  EXPECT_EQ(span[3], 0);
  EXPECT_EQ(tl["lanes"][2]["gpu"], true);
  EXPECT_EQ(tl["lanes"][2]["spans"], (nlohmann::json{{100'000, 103'500, 0, 0}, {200'000, 200'250, 0, 0}}));
  EXPECT_EQ(tl["perfetto_file"], "");  // written only by the CLI
}

// A thread busy with many short zones still shows, as the stretch they
// cover; only the 8 busiest GPUs get a lane.
TEST(Report, TimelineCoversShortZonesAndKeepsTheBusiestGpus) {
  test::TempDir dir;
  test::TraceBuilder b(778, T - 1'000'000);
  const uint32_t main_t = b.thread(100, "main"), server = b.thread(102, "server");
  const uint32_t run = b.location("run"), req = b.location("request");
  b.begin(main_t, T, run);
  // 2000 requests of 10 ns, 5 ns apart: each under the visible 20 ns
  // (400 us / 20000), and so are the gaps between them.
  for (uint64_t k = 0; k < 2000; ++k) {
    b.begin(server, T + 1000 + 15 * k, req);
    b.end(server, T + 1000 + 15 * k + 10);
  }
  b.end(main_t, T + 399'999);
  // Nine GPUs, device d busy (d + 1) us.
  const uint32_t kern = b.gpu_name("kern");
  for (uint32_t d = 0; d < 9; ++d) {
    GpuActivity a;
    a.kind = GpuKind::Kernel;
    a.name = kern;
    a.device = d;
    a.start_ns = T + 10'000;
    a.end_ns = a.start_ns + (d + 1) * 1000;
    b.gpu(a);
  }
  b.flush();
  const std::string path = dir.file("short.rpf");
  test::write_file(path, b.bytes());
  TraceReader reader({path});
  std::ostringstream out;
  write_html_report(reader, {}, out);
  const nlohmann::json tl = page_data(out.str())["timeline"];
  ASSERT_EQ(tl["lanes"].size(), 2u + 8u);
  EXPECT_EQ(tl["lanes"][1]["label"], "server (102)");
  EXPECT_EQ(tl["lanes"][1]["busy_ns"], 2000 * 10);
  EXPECT_EQ(tl["lanes"][1]["too_short"], 2000);
  ASSERT_EQ(tl["lanes"][1]["spans"].size(), 1u);
  const nlohmann::json& span = tl["lanes"][1]["spans"][0];
  EXPECT_EQ(span[0], 1000);
  EXPECT_EQ(span[1], 1000 + 15 * 1999 + 10);
  EXPECT_EQ(tl["names"][span[2].get<size_t>()], "(short zones)");
  for (size_t i = 0; i < 8; ++i) {  // GPUs 8 down to 1; GPU 0, the least busy, has no lane
    EXPECT_EQ(tl["lanes"][2 + i]["label"], "GPU " + std::to_string(8 - i));
    EXPECT_EQ(tl["lanes"][2 + i]["busy_ns"], (9 - i) * 1000);
  }
}

// The overview's levels and windows: the level change and the trigger as
// `ringprof info` words them, the window paired by id, times from the first event.
TEST(Report, OverviewListsLevelsAndWindows) {
  test::TempDir dir;
  test::TraceBuilder b(779, T - 1'000'000);
  const uint32_t app = b.thread(100, "app");
  const uint32_t run = b.location("run"), mode = b.location(kMarkMode), trig = b.location(kMarkTrigger),
                 begin = b.location(kMarkWindowBegin), end = b.location(kMarkWindowEnd);
  b.begin(app, T, run);
  b.mark(app, T + 1000, trig, 3);
  b.mark(app, T + 1000, begin, 3);
  b.mark(app, T + 1000, mode, static_cast<uint64_t>(Level::Detailed));
  b.mark(app, T + 5000, end, 3);
  b.mark(app, T + 5000, mode, static_cast<uint64_t>(Level::AlwaysOn));
  b.end(app, T + 9000);
  b.flush();
  const std::string path = dir.file("ops.rpf");
  test::write_file(path, b.bytes());
  TraceReader reader({path});
  std::ostringstream out;
  write_html_report(reader, {}, out);
  const nlohmann::json o = page_data(out.str())["overview"];
  ASSERT_EQ(o["marks"].size(), 3u);
  EXPECT_EQ(o["marks"][0]["text"], describe_mark(kMarkTrigger, 3));
  EXPECT_EQ(o["marks"][1]["text"], "level: detailed");
  EXPECT_EQ(o["marks"][1]["at_ns"], 1000);
  EXPECT_EQ(o["marks"][2]["text"], "level: always_on");
  EXPECT_EQ(o["marks"][2]["at_ns"], 5000);
  ASSERT_EQ(o["windows"].size(), 1u);
  EXPECT_EQ(o["windows"][0]["id"], 3);
  EXPECT_EQ(o["windows"][0]["begin_ns"], 1000);
  EXPECT_EQ(o["windows"][0]["end_ns"], 5000);
  EXPECT_EQ(o["windows"][0]["triggered"], true);
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
  const nlohmann::json d = page_data(test::read_text(page));
  EXPECT_EQ(d["operators"]["rows"].size(), 2u);
  // The full trace beside the page, which the timeline links to by its name.
  EXPECT_EQ(d["timeline"]["perfetto_file"], "report.perfetto-trace");
  EXPECT_GT(test::read_text(dir.file("report.perfetto-trace")).size(), 0u);
  // --no-trace: no file, no link.
  const std::string bare = dir.file("bare.html");
  ASSERT_EQ(test::run_command(std::string(RINGPROF_CLI) + " report --no-trace " + test::shell_quote(path) + " -o " +
                              test::shell_quote(bare))
                .exit_code,
            0);
  EXPECT_EQ(page_data(test::read_text(bare))["timeline"]["perfetto_file"], "");
  EXPECT_FALSE(std::filesystem::exists(dir.file("bare.perfetto-trace")));
  // A page named like its trace would overwrite it: refused.
  EXPECT_EQ(test::run_command(std::string(RINGPROF_CLI) + " report " + test::shell_quote(path) + " -o " +
                              test::shell_quote(dir.file("x.perfetto-trace")))
                .exit_code,
            1);
  // -o is required.
  EXPECT_EQ(test::run_command(std::string(RINGPROF_CLI) + " report " + test::shell_quote(path)).exit_code, 1);
}

// `ringprof findings`: the recording of write_recording() has 9 whole steps of
// 1 ms whose GPU is idle 780 us each (78%, past the critical 60% of gpu_idle);
// write_detailed()'s has no steps, 6 samples (under the 50 a sample rule
// needs), 2 kernels and no drops: nothing to find.
TEST(ReportCli, FindingsPrintsTheRulesFindingsAndGatesOnSeverity) {
  test::TempDir dir;
  const std::string idle = write_recording(dir);
  const std::string quiet = write_detailed(dir);
  const std::string cli = std::string(RINGPROF_CLI) + " findings ";
  const test::CommandResult text = test::run_command(cli + test::shell_quote(idle));
  ASSERT_EQ(text.exit_code, 0) << text.err;
  EXPECT_EQ(text.out.rfind("CRITICAL gpu_idle: ", 0), 0u) << text.out;
  EXPECT_NE(text.out.find("\n  what to do: "), std::string::npos);
  const test::CommandResult json = test::run_command(cli + "--format json " + test::shell_quote(idle));
  ASSERT_EQ(json.exit_code, 0) << json.err;
  const nlohmann::json found = nlohmann::json::parse(json.out);
  ASSERT_GE(found.size(), 1u);
  EXPECT_EQ(found[0]["rule"], "gpu_idle");
  EXPECT_EQ(found[0]["severity"], "critical");
  EXPECT_EQ(found[0]["figures"]["idle_pct_median"], "78.0");
  // The page embeds the same document.
  TraceReader reader({idle});
  std::ostringstream page;
  write_html_report(reader, {}, page);
  EXPECT_EQ(page_data(page.str())["findings"], found);
  // --fail-on: exit 3 at or above the level, 0 below it or with nothing found.
  EXPECT_EQ(test::run_command(cli + "--fail-on critical " + test::shell_quote(idle)).exit_code, 3);
  const test::CommandResult none = test::run_command(cli + "--fail-on info " + test::shell_quote(quiet));
  EXPECT_EQ(none.exit_code, 0) << none.out;
  EXPECT_EQ(none.out, "No known problem found (the rules: docs/report.md#findings).\n");
  EXPECT_EQ(test::run_command(cli + "--fail-on severe " + test::shell_quote(idle)).exit_code, 1);  // usage
}

}  // namespace
}  // namespace ringprof

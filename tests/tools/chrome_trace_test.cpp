// Chrome trace writer: hand-built files in, JSON parsed back, every field of
// every event checked against what the inputs say it must be.
#include <gtest/gtest.h>
#include <zlib.h>

#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "support/exporter_workload.h"
#include "support/trace_builder.h"
#include "ringprof/tools/chrome_trace.h"
#include "ringprof/tools/trace_reader.h"
#include "support/test_support.h"

namespace ringprof {
namespace {

using nlohmann::json;
using test::TraceBuilder;

constexpr uint64_t T = 1'000'000'000ull;  // 1 s on CLOCK_MONOTONIC: ts 1000000.000 us

std::string convert(const std::vector<std::string>& paths, const ChromeTraceOptions& options = {},
                    ChromeTraceStats* stats = nullptr) {
  TraceReader reader(paths);
  std::ostringstream out;
  ChromeTraceStats s = write_chrome_trace(reader, options, out);
  if (stats) *stats = s;
  return out.str();
}

// Events of one phase, in output order.
std::vector<json> with_ph(const json& doc, const std::string& ph) {
  std::vector<json> v;
  for (const json& e : doc.at("traceEvents"))
    if (e.at("ph") == ph) v.push_back(e);
  return v;
}

// The shared workload (support/exporter_workload.h says what it holds).
void write_workload(const std::string& path) { test::write_exporter_workload(path); }

TEST(ChromeTrace, EveryEventFieldByField) {
  test::TempDir dir;
  write_workload(dir.file("a.rpf"));
  ChromeTraceStats stats;
  const std::string text = convert({dir.file("a.rpf")}, {}, &stats);
  const json doc = json::parse(text);

  // Metadata: one process name (argv[0]'s base name), one name per thread.
  const auto meta = with_ph(doc, "M");
  ASSERT_EQ(meta.size(), 3u);
  EXPECT_EQ(meta[0].at("name"), "process_name");
  EXPECT_EQ(meta[0].at("pid"), 4242);
  EXPECT_EQ(meta[0].at("args").at("name"), "trainer");
  EXPECT_EQ(meta[1].at("name"), "thread_name");
  EXPECT_EQ(meta[1].at("pid"), 4242);
  EXPECT_EQ(meta[1].at("tid"), 5001);
  EXPECT_EQ(meta[1].at("args").at("name"), "main");
  EXPECT_EQ(meta[2].at("tid"), 5002);
  EXPECT_EQ(meta[2].at("args").at("name"), "loader");

  // Zones, in the order they close: backward, forward, then the unterminated
  // forward (closed at main's last event, 9000).
  const auto zones = with_ph(doc, "X");
  ASSERT_EQ(zones.size(), 3u);
  EXPECT_EQ(zones[0].at("name"), "backward");
  EXPECT_EQ(zones[0].at("pid"), 4242);
  EXPECT_EQ(zones[0].at("tid"), 5001);
  EXPECT_DOUBLE_EQ(zones[0].at("ts").get<double>(), 1000002.000);
  EXPECT_DOUBLE_EQ(zones[0].at("dur").get<double>(), 0.500);
  EXPECT_FALSE(zones[0].contains("args"));  // no file known, not unterminated
  EXPECT_EQ(zones[1].at("name"), "forward");
  EXPECT_DOUBLE_EQ(zones[1].at("ts").get<double>(), 1000001.000);
  EXPECT_DOUBLE_EQ(zones[1].at("dur").get<double>(), 3.000);
  EXPECT_EQ(zones[1].at("args"), json({{"file", "model.cpp"}, {"line", 42}}));
  EXPECT_EQ(zones[2].at("name"), "forward");
  EXPECT_DOUBLE_EQ(zones[2].at("ts").get<double>(), 1000008.000);
  EXPECT_DOUBLE_EQ(zones[2].at("dur").get<double>(), 1.000);
  EXPECT_EQ(zones[2].at("args"), json({{"file", "model.cpp"}, {"line", 42}, {"unterminated", true}}));
  EXPECT_EQ(stats.unterminated_zones, 1u);
  EXPECT_EQ(stats.unmatched_zone_ends, 0u);
  EXPECT_EQ(stats.zones_written, 3u);

  const auto counters = with_ph(doc, "C");
  ASSERT_EQ(counters.size(), 2u);
  EXPECT_EQ(counters[0].at("name"), "loss");
  EXPECT_EQ(counters[0].at("tid"), 5001);
  EXPECT_DOUBLE_EQ(counters[0].at("ts").get<double>(), 1000003.000);
  EXPECT_EQ(counters[0].at("args"), json({{"value", 0.5}}));
  EXPECT_EQ(counters[1].at("args"), json({{"value", -1.25}}));

  // Instants: the checkpoint (thread scope) and step 3 (process scope).
  const auto instants = with_ph(doc, "i");
  ASSERT_EQ(instants.size(), 2u);
  EXPECT_EQ(instants[0].at("name"), "checkpoint");
  EXPECT_EQ(instants[0].at("s"), "t");
  EXPECT_EQ(instants[0].at("tid"), 5002);
  EXPECT_DOUBLE_EQ(instants[0].at("ts").get<double>(), 1000005.500);
  EXPECT_EQ(instants[1].at("name"), "step 3");
  EXPECT_EQ(instants[1].at("s"), "p");
  EXPECT_EQ(instants[1].at("pid"), 4242);
  EXPECT_DOUBLE_EQ(instants[1].at("ts").get<double>(), 1000007.000);

  // Flow 7: s on main inside backward, t and f on loader, same id and name,
  // each bound to its enclosing slice.
  const char* phases[] = {"s", "t", "f"};
  const int tids[] = {5001, 5002, 5002};
  const double ts[] = {1000002.100, 1000005.000, 1000006.000};
  for (int i = 0; i < 3; ++i) {
    const auto flow = with_ph(doc, phases[i]);
    ASSERT_EQ(flow.size(), 1u) << phases[i];
    EXPECT_EQ(flow[0].at("id"), 7) << phases[i];
    EXPECT_EQ(flow[0].at("name"), "batch") << phases[i];
    EXPECT_EQ(flow[0].at("cat"), "flow") << phases[i];
    EXPECT_EQ(flow[0].at("bp"), "e") << phases[i];
    EXPECT_EQ(flow[0].at("pid"), 4242) << phases[i];
    EXPECT_EQ(flow[0].at("tid"), tids[i]) << phases[i];
    EXPECT_DOUBLE_EQ(flow[0].at("ts").get<double>(), ts[i]) << phases[i];
  }
  EXPECT_EQ(doc.at("traceEvents").size(), 3u + 3u + 2u + 2u + 3u);
  EXPECT_EQ(stats.events_written, doc.at("traceEvents").size());

  // Times are printed from integer ns: exactly three decimals, never 1e6 or
  // 1000002.1.
  EXPECT_NE(text.find("\"ts\":1000002.100"), std::string::npos);
  EXPECT_NE(text.find("\"dur\":0.500"), std::string::npos);
  const std::regex number_field("\"(ts|dur)\":([^,}]*)");
  for (auto it = std::sregex_iterator(text.begin(), text.end(), number_field); it != std::sregex_iterator(); ++it)
    EXPECT_TRUE(std::regex_match((*it)[2].str(), std::regex("[0-9]+\\.[0-9]{3}"))) << (*it)[0];
}

// Zones at 0..1000, 2000..3000, 4000..5000 us after the first event, an
// instant in the middle of each; windows are relative to those times.
void write_window_workload(const std::string& path) {
  TraceBuilder b;
  const uint32_t th = b.thread(11, "w");
  const uint32_t z[3] = {b.location("z0"), b.location("z1"), b.location("z2")};
  const uint32_t mark = b.location("mark");
  for (int i = 0; i < 3; ++i) {
    const uint64_t at = T + static_cast<uint64_t>(i) * 2'000'000;
    b.begin(th, at, z[i]);
    b.instant(th, at + 500'000, mark);
    b.end(th, at + 1'000'000);
    b.flush();
  }
  test::write_file(path, b.bytes());
}

std::vector<std::string> names_of(const json& doc, const std::string& ph) {
  std::vector<std::string> names;
  for (const json& e : with_ph(doc, ph)) names.push_back(e.at("name").get<std::string>() + "@" + e.at("ts").dump());
  return names;
}

TEST(ChromeTrace, WindowKeepsOverlappingZonesWhole) {
  test::TempDir dir;
  write_window_workload(dir.file("w.rpf"));
  using V = std::vector<std::string>;

  ChromeTraceOptions o;
  o.range.from_ns = 1'500'000;  // 1.5 ms .. 2.6 ms: z1 (whole), its mark at 2.5 ms
  o.range.to_ns = 2'600'000;
  json doc = json::parse(convert({dir.file("w.rpf")}, o));
  EXPECT_EQ(names_of(doc, "X"), V({"z1@1002000.0"}));
  EXPECT_DOUBLE_EQ(with_ph(doc, "X")[0].at("dur").get<double>(), 1000.0);
  EXPECT_EQ(names_of(doc, "i"), V({"mark@1002500.0"}));

  o.range.from_ns = 2'500'000;  // 2.5 .. 4.2 ms: z1 and z2 overlap; only the 2.5 ms mark is inside
  o.range.to_ns = 4'200'000;
  doc = json::parse(convert({dir.file("w.rpf")}, o));
  EXPECT_EQ(names_of(doc, "X"), V({"z1@1002000.0", "z2@1004000.0"}));
  EXPECT_EQ(names_of(doc, "i"), V({"mark@1002500.0"}));

  ChromeTraceOptions last;
  last.range.last_ns = 1'000'000;  // the trace ends at 5 ms: 4 .. 5 ms
  doc = json::parse(convert({dir.file("w.rpf")}, last));
  EXPECT_EQ(names_of(doc, "X"), V({"z2@1004000.0"}));
  EXPECT_EQ(names_of(doc, "i"), V({"mark@1004500.0"}));
  // Metadata is kept whatever the window.
  EXPECT_EQ(with_ph(doc, "M").size(), 2u);
}

TEST(ChromeTrace, GzipOutputReadsBackWithZlib) {
  test::TempDir dir;
  write_workload(dir.file("a.rpf"));
  TraceReader reader({dir.file("a.rpf")});
  ChromeTraceStats stats;
  std::string error;
  ASSERT_TRUE(write_chrome_trace_file(reader, {}, dir.file("trace.json.gz"), &stats, &error)) << error;

  const std::vector<uint8_t> raw = test::read_file(dir.file("trace.json.gz"));
  ASSERT_GE(raw.size(), 2u);
  EXPECT_EQ(raw[0], 0x1f);  // gzip magic
  EXPECT_EQ(raw[1], 0x8b);
  gzFile gz = gzopen(dir.file("trace.json.gz").c_str(), "rb");
  ASSERT_NE(gz, nullptr);
  std::string text;
  char buf[4096];
  int n;
  while ((n = gzread(gz, buf, sizeof buf)) > 0) text.append(buf, static_cast<size_t>(n));
  gzclose(gz);
  EXPECT_EQ(text, convert({dir.file("a.rpf")}));
  EXPECT_EQ(json::parse(text).at("traceEvents").size(), stats.events_written);
}

TEST(ChromeTrace, ZoneCrossingTwoFilesIsMatched) {
  test::TempDir dir;
  TraceBuilder b;
  const uint32_t th = b.thread(77, "t");
  const uint32_t span = b.location("span", "s.cpp", 3);
  b.begin(th, T + 100, span);
  b.flush();
  // Named so that name order is the reverse of sequence order.
  test::write_file(dir.file("z-first.rpf"), b.new_file());
  b.end(th, T + 900);
  b.flush();
  test::write_file(dir.file("a-second.rpf.part"), b.bytes());

  ChromeTraceStats stats;
  const json doc = json::parse(convert({dir.path()}, {}, &stats));
  const auto zones = with_ph(doc, "X");
  ASSERT_EQ(zones.size(), 1u);
  EXPECT_EQ(zones[0].at("name"), "span");
  EXPECT_DOUBLE_EQ(zones[0].at("ts").get<double>(), 1000000.100);
  EXPECT_DOUBLE_EQ(zones[0].at("dur").get<double>(), 0.800);
  EXPECT_EQ(zones[0].at("args"), json({{"file", "s.cpp"}, {"line", 3}}));
  EXPECT_EQ(zones[0].at("tid"), 77);
  EXPECT_EQ(stats.unmatched_zone_ends, 0u);
  EXPECT_EQ(stats.unterminated_zones, 0u);

  // The second file alone: its end has no begin (the first file is "deleted").
  ChromeTraceStats alone;
  const json doc2 = json::parse(convert({dir.file("a-second.rpf.part")}, {}, &alone));
  EXPECT_TRUE(with_ph(doc2, "X").empty());
  EXPECT_EQ(alone.unmatched_zone_ends, 1u);
}

TEST(ChromeTrace, NamesThatAreNotValidUtf8StillGiveValidJson) {
  test::TempDir dir;
  TraceBuilder b;
  const uint32_t th = b.thread(1, "t\"q\\");
  const uint32_t bad = b.location(std::string("a\xff\x01z", 4));
  b.instant(th, T, bad);
  b.flush();
  test::write_file(dir.file("u.rpf"), b.bytes());
  const json doc = json::parse(convert({dir.file("u.rpf")}));
  EXPECT_EQ(with_ph(doc, "i").at(0).at("name"), "a\xEF\xBF\xBD\x01z");
  EXPECT_EQ(with_ph(doc, "M").at(1).at("args").at("name"), "t\"q\\");
}

TEST(ChromeTrace, RenamedThreadGetsASecondNameEvent) {
  test::TempDir dir;
  TraceBuilder b;
  const uint32_t th = b.thread(9, "before");
  const uint32_t x = b.location("x");
  b.instant(th, T, x);
  b.flush();
  b.rename(th, "after");
  b.instant(th, T + 1, x);
  b.flush();
  test::write_file(dir.file("r.rpf"), b.bytes());
  const auto meta = with_ph(json::parse(convert({dir.file("r.rpf")})), "M");
  ASSERT_EQ(meta.size(), 3u);
  EXPECT_EQ(meta[1].at("args").at("name"), "before");
  EXPECT_EQ(meta[2].at("args").at("name"), "after");
}

}  // namespace
}  // namespace ringprof

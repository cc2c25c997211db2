// ringprof info, through the library: counts known by construction, and
// each kind of damage found, located and survived.
#include <gtest/gtest.h>

#include <random>

#include "support/trace_builder.h"
#include "ringprof/format.h"
#include "ringprof/tools/trace_info.h"
#include "ringprof/tools/trace_reader.h"
#include "support/test_support.h"

namespace ringprof {
namespace {

using test::TraceBuilder;
constexpr uint64_t T = 1'000'000'000ull;

// Three segments, seven events:
//   seg 0: main zone [T+10, T+20], counter at T+30; worker instant at T+15
//   seg 1: main step 1 at T+40; worker reports 5 ring + 2 io drops, no events
//   seg 2: worker flow 9 begin at T+50, end at T+60
struct Workload {
  std::vector<uint8_t> bytes;
  std::vector<size_t> offsets;
};

Workload make_workload(uint32_t pid = 4242) {
  TraceBuilder b(pid);
  const uint32_t zone = b.location("zone", "z.cpp", 5);
  const uint32_t ctr = b.location("ctr");
  const uint32_t mark = b.location("mark");
  const uint32_t main_th = b.thread(100, "main");
  const uint32_t worker = b.thread(200, "worker");
  b.begin(main_th, T + 10, zone);
  b.end(main_th, T + 20);
  b.counter(main_th, T + 30, ctr, 2.0);
  b.instant(worker, T + 15, mark);
  b.flush();
  b.step(main_th, T + 40, 1);
  b.drops(worker, 5, 2);
  b.flush();
  b.flow_begin(worker, T + 50, 9);
  b.flow_end(worker, T + 60, 9);
  b.flush();
  return {b.bytes(), b.frame_offsets()};
}

TraceInfo info_of(const std::vector<std::string>& paths) {
  TraceReader reader(paths);
  return collect_info(reader);
}

TEST(Info, CountsEverything) {
  test::TempDir dir;
  const Workload w = make_workload();
  test::write_file(dir.file("a.rpf"), w.bytes);
  const TraceInfo info = info_of({dir.file("a.rpf")});

  ASSERT_EQ(info.files.size(), 1u);
  EXPECT_EQ(info.files[0].size_bytes, w.bytes.size());
  EXPECT_EQ(info.files[0].segments, 3u);
  EXPECT_TRUE(info.files[0].has_file_start);
  EXPECT_FALSE(info.files[0].is_part);
  EXPECT_EQ(info.segments, 3u);
  EXPECT_EQ(info.bad_segments, 0u);
  EXPECT_EQ(info.torn_tails, 0u);
  EXPECT_TRUE(info.problems.empty());

  EXPECT_EQ(info.events, 7u);
  auto kind = [&](EventKind k) { return info.events_by_kind[static_cast<size_t>(k)]; };
  EXPECT_EQ(kind(EventKind::ZoneBegin), 1u);
  EXPECT_EQ(kind(EventKind::ZoneEnd), 1u);
  EXPECT_EQ(kind(EventKind::Counter), 1u);
  EXPECT_EQ(kind(EventKind::Instant), 1u);
  EXPECT_EQ(kind(EventKind::Step), 1u);
  EXPECT_EQ(kind(EventKind::FlowBegin), 1u);
  EXPECT_EQ(kind(EventKind::FlowEnd), 1u);
  EXPECT_EQ(kind(EventKind::FlowStep), 0u);
  EXPECT_EQ(info.first_ns, T + 10);
  EXPECT_EQ(info.last_ns, T + 60);
  EXPECT_EQ(info.dropped_ring, 5u);
  EXPECT_EQ(info.dropped_io, 2u);

  // Stored bytes are the whole file (every frame intact); raw bytes are what
  // the headers say each payload decompresses to.
  EXPECT_EQ(info.stored_bytes, w.bytes.size());
  uint64_t raw = 0;
  for (size_t off : w.offsets) {
    std::string err;
    auto h = format::parse_frame_header(std::span<const uint8_t>(w.bytes.data() + off, format::kHeaderSize), &err);
    ASSERT_TRUE(h) << err;
    raw += h->raw_size;
  }
  EXPECT_EQ(info.raw_bytes, raw);

  ASSERT_EQ(info.processes.size(), 1u);
  const ProcessSummary& p = info.processes[0];
  EXPECT_EQ(p.pid, 4242u);
  EXPECT_EQ(p.hostname, "node1");
  EXPECT_EQ(p.command_line, (std::vector<std::string>{"/usr/bin/trainer", "--epochs", "3"}));
  EXPECT_EQ(p.start_monotonic_ns, T);
  EXPECT_EQ(p.segments, 3u);
  ASSERT_EQ(p.threads.size(), 2u);
  EXPECT_EQ(p.threads[0].tid, 100u);
  EXPECT_EQ(p.threads[0].name, "main");
  EXPECT_EQ(p.threads[0].events, 4u);
  EXPECT_EQ(p.threads[0].dropped_ring, 0u);
  EXPECT_EQ(p.threads[1].tid, 200u);
  EXPECT_EQ(p.threads[1].name, "worker");
  EXPECT_EQ(p.threads[1].events, 3u);
  EXPECT_EQ(p.threads[1].dropped_ring, 5u);
  EXPECT_EQ(p.threads[1].dropped_io, 2u);

  const std::string text = format_info(info);
  EXPECT_NE(text.find("Files: 1\n"), std::string::npos) << text;
  EXPECT_NE(text.find("Events: 7\n"), std::string::npos) << text;
  EXPECT_NE(text.find("thread 200 \"worker\": 3 events, dropped 5 events (ring full) + 2 (write failed)"), std::string::npos)
      << text;
  EXPECT_NE(text.find("Segments: 3 intact, 0 corrupt, 0 torn tails, 0 truncated files"), std::string::npos) << text;
}

TEST(Info, FlippedPayloadBitSkipsOnlyThatSegment) {
  test::TempDir dir;
  Workload w = make_workload();
  w.bytes[w.offsets[1] + format::kHeaderSize + 3] ^= 0x10;
  test::write_file(dir.file("a.rpf"), w.bytes);
  const TraceInfo info = info_of({dir.file("a.rpf")});
  EXPECT_EQ(info.segments, 2u);
  EXPECT_EQ(info.bad_segments, 1u);
  EXPECT_EQ(info.events, 6u);  // the step is lost
  EXPECT_EQ(info.events_by_kind[static_cast<size_t>(EventKind::Step)], 0u);
  EXPECT_EQ(info.dropped_ring, 0u);  // reported by the lost segment
  ASSERT_EQ(info.problems.size(), 1u);
  EXPECT_EQ(info.problems[0].kind, ProblemKind::CorruptSegment);
  EXPECT_EQ(info.problems[0].file, dir.file("a.rpf"));
  EXPECT_EQ(info.problems[0].offset, w.offsets[1]);
  EXPECT_EQ(info.problems[0].reason, "payload checksum mismatch");
  EXPECT_EQ(format_problem(info.problems[0]),
            "ringprof: " + dir.file("a.rpf") + ": offset " + std::to_string(w.offsets[1]) +
                ": payload checksum mismatch");
}

TEST(Info, FlippedHeaderBitResynchronises) {
  test::TempDir dir;
  Workload w = make_workload();
  w.bytes[w.offsets[1] + 20] ^= 0x01;  // event_count: the header checksum no longer matches
  test::write_file(dir.file("a.rpf"), w.bytes);
  const TraceInfo info = info_of({dir.file("a.rpf")});
  EXPECT_EQ(info.segments, 2u);
  EXPECT_EQ(info.events, 6u);
  ASSERT_EQ(info.problems.size(), 1u);
  EXPECT_EQ(info.problems[0].kind, ProblemKind::CorruptHeader);
  EXPECT_EQ(info.problems[0].offset, w.offsets[1]);
  EXPECT_NE(info.problems[0].reason.find("skipped " + std::to_string(w.offsets[2] - w.offsets[1]) +
                                         " bytes to the next segment at offset " + std::to_string(w.offsets[2])),
            std::string::npos)
      << info.problems[0].reason;
}

TEST(Info, TruncatedSealedFileAndTornPartFile) {
  test::TempDir dir;
  Workload w = make_workload();
  const size_t cut = w.offsets[2] + format::kHeaderSize + 2;  // inside the third payload
  std::vector<uint8_t> head(w.bytes.begin(), w.bytes.begin() + static_cast<std::ptrdiff_t>(cut));
  test::write_file(dir.file("sealed.rpf"), head);
  test::write_file(dir.file("live.rpf.part"), head);

  TraceInfo info = info_of({dir.file("sealed.rpf")});
  EXPECT_EQ(info.segments, 2u);
  EXPECT_EQ(info.events, 5u);
  EXPECT_EQ(info.truncated_files, 1u);
  EXPECT_EQ(info.torn_tails, 0u);
  ASSERT_EQ(info.problems.size(), 1u);
  EXPECT_EQ(info.problems[0].kind, ProblemKind::Truncated);
  EXPECT_EQ(info.problems[0].offset, w.offsets[2]);
  const size_t frame3 = w.bytes.size() - w.offsets[2];
  EXPECT_EQ(info.problems[0].reason, "truncated segment: " + std::to_string(frame3) + " bytes expected, " +
                                         std::to_string(format::kHeaderSize + 2) + " present");

  info = info_of({dir.file("live.rpf.part")});
  EXPECT_EQ(info.segments, 2u);
  EXPECT_EQ(info.torn_tails, 1u);
  EXPECT_EQ(info.truncated_files, 0u);
  ASSERT_EQ(info.problems.size(), 1u);
  EXPECT_EQ(info.problems[0].kind, ProblemKind::TornTail);
  EXPECT_EQ(info.problems[0].offset, w.offsets[2]);
  EXPECT_EQ(info.problems[0].reason.rfind("torn tail", 0), 0u) << info.problems[0].reason;

  // A header cut short is a torn tail too.
  std::vector<uint8_t> short_header(w.bytes.begin(), w.bytes.begin() + static_cast<std::ptrdiff_t>(w.offsets[2] + 10));
  test::write_file(dir.file("short.rpf.part"), short_header);
  info = info_of({dir.file("short.rpf.part")});
  EXPECT_EQ(info.segments, 2u);
  ASSERT_EQ(info.problems.size(), 1u);
  EXPECT_EQ(info.problems[0].kind, ProblemKind::TornTail);
  EXPECT_EQ(info.problems[0].offset, w.offsets[2]);
}

TEST(Info, LostFileStartStillYieldsLaterSegments) {
  test::TempDir dir;
  Workload w = make_workload();
  w.bytes[format::kHeaderSize + 1] ^= 0xff;  // the file start's payload
  test::write_file(dir.file("a.rpf"), w.bytes);
  const TraceInfo info = info_of({dir.file("a.rpf")});
  EXPECT_EQ(info.segments, 2u);
  EXPECT_EQ(info.events, 3u);  // the step and the flow pair
  EXPECT_EQ(info.dropped_ring, 5u);
  EXPECT_FALSE(info.files[0].has_file_start);
  ASSERT_EQ(info.problems.size(), 1u);
  EXPECT_EQ(info.problems[0].offset, 0u);
  EXPECT_EQ(info.problems[0].reason, "payload checksum mismatch");
  ASSERT_EQ(info.processes.size(), 1u);
  EXPECT_EQ(info.processes[0].pid, 4242u);  // from the frame headers
  EXPECT_FALSE(info.processes[0].start_known);
}

TEST(Info, ForeignFiles) {
  test::TempDir dir;
  std::vector<uint8_t> noise(5000);
  std::mt19937 rng(7);
  for (uint8_t& b : noise) b = static_cast<uint8_t>(rng());
  test::write_file(dir.file("noise.rpf"), noise);
  const std::string text = "hello, I am a text file\n";
  test::write_file(dir.file("text.rpf"), std::vector<uint8_t>(text.begin(), text.end()));
  test::write_file(dir.file("tiny.rpf"), {1, 2, 3});
  test::write_file(dir.file("empty.rpf"), {});

  const TraceInfo info = info_of({dir.path()});
  EXPECT_EQ(info.files.size(), 4u);
  EXPECT_EQ(info.segments, 0u);
  EXPECT_TRUE(info.processes.empty());
  // A sealed file of 0 bytes is named as empty: no writer seals one.
  ASSERT_EQ(info.problems.size(), 4u);
  for (const Problem& p : info.problems) {
    EXPECT_EQ(p.kind, ProblemKind::Foreign) << p.reason;
    EXPECT_EQ(p.offset, 0u);
    const bool empty = p.file == dir.file("empty.rpf");
    EXPECT_EQ(p.reason.rfind(empty ? "empty file (0 bytes)" : "not a ringprof file", 0), 0u) << p.reason;
  }
}

TEST(Info, MissingPathsAndEmptyDirectories) {
  test::TempDir dir;
  const TraceInfo info = info_of({dir.file("nope.rpf"), dir.path()});
  ASSERT_EQ(info.problems.size(), 2u);
  EXPECT_EQ(info.problems[0].kind, ProblemKind::Unreadable);
  EXPECT_EQ(info.problems[0].file, dir.file("nope.rpf"));
  EXPECT_EQ(info.problems[1].file, dir.path());
  EXPECT_EQ(info.problems[1].reason, "no *.rpf or *.rpf.part files in directory (nor in its subdirectories)");
}

TEST(Info, PartFileSealedSinceListingIsFollowed) {
  // A recorder renames x.rpf.part to x.rpf when it seals it; a reader that
  // listed the directory just before still finds the file.
  test::TempDir dir;
  test::write_file(dir.file("x.rpf"), make_workload().bytes);
  const TraceInfo info = info_of({dir.file("x.rpf.part")});
  EXPECT_TRUE(info.problems.empty());
  ASSERT_EQ(info.files.size(), 1u);
  EXPECT_EQ(info.files[0].path, dir.file("x.rpf"));
  EXPECT_EQ(info.segments, 3u);
}

TEST(Info, GroupsFilesByProcess) {
  test::TempDir dir;
  test::write_file(dir.file("p1.rpf"), make_workload(1).bytes);
  test::write_file(dir.file("p2.rpf"), make_workload(2).bytes);
  test::write_file(dir.file("ignored.txt"), {1, 2, 3});
  const TraceInfo info = info_of({dir.path()});
  EXPECT_TRUE(info.problems.empty());
  ASSERT_EQ(info.processes.size(), 2u);
  EXPECT_EQ(info.processes[0].pid, 1u);
  EXPECT_EQ(info.processes[1].pid, 2u);
  EXPECT_EQ(info.events, 14u);
  EXPECT_EQ(info.processes[0].files, std::vector<std::string>{dir.file("p1.rpf")});
}

}  // namespace
}  // namespace ringprof

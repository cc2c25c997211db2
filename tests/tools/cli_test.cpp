// The real `ringprof` binary: exit statuses, one-line errors naming file and
// offset, and that intact segments are still read around damage.
#include <gtest/gtest.h>

#include "perfetto_trace.pb.h"

#include <nlohmann/json.hpp>
#include <algorithm>
#include <random>
#include <regex>

#include "support/trace_builder.h"
#include "ringprof/format.h"
#include "support/test_support.h"

namespace ringprof {
namespace {

using test::TraceBuilder;
constexpr uint64_t T = 1'000'000'000ull;

test::CommandResult cli(const std::string& args) { return test::run_command(std::string(RINGPROF_CLI) + " " + args); }
std::string q(const std::string& s) { return test::shell_quote(s); }

std::vector<std::string> lines_of(const std::string& text) {
  std::vector<std::string> lines;
  for (size_t at = 0, nl; (nl = text.find('\n', at)) != std::string::npos; at = nl + 1)
    lines.push_back(text.substr(at, nl - at));
  return lines;
}

// Three segments of one zone each: "work" [k*1000, k*1000 + 500] us, k = 0..2.
struct Trace {
  std::vector<uint8_t> bytes;
  std::vector<size_t> offsets;
};
Trace three_segments() {
  TraceBuilder b(31337);
  const uint32_t th = b.thread(7, "main");
  const uint32_t work = b.location("work", "w.cpp", 9);
  for (uint64_t k = 0; k < 3; ++k) {
    b.begin(th, T + k * 1'000'000, work);
    b.end(th, T + k * 1'000'000 + 500'000);
    b.flush();
  }
  return {b.bytes(), b.frame_offsets()};
}

TEST(Cli, UsageErrorsExitOne) {
  EXPECT_EQ(cli("").exit_code, 1);
  EXPECT_EQ(cli("frobnicate x.rpf").exit_code, 1);
  EXPECT_EQ(cli("info").exit_code, 1);                         // no PATH
  EXPECT_EQ(cli("convert x.rpf").exit_code, 1);                // no -o
  EXPECT_EQ(cli("convert x.rpf -o").exit_code, 1);             // -o without value
  EXPECT_EQ(cli("convert x.rpf -o t.json --last 5parsecs").exit_code, 1);
  EXPECT_EQ(cli("convert x.rpf -o t.json --last 1s --from 2s").exit_code, 1);
  EXPECT_EQ(cli("table x.rpf --sort speed").exit_code, 1);
  EXPECT_EQ(cli("table x.rpf --top many").exit_code, 1);
  EXPECT_EQ(cli("table x.rpf --format xml").exit_code, 1);
  EXPECT_EQ(cli("info x.rpf --sort total").exit_code, 1);      // a table option
  const test::CommandResult r = cli("table x.rpf --bogus");
  EXPECT_EQ(r.exit_code, 1);
  EXPECT_NE(r.err.find("unknown option for table: --bogus"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("usage: ringprof"), std::string::npos);
  EXPECT_EQ(cli("--help").exit_code, 0);
}

TEST(Cli, VersionPrintsTheProjectVersion) {
  const test::CommandResult r = cli("--version");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, std::string("ringprof ") + RINGPROF_PROJECT_VERSION + "\n");
  EXPECT_EQ(r.err, "");
}

TEST(Cli, CommandHelpListsOnlyThatCommandsOptions) {
  const test::CommandResult r = cli("convert --help");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("ringprof convert"), std::string::npos) << r.out;
  for (const char* own : {"-o ", "--thread", "--symbol-path", "--last", "--window-id", "--format", "--rank"})
    EXPECT_NE(r.out.find(own), std::string::npos) << own << " missing from\n" << r.out;
  for (const char* other : {"--sort", "--per-thread", "--samples", "--top", "--steps"})
    EXPECT_EQ(r.out.find(other), std::string::npos) << other << " is not convert's, yet in\n" << r.out;
  const test::CommandResult info = cli("info --help");
  EXPECT_EQ(info.exit_code, 0);
  EXPECT_EQ(info.out.find("--last"), std::string::npos) << "info takes no window:\n" << info.out;
}

TEST(Cli, UnknownOptionIsOneLineAndExitsOne) {
  for (const char* args : {"convert x.rpf -o t.json --bogus", "--bogus", "frobnicate", "trigger 12 --bogus"}) {
    const test::CommandResult r = cli(args);
    EXPECT_EQ(r.exit_code, 1) << args;
    EXPECT_EQ(r.out, "") << args;
    ASSERT_EQ(lines_of(r.err).size(), 1u) << args << ": " << r.err;
    EXPECT_EQ(r.err.rfind("ringprof: ", 0), 0u) << r.err;
  }
  EXPECT_NE(cli("convert x.rpf -o t.json --bogus").err.find("unknown option for convert: --bogus"), std::string::npos);
  EXPECT_NE(cli("frobnicate").err.find("unknown command 'frobnicate'"), std::string::npos);
}

TEST(Cli, EveryListedCommandHasItsOwnHelp) {
  const test::CommandResult top = cli("--help");
  ASSERT_EQ(top.exit_code, 0);
  // Command lines in the listing: two spaces, the name, its description.
  std::vector<std::string> commands;
  const std::regex command_line("^  ([a-z]+) {2,}\\S.*$");
  for (const std::string& line : lines_of(top.out)) {
    std::smatch m;
    if (std::regex_match(line, m, command_line)) commands.push_back(m[1]);
  }
  for (const char* expected : {"info", "convert", "table", "flame", "pprof", "gpu", "memory", "extract", "trigger"})
    EXPECT_NE(std::find(commands.begin(), commands.end(), expected), commands.end()) << expected << " not in\n"
                                                                                     << top.out;
  for (const std::string& command : commands) {
    for (const std::string& args : {command + " --help", "help " + command}) {
      const test::CommandResult r = cli(args);
      EXPECT_EQ(r.exit_code, 0) << args << ": " << r.err;
      EXPECT_EQ(r.err, "") << args;
      EXPECT_NE(r.out.find("ringprof " + command), std::string::npos) << args << ":\n" << r.out;
      EXPECT_NE(r.out.find("--help"), std::string::npos) << args;
    }
  }
}

TEST(Cli, PipedRunsPrintNoProgress) {
  // Several files, several reads (a window probe, then the command): stderr is
  // a pipe here, so the progress line stays off and stderr stays empty.
  test::TempDir dir;
  for (int i = 0; i < 4; ++i) test::write_file(dir.file("p" + std::to_string(i) + ".rpf"), three_segments().bytes);
  for (const std::string& args : {"convert " + q(dir.path()) + " --last 2ms -o " + q(dir.file("t.json")),
                                  "table " + q(dir.path()) + " --from 0 --to 10s",
                                  "extract " + q(dir.path()) + " --last 1s -o " + q(dir.file("out"))}) {
    const test::CommandResult r = cli(args);
    EXPECT_EQ(r.exit_code, 0) << args << ": " << r.err;
    EXPECT_EQ(r.err, "") << args;
    EXPECT_EQ(r.out.find('\r'), std::string::npos) << args;
  }
}

TEST(Cli, GoodFileExitsZero) {
  test::TempDir dir;
  test::write_file(dir.file("a.rpf"), three_segments().bytes);
  test::CommandResult r = cli("info " + q(dir.file("a.rpf")));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.err, "");
  EXPECT_NE(r.out.find("Segments: 3 intact, 0 corrupt"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("pid 31337 on node1: /usr/bin/trainer --epochs 3"), std::string::npos) << r.out;

  r = cli("table --format csv " + q(dir.path()));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out,
            "name,calls,total_us,total_pct,self_us,self_pct,avg_us,min_us,max_us\n"
            "work,3,1500.000,100.00,1500.000,100.00,500.000,500.000,500.000\n");

  r = cli("convert " + q(dir.file("a.rpf")) + " --last 1.2ms -o -");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const nlohmann::json doc = nlohmann::json::parse(r.out);
  int zones = 0;
  for (const auto& e : doc.at("traceEvents")) zones += e.at("ph") == "X";
  EXPECT_EQ(zones, 2);  // the trace ends at 2.5 ms: 1.3 .. 2.5 ms touches the second and third

  r = cli("convert " + q(dir.file("a.rpf")) + " -o " + q(dir.file("t.json.gz")));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const auto gz = test::read_file(dir.file("t.json.gz"));
  ASSERT_GE(gz.size(), 2u);
  EXPECT_EQ(gz[0], 0x1f);

  // A Perfetto trace, by the output's name or by --format, with the same window.
  auto perfetto_slices = [](const std::string& bytes) {
    ringprof::perfetto::Trace trace;
    EXPECT_TRUE(trace.ParseFromString(bytes));
    int begins = 0;
    for (const auto& p : trace.packet())
      begins += p.has_track_event() && p.track_event().type() == ringprof::perfetto::TrackEvent::TYPE_SLICE_BEGIN;
    return begins;
  };
  r = cli("convert " + q(dir.file("a.rpf")) + " --last 1.2ms -o " + q(dir.file("t.pftrace")));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const auto pftrace = test::read_file(dir.file("t.pftrace"));
  EXPECT_EQ(perfetto_slices(std::string(pftrace.begin(), pftrace.end())), 2);
  r = cli("convert " + q(dir.file("a.rpf")) + " --format perfetto -o -");
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(perfetto_slices(r.out), 3);
  r = cli("convert " + q(dir.file("a.rpf")) + " --format chrome -o " + q(dir.file("t2.pftrace")));
  EXPECT_EQ(r.exit_code, 0) << r.err;
  const auto forced = test::read_file(dir.file("t2.pftrace"));
  ASSERT_FALSE(forced.empty());
  EXPECT_EQ(forced[0], '{');  // JSON, as asked, whatever the name
  EXPECT_EQ(cli("convert " + q(dir.file("a.rpf")) + " --format xml -o -").exit_code, 1);
}

// --around T --width D: zones at [0, 0.5], [1, 1.5] and [2, 2.5] ms. Centred
// on 1.25 ms, 0.2 ms reaches only the second; 2 ms ([0.25, 2.25] ms) touches
// all three. --window is --width's name before 0.2 and must still work.
TEST(Cli, AroundTakesItsWidthUnderBothNames) {
  test::TempDir dir;
  test::write_file(dir.file("a.rpf"), three_segments().bytes);
  auto calls = [&](const std::string& width) {
    const test::CommandResult r = cli("table --format csv " + q(dir.path()) + " --around 1.25ms " + width);
    EXPECT_EQ(r.exit_code, 0) << width << ": " << r.err;
    const std::vector<std::string> lines = lines_of(r.out);
    return lines.size() == 2 && lines[1].rfind("work,", 0) == 0 ? std::stoi(lines[1].substr(5)) : -1;
  };
  EXPECT_EQ(calls("--width 0.2ms"), 1);
  EXPECT_EQ(calls("--window 0.2ms"), 1);
  EXPECT_EQ(calls("--width 2ms"), 3);
  EXPECT_EQ(calls("--window 2ms"), 3);
}

// Control bytes in names (a NUL, an escape sequence) print as \xNN in text
// and CSV: the rest of the output is still there, and the terminal is not
// driven. Text output used to end at the first NUL.
TEST(Cli, ControlBytesInNamesPrintEscapedAndCutNothingOff) {
  TraceBuilder b(31337);
  const uint32_t th = b.thread(7, std::string("ma\0in", 5));
  const uint32_t odd = b.location(std::string("a\0b\x1b[31m", 8));
  const uint32_t work = b.location("work");
  b.begin(th, T, odd);
  b.end(th, T + 500'000);
  b.begin(th, T + 1'000'000, work);
  b.end(th, T + 1'200'000);
  b.flush();
  test::TempDir dir;
  test::write_file(dir.file("a.rpf"), b.bytes());
  const std::string file = q(dir.file("a.rpf"));
  const std::string shown = "a\\x00b\\x1b[31m";
  for (const std::string& command : {"table " + file, "table --format csv " + file, "info " + file,
                                     "diff " + file + " " + file, "diff --format markdown " + file + " " + file}) {
    const test::CommandResult r = cli(command);
    EXPECT_EQ(r.exit_code, 0) << command << "\n" << r.err;
    EXPECT_EQ(r.out.find('\0'), std::string::npos) << command;
    EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << command;
    if (command.rfind("info", 0) == 0) {
      EXPECT_NE(r.out.find("ma\\x00in"), std::string::npos) << command << "\n" << r.out;
    } else {
      EXPECT_NE(r.out.find(shown), std::string::npos) << command << "\n" << r.out;
      EXPECT_NE(r.out.find("work"), std::string::npos) << command << ": cut off\n" << r.out;
    }
  }
  const test::CommandResult csv = cli("table --format csv " + file);
  EXPECT_NE(csv.out.find("\n" + shown + ",1,500.000,"), std::string::npos) << csv.out;
}

// 70,000 zones nested on one thread: the tools keep the outer 65,536 (memory
// stays bounded) and say how many they left out, on stderr and in the table.
TEST(Cli, ZonesNestedPastTheDepthLimitAreCountedNotLostSilently) {
  TraceBuilder b(4242);
  const uint32_t th = b.thread(1, "deep");
  const uint32_t loc = b.location("nest");
  constexpr uint64_t kZones = 70'000;
  for (uint64_t i = 0; i < kZones; ++i) b.begin(th, T + i, loc);
  for (uint64_t i = 0; i < kZones; ++i) b.end(th, T + kZones + i);
  b.flush();
  test::TempDir dir;
  test::write_file(dir.file("deep.rpf"), b.bytes());
  const std::string file = q(dir.file("deep.rpf"));
  const std::string note = "4464 zones nested deeper than 65536 levels on their thread left out";

  test::CommandResult r = cli("table --format csv " + file);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("\nnest,65536,"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find(note), std::string::npos) << r.err;
  r = cli("table " + file);
  EXPECT_NE(r.out.find("4464 zones nested deeper than 65536 left out"), std::string::npos) << r.out;
  for (const char* out : {"t.json", "t.pftrace"}) {
    r = cli("convert " + file + " -o " + q(dir.file(out)));
    EXPECT_EQ(r.exit_code, 0) << out << ": " << r.err;
    EXPECT_NE(r.err.find(note), std::string::npos) << out << ": " << r.err;
  }
}

TEST(Cli, TruncatedFile) {
  test::TempDir dir;
  const Trace t = three_segments();
  const size_t cut = t.offsets[2] + 70;  // 6 bytes into the third payload
  test::write_file(dir.file("cut.rpf"), std::vector<uint8_t>(t.bytes.begin(), t.bytes.begin() + static_cast<std::ptrdiff_t>(cut)));
  const test::CommandResult r = cli("info " + q(dir.file("cut.rpf")));
  EXPECT_EQ(r.exit_code, 2);
  const auto err = lines_of(r.err);
  ASSERT_EQ(err.size(), 1u) << r.err;
  EXPECT_EQ(err[0], "ringprof: " + dir.file("cut.rpf") + ": offset " + std::to_string(t.offsets[2]) +
                        ": truncated segment: " + std::to_string(t.bytes.size() - t.offsets[2]) +
                        " bytes expected, 70 present");
  EXPECT_NE(r.out.find("Segments: 2 intact, 0 corrupt, 0 torn tails, 1 truncated files"), std::string::npos) << r.out;

  // The table still counts the two intact zones.
  const test::CommandResult table = cli("table --format csv " + q(dir.file("cut.rpf")));
  EXPECT_EQ(table.exit_code, 2);
  EXPECT_NE(table.out.find("work,2,1000.000"), std::string::npos) << table.out;
}

TEST(Cli, BitFlippedFile) {
  test::TempDir dir;
  Trace t = three_segments();
  t.bytes[t.offsets[1] + format::kHeaderSize + 5] ^= 0x04;
  test::write_file(dir.file("flip.rpf"), t.bytes);
  const test::CommandResult r = cli("info " + q(dir.file("flip.rpf")));
  EXPECT_EQ(r.exit_code, 2);
  const auto err = lines_of(r.err);
  ASSERT_EQ(err.size(), 1u) << r.err;
  EXPECT_EQ(err[0], "ringprof: " + dir.file("flip.rpf") + ": offset " + std::to_string(t.offsets[1]) +
                        ": payload checksum mismatch");
  EXPECT_NE(r.out.find("Segments: 2 intact, 1 corrupt"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("Events: 4\n"), std::string::npos) << r.out;

  // convert writes the intact zones and still says what was skipped.
  const test::CommandResult c = cli("convert " + q(dir.file("flip.rpf")) + " -o " + q(dir.file("t.json")));
  EXPECT_EQ(c.exit_code, 2);
  EXPECT_EQ(lines_of(c.err).size(), 1u) << c.err;
  const auto doc = nlohmann::json::parse(test::read_text(dir.file("t.json")));
  int zones = 0;
  for (const auto& e : doc.at("traceEvents")) zones += e.at("ph") == "X";
  EXPECT_EQ(zones, 2);
}

TEST(Cli, ForeignFiles) {
  test::TempDir dir;
  std::vector<uint8_t> noise(10000);
  std::mt19937 rng(1);
  for (uint8_t& b : noise) b = static_cast<uint8_t>(rng());
  test::write_file(dir.file("noise.bin"), noise);
  const std::string text = "#!/bin/sh\n# a shell script, long enough to hold a segment header or two\necho this is not a trace\n";
  test::write_file(dir.file("script.sh"), std::vector<uint8_t>(text.begin(), text.end()));

  for (const char* name : {"noise.bin", "script.sh"}) {
    const test::CommandResult r = cli("info " + q(dir.file(name)));
    EXPECT_EQ(r.exit_code, 2) << name;
    const auto err = lines_of(r.err);
    ASSERT_EQ(err.size(), 1u) << r.err;
    EXPECT_EQ(err[0].rfind("ringprof: " + dir.file(name) + ": offset 0: not a ringprof file (bad magic", 0), 0u)
        << err[0];
  }
  test::write_file(dir.file("short.txt"), std::vector<uint8_t>{'h', 'i', '\n'});
  const test::CommandResult s = cli("info " + q(dir.file("short.txt")));
  EXPECT_EQ(s.exit_code, 2);
  EXPECT_EQ(s.err, "ringprof: " + dir.file("short.txt") +
                       ": offset 0: not a ringprof file (3 bytes, shorter than a segment header)\n");

  const test::CommandResult missing = cli("info " + q(dir.file("missing.rpf")));
  EXPECT_EQ(missing.exit_code, 2);
  EXPECT_EQ(lines_of(missing.err).size(), 1u);
  EXPECT_NE(missing.err.find("cannot open"), std::string::npos) << missing.err;
}

TEST(Cli, NeverCrashesOnMangledFiles) {
  // Every single-byte corruption of a small file and every truncation: a
  // clean exit (0 or 2), never a signal, and a problem line when not 0.
  test::TempDir dir;
  const Trace t = three_segments();
  std::mt19937 rng(3);
  for (int i = 0; i < 40; ++i) {
    std::vector<uint8_t> bytes = t.bytes;
    const size_t at = rng() % bytes.size();
    if (i % 2 == 0)
      bytes[at] = static_cast<uint8_t>(rng());
    else
      bytes.resize(at);
    test::write_file(dir.file("m.rpf"), bytes);
    const test::CommandResult r = cli("convert " + q(dir.file("m.rpf")) + " -o " + q(dir.file("m.json")));
    ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 2) << "exit " << r.exit_code << " at " << at << ": " << r.err;
    if (r.exit_code == 2) {
      EXPECT_FALSE(r.err.empty());
    }
    EXPECT_TRUE(nlohmann::json::accept(test::read_text(dir.file("m.json")))) << "at " << at;
  }
}

}  // namespace
}  // namespace ringprof

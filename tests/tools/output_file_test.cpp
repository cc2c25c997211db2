// OutputFile: written under a temporary name, renamed into place when whole.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "ringprof/tools/output_file.h"
#include "support/test_support.h"

namespace ringprof {
namespace {

namespace fs = std::filesystem;

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

size_t entries_in(const std::string& dir) {
  size_t n = 0;
  for (const auto& e : fs::directory_iterator(dir)) n += e.path().filename() != "" ? 1 : 0;
  return n;
}

TEST(OutputFile, TheNameAppearsOnlyWhenTheFileIsWhole) {
  test::TempDir dir;
  const std::string path = dir.file("trace.json");
  OutputFile out;
  std::string error;
  ASSERT_TRUE(out.open(path, &error)) << error;
  out.stream() << std::string(200'000, 'x');  // more than one buffer: some of it is on disk already
  out.stream().flush();
  EXPECT_FALSE(fs::exists(path)) << "written under a temporary name first";
  EXPECT_EQ(entries_in(dir.path()), 1u);
  ASSERT_TRUE(out.close(&error)) << error;
  EXPECT_EQ(read_text(path), std::string(200'000, 'x'));
  EXPECT_EQ(entries_in(dir.path()), 1u) << "no temporary file left";
}

TEST(OutputFile, GzipOutputIsRenamedWholeToo) {
  test::TempDir dir;
  const std::string path = dir.file("trace.json.gz");
  OutputFile out;
  std::string error;
  ASSERT_TRUE(out.open(path, &error)) << error;
  out.stream() << "{\"traceEvents\":[]}";
  EXPECT_FALSE(fs::exists(path));
  ASSERT_TRUE(out.close(&error)) << error;
  gzFile gz = gzopen(path.c_str(), "rb");
  ASSERT_NE(gz, nullptr);
  char buf[64] = {};
  const int n = gzread(gz, buf, sizeof buf - 1);
  gzclose(gz);
  EXPECT_EQ(std::string(buf, n > 0 ? static_cast<size_t>(n) : 0), "{\"traceEvents\":[]}");
}

// A writer killed halfway (a convert killed by a timeout, say) leaves the
// older file of that name as it was, not a truncated new one.
TEST(OutputFile, AKilledWriterLeavesTheOldFileWhole) {
  test::TempDir dir;
  const std::string path = dir.file("trace.json");
  { std::ofstream(path) << "the old trace"; }
  const pid_t child = fork();
  if (child == 0) {
    OutputFile out;
    std::string error;
    if (!out.open(path, &error)) _exit(3);
    out.stream() << std::string(300'000, 'y');
    out.stream().flush();
    _exit(9);  // no close(), no destructor: as SIGKILL would
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  ASSERT_TRUE(WIFEXITED(status));
  ASSERT_EQ(WEXITSTATUS(status), 9);
  EXPECT_EQ(read_text(path), "the old trace");
}

TEST(OutputFile, AnUncreatableFileIsAnErrorNamingIt) {
  test::TempDir dir;
  OutputFile out;
  std::string error;
  EXPECT_FALSE(out.open(dir.file("no/such/dir/trace.json"), &error));
  EXPECT_NE(error.find("cannot create " + dir.file("no/such/dir/trace.json")), std::string::npos) << error;
}

}  // namespace
}  // namespace ringprof

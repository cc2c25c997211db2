// OutputFile: written under a temporary name, renamed into place when whole.
#include <gtest/gtest.h>
#include <sys/stat.h>
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

// Without close() (an exception unwinding past the writer) the output is not
// whole, and the older file keeps its place.
TEST(OutputFile, ADestructorWithoutCloseLeavesTheOldFile) {
  test::TempDir dir;
  const std::string path = dir.file("trace.json");
  { std::ofstream(path) << "the old trace"; }
  {
    OutputFile out;
    std::string error;
    ASSERT_TRUE(out.open(path, &error)) << error;
    out.stream() << "half of a new one";
  }
  EXPECT_EQ(read_text(path), "the old trace");
  EXPECT_EQ(entries_in(dir.path()), 1u) << "the temporary file is gone";
}

// What a rename would replace is written in place (a device such as
// /dev/null, a symbolic link, whose target is written, a file with other hard
// links); an existing file keeps its permissions.
TEST(OutputFile, DevicesLinksAndPermissionsStayAsTheyWere) {
  test::TempDir dir;
  std::string error;
  // A file with a second hard link: both names see the new contents.
  const std::string one = dir.file("one.json"), two = dir.file("two.json");
  { std::ofstream(one) << "old"; }
  ASSERT_EQ(::link(one.c_str(), two.c_str()), 0);
  {
    OutputFile out;
    ASSERT_TRUE(out.open(one, &error)) << error;
    out.stream() << "new";
    ASSERT_TRUE(out.close(&error)) << error;
  }
  EXPECT_EQ(read_text(two), "new");
  const std::string target = dir.file("target.json"), link = dir.file("link.json");
  { std::ofstream(target) << "old"; }
  ASSERT_EQ(symlink(target.c_str(), link.c_str()), 0);
  {
    OutputFile out;
    ASSERT_TRUE(out.open(link, &error)) << error;
    out.stream() << "new";
    ASSERT_TRUE(out.close(&error)) << error;
  }
  struct stat lst {};
  ASSERT_EQ(lstat(link.c_str(), &lst), 0);
  EXPECT_TRUE(S_ISLNK(lst.st_mode)) << "the link is kept";
  EXPECT_EQ(read_text(target), "new");

  const std::string secret = dir.file("secret.json");
  { std::ofstream(secret) << "old"; }
  ASSERT_EQ(chmod(secret.c_str(), 0600), 0);
  {
    OutputFile out;
    ASSERT_TRUE(out.open(secret, &error)) << error;
    out.stream() << "new";
    ASSERT_TRUE(out.close(&error)) << error;
  }
  struct stat st {};
  ASSERT_EQ(stat(secret.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  EXPECT_EQ(read_text(secret), "new");
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

// Shared helpers for the ringprof test suites: temporary directories, running
// the CLI and helper programs, reading files.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ringprof::test {

// A fresh directory under $TMPDIR (or /tmp), removed with everything in it.
class TempDir {
 public:
  TempDir();
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

struct CommandResult {
  int exit_code = -1;   // exit status, or 128 + signal when killed
  std::string out;      // stdout
  std::string err;      // stderr
};

// Runs `command` through /bin/sh and captures its output.
CommandResult run_command(const std::string& command);

// Quotes one argument for /bin/sh.
std::string shell_quote(const std::string& arg);

std::vector<uint8_t> read_file(const std::string& path);
std::string read_text(const std::string& path);
void write_file(const std::string& path, const std::vector<uint8_t>& bytes);

// Files in `dir` whose names end with `suffix`, sorted by name.
std::vector<std::string> list_files(const std::string& dir, const std::string& suffix);

}  // namespace ringprof::test

#include <map>

namespace ringprof::test {

// Everything in a set of ringprof files, decoded with the segment codec and
// tallied. Problems (corrupt, torn) are listed, never thrown.
struct FileTally {
  uint64_t files = 0;
  uint64_t frames = 0;
  uint64_t events = 0;
  std::map<int, uint64_t> by_kind;               // EventKind value → count
  std::map<std::string, uint64_t> by_thread_name;  // thread name → events (stack samples not included)
  uint64_t samples = 0;                          // Sample events (also in `events` and by_kind)
  uint64_t samples_lost = 0;
  uint64_t dropped_ring = 0;
  uint64_t dropped_io = 0;
  std::vector<std::string> problems;             // "file: offset N: reason"
  std::vector<std::string> files_with_problems;
};

// Decodes every frame of `path` (one file) into `tally`.
void tally_file(const std::string& path, FileTally& tally);
// All *.rpf (and *.rpf.part when include_part) files in `dir`.
FileTally tally_dir(const std::string& dir, bool include_part = true);

}  // namespace ringprof::test

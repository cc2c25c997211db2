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

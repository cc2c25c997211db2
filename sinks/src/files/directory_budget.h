// directory_budget.h — the byte budget of a ringprof output directory.
//
// RINGPROF_MAX_BYTES bounds *everything* ringprof keeps in the directory:
// every `*.rpf` and `*.rpf.part` file, including those left by earlier or
// other processes, plus what the current sink is writing. The budget learns
// the existing files from one directory scan, then is told of each file the
// sink seals. To make room it deletes the oldest file (by mtime) first; the
// file being written is never in its list, so it is never deleted.
#pragma once

#include <cstdint>
#include <deque>
#include <string>

namespace ringprof {

class DirectoryBudget {
 public:
  // Forgets what it knew and lists `dir` again. Returns 0 or an errno.
  int scan(const std::string& dir);
  // A file the sink just sealed (or gave up on): newest, deleted last.
  void add(const std::string& path, uint64_t bytes);
  // Bytes of every file known, deletable or not.
  uint64_t total() const { return total_; }
  // Deletes the oldest deletable file. Returns false when none is left.
  bool delete_oldest();

 private:
  struct File {
    std::string path;
    uint64_t bytes = 0;
  };
  std::deque<File> files_;  // oldest first
  uint64_t total_ = 0;      // files_ plus any that could not be deleted
};

}  // namespace ringprof

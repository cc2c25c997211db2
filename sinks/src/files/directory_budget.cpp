// directory_budget.cpp — see directory_budget.h.
#include "files/directory_budget.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "ringprof/format.h"

namespace ringprof {
namespace {

bool ends_with(const char* name, const char* suffix) {
  const std::size_t n = std::strlen(name), s = std::strlen(suffix);
  return n >= s && std::memcmp(name + n - s, suffix, s) == 0;
}

}  // namespace

int DirectoryBudget::scan(const std::string& dir) {
  files_.clear();
  total_ = 0;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return errno;
  struct Found {
    File file;
    struct timespec mtime;
  };
  std::vector<Found> found;
  while (const struct dirent* e = readdir(d)) {
    if (!ends_with(e->d_name, format::kFileSuffix) && !ends_with(e->d_name, format::kPartSuffix)) continue;
    struct stat st;
    // Do not follow links: a symlink named like a ringprof file is neither
    // counted nor ever deleted through.
    if (fstatat(dirfd(d), e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode)) continue;
    found.push_back({{dir + "/" + e->d_name, static_cast<uint64_t>(st.st_size)}, st.st_mtim});
  }
  closedir(d);
  // Oldest first; names break ties (a process's own files sort by sequence).
  std::sort(found.begin(), found.end(), [](const Found& a, const Found& b) {
    if (a.mtime.tv_sec != b.mtime.tv_sec) return a.mtime.tv_sec < b.mtime.tv_sec;
    if (a.mtime.tv_nsec != b.mtime.tv_nsec) return a.mtime.tv_nsec < b.mtime.tv_nsec;
    return a.file.path < b.file.path;
  });
  for (Found& f : found) add(f.file.path, f.file.bytes);
  return 0;
}

void DirectoryBudget::add(const std::string& path, uint64_t bytes) {
  files_.push_back({path, bytes});
  total_ += bytes;
}

bool DirectoryBudget::delete_oldest() {
  while (!files_.empty()) {
    File f = std::move(files_.front());
    files_.pop_front();
    if (unlink(f.path.c_str()) == 0 || errno == ENOENT) {
      total_ -= f.bytes;  // gone (maybe someone else removed it first)
      return true;
    }
    // Cannot delete it (permissions, read-only fs): its bytes stay counted,
    // and the next oldest is tried.
  }
  return false;
}

}  // namespace ringprof

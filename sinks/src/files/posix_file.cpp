// posix_file.cpp — see posix_file.h.
#include "files/posix_file.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cstdint>

namespace ringprof::posix {

int make_dirs(const std::string& dir) {
  if (dir.empty()) return ENOENT;
  // Create each prefix in turn. Errors on the way are only remembered: an
  // existing directory may answer EEXIST, EACCES or EROFS depending on the
  // file system, and another process may be creating the same tree. The
  // final stat decides; the remembered errno explains a failure best.
  int last_error = 0;
  for (std::size_t pos = dir.find('/', 1);; pos = dir.find('/', pos + 1)) {
    const std::string prefix = dir.substr(0, pos);
    if (mkdir(prefix.c_str(), 0755) != 0 && errno != EEXIST) last_error = errno;
    if (pos == std::string::npos) break;
  }
  struct stat st;
  if (stat(dir.c_str(), &st) != 0) return last_error ? last_error : errno;
  if (!S_ISDIR(st.st_mode)) return ENOTDIR;
  return 0;
}

int write_all(int fd, const uint8_t* data, std::size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    if (n == 0) return EIO;  // should not happen for a regular file; do not spin
    data += n;
    size -= static_cast<std::size_t>(n);
  }
  return 0;
}

int rename_no_replace(const std::string& from, const std::string& to) {
#ifdef RENAME_NOREPLACE
  if (renameat2(AT_FDCWD, from.c_str(), AT_FDCWD, to.c_str(), RENAME_NOREPLACE) == 0) return 0;
  if (errno != EINVAL && errno != ENOSYS) return errno;
#endif
  // Fallback (file system without RENAME_NOREPLACE): check, then rename. The
  // sink chose a name whose final form did not exist, so this is a backstop.
  struct stat st;
  if (lstat(to.c_str(), &st) == 0) return EEXIST;
  return ::rename(from.c_str(), to.c_str()) == 0 ? 0 : errno;
}

uint64_t file_size_limit() {
  struct rlimit rl;
  if (getrlimit(RLIMIT_FSIZE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY) return UINT64_MAX;
  return static_cast<uint64_t>(rl.rlim_cur);
}

}  // namespace ringprof::posix

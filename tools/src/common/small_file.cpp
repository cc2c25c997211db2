// Reading small files safely (small_file.h).
#include "common/small_file.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

namespace ringprof::internal {

bool read_small_file(const std::string& path, size_t max_bytes, std::string* out, std::string* why, bool follow_links) {
  out->clear();
  // O_NONBLOCK: opening a FIFO returns at once (and is refused below);
  // O_NOFOLLOW: a link planted in a shared directory is not followed.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | (follow_links ? 0 : O_NOFOLLOW));
  if (fd < 0) {
    *why = std::strerror(errno);
    return false;
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    *why = "not a regular file";
    return false;
  }
  // What the file holds now, at most max_bytes: no buffer larger than that.
  const size_t want = std::min<size_t>(max_bytes, static_cast<size_t>(st.st_size));
  out->resize(want);
  size_t got = 0;
  while (got < want) {
    const ssize_t n = ::read(fd, out->data() + got, want - got);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    got += static_cast<size_t>(n);
  }
  ::close(fd);
  out->resize(got);
  return true;
}

}  // namespace ringprof::internal

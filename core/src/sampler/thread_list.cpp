#include "sampler/thread_list.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>

namespace ringprof::sampler {

std::vector<uint32_t> list_threads() {
  std::vector<uint32_t> tids;
  DIR* d = opendir("/proc/self/task");
  if (!d) return tids;
  while (dirent* e = readdir(d)) {
    char* end = nullptr;
    const unsigned long v = std::strtoul(e->d_name, &end, 10);
    if (end != e->d_name && *end == '\0' && v > 0) tids.push_back(static_cast<uint32_t>(v));
  }
  closedir(d);
  return tids;
}

std::string thread_comm(uint32_t tid) {
  const std::string path = "/proc/self/task/" + std::to_string(tid) + "/comm";
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return {};
  char buf[64];
  const ssize_t n = read(fd, buf, sizeof buf);
  close(fd);
  if (n <= 0) return {};
  std::string name(buf, static_cast<size_t>(n));
  while (!name.empty() && (name.back() == '\n' || name.back() == '\0')) name.pop_back();
  return name;
}

uint32_t current_tid() noexcept { return static_cast<uint32_t>(syscall(SYS_gettid)); }

}  // namespace ringprof::sampler

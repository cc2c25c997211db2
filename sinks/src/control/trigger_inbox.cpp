#include "control/trigger_inbox.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>

#include "ringprof/control_file.h"

namespace ringprof {

void TriggerInbox::open(const std::string& dir, uint32_t pid, bool watch_dir) {
  close();
  dir_ = dir;
  request_path_ = control::request_path(dir, pid);
  answer_path_ = control::answer_path(dir, pid);
  // None left (EMFILE: the user's instances are used up): a timer instead.
  if (watch_dir) inotify_fd_ = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  watch();
}

void TriggerInbox::close() {
  if (inotify_fd_ >= 0) ::close(inotify_fd_);
  inotify_fd_ = -1;
  watch_ = -1;
}

void TriggerInbox::watch() {
  if (inotify_fd_ < 0 || watch_ >= 0) return;
  // Renames into the directory (how `ringprof trigger` writes) and files
  // closed after writing; a removed directory ends the watch (IN_IGNORED).
  watch_ = inotify_add_watch(inotify_fd_, dir_.c_str(), IN_MOVED_TO | IN_CLOSE_WRITE | IN_ONLYDIR);
}

void TriggerInbox::read_events() {
  if (inotify_fd_ < 0) return;
  alignas(inotify_event) char buf[4096];
  for (;;) {
    const ssize_t n = ::read(inotify_fd_, buf, sizeof buf);
    if (n <= 0) return;  // EAGAIN: read empty
    for (ssize_t at = 0; at + static_cast<ssize_t>(sizeof(inotify_event)) <= n;) {
      const auto* e = reinterpret_cast<const inotify_event*>(buf + at);
      // The directory went: watch again when it can be (each poll tries),
      // look on a timer until then.
      if (e->mask & IN_IGNORED) watch_ = -1;
      at += static_cast<ssize_t>(sizeof(inotify_event) + e->len);
    }
  }
}

bool TriggerInbox::poll(TriggerRequest* out) {
  if (request_path_.empty()) return false;
  read_events();
  watch();
  // O_NOFOLLOW: a symlink planted under the name is refused, not followed;
  // O_NONBLOCK: a FIFO planted there cannot stall the drainer.
  const int fd = ::open(request_path_.c_str(), O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ELOOP) unlink(request_path_.c_str());
    return false;
  }
  struct stat st {};
  const bool stat_ok = fstat(fd, &st) == 0;
  const uid_t me = geteuid();
  // Only this process's own user or root may ask, and the request must not
  // be writable by anyone else (it was created 0600).
  const bool trusted = stat_ok && S_ISREG(st.st_mode) && (st.st_uid == me || st.st_uid == 0) &&
                       (st.st_mode & (S_IRWXG | S_IRWXO)) == 0;
  char buf[4096];
  ssize_t n = 0;
  if (trusted) {
    n = ::read(fd, buf, sizeof buf - 1);
    if (n < 0) n = 0;
  }
  ::close(fd);
  unlink(request_path_.c_str());
  if (!trusted) {
    if (!warned_) {
      std::fprintf(stderr,
                   "ringprof: warning: ignoring trigger request %s (owner uid %u, mode %03o): only uid %u or root "
                   "may ask, with a 0600 file\n",
                   request_path_.c_str(), stat_ok ? static_cast<unsigned>(st.st_uid) : 0u,
                   stat_ok ? static_cast<unsigned>(st.st_mode & 0777) : 0u, static_cast<unsigned>(me));
      warned_ = true;
    }
    return false;
  }
  return control::parse_request(std::string_view(buf, static_cast<size_t>(n)), out);
}

void TriggerInbox::answer(uint64_t window_id) {
  if (answer_path_.empty()) return;
  control::write_file_atomically(answer_path_, control::format_answer(window_id));
}

}  // namespace ringprof

// The trigger request and answer files (ringprof/control_file.h).
#include "ringprof/control_file.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>

namespace ringprof::control {
namespace {

bool parse_uint(std::string_view t, uint64_t* out) {
  if (t.empty() || t.size() > 19) return false;
  uint64_t v = 0;
  for (char c : t) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + static_cast<uint64_t>(c - '0');
  }
  *out = v;
  return true;
}

// "2.5" seconds → ns, millisecond resolution.
bool parse_seconds(std::string_view t, uint64_t* ns) {
  const size_t dot = t.find('.');
  uint64_t whole = 0, frac = 0;
  if (!parse_uint(t.substr(0, dot), &whole) || whole > 1000000000ull) return false;
  if (dot != std::string_view::npos) {
    std::string_view f = t.substr(dot + 1);
    if (f.empty() || f.size() > 3 || !parse_uint(f, &frac)) return false;
    for (size_t i = f.size(); i < 3; ++i) frac *= 10;
  }
  *ns = whole * 1000000000ull + frac * 1000000ull;
  return true;
}

template <typename Fn>
void for_each_line(std::string_view text, Fn fn) {
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
    const size_t eq = line.find('=');
    if (eq != std::string_view::npos) fn(line.substr(0, eq), line.substr(eq + 1));
  }
}

}  // namespace

std::string request_path(const std::string& dir, uint32_t pid) {
  return dir + "/ringprof-" + std::to_string(pid) + ".ctl";
}
std::string answer_path(const std::string& dir, uint32_t pid) {
  return dir + "/ringprof-" + std::to_string(pid) + ".ack";
}

std::string format_request(const TriggerRequest& r) {
  std::string s = "mode=detailed\n";
  if (r.steps) s += "steps=" + std::to_string(r.steps) + "\n";
  if (r.duration_ns) {
    char buf[48];
    std::snprintf(buf, sizeof buf, "seconds=%llu.%03llu\n", static_cast<unsigned long long>(r.duration_ns / 1000000000ull),
                  static_cast<unsigned long long>(r.duration_ns % 1000000000ull / 1000000ull));
    s += buf;
  }
  return s;
}

bool parse_request(std::string_view text, TriggerRequest* out) {
  TriggerRequest r;
  bool ok = true;
  for_each_line(text, [&](std::string_view k, std::string_view v) {
    if (k == "steps") ok &= parse_uint(v, &r.steps);
    else if (k == "seconds") ok &= parse_seconds(v, &r.duration_ns);
    else if (k == "mode") ok &= v == "detailed";
  });
  if (!ok) return false;
  *out = r;
  return true;
}

std::string format_answer(uint64_t window_id) { return "window=" + std::to_string(window_id) + "\n"; }

bool parse_answer(std::string_view text, uint64_t* window_id) {
  bool found = false;
  for_each_line(text, [&](std::string_view k, std::string_view v) {
    if (k == "window") found = parse_uint(v, window_id);
  });
  return found;
}

int write_file_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp-" + std::to_string(getpid());
  unlink(tmp.c_str());
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) return errno;
  const char* p = text.data();
  size_t left = text.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = n < 0 ? errno : EIO;
      ::close(fd);
      unlink(tmp.c_str());
      return err;
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  ::close(fd);
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    unlink(tmp.c_str());
    return err;
  }
  return 0;
}

}  // namespace ringprof::control

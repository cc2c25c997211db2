#include "ringprof/tools/trigger.h"

#include <errno.h>
#include <signal.h>
#include <time.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "common/small_file.h"
#include "ringprof/control_file.h"

namespace fs = std::filesystem;

namespace ringprof {
namespace {

// A /proc file, read to its end (they report a size of 0).
std::string read_proc_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// The answer file, when it is there and a regular file: another user's FIFO
// or link at that name in a shared directory is ignored, so the poll below
// keeps to its timeout.
std::string read_answer(const std::string& path) {
  std::string text, why;
  return internal::read_small_file(path, 4096, &text, &why) ? text : std::string();
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

bool find_ringprof_dir(uint32_t pid, std::string* dir, std::string* error) {
  const std::string proc = "/proc/" + std::to_string(pid);
  std::error_code ec;
  // The file it is writing says it best.
  for (auto it = fs::directory_iterator(proc + "/fd", ec); !ec && it != fs::directory_iterator(); it.increment(ec)) {
    std::error_code lec;
    const fs::path target = fs::read_symlink(it->path(), lec);
    if (!lec && ends_with(target.string(), ".rpf.part")) {
      *dir = target.parent_path().string();
      return true;
    }
  }
  std::error_code cec;
  const fs::path cwd = fs::read_symlink(proc + "/cwd", cec);
  if (cec) {
    *error = "cannot read " + proc + "/cwd: " + cec.message() + " (same user or root only)";
    return false;
  }
  std::string env_dir = "ringprof";
  const std::string env = read_proc_file(proc + "/environ");
  for (size_t at = 0; at < env.size();) {
    const size_t end = env.find('\0', at);
    const std::string entry = env.substr(at, end == std::string::npos ? std::string::npos : end - at);
    if (entry.rfind("RINGPROF_DIR=", 0) == 0 && entry.size() > 13) env_dir = entry.substr(13);
    if (end == std::string::npos) break;
    at = end + 1;
  }
  *dir = fs::path(env_dir).is_absolute() ? env_dir : (cwd / env_dir).string();
  return true;
}

TriggerResult trigger_process(const TriggerOptions& o) {
  TriggerResult r;
  if (o.pid == 0) {
    r.error = "no pid";
    return r;
  }
  // The kernel's rule for signals (same real or effective uid, or root) is
  // the rule for triggers too.
  if (kill(static_cast<pid_t>(o.pid), 0) != 0) {
    r.error = errno == EPERM ? "pid " + std::to_string(o.pid) + " belongs to another user: not permitted"
                             : "pid " + std::to_string(o.pid) + ": " + std::strerror(errno);
    return r;
  }
  r.dir = o.dir;
  if (r.dir.empty() && !find_ringprof_dir(o.pid, &r.dir, &r.error)) return r;
  const std::string request = control::request_path(r.dir, o.pid);
  const std::string answer = control::answer_path(r.dir, o.pid);
  unlink(answer.c_str());  // a stale answer from an earlier request
  TriggerRequest req;
  req.steps = o.steps;
  req.duration_ns = o.duration_ns;
  if (const int err = control::write_file_atomically(request, control::format_request(req)); err != 0) {
    r.error = "cannot write " + request + ": " + std::strerror(err);
    return r;
  }
  const uint64_t step_ns = 10'000'000;
  for (uint64_t waited = 0; waited <= o.timeout_ns; waited += step_ns) {
    const std::string text = read_answer(answer);
    uint64_t id = 0;
    if (!text.empty() && control::parse_answer(text, &id)) {
      unlink(answer.c_str());
      if (id == 0) {
        r.error = "pid " + std::to_string(o.pid) + " is not recording";
        return r;
      }
      r.window_id = id;
      r.ok = true;
      return r;
    }
    timespec ts{0, static_cast<long>(step_ns)};
    nanosleep(&ts, nullptr);
  }
  unlink(request.c_str());
  r.error = "pid " + std::to_string(o.pid) + " did not answer within the timeout (not recording with ringprof, "
            "RINGPROF_TRIGGER_POLL_MS=0, or another directory than " + r.dir + "?)";
  return r;
}

}  // namespace ringprof

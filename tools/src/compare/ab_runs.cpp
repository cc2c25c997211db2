// `ringprof ab`: base and head runs, interleaved or side by side (ab_runs.h).
#include "ringprof/tools/ab_runs.h"

#include <fcntl.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

extern char** environ;

namespace ringprof {

namespace {

namespace fs = std::filesystem;

struct Child {
  pid_t pid = -1;
  std::string what;  // "base run 3"
};

// Starts `command` under /bin/sh -c recording into `dir`, pinned to `cpu`
// when it is not negative.
Child start(const AbOptions& o, const std::string& command, const fs::path& dir, int cpu, const std::string& what,
            std::string& error) {
  std::vector<std::string> env;
  bool mode_set = false;
  for (char** e = environ; *e; ++e) {
    const std::string v = *e;
    if (v.rfind("RINGPROF_DIR=", 0) == 0) continue;
    mode_set = mode_set || v.rfind("RINGPROF_MODE=", 0) == 0;
    env.push_back(v);
  }
  env.push_back("RINGPROF_DIR=" + dir.string());
  if (!mode_set) env.push_back("RINGPROF_MODE=detailed");
  std::vector<char*> envp;
  for (std::string& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  const char* argv[] = {"/bin/sh", "-c", command.c_str(), nullptr};
  Child c;
  c.what = what;
  c.pid = fork();
  if (c.pid < 0) {
    error = std::string("cannot fork: ") + std::strerror(errno);
    return c;
  }
  if (c.pid == 0) {
    if (cpu >= 0) {
      cpu_set_t set;
      CPU_ZERO(&set);
      CPU_SET(cpu, &set);
      sched_setaffinity(0, sizeof set, &set);
    }
    if (!o.show_output) {
      const int null = open("/dev/null", O_WRONLY);
      if (null >= 0) {
        dup2(null, 1);
        dup2(null, 2);
      }
    }
    execve("/bin/sh", const_cast<char* const*>(argv), envp.data());
    _exit(127);
  }
  return c;
}

// Waits for it; false with `error` and `status` set when it did not exit 0.
bool finish(const Child& c, std::string& error, int& status_out) {
  int status = 0;
  while (waitpid(c.pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return true;
  status_out = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  error = "the " + c.what + " " +
          (WIFEXITED(status) ? "exited with status " + std::to_string(WEXITSTATUS(status))
                             : "was killed by signal " + std::to_string(WTERMSIG(status)));
  return false;
}

// Two CPUs this process may run on, for a duet; false when it has fewer.
bool two_cpus(int& a, int& b) {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) != 0) return false;
  a = b = -1;
  for (int i = 0; i < CPU_SETSIZE; ++i) {
    if (!CPU_ISSET(i, &set)) continue;
    (a < 0 ? a : b) = i;
    if (b >= 0) return true;
  }
  return false;
}

std::string run_name(uint32_t i) {
  char b[16];
  std::snprintf(b, sizeof b, "run-%02u", i);
  return b;
}

}  // namespace

AbResult run_ab(const AbOptions& o, void (*progress)(const std::string&)) {
  AbResult r;
  const fs::path out(o.out_dir);
  std::error_code ec;
  for (const char* side : {"base", "head", "warmup"}) fs::remove_all(out / side, ec);
  fs::create_directories(out / "base", ec);
  if (!ec) fs::create_directories(out / "head", ec);
  if (ec) {
    r.error = "cannot create " + (out / "head").string() + ": " + ec.message();
    return r;
  }
  int cpu_a = -1, cpu_b = -1;
  if (o.duet && !two_cpus(cpu_a, cpu_b)) {
    r.error = "--duet needs two CPUs, and this process may run on one";
    return r;
  }
  const uint32_t rounds = o.warmup + o.runs;
  for (uint32_t round = 0; round < rounds && r.error.empty(); ++round) {
    const bool warm = round < o.warmup;
    const uint32_t n = warm ? round + 1 : round - o.warmup + 1;
    const fs::path base_dir = warm ? out / "warmup" / "base" / run_name(n) : out / "base" / run_name(n);
    const fs::path head_dir = warm ? out / "warmup" / "head" / run_name(n) : out / "head" / run_name(n);
    const std::string label = warm ? " warm-up run " : " run ";
    // Base first in even rounds, head first in odd ones: ABBA…
    const bool head_first = round % 2 == 1;
    if (o.duet) {
      if (progress) progress("base and head" + label + std::to_string(n));
      // Each side on one CPU, swapped every round.
      Child b =
          start(o, o.base_command, base_dir, head_first ? cpu_b : cpu_a, "base" + label + std::to_string(n), r.error);
      if (b.pid < 0) break;
      Child h =
          start(o, o.head_command, head_dir, head_first ? cpu_a : cpu_b, "head" + label + std::to_string(n), r.error);
      if (h.pid < 0) {
        std::string ignored;
        int s = 0;
        finish(b, ignored, s);
        break;
      }
      std::string e1, e2;
      int s1 = 0, s2 = 0;
      const bool ok1 = finish(b, e1, s1), ok2 = finish(h, e2, s2);
      if (!ok1 || !ok2) {
        r.error = !ok1 ? e1 : e2;
        r.failed_status = !ok1 ? s1 : s2;
        break;
      }
      if (!warm) r.order.push_back("base " + std::to_string(n) + " + head " + std::to_string(n));
    } else {
      for (int k = 0; k < 2; ++k) {
        const bool head = (k == 0) == head_first;
        const std::string what = std::string(head ? "head" : "base") + label + std::to_string(n);
        if (progress) progress(what);
        Child c = start(o, head ? o.head_command : o.base_command, head ? head_dir : base_dir, -1, what, r.error);
        if (c.pid < 0 || !finish(c, r.error, r.failed_status)) break;
        if (!warm) r.order.push_back(std::string(head ? "head " : "base ") + std::to_string(n));
      }
    }
    if (!warm && r.error.empty()) {
      r.base_runs.push_back(base_dir.string());
      r.head_runs.push_back(head_dir.string());
    }
  }
  fs::remove_all(out / "warmup", ec);
  return r;
}

}  // namespace ringprof

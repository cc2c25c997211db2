// `ringprof overhead`: runs a command at each level, interleaved, and
// compares (overhead.h).
#include "ringprof/tools/overhead.h"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/small_file.h"

extern char** environ;

namespace ringprof {

namespace {

namespace fs = std::filesystem;

uint64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

// The executable a command names: as given when it holds a '/', else the
// first match on PATH ("" when none).
std::string find_program(const std::string& name) {
  if (name.find('/') != std::string::npos) return name;
  const char* path = std::getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    const fs::path p = fs::path(dir.empty() ? "." : dir) / name;
    if (access(p.c_str(), X_OK) == 0) return p.string();
  }
  return {};
}

// Whether an executable is linked against ringprof (it then starts recording
// itself, or through RINGPROF_AUTOSTART, and must not get a second copy).
bool names_ringprof(const std::string& path) {
  // Never waits on a FIFO named as the command; an executable larger than
  // 1 GiB is read in its first GiB.
  std::string bytes, why;
  if (!internal::read_small_file(path, size_t{1} << 30, &bytes, &why, /*follow_links=*/true)) return false;
  for (const char* mark : {"libringprof.so", "_ZN8ringprof5start", "ringprof_start"})
    if (bytes.find(mark) != std::string::npos) return true;
  return false;
}

// libringprof.so beside this tool: installed (bin/../lib...) or in a build
// tree (tools/../libringprof.so).
std::string find_library() {
  std::error_code ec;
  const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return {};
  const fs::path bin = exe.parent_path();
  std::vector<fs::path> candidates = {bin / "../lib/libringprof.so", bin / "../lib64/libringprof.so",
                                      bin / "../libringprof.so"};
  for (const auto& entry : fs::directory_iterator(bin / "../lib", ec))
    candidates.push_back(entry.path() / "libringprof.so");  // multiarch: lib/x86_64-linux-gnu
  for (const fs::path& c : candidates)
    if (fs::is_regular_file(c, ec)) return fs::canonical(c, ec).string();
  return {};
}

uint64_t parse_field(const std::string& line, const char* key) {
  const std::string k = std::string("\"") + key + "\":";
  const size_t at = line.find(k);
  return at == std::string::npos ? 0 : std::strtoull(line.c_str() + at + k.size(), nullptr, 10);
}

// ringprof's own CPU time over every session the run's processes recorded.
uint64_t ringprof_cpu_from(const fs::path& stats) {
  std::ifstream in(stats);
  uint64_t total = 0;
  for (std::string line; std::getline(in, line);)
    total += parse_field(line, "drainer_cpu_ns") + parse_field(line, "writer_cpu_ns");
  return total;
}

uint64_t bytes_under(const fs::path& dir) {
  std::error_code ec;
  uint64_t total = 0;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec))
    if (it->is_regular_file(ec)) total += it->file_size(ec);
  return total;
}

struct Runner {
  const OverheadOptions& options;
  std::string program;
  std::string library;
  bool preload = false;
  fs::path work;

  // The environment of one run: this process's, without what ringprof's
  // levels set, then the level's.
  std::vector<std::string> environment(const std::string& level, const fs::path& dir, const fs::path& stats) const {
    static const char* kOurs[] = {"RINGPROF_DISABLE=", "RINGPROF_MODE=", "RINGPROF_DIR=", "RINGPROF_STATS_FILE=",
                                  "RINGPROF_AUTOSTART="};
    std::vector<std::string> env;
    std::string ld_preload;
    for (char** e = environ; *e; ++e) {
      const std::string v = *e;
      bool ours = false;
      for (const char* k : kOurs) ours = ours || v.rfind(k, 0) == 0;
      if (v.rfind("LD_PRELOAD=", 0) == 0) {
        ld_preload = v.substr(11);
        continue;
      }
      if (!ours) env.push_back(v);
    }
    if (level == "off") {
      env.push_back("RINGPROF_DISABLE=1");
      if (!ld_preload.empty()) env.push_back("LD_PRELOAD=" + ld_preload);
      return env;
    }
    env.push_back("RINGPROF_MODE=" + level);
    env.push_back("RINGPROF_DIR=" + dir.string());
    env.push_back("RINGPROF_STATS_FILE=" + stats.string());
    if (preload) {
      env.push_back("RINGPROF_AUTOSTART=1");
      env.push_back("LD_PRELOAD=" + library + (ld_preload.empty() ? "" : ":" + ld_preload));
    } else if (!ld_preload.empty()) {
      env.push_back("LD_PRELOAD=" + ld_preload);
    }
    return env;
  }

  // One run; false with `error` set when it could not run or did not exit 0.
  bool run(const std::string& level, uint32_t round, OverheadRun& out, std::string& error, int& status_out) const {
    const fs::path dir = work / (level + "-" + std::to_string(round));
    const fs::path stats = work / (level + "-" + std::to_string(round) + ".stats");
    const std::vector<std::string> env_strings = environment(level, dir, stats);
    std::vector<char*> argv, envp;
    for (const std::string& a : options.command) argv.push_back(const_cast<char*>(a.c_str()));
    argv.push_back(nullptr);
    for (const std::string& e : env_strings) envp.push_back(const_cast<char*>(e.c_str()));
    envp.push_back(nullptr);
    int fds[2];
    if (pipe2(fds, O_CLOEXEC) != 0) {
      error = std::string("cannot create a pipe: ") + std::strerror(errno);
      return false;
    }
    const uint64_t t0 = now_ns();
    const pid_t pid = fork();
    if (pid < 0) {
      close(fds[0]);
      close(fds[1]);
      error = std::string("cannot fork: ") + std::strerror(errno);
      return false;
    }
    if (pid == 0) {
      close(fds[0]);
      if (!options.show_output) {
        const int null = open("/dev/null", O_WRONLY);
        if (null >= 0) {
          dup2(null, 1);
          dup2(null, 2);
        }
      }
      execve(program.c_str(), argv.data(), envp.data());
      const int e = errno;
      ssize_t ignored = write(fds[1], &e, sizeof e);  // the parent reports it
      (void)ignored;
      _exit(127);
    }
    close(fds[1]);
    int exec_errno = 0;
    const bool exec_failed = read(fds[0], &exec_errno, sizeof exec_errno) == static_cast<ssize_t>(sizeof exec_errno);
    close(fds[0]);
    int status = 0;
    rusage ru{};
    while (wait4(pid, &status, 0, &ru) < 0 && errno == EINTR) {
    }
    out.wall_ns = now_ns() - t0;
    if (exec_failed) {
      error = "cannot run '" + options.command[0] + "': " + std::strerror(exec_errno);
      status_out = 127;
      return false;
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      status_out = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      error = "the command " +
              (WIFEXITED(status) ? "exited with status " + std::to_string(WEXITSTATUS(status))
                                 : "was killed by signal " + std::to_string(WTERMSIG(status))) +
              " (level " + level + ", round " + std::to_string(round + 1) + ")";
      return false;
    }
    auto tv_ns = [](const timeval& t) {
      return static_cast<uint64_t>(t.tv_sec) * 1000000000ull + static_cast<uint64_t>(t.tv_usec) * 1000ull;
    };
    out.cpu_ns = tv_ns(ru.ru_utime) + tv_ns(ru.ru_stime);
    out.max_rss_bytes = static_cast<uint64_t>(ru.ru_maxrss) * 1024;
    out.ringprof_cpu_ns = ringprof_cpu_from(stats);
    out.bytes_written = bytes_under(dir);
    if (options.work_dir.empty()) {  // else kept (--keep)
      std::error_code ec;
      fs::remove_all(dir, ec);
      fs::remove(stats, ec);
    }
    return true;
  }
};

template <typename T, typename F>
std::vector<uint64_t> sorted_values(const std::vector<T>& runs, F f) {
  std::vector<uint64_t> v;
  for (const T& r : runs) v.push_back(f(r));
  std::sort(v.begin(), v.end());
  return v;
}

void summarize(OverheadResult& r) {
  const OverheadLevel* off = nullptr;
  for (const OverheadLevel& l : r.levels)
    if (l.level == "off") off = &l;
  const double z = simultaneous_z(r.levels.size() > 1 ? r.levels.size() - 1 : 1);
  const auto off_wall = off ? sorted_values(off->runs, [](const OverheadRun& x) { return x.wall_ns; })
                            : std::vector<uint64_t>{};
  const auto off_cpu = off ? sorted_values(off->runs, [](const OverheadRun& x) { return x.cpu_ns; })
                           : std::vector<uint64_t>{};
  for (OverheadLevel& l : r.levels) {
    const auto wall = sorted_values(l.runs, [](const OverheadRun& x) { return x.wall_ns; });
    const auto cpu = sorted_values(l.runs, [](const OverheadRun& x) { return x.cpu_ns; });
    l.wall_s_median = median_of_sorted(wall) / 1e9;
    l.cpu_s_median = median_of_sorted(cpu) / 1e9;
    l.max_rss_mib_median =
        median_of_sorted(sorted_values(l.runs, [](const OverheadRun& x) { return x.max_rss_bytes; })) / (1024.0 * 1024.0);
    l.bytes_written = static_cast<uint64_t>(median_of_sorted(sorted_values(l.runs, [](const OverheadRun& x) { return x.bytes_written; })));
    std::vector<uint64_t> share;  // ringprof CPU per wall, in millionths of a core
    for (const OverheadRun& x : l.runs)
      share.push_back(x.wall_ns ? x.ringprof_cpu_ns * 1000000 / x.wall_ns : 0);
    std::sort(share.begin(), share.end());
    l.drainer_cpu_pct = median_of_sorted(share) / 1e4;
    if (&l != off && !off_wall.empty() && !wall.empty()) {
      l.slowdown = median_change(off_wall, wall, z);
      l.cpu_change = median_change(off_cpu, cpu, z);
    }
  }
}

}  // namespace

OverheadResult measure_overhead(const OverheadOptions& options, void (*progress)(const std::string&)) {
  OverheadResult r;
  std::vector<std::string> levels = options.levels;
  levels.erase(std::remove(levels.begin(), levels.end(), "off"), levels.end());
  levels.insert(levels.begin(), "off");  // the baseline, always measured
  for (const std::string& l : levels) r.levels.push_back(OverheadLevel{l, {}, 0, 0, 0, {}, {}, 0, 0});
  Runner runner{options, {}, {}, false, {}};
  if (options.command.empty()) {
    r.error = "no command given (after --)";
    return r;
  }
  runner.program = find_program(options.command[0]);
  if (runner.program.empty()) {
    r.error = "cannot run '" + options.command[0] + "': not found on PATH";
    r.failed_status = 127;
    return r;
  }
  runner.preload = options.preload == Preload::Always ||
                   (options.preload == Preload::Auto && !names_ringprof(runner.program));
  if (runner.preload) {
    runner.library = options.library.empty() ? find_library() : options.library;
    if (runner.library.empty() || access(runner.library.c_str(), R_OK) != 0) {
      r.error = "cannot find libringprof.so to preload into '" + options.command[0] + "' (give --library PATH)";
      return r;
    }
  }
  r.preloaded = runner.preload;
  std::error_code ec;
  std::string base = options.work_dir;
  if (base.empty()) {
    std::string tmpl = (fs::temp_directory_path(ec) / "ringprof-overhead-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) {
      r.error = "cannot make a temporary directory: " + std::string(std::strerror(errno));
      return r;
    }
    base = tmpl;
  } else {
    fs::create_directories(base, ec);
  }
  runner.work = base;
  const uint32_t rounds = options.warmup + options.runs;
  for (uint32_t round = 0; round < rounds && r.error.empty(); ++round) {
    for (size_t k = 0; k < r.levels.size() && r.error.empty(); ++k) {
      OverheadLevel& level = r.levels[(k + round) % r.levels.size()];  // the order rotates each round
      OverheadRun run;
      if (!runner.run(level.level, round, run, r.error, r.failed_status)) break;
      if (round >= options.warmup) level.runs.push_back(run);
    }
    if (progress && r.error.empty())
      progress("round " + std::to_string(round + 1) + " of " + std::to_string(rounds) +
               (round < options.warmup ? " (warm-up)" : ""));
  }
  if (options.work_dir.empty()) fs::remove_all(base, ec);
  summarize(r);
  return r;
}

bool slowdown_above(const OverheadResult& result, double pct) {
  for (const OverheadLevel& l : result.levels)
    if (l.level != "off" && l.slowdown.known && l.slowdown.ci_low_pct > pct) return true;
  return false;
}

}  // namespace ringprof

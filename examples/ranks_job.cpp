// ringprof ranks job: a CPU-only "distributed training" job on one machine,
// for trying `ringprof ranks` without GPUs, MPI or torchrun (and used by a
// test).
//
// The parent forks WORLD processes (the ranks) and waits for them. Each rank
// states its identity the way torchrun would (RANK, LOCAL_RANK, WORLD_SIZE,
// TORCHELASTIC_RUN_ID), records into OUT_DIR/rank-K and runs STEPS steps of
//   forward     WORK µs waiting (as for a GPU's kernels: no CPU taken)
//   extra_work  EXTRA µs more of CPU work, on the straggler rank only
//   all_reduce  a barrier shared by all ranks, marked as a collective
// so every rank but the straggler waits in all_reduce for about EXTRA µs a
// step, which is what `ringprof ranks` should find.
//
//   ringprof_ranks_job OUT_DIR [--world N] [--straggler R] [--extra-us E]
//                      [--work-us W] [--steps S]
//   (defaults: 4 ranks, straggler 2, 2000 µs extra, 500 µs work, 200 steps;
//    --straggler -1: no straggler; other RINGPROF_* variables apply to every rank)
//
//   ringprof_ranks_job /tmp/job && ringprof ranks /tmp/job
#include <ringprof/ringprof.h>

#include <pthread.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <string>
#include <system_error>
#include <thread>
#include <vector>

namespace {

struct Options {
  std::string out_dir;
  long world = 4;
  long straggler = 2;  // -1: none
  long extra_us = 2000;
  long work_us = 500;
  long steps = 200;
};

constexpr const char* kUsage =
    "usage: ringprof_ranks_job OUT_DIR [--world N] [--straggler R] [--extra-us E] [--work-us W] [--steps S]";

[[noreturn]] void usage_error(const std::string& why) {
  std::fprintf(stderr, "ringprof_ranks_job: %s (%s)\n", why.c_str(), kUsage);
  std::exit(1);
}

// A whole decimal number in [lo, hi], or a usage error naming the option.
long parse_number(const char* option, const char* text, long lo, long hi) {
  errno = 0;
  char* end = nullptr;
  const long v = std::strtol(text, &end, 10);
  if (errno != 0 || end == text || *end != '\0' || v < lo || v > hi) {
    usage_error(std::string(option) + " wants a number from " + std::to_string(lo) + " to " + std::to_string(hi) +
                ", not '" + text + "'");
  }
  return v;
}

Options parse_args(int argc, char** argv) {
  Options o;
  bool have_dir = false;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "-h" || a == "--help") {
      std::printf("%s\n", kUsage);
      std::exit(0);
    }
    if (a.rfind("--", 0) == 0) {
      if (i + 1 >= argc) usage_error(a + " wants a value");
      const char* v = argv[++i];
      // Bounds keep a step's spins and the number of processes sane; a day
      // of spinning per step is no one's intent.
      if (a == "--world") o.world = parse_number("--world", v, 1, 1024);
      else if (a == "--straggler") o.straggler = parse_number("--straggler", v, -1, 1023);
      else if (a == "--extra-us") o.extra_us = parse_number("--extra-us", v, 0, 60'000'000);
      else if (a == "--work-us") o.work_us = parse_number("--work-us", v, 0, 60'000'000);
      else if (a == "--steps") o.steps = parse_number("--steps", v, 0, 100'000'000);
      else usage_error("unknown option " + a);
    } else if (!have_dir && !a.empty()) {
      o.out_dir = a;
      have_dir = true;
    } else {
      usage_error(a.empty() ? "OUT_DIR is empty" : "one OUT_DIR only, '" + a + "' is a second");
    }
  }
  if (!have_dir) usage_error("OUT_DIR is missing");
  if (o.straggler >= o.world) {
    usage_error("--straggler " + std::to_string(o.straggler) + " is not a rank of a world of " +
                std::to_string(o.world) + " (-1 for none)");
  }
  return o;
}

// Busy CPU until a deadline on the steady clock: the zone lasts `us` of wall
// time even when the process is preempted (4 ranks on 2 cores are), so every
// run of the job has the same shape whatever else the machine does. It
// yields as it spins: on a machine with fewer free cores than ranks, a rank
// woken to enter the collective then gets a core at once instead of waiting
// for the spinning one's time slice, which would make it look late too.
void spin_for(long us) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::microseconds(us);
  while (std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
}

void barrier_wait(pthread_barrier_t* barrier, int rank) {
  const int rc = pthread_barrier_wait(barrier);
  if (rc != 0 && rc != PTHREAD_BARRIER_SERIAL_THREAD) {
    std::fprintf(stderr, "ringprof_ranks_job: rank %d: pthread_barrier_wait: %s\n", rank, std::strerror(rc));
    _exit(1);
  }
}

// One rank, in a forked child. Never returns: the parent's stack and its
// atexit handlers are not the child's to unwind.
[[noreturn]] void run_rank(const Options& o, int rank, pid_t parent, pthread_barrier_t* barrier) {
  // A parent killed from outside (a test's timeout) must not leave its ranks
  // blocked in the barrier forever. The getppid() check closes the window in
  // which the parent died before prctl() was called.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != parent) _exit(1);

  // The identity, as torchrun sets it, before start(): ringprof reads it then
  // and every file states it from its first segment on.
  const std::string r = std::to_string(rank);
  const std::string dir = o.out_dir + "/rank-" + r;
  if (setenv("RANK", r.c_str(), 1) != 0 || setenv("LOCAL_RANK", r.c_str(), 1) != 0 ||
      setenv("WORLD_SIZE", std::to_string(o.world).c_str(), 1) != 0 ||
      setenv("TORCHELASTIC_RUN_ID", ("ranks-job-" + std::to_string(parent)).c_str(), 1) != 0 ||
      setenv("RINGPROF_DIR", dir.c_str(), 1) != 0) {
    std::fprintf(stderr, "ringprof_ranks_job: rank %d: setenv: %s\n", rank, std::strerror(errno));
    _exit(1);
  }
  // Started as any program starts it: the rest of the configuration comes
  // from the RINGPROF_* variables. A rank that records nothing defeats the
  // job's purpose, so it fails (and the parent ends the others).
  if (!ringprof::start()) {
    std::fprintf(stderr, "ringprof_ranks_job: rank %d: ringprof did not start\n", rank);
    _exit(1);
  }
  ringprof::set_thread_name("trainer");
  // Ranks start at different moments (fork order, start()'s clock
  // calibration): meet once first, as init_process_group() does, so that step
  // 0 is not blamed for the start-up's spread.
  barrier_wait(barrier, rank);

  for (long s = 0; s < o.steps; ++s) {
    ringprof::step(static_cast<uint64_t>(s));
    {
      RINGPROF_ZONE("forward");
      // Sleeping, not spinning: on a machine with fewer cores than ranks,
      // spinning ranks would delay each other by however the scheduler
      // shares the cores, and blur the one delay the job is about.
      std::this_thread::sleep_for(std::chrono::microseconds(o.work_us));
    }
    if (rank == o.straggler) {
      RINGPROF_ZONE("extra_work");
      spin_for(o.extra_us);
    }
    {
      RINGPROF_ZONE("all_reduce");
      // A collective of the group "world": the zone's end is where all ranks
      // meet, which is what lets the tools line up the ranks and see who the
      // others waited for. (A barrier is synchronous; an NCCL launch is not.)
      ringprof::mark_collective("world");
      barrier_wait(barrier, rank);
    }
  }
  // Every rank is past its last step before any stops: a rank that stopped
  // early would look like one that stopped taking part.
  barrier_wait(barrier, rank);
  // _exit() runs no exit handlers, so ringprof's flush at exit does not run
  // either: stop() writes and seals the files first.
  ringprof::stop();
  _exit(0);
}

void kill_all(const std::vector<pid_t>& children) {
  for (pid_t c : children) {
    if (c > 0) kill(c, SIGKILL);
  }
  for (pid_t c : children) {
    if (c > 0) waitpid(c, nullptr, 0);
  }
}

std::string describe(int status) {
  if (WIFEXITED(status)) return "exited with status " + std::to_string(WEXITSTATUS(status));
  if (WIFSIGNALED(status)) return std::string("was killed by signal ") + strsignal(WTERMSIG(status));
  return "stopped";
}

}  // namespace

int main(int argc, char** argv) {
  const Options o = parse_args(argc, argv);
  const auto started = std::chrono::steady_clock::now();

  std::error_code ec;
  std::filesystem::create_directories(o.out_dir, ec);
  if (ec) {
    std::fprintf(stderr, "ringprof_ranks_job: cannot create %s: %s\n", o.out_dir.c_str(), ec.message().c_str());
    return 1;
  }

  // The ranks' all_reduce: a barrier in memory that survives fork() shared,
  // not copied, so all N processes wait on the same one.
  void* mem = mmap(nullptr, sizeof(pthread_barrier_t), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (mem == MAP_FAILED) {
    std::fprintf(stderr, "ringprof_ranks_job: mmap: %s\n", std::strerror(errno));
    return 1;
  }
  auto* barrier = static_cast<pthread_barrier_t*>(mem);
  pthread_barrierattr_t attr;
  int rc = pthread_barrierattr_init(&attr);
  if (rc == 0) rc = pthread_barrierattr_setpshared(&attr, PTHREAD_PROCESS_SHARED);
  if (rc == 0) rc = pthread_barrier_init(barrier, &attr, static_cast<unsigned>(o.world));
  if (rc != 0) {
    std::fprintf(stderr, "ringprof_ranks_job: pthread_barrier_init: %s\n", std::strerror(rc));
    return 1;
  }
  pthread_barrierattr_destroy(&attr);

  // Nothing buffered may be written twice, by the parent and by a child.
  std::fflush(nullptr);
  const pid_t parent = getpid();
  std::vector<pid_t> children;
  for (int k = 0; k < o.world; ++k) {
    const pid_t pid = fork();
    if (pid < 0) {
      std::fprintf(stderr, "ringprof_ranks_job: fork: %s\n", std::strerror(errno));
      kill_all(children);  // they would wait in the barrier for a rank that never comes
      return 1;
    }
    if (pid == 0) run_rank(o, k, parent, barrier);
    children.push_back(pid);
  }

  // A rank that dies leaves the others blocked in the barrier for good: on
  // the first failure, end them all.
  for (size_t left = children.size(); left > 0;) {
    int status = 0;
    const pid_t pid = waitpid(-1, &status, 0);
    if (pid < 0) {
      if (errno == EINTR) continue;
      std::fprintf(stderr, "ringprof_ranks_job: waitpid: %s\n", std::strerror(errno));
      kill_all(children);
      return 1;
    }
    size_t k = 0;
    while (k < children.size() && children[k] != pid) ++k;
    if (k == children.size()) continue;  // not a rank of ours
    children[k] = 0;
    --left;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
      std::fprintf(stderr, "ringprof_ranks_job: rank %zu %s; ending the other ranks\n", k, describe(status).c_str());
      kill_all(children);
      return 1;
    }
  }

  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  std::printf("ringprof_ranks_job: %ld ranks x %ld steps in %.2f s (straggler %ld); files in %s/rank-*\n", o.world,
              o.steps, seconds, o.straggler, o.out_dir.c_str());
  return 0;
}

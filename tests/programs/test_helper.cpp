// A program the end-to-end tests run as a child process, linked against the
// shared libringprof like an application would be.
//
//   ringprof_test_helper record THREADS EVENTS END   each thread records EVENTS
//       counters (value = sequence number); END is "return" (from main),
//       "exit" (exit() from a worker thread) or "stop" (explicit stop()).
//       Calls start() unless RINGPROF_AUTOSTART already did. Prints
//       "recorded N written W dropped_ring R dropped_io I" on stdout.
//   ringprof_test_helper stream   records forever on two threads (kill tests);
//       prints "ready" once the first events were flushed.
//   ringprof_test_helper crash segv|abort|fpe|ill THREADS EVENTS   each thread
//       names itself "crash-T", records EVENTS counters "seq" (value i) and a
//       counter "done" (value T), then keeps recording "spin" zones; once all
//       are done the main thread records the instant "about-to-crash" and
//       crashes that way. Nothing is flushed on purpose.
//   ringprof_test_helper serve STEP_US   one thread steps forever: step(),
//       a "step_work" zone and a RINGPROF_ZONE_DETAIL "detail_work" zone,
//       STEP_US of work each; prints "ready" once files exist. SIGTERM ends it.
//   ringprof_test_helper schedule STEPS   RINGPROF_SCHEDULE / _DUTY_CYCLE from
//       the environment; STEPS steps as in serve (no sleeping), then stop();
//       prints "complete N" for every window-complete callback.
//   ringprof_test_helper fork   records "parent-before", forks; the child
//       records 100 "child-event" instants and exit(0)s; the parent waits,
//       records "parent-after" and returns. Prints "child PID".
#include <ringprof/ringprof.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

namespace {

void print_stats(uint64_t recorded) {
  const ringprof::RecorderStats s = ringprof::recorder_stats();
  std::printf("recorded %llu written %llu dropped_ring %llu dropped_io %llu\n",
              static_cast<unsigned long long>(recorded), static_cast<unsigned long long>(s.events_written),
              static_cast<unsigned long long>(s.dropped_ring), static_cast<unsigned long long>(s.dropped_io));
  std::fflush(stdout);
}

int record(int threads, uint64_t events, const std::string& end) {
  if (!ringprof::is_recording()) ringprof::start();
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([events, t] {
      ringprof::set_thread_name("rec-" + std::to_string(t));
      for (uint64_t i = 0; i < events; ++i) ringprof::counter("seq", static_cast<double>(i));
    });
  }
  for (auto& th : pool) th.join();
  const uint64_t recorded = static_cast<uint64_t>(threads) * events;
  if (end == "stop") {
    ringprof::stop();
    print_stats(recorded);
    return 0;
  }
  std::printf("recorded %llu\n", static_cast<unsigned long long>(recorded));
  std::fflush(stdout);
  if (end == "exit") {
    std::thread([] { std::exit(0); }).join();
  }
  return 0;
}

int stream() {
  ringprof::start();
  std::atomic<int> recording{0};  // threads that have recorded their first events
  auto body = [&](int t) {
    ringprof::set_thread_name("stream-" + std::to_string(t));
    for (uint64_t i = 0;; ++i) {
      RINGPROF_ZONE("tick");
      ringprof::counter("seq", static_cast<double>(i));
      if (i == 0) recording.fetch_add(1);
      // Pacing, part of the workload: a steady stream, not a flood.
      if (i % 64 == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  };
  std::thread a(body, 0), b(body, 1);
  // "ready" once both threads have recorded and that reached the files.
  while (recording.load() < 2) std::this_thread::sleep_for(std::chrono::microseconds(100));
  ringprof::flush();
  std::printf("ready\n");
  std::fflush(stdout);
  a.join();  // never returns: the test kills us
  b.join();
  return 0;
}

[[gnu::noinline]] void crash_now(const std::string& how) {
  if (how == "segv") {
    volatile int* null = nullptr;
    *null = 1;
  } else if (how == "abort") {
    std::abort();
  } else if (how == "fpe") {
    // A real idiv, written in assembly: in C++ a division by zero is UB,
    // which UBSan reports itself and gcc may fold away.
#if defined(__x86_64__) || defined(__i386__)
    int numerator = 7, zero = 0, quotient;
    asm volatile("cltd\n\tidivl %2" : "=a"(quotient) : "a"(numerator), "r"(zero) : "edx");
    (void)quotient;
#else
    raise(SIGFPE);
#endif
  } else if (how == "ill") {
    __builtin_trap();
  }
}

int crash(const std::string& how, int threads, uint64_t events) {
  ringprof::start();
  std::atomic<int> done{0};
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) {
    pool.emplace_back([&, t] {
      ringprof::set_thread_name("crash-" + std::to_string(t));
      for (uint64_t i = 0; i < events; ++i) ringprof::counter("seq", static_cast<double>(i));
      ringprof::counter("done", static_cast<double>(t));
      done.fetch_add(1);
      for (;;) {
        RINGPROF_ZONE("spin");
        std::this_thread::sleep_for(std::chrono::microseconds(50));  // pacing, part of the workload
      }
    });
  }
  while (done.load() < threads) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  RINGPROF_INSTANT("about-to-crash");
  crash_now(how);
  return 3;  // not reached
}

void one_step(int work_us) {
  ringprof::step();
  RINGPROF_ZONE("step_work");
  RINGPROF_ZONE_DETAIL("detail_work");
  if (work_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(work_us));
}

int serve(int step_us) {
  ringprof::start();
  ringprof::set_thread_name("server");
  for (int i = 0; i < 20; ++i) one_step(step_us);
  ringprof::flush();
  std::printf("ready\n");
  std::fflush(stdout);
  for (;;) one_step(step_us);
}

// Starts recording (the environment's configuration, samplers included) and
// records nothing: an idle process, for the tests of what ringprof's own
// threads cost it.
int idle() {
  ringprof::start();
  std::printf("ready\n");
  std::fflush(stdout);
  for (;;) pause();
}

int schedule(uint64_t steps) {
  ringprof::start();
  ringprof::on_window_complete([](uint64_t id) {
    std::printf("complete %llu\n", static_cast<unsigned long long>(id));
    std::fflush(stdout);
  });
  for (uint64_t i = 0; i < steps; ++i) one_step(0);
  ringprof::stop();
  return 0;
}

// A benchmark for diff's verdicts: ROUNDS rounds of a zone "steady" doing
// STEADY units of work and a zone "changed" doing CHANGED units (a unit:
// 1000 steps of a xorshift generator, about 1.9 µs here), so that a head
// built with more work in "changed" is a known regression.
uint64_t g_work_sink = 0;

void work_units(uint64_t units) {
  uint64_t x = 88172645463325252ull + g_work_sink;
  for (uint64_t i = 0; i < units * 1000; ++i) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
  }
  g_work_sink += x;
}

int work(uint64_t steady, uint64_t changed, uint64_t rounds) {
  ringprof::start();
  for (uint64_t i = 0; i < rounds; ++i) {
    {
      RINGPROF_ZONE("steady");
      work_units(steady);
    }
    {
      RINGPROF_ZONE("changed");
      work_units(changed);
    }
  }
  ringprof::stop();
  return g_work_sink == 42 ? 1 : 0;  // (uses the sink: the work is not optimized away)
}

int fork_test() {
  ringprof::start();
  RINGPROF_INSTANT("parent-before");
  const pid_t pid = fork();
  if (pid == 0) {
    for (int i = 0; i < 100; ++i) RINGPROF_INSTANT("child-event");
    std::exit(ringprof::is_recording() ? 1 : 0);  // the status says whether the child recorded
  }
  int status = 0;
  waitpid(pid, &status, 0);
  RINGPROF_INSTANT("parent-after");
  std::printf("child %d status %d\n", static_cast<int>(pid), WIFEXITED(status) ? WEXITSTATUS(status) : -1);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 5 && std::strcmp(argv[1], "record") == 0)
    return record(std::atoi(argv[2]), std::strtoull(argv[3], nullptr, 10), argv[4]);
  if (argc >= 2 && std::strcmp(argv[1], "stream") == 0) return stream();
  if (argc >= 5 && std::strcmp(argv[1], "crash") == 0)
    return crash(argv[2], std::atoi(argv[3]), std::strtoull(argv[4], nullptr, 10));
  if (argc >= 3 && std::strcmp(argv[1], "serve") == 0) return serve(std::atoi(argv[2]));
  if (argc >= 2 && std::strcmp(argv[1], "idle") == 0) return idle();
  if (argc >= 3 && std::strcmp(argv[1], "schedule") == 0) return schedule(std::strtoull(argv[2], nullptr, 10));
  if (argc >= 2 && std::strcmp(argv[1], "fork") == 0) return fork_test();
  if (argc >= 5 && std::strcmp(argv[1], "work") == 0)
    return work(std::strtoull(argv[2], nullptr, 10), std::strtoull(argv[3], nullptr, 10),
                std::strtoull(argv[4], nullptr, 10));
  std::fprintf(stderr, "usage: ringprof_test_helper record THREADS EVENTS return|exit|stop | stream\n");
  return 64;
}

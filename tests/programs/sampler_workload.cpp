// A program with CPU shares known by construction, for the sampling end-to-end
// test: it records through libringprof.so into RINGPROF_DIR, then the test
// reads the files with the ringprof CLI and checks the symbolized shares.
//
//   thread "before" (created before start()): 70% of its CPU in hot_a, 30% in hot_b
//   thread "after"  (created after start()):  hot_c only
//   main thread, after start(): dlopens the plugin and spins in it
//
// It prints "before=TID after=TID main=TID" so the test can select threads by
// tid. Each thread runs for a fixed amount of its own CPU time: argv[2] ms for
// "before" (default 1500), a third of that for the others.
#include <dlfcn.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "support/hot_chain.h"
#include "ringprof/ringprof.h"

namespace workload {
__attribute__((noinline)) uint64_t hot_a(uint64_t n) { RINGPROF_TEST_HOT_CHAIN(0x9e3779b97f4a7c15ull) }
__attribute__((noinline)) uint64_t hot_b(uint64_t n) { RINGPROF_TEST_HOT_CHAIN(0xbf58476d1ce4e5b9ull) }
__attribute__((noinline)) uint64_t hot_c(uint64_t n) { RINGPROF_TEST_HOT_CHAIN(0x94d049bb133111ebull) }
}  // namespace workload

namespace {

uint64_t thread_cpu_ns() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000000000ull + static_cast<uint64_t>(ts.tv_nsec);
}

long tid() { return syscall(SYS_gettid); }

constexpr uint64_t kUnit = 2000;  // iterations: a few microseconds
std::atomic<uint64_t> g_sink{0};
std::atomic<bool> g_started{false};

template <typename F>
void spin_cpu(uint64_t cpu_ns, F&& f) {
  const uint64_t until = thread_cpu_ns() + cpu_ns;
  uint64_t s = 0;
  while (thread_cpu_ns() < until)
    for (int k = 0; k < 8; ++k) s += f();
  g_sink += s;
}

}  // namespace

int main(int argc, char** argv) {
  const char* plugin = argc > 1 ? argv[1] : nullptr;
  // CPU time of thread "before", in ms (the others run a third of it).
  const uint64_t cpu_ns = (argc > 2 ? std::strtoull(argv[2], nullptr, 10) : 1500) * 1'000'000ull;

  std::atomic<long> before_tid{0};
  std::thread before([&] {
    pthread_setname_np(pthread_self(), "before");
    before_tid = tid();
    while (!g_started) std::this_thread::yield();
    // 7 units of hot_a for every 3 of hot_b: the same cost per iteration.
    spin_cpu(cpu_ns, [] { return workload::hot_a(7 * kUnit) + workload::hot_b(3 * kUnit); });
  });
  while (before_tid == 0) std::this_thread::yield();

  if (!ringprof::start()) {
    std::fprintf(stderr, "workload: ringprof did not start\n");
    return 1;
  }
  g_started = true;

  std::atomic<long> after_tid{0};
  std::thread after([&] {
    pthread_setname_np(pthread_self(), "after");
    after_tid = tid();
    spin_cpu(cpu_ns / 3, [] { return workload::hot_c(10 * kUnit); });
  });

  if (plugin != nullptr) {
    void* h = dlopen(plugin, RTLD_NOW);
    if (h == nullptr) {
      std::fprintf(stderr, "workload: dlopen %s: %s\n", plugin, dlerror());
      return 1;
    }
    using Spin = uint64_t (*)(uint64_t);
    auto spin = reinterpret_cast<Spin>(dlsym(h, "ringprof_plugin_spin"));
    if (spin == nullptr) return 1;
    spin_cpu(cpu_ns / 3, [spin] { return spin(10 * kUnit); });
  }
  before.join();
  after.join();
  std::printf("before=%ld after=%ld main=%ld\n", before_tid.load(), after_tid.load(), tid());
  ringprof::stop();
  return 0;
}

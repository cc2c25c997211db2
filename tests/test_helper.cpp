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
#include <ringprof/ringprof.h>

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
  auto body = [&](int t) {
    ringprof::set_thread_name("stream-" + std::to_string(t));
    for (uint64_t i = 0;; ++i) {
      RINGPROF_ZONE("tick");
      ringprof::counter("seq", static_cast<double>(i));
      if (i % 64 == 0) std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  };
  std::thread a(body, 0), b(body, 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(30));
  ringprof::flush();
  std::printf("ready\n");
  std::fflush(stdout);
  a.join();  // never returns: the test kills us
  b.join();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 5 && std::strcmp(argv[1], "record") == 0)
    return record(std::atoi(argv[2]), std::strtoull(argv[3], nullptr, 10), argv[4]);
  if (argc >= 2 && std::strcmp(argv[1], "stream") == 0) return stream();
  std::fprintf(stderr, "usage: ringprof_test_helper record THREADS EVENTS return|exit|stop | stream\n");
  return 64;
}

// A fresh process for BM_IdleFreshProcess (background_cost_bench.cpp), linked
// to libringprof.so as an application is: starts recording into DIR (the
// default configuration, with the CPU and heap samplers on or off), records
// nothing for 5 s, prints the drainer's and the writer's CPU together and
// each (ms), stops.
//
//   ringprof_bench_idle_child DIR 0|1
#include <chrono>
#include <cstdio>
#include <cstring>
#include <thread>

#include "ringprof/ringprof.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s DIR 0|1\n", argv[0]);
    return 2;
  }
  ringprof::Config c;
  c.dir = argv[1];
  c.gpu = false;
  if (std::strcmp(argv[2], "1") != 0) {
    c.sample_hz = 0;
    c.detailed_sample_hz = 0;
    c.heap_interval = 0;
  }
  if (!ringprof::start(c)) return 1;
  std::this_thread::sleep_for(std::chrono::seconds(5));
  const ringprof::RecorderStats s = ringprof::recorder_stats();
  std::printf("%.6f %.6f %.6f\n", static_cast<double>(s.drainer_cpu_ns + s.writer_cpu_ns) / 1e6,
              static_cast<double>(s.drainer_cpu_ns) / 1e6, static_cast<double>(s.writer_cpu_ns) / 1e6);
  std::fflush(stdout);
  ringprof::stop();
  return 0;
}

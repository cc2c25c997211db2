// The no-frame-pointer workload (built -O2 -fomit-frame-pointer, like
// unwind_lib.cpp): the main thread and one more each call into the library
// three calls deep, for a given number of rounds, recording with the
// settings of the environment (RINGPROF_*) as unwind_end_to_end_test sets them.
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "ringprof/ringprof.h"

extern "C" double uwlib_outer(double x, long n);

__attribute__((noinline)) double work_main(long rounds) {
  double s = 0;
  for (long r = 0; r < rounds; ++r) s += uwlib_outer(static_cast<double>(r), 20000);
  return s;
}

__attribute__((noinline)) double work_thread(long rounds) {
  double s = 0;
  for (long r = 0; r < rounds; ++r) s += uwlib_outer(static_cast<double>(r), 20000);
  return s;
}

int main(int argc, char** argv) {
  const long rounds = argc > 1 ? std::atol(argv[1]) : 10000;
  if (!ringprof::start()) return 1;
  double t = 0;
  std::thread other([&] { t = work_thread(rounds / 2); });
  const double s = work_main(rounds);
  other.join();
  ringprof::stop();
  std::printf("%.1f\n", s + t);
  return 0;
}

// A shared library built -O2 -fomit-frame-pointer (tests/CMakeLists.txt), as
// Debian builds its libraries: three calls deep, so a sampler that follows
// only frame pointers loses the callers. Each function works after its call,
// so none of the calls is a tail call.
#include <cmath>

extern "C" {

__attribute__((noinline)) double uwlib_inner(double x, long n) {
  double s = 0;
  for (long i = 0; i < n; ++i) s += std::sqrt(x + static_cast<double>(i)) * 1.0000001;
  return s;
}

__attribute__((noinline)) double uwlib_middle(double x, long n) {
  volatile double pad[8] = {x};  // a frame of its own size
  return uwlib_inner(pad[0] + 1, n) * 0.5 + pad[1];
}

__attribute__((noinline)) double uwlib_outer(double x, long n) {
  volatile double pad[24] = {x};
  return uwlib_middle(pad[0] * 2, n) * 0.5 + pad[3];
}
}

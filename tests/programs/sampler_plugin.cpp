// A tiny shared library that sampler_test dlopens after recording started:
// its module must appear in Batch::modules with its build ID, and samples
// taken while it runs must fall inside its executable range.
#include <cstdint>

extern "C" __attribute__((noinline, visibility("default"))) uint64_t ringprof_plugin_spin(uint64_t n) {
  uint64_t x = 12345;
  for (uint64_t i = 0; i < n; ++i) {
    x = x * 0x9e3779b97f4a7c15ull + i;
    asm volatile("" : "+r"(x));
  }
  return x;
}

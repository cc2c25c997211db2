// flops_recording — a recording of operators that carry their FLOPs, made
// with the library itself, for the report page's browser test (its FLOPs
// and FLOP/s columns against `ringprof table`).
//
//   ringprof_flops_recording DIR   records into DIR
//
// 20 calls of a 48 x 48 x 48 single-precision matrix product in a zone
// "matmul" with the argument flops = 2 * 48^3 (a multiply and an add per
// term, as torch.profiler counts them), each inside a zone "layer" without
// one; the same recording ringprof.torch makes of aten::mm under with_flops.
#include <cstdio>
#include <vector>

#include "ringprof/ringprof.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: ringprof_flops_recording DIR\n");
    return 2;
  }
  ringprof::Config c;
  c.dir = argv[1];
  c.sample_hz = 0;
  c.gpu = false;
  if (!ringprof::start(c)) return 1;
  constexpr int n = 48;
  std::vector<float> a(n * n, 1.5f), b(n * n, 0.5f), out(n * n);
  volatile float sink = 0;
  for (int call = 0; call < 20; ++call) {
    RINGPROF_ZONE("layer");
    RINGPROF_ZONE("matmul");
    ringprof::zone_arg("flops", int64_t{2} * n * n * n);
    for (int i = 0; i < n; ++i)
      for (int j = 0; j < n; ++j) {
        float s = 0;
        for (int k = 0; k < n; ++k) s += a[i * n + k] * b[k * n + j];
        out[i * n + j] = s;
      }
    sink = sink + out[call % (n * n)];
  }
  ringprof::stop();
  return 0;
}

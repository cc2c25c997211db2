// Writes a hand-placed recording of a GPU training loop, for the report
// page's browser test (tests/browser): the one recording it reads that has
// both steps and GPU work, so that the step chart's GPU parts and the GPU
// section come from the same process.
//
//   ringprof_gpu_steps_recording DIR   writes DIR/steps/ringprof-77-1-000000.rpf
//
// 30 steps of 2 ms (µs from each step's start): on the main thread a
// "data_loader" zone [0,300) and "forward" [300,900); on a worker thread
// "optimizer" [1200,1500); on the GPU a kernel "gemm" [350,1000), an NCCL
// all-reduce [900,1300) (100 µs of it under the kernel), a copy
// [1350,1400), and nothing else: the GPU idles [0,350), [1300,1350) and
// [1400,2000), of which zones cover [0,350), [1300,1350) and [1400,1500).
// Every fifth step the forward zone and the kernel run 500 µs longer.
#include <cstdio>
#include <string>

#include "support/job_builder.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: ringprof_gpu_steps_recording DIR\n");
    return 2;
  }
  using ringprof::GpuKind;
  constexpr uint64_t kUs = 1000;
  ringprof::test::SimRank r({"trainer-host", 1'000'000'000ull, 0}, 77, -1, -1, "");
  ringprof::test::TraceBuilder& b = r.builder();
  const uint32_t worker = b.thread(78, "optimizer-thread");
  const uint32_t optimizer = r.loc("optimizer");
  const std::string nccl = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)";
  uint64_t t = 10'000 * kUs;
  for (uint64_t s = 0; s <= 30; ++s) {
    const uint64_t extra = s % 5 == 4 ? 500 * kUs : 0;
    r.step(t, s);
    if (s == 30) break;  // the mark that ends step 29
    r.zone("data_loader", t, t + 300 * kUs);
    r.zone("forward", t + 300 * kUs, t + 900 * kUs + extra);
    b.begin(worker, r.at(t + 1200 * kUs + extra), optimizer);
    b.end(worker, r.at(t + 1500 * kUs + extra));
    r.gpu(GpuKind::Kernel, "gemm", t + 350 * kUs, t + 1000 * kUs + extra);
    r.gpu(GpuKind::Kernel, nccl, t + 900 * kUs + extra, t + 1300 * kUs + extra);
    r.gpu(GpuKind::Memcpy, "", t + 1350 * kUs + extra, t + 1400 * kUs + extra);
    if (s % 10 == 9) r.flush();
    t += 2000 * kUs + extra;
  }
  const std::string path = r.write(argv[1], "steps");
  std::printf("%s\n", path.c_str());
  return 0;
}

// A CUDA program with a known number of GPU operations, for device_checks.sh:
// ringprof must see exactly these counts (`ringprof gpu` and `ringprof info`).
//
//   add_one   kernel launches   kAddLaunches
//   scale     kernel launches   kScaleLaunches
//   HtoD      copies            kCopiesEachWay
//   DtoH      copies            kCopiesEachWay
//   memsets                     kMemsets
//   NVTX ranges                 kRanges ("iteration")
//
// It prints the expected counts as "expect NAME N" lines, which the script
// compares with what ringprof recorded.
#include <cuda_runtime.h>
#include <nvtx3/nvToolsExt.h>

#include <cstdio>
#include <cstdlib>

namespace {

constexpr int kAddLaunches = 100;
constexpr int kScaleLaunches = 50;
constexpr int kCopiesEachWay = 20;
constexpr int kMemsets = 10;
constexpr int kRanges = 10;
constexpr int kN = 1 << 20;

__global__ void add_one(float* x, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] += 1.0f;
}

__global__ void scale(float* x, float s, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= s;
}

void check(cudaError_t e, const char* what) {
  if (e != cudaSuccess) {
    std::fprintf(stderr, "known_counts: %s: %s\n", what, cudaGetErrorString(e));
    std::exit(1);
  }
}

}  // namespace

int main() {
  float* host = nullptr;
  float* dev = nullptr;
  check(cudaMallocHost(&host, kN * sizeof(float)), "cudaMallocHost");
  check(cudaMalloc(&dev, kN * sizeof(float)), "cudaMalloc");
  for (int i = 0; i < kN; ++i) host[i] = 1.0f;
  const int block = 256, grid = (kN + block - 1) / block;
  int adds = 0, scales = 0, htod = 0, dtoh = 0, sets = 0;
  for (int r = 0; r < kRanges; ++r) {
    nvtxRangePushA("iteration");
    for (int c = 0; c < kCopiesEachWay / kRanges; ++c, ++htod)
      check(cudaMemcpy(dev, host, kN * sizeof(float), cudaMemcpyHostToDevice), "HtoD");
    for (int k = 0; k < kAddLaunches / kRanges; ++k, ++adds) add_one<<<grid, block>>>(dev, kN);
    for (int k = 0; k < kScaleLaunches / kRanges; ++k, ++scales) scale<<<grid, block>>>(dev, 0.5f, kN);
    for (int s = 0; s < kMemsets / kRanges; ++s, ++sets) check(cudaMemset(dev, 0, 4096), "memset");
    check(cudaDeviceSynchronize(), "sync");
    for (int c = 0; c < kCopiesEachWay / kRanges; ++c, ++dtoh)
      check(cudaMemcpy(host, dev, kN * sizeof(float), cudaMemcpyDeviceToHost), "DtoH");
    nvtxRangePop();
  }
  check(cudaGetLastError(), "launch");
  check(cudaFree(dev), "cudaFree");
  check(cudaFreeHost(host), "cudaFreeHost");
  std::printf("expect add_one %d\nexpect scale %d\nexpect HtoD %d\nexpect DtoH %d\nexpect memset %d\nexpect nvtx %d\n",
              adds, scales, htod, dtoh, sets, kRanges);
  return 0;
}

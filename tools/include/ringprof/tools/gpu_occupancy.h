// ringprof/tools/gpu_occupancy.h — how full a kernel keeps the GPU, from its launch
// configuration and the device's limits (the CUDA occupancy calculation).
//
// Theoretical occupancy: how many blocks of the kernel fit on one SM at once,
// limited by
//   - warps:      max warps per SM / warps per block (block threads rounded up to whole warps);
//   - blocks:     the device's max resident blocks per SM;
//   - registers:  registers per warp (per-thread count x warp size, rounded up to the
//                 allocation unit of 256) against each of the SM's 4 register-file
//                 sub-partitions, whole warps per sub-partition;
//   - shared mem: static + dynamic + the 1 KiB the driver reserves per block (compute
//                 capability 8.0 and later), rounded up to the allocation unit (128 bytes
//                 from 8.0, 256 before), against the SM's shared memory.
// occupancy = resident warps / max warps per SM.
//
// Estimated achieved occupancy: a grid smaller than what the GPU can hold at
// once leaves SMs with fewer blocks (or none); averaged over all SMs, the
// resident blocks per SM are min(blocks per SM, grid blocks / SM count).
// SM efficiency (estimated): the share of SMs given any block, min(1, grid
// blocks / SM count). Both ignore tail effects and what other kernels on
// other streams run at the same time: they are estimates, not measurements.
#pragma once

#include <cstdint>
#include <string>

#include "ringprof/gpu.h"

namespace ringprof {

struct Occupancy {
  uint32_t warps_per_block = 0;
  uint32_t blocks_per_sm = 0;        // resident at once (theoretical)
  const char* limiter = "";          // "warps", "blocks", "registers", "shared memory", "" (does not fit)
  double theoretical = 0;            // 0..1
  double grid_blocks_per_sm = 0;     // grid blocks / SM count
  double achieved = 0;               // estimated, 0..1
  double sm_efficiency = 0;          // estimated, 0..1
  bool known = false;                // false when the device's limits are unknown
};

Occupancy compute_occupancy(const GpuDevice& device, const GpuActivity& kernel);

}  // namespace ringprof

#include "ringprof/tools/gpu_occupancy.h"

#include <algorithm>
#include <climits>

namespace ringprof {

namespace {
uint64_t round_up(uint64_t x, uint64_t unit) { return unit ? (x + unit - 1) / unit * unit : x; }
}  // namespace

Occupancy compute_occupancy(const GpuDevice& dev, const GpuActivity& k) {
  Occupancy o;
  const uint64_t threads =
      uint64_t(std::max(k.block[0], 0)) * uint64_t(std::max(k.block[1], 0)) * uint64_t(std::max(k.block[2], 0));
  const uint64_t grid =
      uint64_t(std::max(k.grid[0], 0)) * uint64_t(std::max(k.grid[1], 0)) * uint64_t(std::max(k.grid[2], 0));
  const uint32_t warp = dev.warp_size ? dev.warp_size : 32;
  if (dev.sm_count == 0 || dev.max_warps_per_sm == 0 || threads == 0) return o;
  o.known = true;
  o.grid_blocks_per_sm = double(grid) / dev.sm_count;
  o.sm_efficiency = std::min(1.0, o.grid_blocks_per_sm);
  o.warps_per_block = static_cast<uint32_t>((threads + warp - 1) / warp);

  uint64_t limit = UINT64_MAX;
  auto cap = [&](uint64_t blocks, const char* why) {
    if (blocks < limit) {
      limit = blocks;
      o.limiter = why;
    }
  };
  if (dev.max_threads_per_block && threads > dev.max_threads_per_block) cap(0, "");
  cap(dev.max_warps_per_sm / o.warps_per_block, "warps");
  if (dev.max_blocks_per_sm) cap(dev.max_blocks_per_sm, "blocks");

  if (k.registers > 0 && dev.regs_per_sm > 0) {
    constexpr uint64_t kRegUnit = 256, kSubPartitions = 4;
    const uint64_t regs_per_warp = round_up(uint64_t{k.registers} * warp, kRegUnit);
    if (dev.regs_per_block && regs_per_warp * o.warps_per_block > dev.regs_per_block) {
      cap(0, "registers");
    } else {
      const uint64_t warps_per_partition = (dev.regs_per_sm / kSubPartitions) / regs_per_warp;
      cap(warps_per_partition * kSubPartitions / o.warps_per_block, "registers");
    }
  }
  if (dev.smem_per_sm > 0) {
    const bool ampere_or_later = dev.cc_major >= 8;
    const uint64_t reserved = ampere_or_later ? 1024 : 0;
    const uint64_t unit = ampere_or_later ? 128 : 256;
    const uint64_t used = uint64_t{k.static_smem} + k.dynamic_smem;
    const uint64_t per_block = round_up(used + reserved, unit);
    if (per_block > 0) cap(dev.smem_per_sm / per_block, "shared memory");
  }
  if (limit == UINT64_MAX) limit = 0;
  o.blocks_per_sm = static_cast<uint32_t>(limit);
  o.theoretical = std::min(1.0, double(limit) * o.warps_per_block / dev.max_warps_per_sm);
  o.achieved = std::min(1.0, std::min(double(limit), o.grid_blocks_per_sm) * o.warps_per_block / dev.max_warps_per_sm);
  return o;
}

}  // namespace ringprof

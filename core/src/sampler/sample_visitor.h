// What a sampling mechanism hands to the drainer: samples and lost counts,
// per thread id. Called on the drainer thread only.
#pragma once

#include <cstdint>
#include <span>

namespace ringprof::sampler {

class SampleVisitor {
 public:
  virtual ~SampleVisitor() = default;
  // One sample of thread `tid` at `ts_ns` (CLOCK_MONOTONIC), frames leaf first:
  // one word per native frame, two per interpreter frame (stack_unwinder.h).
  virtual void on_sample(uint32_t tid, uint64_t ts_ns, std::span<const uint64_t> frames) = 0;
  // `n` samples of thread `tid` the mechanism took but could not deliver.
  virtual void on_lost(uint32_t tid, uint64_t n) = 0;
};

}  // namespace ringprof::sampler

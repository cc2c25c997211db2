#include "sampler/stack_table.h"

#include <algorithm>
#include <cstdio>

namespace ringprof::sampler {

uint64_t StackTable::hash(std::span<const uint64_t> frames) noexcept {
  // FNV-style mixing of whole words, finished with a murmur-like avalanche.
  uint64_t h = 0xcbf29ce484222325ull ^ frames.size();
  for (uint64_t f : frames) {
    h ^= f;
    h *= 0x100000001b3ull;
    h ^= h >> 29;
  }
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  return h;
}

uint32_t StackTable::intern(std::span<const uint64_t> frames) {
  const uint64_t h = hash(frames);
  auto [lo, hi] = by_hash_.equal_range(h);
  for (auto it = lo; it != hi; ++it) {
    const std::vector<uint64_t>& known = stacks_[it->second - 1].frames;
    if (known.size() == frames.size() && std::equal(known.begin(), known.end(), frames.begin())) return it->second;
  }
  if (stacks_.size() >= max_stacks_) {
    if (!warned_full_) {
      std::fprintf(stderr,
                   "ringprof: warning: %zu distinct stacks sampled, the most kept; samples of new stacks are "
                   "counted as lost from now on\n",
                   max_stacks_);
      warned_full_ = true;
    }
    return 0;
  }
  const auto id = static_cast<uint32_t>(stacks_.size() + 1);
  stacks_.push_back(StackTrace{id, std::vector<uint64_t>(frames.begin(), frames.end())});
  by_hash_.emplace(h, id);
  return id;
}

}  // namespace ringprof::sampler

// Interns call stacks into dense ids (StackTrace::id, from 1), so a sample in
// a file costs its stack id and a time delta, and each distinct stack is
// written once per file. Owned by the drainer thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "ringprof/sink.h"

namespace ringprof::sampler {

class StackTable {
 public:
  static constexpr size_t kDefaultMaxStacks = 1u << 20;

  explicit StackTable(size_t max_stacks = kDefaultMaxStacks) : max_stacks_(max_stacks) {}

  // The id of `frames` (leaf first), adding it when new. 0 when the table is
  // full and the stack is new: the caller counts the sample as lost. The
  // first refusal prints one warning.
  uint32_t intern(std::span<const uint64_t> frames);

  std::span<const StackTrace> all() const noexcept { return stacks_; }
  size_t size() const noexcept { return stacks_.size(); }

 private:
  static uint64_t hash(std::span<const uint64_t> frames) noexcept;

  size_t max_stacks_;
  std::vector<StackTrace> stacks_;                       // stacks_[id - 1]
  std::unordered_multimap<uint64_t, uint32_t> by_hash_;  // hash → id (collisions compared frame by frame)
  bool warned_full_ = false;
};

}  // namespace ringprof::sampler

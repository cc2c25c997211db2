// Names interpreter frames in samples: the handler stores each as a pair of
// words (code object, fingerprint and instruction); the drainer asks the
// registered hooks to describe it once and stores a location instead
// (kInterpreterFrameTag | location id), so a stack in a file holds one word
// per frame and each function and line is written once per file. Owned by
// the drainer thread.
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "draining/location_registry.h"

namespace ringprof {

class InterpreterNames {
 public:
  // Distinct (code, fingerprint, instruction) kept; past it the cache starts
  // over (the locations stay).
  static constexpr size_t kMaxCached = 1u << 18;

  // Raw sample words (see sampler/stack_unwinder.h) to stored frames, leaf
  // first, at most `max_frames`.
  void convert(std::span<const uint64_t> words, LocationRegistry& locations, std::vector<uint64_t>* frames,
               size_t max_frames);

  uint64_t described() const noexcept { return described_; }
  uint64_t refused() const noexcept { return refused_; }

 private:
  struct Key {
    uint64_t code, check_instr;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const noexcept { return k.code * 0x9E3779B97F4A7C15ull ^ k.check_instr; }
  };
  uint32_t name(uint64_t code, uint64_t check_instr, LocationRegistry& locations);

  std::unordered_map<Key, uint32_t, KeyHash> cache_;
  uint32_t unknown_id_ = 0;
  uint64_t described_ = 0, refused_ = 0;
};

}  // namespace ringprof

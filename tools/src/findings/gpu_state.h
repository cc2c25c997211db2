// findings/gpu_state.h (internal) — the two bounded structures the findings'
// collector keeps for GPU records: the union of the GPU's busy intervals, and
// maps keyed by correlation id that forget their oldest entries.
//
// CUPTI hands records over in buffers, roughly in time order but later than
// the CPU events of the same time, and a kernel may come before or after the
// API call that launched it. Both structures therefore keep a recent stretch
// and forget the oldest part when it grows past a fixed size, as
// summaries/gpu_attribution.h does.
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <utility>

#include "summaries/interval_union.h"

namespace ringprof::internal {

// Disjoint busy intervals [b, e) of one process's GPUs (all devices on one
// timeline: the step is idle only when none of them works), at most about
// kMaxSpans of them (the caller forgets the oldest half when full()).
class BusyUnion : public IntervalUnion {
 public:
  static constexpr size_t kMaxSpans = 1 << 16;
  bool full() const { return size() > kMaxSpans; }
};

// A map by correlation id in two generations of kGeneration entries: when the
// newer one is full, the older is handed to `evicted` and dropped.
template <class V>
class CorrelationMap {
 public:
  static constexpr size_t kGeneration = 1 << 16;

  V* find(uint32_t id) {
    for (auto& m : gen_) {
      auto it = m.find(id);
      if (it != m.end()) return &it->second;
    }
    return nullptr;
  }
  template <class Evicted>
  V& insert(uint32_t id, Evicted&& evicted) {
    if (V* v = find(id)) return *v;
    if (gen_[0].size() >= kGeneration) {
      for (auto& [key, value] : gen_[1]) evicted(key, value);
      gen_[1] = std::move(gen_[0]);
      gen_[0] = {};
    }
    return gen_[0][id];
  }
  V& insert(uint32_t id) {
    return insert(id, [](uint32_t, V&) {});
  }
  void erase(uint32_t id) {
    for (auto& m : gen_) m.erase(id);
  }
  template <class Fn>
  void drain(Fn&& fn) {
    for (auto& m : gen_) {
      for (auto& [key, value] : m) fn(key, value);
      m.clear();
    }
  }

 private:
  std::unordered_map<uint32_t, V> gen_[2];
};

}  // namespace ringprof::internal

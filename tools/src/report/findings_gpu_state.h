// findings_gpu_state.h (internal) — the two bounded structures the findings'
// collector keeps for GPU records: the union of the GPU's busy intervals, and
// maps keyed by correlation id that forget their oldest entries.
//
// CUPTI hands records over in buffers, roughly in time order but later than
// the CPU events of the same time, and a kernel may come before or after the
// API call that launched it. Both structures therefore keep a recent stretch
// and forget the oldest part when it grows past a fixed size, as
// reports/gpu_attribution.h does.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <map>
#include <unordered_map>
#include <utility>

namespace ringprof::internal {

// Disjoint busy intervals [b, e) of one process's GPUs (all devices on one
// timeline: the step is idle only when none of them works).
class BusyUnion {
 public:
  static constexpr size_t kMaxSpans = 1 << 16;

  void add(uint64_t b, uint64_t e) {
    if (e <= b) return;
    auto it = spans_.upper_bound(b);
    if (it != spans_.begin() && std::prev(it)->second >= b) {
      --it;
      b = it->first;
      e = std::max(e, it->second);
      it = spans_.erase(it);
    }
    while (it != spans_.end() && it->first <= e) {
      e = std::max(e, it->second);
      it = spans_.erase(it);
    }
    spans_.emplace(b, e);
  }

  // How much of [b, e) is busy.
  uint64_t overlap(uint64_t b, uint64_t e) const {
    if (e <= b) return 0;
    uint64_t sum = 0;
    auto it = spans_.upper_bound(b);
    if (it != spans_.begin()) --it;
    for (; it != spans_.end() && it->first < e; ++it) {
      const uint64_t lo = std::max(b, it->first), hi = std::min(e, it->second);
      if (hi > lo) sum += hi - lo;
    }
    return sum;
  }

  bool full() const { return spans_.size() > kMaxSpans; }
  // Where the oldest half ends: what lies before it is forgotten by forget_oldest_half().
  uint64_t oldest_half_end() const {
    if (spans_.size() < 2) return 0;
    auto it = spans_.begin();
    std::advance(it, static_cast<std::ptrdiff_t>(spans_.size() / 2) - 1);
    return it->second;
  }
  void forget_oldest_half() {
    for (size_t n = spans_.size() / 2; n > 0; --n) spans_.erase(spans_.begin());
  }

 private:
  std::map<uint64_t, uint64_t> spans_;
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

// interval_union.h (internal) — the union of busy intervals [b, e) as
// disjoint spans, merged as they are added in any order: GPU busy time for
// `ringprof gpu` and the findings' idle time. Callers bound it by forgetting
// the oldest half once it holds too many (records arrive nearly in time
// order, so nothing later overlaps what is forgotten).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <iterator>
#include <map>

namespace ringprof::internal {

class IntervalUnion {
 public:
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

  // How much of [b, e) is covered.
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

  size_t size() const { return spans_.size(); }
  uint64_t length() const {
    uint64_t t = 0;
    for (const auto& [b, e] : spans_) t += e - b;
    return t;
  }
  // Where the oldest half ends: what forget_oldest_half() would forget lies before it.
  uint64_t oldest_half_end() const {
    if (spans_.size() < 2) return 0;
    auto it = spans_.begin();
    std::advance(it, static_cast<std::ptrdiff_t>(spans_.size() / 2) - 1);
    return it->second;
  }
  // Forgets the oldest half; returns the length it covered.
  uint64_t forget_oldest_half() {
    uint64_t gone = 0;
    for (size_t n = spans_.size() / 2; n > 0; --n) {
      gone += spans_.begin()->second - spans_.begin()->first;
      spans_.erase(spans_.begin());
    }
    return gone;
  }

 private:
  std::map<uint64_t, uint64_t> spans_;
};

}  // namespace ringprof::internal

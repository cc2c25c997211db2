// common/robust_stats.h (internal) — the median and the median absolute deviation,
// the robust centre and spread the ranks analysis uses throughout (clock
// offsets, lateness, step times), so one slow collective or one stray clock
// reading cannot move them.
#pragma once

#include <algorithm>
#include <cstddef>
#include <vector>

namespace ringprof::internal {

// The upper median (the element at size/2 once sorted); T{} when empty.
template <class T>
T median(std::vector<T> v) {
  if (v.empty()) return T{};
  std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
  return v[v.size() / 2];
}

// The median of |v - center|.
template <class T>
T median_abs_deviation(const std::vector<T>& v, T center) {
  std::vector<T> dev;
  dev.reserve(v.size());
  for (T x : v) dev.push_back(x > center ? x - center : center - x);
  return median(std::move(dev));
}

}  // namespace ringprof::internal

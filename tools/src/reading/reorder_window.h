// reorder_window.h (internal) — items that arrive roughly in time order (GPU
// records delivered by CUPTI buffer, zones closed on several threads), handed
// on in order: the earliest goes on once more than `capacity` wait, the rest
// at drain(). T::order() is the time they sort by. Memory stays bounded by the
// capacity whatever the recording's length; an item later than that many
// newer ones is handed on late (callers count it when they care).
#pragma once

#include <cstddef>
#include <queue>
#include <vector>

namespace ringprof::internal {

template <class T>
class ReorderWindow {
 public:
  explicit ReorderWindow(size_t capacity) : capacity_(capacity) {}
  template <class Fn>
  void push(const T& item, Fn&& release) {
    heap_.push(item);
    if (heap_.size() > capacity_) pop_into(release);
  }
  template <class Fn>
  void drain(Fn&& release) {
    while (!heap_.empty()) pop_into(release);
  }
  bool empty() const { return heap_.empty(); }

 private:
  struct Later {
    bool operator()(const T& a, const T& b) const { return a.order() > b.order(); }
  };
  template <class Fn>
  void pop_into(Fn& release) {
    const T first = heap_.top();
    heap_.pop();
    release(first);
  }
  size_t capacity_;
  std::priority_queue<T, std::vector<T>, Later> heap_;
};

}  // namespace ringprof::internal

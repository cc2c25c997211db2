// reorder_window.h (internal) — items that arrive roughly in time order (GPU
// records delivered by CUPTI buffer, zones closed on several threads), handed
// on in order: the earliest goes on once more than `capacity` wait, the rest
// at drain(). T::order() is the time they sort by. Memory stays bounded by the
// capacity whatever the recording's length; an item later than that many
// newer ones is handed on late (callers count it when they care).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <queue>
#include <unordered_map>
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

namespace ringprof::internal {

// The same contract as ReorderWindow for items that come as several streams,
// each already in order (a thread's closed zones, in end order), interleaved
// in any way: only the streams' heads are compared, so handing an item on
// costs log(streams), not log(capacity), and the items wait in their
// streams' queues, read in order (a heap of 65536 items as large as the
// window made the ranks scan's zone accounting half its time). An item out of
// order within its stream goes on when it reaches its stream's head.
template <class T>
class StreamMergeWindow {
 public:
  explicit StreamMergeWindow(size_t capacity) : capacity_(capacity) {}
  template <class Fn>
  void push(uint32_t stream, const T& item, Fn&& release) {
    auto [it, inserted] = index_.try_emplace(stream, streams_.size());
    if (inserted) streams_.emplace_back();
    std::deque<T>& q = streams_[it->second];
    q.push_back(item);
    if (q.size() == 1) heads_.push(Head{item.order(), it->second});
    if (++size_ > capacity_) pop_into(release);
  }
  template <class Fn>
  void drain(Fn&& release) {
    while (size_ > 0) pop_into(release);
  }
  bool empty() const { return size_ == 0; }

 private:
  struct Head {
    uint64_t order;
    size_t stream;
    bool operator>(const Head& o) const { return order > o.order; }
  };
  template <class Fn>
  void pop_into(Fn& release) {
    const Head h = heads_.top();
    heads_.pop();
    std::deque<T>& q = streams_[h.stream];
    const T first = q.front();
    q.pop_front();
    --size_;
    if (!q.empty()) heads_.push(Head{q.front().order(), h.stream});
    release(first);
  }
  size_t capacity_;
  size_t size_ = 0;
  std::vector<std::deque<T>> streams_;
  std::unordered_map<uint32_t, size_t> index_;
  std::priority_queue<Head, std::vector<Head>, std::greater<Head>> heads_;
};

}  // namespace ringprof::internal

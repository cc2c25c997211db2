// Memory for the batches between the drainer and the writer.
//
// A batch buffer holds RINGPROF_BATCH_EVENTS events (2 MiB by default), and a
// few of them go round between the two threads for the life of the process.
// Touching fresh memory costs a page fault per 4 KiB; on a virtual machine a
// fault costs tens of microseconds (measured here: 512 faults, 9 ms of CPU
// for one 2 MiB buffer), a large part of the drainer's CPU in its first
// seconds. So a buffer of 2 MiB or more is mapped on its own, aligned to
// 2 MiB, and one that is going to be filled whole (a spare job's, or the
// drainer's next one after a full batch) is offered to the kernel as a
// transparent huge page (advise_huge_pages): one fault per 2 MiB, 0.1-0.3 ms
// for the same buffer. Only those: a huge page is resident whole, and a
// process that records slowly fills a small part of each buffer. Where huge
// pages are off, or the kernel has none to give, it is ordinary memory.
// Smaller buffers come from the heap as before.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <algorithm>
#include <cstring>
#include <memory>
#include <new>
#include <utility>

#include "ringprof/event.h"

namespace ringprof {

inline constexpr size_t kBatchHugePage = size_t{2} << 20;

// A batch's events, as the drainer collects them and the writer reads them:
// a vector of Events but for two things. Its memory is had as said above,
// and grow() adds room without writing to it,
// so drain_plain() writes each event once, straight into the batch, at the
// same cost in any build (a std::vector's resize() constructs every element
// it adds, a loop only an optimiser removes).
class BatchEvents {
 public:
  BatchEvents() noexcept = default;
  BatchEvents(const BatchEvents&) = delete;
  BatchEvents& operator=(const BatchEvents&) = delete;
  BatchEvents(BatchEvents&& o) noexcept { swap(o); }
  BatchEvents& operator=(BatchEvents&& o) noexcept {
    BatchEvents gone(std::move(o));
    swap(gone);
    return *this;
  }
  ~BatchEvents() { release(data_, capacity_); }

  size_t size() const noexcept { return size_; }
  size_t capacity() const noexcept { return capacity_; }
  bool empty() const noexcept { return size_ == 0; }
  Event* data() noexcept { return data_; }
  const Event* data() const noexcept { return data_; }
  Event* begin() noexcept { return data_; }
  Event* end() noexcept { return data_ + size_; }
  const Event* begin() const noexcept { return data_; }
  const Event* end() const noexcept { return data_ + size_; }
  Event& operator[](size_t i) noexcept { return data_[i]; }
  const Event& operator[](size_t i) const noexcept { return data_[i]; }

  void clear() noexcept { size_ = 0; }
  void swap(BatchEvents& o) noexcept {
    std::swap(data_, o.data_);
    std::swap(size_, o.size_);
    std::swap(capacity_, o.capacity_);
  }
  void reserve(size_t n) {
    if (n <= capacity_) return;
    Event* fresh = acquire(n);
    if (size_ != 0) std::memcpy(static_cast<void*>(fresh), data_, size_ * sizeof(Event));
    release(data_, capacity_);
    data_ = fresh;
    capacity_ = n;
  }
  void push_back(const Event& e) {
    if (size_ == capacity_) reserve(std::max<size_t>(capacity_ * 2, 1024));
    data_[size_++] = e;
  }
  // n more events at the end, not written: the caller writes them, or gives
  // back what it did not write with truncate().
  Event* grow(size_t n) {
    if (n > capacity_ - size_) reserve(std::max(size_ + n, capacity_ * 2));
    Event* at = data_ + size_;
    size_ += n;
    return at;
  }
  void truncate(size_t n) noexcept {
    if (n < size_) size_ = n;
  }

 private:
  static size_t mapped_size(size_t bytes) noexcept { return (bytes + kBatchHugePage - 1) & ~(kBatchHugePage - 1); }

  static Event* acquire(size_t n) {
    if (n > SIZE_MAX / sizeof(Event)) throw std::bad_array_new_length();
    const size_t bytes = n * sizeof(Event);
    if (bytes < kBatchHugePage) return std::allocator<Event>().allocate(n);
    const size_t size = mapped_size(bytes);
    // Over-map by one huge page, then give back what lies outside the
    // aligned range, so the whole buffer can be backed by huge pages.
    void* raw = mmap(nullptr, size + kBatchHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) throw std::bad_alloc();
    const auto start = reinterpret_cast<uintptr_t>(raw);
    const uintptr_t aligned = (start + kBatchHugePage - 1) & ~(uintptr_t{kBatchHugePage} - 1);
    if (aligned != start) munmap(raw, aligned - start);
    const uintptr_t tail = aligned + size;
    const uintptr_t mapped_end = start + size + kBatchHugePage;
    if (mapped_end != tail) munmap(reinterpret_cast<void*>(tail), mapped_end - tail);
    return reinterpret_cast<Event*>(aligned);
  }
  static void release(Event* p, size_t n) noexcept {
    if (p == nullptr) return;
    const size_t bytes = n * sizeof(Event);
    if (bytes < kBatchHugePage) {
      std::allocator<Event>().deallocate(p, n);
      return;
    }
    munmap(p, mapped_size(bytes));
  }

  Event* data_ = nullptr;
  size_t size_ = 0;
  size_t capacity_ = 0;
};

// Asks for huge pages for the part of `events`' buffer not touched yet (an
// advice: pages already in place stay as they are).
inline void advise_huge_pages(BatchEvents& events) noexcept {
  const size_t bytes = events.capacity() * sizeof(Event);
  if (bytes < kBatchHugePage) return;  // from the heap
  madvise(events.data(), (bytes + kBatchHugePage - 1) & ~(kBatchHugePage - 1), MADV_HUGEPAGE);
}

}  // namespace ringprof

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
#include <memory>
#include <new>
#include <type_traits>
#include <utility>
#include <vector>

#include "ringprof/event.h"

namespace ringprof {

inline constexpr size_t kBatchHugePage = size_t{2} << 20;

template <typename T>
struct BatchAllocator {
  using value_type = T;

  BatchAllocator() noexcept = default;
  template <typename U>
  BatchAllocator(const BatchAllocator<U>&) noexcept {}

  T* allocate(size_t n) {
    if (n > SIZE_MAX / sizeof(T)) throw std::bad_array_new_length();
    const size_t bytes = n * sizeof(T);
    if (bytes < kBatchHugePage) return std::allocator<T>().allocate(n);
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
    return reinterpret_cast<T*>(aligned);
  }

  void deallocate(T* p, size_t n) noexcept {
    const size_t bytes = n * sizeof(T);
    if (bytes < kBatchHugePage) {
      std::allocator<T>().deallocate(p, n);
      return;
    }
    munmap(p, mapped_size(bytes));
  }

  // Default-initialised, not zeroed: resize() then leaves the memory as it
  // is, so the drainer can write events straight into the room it made
  // (Event has no initialisers).
  template <typename U>
  void construct(U* p) noexcept(std::is_nothrow_default_constructible_v<U>) {
    ::new (static_cast<void*>(p)) U;
  }
  template <typename U, typename... Args>
  void construct(U* p, Args&&... args) {
    ::new (static_cast<void*>(p)) U(std::forward<Args>(args)...);
  }

  template <typename U>
  bool operator==(const BatchAllocator<U>&) const noexcept {
    return true;
  }

 private:
  static size_t mapped_size(size_t bytes) noexcept { return (bytes + kBatchHugePage - 1) & ~(kBatchHugePage - 1); }
};

// A batch's events, as the drainer collects them and the writer reads them.
using BatchEvents = std::vector<Event, BatchAllocator<Event>>;

// Asks for huge pages for the part of `events`' buffer not touched yet (an
// advice: pages already in place stay as they are).
inline void advise_huge_pages(BatchEvents& events) noexcept {
  const size_t bytes = events.capacity() * sizeof(Event);
  if (bytes < kBatchHugePage) return;  // from the heap
  madvise(events.data(), (bytes + kBatchHugePage - 1) & ~(kBatchHugePage - 1), MADV_HUGEPAGE);
}

}  // namespace ringprof

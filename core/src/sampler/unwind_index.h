// The loaded objects' unwind tables as the sample handler sees them: an
// immutable array of UnwindModule sorted by address, published by the
// drainer and read by handlers on any thread without a lock.
//
// Who touches what:
//   - The drainer (UnwindIndex::refresh) rescans the loader's list when its
//     add/remove counters moved (dlopen, dlclose), builds a new array and
//     publishes it; the array it replaces is freed once no handler is inside
//     (a process-wide count of handlers reading, checked after publishing:
//     a handler that enters later sees the new array).
//   - A handler enters with UnwindView, which counts it in and loads the
//     current array, and leaves when the view goes out of scope.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "sampler/cfi_rules.h"
#include "sampler/loader_counters.h"

namespace ringprof::sampler {

struct UnwindSnapshot {
  uint64_t generation = 0;  // changes with every published array
  size_t count = 0;
  const UnwindModule* modules = nullptr;  // sorted by start, non-overlapping
};

// Handler side. Async-signal-safe.
class UnwindView {
 public:
  UnwindView() noexcept;
  ~UnwindView();
  UnwindView(const UnwindView&) = delete;
  UnwindView& operator=(const UnwindView&) = delete;
  // The module whose executable range holds pc, or null.
  const UnwindModule* find(uint64_t pc) const noexcept;
  uint64_t generation() const noexcept { return snap_ ? snap_->generation : 0; }

 private:
  const UnwindSnapshot* snap_;
};

// Drainer side: one per sampler.
class UnwindIndex {
 public:
  UnwindIndex() = default;
  ~UnwindIndex();  // unpublishes and frees everything once no handler is inside
  UnwindIndex(const UnwindIndex&) = delete;
  UnwindIndex& operator=(const UnwindIndex&) = delete;

  // Rebuilds and publishes when objects were loaded or unloaded since.
  void refresh();
  size_t modules() const noexcept { return count_; }

 private:
  void free_retired(bool wait);
  std::vector<UnwindSnapshot*> retired_;
  LoaderCounters counters_;  // at the last scan
  size_t count_ = 0;
  bool published_ = false;
  // What this index published last. Several indexes may live at once (the
  // CPU sampler's, the heap sampler's, a drainer left behind on a stuck
  // disk): whoever takes a snapshot out of the global frees it, and an index
  // unpublishes only its own.
  const UnwindSnapshot* current_ = nullptr;
};

// The unwind table of one loaded object from its program headers; false
// when it has none this unwinder can search (no PT_GNU_EH_FRAME, or a table
// in an encoding other than the linker's sorted datarel|sdata4).
bool unwind_module_from_headers(uint64_t base, const void* phdrs, int phnum, UnwindModule* out) noexcept;

}  // namespace ringprof::sampler

// ringprof/tools/heap_profile.h — the sampled heap profile of a trace
// (ringprof/heap.h): each picked allocation with its stack, size, pool and,
// where the files hold it, its free; weighed back to estimates of the whole.
//
// A block of `size` bytes sampled at a mean interval of `interval` bytes was
// picked with probability p = 1 - exp(-size / interval): it stands for 1 / p
// allocations and size / p bytes (what go's and tcmalloc's heap profiles
// do). A block is in use at the end of the range when it was allocated at or
// before it and its free, matched by pool and address, comes after (or never).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ringprof/tools/op_table.h"
#include "ringprof/tools/stack_resolver.h"
#include "ringprof/tools/time_range.h"
#include "ringprof/tools/trace_reader.h"

namespace ringprof {

struct HeapOptions {
  RangeSpec range;
  std::string thread;  // "" every thread; else a thread name or a kernel tid
  std::string pool;    // "" every pool; else its name ("heap", "torch:cuda:0")
};

struct HeapSample {
  size_t process = 0;         // index into TraceReader::processes()
  uint32_t thread_index = 0;  // the allocating thread
  uint32_t stack_id = 0;      // 0: the files lost its stack
  uint32_t pool = 0;          // location id of the pool's name, in that process
  uint64_t size = 0;
  uint64_t interval = 0;  // the mean sampling interval it was picked at
  uint64_t alloc_ns = 0;
  bool in_range = false;  // allocated inside the range (what alloc_* count)
  bool in_use = false;    // allocated by the range's end and not freed by then (inuse_*)
  double weight() const;  // allocations it stands for: 1 / (1 - exp(-size / interval))
};

struct HeapProfile {
  std::vector<HeapSample> samples;  // allocated inside the range, or before it and in use at its end
  uint64_t interval = 0;            // the largest interval the samples were picked at (pprof's period)
  uint64_t first_ns = 0;            // first and last sample kept (0 when none)
  uint64_t last_ns = 0;
  uint64_t frees_matched = 0;  // sampled blocks freed (in the files, before the range's end)
};

// Reads every file of `reader` once; the reader's process tables stay filled
// for StackResolver.
HeapProfile collect_heap(TraceReader& reader, const HeapOptions& options);

// Per stack (and process and pool), the estimates, largest allocated bytes first.
struct HeapStackTotal {
  size_t process = 0;
  uint32_t stack_id = 0;
  uint32_t pool = 0;
  double alloc_objects = 0, alloc_bytes = 0, inuse_objects = 0, inuse_bytes = 0;
  uint64_t samples = 0;
};
std::vector<HeapStackTotal> heap_by_stack(const HeapProfile& profile);

// How many of a heap sample's leaf frames are ringprof's own (the sampler's
// call path in a ringprof library or Python extension: libringprof*,
// _ringprof*): the tools leave them out, so the leaf is the allocator.
size_t heap_own_leaf_frames(const ProcessState& process, const StackTrace& stack);

// The stacks that allocate most, named: `ringprof memory --heap` and the
// report's heap table. `stack` is the functions leaf first, " <- " between,
// at most kHeapStackFrames of them. With `python`, a stack that holds Python
// frames is named by them alone (the allocator's and the interpreter's own
// native frames sit below the Python code that asked, deeper than the
// frames shown); a stack without any keeps its native frames.
inline constexpr size_t kHeapStackFrames = 8;
struct HeapTopRow {
  std::string stack;
  std::string pool;
  double alloc_bytes = 0, alloc_objects = 0, inuse_bytes = 0, inuse_objects = 0;
  uint64_t samples = 0;
};
std::vector<HeapTopRow> heap_top_stacks(const TraceReader& reader, const HeapProfile& profile, StackResolver& resolver,
                                        size_t top, bool python = false);
std::string format_heap_top(const std::vector<HeapTopRow>& rows, const HeapProfile& profile, TableFormat format);

}  // namespace ringprof

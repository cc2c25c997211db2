// memory_pairing.h (internal) — pairs Free events with the Alloc they undo,
// for the table's memory columns, `ringprof memory` and the Chrome trace's
// memory counters: one place that decides what a memory event is worth.
//
// A block is known by (pool location id, address) within one process. A Free
// of size 0 (the caller did not know it) takes the size of the live block it
// frees; a Free that finds no live block (allocated before the read range,
// or in a file already deleted) is "unmatched" and counts its own size, 0 when
// it has none. Events are paired in time order across the threads of a
// segment, since one thread may free what another allocated.
//
// Ordering caveat: segments are taken in file order and sorted by time only
// within themselves. A drainer batch holds what each ring had when it was
// read, so a free and a re-allocation of the same address on two threads a
// few microseconds apart can land in consecutive segments out of order; such
// a pair then reads as one unmatched free and one block live too long.
//
// Memory grows with the live blocks only (what the program itself holds).
#pragma once

#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "ringprof/segment_codec.h"
#include "ringprof/tools/time_range.h"

namespace ringprof::internal {

struct MemoryChange {
  uint32_t index = 0;      // of the event in segment.events
  int64_t bytes = 0;       // + allocated, - freed
  bool unmatched = false;  // a Free without a live block
  uint32_t alloc_tag = 0;  // a matched Free: the tag its Alloc was given
};

class MemoryPairing {
 public:
  struct Block {
    uint64_t size = 0;
    uint32_t tag = 0;  // the caller's (the zone that allocated it)
    uint32_t thread_index = 0;
    uint32_t pool = 0;
  };

  // The memory events of `seg` inside `range`, in time order (ties in
  // segment order), with their byte changes. `tags`, when not empty, is
  // indexed like seg.events: the tag each Alloc's block keeps.
  void resolve(const DecodedSegment& seg, const TimeRange& range, std::span<const uint32_t> tags,
               std::vector<MemoryChange>& out);
  void clear() { live_.clear(); }

  struct Key {
    uint32_t pool;
    uint64_t address;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const noexcept { return std::hash<uint64_t>()(k.address * 31 + k.pool); }
  };
  const std::unordered_map<Key, Block, KeyHash>& live() const { return live_; }

 private:
  std::unordered_map<Key, Block, KeyHash> live_;
  std::vector<uint32_t> order_;
};

}  // namespace ringprof::internal

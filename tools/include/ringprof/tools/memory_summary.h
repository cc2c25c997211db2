// ringprof/tools/memory_summary.h — what `ringprof memory` reports from the
// Alloc/Free events of the detailed level (ringprof/memory.h): per pool the
// traffic and the peak, the zones that allocate most, and what is still
// allocated at the end of the range, by the zone that allocated it.
//
// Frees are paired with allocations by pool and address (memory_pairing.h):
// a free of unknown size takes its allocation's size; a free whose
// allocation is not in the range is unmatched and counts its own size (0
// when unknown). Live bytes are counted from the range's start, so the peak
// is the highest point of the running sum (bytes allocated minus bytes freed
// since the start, in time order across the threads), 0 when it never rose.
// With several processes a pool's peak is the largest of theirs.
//
// Streaming: one row per pool and per zone name, and the blocks live at each
// moment (what the program itself held).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ringprof/tools/op_table.h"
#include "ringprof/tools/time_range.h"
#include "ringprof/tools/trace_reader.h"

namespace ringprof {

struct MemoryOptions {
  RangeSpec range;     // memory events inside it count
  std::string thread;  // "" all; else a thread name, or a kernel tid in decimal
  size_t top = 0;      // zone rows; 0: all
  // Live bytes over time (the report's chart): the range split into this
  // many equal buckets, 0 for none. Events before the range count in the
  // first bucket, after it in the last.
  size_t timeline_buckets = 0;
  uint64_t timeline_begin_ns = 0;
  uint64_t timeline_end_ns = 0;
};

struct MemoryPoolRow {
  std::string pool;
  uint64_t allocs = 0;
  uint64_t frees = 0;
  uint64_t bytes_allocated = 0;
  uint64_t bytes_freed = 0;
  int64_t net() const { return static_cast<int64_t>(bytes_allocated) - static_cast<int64_t>(bytes_freed); }
  int64_t peak = 0;  // highest live bytes, relative to the range's start
  uint64_t unmatched_frees = 0;
};

// Allocations by the zone open innermost on their thread ("(no zone)" when none).
struct MemoryZoneRow {
  std::string zone;
  uint64_t allocs = 0;
  uint64_t bytes = 0;
};

// One pool of one process over time: the highest live bytes (relative to the
// range's start, as the peak) in each bucket, the level a bucket starts at
// included, so a bucket with no change shows the level carried into it.
struct MemoryTimeline {
  uint32_t pid = 0;
  std::string pool;
  std::vector<int64_t> high;  // one per bucket
};

struct MemorySummary {
  std::vector<MemoryPoolRow> pools;        // by name
  std::vector<MemoryZoneRow> zones;        // by bytes allocated, descending; cut to `top`
  std::vector<MemoryZoneRow> live;         // blocks live at the end, by allocating zone; by bytes, descending
  uint64_t memory_events = 0;              // Alloc and Free events counted
  uint64_t timeline_begin_ns = 0;          // the timeline's first bucket begins here
  uint64_t timeline_bucket_ns = 0;         // each bucket's width (0: no timeline)
  std::vector<MemoryTimeline> timeline;    // by process, then pool name
};

inline constexpr const char* kNoZone = "(no zone)";

MemorySummary compute_memory_summary(TraceReader& reader, const MemoryOptions& options);

// Text: three aligned tables (pools, zones, live). CSV: the same three
// tables, each with its header line, separated by an empty line.
std::string format_memory_summary(const MemorySummary& summary, TableFormat format);

}  // namespace ringprof

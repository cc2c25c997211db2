#include "ringprof/tools/memory_summary.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <unordered_map>

#include "summaries/memory_pairing.h"
#include "ringprof/tools/thread_filter.h"
#include "ringprof/tools/trace_range.h"
#include "ringprof/tools/zone_tracker.h"
#include "common/text_table.h"

namespace ringprof {
namespace {

class MemoryBuilder final : public SegmentVisitor {
 public:
  MemoryBuilder(const MemoryOptions& options, TimeRange range)
      : range_(range), threads_(options.thread), zones_([](const ClosedZone&) {}) {
    if (options.timeline_buckets > 0 && options.timeline_end_ns > options.timeline_begin_ns) {
      buckets_ = options.timeline_buckets;
      summary_.timeline_begin_ns = options.timeline_begin_ns;
      const uint64_t span = options.timeline_end_ns - options.timeline_begin_ns + 1;
      summary_.timeline_bucket_ns = (span + buckets_ - 1) / buckets_;
    }
  }

  void begin_process(const ProcessState& p) override {
    process_ = &p;
    zones_.clear();
    pairing_.clear();
    running_.clear();
    lines_.clear();
  }

  void segment(const SegmentView& view) override {
    const std::vector<DecodedEvent>& events = view.segment.events;
    // Zones in each thread's order: the innermost open at each Alloc tags its block.
    tags_.assign(events.size(), 0);
    for (size_t i = 0; i < events.size(); ++i) {
      zones_.add(events[i]);
      if (events[i].kind == EventKind::Alloc) tags_[i] = zones_.innermost(events[i].thread_index);
    }
    pairing_.resolve(view.segment, range_, tags_, changes_);
    for (const internal::MemoryChange& c : changes_) {
      const DecodedEvent& e = events[c.index];
      if (!threads_.matches(*process_, e.thread_index)) continue;
      ++summary_.memory_events;
      MemoryPoolRow& pool = pool_row(e.loc);
      if (e.kind == EventKind::Alloc) {
        ++pool.allocs;
        pool.bytes_allocated += e.value;
        MemoryZoneRow& z = zone_row(zones_by_name_, tags_[c.index]);
        ++z.allocs;
        z.bytes += e.value;
      } else {
        ++pool.frees;
        pool.bytes_freed += static_cast<uint64_t>(-c.bytes);
        pool.unmatched_frees += c.unmatched;
      }
      int64_t& live = running_[e.loc];
      live += c.bytes;
      pool.peak = std::max(pool.peak, live);
      if (buckets_) plot(e.loc, e.ts_ns, live);
    }
  }

  void end_process(const ProcessState&) override {
    for (const auto& [key, block] : pairing_.live()) {
      if (!threads_.matches(*process_, block.thread_index)) continue;
      MemoryZoneRow& z = zone_row(live_by_name_, block.tag);
      ++z.allocs;
      z.bytes += block.size;
    }
    zones_.finish();
    // Each line runs on at its last level to the end of the range.
    std::map<std::string, Line*> by_name;
    for (auto& [loc, line] : lines_) by_name[process_->location_name(loc)] = &line;
    for (auto& [name, line] : by_name) {
      for (size_t b = line->bucket + 1; b < buckets_; ++b) line->high[b] = line->level;
      summary_.timeline.push_back(MemoryTimeline{process_->pid, name, std::move(line->high)});
    }
  }

  MemorySummary result(size_t top) {
    for (auto& [name, row] : pools_) summary_.pools.push_back(row);
    auto by_bytes = [](const MemoryZoneRow& a, const MemoryZoneRow& b) {
      return a.bytes != b.bytes ? a.bytes > b.bytes : a.zone < b.zone;
    };
    for (auto& [name, row] : zones_by_name_) summary_.zones.push_back(row);
    std::sort(summary_.zones.begin(), summary_.zones.end(), by_bytes);
    if (top > 0 && summary_.zones.size() > top) summary_.zones.resize(top);
    for (auto& [name, row] : live_by_name_) summary_.live.push_back(row);
    std::sort(summary_.live.begin(), summary_.live.end(), by_bytes);
    return std::move(summary_);
  }

 private:
  MemoryPoolRow& pool_row(uint32_t loc) {
    const std::string name = process_->location_name(loc);
    auto [it, inserted] = pools_.try_emplace(name);
    if (inserted) it->second.pool = name;
    return it->second;
  }
  MemoryZoneRow& zone_row(std::unordered_map<std::string, MemoryZoneRow>& rows, uint32_t loc) {
    const std::string name = loc == 0 ? std::string(kNoZone) : process_->location_name(loc);
    auto [it, inserted] = rows.try_emplace(name);
    if (inserted) it->second.zone = name;
    return it->second;
  }

  // A pool's line: the buckets so far, the level after its latest change and
  // the bucket that change fell in (buckets after it have not begun yet).
  struct Line {
    std::vector<int64_t> high;
    int64_t level = 0;
    size_t bucket = SIZE_MAX;
  };
  void plot(uint32_t pool, uint64_t ts, int64_t live) {
    auto [it, inserted] = lines_.try_emplace(pool);
    Line& line = it->second;
    if (inserted) line.high.assign(buckets_, 0);
    const uint64_t from = ts > summary_.timeline_begin_ns ? ts - summary_.timeline_begin_ns : 0;
    const size_t b = std::min<uint64_t>(from / summary_.timeline_bucket_ns, buckets_ - 1);
    if (line.bucket == SIZE_MAX || b > line.bucket) {
      // Buckets passed without a change hold the level carried into them.
      for (size_t i = line.bucket == SIZE_MAX ? 0 : line.bucket + 1; i <= b; ++i) line.high[i] = line.level;
      line.bucket = b;
    }
    line.high[b] = std::max(line.high[b], live);
    line.level = live;
  }

  size_t buckets_ = 0;
  std::unordered_map<uint32_t, Line> lines_;  // by pool location id, this process
  TimeRange range_;
  ThreadFilter threads_;
  ZoneTracker zones_;
  internal::MemoryPairing pairing_;
  std::vector<uint32_t> tags_;
  std::vector<internal::MemoryChange> changes_;
  std::unordered_map<uint32_t, int64_t> running_;  // live bytes by pool location id, this process
  const ProcessState* process_ = nullptr;
  std::map<std::string, MemoryPoolRow> pools_;
  std::unordered_map<std::string, MemoryZoneRow> zones_by_name_;
  std::unordered_map<std::string, MemoryZoneRow> live_by_name_;
  MemorySummary summary_;
};

}  // namespace

MemorySummary compute_memory_summary(TraceReader& reader, const MemoryOptions& options) {
  TimeRange range;
  if (!options.range.empty()) {
    if (auto w = resolve_trace_range(reader, options.range, nullptr)) range = *w;
  }
  MemoryBuilder builder(options, range);
  reader.read(builder);
  return builder.result(options.top);
}

std::string format_memory_summary(const MemorySummary& s, TableFormat format) {
  std::vector<internal::TextRow> pools, zones, live;
  for (const MemoryPoolRow& p : s.pools)
    pools.push_back({p.pool, std::to_string(p.allocs), std::to_string(p.frees), std::to_string(p.bytes_allocated),
                     std::to_string(p.bytes_freed), std::to_string(p.net()), std::to_string(p.peak),
                     std::to_string(p.unmatched_frees)});
  for (const MemoryZoneRow& z : s.zones) zones.push_back({z.zone, std::to_string(z.allocs), std::to_string(z.bytes)});
  for (const MemoryZoneRow& z : s.live) live.push_back({z.zone, std::to_string(z.allocs), std::to_string(z.bytes)});
  if (format == TableFormat::Csv) {
    return internal::format_csv_table({"pool", "allocs", "frees", "allocated_bytes", "freed_bytes", "net_bytes",
                                       "peak_bytes", "unmatched_frees"},
                                      pools) +
           "\n" + internal::format_csv_table({"zone", "allocs", "allocated_bytes"}, zones) + "\n" +
           internal::format_csv_table({"live_zone", "blocks", "live_bytes"}, live);
  }
  if (s.memory_events == 0)
    return "No memory events in the input (they are recorded at the detailed level: memory_alloc/memory_free, "
           "libringprof_malloc.so).\n";
  std::string out = internal::format_text_table(
      {"Pool", "Allocs", "Frees", "Allocated (B)", "Freed (B)", "Net (B)", "Peak (B)", "Unmatched frees"}, pools);
  out += "\nZones allocating most (innermost zone open at each allocation):\n";
  out += internal::format_text_table({"Zone", "Allocs", "Allocated (B)"}, zones);
  out += "\nLive at the end of the window, by allocating zone:\n";
  out += live.empty() ? std::string("(nothing)\n") : internal::format_text_table({"Zone", "Blocks", "Bytes"}, live);
  return out;
}

}  // namespace ringprof

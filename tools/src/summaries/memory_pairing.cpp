#include "summaries/memory_pairing.h"

#include <algorithm>

namespace ringprof::internal {

void MemoryPairing::resolve(const DecodedSegment& seg, const TimeRange& range, std::span<const uint32_t> tags,
                            std::vector<MemoryChange>& out) {
  out.clear();
  order_.clear();
  for (size_t i = 0; i < seg.events.size(); ++i) {
    const DecodedEvent& e = seg.events[i];
    if (kind_is_exact_memory(e.kind) && range.contains(e.ts_ns)) order_.push_back(static_cast<uint32_t>(i));
  }
  std::stable_sort(order_.begin(), order_.end(),
                   [&](uint32_t a, uint32_t b) { return seg.events[a].ts_ns < seg.events[b].ts_ns; });
  out.reserve(order_.size());
  for (uint32_t i : order_) {
    const DecodedEvent& e = seg.events[i];
    MemoryChange c;
    c.index = i;
    const Key key{e.loc, e.address};
    if (e.kind == EventKind::Alloc) {
      // An address allocated twice without a free between: the free was lost
      // (dropped, or outside the files); the newer block replaces it.
      live_[key] = Block{e.value, tags.empty() ? 0 : tags[i], e.thread_index, e.loc};
      c.bytes = static_cast<int64_t>(e.value);
    } else {
      auto it = live_.find(key);
      if (it == live_.end()) {
        c.unmatched = true;
        c.bytes = -static_cast<int64_t>(e.value);
      } else {
        c.bytes = -static_cast<int64_t>(e.value != 0 ? e.value : it->second.size);
        c.alloc_tag = it->second.tag;
        live_.erase(it);
      }
    }
    out.push_back(c);
  }
}

}  // namespace ringprof::internal

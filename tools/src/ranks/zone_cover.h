// zone_cover.h (internal) — when some zone was open on some thread of a
// process and when its GPU worked, for the ranks scan's time in zones
// (rank_scan.h): each instant counted once, whatever the number of threads.
//
// Zones come per thread in end order (a thread's zones close so), GPU work
// in start order (the scan's sweep releases it so). Each thread keeps its
// disjoint spans in a deque: a zone that reaches back over the latest spans
// swallows them, as a parent swallows its children, so a thread busy in one
// zone per step costs one span per step however many zones it nests. GPU
// work merges into its latest span the same way. Nothing is merged across
// threads until a stretch of time is settled: the spans before the cut are
// then sorted and merged once, measured, and those that end before the cut
// forgotten by the cut. Memory is bounded by settling often enough (the scan
// settles when size() passes its bound). Spans that break the order (a zone
// that ends before its thread's latest span begins, GPU work that starts
// before the latest kept GPU span) wait apart and are merged in the same way;
// spans that end by the settled time can no longer count and are dropped.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <unordered_map>
#include <vector>

namespace ringprof::internal {

class ZoneCover {
 public:
  struct Span {
    uint64_t b = 0, e = 0;
  };
  // The time settled so far, merged: host spans and GPU spans, sorted and
  // disjoint, within [from, to).
  class Settled {
   public:
    // Within [b, e): the time in zones, and of it the time the GPU was idle.
    struct Figures {
      uint64_t in_zones = 0, idle_in_zones = 0;
    };
    Figures measure(uint64_t b, uint64_t e) const;

   private:
    friend class ZoneCover;
    std::vector<Span> host_, gpu_;
  };

  void add_zone(uint32_t thread, uint64_t b, uint64_t e);
  void add_gpu(uint64_t b, uint64_t e);
  // Spans kept.
  size_t size() const { return host_spans_ + gpu_.size() + odd_host_.size() + odd_gpu_.size(); }
  // Time before it has been settled.
  uint64_t settled() const { return settled_; }
  // An end time before which about half of the kept spans end (0 when none).
  uint64_t half_time() const;
  // Merges what lies in [settled(), cut), hands it to `measure`, and forgets
  // the spans that end by cut.
  void settle(uint64_t cut, const std::function<void(const Settled&)>& measure);

 private:
  std::vector<std::deque<Span>> threads_;          // one per thread seen...
  std::unordered_map<uint32_t, size_t> thread_slot_;  // ...by its index in the files
  uint32_t last_thread_ = 0;                          // the latest zone's thread...
  size_t last_slot_ = 0;                              // ...and its slot
  size_t host_spans_ = 0;
  std::deque<Span> gpu_;
  std::vector<Span> odd_host_, odd_gpu_;
  uint64_t settled_ = 0;
};

}  // namespace ringprof::internal

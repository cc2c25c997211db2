#include "ranks/zone_cover.h"

#include <algorithm>

namespace ringprof::internal {

namespace {

using Span = ZoneCover::Span;

// How much of [b, e) the sorted, disjoint spans cover.
uint64_t covered(const std::vector<Span>& spans, uint64_t b, uint64_t e) {
  uint64_t sum = 0;
  auto it = std::upper_bound(spans.begin(), spans.end(), b, [](uint64_t t, const Span& s) { return t < s.e; });
  for (; it != spans.end() && it->b < e; ++it) {
    const uint64_t lo = std::max(b, it->b), hi = std::min(e, it->e);
    if (hi > lo) sum += hi - lo;
  }
  return sum;
}

// Sorted and merged into disjoint spans (touching ones joined).
std::vector<Span> merged(std::vector<Span> spans) {
  auto by_begin = [](const Span& x, const Span& y) { return x.b < y.b; };
  // GPU work and a single thread's zones come sorted already.
  if (!std::is_sorted(spans.begin(), spans.end(), by_begin)) std::sort(spans.begin(), spans.end(), by_begin);
  std::vector<Span> out;
  for (const Span& s : spans) {
    if (!out.empty() && s.b <= out.back().e) {
      out.back().e = std::max(out.back().e, s.e);
    } else {
      out.push_back(s);
    }
  }
  return out;
}

}  // namespace

ZoneCover::Settled::Figures ZoneCover::Settled::measure(uint64_t b, uint64_t e) const {
  Figures f;
  auto it = std::upper_bound(host_.begin(), host_.end(), b, [](uint64_t t, const Span& s) { return t < s.e; });
  for (; it != host_.end() && it->b < e; ++it) {
    const uint64_t lo = std::max(b, it->b), hi = std::min(e, it->e);
    if (hi <= lo) continue;
    f.in_zones += hi - lo;
    f.idle_in_zones += (hi - lo) - covered(gpu_, lo, hi);
  }
  return f;
}

void ZoneCover::add_zone(uint32_t thread, uint64_t b, uint64_t e) {
  if (e <= b || e <= settled_) return;
  if (threads_.empty() || thread != last_thread_) {  // a segment holds one thread's zones in a row
    auto [slot, added] = thread_slot_.try_emplace(thread, threads_.size());
    if (added) threads_.emplace_back();
    last_thread_ = thread;
    last_slot_ = slot->second;
  }
  std::deque<Span>& q = threads_[last_slot_];
  if (!q.empty() && e < q.back().b) {  // out of the thread's end order
    odd_host_.push_back({b, e});
    return;
  }
  while (!q.empty() && q.back().e >= b) {
    b = std::min(b, q.back().b);
    e = std::max(e, q.back().e);
    q.pop_back();
    --host_spans_;
  }
  q.push_back({b, e});
  ++host_spans_;
}

void ZoneCover::add_gpu(uint64_t b, uint64_t e) {
  if (e <= b || e <= settled_) return;
  if (!gpu_.empty() && b < gpu_.back().b) {  // out of start order
    odd_gpu_.push_back({b, e});
  } else if (!gpu_.empty() && b <= gpu_.back().e) {
    gpu_.back().e = std::max(gpu_.back().e, e);
  } else {
    gpu_.push_back({b, e});
  }
}

uint64_t ZoneCover::half_time() const {
  // Each deque's ends increase (its spans are disjoint and sorted), so how
  // many spans end by t is a sum of binary searches; the half time is the
  // least t by which half of them end.
  const size_t target = size() / 2;
  if (target == 0) return 0;
  auto ended_by = [](const std::deque<Span>& q, uint64_t t) {
    return static_cast<size_t>(
        std::upper_bound(q.begin(), q.end(), t, [](uint64_t v, const Span& s) { return v < s.e; }) - q.begin());
  };
  auto count = [&](uint64_t t) {
    size_t n = ended_by(gpu_, t);
    for (const auto& q : threads_) n += ended_by(q, t);
    for (const Span& s : odd_host_) n += s.e <= t;
    for (const Span& s : odd_gpu_) n += s.e <= t;
    return n;
  };
  uint64_t lo = 0, hi = UINT64_MAX;
  while (lo < hi) {
    const uint64_t mid = lo + (hi - lo) / 2;
    if (count(mid) >= target) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  return lo;
}

void ZoneCover::settle(uint64_t cut, const std::function<void(const Settled&)>& measure) {
  if (cut <= settled_) return;
  // What lies in [settled_, cut): a deque's spans are sorted by begin.
  auto take = [&](const Span& s, std::vector<Span>& out) {
    const Span c{std::max(s.b, settled_), std::min(s.e, cut)};
    if (c.e > c.b) out.push_back(c);
  };
  std::vector<Span> host, gpu;
  for (const auto& q : threads_)
    for (auto it = q.begin(); it != q.end() && it->b < cut; ++it) take(*it, host);
  for (const Span& s : odd_host_) take(s, host);
  for (auto it = gpu_.begin(); it != gpu_.end() && it->b < cut; ++it) take(*it, gpu);
  for (const Span& s : odd_gpu_) take(s, gpu);
  Settled settled;
  settled.host_ = merged(std::move(host));
  settled.gpu_ = merged(std::move(gpu));
  measure(settled);

  // Forget what ends by cut; a span across it stays whole (a later zone of
  // its thread may still reach back over it).
  for (auto& q : threads_) {
    while (!q.empty() && q.front().e <= cut) {
      q.pop_front();
      --host_spans_;
    }
  }
  while (!gpu_.empty() && gpu_.front().e <= cut) gpu_.pop_front();
  auto ended = [cut](const Span& s) { return s.e <= cut; };
  std::erase_if(odd_host_, ended);
  std::erase_if(odd_gpu_, ended);
  settled_ = cut;
}

}  // namespace ringprof::internal

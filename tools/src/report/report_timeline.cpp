#include "report/report_timeline.h"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "reading/reorder_window.h"
#include "ringprof/gpu.h"
#include "ringprof/tools/sample_profile.h"
#include "ringprof/tools/thread_filter.h"
#include "ringprof/tools/zone_tracker.h"

namespace ringprof::internal {

namespace {

// GPU records arrive in CUPTI's buffer order, not in time order: this many
// wait to be put in order before the union sweep (as the ranks scan does).
constexpr size_t kGpuReorder = 65536;

struct Interval {
  uint64_t start, end;
  uint64_t order() const { return start; }
};

class TimelineScan final : public SegmentVisitor {
 public:
  explicit TimelineScan(const TimelineOptions& o)
      : options_(o), buckets_(std::max<size_t>(o.buckets, 1)), threads_(o.thread),
        zones_([this](const ClosedZone& z) { closed(z); }) {
    out_.begin_ns = o.begin_ns;
    const uint64_t span = o.end_ns > o.begin_ns ? o.end_ns - o.begin_ns : 1;
    out_.range_ns = span;
    out_.bucket_ns = std::max<uint64_t>(1, (span + buckets_ - 1) / buckets_);
    visible_ns_ = std::max<uint64_t>(1, span / kVisibleFraction);
  }

  void begin_process(const ProcessState& p) override {
    process_ = &p;
    zones_.clear();
    devices_.clear();
    threads_zones_.clear();
    names_here_.clear();
  }

  void segment(const SegmentView& view) override {
    for (const DecodedEvent& e : view.segment.events) zones_.add(e);
    for (const GpuActivity& a : view.segment.gpu) {
      if (a.kind != GpuKind::Kernel && a.kind != GpuKind::Memcpy && a.kind != GpuKind::Memset) continue;
      if (a.end_ns <= a.start_ns) continue;
      Device& d = device(a.device);
      d.window.push(Interval{a.start_ns, a.end_ns}, [&](const Interval& i) { sweep(d, i); });
    }
  }

  void end_process(const ProcessState& p) override {
    zones_.finish();
    // Devices in order, each swept to its end.
    std::map<uint32_t, Device*> ordered;
    for (auto& [id, d] : devices_) ordered[id] = &d;
    for (auto& [id, dev] : ordered) {
      Device* d = dev;  // a lambda may not capture a structured binding before C++20 as clang 14 reads it
      d->window.drain([this, d](const Interval& i) { sweep(*d, i); });
      if (d->open) emit(*d, d->current);
      d->util.pid = p.pid;
      d->util.device = id;
      out_.gpus.push_back(std::move(d->util));
      d->lane.pid = p.pid;
      d->lane.label = "GPU " + std::to_string(id);
      d->lane.gpu = true;
      gpu_lanes_.push_back(std::move(d->lane));
    }
    // This process's threads compete with the busiest so far, and its GPUs
    // with the busiest GPUs.
    for (auto& [index, lane] : threads_zones_) {
      flush_cover(lane);
      if (lane.busy_ns == 0 && lane.spans.empty()) continue;
      lane.pid = p.pid;
      lane.label = thread_label(p, index);
      busiest_.push_back(std::move(static_cast<TimelineLane&>(lane)));
    }
    keep_busiest(busiest_);
    keep_busiest(gpu_lanes_);
    process_ = nullptr;
  }

  void keep_busiest(std::vector<TimelineLane>& lanes) const {
    std::stable_sort(lanes.begin(), lanes.end(),
                     [](const TimelineLane& a, const TimelineLane& b) { return a.busy_ns > b.busy_ns; });
    if (lanes.size() > options_.threads) lanes.resize(options_.threads);
  }

  ReportTimeline take() {
    for (TimelineLane& lane : busiest_) {
      trim(lane);
      std::sort(lane.spans.begin(), lane.spans.end(), [](const TimelineSpan& a, const TimelineSpan& b) {
        return a.begin_ns != b.begin_ns ? a.begin_ns < b.begin_ns : a.depth < b.depth;
      });
      out_.lanes.push_back(std::move(lane));
    }
    for (TimelineLane& lane : gpu_lanes_) out_.lanes.push_back(std::move(lane));
    return std::move(out_);
  }

 private:
  struct Device {
    ReorderWindow<Interval> window{kGpuReorder};
    bool open = false;
    Interval current{0, 0};
    GpuUtilisation util;
    TimelineLane lane;
    uint64_t gap_ns = 1;  // gaps shorter than this join spans
  };
  // A thread's lane while it is read, with the stretch of short zones being covered.
  struct ThreadLane : TimelineLane {
    bool covering = false;
    TimelineSpan cover;
  };

  Device& device(uint32_t id) {
    auto [it, inserted] = devices_.try_emplace(id);
    if (inserted) {
      it->second.util.busy.assign(buckets_, 0.0);
      it->second.gap_ns = visible_ns_;
    }
    return it->second;
  }

  // In start order: overlapping records join the current busy span.
  void sweep(Device& d, const Interval& i) {
    if (d.open && i.start <= d.current.end) {
      d.current.end = std::max(d.current.end, i.end);
      return;
    }
    if (d.open) emit(d, d.current);
    d.current = i;
    d.open = true;
  }

  void emit(Device& d, Interval s) {
    s.start = std::max(s.start, options_.begin_ns);
    s.end = std::min(s.end, options_.end_ns);
    if (s.end <= s.start) return;
    d.util.busy_ns += s.end - s.start;
    d.lane.busy_ns += s.end - s.start;
    for (uint64_t t = s.start; t < s.end;) {
      const size_t b = std::min<size_t>((t - out_.begin_ns) / out_.bucket_ns, buckets_ - 1);
      const uint64_t bucket_end = out_.begin_ns + (b + 1) * out_.bucket_ns;
      const uint64_t until = b + 1 == buckets_ ? s.end : std::min(s.end, bucket_end);
      d.util.busy[b] += static_cast<double>(until - t) / static_cast<double>(out_.bucket_ns);
      t = until;
    }
    // A gap too short to see joins the spans either side of it; past the
    // lane's budget, the gap that joins doubles and the spans so far merge again.
    std::vector<TimelineSpan>& spans = d.lane.spans;
    if (!spans.empty() && s.start - spans.back().end_ns < d.gap_ns) spans.back().end_ns = s.end;
    else spans.push_back(TimelineSpan{s.start, s.end, 0, 0});
    while (spans.size() > options_.zones_per_thread) {
      d.gap_ns *= 2;
      size_t kept = 0;
      for (size_t i = 1; i < spans.size(); ++i) {
        if (spans[i].begin_ns - spans[kept].end_ns < d.gap_ns) spans[kept].end_ns = spans[i].end_ns;
        else spans[++kept] = spans[i];
      }
      spans.resize(kept + 1);
    }
  }

  void closed(const ClosedZone& z) {
    if (!threads_.matches(*process_, z.thread_index)) return;
    const uint64_t b = std::max(z.begin_ns, options_.begin_ns), e = std::min(z.end_ns, options_.end_ns);
    if (e <= b) return;
    ThreadLane& lane = threads_zones_[z.thread_index];
    if (z.depth == 0) lane.busy_ns += e - b;
    if (e - b < visible_ns_) {
      ++lane.too_short;
      if (z.depth == 0) cover(lane, b, e);
      return;
    }
    lane.spans.push_back(TimelineSpan{b, e, name(z.loc), z.depth});
    if (lane.spans.size() >= 2 * options_.zones_per_thread) trim(lane);
  }

  // Short outermost zones, in end order on their thread: the stretch they
  // cover grows across gaps too short to see, and is drawn when it is long
  // enough to see.
  void cover(ThreadLane& lane, uint64_t b, uint64_t e) {
    if (lane.covering && b <= lane.cover.end_ns + visible_ns_) {
      lane.cover.end_ns = std::max(lane.cover.end_ns, e);
      return;
    }
    flush_cover(lane);
    lane.covering = true;
    lane.cover = TimelineSpan{b, e, 0, 0};
  }
  void flush_cover(ThreadLane& lane) {
    if (!lane.covering) return;
    lane.covering = false;
    if (lane.cover.end_ns - lane.cover.begin_ns < visible_ns_) return;
    lane.cover.name = short_zones_name();
    lane.spans.push_back(lane.cover);
    if (lane.spans.size() >= 2 * options_.zones_per_thread) trim(lane);
  }
  uint32_t short_zones_name() {
    auto [g, added] = name_ids_.try_emplace(kShortZones, static_cast<uint32_t>(out_.names.size()));
    if (added) out_.names.push_back(kShortZones);
    return g->second;
  }

  // The longest `zones_per_thread` stay (outer zones first on a tie).
  void trim(TimelineLane& lane) {
    if (lane.spans.size() <= options_.zones_per_thread) return;
    auto longer = [](const TimelineSpan& a, const TimelineSpan& b) {
      const uint64_t la = a.end_ns - a.begin_ns, lb = b.end_ns - b.begin_ns;
      return la != lb ? la > lb : a.depth < b.depth;
    };
    std::nth_element(lane.spans.begin(), lane.spans.begin() + static_cast<ptrdiff_t>(options_.zones_per_thread),
                     lane.spans.end(), longer);
    lane.over_budget += lane.spans.size() - options_.zones_per_thread;
    lane.spans.resize(options_.zones_per_thread);
  }

  uint32_t name(uint32_t loc) {
    auto [it, inserted] = names_here_.try_emplace(loc, 0);
    if (inserted) {
      const std::string n = process_->location_name(loc);
      auto [g, added] = name_ids_.try_emplace(n, static_cast<uint32_t>(out_.names.size()));
      if (added) out_.names.push_back(n);
      it->second = g->second;
    }
    return it->second;
  }

  const TimelineOptions& options_;
  const size_t buckets_;
  ThreadFilter threads_;
  ZoneTracker zones_;
  uint64_t visible_ns_ = 1;
  const ProcessState* process_ = nullptr;
  std::unordered_map<uint32_t, Device> devices_;
  std::unordered_map<uint32_t, ThreadLane> threads_zones_;
  std::unordered_map<uint32_t, uint32_t> names_here_;  // this process's location id -> names index
  std::unordered_map<std::string, uint32_t> name_ids_;
  std::vector<TimelineLane> busiest_;
  std::vector<TimelineLane> gpu_lanes_;
  ReportTimeline out_;
};

}  // namespace

ReportTimeline scan_timeline(TraceReader& reader, const TimelineOptions& options) {
  TimelineScan scan(options);
  reader.read(scan);
  return scan.take();
}

}  // namespace ringprof::internal

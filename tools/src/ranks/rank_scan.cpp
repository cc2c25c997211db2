#include "ringprof/tools/rank_scan.h"

#include <algorithm>
#include <array>
#include <utility>

#include "ringprof/tools/collectives.h"

namespace ringprof {

namespace {

enum GpuCategory : uint8_t { kCompute = 0, kComm = 1, kMemory = 2 };

struct GpuInterval {
  uint64_t start, end;
  uint32_t name;  // into Impl::kernel_names (compute kernels; 0: none)
  GpuCategory cat;
  bool operator>(const GpuInterval& o) const { return start > o.start; }
};

struct ZoneRecord {
  uint64_t begin, end, self;
  uint32_t name;  // into Impl::zone_names (0: a collective, not in the per-name totals)
  bool operator>(const ZoneRecord& o) const { return end > o.end; }
};

struct Span {
  uint64_t b = 0, e = 0;
  uint64_t len() const { return e > b ? e - b : 0; }
};
Span intersect(Span x, Span y) { return {std::max(x.b, y.b), std::min(x.e, y.e)}; }

// Per-name totals restricted to whole steps while streaming: what comes
// before the first step mark is kept apart (it is all there is when a rank
// marks no steps), what comes after the latest mark waits until the next one
// makes its step whole.
struct NameTotals {
  std::unordered_map<std::string, uint64_t> before, committed, pending;
  size_t crossed = 0;  // step marks passed so far

  void cross(size_t marks_now_before) {
    while (crossed < marks_now_before) {
      if (crossed == 0) {
        before = std::move(pending);
      } else {
        for (auto& [k, v] : pending) committed[k] += v;
      }
      pending.clear();
      ++crossed;
    }
  }
  std::unordered_map<std::string, uint64_t> result(bool whole_steps) {
    if (whole_steps) return std::move(committed);
    for (auto& [k, v] : pending) before[k] += v;
    for (auto& [k, v] : committed) before[k] += v;
    return std::move(before);
  }
};

}  // namespace

struct RankScanner::Impl {
  explicit Impl(RankScanner& o, bool only) : owner(o), collectives_only(only), tracker([this](const ClosedZone& z) {
    on_zone(z);
  }) {}

  RankScanner& owner;
  bool collectives_only;
  const ProcessState* process = nullptr;
  ZoneTracker tracker;

  // Zone locations, classified once.
  struct LocClass {
    std::string name;
    int64_t zone_key = -1;  // named collective
    bool is_arg_key = false;  // the location names the "collective" argument
  };
  std::unordered_map<uint32_t, LocClass> locs;
  std::unordered_map<std::string, uint32_t> key_ids;
  std::unordered_map<std::string, int64_t> gpu_name_key;  // kernel name -> key (-1: none)
  std::unordered_map<std::string, uint32_t> kernel_name_ids;
  std::vector<std::string> kernel_names{""};
  std::deque<CollectiveCall> nccl_calls, zone_calls, marked_calls;

  // Step marks (begin times) in time order, with their accumulators.
  std::vector<StepStats> marks;
  StepStats whole;  // everything, steps or not
  NameTotals zone_totals, kernel_totals;

  // Closed zones wait here until later ones have come (threads' events
  // arrive a drain round apart), then are accounted in end order.
  std::priority_queue<ZoneRecord, std::vector<ZoneRecord>, std::greater<>> zone_window;
  uint64_t zones_released_to = 0;
  std::unordered_map<std::string, uint32_t> zone_name_ids;
  std::vector<std::string> zone_names{""};

  // GPU sweep.
  std::priority_queue<GpuInterval, std::vector<GpuInterval>, std::greater<>> window;
  uint64_t watermark = 0;
  std::array<Span, 3> run{};

  const LocClass& loc(uint32_t id) {
    auto it = locs.find(id);
    if (it != locs.end()) return it->second;
    LocClass c;
    c.name = process->location_name(id);
    c.is_arg_key = c.name == kCollectiveArgKey;
    const std::string op = zone_collective(c.name);
    if (!op.empty()) c.zone_key = intern("zone " + op);
    return locs.emplace(id, std::move(c)).first->second;
  }

  uint32_t intern(const std::string& key) {
    auto [it, inserted] = key_ids.emplace(key, static_cast<uint32_t>(owner.scan_.keys.size()));
    if (inserted) owner.scan_.keys.push_back(key);
    return it->second;
  }

  static void push_bounded(std::deque<CollectiveCall>& q, CollectiveCall c) {
    q.push_back(c);
    if (q.size() > RankScan::kMaxCollectives) q.pop_front();
  }

  // How many step marks begin at or before t.
  size_t marks_before(uint64_t t) const {
    return static_cast<size_t>(std::upper_bound(marks.begin(), marks.end(), t,
                                                [](uint64_t v, const StepStats& s) { return v < s.begin_ns; }) -
                               marks.begin());
  }

  void see_time(uint64_t t) {
    if (t == 0) return;
    owner.scan_.first_ns = owner.scan_.first_ns == 0 ? t : std::min(owner.scan_.first_ns, t);
    owner.scan_.last_ns = std::max(owner.scan_.last_ns, t);
  }

  void on_zone(const ClosedZone& z) {
    const LocClass& c = loc(z.loc);
    int64_t marked_group = -1;
    for (const ZoneArgIds& a : z.args) {
      if (loc(a.key).is_arg_key) {
        const std::string group = zone_arg_value(*process, a.value);
        marked_group = intern("mark " + (group.empty() ? std::string("world") : group) + " " + c.name);
      }
    }
    if (z.unterminated) {
      // No end recorded (closed at the thread's last event, or an operator
      // PyTorch ends on another thread): no meeting point.
    } else if (marked_group >= 0) {
      ++owner.scan_.calls_seen;
      push_bounded(marked_calls, {static_cast<uint32_t>(marked_group), z.begin_ns, z.end_ns});
    } else if (c.zone_key >= 0) {
      ++owner.scan_.calls_seen;
      push_bounded(zone_calls, {static_cast<uint32_t>(c.zone_key), z.begin_ns, z.end_ns});
    }
    if (collectives_only || z.unterminated) return;  // an unterminated zone's end is not its own
    uint32_t name = 0;
    if (marked_group < 0 && c.zone_key < 0) {
      auto [it, inserted] = zone_name_ids.emplace(c.name, static_cast<uint32_t>(zone_names.size()));
      if (inserted) zone_names.push_back(c.name);
      name = it->second;
    }
    zone_window.push({z.begin_ns, z.end_ns, z.self_ns(), name});
    if (zone_window.size() > RankScan::kZoneWindow) {
      const ZoneRecord first = zone_window.top();
      zone_window.pop();
      account_zone(first);
    }
  }

  // A zone, in end order across the process's threads: its self time is CPU
  // time in zones (the sum over a thread's zones is the time some zone was
  // open on it), spread over the steps it crosses in proportion.
  void account_zone(const ZoneRecord& z) {
    zones_released_to = std::max(zones_released_to, z.end);
    whole.cpu_zone_ns += z.self;
    const uint64_t len = z.end - z.begin;
    for_each_step({z.begin, z.end}, [&](StepStats& st, Span part) {
      st.cpu_zone_ns += part.len() == len ? z.self
                                          : static_cast<uint64_t>(static_cast<double>(z.self) *
                                                                  static_cast<double>(part.len()) / len);
    });
    if (z.name) {
      zone_totals.cross(marks_before(z.end));
      zone_totals.pending[zone_names[z.name]] += z.self;
    }
  }

  // A span of time clipped to each step it crosses (the open one after the
  // latest mark included: it becomes whole with the next mark).
  template <class Fn>
  void for_each_step(Span s, Fn&& fn) {
    if (s.len() == 0 || marks.empty()) return;
    size_t i = marks_before(s.b);
    if (i == 0) {  // starts before the first mark: only its part after it counts
      i = 1;
      s.b = std::max(s.b, marks[0].begin_ns);
    }
    for (--i; i < marks.size(); ++i) {
      const uint64_t end = i + 1 < marks.size() ? marks[i + 1].begin_ns : UINT64_MAX;
      const Span part = intersect(s, {marks[i].begin_ns, end});
      if (part.len()) fn(marks[i], part);
      if (end >= s.e) break;
    }
  }

  void add_mark(uint64_t ts, uint64_t number) {
    if (ts < watermark || ts < zones_released_to) ++owner.scan_.late_step_marks;
    StepStats s;
    s.number = number;
    s.begin_ns = ts;
    marks.insert(marks.begin() + static_cast<ptrdiff_t>(marks_before(ts)), s);
  }

  // --- GPU sweep ---

  static void add_measures(StepStats& st, const std::array<Span, 3>& a) {
    const Span cm = intersect(a[kCompute], a[kComm]);
    const Span cy = intersect(a[kCompute], a[kMemory]);
    const Span my = intersect(a[kComm], a[kMemory]);
    const Span all = intersect(cm, a[kMemory]);
    st.compute_ns += a[kCompute].len();
    st.comm_ns += a[kComm].len();
    st.memcpy_ns += a[kMemory].len();
    st.overlap_ns += cm.len();
    st.busy_ns += a[kCompute].len() + a[kComm].len() + a[kMemory].len() - cm.len() - cy.len() - my.len() + all.len();
  }

  // Everything before t is final: no interval still to come starts earlier.
  void advance(uint64_t t) {
    if (t <= watermark) return;
    const Span span{watermark, t};
    std::array<Span, 3> active;
    bool any = false;
    for (int c = 0; c < 3; ++c) {
      active[c] = intersect(run[c], span);
      any |= active[c].len() > 0;
    }
    if (any) {
      add_measures(whole, active);
      for_each_step(span, [&](StepStats& st, Span part) {
        std::array<Span, 3> clipped;
        for (int c = 0; c < 3; ++c) clipped[c] = intersect(active[c], part);
        add_measures(st, clipped);
      });
    }
    watermark = t;
  }

  void release(const GpuInterval& iv) {
    if (iv.name) {
      kernel_totals.cross(marks_before(iv.start));
      kernel_totals.pending[kernel_names[iv.name]] += iv.end - iv.start;
    }
    if (iv.start < watermark) {
      // Out of order beyond the window: its time counts, its overlap cannot.
      ++owner.scan_.late_gpu_records;
      std::array<Span, 3> alone{};
      alone[iv.cat] = {iv.start, iv.end};
      add_measures(whole, alone);
      for_each_step({iv.start, iv.end}, [&](StepStats& st, Span part) {
        std::array<Span, 3> clipped{};
        clipped[iv.cat] = part;
        add_measures(st, clipped);
      });
      return;
    }
    advance(iv.start);
    Span& r = run[iv.cat];
    if (r.len() && iv.start <= r.e) {
      r.e = std::max(r.e, iv.end);
    } else {
      r = {iv.start, iv.end};
    }
  }

  void add_gpu(const GpuActivity& a, const std::string& name) {
    if (a.end_ns <= a.start_ns) return;
    GpuInterval iv{a.start_ns, a.end_ns, 0, kCompute};
    if (a.kind == GpuKind::Kernel) {
      if (is_nccl_kernel(name)) {
        iv.cat = kComm;
      } else {
        auto [it, inserted] = kernel_name_ids.emplace(name, static_cast<uint32_t>(kernel_names.size()));
        if (inserted) kernel_names.push_back(name);
        iv.name = it->second;
      }
    } else {
      iv.cat = kMemory;
    }
    ++owner.scan_.gpu_records;
    window.push(iv);
    if (window.size() > RankScan::kGpuWindow) {
      const GpuInterval first = window.top();
      window.pop();
      release(first);
    }
  }
};

RankScanner::RankScanner(size_t process, bool collectives_only)
    : impl_(std::make_unique<Impl>(*this, collectives_only)) {
  scan_.process = process;
}

RankScanner::~RankScanner() = default;

void RankScanner::begin_process(const ProcessState& p) { impl_->process = &p; }

void RankScanner::segment(const SegmentView& view) {
  Impl& m = *impl_;
  m.process = &view.process;
  for (const DecodedEvent& e : view.segment.events) {
    m.see_time(e.ts_ns);
    if (e.kind == EventKind::ZoneBegin || e.kind == EventKind::ZoneEnd || e.kind == EventKind::ZoneArg) {
      m.tracker.add(e);
    } else if (e.kind == EventKind::Step && !m.collectives_only) {
      m.add_mark(e.ts_ns, e.value);
    }
  }
  for (const GpuActivity& a : view.segment.gpu) {
    if (a.kind != GpuKind::Kernel && a.kind != GpuKind::Memcpy && a.kind != GpuKind::Memset) continue;
    m.see_time(a.start_ns);
    m.see_time(a.end_ns);
    const std::string& name =
        a.name > 0 && a.name <= view.segment.gpu_names.size() ? view.segment.gpu_names[a.name - 1] : std::string();
    if (a.kind == GpuKind::Kernel) {
      auto [it, inserted] = m.gpu_name_key.emplace(name, -1);
      if (inserted) {
        const std::string op = nccl_kernel_collective(name);
        if (!op.empty()) it->second = m.intern("nccl " + op);
      }
      if (it->second >= 0) {
        ++scan_.calls_seen;
        Impl::push_bounded(m.nccl_calls, {static_cast<uint32_t>(it->second), a.start_ns, a.end_ns});
      }
      if (is_nccl_kernel(name)) scan_.uses_nccl_kernels = true;
    }
    if (!m.collectives_only) m.add_gpu(a, name);
  }
}

void RankScanner::end_process(const ProcessState& p) {
  if (!impl_) return;
  Impl& m = *impl_;
  m.process = &p;
  m.tracker.finish();
  scan_.zone_ends_unmatched = m.tracker.unmatched_ends();
  // Calls: NCCL kernels when the rank has any (its process-group zones then
  // only launched them), else the named zones; marked zones always.
  std::vector<CollectiveCall> calls(m.marked_calls.begin(), m.marked_calls.end());
  if (scan_.uses_nccl_kernels) {
    calls.insert(calls.end(), m.nccl_calls.begin(), m.nccl_calls.end());
  } else {
    calls.insert(calls.end(), m.zone_calls.begin(), m.zone_calls.end());
  }
  std::sort(calls.begin(), calls.end(), [](const CollectiveCall& a, const CollectiveCall& b) {
    return std::tie(a.end_ns, a.begin_ns, a.key) < std::tie(b.end_ns, b.begin_ns, b.key);
  });
  if (calls.size() > RankScan::kMaxCollectives)
    calls.erase(calls.begin(), calls.end() - static_cast<ptrdiff_t>(RankScan::kMaxCollectives));
  scan_.calls = std::move(calls);
  if (m.collectives_only) {
    impl_.reset();
    return;
  }

  while (!m.zone_window.empty()) {
    const ZoneRecord z = m.zone_window.top();
    m.zone_window.pop();
    m.account_zone(z);
  }
  while (!m.window.empty()) {
    const GpuInterval iv = m.window.top();
    m.window.pop();
    m.release(iv);
  }
  uint64_t end = m.watermark;
  for (const Span& r : m.run) end = std::max(end, r.e);
  m.advance(end);
  // Whole steps: each mark but the last, ending where the next begins.
  for (size_t i = 0; i + 1 < m.marks.size(); ++i) {
    StepStats s = m.marks[i];
    s.end_ns = m.marks[i + 1].begin_ns;
    scan_.steps.push_back(s);
  }
  const bool whole_steps = !scan_.steps.empty();
  // Names' totals: pass every mark, so that what follows the last one (no
  // whole step) is what stays pending.
  m.zone_totals.cross(m.marks.size());
  m.kernel_totals.cross(m.marks.size());
  scan_.zone_self_ns = m.zone_totals.result(whole_steps);
  scan_.kernel_ns = m.kernel_totals.result(whole_steps);
  m.whole.begin_ns = scan_.first_ns;
  m.whole.end_ns = scan_.last_ns;
  scan_.whole = m.whole;
  // The reorder window and the step marks are done with: a job's scanners
  // stay alive until every rank is read, and must not keep them.
  impl_.reset();
}

}  // namespace ringprof

#include "ringprof/tools/rank_scan.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <deque>
#include <thread>
#include <utility>

#include "reading/reorder_window.h"
#include "ranks/zone_cover.h"
#include "ringprof/tools/collectives.h"

namespace ringprof {

namespace {

enum GpuCategory : uint8_t { kCompute = 0, kComm = 1, kMemory = 2 };

constexpr uint32_t kNoName = UINT32_MAX;

struct GpuInterval {
  uint64_t start, end;
  uint32_t name;  // into Impl::names (compute kernels; kNoName: none)
  GpuCategory cat;
  uint64_t order() const { return start; }
};

struct ZoneRecord {
  uint64_t begin, end, self;
  uint32_t name;  // into Impl::names (kNoName: a collective, not in the per-name totals)
  uint64_t order() const { return end; }
};

using internal::ReorderWindow;
using internal::StreamMergeWindow;

// Dense ids for strings, each stored once.
struct NameIds {
  std::vector<std::string> names;
  std::unordered_map<std::string, uint32_t> ids;
  uint32_t id(const std::string& name) {
    auto it = ids.find(name);
    if (it != ids.end()) return it->second;
    names.push_back(name);
    return ids.emplace(name, static_cast<uint32_t>(names.size() - 1)).first->second;
  }
};

struct Span {
  uint64_t b = 0, e = 0;
  uint64_t len() const { return e > b ? e - b : 0; }
};
Span intersect(Span x, Span y) { return {std::max(x.b, y.b), std::min(x.e, y.e)}; }

// Per-name totals restricted to whole steps while streaming: what comes
// before the first step mark is kept apart (it is all there is when a rank
// marks no steps), what comes after the latest mark waits until the next one
// makes its step whole. Names are NameIds ids.
struct NameTotals {
  using Map = std::unordered_map<uint32_t, uint64_t>;
  Map before, committed, pending;
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
  std::unordered_map<std::string, uint64_t> result(bool whole_steps, const NameIds& names) {
    if (!whole_steps) {
      for (auto& [k, v] : pending) before[k] += v;
      for (auto& [k, v] : committed) before[k] += v;
    }
    std::unordered_map<std::string, uint64_t> out;
    for (const auto& [k, v] : whole_steps ? committed : before) out[names.names[k]] += v;
    return out;
  }
};

}  // namespace

struct RankScanner::Impl {
  explicit Impl(RankScanner& o, bool only)
      : owner(o), collectives_only(only), tracker([this](const ClosedZone& z) { on_zone(z); }) {
    tracker.set_on_async([this](const ClosedZone& z) { on_async(z); });
  }

  RankScanner& owner;
  bool collectives_only;
  const ProcessState* process = nullptr;
  ZoneTracker tracker;

  // Zone locations, classified once.
  struct LocClass {
    std::string name;
    int64_t zone_key = -1;       // named collective
    bool is_arg_key = false;     // the location names the "collective" argument
    uint32_t total = kNoName;    // its id in `names` once a zone of it counts in the totals
  };
  std::unordered_map<uint32_t, LocClass> locs;
  NameIds keys;                  // collective keys (RankScan::keys)
  NameIds names;                 // zone and kernel names of the per-name totals
  // Kernel names, classified once.
  struct KernelClass {
    int64_t key = -1;            // NCCL collective
    bool nccl = false;           // communication
    uint32_t total = kNoName;    // its id in `names` (compute kernels)
  };
  std::unordered_map<std::string, KernelClass> kernels;
  std::deque<CollectiveCall> nccl_calls, zone_calls, marked_calls;

  // Step marks (begin times) in time order, with their accumulators.
  std::vector<StepStats> marks;
  StepStats whole;  // everything, steps or not
  NameTotals zone_totals, kernel_totals;

  // Closed zones wait here until later ones have come (threads' events
  // arrive a drain round apart), then are accounted in end order.
  StreamMergeWindow<ZoneRecord> zone_window{RankScan::kZoneWindow};  // one stream per thread
  uint64_t zones_released_to = 0;

  // GPU sweep.
  ReorderWindow<GpuInterval> window{RankScan::kGpuWindow};
  uint64_t watermark = 0;
  std::array<Span, 3> run{};

  // When some zone was open on some thread and when the GPU worked,
  // settled in time order into in_zones_ns and idle_in_zones_ns.
  internal::ZoneCover cover;
  size_t cover_check = RankScan::kCoverSpans;

  LocClass& loc(uint32_t id) {
    auto it = locs.find(id);
    if (it != locs.end()) return it->second;
    LocClass c;
    c.name = process->location_name(id);
    c.is_arg_key = c.name == kCollectiveArgKey;
    const std::string op = zone_collective(c.name);
    if (!op.empty()) c.zone_key = intern("zone " + op);
    return locs.emplace(id, std::move(c)).first->second;
  }

  uint32_t intern(const std::string& key) { return keys.id(key); }

  const KernelClass& kernel(const std::string& name) {
    auto it = kernels.find(name);
    if (it != kernels.end()) return it->second;
    KernelClass k;
    k.nccl = is_nccl_kernel(name);
    const std::string op = nccl_kernel_collective(name);
    if (!op.empty()) k.key = intern("nccl " + op);
    if (!k.nccl) k.total = names.id(name);
    return kernels.emplace(name, k).first->second;
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
    LocClass& c = loc(z.loc);
    int64_t marked_group = -1;
    std::string group;
    for (const ZoneArgIds& a : z.args) {
      if (loc(a.key).is_arg_key) {
        group = zone_arg_value(*process, a.value);
        if (group.empty()) group = "world";
        marked_group = intern("mark " + group + " " + c.name);
      }
    }
    const uint64_t seq = marked_group >= 0 ? push_group_call(group, c, z) : 0;
    if (z.unterminated) {
      // No end recorded (closed at the thread's last event): no meeting point.
    } else if (marked_group >= 0) {
      ++owner.scan_.calls_seen;
      push_bounded(marked_calls,
                   {static_cast<uint32_t>(marked_group), z.begin_ns, z.end_ns, intern("group " + group), seq});
    } else if (c.zone_key >= 0) {
      ++owner.scan_.calls_seen;
      push_bounded(zone_calls, {static_cast<uint32_t>(c.zone_key), z.begin_ns, z.end_ns});
    }
    if (collectives_only || z.unterminated) return;  // an unterminated zone's end is not its own
    cover_zone(z.thread_index, {z.begin_ns, z.end_ns});
    uint32_t name = kNoName;
    if (marked_group < 0 && c.zone_key < 0) {
      if (c.total == kNoName) c.total = names.id(c.name);
      name = c.total;
    }
    zone_window.push(z.thread_index, {z.begin_ns, z.end_ns, z.self_ns(), name},
                     [this](const ZoneRecord& r) { account_zone(r); });
  }

  // An async span: a process group's work (PyTorch's "gloo:all_reduce",
  // begun when the work starts and ended when it completes, on the backend's
  // threads) is a collective call. It holds no thread, so it adds nothing to
  // the time in zones.
  void on_async(const ClosedZone& z) {
    const LocClass& c = loc(z.loc);
    if (c.zone_key < 0) return;
    // ringprof.torch names the group of a call made from Python; the
    // others (DDP's, from C++) count in the world's.
    std::string group = "default";
    for (const ZoneArgIds& a : z.args)
      if (loc(a.key).is_arg_key) group = zone_arg_value(*process, a.value);
    if (group.empty()) group = "default";
    const uint64_t seq = push_group_call(group, c, z);
    if (z.unterminated) return;  // never completed: no meeting point
    ++owner.scan_.calls_seen;
    push_bounded(zone_calls, {static_cast<uint32_t>(c.zone_key), z.begin_ns, z.end_ns, intern("group " + group), seq});
  }

  // Returns the call's sequence number (0: none recorded).
  uint64_t push_group_call(const std::string& group, const LocClass& c, const ClosedZone& z) {
    GroupCall g;
    g.group = group;
    g.op = zone_collective(c.name);
    if (g.op.empty()) g.op = c.name;  // a marked zone of the program's own name
    g.name = c.name;
    for (const ZoneArgIds& a : z.args) {
      const std::string& key = loc(a.key).name;
      if (key == "Input Dims") {
        g.shapes = zone_arg_value(*process, a.value);
      } else if (key == "seq") {
        const std::string v = zone_arg_value(*process, a.value);
        std::from_chars(v.data(), v.data() + v.size(), g.seq);
      }
    }
    g.begin_ns = z.begin_ns;
    g.end_ns = z.end_ns;
    g.completed = !z.unterminated;
    const uint64_t seq = g.seq;
    group_calls.push_back(std::move(g));
    if (group_calls.size() > RankScan::kMaxCollectives) group_calls.pop_front();
    return seq;
  }
  std::deque<GroupCall> group_calls;

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
    if (z.name != kNoName) {
      zone_totals.cross(marks_before(z.end));
      zone_totals.pending[z.name] += z.self;
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

  // --- Time in zones ---

  void cover_zone(uint32_t thread, Span z) {
    if (z.len() == 0) return;
    if (z.b < cover.settled()) ++owner.scan_.late_cover_spans;
    cover.add_zone(thread, z.b, z.e);
    bound_cover();
  }

  void cover_gpu(Span g) {
    if (g.len() && g.b < cover.settled()) ++owner.scan_.late_cover_spans;
    cover.add_gpu(g.b, g.e);
    bound_cover();
  }

  // Past kCoverSpans spans, the time before which half of them end is
  // settled, but not past the GPU sweep (GPU work before it has come) unless
  // the spans reach 4 times the bound.
  void bound_cover() {
    const size_t size = cover.size();
    if (size <= cover_check) return;
    uint64_t cut = cover.half_time();
    if (owner.scan_.gpu_records > 0 && size <= 4 * RankScan::kCoverSpans) cut = std::min(cut, watermark);
    settle_cover(cut);
    cover_check = std::max(RankScan::kCoverSpans, cover.size() + RankScan::kCoverSpans / 2);
  }

  // Accounts [cover.settled(), cut) into the steps it crosses and the whole.
  void settle_cover(uint64_t cut) {
    const Span span{cover.settled(), cut};
    cover.settle(cut, [&](const internal::ZoneCover::Settled& settled) {
      auto measure = [&](StepStats& st, Span part) {
        const auto f = settled.measure(part.b, part.e);
        st.in_zones_ns += f.in_zones;
        st.idle_in_zones_ns += f.idle_in_zones;
      };
      measure(whole, span);
      for_each_step(span, measure);
    });
  }

  void add_mark(uint64_t ts, uint64_t number) {
    if (ts < watermark || ts < zones_released_to || ts < cover.settled()) ++owner.scan_.late_step_marks;
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

  // Adds what the categories did over `over` (each active at most once,
  // within it) to the totals and to each step it crosses.
  void account_gpu(const std::array<Span, 3>& active, Span over) {
    add_measures(whole, active);
    for_each_step(over, [&](StepStats& st, Span part) {
      std::array<Span, 3> clipped;
      for (int c = 0; c < 3; ++c) clipped[c] = intersect(active[c], part);
      add_measures(st, clipped);
    });
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
    if (any) account_gpu(active, span);
    watermark = t;
  }

  void release(const GpuInterval& iv) {
    cover_gpu({iv.start, iv.end});
    if (iv.name != kNoName) {
      kernel_totals.cross(marks_before(iv.start));
      kernel_totals.pending[iv.name] += iv.end - iv.start;
    }
    if (iv.start < watermark) {
      // Out of order beyond the window: its time counts, its overlap cannot.
      ++owner.scan_.late_gpu_records;
      std::array<Span, 3> alone{};
      alone[iv.cat] = {iv.start, iv.end};
      account_gpu(alone, alone[iv.cat]);
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

  void add_gpu(const GpuActivity& a, const KernelClass* k) {
    if (a.end_ns <= a.start_ns) return;
    GpuInterval iv{a.start_ns, a.end_ns, kNoName, kMemory};
    if (k) {
      iv.cat = k->nccl ? kComm : kCompute;
      iv.name = k->total;
    }
    ++owner.scan_.gpu_records;
    window.push(iv, [this](const GpuInterval& r) { release(r); });
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
    if (e.kind == EventKind::Sample) continue;
    // Every other kind, so that the tracker knows where an async span's
    // arguments end.
    m.tracker.add(e);
    if (e.kind == EventKind::Step && !m.collectives_only) {
      m.add_mark(e.ts_ns, e.value);
    }
  }
  for (const GpuActivity& a : view.segment.gpu) {
    if (a.kind != GpuKind::Kernel && a.kind != GpuKind::Memcpy && a.kind != GpuKind::Memset) continue;
    m.see_time(a.start_ns);
    m.see_time(a.end_ns);
    const Impl::KernelClass* k = nullptr;
    if (a.kind == GpuKind::Kernel) {
      static const std::string kUnnamed;
      k = &m.kernel(a.name > 0 && a.name <= view.segment.gpu_names.size() ? view.segment.gpu_names[a.name - 1]
                                                                         : kUnnamed);
      if (k->key >= 0) {
        ++scan_.calls_seen;
        Impl::push_bounded(m.nccl_calls, {static_cast<uint32_t>(k->key), a.start_ns, a.end_ns});
      }
      if (k->nccl) scan_.uses_nccl_kernels = true;
    }
    if (!m.collectives_only) m.add_gpu(a, k);
  }
}

void RankScanner::end_process(const ProcessState& p) {
  if (!impl_) return;
  Impl& m = *impl_;
  m.process = &p;
  m.tracker.finish();
  scan_.zone_ends_unmatched = m.tracker.unmatched_ends();
  scan_.group_calls.assign(m.group_calls.begin(), m.group_calls.end());
  std::stable_sort(scan_.group_calls.begin(), scan_.group_calls.end(),
                   [](const GroupCall& a, const GroupCall& b) { return a.begin_ns < b.begin_ns; });
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
  scan_.keys = std::move(m.keys.names);
  if (m.collectives_only) {
    impl_.reset();
    return;
  }

  m.zone_window.drain([&m](const ZoneRecord& z) { m.account_zone(z); });
  m.window.drain([&m](const GpuInterval& iv) { m.release(iv); });
  uint64_t end = m.watermark;
  for (const Span& r : m.run) end = std::max(end, r.e);
  m.advance(end);
  m.settle_cover(UINT64_MAX);
  // Whole steps: each mark but the last, ending where the next begins.
  for (size_t i = 0; i + 1 < m.marks.size(); ++i) {
    StepStats s = m.marks[i];
    s.end_ns = m.marks[i + 1].begin_ns;
    // The sweep and the time in zones agree but for records and marks
    // further out of order than their windows (counted apart): the parts of
    // a step never exceed it.
    s.in_zones_ns = std::min(s.in_zones_ns, s.duration_ns());
    s.idle_in_zones_ns = std::min({s.idle_in_zones_ns, s.in_zones_ns, s.idle_ns()});
    scan_.steps.push_back(s);
  }
  const bool whole_steps = !scan_.steps.empty();
  // Names' totals: pass every mark, so that what follows the last one (no
  // whole step) is what stays pending.
  m.zone_totals.cross(m.marks.size());
  m.kernel_totals.cross(m.marks.size());
  scan_.zone_self_ns = m.zone_totals.result(whole_steps, m.names);
  scan_.kernel_ns = m.kernel_totals.result(whole_steps, m.names);
  m.whole.begin_ns = scan_.first_ns;
  m.whole.end_ns = scan_.last_ns;
  m.whole.in_zones_ns = std::min(m.whole.in_zones_ns, m.whole.duration_ns());
  m.whole.idle_in_zones_ns = std::min({m.whole.idle_in_zones_ns, m.whole.in_zones_ns, m.whole.idle_ns()});
  scan_.whole = m.whole;
  // The reorder window and the step marks are done with: a job's scanners
  // stay alive until every rank is read, and must not keep them.
  impl_.reset();
}

std::vector<RankScan> scan_ranks(TraceReader& reader, bool collectives_only, unsigned threads) {
  std::vector<std::unique_ptr<RankScanner>> scanners;
  for (size_t i = 0; i < reader.processes().size(); ++i)
    scanners.push_back(std::make_unique<RankScanner>(i, collectives_only));
  if (threads == 0) threads = std::max(1u, std::thread::hardware_concurrency());
  reader.read_parallel([&](size_t i) -> SegmentVisitor& { return *scanners[i]; }, threads);
  std::vector<RankScan> scans;
  for (auto& s : scanners) scans.push_back(std::move(s->result()));
  return scans;
}

}  // namespace ringprof

// `ringprof diff`: collects both recordings' zones, kernels and samples by
// name, then compares them row by row (diff_stats.h).
#include "ringprof/tools/perf_diff.h"

#include <algorithm>
#include <map>
#include <unordered_map>

#include "ringprof/tools/sample_profile.h"
#include "ringprof/tools/sample_table.h"
#include "ringprof/tools/stack_resolver.h"
#include "ringprof/tools/thread_filter.h"
#include "ringprof/tools/trace_range.h"
#include "ringprof/tools/zone_tracker.h"
#include "symbols/demangle.h"

namespace ringprof {

namespace {

// Every call of one name: its duration and when it began (for the steps).
struct Calls {
  std::vector<uint64_t> durations;
  std::vector<uint64_t> begins;
  void add(uint64_t begin_ns, uint64_t duration_ns) {
    durations.push_back(duration_ns);
    begins.push_back(begin_ns);
  }
};

struct Collected {
  std::map<std::string, Calls> zones, kernels;
  std::vector<uint64_t> steps;  // Step events' times, sorted
  std::map<std::string, uint64_t> functions;  // self samples
  uint64_t samples = 0;
};

class DiffCollector final : public SegmentVisitor {
 public:
  DiffCollector(const DiffOptions& options, TimeRange range, Collected& out)
      : range_(range), threads_(options.thread), out_(out), zones_([this](const ClosedZone& z) { on_zone(z); }) {}

  void begin_process(const ProcessState& p) override {
    process_ = &p;
    zones_.clear();
  }
  void segment(const SegmentView& view) override {
    const DecodedSegment& seg = view.segment;
    for (const DecodedEvent& e : seg.events) {
      zones_.add(e);
      if (e.kind == EventKind::Step && range_.contains(e.ts_ns)) out_.steps.push_back(e.ts_ns);
    }
    for (const GpuActivity& a : seg.gpu) {
      if (a.kind != GpuKind::Kernel || !range_.overlaps(a.start_ns, a.end_ns)) continue;
      const std::string& raw = a.name && a.name <= seg.gpu_names.size() ? seg.gpu_names[a.name - 1] : unnamed_;
      auto dm = demangled_.find(raw);
      if (dm == demangled_.end()) dm = demangled_.emplace(raw, internal::demangle(raw)).first;
      out_.kernels[dm->second].add(a.start_ns, a.end_ns - a.start_ns);
    }
  }
  void end_process(const ProcessState&) override { zones_.finish(); }

 private:
  void on_zone(const ClosedZone& z) {
    // A zone closed only because the data ended has no real duration.
    if (z.unterminated || !range_.overlaps(z.begin_ns, z.end_ns) || !threads_.matches(*process_, z.thread_index))
      return;
    out_.zones[process_->location_name(z.loc)].add(z.begin_ns, z.duration_ns());
  }

  TimeRange range_;
  ThreadFilter threads_;
  Collected& out_;
  ZoneTracker zones_;
  const ProcessState* process_ = nullptr;
  std::unordered_map<std::string, std::string> demangled_;
  const std::string unnamed_ = "<unnamed kernel>";
};

Collected collect(TraceReader& reader, const DiffOptions& options, StackResolver& resolver) {
  Collected c;
  TimeRange range;
  if (!options.range.empty()) {
    if (auto w = resolve_trace_range(reader, options.range, nullptr)) range = *w;
  }
  DiffCollector collector(options, range, c);
  reader.read(collector);
  std::sort(c.steps.begin(), c.steps.end());
  SampleOptions so;
  so.range = options.range;
  so.thread = options.thread;
  const SampleProfile profile = collect_samples(reader, so);
  if (profile.samples > 0) {
    const SampleTable table = compute_sample_table(reader, profile, resolver);
    c.samples = table.samples;
    for (const SampleRow& r : table.rows)
      if (r.self > 0) c.functions[r.function] += r.self;
  }
  return c;
}

bool wanted(const std::string& name, const DiffOptions& o) {
  if (!o.only.empty() && std::find(o.only.begin(), o.only.end(), name) == o.only.end()) return false;
  return std::find(o.ignore.begin(), o.ignore.end(), name) == o.ignore.end();
}

// One side of a row: the summary of its durations, and its time and calls in
// each whole step (from one step to the next). `per_step` receives the
// sorted per-step totals.
DiffSide side_of(Calls* calls, const std::vector<uint64_t>& steps, std::vector<uint64_t>& per_step) {
  DiffSide s;
  per_step.clear();
  s.steps = steps.size() > 1 ? steps.size() - 1 : 0;
  if (!calls) return s;
  if (s.steps > 0) {
    per_step.assign(s.steps, 0);
    uint64_t in_steps = 0;
    for (size_t i = 0; i < calls->begins.size(); ++i) {
      const auto at = std::upper_bound(steps.begin(), steps.end(), calls->begins[i]) - steps.begin();
      if (at == 0 || static_cast<size_t>(at) > s.steps) continue;  // before the first step, or in the last
      per_step[static_cast<size_t>(at) - 1] += calls->durations[i];
      ++in_steps;
    }
    std::sort(per_step.begin(), per_step.end());
    s.calls_per_step = static_cast<double>(in_steps) / static_cast<double>(s.steps);
    s.total_per_step_ns = median_of_sorted(per_step);
  }
  s.durations = summarize_durations(calls->durations);  // sorts: after the steps, which pair begins with durations
  return s;
}

uint64_t total_of(const Calls& c) {
  uint64_t t = 0;
  for (uint64_t d : c.durations) t += d;
  return t;
}

// Names on both sides that pass the options: how many comparisons are made.
uint64_t count_common(const std::map<std::string, Calls>& base, const std::map<std::string, Calls>& head,
                      const DiffOptions& o) {
  uint64_t n = 0;
  for (const auto& [name, bc] : base) {
    auto hi = head.find(name);
    if (hi == head.end() || !wanted(name, o)) continue;
    const Calls& hc = hi->second;
    if (std::max(bc.durations.size(), hc.durations.size()) < o.min_calls ||
        std::max(total_of(bc), total_of(hc)) < o.min_total_ns)
      continue;
    ++n;
  }
  return n;
}

std::vector<DiffRow> compare_calls(std::map<std::string, Calls>& base, std::map<std::string, Calls>& head,
                                   const Collected& b, const Collected& h, const DiffOptions& o, double z,
                                   uint64_t& in_common) {
  std::vector<std::string> names;
  for (const auto& [name, calls] : base) names.push_back(name);
  for (const auto& [name, calls] : head)
    if (!base.count(name)) names.push_back(name);
  std::vector<DiffRow> rows;
  std::vector<uint64_t> base_steps, head_steps;
  for (const std::string& name : names) {
    if (!wanted(name, o)) continue;
    auto bi = base.find(name);
    auto hi = head.find(name);
    Calls* bc = bi == base.end() ? nullptr : &bi->second;
    Calls* hc = hi == head.end() ? nullptr : &hi->second;
    DiffRow row;
    row.name = name;
    row.base = side_of(bc, b.steps, base_steps);
    row.head = side_of(hc, h.steps, head_steps);
    const DurationSummary& bd = row.base.durations;
    const DurationSummary& hd = row.head.durations;
    if (std::max(bd.calls, hd.calls) < o.min_calls || std::max(bd.total_ns, hd.total_ns) < o.min_total_ns) continue;
    if (bc && hc) {
      ++in_common;
      row.change = median_change(bc->durations, hc->durations, z, o.noise_pct);
      row.verdict = verdict_of(row.change, o.threshold_pct);
      if (row.base.steps && row.head.steps) {
        row.per_step_change = median_change(base_steps, head_steps, z, o.noise_pct);
        if (row.base.calls_per_step > 0)
          row.calls_change_pct = (row.head.calls_per_step / row.base.calls_per_step - 1) * 100;
      } else {
        row.calls_change_pct = (static_cast<double>(hd.calls) / static_cast<double>(bd.calls) - 1) * 100;
      }
    } else {
      row.verdict = bc ? Verdict::Removed : Verdict::Added;
    }
    rows.push_back(std::move(row));
  }
  sort_diff_rows(rows);
  return rows;
}

int verdict_rank(Verdict v) {
  switch (v) {
    case Verdict::Regressed: return 0;
    case Verdict::Added: return 1;
    case Verdict::Removed: return 2;
    case Verdict::Unchanged: return 3;
    case Verdict::Improved: return 4;
  }
  return 3;
}

}  // namespace

void sort_diff_rows(std::vector<DiffRow>& rows) {
  std::stable_sort(rows.begin(), rows.end(), [](const DiffRow& a, const DiffRow& b) {
    const int ra = verdict_rank(a.verdict), rb = verdict_rank(b.verdict);
    if (ra != rb) return ra < rb;
    if (a.change.change_pct != b.change.change_pct) return a.change.change_pct > b.change.change_pct;
    return a.name < b.name;
  });
}

DiffResult compute_diff(TraceReader& base, TraceReader& head, const DiffOptions& options) {
  StackResolver resolver(options.symbol_paths);
  Collected b = collect(base, options, resolver);
  Collected h = collect(head, options, resolver);
  DiffResult r;
  r.threshold_pct = options.threshold_pct;
  r.noise_pct = options.noise_pct;
  r.base_steps = b.steps.size() > 1 ? b.steps.size() - 1 : 0;
  r.head_steps = h.steps.size() > 1 ? h.steps.size() - 1 : 0;
  r.base_samples = b.samples;
  r.head_samples = h.samples;
  std::map<std::string, std::pair<uint64_t, uint64_t>> functions;
  for (const auto& [f, n] : b.functions) functions[f].first = n;
  for (const auto& [f, n] : h.functions) functions[f].second = n;
  uint64_t comparisons = count_common(b.zones, h.zones, options) + count_common(b.kernels, h.kernels, options);
  for (const auto& [f, counts] : functions)
    comparisons += counts.first && counts.second && wanted(f, options) &&
                   std::max(counts.first, counts.second) >= options.min_calls;
  r.comparisons = comparisons;
  const double z = simultaneous_z(comparisons);
  r.zones = compare_calls(b.zones, h.zones, b, h, options, z, r.in_common);
  r.kernels = compare_calls(b.kernels, h.kernels, b, h, options, z, r.in_common);
  for (const auto& [f, counts] : functions) {
    if (!wanted(f, options) || std::max(counts.first, counts.second) < options.min_calls) continue;
    FunctionDiffRow row;
    row.function = f;
    row.base_samples = counts.first;
    row.head_samples = counts.second;
    row.base_share_pct = b.samples ? 100.0 * static_cast<double>(counts.first) / static_cast<double>(b.samples) : 0;
    row.head_share_pct = h.samples ? 100.0 * static_cast<double>(counts.second) / static_cast<double>(h.samples) : 0;
    if (counts.first && counts.second) {
      ++r.in_common;
      row.change = share_change(counts.first, b.samples, counts.second, h.samples, z, options.noise_pct);
      row.verdict = verdict_of(row.change, options.threshold_pct);
    } else {
      row.verdict = counts.first ? Verdict::Removed : Verdict::Added;
    }
    r.functions.push_back(std::move(row));
  }
  std::stable_sort(r.functions.begin(), r.functions.end(), [](const FunctionDiffRow& x, const FunctionDiffRow& y) {
    const int rx = verdict_rank(x.verdict), ry = verdict_rank(y.verdict);
    if (rx != ry) return rx < ry;
    return std::max(x.base_share_pct, x.head_share_pct) > std::max(y.base_share_pct, y.head_share_pct);
  });
  return r;
}

bool regressed_above(const DiffResult& diff, double pct) {
  for (const auto* rows : {&diff.zones, &diff.kernels})
    for (const DiffRow& r : *rows)
      if (r.verdict == Verdict::Regressed && r.change.change_pct > pct) return true;
  return false;
}

}  // namespace ringprof

// `ringprof diff`: collects both recordings' zones, kernels and samples by
// name, then compares them row by row (diff_stats.h).
#include "ringprof/tools/perf_diff.h"

#include <algorithm>
#include <cmath>
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

// Every call of one name: its duration and when it began (for the steps);
// one run's calls, steps and samples (perf_diff.h).
using Calls = DiffCalls;
using Collected = DiffRunData;

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

Collected collect(TraceReader& reader, const DiffOptions& options, StackResolver& resolver, const TimeRange* window) {
  Collected c;
  TimeRange range;
  if (window) {
    range = *window;
  } else if (!options.range.empty()) {
    if (auto w = resolve_trace_range(reader, options.range, nullptr)) range = *w;
  }
  DiffCollector collector(options, range, c);
  reader.read(collector);
  std::sort(c.steps.begin(), c.steps.end());
  SampleOptions so;
  so.range = options.range;
  if (window) {  // the sample collector takes a spec: the window as from/to past the trace's first event
    so.range = RangeSpec{};
    const auto span = reader.time_range();
    const uint64_t first = span ? span->first : 0;
    so.range.from_ns = window->begin_ns > first ? window->begin_ns - first : 0;
    so.range.to_ns = window->end_ns > first ? window->end_ns - first : 0;
  }
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

// One side of a row over its runs: the summary of all its calls, its time
// and calls in each whole step (from one step to the next), and per run
// (for the run-to-run comparison) the log of its median call and of its
// median time per step. `per_step` receives the sorted per-step totals of
// every run.
struct SideOfRuns {
  DiffSide side;
  std::vector<uint64_t> per_step;
  std::vector<double> run_logs, run_step_logs;
  std::vector<uint64_t> durations;  // every run's, sorted
};

SideOfRuns side_of(const std::vector<Collected>& runs, const std::string& name, bool kernels) {
  SideOfRuns out;
  DiffSide& s = out.side;
  uint64_t in_steps = 0;
  for (const Collected& run : runs) {
    const auto& by_name = kernels ? run.kernels : run.zones;
    const uint64_t steps = run.steps.size() > 1 ? run.steps.size() - 1 : 0;
    s.steps += steps;
    auto it = by_name.find(name);
    if (it == by_name.end()) continue;
    const Calls& calls = it->second;
    if (steps > 0) {
      std::vector<uint64_t> per_step(steps, 0);
      for (size_t i = 0; i < calls.begins.size(); ++i) {
        const auto at = std::upper_bound(run.steps.begin(), run.steps.end(), calls.begins[i]) - run.steps.begin();
        if (at == 0 || static_cast<size_t>(at) > steps) continue;  // before the first step, or in the last
        per_step[static_cast<size_t>(at) - 1] += calls.durations[i];
        ++in_steps;
      }
      std::sort(per_step.begin(), per_step.end());
      out.run_step_logs.push_back(std::log(std::max(median_of_sorted(per_step), 1.0)));
      out.per_step.insert(out.per_step.end(), per_step.begin(), per_step.end());
    }
    std::vector<uint64_t> sorted = calls.durations;
    std::sort(sorted.begin(), sorted.end());
    if (sorted.size() >= kMinSamples) out.run_logs.push_back(std::log(std::max(median_of_sorted(sorted), 1.0)));
    out.durations.insert(out.durations.end(), sorted.begin(), sorted.end());
  }
  if (s.steps > 0) {
    std::sort(out.per_step.begin(), out.per_step.end());
    s.calls_per_step = static_cast<double>(in_steps) / static_cast<double>(s.steps);
    s.total_per_step_ns = median_of_sorted(out.per_step);
  }
  s.durations = summarize_durations(out.durations);
  return out;
}

uint64_t total_of(const Calls& c) {
  uint64_t t = 0;
  for (uint64_t d : c.durations) t += d;
  return t;
}

// Every run's calls of each name, and their total time (for the options).
struct Pooled {
  std::map<std::string, uint64_t> calls, total_ns;
};

Pooled pool(const std::vector<Collected>& runs, bool kernels) {
  Pooled p;
  for (const Collected& run : runs)
    for (const auto& [name, c] : kernels ? run.kernels : run.zones) {
      p.calls[name] += c.durations.size();
      p.total_ns[name] += total_of(c);
    }
  return p;
}

// Names on both sides that pass the options: how many comparisons are made.
uint64_t count_common(const Pooled& base, const Pooled& head, const DiffOptions& o) {
  uint64_t n = 0;
  for (const auto& [name, calls] : base.calls) {
    auto hi = head.calls.find(name);
    if (hi == head.calls.end() || !wanted(name, o)) continue;
    if (std::max(calls, hi->second) < o.min_calls ||
        std::max(base.total_ns.at(name), head.total_ns.at(name)) < o.min_total_ns)
      continue;
    ++n;
  }
  return n;
}

// With several runs on both sides, the change comes from the runs' spread;
// with one run on a side, from the calls' (with the noise floor).
bool by_runs(const std::vector<Collected>& b, const std::vector<Collected>& h) { return b.size() > 1 && h.size() > 1; }

// With the runs' spread measured, the floor is a resolution (diff_stats.h).
constexpr double kRunsFloorPct = 0.5;

std::vector<DiffRow> compare_calls(const std::vector<Collected>& b, const std::vector<Collected>& h, bool kernels,
                                   const Pooled& base, const Pooled& head, const DiffOptions& o, uint64_t comparisons,
                                   uint64_t& in_common) {
  std::vector<std::string> names;
  for (const auto& [name, calls] : base.calls) names.push_back(name);
  for (const auto& [name, calls] : head.calls)
    if (!base.calls.count(name)) names.push_back(name);
  const double z = simultaneous_z(comparisons);
  std::vector<DiffRow> rows;
  for (const std::string& name : names) {
    if (!wanted(name, o)) continue;
    const bool in_base = base.calls.count(name) > 0, in_head = head.calls.count(name) > 0;
    SideOfRuns bs = side_of(b, name, kernels), hs = side_of(h, name, kernels);
    DiffRow row;
    row.name = name;
    row.base = bs.side;
    row.head = hs.side;
    const DurationSummary& bd = row.base.durations;
    const DurationSummary& hd = row.head.durations;
    if (std::max(bd.calls, hd.calls) < o.min_calls || std::max(bd.total_ns, hd.total_ns) < o.min_total_ns) continue;
    if (in_base && in_head) {
      ++in_common;
      const bool steps = row.base.steps && row.head.steps;
      // A row with fewer than two run figures a side (under 5 calls in a
      // run: a zone once per run) is compared as one run a side would be,
      // over all its calls, with the floor.
      auto two = [](const std::vector<double>& x, const std::vector<double>& y) {
        return x.size() > 1 && y.size() > 1;
      };
      if (by_runs(b, h) && two(bs.run_logs, hs.run_logs)) {
        row.change = runs_change(bs.run_logs, hs.run_logs, comparisons, kRunsFloorPct);
      } else {
        row.change = median_change(bs.durations, hs.durations, z, o.noise_pct);
      }
      if (steps && by_runs(b, h) && two(bs.run_step_logs, hs.run_step_logs)) {
        row.per_step_change = runs_change(bs.run_step_logs, hs.run_step_logs, comparisons, kRunsFloorPct);
      } else if (steps) {
        row.per_step_change = median_change(bs.per_step, hs.per_step, z, o.noise_pct);
      }
      row.verdict = verdict_of(row.change, o.threshold_pct);
      if (steps) {
        if (row.base.calls_per_step > 0)
          row.calls_change_pct = (row.head.calls_per_step / row.base.calls_per_step - 1) * 100;
      } else {
        row.calls_change_pct = (static_cast<double>(hd.calls) / static_cast<double>(bd.calls) - 1) * 100;
      }
    } else {
      row.verdict = in_base ? Verdict::Removed : Verdict::Added;
    }
    rows.push_back(std::move(row));
  }
  sort_diff_rows(rows);
  return rows;
}

// The process as a whole: per run, the mean of the log median call of the
// zones every run of both sides holds, weighted by each zone's share of the
// base's time in them. It moves with what moves every zone together (the
// machine, a build flag), and by a zone's share of the time when one zone
// alone changed.
DiffRow process_row(const std::vector<Collected>& b, const std::vector<Collected>& h, const DiffOptions& o,
                    uint64_t comparisons) {
  DiffRow row;  // no name: no process row
  if (b.empty() || h.empty()) return row;
  std::map<std::string, double> weight;
  for (const auto& [name, c] : b.front().zones) {
    if (!wanted(name, o)) continue;
    bool everywhere = true;
    for (const auto* side : {&b, &h})
      for (const Collected& run : *side) {
        auto it = run.zones.find(name);
        everywhere = everywhere && it != run.zones.end() && it->second.durations.size() >= kMinSamples;
      }
    if (!everywhere) continue;
    for (const Collected& run : b) weight[name] += static_cast<double>(total_of(run.zones.at(name)));
  }
  double sum = 0;
  for (const auto& [name, w] : weight) sum += w;
  if (weight.size() < 2 || sum <= 0) return row;  // one zone: its own row says it
  auto run_logs = [&](const std::vector<Collected>& side) {
    std::vector<double> logs;
    for (const Collected& run : side) {
      double v = 0;
      for (const auto& [name, w] : weight) {
        std::vector<uint64_t> d = run.zones.at(name).durations;
        std::sort(d.begin(), d.end());
        v += w / sum * std::log(std::max(median_of_sorted(d), 1.0));
      }
      logs.push_back(v);
    }
    return logs;
  };
  row.name = "(all zones, weighted by time)";
  row.change = runs_change(run_logs(b), run_logs(h), comparisons, kRunsFloorPct);
  row.verdict = verdict_of(row.change, o.threshold_pct);
  return row;
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
  return compute_diff_runs({&base}, {&head}, options);
}

DiffResult compute_diff_runs(const std::vector<TraceReader*>& base, const std::vector<TraceReader*>& head,
                             const DiffOptions& options) {
  StackResolver resolver(options.symbol_paths);
  std::vector<Collected> b, h;
  auto window = [](const std::vector<TimeRange>& w, size_t i) { return i < w.size() ? &w[i] : nullptr; };
  for (size_t i = 0; i < base.size(); ++i)
    b.push_back(collect(*base[i], options, resolver, window(options.base_windows, i)));
  for (size_t i = 0; i < head.size(); ++i)
    h.push_back(collect(*head[i], options, resolver, window(options.head_windows, i)));
  return compute_diff_data(b, h, options);
}

DiffResult compute_diff_data(const std::vector<DiffRunData>& b, const std::vector<DiffRunData>& h,
                             const DiffOptions& options) {
  DiffResult r;
  r.threshold_pct = options.threshold_pct;
  r.noise_pct = by_runs(b, h) ? kRunsFloorPct : options.noise_pct;
  r.pooled_noise_pct = options.noise_pct;
  r.base_runs = b.size();
  r.head_runs = h.size();
  r.noise_measured = by_runs(b, h);
  // Sampled functions: the shares of all runs' samples together.
  std::map<std::string, std::pair<uint64_t, uint64_t>> functions;
  for (const auto* side : {&b, &h})
    for (const Collected& c : *side) {
      const bool is_base = side == &b;
      (is_base ? r.base_steps : r.head_steps) += c.steps.size() > 1 ? c.steps.size() - 1 : 0;
      (is_base ? r.base_samples : r.head_samples) += c.samples;
      for (const auto& [f, n] : c.functions) (is_base ? functions[f].first : functions[f].second) += n;
    }
  const Pooled base_zones = pool(b, false), head_zones = pool(h, false);
  const Pooled base_kernels = pool(b, true), head_kernels = pool(h, true);
  uint64_t comparisons =
      count_common(base_zones, head_zones, options) + count_common(base_kernels, head_kernels, options);
  for (const auto& [f, counts] : functions)
    comparisons += counts.first && counts.second && wanted(f, options) &&
                   std::max(counts.first, counts.second) >= options.min_calls;
  if (r.noise_measured) ++comparisons;  // the process row
  r.comparisons = comparisons;
  const double z = simultaneous_z(comparisons);
  r.zones = compare_calls(b, h, false, base_zones, head_zones, options, comparisons, r.in_common);
  r.kernels = compare_calls(b, h, true, base_kernels, head_kernels, options, comparisons, r.in_common);
  r.process = process_row(b, h, options, comparisons);  // with one run a side: the estimate alone
  for (const auto& [f, counts] : functions) {
    if (!wanted(f, options) || std::max(counts.first, counts.second) < options.min_calls) continue;
    FunctionDiffRow row;
    row.function = f;
    row.base_samples = counts.first;
    row.head_samples = counts.second;
    row.base_share_pct =
        r.base_samples ? 100.0 * static_cast<double>(counts.first) / static_cast<double>(r.base_samples) : 0;
    row.head_share_pct =
        r.head_samples ? 100.0 * static_cast<double>(counts.second) / static_cast<double>(r.head_samples) : 0;
    if (counts.first && counts.second) {
      ++r.in_common;
      row.change = share_change(counts.first, r.base_samples, counts.second, r.head_samples, z, options.noise_pct);
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
  return diff.process.verdict == Verdict::Regressed && diff.process.change.change_pct > pct;
}

}  // namespace ringprof

// The data `ringprof report` puts in its page: each section's summary,
// computed by the same library calls the other commands make, so the page
// and `ringprof table` / `gpu` / `ranks` agree figure for figure.
#include <algorithm>
#include <cmath>

#include "common/json_text.h"
#include "report/report_samples.h"
#include "report/report_timeline.h"
#include "ringprof/gpu.h"
#include "ringprof/tools/findings.h"
#include "ringprof/tools/gpu_summary.h"
#include "ringprof/tools/mark_text.h"
#include "ringprof/tools/html_report.h"
#include "ringprof/tools/heap_profile.h"
#include "ringprof/tools/memory_summary.h"
#include "ringprof/tools/op_table.h"
#include "ringprof/tools/rank_report.h"
#include "ringprof/tools/sample_table.h"
#include "ringprof/tools/trace_info.h"
#include "ringprof/tools/trace_range.h"

namespace ringprof {

namespace {

using internal::JsonWriter;

// The overview's levels and windows: the level changes, triggers, crashes
// and signals the files mark (the first kMaxMarks of each process, as `ringprof
// info` lists them), and the detailed windows paired by id.
constexpr size_t kOverviewWindows = 100;

void operational(JsonWriter& j, const TraceInfo& info, const std::vector<MarkedWindow>& windows) {
  j.key("marks");
  j.open('[');
  for (const ProcessSummary& p : info.processes) {
    for (const MarkSummary& m : p.marks) {
      const MarkClass c = classify_mark(m.name);
      if (c != MarkClass::Level && c != MarkClass::Trigger && c != MarkClass::Crash && c != MarkClass::Signal) continue;
      j.open('{');
      j.field("pid", uint64_t{p.pid});
      j.field("at_ns", m.ts_ns > info.first_ns ? m.ts_ns - info.first_ns : uint64_t{0});
      j.field("text", describe_mark(m.name, m.value));
      j.close('}');
    }
  }
  j.close(']');
  j.key("windows");
  j.open('[');
  for (size_t i = 0; i < windows.size() && i < kOverviewWindows; ++i) {
    const MarkedWindow& w = windows[i];
    j.open('{');
    j.field("pid", uint64_t{w.pid});
    j.field("id", w.id);
    j.field("begin_ns", w.begin_ns > info.first_ns ? w.begin_ns - info.first_ns : uint64_t{0});
    j.key("end_ns");  // null: still open where the data ends
    w.end_ns ? j.unum(w.end_ns > info.first_ns ? w.end_ns - info.first_ns : 0) : j.null();
    j.field("triggered", w.triggered);
    j.close('}');
  }
  j.close(']');
  j.field("windows_total", uint64_t{windows.size()});
}

void overview(JsonWriter& j, const TraceInfo& info, const std::vector<MarkedWindow>& windows) {
  j.key("overview");
  j.open('{');
  operational(j, info, windows);
  j.field("first_ns", info.first_ns);
  j.field("last_ns", info.last_ns);
  j.field("duration_ns", info.last_ns > info.first_ns ? info.last_ns - info.first_ns : uint64_t{0});
  j.field("events", info.events);
  j.field("files", uint64_t{info.files.size()});
  j.field("stored_bytes", info.stored_bytes);
  j.field("dropped_ring", info.dropped_ring);
  j.field("dropped_io", info.dropped_io);
  j.field("samples", info.samples);
  j.field("samples_lost", info.samples_lost);
  j.field("gpu_records", info.gpu_records);
  j.field("gpu_dropped_records", info.gpu_stats.dropped_records);
  j.field("damaged_segments", info.bad_segments);
  j.key("processes");
  j.open('[');
  for (const ProcessSummary& p : info.processes) {
    j.open('{');
    j.field("pid", uint64_t{p.pid});
    j.field("host", p.hostname);
    std::string command;
    for (const std::string& a : p.command_line) command += (command.empty() ? "" : " ") + a;
    j.field("command", command);
    j.field("rank", p.rank ? format_rank(*p.rank) : std::string());
    j.field("events", p.events);
    j.field("threads", uint64_t{p.threads.size()});
    j.field("sampler", p.sampler_running ? p.sampler_running->mechanism : std::string("off"));
    j.close('}');
  }
  j.close(']');
  j.close('}');
}

void operators(JsonWriter& j, const TableResult& t) {
  j.key("operators");
  j.open('{');
  j.field("has_gpu", t.has_gpu);
  j.field("has_memory", t.has_memory);
  j.field("has_flops", t.has_flops);
  j.field("zones", t.zones);
  j.field("sum_self_ns", t.sum_self_ns);
  j.key("rows");
  j.open('[');
  for (const TableRow& r : t.rows) {
    j.open('{');
    j.field("name", r.name);
    j.field("calls", r.calls);
    j.field("total_ns", r.total_ns);
    j.field("self_ns", r.self_ns);
    j.field("avg_ns", r.avg_ns());
    j.field("min_ns", r.min_ns);
    j.field("max_ns", r.max_ns);
    j.field("gpu_self_ns", r.gpu_self_ns);
    j.field("gpu_total_ns", r.gpu_total_ns);
    j.field("self_mem", r.self_mem);
    j.field("mem", r.mem);
    j.field("flops", r.flops);
    j.field("flops_ns", r.flops_ns);
    j.close('}');
  }
  j.close(']');
  j.close('}');
}

void gpu(JsonWriter& j, const GpuSummary& g, const internal::ReportTimeline& t) {
  j.key("gpu");
  if (g.devices.empty() && g.kernels.empty()) {
    j.null();
    return;
  }
  j.open('{');
  j.field("window_ns", g.range_ns);
  // Utilisation over time: the fraction of each bucket a device was busy.
  j.key("utilization_over_time");
  j.open('{');
  j.field("begin_ns", t.begin_ns);
  j.field("range_ns", t.range_ns);
  j.field("bucket_ns", t.bucket_ns);
  j.key("devices");
  j.open('[');
  for (const internal::GpuUtilisation& u : t.gpus) {
    j.open('{');
    j.field("pid", uint64_t{u.pid});
    j.field("device", uint64_t{u.device});
    j.field("busy_ns", u.busy_ns);
    j.key("busy");
    j.open('[');
    for (double v : u.busy) j.dbl(std::min(v, 1.0));
    j.close(']');
    j.close('}');
  }
  j.close(']');
  j.close('}');
  j.key("devices");
  j.open('[');
  for (const GpuDeviceRow& d : g.devices) {
    j.open('{');
    j.field("pid", uint64_t{d.pid});
    j.field("device", uint64_t{d.device});
    j.field("name", d.name);
    j.field("kernels", d.kernels);
    j.field("kernel_ns", d.kernel_ns);
    j.field("busy_ns", d.busy_ns);
    j.key("utilization");
    j.dbl(g.range_ns ? static_cast<double>(d.busy_ns) / static_cast<double>(g.range_ns) : 0.0);
    j.key("sm_efficiency");
    d.occupancy_ns ? j.dbl(d.sm_efficiency_ns / static_cast<double>(d.occupancy_ns)) : j.null();
    j.key("achieved_occupancy");
    d.occupancy_ns ? j.dbl(d.achieved_ns / static_cast<double>(d.occupancy_ns)) : j.null();
    j.close('}');
  }
  j.close(']');
  j.key("kernels");
  j.open('[');
  for (const GpuKernelRow& k : g.kernels) {
    j.open('{');
    j.field("name", k.name);
    j.field("calls", k.calls);
    j.field("total_ns", k.total_ns);
    j.field("avg_ns", k.calls ? k.total_ns / k.calls : uint64_t{0});
    j.field("min_ns", k.min_ns);
    j.field("max_ns", k.max_ns);
    j.close('}');
  }
  j.close(']');
  j.key("copies");
  j.open('[');
  for (const GpuCopyRow& c : g.copies) {
    j.open('{');
    j.field("kind", std::string(gpu_copy_kind_name(c.kind)));
    j.field("count", c.count);
    j.field("bytes", c.bytes);
    j.field("total_ns", c.total_ns);
    j.key("gb_per_s");  // bytes / ns, as `ringprof gpu` prints it
    c.total_ns ? j.dbl(static_cast<double>(c.bytes) / static_cast<double>(c.total_ns)) : j.null();
    j.close('}');
  }
  j.close(']');
  j.close('}');
}

// Per process (the first kChartProcesses), its latest kChartSteps whole
// steps: what the step time breakdown chart draws.
constexpr size_t kChartProcesses = 4;
constexpr size_t kChartSteps = 2000;
// Buckets of the charts over time (GPU utilisation, live memory), and the
// rows of the memory zone and top-function tables.
constexpr size_t kTimeBuckets = 400;
constexpr size_t kTopRows = 100;

void step_breakdown(JsonWriter& j, const RanksReport& ranks) {
  j.key("steps");
  j.open('[');
  for (size_t row = 0; row < ranks.ranks.size() && row < kChartProcesses; ++row) {
    const RankRow& k = ranks.ranks[row];
    std::vector<const StepStats*> mine;
    for (const StepRow& s : ranks.steps)
      for (const StepRankTime& t : s.ranks)
        if (t.row == row) mine.push_back(&t.stats);
    if (mine.empty()) continue;
    std::sort(mine.begin(), mine.end(), [](const StepStats* a, const StepStats* b) { return a->begin_ns < b->begin_ns; });
    if (mine.size() > kChartSteps) mine.erase(mine.begin(), mine.end() - static_cast<ptrdiff_t>(kChartSteps));
    j.open('{');
    j.field("pid", uint64_t{k.pid});
    j.field("rank", int64_t{k.rank});
    j.field("gpu", k.gpu);
    j.field("shown_from", uint64_t{k.steps - mine.size()});
    j.key("steps");
    j.open('[');
    for (const StepStats* st : mine) {
      j.open('{');
      j.field("step", st->number);
      j.field("time_ns", st->duration_ns());
      j.field("compute_ns", st->compute_ns);
      j.field("comm_ns", st->comm_ns);
      j.field("overlap_ns", st->overlap_ns);
      j.field("memcpy_ns", st->memcpy_ns);
      j.field("idle_ns", st->idle_ns());
      j.field("cpu_zone_ns", st->cpu_zone_ns);
      j.field("in_zones_ns", st->in_zones_ns);
      j.field("idle_in_zones_ns", st->idle_in_zones_ns);
      j.close('}');
    }
    j.close(']');
    j.close('}');
  }
  j.close(']');
}

void heap(JsonWriter& j, const HeapProfile& profile, const std::vector<HeapTopRow>& rows) {
  j.key("heap");
  if (profile.samples.empty()) {
    j.null();
    return;
  }
  j.open('{');
  j.field("samples", static_cast<uint64_t>(profile.samples.size()));
  j.field("interval", profile.interval);
  j.key("stacks");
  j.open('[');
  for (const HeapTopRow& r : rows) {
    j.open('{');
    j.field("stack", r.stack);
    j.field("pool", r.pool);
    j.field("alloc_bytes", static_cast<uint64_t>(std::llround(r.alloc_bytes)));
    j.field("alloc_objects", static_cast<uint64_t>(std::llround(r.alloc_objects)));
    j.field("inuse_bytes", static_cast<uint64_t>(std::llround(r.inuse_bytes)));
    j.field("samples", r.samples);
    j.close('}');
  }
  j.close(']');
  j.close('}');
}

void memory(JsonWriter& j, const MemorySummary& m) {
  j.key("memory");
  if (m.memory_events == 0) {
    j.null();
    return;
  }
  j.open('{');
  j.field("events", m.memory_events);
  j.key("pools");
  j.open('[');
  for (const MemoryPoolRow& p : m.pools) {
    j.open('{');
    j.field("pool", p.pool);
    j.field("allocs", p.allocs);
    j.field("frees", p.frees);
    j.field("allocated_bytes", p.bytes_allocated);
    j.field("freed_bytes", p.bytes_freed);
    j.field("net_bytes", p.net());
    j.field("peak_bytes", p.peak);
    j.field("unmatched_frees", p.unmatched_frees);
    j.close('}');
  }
  j.close(']');
  for (const auto& [key, rows] : {std::pair{"zones", &m.zones}, std::pair{"live", &m.live}}) {
    j.key(key);
    j.open('[');
    for (const MemoryZoneRow& z : *rows) {
      j.open('{');
      j.field("zone", z.zone);
      j.field("count", z.allocs);
      j.field("bytes", z.bytes);
      j.close('}');
    }
    j.close(']');
  }
  j.key("timeline");
  j.open('{');
  j.field("begin_ns", m.timeline_begin_ns);
  j.field("bucket_ns", m.timeline_bucket_ns);
  j.key("lines");
  j.open('[');
  for (const MemoryTimeline& t : m.timeline) {
    j.open('{');
    j.field("pid", uint64_t{t.pid});
    j.field("pool", t.pool);
    j.key("high");
    j.open('[');
    for (int64_t v : t.high) j.num(v);
    j.close(']');
    j.close('}');
  }
  j.close(']');
  j.close('}');
  j.close('}');
}

// Sample table rows under `key`: the top functions, and the Python
// functions view (its locations are the page's links to the source).
void sample_rows(JsonWriter& j, const char* key, const SampleTable& table) {
  j.key(key);
  j.open('[');
  for (const SampleRow& r : table.rows) {
    j.open('{');
    j.field("function", r.function);
    j.field("location", r.location);
    j.field("self", r.self);
    j.field("total", r.total);
    j.close('}');
  }
  j.close(']');
}

void samples(JsonWriter& j, const SampleTable& top, const SampleTable& python, const internal::FlameTree& tree) {
  j.key("samples");
  if (top.samples == 0) {
    j.null();
    return;
  }
  j.open('{');
  j.field("samples", top.samples);
  j.field("samples_lost", top.samples_lost);
  j.field("period_ns", top.period_ns);
  sample_rows(j, "top", top);
  sample_rows(j, "python", python);
  // The flame graph: names once, then nodes as [name, parent, total, self].
  j.key("flame");
  j.open('{');
  j.field("subtrees_left_out", tree.subtrees_left_out);
  j.key("names");
  j.open('[');
  for (const std::string& n : tree.names) j.str(n);
  j.close(']');
  j.key("nodes");
  j.open('[');
  for (const internal::FlameNode& n : tree.nodes) {
    j.open('[');
    j.unum(n.name);
    j.unum(n.parent);
    j.unum(n.total);
    j.unum(n.self);
    j.close(']');
  }
  j.close(']');
  j.close('}');
  j.close('}');
}

// The busiest threads' zones and the GPUs' busy spans: [begin, end, name, depth]
// with times relative to begin_ns, so the numbers stay short.
void timeline(JsonWriter& j, const internal::ReportTimeline& t, const std::string& perfetto_file) {
  j.key("timeline");
  if (t.lanes.empty()) {
    j.null();
    return;
  }
  j.open('{');
  j.field("begin_ns", t.begin_ns);
  j.field("perfetto_file", perfetto_file);
  j.key("names");
  j.open('[');
  for (const std::string& n : t.names) j.str(n);
  j.close(']');
  j.key("lanes");
  j.open('[');
  for (const internal::TimelineLane& lane : t.lanes) {
    j.open('{');
    j.field("pid", uint64_t{lane.pid});
    j.field("label", lane.label);
    j.field("gpu", lane.gpu);
    j.field("busy_ns", lane.busy_ns);
    j.field("too_short", lane.too_short);
    j.field("over_budget", lane.over_budget);
    j.key("spans");
    j.open('[');
    for (const internal::TimelineSpan& s : lane.spans) {
      j.open('[');
      j.unum(s.begin_ns - t.begin_ns);
      j.unum(s.end_ns - t.begin_ns);
      j.unum(s.name);
      j.unum(s.depth);
      j.close(']');
    }
    j.close(']');
    j.close('}');
  }
  j.close(']');
  j.close('}');
}

bool is_job(const TraceReader& reader) {
  size_t ranked = 0;
  for (const ProcessState& p : reader.processes())
    if (p.rank && p.rank->rank >= 0) ++ranked;
  return ranked > 1;
}

}  // namespace

std::string report_data_json(TraceReader& reader, const ReportOptions& options) {
  // The ranks scan first: it aligns a job's hosts by their collectives, and
  // the sections read after it see one time axis.
  RanksOptions r;
  r.threads = options.threads;
  r.selected_ranks = options.selected_ranks;
  const RanksReport ranks = analyse_ranks(reader, r);
  JsonWriter j;
  const TraceInfo info = collect_info(reader);
  // The range the charts over time span: the range asked for, else the recording.
  uint64_t begin = info.first_ns, end = info.last_ns;
  if (!options.range.empty()) {
    if (const std::optional<TimeRange> w = resolve_trace_range(reader, options.range, nullptr)) {
      begin = std::max(begin, w->begin_ns);
      end = std::min(end, w->end_ns);
    }
  }
  internal::TimelineOptions to;
  to.begin_ns = begin;
  to.end_ns = std::max(end, begin + 1);
  to.buckets = kTimeBuckets;
  to.thread = options.thread;
  const internal::ReportTimeline over_time = internal::scan_timeline(reader, to);

  j.open('{');
  j.field("version", std::string("1"));
  overview(j, info, find_marked_windows(reader));
  FindingsOptions fo;
  fo.range = options.range;
  fo.thread = options.thread;
  j.key("findings");
  j.raw(format_findings(find_problems(reader, fo, &ranks), FindingsFormat::Json));
  TableOptions table;
  table.range = options.range;
  table.thread = options.thread;
  operators(j, compute_table(reader, table));
  GpuSummaryOptions g;
  g.range = options.range;
  gpu(j, compute_gpu_summary(reader, g), over_time);
  MemoryOptions mo;
  mo.range = options.range;
  mo.thread = options.thread;
  mo.top = kTopRows;
  mo.timeline_buckets = kTimeBuckets;
  mo.timeline_begin_ns = to.begin_ns;
  mo.timeline_end_ns = to.end_ns;
  memory(j, compute_memory_summary(reader, mo));
  SampleOptions so;
  so.range = options.range;
  so.thread = options.thread;
  const SampleProfile profile = collect_samples(reader, so);
  StackResolver resolver(options.symbol_paths);
  HeapOptions ho;
  ho.range = options.range;
  ho.thread = options.thread;
  const HeapProfile heap_profile = collect_heap(reader, ho);
  // Named by their Python frames where they have any: the PyTorch or
  // Python code that allocated, not the allocator's frames below it.
  heap(j, heap_profile, heap_top_stacks(reader, heap_profile, resolver, kTopRows, true));
  const SampleTable top = compute_sample_table(reader, profile, resolver, SampleColumn::Self, kTopRows);
  const SampleTable python = compute_sample_table(reader, profile, resolver, SampleColumn::Self, kTopRows, true);
  samples(j, top, python, internal::build_flame_tree(reader, profile, resolver));
  timeline(j, over_time, options.perfetto_file);
  step_breakdown(j, ranks);
  j.key("ranks");
  if (is_job(reader)) {
    j.raw(format_ranks(ranks, RanksFormat::Json, false));
  } else {
    j.null();
  }
  j.close('}');
  return j.out;
}

}  // namespace ringprof

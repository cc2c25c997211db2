// The data `ringprof report` puts in its page: each section's summary,
// computed by the same library calls the other commands make, so the page
// and `ringprof table` / `gpu` / `ranks` agree figure for figure.
#include <algorithm>

#include "exporters/json_text.h"
#include "ringprof/gpu.h"
#include "ringprof/tools/gpu_summary.h"
#include "ringprof/tools/html_report.h"
#include "ringprof/tools/op_table.h"
#include "ringprof/tools/rank_report.h"
#include "ringprof/tools/trace_info.h"

namespace ringprof {

namespace {

using internal::JsonWriter;

void overview(JsonWriter& j, const TraceInfo& info) {
  j.key("overview");
  j.open('{');
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
    j.close('}');
  }
  j.close(']');
  j.close('}');
}

void gpu(JsonWriter& j, const GpuSummary& g) {
  j.key("gpu");
  if (g.devices.empty() && g.kernels.empty()) {
    j.null();
    return;
  }
  j.open('{');
  j.field("window_ns", g.window_ns);
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
    j.dbl(g.window_ns ? static_cast<double>(d.busy_ns) / static_cast<double>(g.window_ns) : 0.0);
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
    j.close('}');
  }
  j.close(']');
  j.close('}');
}

// Per process (the first kChartProcesses), its latest kChartSteps whole
// steps: what the step time breakdown chart draws.
constexpr size_t kChartProcesses = 4;
constexpr size_t kChartSteps = 2000;

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
      j.close('}');
    }
    j.close(']');
    j.close('}');
  }
  j.close(']');
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
  const RanksReport ranks = analyse_ranks(reader, r);
  JsonWriter j;
  j.open('{');
  j.field("version", std::string("1"));
  overview(j, collect_info(reader));
  TableOptions table;
  table.window = options.window;
  table.thread = options.thread;
  operators(j, compute_table(reader, table));
  GpuSummaryOptions g;
  g.window = options.window;
  gpu(j, compute_gpu_summary(reader, g));
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

// `ringprof table`, `gpu` and `memory`: summaries of the recording printed as
// tables (text or CSV) on stdout.
#include <cstdio>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "commands.h"
#include "options.h"
#include "reporting.h"
#include "ringprof/tools/gpu_summary.h"
#include "ringprof/tools/heap_profile.h"
#include "ringprof/tools/memory_summary.h"
#include "ringprof/tools/op_table.h"
#include "ringprof/tools/sample_profile.h"
#include "ringprof/tools/sample_table.h"
#include "ringprof/tools/stack_resolver.h"

namespace ringprof::cli {
namespace {

struct ReportArgs {
  std::vector<std::string> paths;
  RangeSpec range;
  std::string thread;
  size_t top = 0;  // 0: every row
  std::string format = "text";
  std::string sort;            // table: "" is the default column
  bool samples = false;        // table --samples
  bool python = false;         // table --samples --python, memory --heap --python
  bool group_by_args = false;  // table --group-by-args
  size_t group_by_stack = 0;   // table --group-by-stack N
  std::vector<std::string> symbol_paths;
  size_t name_width = kGpuNameWidth;  // gpu --name-width
  bool heap = false;                  // memory --heap
  std::string pool;                   // memory --heap --pool
};

TableFormat table_format(const ReportArgs& a) { return a.format == "csv" ? TableFormat::Csv : TableFormat::Text; }

void print(const std::string& text) {
  print_text(text);
  std::fflush(stdout);
}

int run_sample_table(const ReportArgs& a, SampleColumn sort) {
  Input input(a.paths);
  SampleOptions options;
  options.range = a.range;
  options.thread = a.thread;
  const SampleProfile profile = collect_samples(input.reader(), options);
  StackResolver resolver(a.symbol_paths);
  print(format_sample_table(compute_sample_table(input.reader(), profile, resolver, sort, a.top, a.python),
                            table_format(a)));
  report_symbol_warnings(resolver);
  report_no_samples(profile);
  return report_problems(input.reader());
}

// --sort's column, checked against --samples (a usage error, made by on_run
// before any file is read).
void check_sort(const ReportArgs& a) {
  const bool known = a.samples ? parse_sample_column(a.sort.empty() ? "self" : a.sort).has_value()
                               : parse_table_column(a.sort.empty() ? "total" : a.sort).has_value();
  if (!known) usage_error("bad --sort column: '" + a.sort + "'");
  if (a.python && !a.samples) usage_error("--python goes with --samples");
  if (a.group_by_stack && a.samples) usage_error("--group-by-stack goes with zones, not --samples");
}

int run_table(const ReportArgs& a) {
  std::optional<SampleColumn> sample_sort;
  std::optional<TableColumn> zone_sort;
  if (a.samples)
    sample_sort = parse_sample_column(a.sort.empty() ? "self" : a.sort);
  else
    zone_sort = parse_table_column(a.sort.empty() ? "total" : a.sort);
  if (const int status = place_range(a.paths, a.range)) return status;
  if (a.samples) return run_sample_table(a, *sample_sort);

  Input input(a.paths);
  TableOptions options;
  options.range = a.range;
  options.sort = *zone_sort;
  options.top = a.top;
  options.thread = a.thread;
  options.group_by_args = a.group_by_args;
  options.group_by_stack_n = a.group_by_stack;
  const TableResult table = compute_table(input.reader(), options);
  print(format_table(table, table_format(a)));
  report_zone_notes(0, 0, table.zones_too_deep);
  return report_problems(input.reader());
}

int run_gpu(const ReportArgs& a) {
  if (const int status = place_range(a.paths, a.range)) return status;
  Input input(a.paths);
  GpuSummaryOptions options;
  options.range = a.range;
  options.top = a.top;
  print(format_gpu_summary(compute_gpu_summary(input.reader(), options), a.name_width));
  return report_problems(input.reader());
}

int run_heap(const ReportArgs& a) {
  Input input(a.paths);
  HeapOptions options;
  options.range = a.range;
  options.thread = a.thread;
  options.pool = a.pool;
  const HeapProfile profile = collect_heap(input.reader(), options);
  StackResolver resolver(a.symbol_paths);
  const auto rows = heap_top_stacks(input.reader(), profile, resolver, a.top ? a.top : SIZE_MAX, a.python);
  report_symbol_warnings(resolver);
  print(format_heap_top(rows, profile, table_format(a)));
  return report_problems(input.reader());
}

int run_memory(const ReportArgs& a) {
  if (const int status = place_range(a.paths, a.range)) return status;
  if (a.heap) return run_heap(a);
  Input input(a.paths);
  MemoryOptions options;
  options.range = a.range;
  options.thread = a.thread;
  options.top = a.top;
  print(format_memory_summary(compute_memory_summary(input.reader(), options), table_format(a)));
  return report_problems(input.reader());
}

}  // namespace

void add_summary_commands(CLI::App& app) {
  auto table = std::make_shared<ReportArgs>();
  CLI::App& t = *app.add_subcommand(
      "table", "per-name zone totals (calls, total, self, avg, min, max), or --samples: functions by CPU samples");
  t.group("Reports");
  t.footer(
      "GPU columns (self_gpu, gpu) when the files hold GPU work, memory columns (self_mem, mem) with memory "
      "events.");
  add_paths(t, table->paths);
  t.add_flag("--samples", table->samples, "functions by self and total share of CPU samples instead of zones");
  t.add_flag("--python", table->python,
             "with --samples: Python functions only, self = samples whose innermost Python frame it is");
  t.add_flag("--group-by-args", table->group_by_args,
             "one row per name and distinct zone arguments (an Args column), e.g. PyTorch operators by input shapes");
  t.add_option("--group-by-stack", table->group_by_stack,
               "one row per name and the innermost N frames of the Python stack that called it (operators "
               "recorded with ringprof.torch.profile(with_stack=True)), shown under Source location")
      ->type_name("N");
  t.add_option("--sort", table->sort,
               "the column to sort by: name|calls|total|self|avg|min|max|self_gpu|gpu|self_mem|mem (default total); "
               "with --samples: name|self|total (default self)")
      ->type_name("COLUMN");
  add_top_option(t, table->top, "rows");
  add_format_option(t, table->format);
  add_thread_option(t, table->thread);
  add_symbol_path_option(t, table->symbol_paths);
  add_range_options(t, table->range);
  on_run(
      t, [table] { return run_table(*table); }, [table] { check_sort(*table); });

  auto gpu = std::make_shared<ReportArgs>();
  CLI::App& g =
      *app.add_subcommand("gpu", "per device GPU utilisation, SM efficiency and occupancy, kernels, copy bandwidth");
  g.group("Reports");
  add_paths(g, gpu->paths);
  add_top_option(g, gpu->top, "kernel rows");
  g.add_option_function<std::string>(
       "--name-width", [gpu](const std::string& text) { gpu->name_width = std::stoul(text); },
       "cut kernel names longer than N characters (default " + std::to_string(kGpuNameWidth) + "; 0: whole names)")
      ->type_name("N")
      ->check(digits_validator(6));
  add_range_options(g, gpu->range);
  on_run(g, [gpu] { return run_gpu(*gpu); });

  auto memory = std::make_shared<ReportArgs>();
  CLI::App& m = *app.add_subcommand("memory", "memory events per pool, the zones allocating most, what is still live");
  m.group("Reports");
  add_paths(m, memory->paths);
  add_top_option(m, memory->top, "zone rows");
  add_format_option(m, memory->format);
  add_thread_option(m, memory->thread);
  add_range_options(m, memory->range);
  m.add_flag("--heap", memory->heap,
             "the sampled heap instead: the stacks allocating most, estimated bytes and blocks allocated and in use");
  m.add_option("--pool", memory->pool, "with --heap: one memory pool only (heap, torch:cpu, ...)")->needs("--heap");
  m.add_flag("--python", memory->python,
             "with --heap: name stacks that hold Python frames by those alone (the Python code that allocated)")
      ->needs("--heap");
  add_symbol_path_option(m, memory->symbol_paths);
  on_run(m, [memory] { return run_memory(*memory); });
}

}  // namespace ringprof::cli

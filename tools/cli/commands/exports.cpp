// `ringprof convert`, `flame` and `pprof`: the recording as files other tools
// read (a Chrome or Perfetto trace, collapsed stacks, a pprof profile).
#include <cstdio>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "options.h"
#include "reporting.h"
#include "ringprof/tools/chrome_trace.h"
#include "ringprof/tools/flame_graph.h"
#include "ringprof/tools/output_file.h"
#include "ringprof/tools/perfetto_trace.h"
#include "ringprof/tools/pprof_export.h"
#include "ringprof/tools/sample_profile.h"
#include "ringprof/tools/stack_resolver.h"

namespace ringprof::cli {
namespace {

// What convert, flame and pprof all take.
struct ExportArgs {
  std::vector<std::string> paths;
  std::string output;
  RangeSpec range;
  std::string thread;
  std::vector<std::string> symbol_paths;
  bool per_thread = false;  // flame --per-thread
  bool heap = false;        // pprof --heap
  std::string pool;         // pprof --heap --pool
  std::string format;       // convert --format: chrome | perfetto ("" picks by the output's name)
};

CLI::App& add_export(CLI::App& app, const char* name, const char* description, ExportArgs& args,
                     const std::string& output_help) {
  CLI::App& cmd = *app.add_subcommand(name, description);
  cmd.group("Exports");
  add_paths(cmd, args.paths);
  add_output_option(cmd, args.output, output_help);
  add_thread_option(cmd, args.thread);
  add_symbol_path_option(cmd, args.symbol_paths);
  add_range_options(cmd, args.range);
  return cmd;
}

// convert and pprof write a file: -o is required (a usage error, made by
// on_run before any file is read).
std::function<void()> needs_output(const char* name, const std::shared_ptr<ExportArgs>& a) {
  return [name, a] {
    if (a->output.empty()) usage_error(std::string(name) + " needs -o OUT");
  };
}

SampleProfile read_samples(TraceReader& reader, const ExportArgs& a) {
  SampleOptions options;
  options.range = a.range;
  options.thread = a.thread;
  return collect_samples(reader, options);
}

int run_convert(const ExportArgs& a) {
  Input input(a.paths);
  ChromeTraceOptions options;
  options.range = a.range;
  options.thread = a.thread;
  options.symbol_paths = a.symbol_paths;
  std::string error;
  bool written = false;
  const bool perfetto = a.format == "perfetto" || (a.format.empty() && is_perfetto_trace_path(a.output));
  if (perfetto) {
    PerfettoTraceStats stats;
    written = write_perfetto_trace_file(input.reader(), options, a.output, &stats, &error);
    report_zone_notes(stats.unmatched_zone_ends, stats.unterminated_zones, stats.zones_too_deep);
  } else {
    ChromeTraceStats stats;
    written = write_chrome_trace_file(input.reader(), options, a.output, &stats, &error);
    report_zone_notes(stats.unmatched_zone_ends, stats.unterminated_zones, stats.zones_too_deep);
  }
  int status = report_problems(input.reader());
  if (!written) {
    print_error(error);
    status = kExitDamaged;
  }
  return status;
}

int run_flame(const ExportArgs& a) {
  Input input(a.paths);
  const SampleProfile profile = read_samples(input.reader(), a);
  StackResolver resolver(a.symbol_paths);
  FoldedOptions options;
  options.per_thread = a.per_thread;
  const std::string folded = format_folded(input.reader(), profile, resolver, options);
  report_symbol_warnings(resolver);
  const int status = report_problems(input.reader());
  report_no_samples(profile);
  OutputFile out;
  std::string error;
  if (out.open(a.output, &error)) {
    out.stream() << folded;
    if (out.close(&error)) return status;
  }
  print_error(error);
  return kExitDamaged;
}

int run_heap_pprof(const ExportArgs& a) {
  Input input(a.paths);
  HeapOptions options;
  options.range = a.range;
  options.thread = a.thread;
  options.pool = a.pool;
  const HeapProfile profile = collect_heap(input.reader(), options);
  StackResolver resolver(a.symbol_paths);
  std::string error;
  const bool written = write_heap_pprof_file(input.reader(), profile, resolver, a.output, &error);
  report_symbol_warnings(resolver);
  int status = report_problems(input.reader());
  if (profile.samples.empty())
    std::fprintf(stderr, "ringprof: note: no heap samples in the input%s (RINGPROF_HEAP_INTERVAL, docs/memory.md)\n",
                 a.pool.empty() ? "" : (" for pool " + a.pool).c_str());
  if (!written) {
    print_error(error);
    status = kExitDamaged;
  }
  return status;
}

int run_pprof(const ExportArgs& a) {
  if (a.heap) return run_heap_pprof(a);
  Input input(a.paths);
  const SampleProfile profile = read_samples(input.reader(), a);
  StackResolver resolver(a.symbol_paths);
  std::string error;
  const bool written = write_pprof_file(input.reader(), profile, resolver, a.output, &error);
  report_symbol_warnings(resolver);
  int status = report_problems(input.reader());
  report_no_samples(profile);
  if (!written) {
    print_error(error);
    status = kExitDamaged;
  }
  return status;
}

}  // namespace

void add_export_commands(CLI::App& app) {
  auto convert = std::make_shared<ExportArgs>();
  CLI::App& c =
      add_export(app, "convert", "a Chrome trace (JSON) or a Perfetto trace (protobuf) for the Perfetto UI",
                 *convert,
                 "where to write it (required; .pftrace or .perfetto-trace: a Perfetto trace; "
                 "ending in .gz: gzipped; - is stdout)");
  c.add_option("--format", convert->format,
               "chrome (Trace Event Format JSON) or perfetto (Perfetto's protobuf trace); "
               "default: perfetto for OUT ending in .pftrace or .perfetto-trace, else chrome")
      ->check(CLI::IsMember({"chrome", "perfetto"}));
  on_run(
      c,
      [convert] {
        if (const int status = place_range(convert->paths, convert->range)) return status;
        return run_convert(*convert);
      },
      needs_output("convert", convert));

  auto flame = std::make_shared<ExportArgs>();
  CLI::App& f = add_export(app, "flame", "CPU samples as collapsed stacks (flamegraph.pl, speedscope, inferno)", *flame,
                           "where to write them (default: stdout)");
  f.add_flag("--per-thread", flame->per_thread, "each thread its own tower, under process;thread roots");
  on_run(f, [flame] {
    if (flame->output.empty()) flame->output = "-";
    if (const int status = place_range(flame->paths, flame->range)) return status;
    return run_flame(*flame);
  });

  auto pprof = std::make_shared<ExportArgs>();
  CLI::App& p = add_export(app, "pprof",
                           "CPU samples, or the sampled heap, as a pprof profile (go tool pprof, Pyroscope, Parca, "
                           "Perfetto)",
                           *pprof, "where to write it (required; OUT ending in .gz is gzipped)");
  p.add_flag("--heap", pprof->heap,
             "the sampled heap instead: alloc_objects, alloc_space, inuse_objects, inuse_space (go's heap layout)");
  p.add_option("--pool", pprof->pool, "with --heap: one memory pool only (heap, torch:cpu, torch:cuda:0, ...)")
      ->needs("--heap");
  on_run(
      p,
      [pprof] {
        if (const int status = place_range(pprof->paths, pprof->range)) return status;
        return run_pprof(*pprof);
      },
      needs_output("pprof", pprof));
}

}  // namespace ringprof::cli

// ringprof — the command-line front over the tools library. It parses
// arguments, calls the library, prints problems one per line and picks the
// exit status: 0 all good, 1 usage error, 2 input damaged (something skipped)
// or output not written.
#include <cstdio>
#include <cstring>
#include <iostream>
#include <optional>
#include <string>
#include <vector>

#include "ops_commands.h"
#include "ringprof/tools/chrome_trace.h"
#include "ringprof/tools/flame_graph.h"
#include "ringprof/tools/gpu_summary.h"
#include "ringprof/tools/memory_summary.h"
#include "ringprof/tools/op_table.h"
#include "ringprof/tools/output_file.h"
#include "ringprof/tools/pprof_export.h"
#include "ringprof/tools/sample_profile.h"
#include "ringprof/tools/sample_table.h"
#include "ringprof/tools/stack_resolver.h"
#include "ringprof/tools/time_window.h"
#include "ringprof/tools/trace_info.h"
#include "ringprof/tools/trace_window.h"
#include "ringprof/tools/trace_reader.h"

namespace {

using namespace ringprof;

constexpr int kExitUsage = 1;
constexpr int kExitDamaged = 2;

const char* const kUsage =
    "usage: ringprof <command> [options] PATH...\n"
    "PATH is a ringprof file (*.rpf, *.rpf.part) or a directory holding them.\n"
    "\n"
    "commands:\n"
    "  info PATH...                      files, processes, threads, time range, events, drops, damage\n"
    "  convert PATH... -o OUT            Chrome trace JSON (OUT ending in .gz is gzip; '-' is stdout)\n"
    "  table PATH...                     per-name zone totals (calls, total, self, avg, min, max;\n"
    "                                    Self GPU and GPU total when the files hold GPU work)\n"
    "  table --samples PATH...           functions by self and total share of CPU samples\n"
    "  flame PATH... [-o OUT]            CPU samples as collapsed stacks (flamegraph.pl, speedscope)\n"
    "  pprof PATH... -o OUT.pb.gz        CPU samples as a pprof profile (go tool pprof, Pyroscope, Parca)\n"
    "  gpu PATH...                       per device GPU utilization, SM efficiency and occupancy (estimated),\n"
    "                                    kernels, copy bandwidth, what CUPTI lost\n"
    "  memory PATH...                    memory events (detailed level) per pool: allocations, frees, bytes,\n"
    "                                    peak live bytes, unmatched frees; the zones allocating most; what is\n"
    "                                    still allocated at the end of the window, by zone\n"
    "  extract PATH... WINDOW -o DIR     the window's events into files that decode alone (works on a live directory)\n"
    "  trigger PID [--steps N | --seconds S] [--mode detailed] [--dir DIR] [--timeout S]\n"
    "                                    ask a running process for a detailed window now\n"
    "\n"
    "time windows (every command but info and trigger): --from T, --to T, --last D (back from the end),\n"
    "  --around T --window D, --window-id N (between the window's marks)\n"
    "  D: 500ms, 2.5s, 1m, 250us, 10ns, 1h; a bare number is seconds\n"
    "  T: a duration from the trace start, or a wall-clock time: 2024-05-01T12:00:00Z, 12:00:00 (today, local)\n"
    "threads (convert, table, memory, flame, pprof): --thread NAME_OR_TID\n"
    "symbols (convert, table --samples, flame, pprof): --symbol-path DIR (repeatable) for separate\n"
    "  debug files, looked up by build ID (DIR/.build-id/xx/rest.debug) before the recorded path\n"
    "table options: --sort name|calls|total|self|avg|min|max|self_gpu|gpu|self_mem|mem (default total; with\n"
    "  --samples: name|self|total, default self), --top N, --format text|csv\n"
    "flame options: --per-thread (each thread its own tower, under process;thread roots)\n"
    "gpu options: --top N (kernel rows)\n"
    "memory options: --top N (zone rows), --format text|csv\n";

int usage_error(const std::string& message) {
  std::fprintf(stderr, "ringprof: %s\n%s", message.c_str(), kUsage);
  return kExitUsage;
}

struct Args {
  std::string command;
  std::vector<std::string> paths;
  std::string output;
  WindowSpec window;
  std::optional<std::string> sort;
  std::optional<size_t> top;
  std::string thread;
  std::string format = "text";
  bool samples = false;     // table --samples
  bool per_thread = false;  // flame --per-thread
  std::vector<std::string> symbol_paths;
};

// Parses argv into Args; an error message when malformed.
std::optional<std::string> parse_args(int argc, char** argv, Args& a) {
  a.command = argv[1];
  const bool is_table = a.command == "table";
  const bool is_memory = a.command == "memory";
  const bool sampled = a.command == "flame" || a.command == "pprof";
  const bool windowed = a.command == "convert" || is_table || sampled || a.command == "gpu" || a.command == "extract" ||
                        is_memory;
  const bool has_output = a.command == "convert" || sampled || a.command == "extract";
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&](std::string* out) -> std::optional<std::string> {
      if (i + 1 >= argc) return arg + " needs a value";
      *out = argv[++i];
      return std::nullopt;
    };
    auto duration = [&](std::optional<uint64_t>* out) -> std::optional<std::string> {
      std::string text;
      if (auto err = value(&text)) return err;
      *out = parse_duration_ns(text);
      if (!*out) return "bad duration for " + arg + ": '" + text + "' (try 500ms, 2.5s, 1m)";
      return std::nullopt;
    };
    std::optional<std::string> err;
    if (arg == "--") {
      for (++i; i < argc; ++i) a.paths.push_back(argv[i]);
    } else if (arg == "-o" && has_output) {
      err = value(&a.output);
    } else if ((arg == "--from" || arg == "--to" || arg == "--around") && windowed) {
      std::string text;
      if (auto e = value(&text)) return e;
      const auto point = parse_time_point(text);
      if (!point) return "bad time for " + arg + ": '" + text + "' (try 2.5s, 12:00:00, 2024-05-01T12:00:00Z)";
      if (arg == "--around") a.window.around = *point;
      else a.window.set(arg == "--from", *point);
    } else if (arg == "--window" && windowed) {
      std::optional<uint64_t> width;
      err = duration(&width);
      if (!err) a.window.around_width_ns = *width;
    } else if (arg == "--window-id" && windowed) {
      std::string text;
      if (auto e = value(&text)) return e;
      if (text.empty() || text.size() > 18 || text.find_first_not_of("0123456789") != std::string::npos)
        return "bad --window-id: '" + text + "'";
      a.window.window_id = std::stoull(text);
    } else if (arg == "--last" && windowed) {
      err = duration(&a.window.last_ns);
    } else if (arg == "--sort" && is_table) {
      std::string text;
      err = value(&text);
      a.sort = text;
    } else if (arg == "--top" && (is_table || is_memory || a.command == "gpu")) {
      std::string text;
      err = value(&text);
      if (!err) {
        if (text.empty() || text.size() > 9 || text.find_first_not_of("0123456789") != std::string::npos)
          return "bad --top value: '" + text + "'";
        a.top = std::stoul(text);
      }
    } else if (arg == "--thread" && windowed && a.command != "gpu") {
      err = value(&a.thread);
    } else if (arg == "--symbol-path" && windowed && a.command != "gpu" && !is_memory) {
      std::string dir;
      err = value(&dir);
      a.symbol_paths.push_back(dir);
    } else if (arg == "--samples" && is_table) {
      a.samples = true;
    } else if (arg == "--per-thread" && a.command == "flame") {
      a.per_thread = true;
    } else if (arg == "--format" && (is_table || is_memory)) {
      err = value(&a.format);
    } else if (arg.size() > 1 && arg[0] == '-') {
      return "unknown option for " + a.command + ": " + arg;
    } else {
      a.paths.push_back(arg);
    }
    if (err) return err;
  }
  if (a.paths.empty()) return a.command + ": no input PATH given";
  const bool from_to = a.window.from_ns || a.window.to_ns || a.window.from_wall_ns || a.window.to_wall_ns;
  if ((a.window.last_ns != std::nullopt) + from_to + (a.window.around != std::nullopt) + (a.window.window_id != std::nullopt) > 1)
    return "use one of --last, --from/--to, --around, --window-id";
  if (a.window.from_ns && a.window.to_ns && *a.window.to_ns < *a.window.from_ns) return "--to is before --from";
  if ((a.command == "convert" || a.command == "pprof") && a.output.empty()) return a.command + " needs -o OUT";
  if (a.command == "flame" && a.output.empty()) a.output = "-";
  if (a.command == "extract" && a.output.empty()) return "extract needs -o DIR";
  if (a.command == "extract" && a.window.empty()) return "extract needs a window (--last, --from/--to, --around, --window-id)";
  if (is_table && a.sort) {
    const bool ok = a.samples ? parse_sample_column(*a.sort).has_value() : parse_table_column(*a.sort).has_value();
    if (!ok) return "bad --sort column: '" + *a.sort + "'";
  }
  if ((is_table || is_memory) && a.format != "text" && a.format != "csv") return "bad --format: '" + a.format + "'";
  return std::nullopt;
}

// Prints every problem the reader found; the exit status they imply.
int report_problems(const TraceReader& reader) {
  for (const Problem& p : reader.problems()) std::fprintf(stderr, "%s\n", format_problem(p).c_str());
  return reader.has_problems() ? kExitDamaged : 0;
}

void report_zone_notes(uint64_t unmatched, uint64_t unterminated) {
  if (unmatched)
    std::fprintf(stderr, "ringprof: note: %llu zone ends without a begin skipped (begin in a deleted file or lost)\n",
                 static_cast<unsigned long long>(unmatched));
  if (unterminated)
    std::fprintf(stderr, "ringprof: note: %llu zones still open at the end, closed at their thread's last event\n",
                 static_cast<unsigned long long>(unterminated));
}

int run_info(const Args& a) {
  TraceReader reader(a.paths);
  const TraceInfo info = collect_info(reader);
  std::fputs(format_info(info).c_str(), stdout);
  std::fflush(stdout);
  return report_problems(reader);
}

int run_convert(const Args& a) {
  TraceReader reader(a.paths);
  ChromeTraceOptions options;
  options.window = a.window;
  options.thread = a.thread;
  options.symbol_paths = a.symbol_paths;
  ChromeTraceStats stats;
  std::string error;
  const bool written = write_chrome_trace_file(reader, options, a.output, &stats, &error);
  int status = report_problems(reader);
  report_zone_notes(stats.unmatched_zone_ends, stats.unterminated_zones);
  if (!written) {
    std::fprintf(stderr, "ringprof: %s\n", error.c_str());
    status = kExitDamaged;
  }
  return status;
}

SampleProfile read_samples(TraceReader& reader, const Args& a) {
  SampleOptions options;
  options.window = a.window;
  options.thread = a.thread;
  return collect_samples(reader, options);
}

void report_symbol_warnings(StackResolver& resolver) {
  for (const std::string& w : resolver.take_warnings()) std::fprintf(stderr, "%s\n", w.c_str());
}

void report_no_samples(const SampleProfile& profile) {
  if (profile.samples == 0)
    std::fprintf(stderr, "ringprof: note: no CPU samples in the input%s\n",
                 profile.mechanism == "off" ? " (sampling was off)" : "");
}

int run_sample_table(const Args& a) {
  TraceReader reader(a.paths);
  const SampleProfile profile = read_samples(reader, a);
  StackResolver resolver(a.symbol_paths);
  const SampleTable table =
      compute_sample_table(reader, profile, resolver, *parse_sample_column(a.sort.value_or("self")), a.top.value_or(0));
  std::fputs(format_sample_table(table, a.format == "csv" ? TableFormat::Csv : TableFormat::Text).c_str(), stdout);
  std::fflush(stdout);
  report_symbol_warnings(resolver);
  report_no_samples(profile);
  return report_problems(reader);
}

int run_flame(const Args& a) {
  TraceReader reader(a.paths);
  const SampleProfile profile = read_samples(reader, a);
  StackResolver resolver(a.symbol_paths);
  FoldedOptions options;
  options.per_thread = a.per_thread;
  const std::string folded = format_folded(reader, profile, resolver, options);
  report_symbol_warnings(resolver);
  int status = report_problems(reader);
  report_no_samples(profile);
  OutputFile out;
  std::string error;
  if (out.open(a.output, &error)) {
    out.stream() << folded;
    if (out.close(&error)) return status;
  }
  std::fprintf(stderr, "ringprof: %s\n", error.c_str());
  return kExitDamaged;
}

int run_pprof(const Args& a) {
  TraceReader reader(a.paths);
  const SampleProfile profile = read_samples(reader, a);
  StackResolver resolver(a.symbol_paths);
  std::string error;
  const bool written = write_pprof_file(reader, profile, resolver, a.output, &error);
  report_symbol_warnings(resolver);
  int status = report_problems(reader);
  report_no_samples(profile);
  if (!written) {
    std::fprintf(stderr, "ringprof: %s\n", error.c_str());
    status = kExitDamaged;
  }
  return status;
}

int run_table(const Args& a) {
  if (a.samples) return run_sample_table(a);
  TraceReader reader(a.paths);
  TableOptions options;
  options.window = a.window;
  options.sort = *parse_table_column(a.sort.value_or("total"));
  options.top = a.top.value_or(0);
  options.thread = a.thread;
  const TableResult table = compute_table(reader, options);
  std::fputs(format_table(table, a.format == "csv" ? TableFormat::Csv : TableFormat::Text).c_str(), stdout);
  std::fflush(stdout);
  return report_problems(reader);
}

int run_gpu(const Args& a) {
  TraceReader reader(a.paths);
  GpuSummaryOptions options;
  options.window = a.window;
  options.top = a.top.value_or(0);
  const GpuSummary summary = compute_gpu_summary(reader, options);
  std::fputs(format_gpu_summary(summary).c_str(), stdout);
  std::fflush(stdout);
  return report_problems(reader);
}

int run_memory(const Args& a) {
  TraceReader reader(a.paths);
  MemoryOptions options;
  options.window = a.window;
  options.thread = a.thread;
  options.top = a.top.value_or(0);
  const MemorySummary summary = compute_memory_summary(reader, options);
  std::fputs(format_memory_summary(summary, a.format == "csv" ? TableFormat::Csv : TableFormat::Text).c_str(), stdout);
  std::fflush(stdout);
  return report_problems(reader);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) return usage_error("no command given");
  const std::string command = argv[1];
  if (command == "-h" || command == "--help" || command == "help") {
    std::fputs(kUsage, stdout);
    return 0;
  }
  for (int i = 2; i < argc; ++i) {
    if (std::string(argv[i]) == "-h" || std::string(argv[i]) == "--help") {
      std::fputs(kUsage, stdout);
      return 0;
    }
  }
  if (command == "trigger") return run_trigger(argc, argv);  // its own options (ops_commands.cpp)
  if (command != "info" && command != "convert" && command != "table" && command != "flame" && command != "pprof" &&
      command != "gpu" && command != "memory" && command != "extract")
    return usage_error("unknown command '" + command + "'");
  Args args;
  if (auto err = parse_args(argc, argv, args)) return usage_error(*err);
  try {
    // A window that cannot be placed (a --window-id no file marks, a wall-clock
    // time without a process start) is the user's error, said once, up front.
    if (!args.window.empty() && command != "extract") {
      TraceReader probe(args.paths);
      std::string error;
      if (!resolve_trace_window(probe, args.window, &error)) {
        std::fprintf(stderr, "ringprof: %s\n", error.c_str());
        return kExitUsage;
      }
    }
    if (command == "info") return run_info(args);
    if (command == "convert") return run_convert(args);
    if (command == "flame") return run_flame(args);
    if (command == "pprof") return run_pprof(args);
    if (command == "gpu") return run_gpu(args);
    if (command == "memory") return run_memory(args);
    if (command == "extract") return run_extract(args.paths, args.window, args.output);
    return run_table(args);
  } catch (const std::exception& e) {
    // Out of memory or a library bug: still one line and a status, not an abort.
    std::fprintf(stderr, "ringprof: %s\n", e.what());
    return kExitDamaged;
  }
}

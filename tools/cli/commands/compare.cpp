// `ringprof diff BASE HEAD`: what got slower between two recordings
// (perf_diff.h), as a text table, Markdown or JSON, with an exit status a CI
// job can act on.
#include <cstdio>
#include <cstdlib>
#include <unistd.h>
#include <algorithm>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "options.h"
#include "reporting.h"
#include "ringprof/tools/ab_runs.h"
#include "ringprof/tools/overhead.h"
#include "ringprof/tools/perf_diff.h"
#include "ringprof/tools/fleet_watch.h"
#include "ringprof/tools/watch.h"

namespace ringprof::cli {
namespace {

constexpr int kExitRegressed = 3;     // --fail-above: a zone or kernel regressed past it
constexpr int kExitNothingInCommon = 4;  // the two recordings share no zone, kernel or function
constexpr int kExitCommandFailed = 5;    // overhead: the command could not run or did not exit 0

struct DiffArgs {
  std::string base, head;
  bool runs = false;  // BASE and HEAD each hold one directory per run
  DiffOptions options;
  std::string format = "text";
  double fail_above = -1;  // < 0: not asked
  std::string min_total;
};

// "5", "5%" or "12.5%": a percentage.
double parse_percent(std::string text) {
  if (!text.empty() && text.back() == '%') text.pop_back();
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  return end && *end == '\0' && !text.empty() ? v : -1;
}

CLI::Validator percent_validator() {
  return CLI::Validator(
      [](std::string& text) {
        const double v = parse_percent(text);
        return v >= 0 && v < 1e6 ? "" : "bad percentage '" + text + "' (try 5 or 5%)";
      },
      "PCT");
}

void print_out(const std::string& text) {
  print_text(text);
  std::fflush(stdout);
}

// A limit the user set (--fail-above, --max-slowdown) that was crossed: one
// line and exit 3.
int limit_status(bool crossed, const std::string& what, double pct, const char* option) {
  if (!crossed) return kExitOk;
  char b[64];
  std::snprintf(b, sizeof b, "%.3g%% (%s)", pct, option);
  print_error(what + b);
  return kExitRegressed;
}

bool empty(const DiffResult& d) { return d.zones.empty() && d.kernels.empty() && d.functions.empty(); }

// The run directories of one side of `diff --runs`: its subdirectories, by
// name ("" in `why` when there are some).
std::vector<std::string> run_directories(const std::string& side, std::string& why) {
  namespace fs = std::filesystem;
  std::vector<std::string> out;
  std::error_code ec;
  if (!fs::is_directory(side, ec)) {
    why = side + " is not a directory (--runs takes a directory holding one directory per run)";
    return out;
  }
  for (auto it = fs::directory_iterator(side, ec); !ec && it != fs::directory_iterator(); it.increment(ec))
    if (it->is_directory(ec)) out.push_back(it->path().string());
  std::sort(out.begin(), out.end());
  if (out.empty()) why = side + " holds no run directory (--runs takes a directory holding one directory per run)";
  return out;
}

int report_diff(const DiffArgs& a, const DiffResult& diff, const std::vector<std::unique_ptr<Input>>& inputs,
                const std::string& heading);

int run_diff(DiffArgs& a) {
  if (!a.min_total.empty()) a.options.min_total_ns = *parse_duration_ns(a.min_total);
  std::vector<std::vector<std::string>> sides;
  for (const std::string* path : {&a.base, &a.head}) {
    std::string why;
    sides.push_back(a.runs ? run_directories(*path, why) : std::vector<std::string>{*path});
    if (!why.empty()) {
      print_error(why);
      return kExitUsage;
    }
    for (const std::string& run : sides.back())
      if (const int status = place_range({run}, a.options.range)) return status;
  }
  std::vector<std::unique_ptr<Input>> inputs;
  std::vector<TraceReader*> readers[2];
  for (size_t side = 0; side < 2; ++side)
    for (const std::string& run : sides[side]) {
      inputs.push_back(std::make_unique<Input>(std::vector<std::string>{run}));
      readers[side].push_back(&inputs.back()->reader());
    }
  const DiffResult diff = compute_diff_runs(readers[0], readers[1], a.options);
  return report_diff(a, diff, inputs, "");
}

// What diff and watch print and the status they exit with. `heading`, when
// not empty, is printed first (text format).
int report_diff(const DiffArgs& a, const DiffResult& diff, const std::vector<std::unique_ptr<Input>>& inputs,
                const std::string& heading) {
  int status = kExitOk;
  bool unreadable = false;  // a run with nothing readable (missing, not a recording): said here
  for (const auto& in : inputs) {
    status = std::max(status, report_problems(in->reader()));
    unreadable = unreadable || in->reader().processes().empty();
  }
  if (status != kExitOk && (unreadable || empty(diff))) return status;
  if (diff.in_common == 0) {
    print_error("nothing to compare: " + a.base + " and " + a.head +
                " have no zone, GPU kernel or sampled function in common (with the options given)");
    return kExitNothingInCommon;
  }
  const DiffFormat format =
      a.format == "json" ? DiffFormat::Json : a.format == "markdown" ? DiffFormat::Markdown : DiffFormat::Text;
  if (!heading.empty() && format == DiffFormat::Text) print_out(heading + "\n");
  print_out(format_diff(diff, format));
  if (status != kExitOk) return status;
  return limit_status(a.fail_above >= 0 && regressed_above(diff, a.fail_above),
                      "a zone or kernel regressed by more than ", a.fail_above, "--fail-above");
}

struct WatchArgs {
  std::vector<std::string> paths;
  WatchOptions watch;
  std::string window = "10m";
  DiffArgs diff;
  FleetWatchOptions fleet;  // with --clickhouse
};

std::string watch_heading(const WatchArgs& a, const std::string& what, size_t slices) {
  const bool saved = a.watch.baseline != "previous" && a.watch.baseline != "day";
  const std::string against = saved                       ? a.watch.baseline
                              : a.watch.baseline == "day" ? "the same " + a.window + " a day earlier"
                                                          : "the " + a.window + " before";
  return "watch: " + what + "the last " + a.window + " against " + against + ", " + std::to_string(slices) +
         " slices a side";
}

// `ringprof watch --clickhouse`: the same comparison on shipped rows.
int run_fleet_watch(WatchArgs& a) {
  a.fleet.watch = a.watch;
  const FleetWatchResult r = watch_clickhouse(a.fleet, a.diff.options);
  if (!r.ok) {
    print_error("watch: " + r.error);
    return kExitDamaged;
  }
  a.diff.base = "the baseline window";
  a.diff.head = "the last window";
  std::string what = a.fleet.host.empty() && a.fleet.job.empty() ? "the fleet, " : "";
  if (!a.fleet.host.empty()) what += "host " + a.fleet.host + ", ";
  if (!a.fleet.job.empty()) what += "job " + a.fleet.job + ", ";
  return report_diff(a.diff, r.diff, {}, watch_heading(a, what, std::max(a.watch.slices, 1u)));
}

// `ringprof watch`: the slices of the two windows as the runs of diff --runs.
int run_watch(WatchArgs& a) {
  a.watch.window_ns = *parse_duration_ns(a.window);
  if (a.fleet.url.empty() == a.paths.empty())
    usage_error(a.paths.empty() ? "watch needs PATH… or --clickhouse URL"
                                : "watch takes PATH… or --clickhouse, not both");
  if (!a.fleet.url.empty()) return run_fleet_watch(a);
  const bool saved = a.watch.baseline != "previous" && a.watch.baseline != "day";
  std::vector<std::unique_ptr<Input>> inputs;
  inputs.push_back(std::make_unique<Input>(a.paths));
  if (saved) inputs.push_back(std::make_unique<Input>(std::vector<std::string>{a.watch.baseline}));
  // Every slice reads the files the first listing found (a live directory
  // changes meanwhile; the windows were placed on these).
  auto files_of = [](TraceReader& r) {
    std::vector<std::string> out;
    for (const FileSummary& f : r.files()) out.push_back(f.path);
    return out;
  };
  const std::vector<std::string> live_files = files_of(inputs[0]->reader());
  const std::vector<std::string> base_paths = saved ? files_of(inputs[1]->reader()) : live_files;
  const WatchPlan plan = plan_watch(inputs[0]->reader(), saved ? &inputs[1]->reader() : nullptr, a.watch);
  if (!plan.ok) {
    if (const int status = report_problems(inputs[0]->reader())) return status;
    print_error("watch: " + plan.error);
    return kExitDamaged;
  }
  std::vector<TraceReader*> readers[2];
  for (size_t i = 0; i < plan.base_slices.size(); ++i) {
    inputs.push_back(std::make_unique<Input>(base_paths));
    readers[0].push_back(&inputs.back()->reader());
  }
  for (size_t i = 0; i < plan.head_slices.size(); ++i) {
    inputs.push_back(std::make_unique<Input>(live_files));
    readers[1].push_back(&inputs.back()->reader());
  }
  a.diff.options.base_windows = plan.base_slices;
  a.diff.options.head_windows = plan.head_slices;
  a.diff.base = saved ? a.watch.baseline : "the baseline window";
  a.diff.head = "the last window";
  const DiffResult diff = compute_diff_runs(readers[0], readers[1], a.diff.options);
  inputs.resize(saved ? 2 : 1);  // the slices' readers report what the first reader reports
  return report_diff(a.diff, diff, inputs, watch_heading(a, "", plan.head_slices.size()));
}

struct AbArgs {
  AbOptions ab;
  DiffArgs diff;
};

void ab_progress(const std::string& line) {
  if (isatty(2)) std::fprintf(stderr, "\rringprof ab: %s   ", line.c_str());
}

int run_ab_command(AbArgs& a) {
  const AbResult r = run_ab(a.ab, &ab_progress);
  if (isatty(2)) std::fprintf(stderr, "\r%60s\r", "");
  if (!r.error.empty()) {
    print_error(r.error);
    return kExitCommandFailed;
  }
  a.diff.base = a.ab.out_dir + "/base";
  a.diff.head = a.ab.out_dir + "/head";
  a.diff.runs = true;
  return run_diff(a.diff);
}

struct OverheadArgs {
  OverheadOptions options;
  std::string levels = "off,always_on,detailed";
  std::string format = "text";
  std::string preload = "auto";
  double max_slowdown = -1;  // < 0: not asked
};

void progress_line(const std::string& line) {
  if (isatty(2)) std::fprintf(stderr, "\rringprof overhead: %s   ", line.c_str());
}

int run_overhead(OverheadArgs& a) {
  a.options.levels.clear();
  std::string level;
  for (size_t i = 0; i <= a.levels.size(); ++i) {
    if (i == a.levels.size() || a.levels[i] == ',') {
      if (level != "off" && level != "always_on" && level != "detailed")
        usage_error("bad --levels entry '" + level + "' (off, always_on, detailed)");
      a.options.levels.push_back(level);
      level.clear();
    } else {
      level += a.levels[i];
    }
  }
  a.options.preload = a.preload == "always" ? Preload::Always : a.preload == "never" ? Preload::Never : Preload::Auto;
  if (a.options.command.empty()) usage_error("no command given: ringprof overhead [OPTIONS] -- CMD ARGS...");
  const OverheadResult r = measure_overhead(a.options, &progress_line);
  if (isatty(2)) std::fputs("\n", stderr);
  if (!r.error.empty()) {
    print_error(r.error);
    return kExitCommandFailed;
  }
  print_out(format_overhead(r, a.format == "json" ? OverheadFormat::Json : OverheadFormat::Text));
  return limit_status(a.max_slowdown >= 0 && slowdown_above(r, a.max_slowdown), "a level's slowdown lies above ",
                      a.max_slowdown, "--max-slowdown");
}

// The comparison's options, shared by diff, ab and watch (whose windows
// replace the time range).
void add_diff_options(CLI::App& d, const std::shared_ptr<DiffArgs>& args, bool ranges = true) {
  d.add_option("--format", args->format, "text|markdown|json (default text)")
      ->check(CLI::IsMember({"text", "markdown", "json"}));
  d.add_option_function<std::string>(
       "--fail-above", [args](const std::string& t) { args->fail_above = parse_percent(t); },
       "exit 3 when a zone or kernel regressed by more than PCT")
      ->check(percent_validator());
  d.add_option_function<std::string>(
       "--threshold", [args](const std::string& t) { args->options.threshold_pct = parse_percent(t); },
       "the least change called regressed or improved (default 5%)")
      ->check(percent_validator());
  d.add_option_function<std::string>(
       "--noise", [args](const std::string& t) { args->options.noise_pct = parse_percent(t); },
       "run-to-run noise floor added to every interval (default 2%)")
      ->check(percent_validator());
  d.add_option("--min-calls", args->options.min_calls, "leave out rows with fewer calls (or samples) on both sides")
      ->check(CLI::Range(uint64_t{0}, uint64_t{1} << 62));
  d.add_option("--min-total", args->min_total, "leave out rows with less total time on both sides (e.g. 1ms)")
      ->check(duration_validator())
      ->type_name("DUR");
  d.add_option("--only", args->options.only, "compare only these names (repeatable)")->type_name("NAME");
  d.add_option("--ignore", args->options.ignore, "never these names (repeatable)")->type_name("NAME");
  add_thread_option(d, args->options.thread);
  add_symbol_path_option(d, args->options.symbol_paths);
  if (ranges) add_range_options(d, args->options.range);
}

}  // namespace

void add_compare_commands(CLI::App& app) {
  auto args = std::make_shared<DiffArgs>();
  CLI::App& d = *app.add_subcommand(
      "diff", "what got slower or faster between two recordings: zones, GPU kernels, sampled functions");
  d.group("Reports");
  d.footer(
      "Per-call medians compared with a 95% interval (distribution-free; with --runs, Welch's t over the runs' log "
      "medians); a change is regressed or improved only when its interval excludes 0 and it is at least --threshold. "
      "Exit status: 3 with --fail-above when a zone or "
      "kernel regressed by more than PCT, 4 when the recordings have nothing in common.");
  d.add_option("BASE", args->base, "the recording before: a file, a directory or an extract")->required();
  d.add_option("HEAD", args->head, "the recording after")->required();
  d.add_flag("--runs", args->runs,
             "BASE and HEAD each hold one directory per run: intervals from the run-to-run spread");
  add_diff_options(d, args);
  on_run(d, [args] { return run_diff(*args); });

  auto watch = std::make_shared<WatchArgs>();
  auto watch_diff = std::shared_ptr<DiffArgs>(watch, &watch->diff);
  CLI::App& w = *app.add_subcommand(
      "watch",
      "the last window of a live recording against a baseline window: what moved (for cron or a health check)");
  w.group("Reports");
  w.footer(
      "The last --window of the recording (up to its latest event) against the window before it (--baseline "
      "previous), the same window a day earlier (day) or a saved recording (a path); each window is cut into --slices "
      "equal parts, compared as diff --runs compares runs. Exit status: as diff.");
  w.add_option("PATH", watch->paths, "a recording: ringprof files or directories (or --clickhouse)")->type_name("");
  w.add_option("--clickhouse", watch->fleet.url, "watch what `ringprof ship` put into ClickHouse instead of files")
      ->type_name("URL");
  w.add_option("--host", watch->fleet.host, "with --clickhouse: this host's rows only")->type_name("NAME");
  w.add_option("--job", watch->fleet.job, "with --clickhouse: this job's rows only")->type_name("ID");
  w.add_option("--database", watch->fleet.database, "with --clickhouse: the database (default ringprof)")
      ->type_name("NAME");
  w.add_option("--prefix", watch->fleet.prefix, "with --clickhouse: the tables' prefix")->type_name("TEXT");
  w.add_option("--window", watch->window, "the length of each window (default 10m)")
      ->check(duration_validator())
      ->type_name("DUR");
  w.add_option("--baseline", watch->watch.baseline, "previous | day | a saved recording (default previous)")
      ->type_name("WHAT");
  w.add_option("--slices", watch->watch.slices, "parts per window, the runs of the comparison (default 5)")
      ->check(CLI::Range(2u, 100u));
  add_diff_options(w, watch_diff, false);
  on_run(w, [watch] { return run_watch(*watch); });

  auto ab = std::make_shared<AbArgs>();
  auto ab_diff = std::shared_ptr<DiffArgs>(ab, &ab->diff);
  CLI::App& b = *app.add_subcommand(
      "ab", "runs a base and a head command several times each, interleaved, and compares them (diff --runs)");
  b.group("Reports");
  b.footer(
      "Runs alternate base-head, head-base, … (or, with --duet, run two at once on CPUs of their own), each into "
      "OUT/base/run-NN or OUT/head/run-NN with RINGPROF_DIR set (and RINGPROF_MODE=detailed unless set), then "
      "compares them as diff --runs does. Exit status: as diff, or 5 when a command failed.");
  b.add_option("OUT", ab->ab.out_dir, "where the runs' recordings go (its base/ and head/ are replaced)")->required();
  b.add_option("--base", ab->ab.base_command, "the base command (run by /bin/sh -c)")->required();
  b.add_option("--head", ab->ab.head_command, "the head command")->required();
  b.add_option("--runs", ab->ab.runs, "counted runs per side (default 5)")->check(CLI::Range(2u, 1000u));
  b.add_option("--warmup", ab->ab.warmup, "warm-up runs per side, not kept (default 1)")->check(CLI::Range(0u, 100u));
  b.add_flag("--duet", ab->ab.duet, "run base and head at once, each pinned to a CPU of its own (swapped each round)");
  b.add_flag("--show-output", ab->ab.show_output, "show the commands' output (else it goes to /dev/null)");
  add_diff_options(b, ab_diff);
  on_run(b, [ab] { return run_ab_command(*ab); });

  auto over = std::make_shared<OverheadArgs>();
  CLI::App& o = *app.add_subcommand("overhead", "what profiling costs a program: runs it at each level, interleaved");
  o.group("Reports");
  o.footer(
      "Runs CMD --runs times per level after --warmup runs, the levels interleaved; off is ringprof not started "
      "(RINGPROF_DISABLE=1). A command not linked against ringprof gets libringprof.so through LD_PRELOAD and "
      "RINGPROF_AUTOSTART=1. Exit status: 3 with --max-slowdown when a level's interval lies above PCT, 5 when the "
      "command cannot run or exits non-zero.");
  o.add_option("--levels", over->levels, "comma-separated: off,always_on,detailed (default all three)");
  o.add_option("--runs", over->options.runs, "counted runs per level (default 10)")->check(CLI::Range(1u, 100000u));
  o.add_option("--warmup", over->options.warmup, "runs per level not counted, first (default 1)")
      ->check(CLI::Range(0u, 100000u));
  o.add_option("--format", over->format, "text|json (default text)")->check(CLI::IsMember({"text", "json"}));
  o.add_option_function<std::string>(
       "--max-slowdown", [over](const std::string& t) { over->max_slowdown = parse_percent(t); },
       "exit 3 when a level's slowdown interval lies wholly above PCT")
      ->check(percent_validator());
  o.add_option("--preload", over->preload, "auto|always|never: LD_PRELOAD libringprof.so (auto: when CMD is not linked with it)")
      ->check(CLI::IsMember({"auto", "always", "never"}));
  o.add_option("--library", over->options.library, "the libringprof.so to preload (default: the one beside this tool)");
  o.add_flag("--show-output", over->options.show_output, "let the command's stdout and stderr through");
  o.add_option("--keep", over->options.work_dir, "put the runs' recordings under DIR and keep the directory")
      ->type_name("DIR");
  o.add_option("CMD", over->options.command, "the command and its arguments, after --")->expected(-1);
  on_run(o, [over] { return run_overhead(*over); });
}

}  // namespace ringprof::cli

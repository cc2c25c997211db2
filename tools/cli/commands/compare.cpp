// `ringprof diff BASE HEAD`: what got slower between two recordings
// (perf_diff.h), as a text table, Markdown or JSON, with an exit status a CI
// job can act on.
#include <cstdio>
#include <cstdlib>
#include <unistd.h>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "options.h"
#include "reporting.h"
#include "ringprof/tools/overhead.h"
#include "ringprof/tools/perf_diff.h"

namespace ringprof::cli {
namespace {

constexpr int kExitRegressed = 3;     // --fail-above: a zone or kernel regressed past it
constexpr int kExitNothingInCommon = 4;  // the two recordings share no zone, kernel or function
constexpr int kExitCommandFailed = 5;    // overhead: the command could not run or did not exit 0

struct DiffArgs {
  std::string base, head;
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

int run_diff(DiffArgs& a) {
  if (!a.min_total.empty()) a.options.min_total_ns = *parse_duration_ns(a.min_total);
  for (const std::string* path : {&a.base, &a.head})
    if (const int status = place_range({*path}, a.options.range)) return status;
  Input base({a.base});
  Input head({a.head});
  const DiffResult diff = compute_diff(base.reader(), head.reader(), a.options);
  int status = report_problems(base.reader());
  status = std::max(status, report_problems(head.reader()));
  // A side with nothing readable (missing, not a recording): said above.
  if (status != kExitOk && (base.reader().processes().empty() || head.reader().processes().empty() || empty(diff)))
    return status;
  if (diff.in_common == 0) {
    print_error("nothing to compare: " + a.base + " and " + a.head +
                " have no zone, GPU kernel or sampled function in common (with the options given)");
    return kExitNothingInCommon;
  }
  const DiffFormat format =
      a.format == "json" ? DiffFormat::Json : a.format == "markdown" ? DiffFormat::Markdown : DiffFormat::Text;
  print_out(format_diff(diff, format));
  if (status != kExitOk) return status;
  return limit_status(a.fail_above >= 0 && regressed_above(diff, a.fail_above),
                      "a zone or kernel regressed by more than ", a.fail_above, "--fail-above");
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

}  // namespace

void add_compare_commands(CLI::App& app) {
  auto args = std::make_shared<DiffArgs>();
  CLI::App& d = *app.add_subcommand(
      "diff", "what got slower or faster between two recordings: zones, GPU kernels, sampled functions");
  d.group("Reports");
  d.footer(
      "Per-call medians compared with a 95% interval (distribution-free); a change is regressed or improved only "
      "when its interval excludes 0 and it is at least --threshold. Exit status: 3 with --fail-above when a zone or "
      "kernel regressed by more than PCT, 4 when the recordings have nothing in common.");
  d.add_option("BASE", args->base, "the recording before: a file, a directory or an extract")->required();
  d.add_option("HEAD", args->head, "the recording after")->required();
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
  add_range_options(d, args->options.range);
  on_run(d, [args] { return run_diff(*args); });

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

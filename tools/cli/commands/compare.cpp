// `ringprof diff BASE HEAD`: what got slower between two recordings
// (perf_diff.h), as a text table, Markdown or JSON, with an exit status a CI
// job can act on.
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "options.h"
#include "reporting.h"
#include "ringprof/tools/perf_diff.h"

namespace ringprof::cli {
namespace {

constexpr int kExitRegressed = 3;     // --fail-above: a zone or kernel regressed past it
constexpr int kExitNothingInCommon = 4;  // the two recordings share no zone, kernel or function

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

bool empty(const DiffResult& d) { return d.zones.empty() && d.kernels.empty() && d.functions.empty(); }

int run_diff(DiffArgs& a) {
  check_window(a.options.window);
  if (!a.min_total.empty()) a.options.min_total_ns = *parse_duration_ns(a.min_total);
  for (const std::string* path : {&a.base, &a.head})
    if (const int status = place_window({*path}, a.options.window)) return status;
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
  const std::string text = format_diff(diff, format);
  std::fputs(text.c_str(), stdout);
  std::fflush(stdout);
  if (status != kExitOk) return status;
  if (a.fail_above >= 0 && regressed_above(diff, a.fail_above)) {
    char b[64];
    std::snprintf(b, sizeof b, "%.3g%%", a.fail_above);
    print_error(std::string("a zone or kernel regressed by more than ") + b + " (--fail-above)");
    return kExitRegressed;
  }
  return kExitOk;
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
  add_window_options(d, args->options.window);
  on_run(d, [args] { return run_diff(*args); });
}

}  // namespace ringprof::cli

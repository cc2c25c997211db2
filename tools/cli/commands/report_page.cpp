// `ringprof report`: one self-contained HTML page about a recording; and
// `ringprof findings`: the page's findings on stdout.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "options.h"
#include "reporting.h"
#include "ringprof/tools/findings.h"
#include "ringprof/tools/html_report.h"
#include "ringprof/tools/output_file.h"
#include "ringprof/tools/perfetto_trace.h"
#include "ringprof/tools/rank_report.h"

namespace ringprof::cli {
namespace {

struct ReportPageArgs {
  std::vector<std::string> paths;
  std::string output;
  RangeSpec range;
  std::string thread;
  std::vector<std::string> symbol_paths;
  bool no_trace = false;
  std::vector<int32_t> ranks;  // --rank, parsed
};

// The full trace beside the page: report.html -> report.perfetto-trace.
std::string trace_path_for(const std::string& page) {
  const size_t slash = page.rfind('/');
  const size_t dot = page.rfind('.');
  const std::string stem =
      dot != std::string::npos && (slash == std::string::npos || dot > slash) ? page.substr(0, dot) : page;
  return stem + ".perfetto-trace";
}

// A page named like its trace would be overwritten by it (a usage error,
// made by on_run before any file is read).
void check_report(const ReportPageArgs& a) {
  if (!a.no_trace && a.output != "-" && trace_path_for(a.output) == a.output)
    usage_error("-o " + a.output + ": the page would overwrite the trace written beside it; name it .html");
}

int run_report(const ReportPageArgs& a) {
  if (const int status = place_range(a.paths, a.range)) return status;
  Input input(a.paths, /*align_by_collectives=*/false);  // the report's own ranks scan aligns
  ReportOptions options;
  options.range = a.range;
  options.thread = a.thread;
  options.symbol_paths = a.symbol_paths;
  options.selected_ranks = a.ranks;
  std::string error;
  if (!a.no_trace && a.output != "-") {
    // Written first: the page links to it only once it exists.
    const std::string trace = trace_path_for(a.output);
    ChromeTraceOptions t;
    t.range = a.range;
    t.thread = a.thread;
    t.symbol_paths = a.symbol_paths;
    if (!write_perfetto_trace_file(input.reader(), t, trace, nullptr, &error)) {
      print_error(error);
      return kExitDamaged;
    }
    options.perfetto_file = trace.substr(trace.rfind('/') == std::string::npos ? 0 : trace.rfind('/') + 1);
  }
  OutputFile out;
  if (!out.open(a.output, &error)) {
    print_error(error);
    return kExitDamaged;
  }
  write_html_report(input.reader(), options, out.stream());
  if (!out.close(&error)) {
    print_error(error);
    return kExitDamaged;
  }
  return report_problems(input.reader());
}

struct FindingsArgs {
  std::vector<std::string> paths;
  RangeSpec range;
  std::string thread;
  std::string format = "text";
  std::string fail_on;         // "" never; "info", "warning" or "critical"
  std::vector<int32_t> ranks;  // --rank, parsed
};

// Exit 3 (as `ringprof diff` on a regression) when a finding is at least as
// severe as --fail-on: a CI job can gate on the rules.
constexpr int kExitFound = 3;

int run_findings(const FindingsArgs& a) {
  if (const int status = place_range(a.paths, a.range)) return status;
  Input input(a.paths, /*align_by_collectives=*/false);  // the ranks scan below aligns
  RanksOptions ranks_options;
  ranks_options.selected_ranks = a.ranks;
  const RanksReport ranks = analyse_ranks(input.reader(), ranks_options);
  FindingsOptions options;
  options.range = a.range;
  options.thread = a.thread;
  const std::vector<Finding> found = find_problems(input.reader(), options, &ranks);
  print_text(format_findings(found, a.format == "json" ? FindingsFormat::Json : FindingsFormat::Text));
  std::fflush(stdout);
  const int status = report_problems(input.reader());
  if (status != kExitOk || a.fail_on.empty()) return status;
  const FindingSeverity least = a.fail_on == "critical"  ? FindingSeverity::Critical
                                : a.fail_on == "warning" ? FindingSeverity::Warning
                                                         : FindingSeverity::Info;
  for (const Finding& f : found)
    if (f.severity >= least) return kExitFound;
  return kExitOk;
}

}  // namespace

void add_report_commands(CLI::App& app) {
  auto args = std::make_shared<ReportPageArgs>();
  CLI::App& r = *app.add_subcommand("report", "one self-contained HTML page explaining the recording");
  r.group("Reports");
  r.footer("The page inlines everything it needs: open it anywhere, offline (docs/report.md).");
  add_paths(r, args->paths, &args->ranks);
  add_output_option(r, args->output, "the page to write (report.html)")->required();
  add_thread_option(r, args->thread);
  add_symbol_path_option(r, args->symbol_paths);
  r.add_flag("--no-trace", args->no_trace,
             "do not write the full trace beside the page (OUT's name with .perfetto-trace), which its timeline "
             "links to");
  add_range_options(r, args->range);
  on_run(
      r, [args] { return run_report(*args); }, [args] { check_report(*args); });

  auto found = std::make_shared<FindingsArgs>();
  CLI::App& f = *app.add_subcommand("findings", "known performance problems, with evidence and what to do");
  f.group("Reports");
  f.footer("The rules and their thresholds: docs/report.md#findings. Exit 3 with --fail-on when one is found.");
  add_paths(f, found->paths, &found->ranks);
  f.add_option("--format", found->format, "text or json")->check(CLI::IsMember({"text", "json"}));
  f.add_option("--fail-on", found->fail_on, "exit 3 when a finding is at least this severe: info, warning, critical")
      ->check(CLI::IsMember({"info", "warning", "critical"}));
  add_thread_option(f, found->thread);
  add_range_options(f, found->range);
  on_run(f, [found] { return run_findings(*found); });
}

}  // namespace ringprof::cli

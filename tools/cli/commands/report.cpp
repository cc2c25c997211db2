// `ringprof report`: one self-contained HTML page about a recording.
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "options.h"
#include "reporting.h"
#include "ringprof/tools/html_report.h"
#include "ringprof/tools/output_file.h"
#include "ringprof/tools/perfetto_trace.h"

namespace ringprof::cli {
namespace {

struct ReportPageArgs {
  std::vector<std::string> paths;
  std::string output;
  WindowSpec window;
  std::string thread;
  std::vector<std::string> symbol_paths;
  bool no_trace = false;
};

// The full trace beside the page: report.html -> report.perfetto-trace.
std::string trace_path_for(const std::string& page) {
  const size_t slash = page.rfind('/');
  const size_t dot = page.rfind('.');
  const std::string stem = dot != std::string::npos && (slash == std::string::npos || dot > slash) ? page.substr(0, dot) : page;
  return stem + ".perfetto-trace";
}

int run_report(const ReportPageArgs& a) {
  check_window(a.window);
  if (const int status = place_window(a.paths, a.window)) return status;
  Input input(a.paths, /*align_by_collectives=*/false);  // the report's own ranks scan aligns
  ReportOptions options;
  options.window = a.window;
  options.thread = a.thread;
  options.symbol_paths = a.symbol_paths;
  std::string error;
  if (!a.no_trace && a.output != "-") {
    // Written first: the page links to it only once it exists.
    const std::string trace = trace_path_for(a.output);
    ChromeTraceOptions t;
    t.window = a.window;
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

}  // namespace

void add_report_page_commands(CLI::App& app) {
  auto args = std::make_shared<ReportPageArgs>();
  CLI::App& r = *app.add_subcommand("report", "one self-contained HTML page explaining the recording");
  r.group("Reports");
  r.footer("The page inlines everything it needs: open it anywhere, offline (docs/report.md).");
  add_paths(r, args->paths);
  add_output_option(r, args->output, "the page to write (report.html)")->required();
  add_thread_option(r, args->thread);
  add_symbol_path_option(r, args->symbol_paths);
  r.add_flag("--no-trace", args->no_trace,
             "do not write the full trace beside the page (OUT's name with .perfetto-trace), which its timeline "
             "links to");
  add_window_options(r, args->window);
  on_run(r, [args] { return run_report(*args); });
}

}  // namespace ringprof::cli

// `ringprof report`: one self-contained HTML page about a recording.
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "options.h"
#include "reporting.h"
#include "ringprof/tools/html_report.h"
#include "ringprof/tools/output_file.h"

namespace ringprof::cli {
namespace {

struct ReportPageArgs {
  std::vector<std::string> paths;
  std::string output;
  WindowSpec window;
  std::string thread;
};

int run_report(const ReportPageArgs& a) {
  check_window(a.window);
  if (const int status = place_window(a.paths, a.window)) return status;
  Input input(a.paths, /*align_by_collectives=*/false);  // the report's own ranks scan aligns
  ReportOptions options;
  options.window = a.window;
  options.thread = a.thread;
  OutputFile out;
  std::string error;
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
  add_window_options(r, args->window);
  on_run(r, [args] { return run_report(*args); });
}

}  // namespace ringprof::cli

// `ringprof info`: what a set of files holds.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "options.h"
#include "reporting.h"
#include "ringprof/tools/trace_info.h"

namespace ringprof::cli {

void add_reading_commands(CLI::App& app) {
  auto paths = std::make_shared<std::vector<std::string>>();
  CLI::App& info = *app.add_subcommand("info", "files, processes, threads, time range, events, drops, damage");
  info.group("Reading");
  add_paths(info, *paths);
  on_run(info, [paths] {
    Input input(*paths);
    const TraceInfo summary = collect_info(input.reader());
    print_text(format_info(summary));
    std::fflush(stdout);
    return report_problems(input.reader());
  });
}

}  // namespace ringprof::cli

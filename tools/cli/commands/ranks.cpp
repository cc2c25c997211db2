// `ringprof ranks`: a distributed job's processes side by side — per rank and
// step where the time went, and who held the others up.
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "options.h"
#include "reporting.h"
#include "ringprof/tools/output_file.h"
#include "ringprof/tools/rank_report.h"

namespace ringprof::cli {
namespace {

struct RanksArgs {
  std::vector<std::string> paths;
  std::string format = "text";
  std::string output = "-";
  bool per_step = false;
  unsigned threads = 0;
  std::vector<int32_t> ranks;  // --rank, parsed
};

int run_ranks(const RanksArgs& a) {
  Input input(a.paths, /*align_by_collectives=*/false);  // analyse_ranks aligns from its own scan
  RanksOptions options;
  options.threads = a.threads;
  options.selected_ranks = a.ranks;
  const RanksReport report = analyse_ranks(input.reader(), options);
  const RanksFormat format =
      a.format == "csv" ? RanksFormat::Csv : a.format == "json" ? RanksFormat::Json : RanksFormat::Text;
  OutputFile out;
  std::string error;
  if (!out.open(a.output, &error)) {
    print_error(error);
    return kExitDamaged;
  }
  out.stream() << format_ranks(report, format, a.per_step);
  if (!out.close(&error)) {
    print_error(error);
    return kExitDamaged;
  }
  const int status = report_problems(input.reader());
  for (const std::string& p : report.problems) std::fprintf(stderr, "%s\n", p.c_str());
  if (report.late_gpu_records || report.late_step_marks)
    std::fprintf(stderr,
                 "ringprof: note: %llu GPU records and %llu step marks came further out of order than the reading "
                 "window; their steps' GPU figures are approximate\n",
                 static_cast<unsigned long long>(report.late_gpu_records),
                 static_cast<unsigned long long>(report.late_step_marks));
  if (report.late_cover_spans)
    std::fprintf(stderr,
                 "ringprof: note: %llu zones or GPU records began before the time in zones was settled (a zone "
                 "around many steps, or records that reached the files much later); they count from there on, so "
                 "in_zones_ns and idle_in_zones_ns are approximate\n",
                 static_cast<unsigned long long>(report.late_cover_spans));
  return report.problems.empty() ? status : kExitDamaged;
}

}  // namespace

void add_rank_commands(CLI::App& app) {
  auto args = std::make_shared<RanksArgs>();
  CLI::App& r = *app.add_subcommand(
      "ranks", "a distributed job per rank and step: GPU compute, communication, overlap, idle; stragglers");
  r.group("Reports");
  r.footer(
      "PATH... are the job's directories (or one directory of per-rank directories). Hosts are aligned by the ends "
      "of collective operations (docs/ranks.md).");
  add_paths(r, args->paths, &args->ranks);
  r.add_option("--format", args->format, "text (default), csv or json")
      ->type_name("FORMAT")
      ->check(CLI::IsMember({"text", "csv", "json"}));
  r.add_flag("--per-step", args->per_step, "every step: a table (text), a row per rank and step (csv), times (json)");
  r.add_option("--threads", args->threads, "ranks read at once (default: one per hardware thread)")
      ->type_name("N")
      ->check(CLI::Range(1u, 1024u));
  add_output_option(r, args->output, "write there instead of stdout (.gz: compressed)");
  on_run(r, [args] { return run_ranks(*args); });
}

}  // namespace ringprof::cli

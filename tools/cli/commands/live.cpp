// `ringprof extract` and `trigger`: working with a recording that may still
// be running (the work is in ringprof/tools/extract.h and trigger.h).
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "options.h"
#include "reporting.h"
#include "ringprof/tools/extract.h"
#include "ringprof/tools/trigger.h"

namespace ringprof::cli {
namespace {

struct ExtractArgs {
  std::vector<std::string> paths;
  RangeSpec range;
  std::string output;
};

void check_extract(const ExtractArgs& a) {
  if (a.output.empty()) usage_error("extract needs -o DIR");
  if (a.range.empty()) usage_error("extract needs a time range (--last, --from/--to, --around, --window-id)");
}

int run_extract(const ExtractArgs& a) {
  ExtractOptions options;
  options.range = a.range;
  options.output_dir = a.output;
  options.progress = &terminal_progress();
  const ExtractResult r = extract_range(a.paths, options);
  for (const Problem& p : r.problems) std::fprintf(stderr, "%s\n", format_problem(p).c_str());
  if (!r.ok) {
    print_error("extract: " + r.error);
    return kExitDamaged;
  }
  std::printf("window %s .. %s us (CLOCK_MONOTONIC)\n", format_us(r.range.begin_ns).c_str(),
              r.range.end_ns == UINT64_MAX ? "end" : format_us(r.range.end_ns).c_str());
  std::printf("%llu events in %llu segments, %zu files in %s\n", static_cast<unsigned long long>(r.events),
              static_cast<unsigned long long>(r.segments), r.files.size(), a.output.c_str());
  if (r.clipped_zones)
    std::printf("%llu zone edges clipped to the window\n", static_cast<unsigned long long>(r.clipped_zones));
  if (r.vanished_files)
    std::fprintf(stderr, "ringprof: note: %llu files were deleted by their writer before they could be read\n",
                 static_cast<unsigned long long>(r.vanished_files));
  return r.problems.empty() ? kExitOk : kExitDamaged;
}

uint64_t seconds_to_ns(const std::string& text) {
  return static_cast<uint64_t>(std::strtod(text.c_str(), nullptr) * 1e9);
}

int run_trigger(const TriggerOptions& o) {
  const TriggerResult r = trigger_process(o);
  if (!r.ok) {
    print_error("trigger: " + r.error);
    return kExitDamaged;
  }
  std::printf("pid %u: window %llu (extract it with: ringprof extract %s --window-id %llu -o DIR)\n", o.pid,
              static_cast<unsigned long long>(r.window_id), r.dir.c_str(),
              static_cast<unsigned long long>(r.window_id));
  return kExitOk;
}

}  // namespace

void add_live_commands(CLI::App& app) {
  auto extract = std::make_shared<ExtractArgs>();
  CLI::App& x = *app.add_subcommand(
      "extract",
      "a time range's events (or a detailed window's) into files that decode alone (works on a live directory)");
  x.group("Live recordings");
  add_paths(x, extract->paths);
  add_output_option(x, extract->output, "the directory to write into (required; created if missing)")->type_name("DIR");
  add_range_options(x, extract->range);
  x.footer("A range is required: --last, --from/--to, --around or --window-id.");
  on_run(x, [extract] { return run_extract(*extract); }, [extract] { check_extract(*extract); });

  auto trigger = std::make_shared<TriggerOptions>();
  CLI::App& t = *app.add_subcommand("trigger", "ask a running process for a detailed window now");
  t.group("Live recordings");
  t.add_option("PID", trigger->pid, "the process to ask")
      ->required()
      ->type_name("")
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            const bool ok = !v.empty() && v.size() < 10 && v.find_first_not_of("0123456789") == std::string::npos &&
                            v.find_first_not_of('0') != std::string::npos;
            return ok ? "" : "bad PID '" + v + "'";
          },
          ""));
  t.add_option_function<std::string>(
       "--steps",
       [trigger](const std::string& v) { trigger->steps = static_cast<uint64_t>(std::strtod(v.c_str(), nullptr)); },
       "the next N whole steps, from the process's next step()")
      ->type_name("N")
      ->check(amount_validator());
  t.add_option_function<std::string>(
       "--seconds", [trigger](const std::string& v) { trigger->duration_ns = seconds_to_ns(v); },
       "S seconds (default: the process's own, 10 s)")
      ->type_name("S")
      ->check(amount_validator());
  t.add_option("--mode", "the kind of window: only detailed")
      ->type_name("detailed")
      ->check(CLI::Validator(
          [](std::string& v) -> std::string { return v == "detailed" ? "" : "only 'detailed' windows exist"; }, ""));
  t.add_option("--dir", trigger->dir, "the process's ringprof directory, when it cannot be found")->type_name("DIR");
  t.add_option_function<std::string>(
       "--timeout", [trigger](const std::string& v) { trigger->timeout_ns = seconds_to_ns(v); },
       "how long to wait for the answer, in seconds (default 5)")
      ->type_name("S")
      ->check(amount_validator());
  on_run(t, [trigger] { return run_trigger(*trigger); });
}

}  // namespace ringprof::cli

#include "options.h"

#include <cstdlib>
#include <map>
#include <memory>
#include <utility>

#include "reporting.h"
#include "ringprof/tools/rank_select.h"

namespace ringprof::cli {

namespace {

// A command's PATH... and --rank, kept until the command runs: on_run narrows
// the paths to the ranks' files first, so the command never sees the rest.
struct PathSelection {
  std::vector<std::string>* paths = nullptr;
  const RangeSpec* range = nullptr;  // the command's, checked before any file is read
  std::string rank_text;
  std::vector<int32_t>* ranks = nullptr;  // the parsed list, for a command that wants it
};

std::map<const CLI::App*, std::unique_ptr<PathSelection>>& path_selections() {
  static std::map<const CLI::App*, std::unique_ptr<PathSelection>> selections;
  return selections;
}

PathSelection& selection_of(const CLI::App& cmd) {
  std::unique_ptr<PathSelection>& sel = path_selections()[&cmd];
  if (!sel) sel = std::make_unique<PathSelection>();
  return *sel;
}

// kExitOk, or the status of a selection that cannot be made (said on stderr).
int apply_rank_selection(const CLI::App& cmd) {
  const auto it = path_selections().find(&cmd);
  if (it == path_selections().end() || it->second->rank_text.empty() || !it->second->paths) return kExitOk;
  PathSelection& sel = *it->second;
  std::string error;
  const std::vector<int32_t> ranks = *parse_rank_list(sel.rank_text, &error);  // checked while parsing
  RankSelection chosen = select_ranks(*sel.paths, ranks);
  if (!chosen.missing.empty()) {
    print_error("--rank: no file states rank " + format_rank_list(chosen.missing) +
                (chosen.present.empty() ? std::string(" (no file states a rank)")
                                        : " (the files state ranks " + format_rank_list(chosen.present) + ")"));
    return kExitDamaged;
  }
  *sel.paths = std::move(chosen.paths);
  if (sel.ranks) *sel.ranks = ranks;
  return kExitOk;
}

}  // namespace

void on_run(CLI::App& cmd, std::function<int()> run, std::function<void()> check) {
  // CLI11's way to end a callback with a status: main returns its code.
  cmd.callback([&cmd, run = std::move(run), check = std::move(check)] {
    // Usage errors first (exit 1, no file opened), then --rank, which reads.
    if (const auto it = path_selections().find(&cmd); it != path_selections().end() && it->second->range)
      check_range(*it->second->range);
    if (check) check();
    int status = apply_rank_selection(cmd);
    if (status == kExitOk) status = run();
    if (status != kExitOk) throw CLI::RuntimeError(status);
  });
}

void usage_error(const std::string& message) { throw CLI::ValidationError(message); }

void add_paths(CLI::App& cmd, std::vector<std::string>& paths, std::vector<int32_t>* ranks) {
  cmd.add_option("PATH", paths, "ringprof files (*.rpf, *.rpf.part) or directories holding them")
      ->required()
      ->type_name("");
  PathSelection& sel = selection_of(cmd);
  sel.paths = &paths;
  sel.ranks = ranks;
  cmd.add_option("--rank", sel.rank_text, "a distributed job's ranks to keep, the others' files left unread")
      ->type_name("LIST")
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            std::string error;
            return parse_rank_list(text, &error) ? "" : error;
          },
          ""));
}

CLI::Validator duration_validator() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        return parse_duration_ns(text) ? "" : "bad duration '" + text + "' (try 500ms, 2.5s, 1m)";
      },
      "");
}

CLI::Validator time_point_validator() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        return parse_time_point(text) ? "" : "bad time '" + text + "' (try 2.5s, 12:00:00, 2024-05-01T12:00:00Z)";
      },
      "");
}

CLI::Validator digits_validator(size_t max_digits) {
  return CLI::Validator(
      [max_digits](std::string& text) -> std::string {
        const bool ok =
            !text.empty() && text.size() <= max_digits && text.find_first_not_of("0123456789") == std::string::npos;
        return ok ? "" : "bad value '" + text + "' (a whole number)";
      },
      "");
}

CLI::Validator amount_validator() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        char* end = nullptr;
        const double d = std::strtod(text.c_str(), &end);
        const bool ok = !text.empty() && end && *end == '\0' && d >= 0 && d < 1e9;
        return ok ? "" : "bad value '" + text + "' (a number, 0 or more)";
      },
      "");
}

void add_range_options(CLI::App& cmd, RangeSpec& range) {
  selection_of(cmd).range = &range;
  CLI::App& group = *cmd.add_option_group(
      "Time range",
      "D: 500ms, 2.5s, 1m, 250us, 10ns, 1h (a bare number is seconds). T: a duration from the trace start, or a "
      "wall-clock time: 2024-05-01T12:00:00Z, 12:00:00 (today, local)");
  auto moment = [&range](bool is_from) {
    return [&range, is_from](const std::string& text) { range.set(is_from, *parse_time_point(text)); };
  };
  CLI::Option* from = group.add_option_function<std::string>("--from", moment(true), "from T")
                          ->type_name("T")
                          ->check(time_point_validator());
  CLI::Option* to = group.add_option_function<std::string>("--to", moment(false), "to T")
                        ->type_name("T")
                        ->check(time_point_validator());
  CLI::Option* last = group
                          .add_option_function<std::string>(
                              "--last", [&range](const std::string& text) { range.last_ns = parse_duration_ns(text); },
                              "the last D of the trace (back from its end)")
                          ->type_name("D")
                          ->check(duration_validator());
  CLI::Option* around =
      group
          .add_option_function<std::string>(
              "--around", [&range](const std::string& text) { range.around = parse_time_point(text); },
              "a range centred on T")
          ->type_name("T")
          ->check(time_point_validator());
  group
      .add_option_function<std::string>(
          "--width,--window", [&range](const std::string& text) { range.around_width_ns = *parse_duration_ns(text); },
          "the width of the --around range (default 30s; --window is its old name)")
      ->type_name("D")
      ->check(duration_validator());
  CLI::Option* window_id =
      group
          .add_option_function<std::string>(
              "--window-id", [&range](const std::string& text) { range.window_id = std::stoull(text); },
              "the events of detailed window N, between its marks (ringprof info lists them)")
          ->type_name("N")
          ->check(digits_validator(18));
  for (CLI::Option* end : {from, to}) end->excludes(last)->excludes(around)->excludes(window_id);
  last->excludes(around)->excludes(window_id);
  around->excludes(window_id);
}

void check_range(const RangeSpec& w) {
  if (w.from_ns && w.to_ns && *w.to_ns < *w.from_ns) usage_error("--to is before --from");
}

void add_thread_option(CLI::App& cmd, std::string& thread) {
  cmd.add_option("--thread", thread, "keep one thread, by name or tid")->type_name("NAME_OR_TID");
}

void add_symbol_path_option(CLI::App& cmd, std::vector<std::string>& dirs) {
  cmd.add_option("--symbol-path", dirs,
                 "where separate debug files are, looked up by build ID (DIR/.build-id/xx/rest.debug) before the "
                 "recorded path (repeatable)")
      ->type_name("DIR")
      ->allow_extra_args(false);
}

void add_top_option(CLI::App& cmd, size_t& top, const std::string& rows) {
  cmd.add_option_function<std::string>(
         "--top", [&top](const std::string& text) { top = std::stoul(text); }, "only the first N " + rows)
      ->type_name("N")
      ->check(digits_validator(9));
}

void add_format_option(CLI::App& cmd, std::string& format) {
  cmd.add_option("--format", format, "text (default) or csv")
      ->type_name("FORMAT")
      ->check(CLI::IsMember({"text", "csv"}));
}

CLI::Option* add_output_option(CLI::App& cmd, std::string& output, const std::string& what) {
  return cmd.add_option("-o", output, what)->type_name("OUT");
}

}  // namespace ringprof::cli

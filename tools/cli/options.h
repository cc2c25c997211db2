// The options more than one `ringprof` command takes, each defined once here
// and attached to the commands that take it, and the pieces every command
// shares: exit statuses, how a command runs, how it reports a usage error.
//
// Parsing is CLI11's. Values are checked while parsing (validators), so a bad
// value is a one-line usage error before any file is opened; a check that
// needs two options at once (--sort against --samples, --to against --from)
// is done by the command and reported through usage_error().
#pragma once

#include <CLI/CLI.hpp>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ringprof/tools/time_range.h"

namespace ringprof::cli {

// Exit statuses (docs/cli.md#exit-status).
constexpr int kExitOk = 0;
constexpr int kExitUsage = 1;    // a usage error
constexpr int kExitDamaged = 2;  // input skipped, output not written, or a request failed

// Runs `run` when `cmd` is the command chosen; the status it returns becomes
// ringprof's exit status. Before it: the usage checks (the range's, when the
// command has add_range_options, and `check`, which reports through
// usage_error), then --rank's narrowing of the paths (add_paths), which
// reads the files, so a usage error always comes first.
void on_run(CLI::App& cmd, std::function<int()> run, std::function<void()> check = {});

// A usage error found after parsing: main prints it as one line and exits 1.
[[noreturn]] void usage_error(const std::string& message);

// PATH...: ringprof files (*.rpf, *.rpf.part) or directories holding them.
// Not checked for existence here: a missing input is reported by the reader,
// with the others, and exits 2 (docs/cli.md#exit-status).
// With them --rank LIST (ringprof/tools/rank_select.h): before the command
// runs (on_run), `paths` becomes the files of those ranks alone, and `ranks`,
// when given, the list; a rank no file states is an error (exit 2).
void add_paths(CLI::App& cmd, std::vector<std::string>& paths, std::vector<int32_t>* ranks = nullptr);

// --from/--to, --last, --around/--width, --window-id: one way to say which
// part of the trace, the others excluded.
void add_range_options(CLI::App& cmd, RangeSpec& range);
// The checks that need the whole range (after parsing; on_run makes them
// for every command with add_range_options).
void check_range(const RangeSpec& range);

// --thread NAME_OR_TID.
void add_thread_option(CLI::App& cmd, std::string& thread);
// --symbol-path DIR (repeatable).
void add_symbol_path_option(CLI::App& cmd, std::vector<std::string>& dirs);
// --top N; `rows` says which rows it limits.
void add_top_option(CLI::App& cmd, size_t& top, const std::string& rows);
// --format text|csv.
void add_format_option(CLI::App& cmd, std::string& format);
// -o OUT; `what` describes it.
CLI::Option* add_output_option(CLI::App& cmd, std::string& output, const std::string& what);

// Value checks shared by the options above and the commands' own.
CLI::Validator duration_validator();
CLI::Validator time_point_validator();
// Decimal digits only, at most `max_digits` of them.
CLI::Validator digits_validator(size_t max_digits);
// A plain non-negative number below 1e9 (trigger's steps and seconds).
CLI::Validator amount_validator();

}  // namespace ringprof::cli

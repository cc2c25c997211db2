// The `ringprof` commands, by group. Each add_*_commands() adds its commands
// to the app as subcommands, with their options and what they run; main.cpp
// calls them all and lets CLI11 pick the one named on the command line.
//
// Every command is thin: it turns options into the tools library's option
// structs, calls the library and prints what it returns.
#pragma once

namespace CLI {
class App;
}

namespace ringprof::cli {

// info: what the files hold (commands/reading.cpp).
void add_reading_commands(CLI::App& app);
// convert, flame, pprof: files for other tools (commands/exports.cpp).
void add_export_commands(CLI::App& app);
// table, gpu, memory: summaries printed as tables (commands/reports.cpp).
void add_summary_commands(CLI::App& app);
// diff: two recordings compared (commands/compare.cpp).
void add_compare_commands(CLI::App& app);
// extract, trigger: working with a live recording (commands/live.cpp).
void add_live_commands(CLI::App& app);
// ranks: a distributed job, rank by rank (commands/ranks.cpp).
void add_rank_commands(CLI::App& app);
// report: an HTML page about a recording (commands/report.cpp).
void add_report_commands(CLI::App& app);
// ship: files into ClickHouse (commands/fleet.cpp).
void add_fleet_commands(CLI::App& app);

}  // namespace ringprof::cli

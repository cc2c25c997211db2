// ringprof — the command-line front over the tools library. It builds the
// command set (commands.h), lets CLI11 parse and run the command named, and
// turns the outcome into the exit status: 0 all good, 1 usage error, 2 input
// damaged (something skipped), output not written or a request failed.
//
// A usage error is one line on stderr: what is wrong and the command's usage.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "commands.h"
#include "options.h"
#include "reporting.h"

namespace {

using namespace ringprof::cli;

const char* const kDescription =
    "ringprof: reads the files an application recording with libringprof writes.\n"
    "PATH is a ringprof file (*.rpf, *.rpf.part) or a directory holding them.";

const char* const kFooter =
    "Time ranges (every command but info and trigger): --from T, --to T, --last D (back from the end),\n"
    "  --around T --width D, --window-id N (between detailed window N's marks)\n"
    "  D: 500ms, 2.5s, 1m, 250us, 10ns, 1h; a bare number is seconds\n"
    "  T: a duration from the trace start, or a wall-clock time: 2024-05-01T12:00:00Z, 12:00:00 (today, local)\n"
    "Exit status: 0 all read, 1 usage error, 2 something skipped or not written.\n"
    "ringprof COMMAND --help lists a command's options.";

// "ringprof table [OPTIONS] PATH..." for the command chosen (or the app).
std::string synopsis(const CLI::App& app, const CLI::App* cmd) {
  const auto formatter = std::dynamic_pointer_cast<CLI::Formatter>(app.get_formatter());
  if (!formatter) return "ringprof COMMAND [OPTIONS] PATH...";
  std::string usage =
      cmd ? formatter->make_usage(cmd, "ringprof " + cmd->get_name()) : formatter->make_usage(&app, "ringprof");
  usage.erase(0, usage.find(':') + 2);  // CLI11 starts it with "Usage: "
  while (!usage.empty() && usage.back() == '\n') usage.pop_back();
  return usage;
}

// What was wrong, in words a user of ringprof reads; CLI11's own otherwise.
std::string usage_message(const CLI::App& app, const CLI::App* cmd, const CLI::ParseError& e) {
  const bool extras = dynamic_cast<const CLI::ExtrasError*>(&e) != nullptr;
  if (cmd && extras) {
    std::vector<std::string> rest = cmd->remaining();
    if (rest.empty()) rest = app.remaining();
    if (!rest.empty()) {
      const std::string& arg = rest.front();
      if (arg.size() > 1 && arg[0] == '-') return "unknown option for " + cmd->get_name() + ": " + arg;
      return "unexpected argument '" + arg + "'";
    }
  }
  // "-o: 1 required OUT missing": an option given last, without its value.
  const std::string what = e.what();
  if (dynamic_cast<const CLI::ArgumentMismatch*>(&e) && what.find(" missing") != std::string::npos)
    return what.substr(0, what.find(':')) + " needs a value";
  if (!cmd) {
    const std::vector<std::string> rest = app.remaining();
    if (rest.empty()) return "no command given";
    if (rest.front().size() > 1 && rest.front()[0] == '-') return "unknown option: " + rest.front();
    return "unknown command '" + rest.front() + "'";
  }
  return what;
}

CLI::App& build(CLI::App& app) {
  app.set_version_flag("--version", std::string("ringprof ") + RINGPROF_VERSION, "print ringprof's version");
  app.require_subcommand(1);
  app.get_formatter()->label("SUBCOMMAND", "COMMAND");
  // An option given twice: the last one counts (a vector option keeps all).
  app.option_defaults()->multi_option_policy(CLI::MultiOptionPolicy::TakeLast);
  // The commands inherit the settings above, not the footer (it is the app's).
  add_reading_commands(app);
  add_export_commands(app);
  add_summary_commands(app);
  add_compare_commands(app);
  add_live_commands(app);
  add_rank_commands(app);
  add_report_commands(app);
  add_fleet_commands(app);
  app.footer(kFooter);
  return app;
}

}  // namespace

int main(int argc, char** argv) {
  terminal_progress();  // its first quiet second starts with the command
  CLI::App app(kDescription, "ringprof");
  build(app);
  std::vector<std::string> args(argv + std::min(argc, 1), argv + argc);
  // `ringprof help [COMMAND]` is `ringprof [COMMAND] --help`.
  if (!args.empty() && args.front() == "help") {
    args.erase(args.begin());
    args.push_back("--help");
  }
  std::reverse(args.begin(), args.end());  // CLI11 takes a vector last argument first
  try {
    app.parse(args);  // runs the chosen command (options.h: on_run)
    return kExitOk;
  } catch (const CLI::RuntimeError& e) {
    return e.get_exit_code();  // a command's status (a ParseError to CLI11, not a usage error)
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version: on stdout
    const std::vector<CLI::App*> chosen = app.get_subcommands();
    const CLI::App* cmd = chosen.empty() ? nullptr : chosen.front();
    print_error(usage_message(app, cmd, e) + " (usage: " + synopsis(app, cmd) + "; more with --help)");
    return kExitUsage;
  } catch (const std::exception& e) {
    // Out of memory or a library bug: still one line and a status, not an abort.
    print_error(e.what());
    return kExitDamaged;
  }
}

// `ringprof ship`: a recording's sealed files into ClickHouse (the work is in
// ringprof/tools/ship.h).
#include <atomic>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "commands.h"
#include "options.h"
#include "reporting.h"
#include "ringprof/tools/ship.h"

namespace ringprof::cli {
namespace {

struct ShipArgs {
  std::vector<std::string> paths;
  ShipOptions options;
  bool follow = false;
  double interval_s = 2;
};

std::atomic<bool> g_stop{false};
// The first Ctrl-C or SIGTERM asks for one last round; a second one ends the
// command at once (a round stuck on a server that does not answer).
void on_stop_signal(int) {
  if (g_stop.exchange(true)) _exit(130);
}

// --follow: a line per round that shipped something or found a deleted
// file; an error once until the next success. Ctrl-C or SIGTERM: one more
// round, then out.
int run_follow(const ShipArgs& a) {
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigaction(SIGINT, &sa, nullptr);
  sigaction(SIGTERM, &sa, nullptr);
  std::string last_error;
  std::set<std::string> said;  // a damaged file's lines, said in the first round that met them
  uint64_t deleted = 0;
  bool ok = true;
  follow_ship(a.paths, a.options, static_cast<uint64_t>(a.interval_s * 1e9), g_stop, [&](const FollowRound& round) {
    const ShipResult& r = round.result;
    ok = r.ok;
    if (!r.ok) {
      if (r.error != last_error) print_error("ship: " + r.error);
      last_error = r.error;
      return;
    }
    last_error.clear();
    for (const Problem& p : r.problems)
      if (said.insert(format_problem(p)).second) std::fprintf(stderr, "%s\n", format_problem(p).c_str());
    if (r.files_shipped || round.deleted_unshipped != deleted) {
      std::printf("%llu files shipped (%llu events, %llu spans)", static_cast<unsigned long long>(r.files_shipped),
                  static_cast<unsigned long long>(r.events), static_cast<unsigned long long>(r.spans));
      if (round.deleted_unshipped)
        std::printf("; %llu files deleted by their writer before they could be shipped",
                    static_cast<unsigned long long>(round.deleted_unshipped));
      std::printf("\n");
      std::fflush(stdout);
    }
    deleted = round.deleted_unshipped;
  });
  return ok ? kExitOk : kExitDamaged;
}

int run_ship(ShipArgs& a) {
  a.options.progress = &terminal_progress();
  if (a.follow) return run_follow(a);
  const ShipResult r = ship_files(a.paths, a.options);
  for (const Problem& p : r.problems) std::fprintf(stderr, "%s\n", format_problem(p).c_str());
  if (!r.ok) {
    print_error("ship: " + r.error);
    return kExitDamaged;
  }
  auto n = [](uint64_t v) { return static_cast<unsigned long long>(v); };
  std::printf("%llu files shipped (%llu events, %llu bytes), %llu shipped before, %llu still being written\n",
              n(r.files_shipped), n(r.events), n(r.file_bytes), n(r.files_already), n(r.files_live));
  if (r.files_shipped)
    std::printf("rows: %llu spans, %llu samples (%llu new stacks), %llu GPU, %llu counters, %llu marks, %llu steps\n",
                n(r.spans), n(r.samples), n(r.stacks), n(r.gpu), n(r.counters), n(r.marks), n(r.steps));
  if (r.files_reshipped)
    std::fprintf(stderr,
                 "ringprof: note: %llu files had been begun by a ship that stopped part-way: their rows were "
                 "deleted and they were shipped again\n",
                 n(r.files_reshipped));
  if (r.files_vanished)
    std::fprintf(stderr,
                 "ringprof: note: %llu files were deleted by their writer's byte budget before they could be read\n",
                 n(r.files_vanished));
  if (r.unterminated_left)
    std::fprintf(stderr,
                 "ringprof: note: %llu unterminated zones left out: their process's last file was shipped while "
                 "it still ran\n",
                 n(r.unterminated_left));
  return r.problems.empty() ? kExitOk : kExitDamaged;
}

}  // namespace

void add_fleet_commands(CLI::App& app) {
  auto ship = std::make_shared<ShipArgs>();
  CLI::App& s = *app.add_subcommand("ship", "sealed files into ClickHouse, each once (docs/clickhouse.md)");
  s.group("Fleet");
  add_paths(s, ship->paths);
  s.add_option("--clickhouse", ship->options.url, "ClickHouse's HTTP interface, e.g. http://127.0.0.1:8123")
      ->required()
      ->type_name("URL");
  s.add_option("--database", ship->options.database, "the database (created when missing)")
      ->capture_default_str()
      ->type_name("NAME");
  s.add_option("--prefix", ship->options.prefix, "put before every table's name")->type_name("TEXT");
  s.add_option("--cluster", ship->options.cluster,
               "also create <table>_all: Distributed tables over this cluster's shards (as the server names it)")
      ->type_name("NAME");
  s.add_flag("--follow", ship->follow,
             "keep going: ship each file as it is sealed, until Ctrl-C or SIGTERM (then one last round)");
  s.add_option("--interval", ship->interval_s, "with --follow: seconds between rounds")
      ->capture_default_str()
      ->type_name("S")
      ->check(CLI::Range(0.05, 86400.0));
  add_symbol_path_option(s, ship->options.symbol_paths);
  on_run(s, [ship] { return run_ship(*ship); });
}

}  // namespace ringprof::cli

// ringprof/tools/ship.h — a recording's sealed files into ClickHouse, for a
// fleet's questions (docs/clickhouse.md).
//
// Every sealed file (never a `.part`) becomes rows of the tables in
// schemas/clickhouse.sql: spans (zones and async spans), samples and their
// stacks, GPU activity, counters, marks, step times, processes and threads.
// A span, a sample or a mark belongs to the file that holds its end (its one
// event), so a zone that begins in one file and ends in the next is one row;
// every file of a process is read, in order, and only the files not shipped
// yet give rows. A file's key (its host and its name: pid, start stamp,
// number) goes into every row and into the ledger table, `begun` before its
// rows and `done` after: shipping a file again inserts nothing, and a file
// whose shipping stopped part-way has its rows deleted by key and is shipped
// again, which the result reports. Ship whole directories: a zone that began
// in a file left out of PATH… is lost to the file that ends it.
//
// A process that still writes (its writer running on this host, a `.part`
// among its files, or a newer file come during the read) keeps its open
// zones and its last step for a later ship; one that has finished gives them
// as unterminated spans. A `.part` whose writer is gone from this host
// (killed, crashed) is final and ships. A lock file in each directory
// (.ringprof-ship.lock) keeps two ships from shipping one file twice; rows
// go out in inserts of at most about 64 MiB.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ringprof/tools/trace_reader.h"

namespace ringprof {

class ProgressReporter;

struct ShipOptions {
  std::string url;                        // ClickHouse's HTTP interface: http://host:8123
  std::string database = "ringprof";      // created when missing
  std::string prefix;                     // put before every table's name
  std::string cluster;                    // also create <table>_all, Distributed over this cluster's shards
  std::vector<std::string> symbol_paths;  // where to look for debug files (as `ringprof table --symbol-path`)
  bool create_schema = true;              // false: the schema is known to be there (a follow's later rounds)
  ProgressReporter* progress = nullptr;
};

struct ShipResult {
  bool ok = true;
  std::string error;  // when !ok: one line, what failed and what is left begun and not done
  uint64_t files_shipped = 0;
  uint64_t files_already = 0;    // shipped before: nothing inserted
  uint64_t files_reshipped = 0;  // begun before and never done: their rows deleted, shipped again
  uint64_t files_live = 0;       // `.part` files left for later
  uint64_t files_vanished = 0;   // deleted by their writer's byte budget between the listing and the read
  uint64_t spans = 0, samples = 0, stacks = 0, gpu = 0, counters = 0, marks = 0, steps = 0;
  uint64_t events = 0;             // events of the files shipped
  uint64_t file_bytes = 0;         // their size on disk
  uint64_t unterminated_left = 0;  // a finished process's open zones whose last file was shipped before
  std::vector<Problem> problems;   // damage met while reading (each file's good segments are shipped)
  std::vector<std::string> shipped_paths;
  std::vector<std::string> settled_paths;  // every sealed file the ledger now has done: shipped now or before
};

// The schema's version this ringprof writes (schemas/clickhouse.sql).
inline constexpr uint32_t kClickHouseSchemaVersion = 1;

// The schema's statements for `database` and `prefix`, as ship creates them;
// with a `cluster`, the Distributed tables over its shards too.
std::vector<std::string> clickhouse_schema(const std::string& database, const std::string& prefix,
                                           const std::string& cluster = {});

ShipResult ship_files(const std::vector<std::string>& paths, const ShipOptions& options);

// `ship --follow`: ships what is sealed, again every `interval_ns`, until
// `stop` is set (then once more, so that what was sealed last ships too).
// A file of a rolling set the writer deleted (its byte budget) before it
// was shipped is found by the gap it leaves in the files' numbering, and
// counted once. on_round gets each round's result and that count, so far.
struct FollowRound {
  ShipResult result;
  uint64_t deleted_unshipped = 0;  // since the follow began
  bool last = false;
};
void follow_ship(const std::vector<std::string>& paths, const ShipOptions& options, uint64_t interval_ns,
                 const std::atomic<bool>& stop, const std::function<void(const FollowRound&)>& on_round);

}  // namespace ringprof

// ringprof/tools/rank_report.h — what `ringprof ranks` reports on a job: per
// rank and per step, where the time went; across ranks, who is slowest and
// why.
//
// Reading: every process is scanned once (ringprof/tools/rank_scan.h), up to
// `threads` at a time; hosts are then aligned from the collectives
// (ringprof/tools/clock_alignment.h). What is kept per rank is bounded (step
// rows, the latest collective calls, per-name totals), so memory grows with
// the number of ranks and steps, not with the size of their traces.
//
// Stragglers, two ways:
//   - late at collectives: calls PyTorch numbered are one collective by
//     (process group, sequence number, operation); other calls of one key whose aligned
//     ends fall within half the key's usual spacing are one; in each, a rank's
//     lateness is its entry (begin) minus the median entry of the other ranks
//     in it. A rank whose median lateness is at least kLateFloorNs and
//     kLateShare of the median step time (of the median spacing of its
//     collectives when the job marks no steps) is a straggler.
//   - slow steps: a rank matched in fewer collectives than half its steps
//     (not in lockstep with the others) whose median step time
//     exceeds the median over ranks by more than 3 scaled median absolute
//     deviations and kSlowShare of it (three ranks or more).
// The reason given is the zone (self time) or kernel whose time per step
// exceeds the other ranks' median the most (without steps: whose share of
// the recorded time does), when that excess is at least kReasonShare of what
// is being explained (without steps: per collective).
//
// Job problems are said in one line each, the rest analysed: ranks of the
// stated world size with no files, a process whose job id is not the job's
// (the id most processes state) — left out —, two processes claiming one rank.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ringprof/tools/clock_alignment.h"
#include "ringprof/tools/rank_scan.h"
#include "ringprof/tools/trace_reader.h"

namespace ringprof {

struct RankRow {
  size_t process = 0;
  int64_t rank = -1;                 // -1: the files state none
  std::string host;
  uint32_t pid = 0;
  uint64_t steps = 0;                // whole steps
  uint64_t step_time_median_ns = 0;
  // Over the whole steps (everything the rank recorded when it has none).
  uint64_t span_ns = 0;
  uint64_t compute_ns = 0, comm_ns = 0, memcpy_ns = 0, overlap_ns = 0, idle_ns = 0;
  uint64_t cpu_zone_ns = 0;
  uint64_t in_zones_ns = 0, idle_in_zones_ns = 0;  // StepStats says what they are
  bool gpu = false;                  // the rank recorded kernels, copies or sets
  uint64_t collectives = 0;          // calls kept for matching
  uint64_t matched = 0;              // of them, in a collective with other ranks
  std::optional<int64_t> late_ns_median;
  double overlap_pct() const { return comm_ns ? 100.0 * static_cast<double>(overlap_ns) / comm_ns : 0.0; }
};

struct StepRankTime {
  size_t row = 0;  // into RanksReport::ranks
  StepStats stats;
};

struct StepRow {
  uint64_t step = 0;
  uint32_t repeat = 0;               // 0, or how many times the ranks numbered a step so before (per epoch)
  std::vector<StepRankTime> ranks;   // the ranks that have this step whole, by row
  size_t slowest = 0, fastest = 0;   // rows
  uint64_t slowest_ns = 0, fastest_ns = 0;
  uint64_t spread_ns() const { return slowest_ns - fastest_ns; }
};

struct Straggler {
  size_t row = 0;
  int64_t rank = -1;
  std::string kind;                  // "late at collectives" or "slow steps"
  int64_t late_ns_median = 0;        // late: median lateness; slow: median step time over the ranks' median
  uint64_t collectives = 0;          // late: the collectives measured
  std::string reason;                // "zone extra_work: +2.00 ms per step over the other ranks' median", or why not
};

// A process group's operations followed across its ranks. Process groups
// run their collectives in the order they are issued, the same on every
// rank, so the n-th call of a group on one rank meets the n-th on each
// other: the numbering (from 1, at the first call the reference rank's
// files hold) is lined up across ranks by the calls' ends (a vote over each
// rank's first 64 completed calls: the offset that puts most of them next to
// a reference call ending at the same time).
struct GroupRankProgress {
  size_t row = 0;
  int64_t rank = -1;
  uint64_t calls = 0;  // the group's calls the files hold
  uint64_t first_seq = 0, last_seq = 0;
  std::string last_op, last_name, last_shapes;
  bool last_completed = false;
  uint64_t last_duration_ns = 0;  // not completed: until its files end
};

// A collective some ranks entered and others never reached: where a job hangs.
struct GroupStop {
  uint64_t seq = 0;
  std::string op, name, shapes;
  std::vector<size_t> entered, missing;  // rows
  bool completed_somewhere = false;      // some rank's call ended (a timeout's error ends it too)
};

// Ranks that called different operations (or the same on different
// shapes) at one place in the sequence.
struct GroupMismatch {
  uint64_t seq = 0;
  std::vector<std::pair<size_t, std::string>> calls;  // row, "op shapes"
};

struct GroupSequence {
  std::string group;
  // Calls numbered by PyTorch's sequence number in the group (every call
  // carried one): #1 is PyTorch's seq_base. 0: numbered in the order each
  // rank entered them, lined up by their ends.
  uint64_t seq_base = 0;
  std::vector<GroupRankProgress> ranks;  // by row
  std::optional<GroupStop> stop;
  std::vector<GroupMismatch> mismatches;  // the first kMaxMismatches
  static constexpr size_t kMaxMismatches = 8;
};

struct RanksReport {
  std::string job_id;                // the job's (most processes'), "" when none is stated
  int64_t world_size = -1;
  size_t hosts = 0;
  std::vector<RankRow> ranks;        // by rank, then pid
  std::vector<StepRow> steps;        // by step number
  std::vector<Straggler> stragglers; // by lateness, descending
  ClockAlignment clock;
  std::vector<GroupSequence> groups;  // by group name; groups with calls on two ranks or more
  std::vector<std::string> problems; // job problems, "ringprof: …" lines
  uint64_t late_gpu_records = 0, late_step_marks = 0, late_cover_spans = 0;  // reorder limits hit (rank_scan.h)

  static constexpr int64_t kLateFloorNs = 50'000;
  static constexpr double kLateShare = 0.05;
  static constexpr double kSlowShare = 0.05;
  static constexpr double kReasonShare = 0.25;
};

struct RanksOptions {
  unsigned threads = 0;  // 0: one per hardware thread
  // The ranks the reader was narrowed to (ringprof/tools/rank_select.h);
  // empty: all. Only these are looked for when counting ranks with no files.
  std::vector<int32_t> selected_ranks;
};

// The groups' sequences (above) from the ranks' scans, `rows` lined up with them.
std::vector<GroupSequence> follow_groups(const std::vector<RankScan*>& scans, const std::vector<RankRow>& rows);

// Reads the job and applies the collectives' clock alignment to `reader`.
RanksReport analyse_ranks(TraceReader& reader, const RanksOptions& options);

// "rank 2", "ranks 0, 1": rows of the report by their rank ("pid N" for a
// process that states none), as the report and the findings name them.
std::string ranks_text(const RanksReport& report, const std::vector<size_t>& rows);

enum class RanksFormat { Text, Csv, Json };
// Text: the rank table, the steps' spread, the stragglers and the clock; with
// per_step, a table of every step (its slowest and fastest rank). CSV: one
// row per rank, or with per_step one per rank and step. JSON: everything,
// per_step adding each step's figures per rank.
std::string format_ranks(const RanksReport& report, RanksFormat format, bool per_step);

}  // namespace ringprof

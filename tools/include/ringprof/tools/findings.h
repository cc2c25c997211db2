// ringprof/tools/findings.h — known performance problems found in a
// recording, each with its evidence, a severity and what to do about it: the
// report's "Findings" (docs/report.md#findings lists the rules and their
// thresholds).
//
// A rule looks at figures the recording holds (per-step GPU idle time, kernel
// launch versus run time, synchronising calls inside the step loop, copies
// from pageable memory, communication not hidden under computation, slow
// steps, drops, hot functions outside every zone) and reports a Finding when
// they pass its threshold. Steps are the spans between consecutive step()
// marks, as ringprof/tools/rank_scan.h defines them; rules that measure per
// step need at least one whole step (some need three).
//
// Reading: two streaming passes over the files. The first is the ranks scan
// (step boundaries, per-step GPU figures, each zone's self time); the second
// gathers what the rules need with those boundaries known: counters and small
// tables, never every event, so memory stays bounded whatever the trace's size
// (a few rows per step and per kernel or zone name).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ringprof/tools/rank_report.h"
#include "ringprof/tools/time_range.h"
#include "ringprof/tools/trace_reader.h"

namespace ringprof {

enum class FindingSeverity : uint8_t { Info, Warning, Critical };

// "info", "warning", "critical".
const char* finding_severity_name(FindingSeverity severity) noexcept;

struct Finding {
  std::string rule;  // stable id: "gpu_idle", "tiny_kernels", "sync_in_step", "pageable_copies",
                     // "comm_exposed", "collective_stop", "collective_mismatch", "straggler",
                     // "slow_steps", "drops", "uncovered_hot_function"
  FindingSeverity severity = FindingSeverity::Info;
  std::string title;     // one line
  std::string evidence;  // times, counts, the zones or kernels involved, with numbers
  std::string advice;    // what to do
  // Name -> value, machine-checkable: integers (nanoseconds, bytes, counts)
  // as decimal text, percentages with one decimal ("45.0"), names as text.
  std::vector<std::pair<std::string, std::string>> figures;
  // The figure of that name, "" when the finding has none.
  std::string figure(const std::string& name) const;
};

struct FindingsOptions {
  RangeSpec range;     // the part of the recording the rules look at
  std::string thread;  // "" every thread; else a thread name or a kernel tid (as the other commands)
};

// Every finding, most severe first (then in the order of the rules above,
// then by process). `ranks` (may be null): the job's ranks report, for
// comm_exposed across ranks, used only for a job of more than one rank with
// no range and no thread filter (it covers each rank's whole recording);
// otherwise each process's own steps that touch the range are used.
// When given it must come from analyse_ranks() on this reader (which aligns
// the reader's clocks, as the findings then read them).
std::vector<Finding> find_problems(TraceReader& reader, const FindingsOptions& options, const RanksReport* ranks);

// `ringprof findings` and the report page. Text: per finding a line
// "SEVERITY rule: title", then the evidence and "what to do: advice",
// indented; "No known problem found." when there are none. JSON: an array of
// {"rule", "severity", "title", "evidence", "advice", "figures": {name: value}}.
enum class FindingsFormat { Text, Json };
std::string format_findings(const std::vector<Finding>& findings, FindingsFormat format);

}  // namespace ringprof

// straggler: a rank the others wait for, as the ranks report finds it (late
// at the job's collectives, or steps slower than the other ranks'), with
// the report's reason (the zone or kernel whose time the others lack).
#include <algorithm>
#include <cstdlib>

#include "findings/rules.h"
#include "ringprof/tools/rank_report.h"

namespace ringprof::internal {

std::vector<Finding> rule_straggler(const RanksReport* ranks) {
  std::vector<Finding> out;
  if (!ranks) return out;
  for (const Straggler& s : ranks->stragglers) {
    if (s.row >= ranks->ranks.size()) continue;
    const RankRow& row = ranks->ranks[s.row];
    // The job's median step time: what each collective's wait is set against.
    std::vector<uint64_t> steps;
    for (const RankRow& r : ranks->ranks)
      if (r.steps > 0) steps.push_back(r.step_time_median_ns);
    std::sort(steps.begin(), steps.end());
    const uint64_t step = steps.empty() ? 0 : steps[steps.size() / 2];
    const uint64_t late = static_cast<uint64_t>(std::llabs(s.late_ns_median));
    const double part = share(late, step);
    Finding f;
    f.rule = "straggler";
    f.severity = part >= kStragglerCritical ? FindingSeverity::Critical : FindingSeverity::Warning;
    const std::string who =
        "rank " + std::to_string(s.rank) + " (" + row.host + ", pid " + std::to_string(row.pid) + ")";
    if (s.kind == "late at collectives") {
      f.title = who + " holds the job back: the other ranks wait " + dur(late) + " for it at each collective";
      f.evidence = "median lateness over " + std::to_string(s.collectives) + " collectives";
    } else {
      f.title = who + " holds the job back: its steps take " + dur(late) + " longer than the ranks' median";
      f.evidence = "median step time over the ranks' median";
    }
    if (step) f.evidence += " (" + percent_text(part) + "% of the median step, " + dur(step) + ")";
    f.evidence += "; " + s.reason;
    f.advice =
        "every rank waits for the slowest at each collective: balance or move the work named above (data loading, "
        "logging or evaluation on one rank, uneven shards), or look at that rank's host (ringprof ranks has the "
        "details per step)";
    f.figures = {{"rank", std::to_string(s.rank)},
                 {"pid", std::to_string(row.pid)},
                 {"host", row.host},
                 {"kind", s.kind},
                 {"late_ns_median", std::to_string(s.late_ns_median)},
                 {"collectives", std::to_string(s.collectives)},
                 {"step_time_median_ns", std::to_string(step)},
                 {"reason", s.reason}};
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace ringprof::internal

// The rules on a job's ranks, from the ranks report:
//   straggler: a rank the others wait for (late at the job's collectives, or
//     steps slower than the other ranks'), with the report's reason (the
//     zone or kernel whose time the others lack);
//   collective_stop: a collective some ranks entered and others never
//     reached, where a job hangs;
//   collective_mismatch: ranks that called different operations (or shapes)
//     at one place of a group's sequence.
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

namespace {

std::string rank_numbers(const RanksReport& r, const std::vector<size_t>& rows) {
  std::string out;
  for (size_t row : rows) out += (out.empty() ? "" : ",") + std::to_string(r.ranks[row].rank);
  return out;
}

}  // namespace

std::vector<Finding> rule_collective_stop(const RanksReport* ranks) {
  std::vector<Finding> out;
  if (!ranks) return out;
  for (const GroupSequence& g : ranks->groups) {
    if (!g.stop) continue;
    const GroupStop& s = *g.stop;
    // A rank still in a call, or one that waited for kStopWaitNs: stuck.
    bool stuck = false;
    std::string evidence;
    for (const GroupRankProgress& p : g.ranks) {
      stuck = stuck || !p.last_completed || p.last_duration_ns >= kStopWaitNs;
      evidence += (evidence.empty() ? "" : "; ") + ranks_text(*ranks, {p.row}) + " last entered #" +
                  std::to_string(p.last_seq) + " " + p.last_name + ", " +
                  (p.last_completed ? "ended after " + dur(p.last_duration_ns)
                                    : "still in it after " + dur(p.last_duration_ns) + " when its files end");
    }
    Finding f;
    f.rule = "collective_stop";
    f.severity = stuck ? FindingSeverity::Critical : FindingSeverity::Warning;
    f.title = "group " + g.group + ": collective #" + std::to_string(s.seq) + " (" + s.name +
              (s.shapes.empty() ? "" : " " + s.shapes) + ") was entered by " + ranks_text(*ranks, s.entered) +
              " and never reached by " + ranks_text(*ranks, s.missing);
    f.evidence = evidence;
    f.advice = "ranks wait at a collective until every rank of its group calls it: look at what " +
               ranks_text(*ranks, s.missing) +
               " did after its last collective (its zones and samples from then on), or at a condition that makes "
               "some ranks skip or add a collective. A rank whose recording stopped early looks the same: then "
               "this is not a hang";
    f.figures = {{"group", g.group},
                 {"seq", std::to_string(s.seq)},
                 {"op", s.op},
                 {"name", s.name},
                 {"entered", rank_numbers(*ranks, s.entered)},
                 {"missing", rank_numbers(*ranks, s.missing)}};
    // PyTorch's own number for it, as its flight recorder and logs give it.
    if (g.seq_base) f.figures.emplace_back("pytorch_seq", std::to_string(g.seq_base + s.seq - 1));
    out.push_back(std::move(f));
  }
  return out;
}

std::vector<Finding> rule_collective_mismatch(const RanksReport* ranks) {
  std::vector<Finding> out;
  if (!ranks) return out;
  for (const GroupSequence& g : ranks->groups) {
    if (g.mismatches.empty()) continue;
    const GroupMismatch& m = g.mismatches.front();
    // The calls by what was called.
    std::vector<std::pair<std::string, std::vector<size_t>>> by_call;
    for (const std::pair<size_t, std::string>& c : m.calls) {
      auto it = std::find_if(by_call.begin(), by_call.end(), [&c](const auto& e) { return e.first == c.second; });
      if (it == by_call.end())
        by_call.emplace_back(c.second, std::vector<size_t>{c.first});
      else
        it->second.push_back(c.first);
    }
    std::string calls;
    for (const auto& [call, rows] : by_call)
      calls += (calls.empty() ? "" : "; ") + ranks_text(*ranks, rows) + " " + call;
    Finding f;
    f.rule = "collective_mismatch";
    f.severity = FindingSeverity::Critical;
    f.title = "group " + g.group + ": ranks called different collectives at #" + std::to_string(m.seq) + ": " + calls;
    f.evidence = std::to_string(g.mismatches.size()) +
                 (g.mismatches.size() >= GroupSequence::kMaxMismatches ? " or more" : "") +
                 " places in the sequence differ; the first is #" + std::to_string(m.seq);
    f.advice =
        "every rank of a group must issue the same collectives in the same order, on tensors of the same "
        "shapes: a branch taken on some ranks only (a rank-dependent condition, a data-dependent shape) "
        "makes them pair with the wrong call, hang or compute garbage";
    f.figures = {{"group", g.group}, {"seq", std::to_string(m.seq)}, {"calls", calls}};
    out.push_back(std::move(f));
  }
  return out;
}

}  // namespace ringprof::internal

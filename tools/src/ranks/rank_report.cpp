#include "ringprof/tools/rank_report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iterator>
#include <map>
#include <unordered_map>

#include "common/robust_stats.h"
#include "common/number_text.h"
#include "common/text_table.h"
#include "ringprof/tools/collectives.h"

namespace ringprof {

namespace {

using internal::duration_text;
using internal::median;
using internal::median_abs_deviation;

// The job's problems; processes of another job are marked to be left out.
void check_job(const TraceReader& reader, const std::vector<int32_t>& selected, RanksReport& out,
               std::vector<bool>& left_out) {
  const std::vector<ProcessState>& procs = reader.processes();
  std::map<std::string, size_t> job_votes;
  for (const ProcessState& p : procs)
    if (p.rank && !p.rank->job_id.empty()) ++job_votes[p.rank->job_id];
  size_t most = 0;
  for (const auto& [id, n] : job_votes) {
    if (n <= most) continue;  // a tie keeps the first id in order
    most = n;
    out.job_id = id;
  }
  auto first_file = [&](const ProcessState& p) {
    return p.files.empty() ? "pid " + std::to_string(p.pid) : reader.files()[p.files.front()].path;
  };
  std::map<int64_t, std::vector<size_t>> by_rank;
  for (const ProcessState& p : procs) {
    if (!out.job_id.empty() && p.rank && !p.rank->job_id.empty() && p.rank->job_id != out.job_id) {
      left_out[p.index] = true;
      out.problems.push_back("ringprof: " + first_file(p) + ": from job " + p.rank->job_id + ", not job " +
                             out.job_id + " (the job of most processes): left out");
      continue;
    }
    if (p.rank && p.rank->world_size > 0) out.world_size = std::max<int64_t>(out.world_size, p.rank->world_size);
    if (p.rank && p.rank->rank >= 0) by_rank[p.rank->rank].push_back(p.index);
  }
  for (const auto& [rank, list] : by_rank) {
    if (list.size() < 2) continue;
    std::string who;
    for (size_t i : list)
      who += (who.empty() ? "" : ", ") + ("pid " + std::to_string(procs[i].pid) + " on " + procs[i].hostname);
    out.problems.push_back("ringprof: rank " + std::to_string(rank) + " is claimed by " + std::to_string(list.size()) +
                           " processes (" + who + "): each is analysed on its own row");
  }
  if (out.world_size > 0 && !by_rank.empty()) {
    std::vector<int32_t> wanted = selected;
    std::sort(wanted.begin(), wanted.end());
    std::string missing;
    size_t count = 0;
    for (int64_t r = 0; r < out.world_size; ++r) {
      if (by_rank.count(r)) continue;
      if (!wanted.empty() && !std::binary_search(wanted.begin(), wanted.end(), static_cast<int32_t>(r)))
        continue;  // not asked for
      if (++count <= 16) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
    }
    if (count)
      out.problems.push_back("ringprof: job" + (out.job_id.empty() ? std::string() : " " + out.job_id) + ": " +
                             std::to_string(count) + " of " + std::to_string(out.world_size) +
                             " ranks have no files: " + missing + (count > 16 ? ", …" : ""));
  }
}

RankRow make_row(const ProcessState& p, const RankScan& s) {
  RankRow r;
  r.process = p.index;
  r.rank = p.rank ? p.rank->rank : -1;
  r.host = p.hostname;
  r.pid = p.pid;
  r.steps = s.steps.size();
  r.gpu = s.gpu_records > 0;
  r.collectives = s.calls.size();
  StepStats total;
  if (s.steps.empty()) {
    total = s.whole;
    r.span_ns = total.duration_ns();
  } else {
    std::vector<uint64_t> times;
    for (const StepStats& st : s.steps) {
      times.push_back(st.duration_ns());
      r.span_ns += st.duration_ns();
      total.compute_ns += st.compute_ns;
      total.comm_ns += st.comm_ns;
      total.memcpy_ns += st.memcpy_ns;
      total.overlap_ns += st.overlap_ns;
      total.busy_ns += st.busy_ns;
      total.cpu_zone_ns += st.cpu_zone_ns;
      total.in_zones_ns += st.in_zones_ns;
      total.idle_in_zones_ns += st.idle_in_zones_ns;
    }
    r.step_time_median_ns = median(times);
  }
  r.compute_ns = total.compute_ns;
  r.comm_ns = total.comm_ns;
  r.memcpy_ns = total.memcpy_ns;
  r.overlap_ns = total.overlap_ns;
  r.idle_ns = r.gpu && r.span_ns > total.busy_ns ? r.span_ns - total.busy_ns : 0;
  r.cpu_zone_ns = total.cpu_zone_ns;
  r.in_zones_ns = total.in_zones_ns;
  r.idle_in_zones_ns = total.idle_in_zones_ns;
  return r;
}

// Ends of one collective never need to be closer than this to be matched.
constexpr uint64_t kMinToleranceNs = 1'000;

// One rank's lateness in one collective: when it entered minus the (upper)
// median entry of the other ranks there.
void add_lateness(const std::vector<std::pair<uint64_t, size_t>>& instance, std::vector<std::vector<int64_t>>& late,
                  std::vector<RankRow>& rows) {
  if (instance.size() < 2) return;
  for (const auto& [begin, row] : instance) {
    std::vector<int64_t> others;
    for (const auto& [b, r] : instance)
      if (r != row) others.push_back(static_cast<int64_t>(b));
    late[row].push_back(static_cast<int64_t>(begin) - median(others));
    ++rows[row].matched;
  }
}

// Lateness per row over the collectives the rows share. Calls PyTorch
// numbered are one collective by (process group, sequence number), however
// far apart the ranks finished them; the others by when they ended.
std::vector<std::vector<int64_t>> lateness(const std::vector<RankScan*>& scans, std::vector<RankRow>& rows,
                                           std::vector<uint64_t>& spacing) {
  struct Entry {
    uint64_t end, begin;
    size_t row;
    bool numbered;
  };
  std::unordered_map<std::string, std::vector<Entry>> by_key;
  std::map<std::pair<std::string, uint64_t>, std::vector<std::pair<uint64_t, size_t>>> by_seq;
  for (size_t r = 0; r < scans.size(); ++r)
    for (const CollectiveCall& c : scans[r]->calls) {
      by_key[scans[r]->keys[c.key]].push_back({c.end_ns, c.begin_ns, r, c.seq != 0});
      if (c.seq == 0) continue;
      // Group, number and operation: ranks whose numbering parted ways
      // (a skipped call) meet no wrong partner of another operation.
      auto& instance = by_seq[{scans[r]->keys[c.group] + "\x1f" + scans[r]->keys[c.key], c.seq}];
      if (std::none_of(instance.begin(), instance.end(), [r](const auto& e) { return e.second == r; }))
        instance.push_back({c.begin_ns, r});
    }
  std::vector<std::vector<int64_t>> late(scans.size());
  for (const auto& [group_seq, instance] : by_seq) add_lateness(instance, late, rows);
  std::vector<uint8_t> in_instance(scans.size(), 0);
  for (auto& [key, all] : by_key) {
    // The key's usual spacing, from the row with the most calls of it.
    std::vector<std::vector<uint64_t>> ends(scans.size());
    for (const Entry& e : all) ends[e.row].push_back(e.end);
    size_t best = 0;
    for (size_t r = 1; r < ends.size(); ++r)
      if (ends[r].size() > ends[best].size()) best = r;
    uint64_t gap = 20'000'000;  // a single call: any ends within 10 ms are one collective
    if (ends[best].size() >= 2) {
      std::sort(ends[best].begin(), ends[best].end());
      std::vector<uint64_t> gaps;
      for (size_t i = 1; i < ends[best].size(); ++i) gaps.push_back(ends[best][i] - ends[best][i - 1]);
      gap = std::max<uint64_t>(median(gaps), 2 * kMinToleranceNs);
      spacing.push_back(gap);
    }
    const uint64_t tolerance = gap / 2;
    std::vector<Entry> entries;
    std::copy_if(all.begin(), all.end(), std::back_inserter(entries), [](const Entry& e) { return !e.numbered; });
    std::sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) { return a.end < b.end; });
    for (size_t i = 0; i < entries.size();) {
      size_t j = i;
      while (j < entries.size() && entries[j].end - entries[i].end <= tolerance && !in_instance[entries[j].row]) {
        in_instance[entries[j].row] = 1;
        ++j;
      }
      std::vector<std::pair<uint64_t, size_t>> instance;
      for (size_t a = i; a < j; ++a) {
        in_instance[entries[a].row] = 0;
        instance.push_back({entries[a].begin, entries[a].row});
      }
      add_lateness(instance, late, rows);
      i = j;
    }
  }
  return late;
}

// The zone or kernel whose time per unit (step, or collective) on `row`
// exceeds the other rows' median the most.
std::string find_reason(const std::vector<RankScan*>& scans, const std::vector<RankRow>& rows, size_t row,
                        int64_t explain_ns) {
  // Per step when the rank marks steps (its totals cover its whole steps),
  // compared with the ranks that mark steps too; else per second of what
  // each recorded, compared with the ranks that mark none.
  const bool by_step = rows[row].steps > 0;
  auto units = [&](size_t r) {
    return by_step ? static_cast<double>(rows[r].steps) : static_cast<double>(rows[r].span_ns) / 1e9;
  };
  auto comparable = [&](size_t r) { return (rows[r].steps > 0) == by_step && units(r) > 0; };
  if (!comparable(row)) return "no zone or kernel accounts for it (nothing to compare)";
  std::string best_name;
  double best = 0;
  auto consider = [&](const char* what, auto member) {
    for (const auto& [name, ns] : (*scans[row]).*member) {
      const double mine = static_cast<double>(ns) / units(row);
      std::vector<double> others;
      for (size_t r = 0; r < scans.size(); ++r) {
        if (r == row || !comparable(r)) continue;
        const auto& m = (*scans[r]).*member;
        auto it = m.find(name);
        others.push_back(it == m.end() ? 0.0 : static_cast<double>(it->second) / units(r));
      }
      if (others.empty()) continue;
      const double excess = mine - median(others);
      if (excess > best) {
        best = excess;
        best_name = std::string(what) + " " + name;
      }
    }
  };
  consider("zone", &RankScan::zone_self_ns);
  consider("kernel", &RankScan::kernel_ns);
  // Without steps the excess is per second: the share of time it explains.
  const double explained = by_step ? best : best / 1e9 * static_cast<double>(rows[row].span_ns) /
                                                std::max<double>(1.0, static_cast<double>(rows[row].matched));
  if (best_name.empty() || explained < RanksReport::kReasonShare * static_cast<double>(explain_ns))
    return std::string("no zone or kernel accounts for it (time outside zones, or waiting)");
  if (by_step)
    return best_name + ": +" + duration_text(static_cast<int64_t>(best)) + " per step over the other ranks' median";
  char share[32];
  std::snprintf(share, sizeof share, "%.1f%%", best / 1e7);
  return best_name + ": +" + share + " of the time over the other ranks' median";
}

}  // namespace

RanksReport analyse_ranks(TraceReader& reader, const RanksOptions& options) {
  RanksReport out;
  const std::vector<ProcessState>& procs = reader.processes();
  std::vector<bool> left_out(procs.size(), false);
  check_job(reader, options.selected_ranks, out, left_out);

  std::vector<RankScan> all = scan_ranks(reader, false, options.threads);

  out.clock = estimate_clock_alignment(reader, all, left_out);
  reader.adjust_clocks(out.clock.delta, out.clock.note);
  for (RankScan& s : all) shift_scan(s, out.clock.delta[s.process]);
  out.hosts = out.clock.hosts.size();

  std::vector<RankScan*> scans;
  for (RankScan& s : all) {
    out.late_gpu_records += s.late_gpu_records;
    out.late_step_marks += s.late_step_marks;
    out.late_cover_spans += s.late_cover_spans;
    if (left_out[s.process]) continue;
    out.ranks.push_back(make_row(procs[s.process], s));
    scans.push_back(&s);
  }

  // Steps across ranks.
  // Keyed by (occurrence, number): a program that numbers its steps again
  // (per epoch) has each number once per occurrence.
  std::map<std::pair<uint32_t, uint64_t>, StepRow> steps;
  for (size_t r = 0; r < scans.size(); ++r) {
    std::unordered_map<uint64_t, uint32_t> seen;
    for (const StepStats& st : scans[r]->steps) {
      const uint32_t occurrence = seen[st.number]++;
      StepRow& row = steps[{occurrence, st.number}];
      row.repeat = occurrence;
      row.ranks.push_back({r, st});
    }
    std::vector<StepStats>().swap(scans[r]->steps);  // held once: the rows have them now
  }
  for (auto& [key, row] : steps) {
    row.step = key.second;
    // Ties go to the first rank.
    row.slowest = row.fastest = row.ranks.front().row;
    row.slowest_ns = row.fastest_ns = row.ranks.front().stats.duration_ns();
    for (const StepRankTime& t : row.ranks) {
      const uint64_t d = t.stats.duration_ns();
      if (d > row.slowest_ns) {
        row.slowest_ns = d;
        row.slowest = t.row;
      }
      if (d < row.fastest_ns) {
        row.fastest_ns = d;
        row.fastest = t.row;
      }
    }
    out.steps.push_back(std::move(row));
  }

  out.groups = follow_groups(scans, out.ranks);

  // Stragglers: late at collectives.
  std::vector<uint64_t> spacing;
  std::vector<std::vector<int64_t>> late = lateness(scans, out.ranks, spacing);
  std::vector<uint64_t> step_medians;
  for (const RankRow& r : out.ranks)
    if (r.steps) step_medians.push_back(r.step_time_median_ns);
  const uint64_t typical = !step_medians.empty() ? median(step_medians) : median(spacing);
  const auto late_threshold =
      std::max<int64_t>(RanksReport::kLateFloorNs, static_cast<int64_t>(RanksReport::kLateShare * typical));
  for (size_t r = 0; r < out.ranks.size(); ++r) {
    if (late[r].empty()) continue;
    const int64_t m = median(late[r]);
    out.ranks[r].late_ns_median = m;
    if (m < late_threshold) continue;
    Straggler s;
    s.row = r;
    s.rank = out.ranks[r].rank;
    s.kind = "late at collectives";
    s.late_ns_median = m;
    s.collectives = late[r].size();
    s.reason = find_reason(scans, out.ranks, r, m);
    out.stragglers.push_back(std::move(s));
  }
  // Stragglers: slow steps, among ranks that met the others in no
  // collective. Ranks in lockstep take the same time over the run, a slow one
  // making the others wait: it is late at collectives. Their median step
  // times differ only by where each rank's step marks fall under noise.
  if (step_medians.size() >= 3) {
    const uint64_t m = median(step_medians);
    const double mad = static_cast<double>(median_abs_deviation(step_medians, m));
    const double limit = std::max(3 * 1.4826 * mad, RanksReport::kSlowShare * m);
    for (size_t r = 0; r < out.ranks.size(); ++r) {
      const RankRow& row = out.ranks[r];
      // Lockstep: a collective in at least every other step (not one at
      // start-up) binds the rank's steps to the others'.
      const bool lockstep = row.matched && 2 * row.matched >= row.steps;
      if (!row.steps || lockstep || static_cast<double>(row.step_time_median_ns) - static_cast<double>(m) <= limit)
        continue;
      Straggler s;
      s.row = r;
      s.rank = row.rank;
      s.kind = "slow steps";
      s.late_ns_median = static_cast<int64_t>(row.step_time_median_ns - m);
      s.reason = find_reason(scans, out.ranks, r, s.late_ns_median);
      out.stragglers.push_back(std::move(s));
    }
  }
  std::stable_sort(out.stragglers.begin(), out.stragglers.end(),
                   [](const Straggler& a, const Straggler& b) { return a.late_ns_median > b.late_ns_median; });
  return out;
}

}  // namespace ringprof

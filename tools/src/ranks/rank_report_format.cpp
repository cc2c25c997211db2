// How `ringprof ranks` prints a RanksReport: text, CSV or JSON.
#include <cmath>
#include <cstdio>

#include "common/json_text.h"
#include "common/number_text.h"
#include "common/text_table.h"
#include "ringprof/tools/rank_report.h"

namespace ringprof {

namespace {

using internal::duration_text;

using internal::TextRow;


std::string rank_name(int64_t rank, uint32_t pid) {
  return rank >= 0 ? std::to_string(rank) : "pid " + std::to_string(pid);
}

// The process groups' sequences: one line per group when the ranks agree;
// where they stopped apart (a hang) and where they called different
// operations, when they did not.
std::string groups_text(const RanksReport& r) {
  if (r.groups.empty()) return "";
  std::string out =
      "\nCollectives by process group (numbered by PyTorch's sequence numbers where every call has one, otherwise in "
      "the order each rank entered them):\n";
  for (const GroupSequence& g : r.groups) {
    const std::string label =
        "  group " + g.group + (g.seq_base ? " (#1 = PyTorch's seq " + std::to_string(g.seq_base) + ")" : "") + ": ";
    if (!g.stop && g.mismatches.empty()) {
      out += label + "every rank entered #" + std::to_string(g.ranks.front().first_seq) + " to #" +
             std::to_string(g.ranks.front().last_seq) + ", the same operations\n";
      continue;
    }
    if (g.stop) {
      const GroupStop& s = *g.stop;
      out += label + "collective #" + std::to_string(s.seq) + " (" + s.name + (s.shapes.empty() ? "" : " " + s.shapes) +
             ") was entered by " + ranks_text(r, s.entered) + " and never reached by " + ranks_text(r, s.missing) +
             "\n";
      for (const GroupRankProgress& p : g.ranks) {
        out += "    rank " + rank_name(p.rank, r.ranks[p.row].pid) + ": last entered #" + std::to_string(p.last_seq) +
               " " + p.last_name + (p.last_shapes.empty() ? "" : " " + p.last_shapes) + ", ";
        out += p.last_completed ? "ended after " + duration_text(static_cast<int64_t>(p.last_duration_ns))
                                : "not completed (open " + duration_text(static_cast<int64_t>(p.last_duration_ns)) +
                                      " when its files end)";
        out += "\n";
      }
    }
    for (const GroupMismatch& m : g.mismatches) {
      out += label + "different calls at #" + std::to_string(m.seq) + ":";
      for (size_t i = 0; i < m.calls.size(); ++i)
        out += std::string(i ? ";" : "") + " rank " +
               rank_name(r.ranks[m.calls[i].first].rank, r.ranks[m.calls[i].first].pid) + " " + m.calls[i].second;
      out += "\n";
    }
  }
  return out;
}

// A step's number, and which time the ranks used it when they number again.
std::string step_name(const StepRow& s) {
  return std::to_string(s.step) + (s.repeat ? " (again, " + std::to_string(s.repeat + 1) + ")" : "");
}

std::string clock_text(const ClockAlignment& c) {
  if (c.method == "one host") return "clock: one host, CLOCK_MONOTONIC shared\n";
  std::string out = "clock: " + c.method + " (reference host " +
                    (c.hosts.empty() ? std::string("-") : c.hosts.front().host) + ")\n";
  for (const HostClock& h : c.hosts) {
    if (h.reference) {
      out += "  " + h.host + ": reference\n";
    } else if (h.aligned) {
      out += "  " + h.host + ": wall clock " + duration_text(h.wall_offset_ns) + ", collectives " +
             duration_text(h.correction_ns) + " more (residual " + duration_text(static_cast<int64_t>(h.residual_ns)) +
             ", " + std::to_string(h.matched) + " calls)\n";
    } else {
      out += "  " + h.host + ": wall clock " + duration_text(h.wall_offset_ns) + " only (no collective in common)\n";
    }
  }
  return out;
}

std::string text(const RanksReport& r, bool per_step) {
  std::string out;
  out += "job " + (r.job_id.empty() ? std::string("(no id)") : r.job_id) + ": " + std::to_string(r.ranks.size()) +
         " processes on " + std::to_string(r.hosts) + (r.hosts == 1 ? " host" : " hosts");
  if (r.world_size > 0) out += ", world size " + std::to_string(r.world_size);
  out += "\n" + clock_text(r.clock) + "\n";
  const TextRow header = {"rank", "host", "pid", "steps", "step median", "GPU compute", "comm", "memory",
                          "comm hidden", "GPU idle", "CPU in zones", "late (median)"};
  std::vector<TextRow> rows;
  for (const RankRow& k : r.ranks) {
    auto gpu = [&](uint64_t v) { return k.gpu ? duration_text(static_cast<int64_t>(v)) : std::string("-"); };
    rows.push_back({rank_name(k.rank, k.pid), k.host, std::to_string(k.pid), std::to_string(k.steps),
                    k.steps ? duration_text(static_cast<int64_t>(k.step_time_median_ns)) : "-", gpu(k.compute_ns),
                    gpu(k.comm_ns), gpu(k.memcpy_ns), k.gpu && k.comm_ns ? internal::percent(k.overlap_pct()) : "-",
                    gpu(k.idle_ns), duration_text(static_cast<int64_t>(k.cpu_zone_ns)),
                    k.late_ns_median ? duration_text(*k.late_ns_median) : "-"});
  }
  out += "Per rank (times summed over its whole steps; over everything it recorded when it marks none):\n";
  out += internal::format_text_table(header, rows, {true, true});
  if (!r.steps.empty()) {
    std::vector<uint64_t> spreads;
    const StepRow* widest = &r.steps.front();
    for (const StepRow& s : r.steps) {
      spreads.push_back(s.spread_ns());
      if (s.spread_ns() > widest->spread_ns()) widest = &s;
    }
    std::sort(spreads.begin(), spreads.end());
    auto name = [&](size_t row) { return rank_name(r.ranks[row].rank, r.ranks[row].pid); };
    out += "\nSteps: " + std::to_string(r.steps.size()) + "; spread of step time across ranks: median " +
           duration_text(static_cast<int64_t>(spreads[spreads.size() / 2])) + ", largest " +
           duration_text(static_cast<int64_t>(widest->spread_ns())) + " at step " + step_name(*widest) +
           " (slowest rank " + name(widest->slowest) + ", fastest rank " + name(widest->fastest) + ")\n";
    if (per_step) {
      std::vector<TextRow> srows;
      for (const StepRow& s : r.steps)
        srows.push_back({step_name(s), std::to_string(s.ranks.size()), name(s.slowest),
                         duration_text(static_cast<int64_t>(s.slowest_ns)), name(s.fastest),
                         duration_text(static_cast<int64_t>(s.fastest_ns)),
                         duration_text(static_cast<int64_t>(s.spread_ns()))});
      out += internal::format_text_table({"step", "ranks", "slowest rank", "time", "fastest rank", "time", "spread"},
                                         srows);
    }
  }
  out += "\nStragglers:";
  if (r.stragglers.empty()) out += " none\n";
  else out += "\n";
  for (const Straggler& s : r.stragglers) {
    const RankRow& k = r.ranks[s.row];
    out += "  rank " + rank_name(k.rank, k.pid) + " (" + k.host + ", pid " + std::to_string(k.pid) + "): " + s.kind;
    if (s.kind == "late at collectives")
      out += " by " + duration_text(s.late_ns_median) + " (median over " + std::to_string(s.collectives) + ")";
    else
      out += ", " + duration_text(s.late_ns_median) + " over the ranks' median step time";
    out += "; " + s.reason + "\n";
  }
  out += groups_text(r);
  return out;
}

std::string csv(const RanksReport& r, bool per_step) {
  std::vector<TextRow> rows;
  if (per_step) {
    for (const StepRow& s : r.steps) {
      for (const StepRankTime& t : s.ranks) {
        const RankRow& k = r.ranks[t.row];
        rows.push_back({std::to_string(s.step), std::to_string(s.repeat), k.rank >= 0 ? std::to_string(k.rank) : "", k.host,
                        std::to_string(k.pid), std::to_string(t.stats.duration_ns()), std::to_string(t.stats.compute_ns),
                        std::to_string(t.stats.comm_ns), std::to_string(t.stats.memcpy_ns),
                        std::to_string(t.stats.overlap_ns), k.gpu ? std::to_string(t.stats.idle_ns()) : "",
                        std::to_string(t.stats.cpu_zone_ns), std::to_string(t.stats.in_zones_ns),
                        std::to_string(t.stats.idle_in_zones_ns)});
      }
    }
    return internal::format_csv_table({"step", "repeat", "rank", "host", "pid", "time_ns", "compute_ns", "comm_ns", "memcpy_ns",
                                       "overlap_ns", "idle_ns", "cpu_zone_ns", "in_zones_ns", "idle_in_zones_ns"},
                                      rows);
  }
  for (const RankRow& k : r.ranks) {
    char overlap[32] = "";
    if (k.gpu && k.comm_ns) std::snprintf(overlap, sizeof overlap, "%.2f", k.overlap_pct());
    rows.push_back({k.rank >= 0 ? std::to_string(k.rank) : "", k.host, std::to_string(k.pid), std::to_string(k.steps),
                    std::to_string(k.step_time_median_ns), std::to_string(k.span_ns), std::to_string(k.compute_ns),
                    std::to_string(k.comm_ns), std::to_string(k.memcpy_ns), std::to_string(k.overlap_ns), overlap,
                    k.gpu ? std::to_string(k.idle_ns) : "", std::to_string(k.cpu_zone_ns),
                    std::to_string(k.in_zones_ns), std::to_string(k.idle_in_zones_ns), std::to_string(k.collectives),
                    k.late_ns_median ? std::to_string(*k.late_ns_median) : ""});
  }
  return internal::format_csv_table({"rank", "host", "pid", "steps", "step_time_median_ns", "span_ns", "compute_ns",
                                     "comm_ns", "memcpy_ns", "overlap_ns", "overlap_pct", "idle_ns", "cpu_zone_ns",
                                     "in_zones_ns", "idle_in_zones_ns", "collectives", "late_ns_median"},
                                    rows);
}

std::string json(const RanksReport& r, bool per_step) {
  internal::JsonWriter j;
  j.open('{');
  j.key("job_id");
  r.job_id.empty() ? j.null() : j.str(r.job_id);
  j.key("world_size");
  r.world_size > 0 ? j.num(r.world_size) : j.null();
  j.field("hosts", uint64_t{r.hosts});
  auto rank_value = [&](int64_t rank) { rank >= 0 ? j.num(rank) : j.null(); };
  j.key("ranks");
  j.open('[');
  for (const RankRow& k : r.ranks) {
    j.open('{');
    j.key("rank");
    rank_value(k.rank);
    j.field("host", std::string(k.host));
    j.field("pid", uint64_t{k.pid});
    j.field("steps", uint64_t{k.steps});
    j.key("step_time_median_ns");
    k.steps ? j.unum(k.step_time_median_ns) : j.null();
    j.field("span_ns", uint64_t{k.span_ns});
    j.field("gpu", bool{k.gpu});
    j.field_if("compute_ns", k.gpu, uint64_t{k.compute_ns});
    j.field_if("comm_ns", k.gpu, uint64_t{k.comm_ns});
    j.field_if("memcpy_ns", k.gpu, uint64_t{k.memcpy_ns});
    j.field_if("overlap_ns", k.gpu, uint64_t{k.overlap_ns});
    j.key("overlap_pct");
    k.gpu && k.comm_ns ? j.dbl(k.overlap_pct()) : j.null();
    j.field_if("idle_ns", k.gpu, uint64_t{k.idle_ns});
    j.field("cpu_zone_ns", uint64_t{k.cpu_zone_ns});
    j.field("in_zones_ns", uint64_t{k.in_zones_ns});
    j.field("idle_in_zones_ns", uint64_t{k.idle_in_zones_ns});
    j.field("collectives", uint64_t{k.collectives});
    j.key("late_ns_median");
    k.late_ns_median ? j.num(*k.late_ns_median) : j.null();
    j.close('}');
  }
  j.close(']');
  j.key("steps");
  j.open('[');
  for (const StepRow& s : r.steps) {
    j.open('{');
    j.field("step", uint64_t{s.step});
    j.field("repeat", uint64_t{s.repeat});
    j.field("ranks", uint64_t{s.ranks.size()});
    j.key("slowest_rank");
    rank_value(r.ranks[s.slowest].rank);
    j.field("slowest_ns", uint64_t{s.slowest_ns});
    j.key("fastest_rank");
    rank_value(r.ranks[s.fastest].rank);
    j.field("fastest_ns", uint64_t{s.fastest_ns});
    j.field("spread_ns", uint64_t{s.spread_ns()});
    if (per_step) {
      j.key("times");
      j.open('[');
      for (const StepRankTime& t : s.ranks) {
        const RankRow& k = r.ranks[t.row];
        j.open('{');
        j.key("rank");
        rank_value(k.rank);
        j.field("pid", uint64_t{k.pid});
        j.field("time_ns", uint64_t{t.stats.duration_ns()});
        j.field("compute_ns", uint64_t{t.stats.compute_ns});
        j.field("comm_ns", uint64_t{t.stats.comm_ns});
        j.field("memcpy_ns", uint64_t{t.stats.memcpy_ns});
        j.field("overlap_ns", uint64_t{t.stats.overlap_ns});
        j.key("idle_ns");
        k.gpu ? j.unum(t.stats.idle_ns()) : j.null();
        j.field("cpu_zone_ns", uint64_t{t.stats.cpu_zone_ns});
        j.field("in_zones_ns", uint64_t{t.stats.in_zones_ns});
        j.field("idle_in_zones_ns", uint64_t{t.stats.idle_in_zones_ns});
        j.close('}');
      }
      j.close(']');
    }
    j.close('}');
  }
  j.close(']');
  j.key("stragglers");
  j.open('[');
  for (const Straggler& s : r.stragglers) {
    j.open('{');
    j.key("rank");
    rank_value(s.rank);
    j.field("pid", uint64_t{r.ranks[s.row].pid});
    j.field("kind", std::string(s.kind));
    j.field("reason", std::string(s.reason));
    j.field("late_ns_median", int64_t{s.late_ns_median});
    j.field("collectives", uint64_t{s.collectives});
    j.close('}');
  }
  j.close(']');
  j.key("groups");
  j.open('[');
  for (const GroupSequence& g : r.groups) {
    j.open('{');
    j.field("group", std::string(g.group));
    j.field("seq_base", uint64_t{g.seq_base});
    j.key("ranks");
    j.open('[');
    for (const GroupRankProgress& p : g.ranks) {
      j.open('{');
      j.key("rank");
      rank_value(p.rank);
      j.field("pid", uint64_t{r.ranks[p.row].pid});
      j.field("calls", uint64_t{p.calls});
      j.field("first_seq", uint64_t{p.first_seq});
      j.field("last_seq", uint64_t{p.last_seq});
      j.field("last_op", std::string(p.last_op));
      j.field("last_name", std::string(p.last_name));
      j.field("last_shapes", std::string(p.last_shapes));
      j.field("last_completed", bool{p.last_completed});
      j.field("last_duration_ns", uint64_t{p.last_duration_ns});
      j.close('}');
    }
    j.close(']');
    j.key("stop");
    if (g.stop) {
      const GroupStop& s = *g.stop;
      j.open('{');
      j.field("seq", uint64_t{s.seq});
      j.field("op", std::string(s.op));
      j.field("name", std::string(s.name));
      j.field("shapes", std::string(s.shapes));
      for (const auto& [key, list] : {std::pair{"entered", &s.entered}, std::pair{"missing", &s.missing}}) {
        j.key(key);
        j.open('[');
        for (size_t row : *list) rank_value(r.ranks[row].rank);
        j.close(']');
      }
      j.field("completed_somewhere", bool{s.completed_somewhere});
      j.close('}');
    } else {
      j.null();
    }
    j.key("mismatches");
    j.open('[');
    for (const GroupMismatch& m : g.mismatches) {
      j.open('{');
      j.field("seq", uint64_t{m.seq});
      j.key("calls");
      j.open('[');
      for (const auto& [row, call] : m.calls) {
        j.open('{');
        j.key("rank");
        rank_value(r.ranks[row].rank);
        j.field("call", std::string(call));
        j.close('}');
      }
      j.close(']');
      j.close('}');
    }
    j.close(']');
    j.close('}');
  }
  j.close(']');
  j.key("clock");
  j.open('{');
  j.field("method", std::string(r.clock.method));
  j.field("note", std::string(r.clock.note));
  j.key("hosts");
  j.open('[');
  for (const HostClock& h : r.clock.hosts) {
    j.open('{');
    j.field("host", std::string(h.host));
    j.field("reference", bool{h.reference});
    j.field("aligned", bool{h.aligned});
    j.field("wall_offset_ns", int64_t{h.wall_offset_ns});
    j.field("correction_ns", int64_t{h.correction_ns});
    j.field("residual_ns", uint64_t{h.residual_ns});
    j.field("matched", uint64_t{h.matched});
    j.close('}');
  }
  j.close(']');
  j.close('}');
  j.key("problems");
  j.open('[');
  for (const std::string& p : r.problems) j.str(p);
  j.close(']');
  j.close('}');
  j.out += '\n';
  return j.out;
}

}  // namespace

std::string ranks_text(const RanksReport& r, const std::vector<size_t>& rows) {
  std::string out = rows.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < rows.size(); ++i)
    out += (i ? ", " : "") + rank_name(r.ranks[rows[i]].rank, r.ranks[rows[i]].pid);
  return out;
}

std::string format_ranks(const RanksReport& report, RanksFormat format, bool per_step) {
  switch (format) {
    case RanksFormat::Csv:
      return csv(report, per_step);
    case RanksFormat::Json:
      return json(report, per_step);
    case RanksFormat::Text:
      break;
  }
  return text(report, per_step);
}

}  // namespace ringprof

// `ringprof overhead`'s outputs: a text table and JSON.
#include <cstdio>

#include "common/json_text.h"
#include "common/number_text.h"
#include "common/text_table.h"
#include "ringprof/tools/overhead.h"

namespace ringprof {

namespace {

std::string change(const OverheadLevel& l, const Change& c) {
  return l.level == "off" || l.runs.empty() ? "-" : internal::signed_percent(c.change_pct);
}

std::string interval(const OverheadLevel& l, const Change& c) {
  if (l.level == "off" || !c.known) return "-";
  return "[" + internal::signed_percent(c.ci_low_pct) + ", " + internal::signed_percent(c.ci_high_pct) + "]";
}

void json_number(std::string& out, const char* key, double v) {
  out += std::string(",\"") + key + "\":";
  internal::append_json_double(out, v);
}

}  // namespace

std::string format_overhead(const OverheadResult& r, OverheadFormat format) {
  if (format == OverheadFormat::Json) {
    std::string out = "{\"preloaded\":" + std::string(r.preloaded ? "true" : "false") + ",\"levels\":[";
    for (size_t i = 0; i < r.levels.size(); ++i) {
      const OverheadLevel& l = r.levels[i];
      if (i) out += ",";
      out += "{\"level\":";
      internal::append_json_string(out, l.level);
      out += ",\"runs\":" + std::to_string(l.runs.size());
      json_number(out, "wall_s_median", l.wall_s_median);
      json_number(out, "slowdown_pct", l.level == "off" ? 0 : l.slowdown.change_pct);
      json_number(out, "ci_low_pct", l.level == "off" ? 0 : l.slowdown.ci_low_pct);
      json_number(out, "ci_high_pct", l.level == "off" ? 0 : l.slowdown.ci_high_pct);
      out += std::string(",\"interval_known\":") + (l.level == "off" || l.slowdown.known ? "true" : "false");
      json_number(out, "cpu_s_median", l.cpu_s_median);
      json_number(out, "cpu_change_pct", l.level == "off" ? 0 : l.cpu_change.change_pct);
      json_number(out, "max_rss_mib_median", l.max_rss_mib_median);
      json_number(out, "drainer_cpu_pct", l.drainer_cpu_pct);
      out += ",\"bytes_written\":" + std::to_string(l.bytes_written) + ",\"wall_s\":[";
      for (size_t k = 0; k < l.runs.size(); ++k) {
        if (k) out += ",";
        internal::append_json_double(out, static_cast<double>(l.runs[k].wall_ns) / 1e9);
      }
      out += "]}";
    }
    out += "]}\n";
    return out;
  }
  const internal::TextRow header = {"Level",          "Runs",       "Wall median (s)", "Slowdown",
                                    "95% interval",   "CPU median (s)", "CPU change",  "Peak RSS (MiB)",
                                    "ringprof CPU (% of a core)", "Written (bytes)"};
  std::vector<internal::TextRow> rows;
  for (const OverheadLevel& l : r.levels) {
    const bool off = l.level == "off";
    rows.push_back({l.level, std::to_string(l.runs.size()), internal::fixed(l.wall_s_median, 4), change(l, l.slowdown),
                    interval(l, l.slowdown), internal::fixed(l.cpu_s_median, 4), change(l, l.cpu_change),
                    internal::fixed(l.max_rss_mib_median, 1), off ? "-" : internal::fixed(l.drainer_cpu_pct, 2),
                    off ? "-" : std::to_string(l.bytes_written)});
  }
  return std::string("ringprof overhead: levels interleaved, medians over the runs, slowdown of the median wall time "
                     "against off with a 95% interval; ringprof ") +
         (r.preloaded ? "preloaded (LD_PRELOAD, RINGPROF_AUTOSTART=1)" : "linked into the command") + "\n" +
         internal::format_text_table(header, rows);
}

}  // namespace ringprof

// `ringprof watch --clickhouse` (ringprof/tools/fleet_watch.h).
#include "ringprof/tools/fleet_watch.h"

#include <algorithm>

#include "common/number_text.h"
#include "fleet/clickhouse_http.h"
#include "symbols/demangle.h"

namespace ringprof {
namespace {

using internal::ClickHouseError;
using internal::ClickHouseHttp;
using internal::for_each_tsv_row;
using internal::sql_quote;

uint64_t number(const std::string& text) { return std::stoull(text); }

// The slices a span [b, e] overlaps (diff keeps a span whole in every range
// it touches).
template <class Fn>
void for_slices(const std::vector<TimeRange>& slices, uint64_t b, uint64_t e, Fn fn) {
  for (size_t i = 0; i < slices.size(); ++i)
    if (slices[i].overlaps(b, e)) fn(i);
}

}  // namespace

FleetWatchResult watch_clickhouse(const FleetWatchOptions& o, const DiffOptions& diff) {
  FleetWatchResult r;
  if (o.watch.baseline != "previous" && o.watch.baseline != "day") {
    r.error = "with --clickhouse the baseline is previous or day, not a recording";
    return r;
  }
  try {
    ClickHouseHttp http(o.url);
    auto table = [&](const char* name) { return o.database + "." + o.prefix + name; };
    std::string where = "1";
    if (!o.host.empty()) where += " AND host = " + sql_quote(o.host);
    if (!o.job.empty()) where += " AND job = " + sql_quote(o.job);
    const std::string latest = http.query("SELECT count(), max(end_ns) FROM " + table("spans") + " WHERE " + where +
                                          " AND async = 0 FORMAT TSV");
    std::vector<std::string> f = internal::tsv_fields(latest.substr(0, latest.find('\n')));
    if (f.size() != 2 || f[0] == "0") {
      r.error = "no spans in " + table("spans") + " for " + (where == "1" ? std::string("any host") : where.substr(6));
      return r;
    }
    const uint64_t last = number(f[1]);
    const uint64_t w = o.watch.window_ns;
    constexpr uint64_t kDay = 86'400'000'000'000ull;
    const uint64_t back = o.watch.baseline == "day" ? kDay : w;
    if (last < w + back) {
      r.error = "the windows reach back before the epoch";
      return r;
    }
    const TimeRange head{last - w + 1, last}, base{head.begin_ns - back, head.end_ns - back};
    const unsigned n = std::max(o.watch.slices, 1u);
    const std::vector<TimeRange> slices[2] = {slice_range(base, n), slice_range(head, n)};
    std::vector<DiffRunData> runs[2] = {std::vector<DiffRunData>(n), std::vector<DiffRunData>(n)};
    for (int side = 0; side < 2; ++side) {
      const TimeRange& win = side ? head : base;
      const std::string in_window = " WHERE " + where + " AND end_ns >= " + std::to_string(win.begin_ns) +
                                    " AND begin_ns <= " + std::to_string(win.end_ns);
      const auto& sl = slices[side];
      auto& rs = runs[side];
      // Zones as diff reads them from files: no async span, none unterminated.
      for_each_tsv_row(http.query("SELECT name, begin_ns, dur_ns FROM " + table("spans") + in_window +
                                  " AND async = 0 AND unterminated = 0 FORMAT TSV"),
                       [&](const std::vector<std::string>& row) {
                         if (row.size() != 3) return;
                         const uint64_t b = number(row[1]), d = number(row[2]);
                         for_slices(sl, b, b + d, [&](size_t i) { rs[i].zones[row[0]].add(b, d); });
                       });
      const std::string gpu_window = " WHERE " + where +
                                     " AND kind = 'kernel' AND start_ns + dur_ns >= " + std::to_string(win.begin_ns) +
                                     " AND start_ns <= " + std::to_string(win.end_ns);
      for_each_tsv_row(http.query("SELECT name, start_ns, dur_ns FROM " + table("gpu") + gpu_window + " FORMAT TSV"),
                       [&](const std::vector<std::string>& row) {
                         if (row.size() != 3) return;
                         const uint64_t b = number(row[1]), d = number(row[2]);
                         const std::string name = row[0].empty() ? "<unnamed kernel>" : internal::demangle(row[0]);
                         for_slices(sl, b, b + d, [&](size_t i) { rs[i].kernels[name].add(b, d); });
                       });
      const std::string point_window = " WHERE " + where + " AND time_ns >= " + std::to_string(win.begin_ns) +
                                       " AND time_ns <= " + std::to_string(win.end_ns);
      for_each_tsv_row(http.query("SELECT time_ns FROM " + table("marks") + point_window +
                                  " AND kind = 'step' ORDER BY time_ns FORMAT TSV"),
                       [&](const std::vector<std::string>& row) {
                         const uint64_t t = number(row[0]);
                         for_slices(sl, t, t, [&](size_t i) { rs[i].steps.push_back(t); });
                       });
      for_each_tsv_row(http.query("SELECT leaf, time_ns FROM " + table("samples") + point_window + " FORMAT TSV"),
                       [&](const std::vector<std::string>& row) {
                         if (row.size() != 2) return;
                         const uint64_t t = number(row[1]);
                         for_slices(sl, t, t, [&](size_t i) {
                           ++rs[i].functions[row[0]];
                           ++rs[i].samples;
                         });
                       });
    }
    r.diff = compute_diff_data(runs[0], runs[1], diff);
    r.head_end_ns = last;
    r.ok = true;
  } catch (const ClickHouseError& e) {
    r.error = e.what();
  } catch (const std::exception& e) {
    r.error = "unexpected answer from " + internal::redacted_url(o.url) + ": " + e.what();
  }
  return r;
}

}  // namespace ringprof

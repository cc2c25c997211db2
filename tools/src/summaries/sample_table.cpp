#include "ringprof/tools/sample_table.h"

#include <algorithm>
#include <unordered_map>
#include <unordered_set>

#include "common/text_table.h"

namespace ringprof {

std::optional<SampleColumn> parse_sample_column(const std::string& text) {
  if (text == "name") return SampleColumn::Name;
  if (text == "self") return SampleColumn::Self;
  if (text == "total") return SampleColumn::Total;
  return std::nullopt;
}

namespace {

std::string where(const TraceReader& reader, const SampleCount& c, const ResolvedFrame& f) {
  if (!f.file.empty()) return f.file + ":" + std::to_string(f.line);
  const ProcessState& p = reader.processes()[c.process];
  auto it = p.modules.find(f.module_id);
  if (it == p.modules.end()) return "";
  const std::string& path = it->second.path;
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

SampleTable compute_sample_table(const TraceReader& reader, const SampleProfile& profile, StackResolver& resolver,
                                 SampleColumn sort, size_t top, bool python_only) {
  std::unordered_map<std::string, SampleRow> rows;
  std::unordered_set<std::string> seen;  // functions already counted for this stack
  for (const SampleCount& c : profile.counts) {
    const ProcessState& process = reader.processes()[c.process];
    const std::vector<ResolvedFrame>& frames = resolver.stack(process, c.stack_id);
    seen.clear();
    bool innermost = true;
    for (size_t i = 0; i < frames.size(); ++i) {
      const ResolvedFrame& f = frames[i];
      if (python_only && !f.interpreted) continue;
      // Python functions of one name in several files (`<module>`, `forward`)
      // are different functions.
      const std::string key = f.interpreted ? f.function + '\0' + f.file : f.function;
      auto [it, inserted] = rows.try_emplace(key);
      SampleRow& row = it->second;
      if (inserted) {
        row.function = f.function;
        row.location = where(reader, c, f);
      }
      if (python_only ? innermost : i == 0) row.self += c.count;
      innermost = false;
      if (seen.insert(key).second) row.total += c.count;
    }
  }
  SampleTable t;
  t.samples = profile.samples;
  t.samples_lost = profile.samples_lost;
  t.period_ns = profile.period_ns;
  t.rows.reserve(rows.size());
  for (auto& [name, row] : rows) t.rows.push_back(std::move(row));
  std::sort(t.rows.begin(), t.rows.end(), [sort](const SampleRow& a, const SampleRow& b) {
    if (sort == SampleColumn::Self && a.self != b.self) return a.self > b.self;
    if (sort == SampleColumn::Total && a.total != b.total) return a.total > b.total;
    if (sort != SampleColumn::Name && a.total != b.total) return a.total > b.total;
    return a.function < b.function;
  });
  if (top > 0 && t.rows.size() > top) t.rows.resize(top);
  return t;
}

std::string format_sample_table(const SampleTable& table, TableFormat format) {
  std::vector<internal::TextRow> cells;
  for (const SampleRow& r : table.rows)
    cells.push_back({r.function, std::to_string(r.self), format_percent(r.self, table.samples), std::to_string(r.total),
                     format_percent(r.total, table.samples), r.location});
  if (format == TableFormat::Csv)
    return internal::format_csv_table({"function", "self", "self_pct", "total", "total_pct", "location"}, cells);
  std::string out = internal::format_text_table({"Function", "Self", "Self %", "Total", "Total %", "Location"}, cells,
                                                {true, false, false, false, false, true});
  out += "Samples: " + std::to_string(table.samples);
  if (table.period_ns) out += " (" + format_us(table.samples * table.period_ns) + " us of CPU)";
  out += "; lost: " + std::to_string(table.samples_lost) + "\n";
  return out;
}

}  // namespace ringprof

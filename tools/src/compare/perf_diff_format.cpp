// `ringprof diff`'s three outputs: an aligned text table, a Markdown table for
// a pull-request comment, and JSON for programs.
#include <cmath>
#include <cstdio>

#include "common/json_text.h"
#include "common/number_text.h"
#include "common/text_table.h"
#include "ringprof/tools/perf_diff.h"

namespace ringprof {

namespace {

std::string interval(const Change& c) {
  if (!c.known) return "-";
  return "[" + internal::signed_percent(c.ci_low_pct) + ", " + internal::signed_percent(c.ci_high_pct) + "]";
}

std::string us(double ns) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3f", ns / 1000);
  return b;
}

bool has(const DiffSide& s) { return s.durations.calls > 0; }

std::string change_cell(const DiffRow& r) {
  return has(r.base) && has(r.head) ? internal::signed_percent(r.change.change_pct) : "-";
}

std::string calls_cell(const DiffRow& r) {
  const bool steps = r.base.steps && r.head.steps;
  std::string s = std::to_string(r.base.durations.calls) + " -> " + std::to_string(r.head.durations.calls);
  if (has(r.base) && has(r.head) && std::fabs(r.calls_change_pct) >= 0.05)
    s += " (" + internal::signed_percent(r.calls_change_pct) + (steps ? "/step" : "") + ")";
  return s;
}

std::string per_step_cell(const DiffRow& r) {
  if (!(r.base.steps && r.head.steps) || !has(r.base) || !has(r.head)) return "-";
  return us(r.base.total_per_step_ns) + " -> " + us(r.head.total_per_step_ns) + " " +
         internal::signed_percent(r.per_step_change.change_pct);
}

const internal::TextRow kHeader = {"Verdict", "Change", "95% interval", "Median base (us)", "Median head (us)",
                                   "P90 base (us)", "P90 head (us)", "Calls", "Per step (us)", "Name"};

std::vector<internal::TextRow> cells(const std::vector<DiffRow>& rows) {
  std::vector<internal::TextRow> out;
  for (const DiffRow& r : rows)
    out.push_back({verdict_name(r.verdict), change_cell(r), interval(r.change), us(r.base.durations.median_ns),
                   us(r.head.durations.median_ns), us(r.base.durations.p90_ns), us(r.head.durations.p90_ns),
                   calls_cell(r), per_step_cell(r), r.name});
  return out;
}

const internal::TextRow kFunctionHeader = {"Verdict", "Change", "95% interval", "Share base", "Share head",
                                           "Samples", "Function"};

std::vector<internal::TextRow> function_cells(const DiffResult& d) {
  std::vector<internal::TextRow> out;
  char b[32], h[32];
  for (const FunctionDiffRow& f : d.functions) {
    std::snprintf(b, sizeof b, "%.2f%%", f.base_share_pct);
    std::snprintf(h, sizeof h, "%.2f%%", f.head_share_pct);
    const bool both = f.base_samples && f.head_samples;
    out.push_back({verdict_name(f.verdict), both ? internal::signed_percent(f.change.change_pct) : "-",
                   interval(f.change), b, h, std::to_string(f.base_samples) + " -> " + std::to_string(f.head_samples),
                   f.function});
  }
  return out;
}

std::string markdown_cell(std::string s) {
  std::string out;
  for (char c : s) {
    if (c == '|') out += "\\|";
    else if (c == '\n') out += ' ';
    else out += c;
  }
  return out;
}

std::string markdown_table(const internal::TextRow& header, const std::vector<internal::TextRow>& rows) {
  std::string out = "|";
  for (const std::string& h : header) out += " " + h + " |";
  out += "\n|";
  for (size_t i = 0; i < header.size(); ++i) out += i == 0 || i + 1 == header.size() ? " --- |" : " ---: |";
  out += "\n";
  for (const internal::TextRow& r : rows) {
    out += "|";
    for (size_t i = 0; i < r.size(); ++i) {
      // Names in code spans: kernel and template names are full of < > * _.
      const bool name = i + 1 == r.size();
      out += " " + (name ? "`" + markdown_cell(r[i]) + "`" : markdown_cell(r[i])) + " |";
    }
    out += "\n";
  }
  return out;
}

size_t count(const std::vector<DiffRow>& rows, Verdict v) {
  size_t n = 0;
  for (const DiffRow& r : rows) n += r.verdict == v;
  return n;
}

std::string headline(const DiffResult& d) {
  char b[256];
  std::snprintf(b, sizeof b,
                "threshold %.3g%%, 95%% intervals for all %llu comparisons at once; steps: base %llu, head %llu",
                d.threshold_pct, static_cast<unsigned long long>(d.comparisons),
                static_cast<unsigned long long>(d.base_steps), static_cast<unsigned long long>(d.head_steps));
  return b;
}

// What the intervals rest on: the runs' spread, or one run a side and an
// assumed floor.
std::string noise_line(const DiffResult& d) {
  char b[256];
  if (d.noise_measured) {
    std::snprintf(b, sizeof b,
                  "runs: base %zu, head %zu; intervals from the run-to-run spread (%.3g%% resolution); sampled "
                  "functions and rows under 5 calls a run: pooled, %.3g%% floor",
                  d.base_runs, d.head_runs, d.noise_pct, d.pooled_noise_pct);
  } else {
    std::snprintf(b, sizeof b,
                  "runs: base %zu, head %zu; run-to-run noise not measured (one run a side): a %.3g%% noise floor "
                  "assumed (--runs with several runs per side measures it)",
                  d.base_runs, d.head_runs, d.noise_pct);
  }
  return b;
}

std::string process_line(const DiffResult& d) {
  if (d.process.name.empty()) return "";
  const Change& c = d.process.change;
  if (!c.known)
    return "Whole process: " + internal::signed_percent(c.change_pct) + " " + d.process.name +
           ", no verdict without the run-to-run noise\n";
  return std::string("Whole process: ") + verdict_name(d.process.verdict) + " " +
         internal::signed_percent(c.change_pct) + " " + interval(c) + " " + d.process.name + "\n";
}

std::string tally(const std::vector<DiffRow>& rows) {
  return std::to_string(count(rows, Verdict::Regressed)) + " regressed, " +
         std::to_string(count(rows, Verdict::Improved)) + " improved, " +
         std::to_string(count(rows, Verdict::Added)) + " added, " + std::to_string(count(rows, Verdict::Removed)) +
         " removed, " + std::to_string(count(rows, Verdict::Unchanged)) + " unchanged";
}

void json_side(std::string& out, const DiffSide& s) {
  out += "{\"calls\":" + std::to_string(s.durations.calls) + ",\"median_ns\":" + std::to_string(s.durations.median_ns) +
         ",\"p90_ns\":" + std::to_string(s.durations.p90_ns) + ",\"mean_ns\":";
  internal::append_json_double(out, s.durations.mean_ns);
  out += ",\"total_ns\":" + std::to_string(s.durations.total_ns) + ",\"steps\":" + std::to_string(s.steps);
  if (s.steps) {
    out += ",\"total_per_step_ns\":";
    internal::append_json_double(out, s.total_per_step_ns);
    out += ",\"calls_per_step\":";
    internal::append_json_double(out, s.calls_per_step);
  }
  out += "}";
}

void json_change(std::string& out, const char* prefix, const Change& c) {
  out += std::string(",\"") + prefix + "change_pct\":";
  internal::append_json_double(out, c.change_pct);
  out += std::string(",\"") + prefix + "ci_low_pct\":";
  internal::append_json_double(out, c.ci_low_pct);
  out += std::string(",\"") + prefix + "ci_high_pct\":";
  internal::append_json_double(out, c.ci_high_pct);
  out += std::string(",\"") + prefix + "interval_known\":" + (c.known ? "true" : "false");
}

void json_rows(std::string& out, const std::vector<DiffRow>& rows) {
  out += "[";
  for (size_t i = 0; i < rows.size(); ++i) {
    const DiffRow& r = rows[i];
    if (i) out += ",";
    out += "{\"name\":";
    internal::append_json_string(out, r.name);
    out += ",\"base\":";
    json_side(out, r.base);
    out += ",\"head\":";
    json_side(out, r.head);
    json_change(out, "", r.change);
    if (r.base.steps && r.head.steps && has(r.base) && has(r.head)) json_change(out, "per_step_", r.per_step_change);
    out += ",\"calls_change_pct\":";
    internal::append_json_double(out, r.calls_change_pct);
    out += ",\"verdict\":\"" + std::string(verdict_name(r.verdict)) + "\"}";
  }
  out += "]";
}

std::string json(const DiffResult& d) {
  std::string out = "{\"threshold_pct\":";
  internal::append_json_double(out, d.threshold_pct);
  out += ",\"comparisons\":" + std::to_string(d.comparisons) + ",\"noise_pct\":";
  internal::append_json_double(out, d.noise_pct);
  out += ",\"base_runs\":" + std::to_string(d.base_runs) + ",\"head_runs\":" + std::to_string(d.head_runs) +
         ",\"noise_measured\":" + (d.noise_measured ? "true" : "false") + ",\"process\":";
  if (d.process.name.empty()) {
    out += "null";
  } else {
    out += "{\"name\":";
    internal::append_json_string(out, d.process.name);
    json_change(out, "", d.process.change);
    out += ",\"verdict\":\"" + std::string(verdict_name(d.process.verdict)) + "\"}";
  }
  out += ",\"base_steps\":" + std::to_string(d.base_steps) + ",\"head_steps\":" + std::to_string(d.head_steps) +
         ",\"base_samples\":" + std::to_string(d.base_samples) + ",\"head_samples\":" + std::to_string(d.head_samples);
  out += ",\"zones\":";
  json_rows(out, d.zones);
  out += ",\"kernels\":";
  json_rows(out, d.kernels);
  out += ",\"functions\":[";
  for (size_t i = 0; i < d.functions.size(); ++i) {
    const FunctionDiffRow& f = d.functions[i];
    if (i) out += ",";
    out += "{\"name\":";
    internal::append_json_string(out, f.function);
    out += ",\"base\":{\"samples\":" + std::to_string(f.base_samples) + ",\"share_pct\":";
    internal::append_json_double(out, f.base_share_pct);
    out += "},\"head\":{\"samples\":" + std::to_string(f.head_samples) + ",\"share_pct\":";
    internal::append_json_double(out, f.head_share_pct);
    out += "}";
    json_change(out, "", f.change);
    out += ",\"verdict\":\"" + std::string(verdict_name(f.verdict)) + "\"}";
  }
  out += "]}\n";
  return out;
}

}  // namespace

std::string format_diff(const DiffResult& d, DiffFormat format) {
  if (format == DiffFormat::Json) return json(d);
  const bool md = format == DiffFormat::Markdown;
  auto table = [&](const internal::TextRow& header, const std::vector<internal::TextRow>& rows) {
    if (md) return markdown_table(header, rows);
    std::vector<bool> left(header.size(), false);
    left[0] = true;
    left.back() = true;
    return internal::format_text_table(header, rows, left);
  };
  std::string out = md ? "### ringprof diff\n\n" + headline(d) + "\n\n" + noise_line(d) + "\n\n" + process_line(d)
                       : "ringprof diff: " + headline(d) + "\n" + noise_line(d) + "\n" + process_line(d);
  auto section = [&](const std::string& title, const std::string& summary, const std::string& body) {
    out += md ? "\n#### " + title + " (" + summary + ")\n\n" + body : "\n" + title + ": " + summary + "\n" + body;
  };
  if (!d.zones.empty()) section("Zones", tally(d.zones), table(kHeader, cells(d.zones)));
  if (!d.kernels.empty()) section("GPU kernels", tally(d.kernels), table(kHeader, cells(d.kernels)));
  if (!d.functions.empty()) {
    const std::string summary = "share of " + std::to_string(d.base_samples) + " -> " +
                                std::to_string(d.head_samples) + " CPU samples";
    section("Sampled functions", summary, table(kFunctionHeader, function_cells(d)));
  }
  return out;
}

}  // namespace ringprof

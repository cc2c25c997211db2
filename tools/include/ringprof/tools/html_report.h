// ringprof/tools/html_report.h — `ringprof report`: one self-contained HTML
// page that explains a recording.
//
// The page is three inlined parts and nothing else (no network, no server):
// the stylesheet and the script (tools/report/report.css and report.js,
// compiled into the library at build time), and the data, a JSON document
// the tools compute here: only summaries (the zone table, the GPU kernel
// table, the ranks' figures), never every event, so the page stays small and
// responsive whatever the recording's size. The script draws each section
// the data has and leaves out the rest.
//
// Data (report_data_json):
//   {"overview": {...}, "operators": {...}, "gpu": {...} | null, "memory": {...} | null,
//    "samples": {...} | null, "timeline": {...} | null,
//    "steps": [per process: its steps' breakdown], "ranks": {...} | null}
// "operators" rows carry the same figures `ringprof table` prints, "gpu" the
// same as `ringprof gpu` plus each device's utilisation in 400 time buckets,
// "memory" the same as `ringprof memory` (zone tables cut to 100 rows) plus
// each pool's live bytes in 400 buckets, "samples" the top 100 rows of
// `ringprof table --samples` and the merged call tree `ringprof flame` folds,
// "timeline" the busiest threads' zones and the GPUs' busy spans (bounded:
// report_timeline.h), "ranks" the document `ringprof ranks --format json`
// prints (a job of several ranks only), "steps" the per-step figures of
// `ringprof ranks --per-step` for the first 4 processes, their latest 2000
// steps each.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <vector>

#include "ringprof/tools/time_range.h"
#include "ringprof/tools/trace_reader.h"

namespace ringprof {

struct ReportOptions {
  RangeSpec range;       // the part of the recording the tables count
  std::string thread;    // "" all; a thread name, or a kernel tid in decimal (the zone table)
  unsigned threads = 0;  // ranks read at once (0: one per hardware thread)
  std::vector<std::string> symbol_paths;  // where to look for debug files (as `ringprof flame --symbols`)
  std::string perfetto_file;  // the full trace written beside the page, as the page links to it ("" none)
  std::vector<int32_t> selected_ranks;  // the ranks the reader was narrowed to (RanksOptions); empty: all
};

// The page's data, as JSON. A job's hosts are aligned by their collectives
// first (ringprof/tools/clock_alignment.h), as `ringprof ranks` aligns them.
std::string report_data_json(TraceReader& reader, const ReportOptions& options);

// The whole page.
void write_html_report(TraceReader& reader, const ReportOptions& options, std::ostream& out);

}  // namespace ringprof

#include "reporting.h"

#include <cstdio>

#include "options.h"
#include "ringprof/tools/clock_alignment.h"
#include "ringprof/tools/printable.h"
#include "ringprof/tools/trace_range.h"
#include "ringprof/tools/zone_tracker.h"

namespace ringprof::cli {

ProgressReporter& terminal_progress() {
  static ProgressReporter progress = ProgressReporter::for_terminal(stderr, "ringprof: reading");
  return progress;
}

Input::Input(const std::vector<std::string>& paths, bool align_by_collectives) : reader_(paths) {
  reader_.set_progress(&terminal_progress());
  if (align_by_collectives) align_clocks_by_collectives(reader_, 0);
}

int place_range(const std::vector<std::string>& paths, const RangeSpec& range) {
  if (range.empty()) return kExitOk;
  Input probe(paths, /*align_by_collectives=*/false);  // whether it can be placed does not depend on it
  std::string error;
  if (resolve_trace_range(probe.reader(), range, &error)) return kExitOk;
  print_error(error);
  return kExitUsage;
}

int report_problems(const TraceReader& reader) {
  if (!reader.clock_note().empty()) std::fprintf(stderr, "%s\n", reader.clock_note().c_str());
  for (const Problem& p : reader.problems()) std::fprintf(stderr, "%s\n", format_problem(p).c_str());
  return reader.has_problems() ? kExitDamaged : kExitOk;
}

void print_text(const std::string& text) {
  const std::string shown = printable(text, true);
  std::fwrite(shown.data(), 1, shown.size(), stdout);
}

void print_error(const std::string& message) { std::fprintf(stderr, "ringprof: %s\n", message.c_str()); }

void report_zone_notes(uint64_t unmatched, uint64_t unterminated, uint64_t too_deep) {
  if (unmatched)
    std::fprintf(stderr, "ringprof: note: %llu zone ends without a begin skipped (begin in a deleted file or lost)\n",
                 static_cast<unsigned long long>(unmatched));
  if (unterminated)
    std::fprintf(stderr, "ringprof: note: %llu zones still open at the end, closed at their thread's last event\n",
                 static_cast<unsigned long long>(unterminated));
  if (too_deep)
    std::fprintf(stderr, "ringprof: note: %llu zones nested deeper than %zu levels on their thread left out\n",
                 static_cast<unsigned long long>(too_deep), ZoneTracker::kMaxDepth);
}

void report_symbol_warnings(StackResolver& resolver) {
  for (const std::string& w : resolver.take_warnings()) std::fprintf(stderr, "%s\n", w.c_str());
}

void report_no_samples(const SampleProfile& profile) {
  if (profile.samples == 0)
    std::fprintf(stderr, "ringprof: note: no CPU samples in the input%s\n",
                 profile.mechanism == "off" ? " (sampling was off)" : "");
}

}  // namespace ringprof::cli

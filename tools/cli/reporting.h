// What the commands share once parsing is done: opening the input (with
// progress on a terminal), checking that a range can be placed, and saying
// what went wrong, one line per problem, on stderr.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ringprof/tools/progress.h"
#include "ringprof/tools/sample_profile.h"
#include "ringprof/tools/stack_resolver.h"
#include "ringprof/tools/time_range.h"
#include "ringprof/tools/trace_reader.h"

namespace ringprof::cli {

// The command's progress line on stderr, drawn only when stderr is a
// terminal. One for the whole run: its first second counts from the first
// call (main makes it before parsing), whichever reader it is fed by.
ProgressReporter& terminal_progress();

// A reader over PATH... that reports to terminal_progress(). Processes on
// several hosts are aligned by their collective operations (a read of every
// file first) unless the command does that itself.
class Input {
 public:
  explicit Input(const std::vector<std::string>& paths, bool align_by_collectives = true);
  TraceReader& reader() { return reader_; }

 private:
  TraceReader reader_;
};

// A range that cannot be placed (a --window-id no file marks, a wall-clock
// time without a process start) is the user's error, said once, up front:
// kExitUsage after printing why, else kExitOk. An empty range always fits.
int place_range(const std::vector<std::string>& paths, const RangeSpec& range);

// Prints every problem the reader found; the exit status they imply.
int report_problems(const TraceReader& reader);
// A command's text output on stdout, whole: control bytes a name brought
// along (a NUL, an escape) print as \xNN instead of cutting the output off or
// driving the terminal (ringprof/tools/printable.h).
void print_text(const std::string& text);
// "ringprof: MESSAGE" on stderr.
void print_error(const std::string& message);
void report_zone_notes(uint64_t unmatched, uint64_t unterminated, uint64_t too_deep);
// The symbolizer's warnings (a module without symbols, ...), one per line.
void report_symbol_warnings(StackResolver& resolver);
// A note when a command that reads CPU samples found none.
void report_no_samples(const SampleProfile& profile);

}  // namespace ringprof::cli

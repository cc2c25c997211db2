// ringprof/tools/progress.h — how far a long read has got, on one line of a
// terminal.
//
// The reader (trace_reader.h) feeds it bytes and files as it advances; the
// reporter decides whether to draw. It stays silent for the first second
// after its construction (a short run shows nothing), then redraws at most every 100 ms, and clears its
// line when the work is done, so what the command prints afterwards starts on
// a clean line. Disabled, it writes nothing at all: the CLI enables it only
// when stderr is a terminal, so a piped or redirected run gets no progress
// text mixed into its error output.
//
// The output and the clock are injected so a test can drive it without a
// terminal or real time. Not thread-safe: one reader feeds it.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <string>
#include <string_view>
#include <utility>

namespace ringprof {

class ProgressReporter {
 public:
  using Write = std::function<void(std::string_view)>;
  using Clock = std::function<uint64_t()>;  // monotonic nanoseconds

  struct Timing {
    uint64_t delay_ns = 1'000'000'000;   // nothing is drawn before this much time has passed
    uint64_t interval_ns = 100'000'000;  // at most one redraw per interval
  };

  // A reporter that never writes.
  ProgressReporter() = default;
  // `label` starts the line ("reading"); `write` receives the bytes drawn.
  ProgressReporter(std::string label, Write write, Clock clock, Timing timing);
  ProgressReporter(std::string label, Write write, Clock clock)
      : ProgressReporter(std::move(label), std::move(write), std::move(clock), Timing{}) {}
  ~ProgressReporter();

  ProgressReporter(const ProgressReporter&) = delete;
  ProgressReporter& operator=(const ProgressReporter&) = delete;

  // Draws on `stream` (steady clock) when it is a terminal; silent otherwise.
  static ProgressReporter for_terminal(std::FILE* stream, std::string label);

  bool enabled() const { return static_cast<bool>(write_); }

  // A pass over the input begins: its size in bytes and files. The delay
  // counts from the reporter's construction, so the time spent opening the
  // input counts too.
  void start(uint64_t total_bytes, uint64_t total_files);
  // Where the pass has got to (absolute, not increments).
  void update(uint64_t bytes_done, uint64_t files_done);
  // Clears the line if anything was drawn; the next start() may draw again.
  void finish();

  // The text of one progress line, e.g. "reading: 12.5 of 40.0 MiB (31%), file 3 of 10".
  static std::string format_line(std::string_view label, uint64_t bytes_done, uint64_t total_bytes, uint64_t files_done,
                                 uint64_t total_files);

 private:
  void draw(uint64_t now);

  std::string label_;
  Write write_;
  Clock clock_;
  Timing timing_;
  bool started_ = false;
  uint64_t created_at_ = 0;
  uint64_t last_draw_ = 0;
  bool drawn_ = false;  // a line is on the screen
  size_t drawn_width_ = 0;
  uint64_t total_bytes_ = 0;
  uint64_t total_files_ = 0;
  uint64_t bytes_done_ = 0;
  uint64_t files_done_ = 0;
};

}  // namespace ringprof

#include "ringprof/tools/progress.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <utility>

namespace ringprof {

ProgressReporter::ProgressReporter(std::string label, Write write, Clock clock, Timing timing)
    : label_(std::move(label)), write_(std::move(write)), clock_(std::move(clock)), timing_(timing) {
  if (enabled()) created_at_ = clock_();
}

ProgressReporter::~ProgressReporter() { finish(); }

ProgressReporter ProgressReporter::for_terminal(std::FILE* stream, std::string label) {
  if (stream == nullptr || isatty(fileno(stream)) != 1) return ProgressReporter();
  return ProgressReporter(
      std::move(label),
      [stream](std::string_view text) {
        std::fwrite(text.data(), 1, text.size(), stream);
        std::fflush(stream);
      },
      [] {
        return static_cast<uint64_t>(
            std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
                .count());
      });
}

void ProgressReporter::start(uint64_t total_bytes, uint64_t total_files) {
  if (!enabled()) return;
  started_ = true;
  total_bytes_ = total_bytes;
  total_files_ = total_files;
  bytes_done_ = 0;
  files_done_ = 0;
}

void ProgressReporter::update(uint64_t bytes_done, uint64_t files_done) {
  if (!enabled() || !started_) return;
  bytes_done_ = bytes_done;
  files_done_ = files_done;
  const uint64_t now = clock_();
  if (now - created_at_ < timing_.delay_ns) return;
  if (drawn_ && now - last_draw_ < timing_.interval_ns) return;
  draw(now);
}

void ProgressReporter::draw(uint64_t now) {
  const std::string line = format_line(label_, bytes_done_, total_bytes_, files_done_, total_files_);
  std::string text = "\r" + line;
  // Cover what a longer earlier line left behind.
  if (line.size() < drawn_width_) text.append(drawn_width_ - line.size(), ' ');
  write_(text);
  drawn_ = true;
  drawn_width_ = std::max(drawn_width_, line.size());
  last_draw_ = now;
}

void ProgressReporter::finish() {
  if (!enabled() || !drawn_) return;
  std::string text = "\r";  // built by appending: GCC 12 -O3 warns falsely (-Wrestrict) on "\r" + string
  text.append(drawn_width_, ' ');
  text += '\r';
  write_(text);
  drawn_ = false;
  drawn_width_ = 0;
}

std::string ProgressReporter::format_line(std::string_view label, uint64_t bytes_done, uint64_t total_bytes,
                                          uint64_t files_done, uint64_t total_files) {
  auto mib = [](uint64_t bytes) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.1f", static_cast<double>(bytes) / (1024.0 * 1024.0));
    return std::string(buf);
  };
  std::string line(label);
  line += ": " + mib(bytes_done) + " of " + mib(total_bytes) + " MiB";
  if (total_bytes > 0) {
    const uint64_t done = bytes_done > total_bytes ? total_bytes : bytes_done;
    line += " (" + std::to_string(done * 100 / total_bytes) + "%)";
  }
  line += ", file " + std::to_string(files_done < total_files ? files_done + 1 : total_files) + " of " +
          std::to_string(total_files);
  return line;
}

}  // namespace ringprof

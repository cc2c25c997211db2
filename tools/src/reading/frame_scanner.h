// frame_scanner.h (internal) — walks the frames of one ringprof file.
//
// The scanner only frames: it finds each header, checks it with
// format::parse_frame_header, and knows where the payload lies. It never looks
// inside a payload (decode_segment does that). A stretch of bytes that is not
// a valid frame becomes one Problem, after which the scanner resynchronises on
// the next offset where a header parses (magic, version and header checksum
// all agree). Reads go through pread in bounded chunks, so scanning a huge or
// hostile file costs no more memory than its largest valid payload.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ringprof/format.h"
#include "ringprof/tools/trace_reader.h"

namespace ringprof::internal {

struct Frame {
  uint64_t offset = 0;          // of the header
  uint32_t header_size = 0;     // bytes before the payload
  format::FrameHeader header;
};

class FrameScanner {
 public:
  FrameScanner() = default;
  ~FrameScanner();
  FrameScanner(const FrameScanner&) = delete;
  FrameScanner& operator=(const FrameScanner&) = delete;

  // Opens `path`; false with *error set (strerror text) when it cannot.
  bool open(const std::string& path, bool is_part, std::string* error);
  uint64_t size() const { return size_; }
  // errno of a failed open() (0 when it did not fail there).
  int open_errno() const { return open_errno_; }

  // The next valid frame at or after the current position, or nullopt at the
  // end. Damage on the way is appended to `problems` (when not null).
  std::optional<Frame> next(std::vector<Problem>* problems);

  // Reads a frame's payload into `out`. False on an I/O error.
  bool read_payload(const Frame& frame, std::vector<uint8_t>& out, std::string* error);

  // What the last next() calls ran into, for the file's statistics.
  uint64_t bad_stretches() const { return bad_stretches_; }
  bool torn_tail() const { return torn_tail_; }
  bool truncated() const { return truncated_; }

 private:
  bool read_at(uint64_t offset, void* buf, size_t n);
  // Tries to parse a header at `offset`; the frame when valid.
  std::optional<Frame> header_at(uint64_t offset, std::string* error);
  // The first offset > `from` holding a valid header, or nullopt.
  std::optional<uint64_t> resync(uint64_t from);
  void report_end_inside_frame(uint64_t offset, uint64_t needed, std::vector<Problem>* problems);

  int fd_ = -1;
  int open_errno_ = 0;
  std::string path_;
  bool is_part_ = false;
  uint64_t size_ = 0;
  uint64_t pos_ = 0;
  bool seen_frame_ = false;
  uint64_t bad_stretches_ = 0;
  bool empty_reported_ = false;
  bool torn_tail_ = false;
  bool truncated_ = false;
};

bool is_part_path(const std::string& path);

}  // namespace ringprof::internal

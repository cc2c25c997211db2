#include "reading/frame_scanner.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace ringprof::internal {

namespace {
constexpr size_t kScanChunk = 64 * 1024;
constexpr uint8_t kMagicBytes[4] = {0x52, 0x50, 0x53, 0x47};  // "RPSG"
}  // namespace

bool is_part_path(const std::string& path) {
  const std::string suffix = format::kPartSuffix;
  return path.size() >= suffix.size() && path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0;
}

FrameScanner::~FrameScanner() {
  if (fd_ >= 0) ::close(fd_);
}

bool FrameScanner::open(const std::string& path, bool is_part, std::string* error) {
  path_ = path;
  is_part_ = is_part;
  // O_NONBLOCK: a FIFO named as input must not wait for a writer (it is
  // refused below as not a regular file); on a regular file it changes nothing.
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd_ < 0) {
    open_errno_ = errno;
    *error = std::string("cannot open: ") + std::strerror(open_errno_);
    return false;
  }
  struct stat st {};
  if (::fstat(fd_, &st) != 0) {
    *error = std::string("cannot stat: ") + std::strerror(errno);
    return false;
  }
  if (!S_ISREG(st.st_mode)) {
    *error = "not a regular file";
    return false;
  }
  size_ = static_cast<uint64_t>(st.st_size);
  return true;
}

bool FrameScanner::read_at(uint64_t offset, void* buf, size_t n) {
  auto* p = static_cast<uint8_t*>(buf);
  while (n > 0) {
    const ssize_t r = ::pread(fd_, p, n, static_cast<off_t>(offset));
    if (r < 0 && errno == EINTR) continue;
    if (r <= 0) return false;
    p += r;
    n -= static_cast<size_t>(r);
    offset += static_cast<uint64_t>(r);
  }
  return true;
}

std::optional<Frame> FrameScanner::header_at(uint64_t offset, std::string* error) {
  uint8_t bytes[format::kHeaderSize];
  if (size_ - offset < format::kHeaderSize || !read_at(offset, bytes, sizeof bytes)) {
    *error = "short header";
    return std::nullopt;
  }
  auto h = format::parse_frame_header(std::span<const uint8_t>(bytes, sizeof bytes), error);
  if (!h) return std::nullopt;
  if (h->header_size < format::kHeaderSize) {
    *error = "header size " + std::to_string(h->header_size) + " below " + std::to_string(format::kHeaderSize);
    return std::nullopt;
  }
  if (h->stored_size > format::kMaxPayload) {
    *error = "payload size " + std::to_string(h->stored_size) + " over the limit";
    return std::nullopt;
  }
  return Frame{offset, h->header_size, *h};
}

std::optional<uint64_t> FrameScanner::resync(uint64_t from) {
  // Look for the magic in chunks that overlap by 3 bytes, so a magic split
  // across two chunks is still found; try a full header at each hit.
  std::vector<uint8_t> chunk(kScanChunk);
  uint64_t at = from + 1;
  while (at + format::kHeaderSize <= size_) {
    const size_t n = static_cast<size_t>(std::min<uint64_t>(kScanChunk, size_ - at));
    if (!read_at(at, chunk.data(), n)) return std::nullopt;
    for (size_t i = 0; i + sizeof kMagicBytes <= n; ++i) {
      if (std::memcmp(chunk.data() + i, kMagicBytes, sizeof kMagicBytes) != 0) continue;
      std::string ignored;
      if (header_at(at + i, &ignored)) return at + i;
    }
    if (n < sizeof kMagicBytes) break;
    at += n - (sizeof kMagicBytes - 1);
  }
  return std::nullopt;
}

void FrameScanner::report_end_inside_frame(uint64_t offset, uint64_t needed, std::vector<Problem>* problems) {
  const uint64_t have = size_ - offset;
  if (is_part_) {
    torn_tail_ = true;
    if (problems)
      problems->push_back({ProblemKind::TornTail, path_, offset,
                           "torn tail: last segment incomplete (" + std::to_string(have) + " of " +
                               std::to_string(needed) + " bytes; writer stopped mid-write)"});
  } else {
    truncated_ = true;
    if (problems)
      problems->push_back({ProblemKind::Truncated, path_, offset,
                           "truncated segment: " + std::to_string(needed) + " bytes expected, " +
                               std::to_string(have) + " present"});
  }
}

std::optional<Frame> FrameScanner::next(std::vector<Problem>* problems) {
  // A sealed file of 0 bytes holds nothing a writer sealed: say so. (A
  // `.part` file is empty for a moment after its writer created it.)
  if (size_ == 0 && !is_part_ && !empty_reported_) {
    empty_reported_ = true;
    ++bad_stretches_;
    if (problems) problems->push_back({ProblemKind::Foreign, path_, 0, "empty file (0 bytes): no ringprof segment"});
    return std::nullopt;
  }
  while (pos_ < size_) {
    const uint64_t here = pos_;
    const uint64_t left = size_ - here;
    std::string error;
    std::optional<Frame> frame;
    if (left >= format::kHeaderSize) frame = header_at(here, &error);

    if (frame) {
      const uint64_t total = uint64_t{frame->header_size} + frame->header.stored_size;
      if (total > left) {
        report_end_inside_frame(here, total, problems);
        pos_ = size_;
        return std::nullopt;
      }
      pos_ = here + total;
      seen_frame_ = true;
      return frame;
    }

    if (left < format::kHeaderSize) {
      // A few bytes after the last frame: a header cut short, if it starts
      // like one; otherwise junk.
      const size_t n = static_cast<size_t>(std::min<uint64_t>(left, sizeof kMagicBytes));
      uint8_t head[sizeof kMagicBytes] = {};
      const bool starts_like_header = read_at(here, head, n) && std::memcmp(head, kMagicBytes, n) == 0;
      if (starts_like_header && seen_frame_) {
        report_end_inside_frame(here, format::kHeaderSize, problems);
      } else {
        ++bad_stretches_;
        if (problems)
          problems->push_back({seen_frame_ ? ProblemKind::CorruptHeader : ProblemKind::Foreign, path_, here,
                               seen_frame_ ? std::to_string(left) + " stray bytes after the last segment"
                                           : "not a ringprof file (" + std::to_string(left) +
                                                 " bytes, shorter than a segment header)"});
      }
      pos_ = size_;
      return std::nullopt;
    }

    // A bad stretch: one problem for all of it, then the next valid header.
    ++bad_stretches_;
    const std::optional<uint64_t> found = resync(here);
    const uint64_t skipped = (found ? *found : size_) - here;
    if (problems) {
      Problem p{ProblemKind::CorruptHeader, path_, here, error};
      if (!seen_frame_ && !found) {
        p.kind = ProblemKind::Foreign;
        p.reason = "not a ringprof file (" + error + "; no segment header found in " + std::to_string(size_) +
                   " bytes)";
      } else if (found) {
        p.reason += "; skipped " + std::to_string(skipped) + " bytes to the next segment at offset " +
                    std::to_string(*found);
      } else {
        p.reason += "; no valid segment in the remaining " + std::to_string(skipped) + " bytes";
      }
      problems->push_back(std::move(p));
    }
    pos_ = found ? *found : size_;
  }
  return std::nullopt;
}

bool FrameScanner::read_payload(const Frame& frame, std::vector<uint8_t>& out, std::string* error) {
  out.resize(frame.header.stored_size);
  if (out.empty()) return true;
  if (!read_at(frame.offset + frame.header_size, out.data(), out.size())) {
    *error = std::string("read error: ") + std::strerror(errno);
    return false;
  }
  return true;
}

}  // namespace ringprof::internal

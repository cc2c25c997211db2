// varint.h — LEB128 varints and zigzag, the byte encoding of the segment's
// variable-width columns (ts, locs, values; see schemas/segment.fbs).
//
// Why LEB128: event columns are mostly small numbers (time deltas of a few
// microseconds, location ids below a few thousand), so 1-3 bytes per value
// before zstd even starts. Zigzag keeps a small negative time delta small too
// (events of one thread are normally in order, but the format must not
// depend on it).
//
// The reader is written for hostile input: it never reads past `end`, and it
// rejects a varint longer than 10 bytes or one whose 10th byte carries bits
// beyond the 64th, instead of silently wrapping.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace ringprof::varint {

inline constexpr std::size_t kMaxBytes = 10;  // ceil(64 / 7)

// Into memory the caller made room for (kMaxBytes per value): returns the
// end of what it wrote.
inline uint8_t* put(uint8_t* out, uint64_t v) noexcept {
  while (v >= 0x80) {
    *out++ = static_cast<uint8_t>(v | 0x80);
    v >>= 7;
  }
  *out++ = static_cast<uint8_t>(v);
  return out;
}

// Appended to a vector.
inline void put(std::vector<uint8_t>& out, uint64_t v) {
  uint8_t bytes[kMaxBytes];
  out.insert(out.end(), bytes, put(bytes, v));
}

inline constexpr uint64_t zigzag(int64_t v) noexcept {
  // Cast before shifting: left-shifting a negative signed value is UB.
  return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63);
}

inline constexpr int64_t unzigzag(uint64_t v) noexcept {
  return static_cast<int64_t>((v >> 1) ^ (~(v & 1) + 1));
}

// Reads one varint from [*pos, end). Returns false (leaving *pos unchanged)
// on a truncated or over-long varint.
inline bool get(const uint8_t*& pos, const uint8_t* end, uint64_t* out) noexcept {
  uint64_t v = 0;
  const uint8_t* p = pos;
  for (std::size_t i = 0; i < kMaxBytes; ++i) {
    if (p == end) return false;
    const uint8_t b = *p++;
    if (i == kMaxBytes - 1 && b > 1) return false;  // would overflow 64 bits
    v |= static_cast<uint64_t>(b & 0x7f) << (7 * i);
    if ((b & 0x80) == 0) {
      pos = p;
      *out = v;
      return true;
    }
  }
  return false;
}

}  // namespace ringprof::varint

// frame.cpp — the 64-byte frame header around every segment (layout in
// ringprof/format.h).
//
// Fields are packed byte by byte in little-endian order rather than by
// memcpy of a struct, so the on-disk layout does not depend on the compiler's
// padding or on the host's byte order.
#include <zlib.h>

#include <cstring>
#include <limits>

#include "ringprof/format.h"

namespace ringprof::format {
namespace {

void put16(uint8_t* p, uint16_t v) noexcept {
  p[0] = static_cast<uint8_t>(v);
  p[1] = static_cast<uint8_t>(v >> 8);
}
void put32(uint8_t* p, uint32_t v) noexcept {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
void put64(uint8_t* p, uint64_t v) noexcept {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<uint8_t>(v >> (8 * i));
}
uint16_t get16(const uint8_t* p) noexcept { return static_cast<uint16_t>(p[0] | (p[1] << 8)); }
uint32_t get32(const uint8_t* p) noexcept {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= static_cast<uint32_t>(p[i]) << (8 * i);
  return v;
}
uint64_t get64(const uint8_t* p) noexcept {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(p[i]) << (8 * i);
  return v;
}

// The header checksum covers everything before it (bytes 0..59).
constexpr std::size_t kHeaderCrcOffset = 60;

}  // namespace

uint32_t crc32(std::span<const uint8_t> bytes) noexcept {
  // zlib takes a uInt length; feed very large inputs in pieces.
  uLong crc = ::crc32(0L, Z_NULL, 0);
  const uint8_t* p = bytes.data();
  std::size_t left = bytes.size();
  while (left > 0) {
    const uInt n = left > std::numeric_limits<uInt>::max() ? std::numeric_limits<uInt>::max()
                                                            : static_cast<uInt>(left);
    crc = ::crc32(crc, p, n);
    p += n;
    left -= n;
  }
  return static_cast<uint32_t>(crc);
}

void write_frame_header(const FrameHeader& h, uint8_t out[kHeaderSize]) noexcept {
  std::memset(out, 0, kHeaderSize);
  put32(out + 0, kMagic);
  put16(out + 4, h.version);
  // This writer knows only the 64-byte layout; whatever `h` says, the bytes
  // it emits are exactly kHeaderSize long.
  put16(out + 6, kHeaderSize);
  put32(out + 8, h.flags);
  put32(out + 12, h.stored_size);
  put32(out + 16, h.raw_size);
  put32(out + 20, h.event_count);
  put64(out + 24, h.sequence);
  put64(out + 32, h.first_ns);
  put64(out + 40, h.last_ns);
  put32(out + 48, h.pid);
  put32(out + 52, h.payload_crc32);
  put32(out + 56, 0);  // reserved
  put32(out + kHeaderCrcOffset, crc32({out, kHeaderCrcOffset}));
}

std::optional<FrameHeader> parse_frame_header(std::span<const uint8_t> bytes, std::string* error) {
  auto fail = [&](std::string why) -> std::optional<FrameHeader> {
    if (error) *error = std::move(why);
    return std::nullopt;
  };
  if (bytes.size() < kHeaderSize) return fail("short header");
  const uint8_t* p = bytes.data();
  if (get32(p) != kMagic) return fail("bad magic");
  // Checksum before interpreting any field: a flipped bit in, say, the
  // version is reported as corruption rather than as a newer format.
  if (get32(p + kHeaderCrcOffset) != crc32({p, kHeaderCrcOffset})) return fail("header checksum mismatch");
  FrameHeader h;
  h.version = get16(p + 4);
  if (h.version < 1 || h.version > kVersion) return fail("unsupported version " + std::to_string(h.version));
  h.header_size = get16(p + 6);
  // A later version may grow the header; the caller skips the extra bytes.
  if (h.header_size < kHeaderSize) return fail("bad header size " + std::to_string(h.header_size));
  h.flags = get32(p + 8);
  h.stored_size = get32(p + 12);
  h.raw_size = get32(p + 16);
  h.event_count = get32(p + 20);
  h.sequence = get64(p + 24);
  h.first_ns = get64(p + 32);
  h.last_ns = get64(p + 40);
  h.pid = get32(p + 48);
  h.payload_crc32 = get32(p + 52);
  if (h.stored_size > kMaxPayload) return fail("payload too large (" + std::to_string(h.stored_size) + " bytes)");
  return h;
}

}  // namespace ringprof::format

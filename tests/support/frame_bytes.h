// tests/support/frame_bytes.h — frames made and taken apart by hand for the
// segment decoder tests: an uncompressed frame around any raw payload, the
// raw payload of an encoded frame, and one frame decoded to its error.
#pragma once

#include <gtest/gtest.h>
#include <zstd.h>

#include <algorithm>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ringprof/format.h"
#include "ringprof/segment_codec.h"

namespace ringprof::test {

// Builds an uncompressed frame around any raw payload (the crash path's form).
inline std::vector<uint8_t> uncompressed_frame(const std::vector<uint8_t>& raw, uint32_t event_count,
                                               uint32_t extra_flags = 0) {
  format::FrameHeader h;
  h.flags = format::kFrameUncompressed | extra_flags;
  h.stored_size = static_cast<uint32_t>(raw.size());
  h.raw_size = h.stored_size;
  h.event_count = event_count;
  h.payload_crc32 = format::crc32(raw);
  std::vector<uint8_t> out(format::kHeaderSize);
  format::write_frame_header(h, out.data());
  out.insert(out.end(), raw.begin(), raw.end());
  return out;
}

// The raw FlatBuffer of an encoded (zstd) frame.
inline std::vector<uint8_t> raw_payload_of(const std::vector<uint8_t>& frame) {
  auto h = format::parse_frame_header(frame, nullptr);
  EXPECT_TRUE(h.has_value());
  std::vector<uint8_t> raw(h->raw_size);
  const size_t n = ZSTD_decompress(raw.data(), raw.size(), frame.data() + format::kHeaderSize, h->stored_size);
  EXPECT_EQ(n, raw.size());
  return raw;
}

// Decodes one frame; returns the error ("" on success).
inline std::string decode_error(const std::vector<uint8_t>& frame, std::vector<std::string>* strings = nullptr,
                                DecodedSegment* seg_out = nullptr) {
  std::string err;
  auto h = format::parse_frame_header(frame, &err);
  if (!h) return err.empty() ? "?" : err;
  std::vector<std::string> local;
  DecodedSegment seg;
  const size_t off = std::min<size_t>(frame.size(), h->header_size);
  if (decode_segment(*h, std::span<const uint8_t>(frame).subspan(off), strings ? *strings : local, seg, &err)) {
    if (seg_out) *seg_out = seg;
    return "";
  }
  return err.empty() ? "?" : err;
}

}  // namespace ringprof::test

// Decodes a byte stream of frames (one file's worth) with one string table,
// as the reader does, for the codec tests that check segment by segment.
#pragma once

#include <gtest/gtest.h>

#include <span>
#include <string>
#include <vector>

#include "ringprof/format.h"
#include "ringprof/segment_codec.h"

namespace ringprof::test {

struct DecodedStream {
  std::vector<DecodedSegment> segments;
  std::vector<std::string> strings;
};

inline ::testing::AssertionResult decode_stream(const std::vector<uint8_t>& bytes, DecodedStream* out) {
  size_t off = 0;
  while (off < bytes.size()) {
    std::string err;
    auto h = format::parse_frame_header(std::span<const uint8_t>(bytes).subspan(off), &err);
    if (!h) return ::testing::AssertionFailure() << "header at " << off << ": " << err;
    if (bytes.size() - off - h->header_size < h->stored_size)
      return ::testing::AssertionFailure() << "short payload at " << off;
    DecodedSegment seg;
    if (!decode_segment(*h, std::span<const uint8_t>(bytes).subspan(off + h->header_size, h->stored_size),
                        out->strings, seg, &err))
      return ::testing::AssertionFailure() << "segment at " << off << ": " << err;
    out->segments.push_back(std::move(seg));
    off += h->header_size + h->stored_size;
  }
  return ::testing::AssertionSuccess();
}

}  // namespace ringprof::test

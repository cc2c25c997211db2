// Segment framing and damaged segments: the frame header's layout and
// checks, and torn or corrupt frames (every truncation, every bit flip, wrong
// encoding flags and sizes), which must give a clean error, never a crash.
#include <gtest/gtest.h>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "support/frame_bytes.h"
#include "support/segment_batches.h"
#include "ringprof/format.h"
#include "ringprof/segment_codec.h"

namespace ringprof {
namespace {

using test::BatchData;
using test::decode_error;
using test::raw_payload_of;
using test::uncompressed_frame;

TEST(FrameHeader, RoundTripsAndRejectsBadHeaders) {
  format::FrameHeader h;
  h.flags = format::kFrameZstd;
  h.stored_size = 10;
  h.raw_size = 20;
  h.event_count = 3;
  h.sequence = 0x0102030405060708ull;
  h.first_ns = 11;
  h.last_ns = 12;
  h.pid = 99;
  h.payload_crc32 = 0xdeadbeef;
  uint8_t buf[format::kHeaderSize];
  format::write_frame_header(h, buf);
  EXPECT_EQ(std::memcmp(buf, "RPSG", 4), 0);
  EXPECT_EQ(buf[24], 0x08);  // little-endian sequence
  EXPECT_EQ(buf[31], 0x01);
  std::string err;
  auto p = format::parse_frame_header({buf, sizeof buf}, &err);
  ASSERT_TRUE(p) << err;
  EXPECT_EQ(p->flags, h.flags);
  EXPECT_EQ(p->stored_size, 10u);
  EXPECT_EQ(p->raw_size, 20u);
  EXPECT_EQ(p->event_count, 3u);
  EXPECT_EQ(p->sequence, h.sequence);
  EXPECT_EQ(p->first_ns, 11u);
  EXPECT_EQ(p->last_ns, 12u);
  EXPECT_EQ(p->pid, 99u);
  EXPECT_EQ(p->payload_crc32, 0xdeadbeefu);
  EXPECT_EQ(p->header_size, format::kHeaderSize);

  EXPECT_FALSE(format::parse_frame_header({buf, 63}, &err));
  EXPECT_EQ(err, "short header");

  auto reseal = [](uint8_t* b) {
    const uint32_t crc = format::crc32({b, 60});
    for (int i = 0; i < 4; ++i) b[60 + i] = static_cast<uint8_t>(crc >> (8 * i));
  };
  uint8_t bad[format::kHeaderSize];
  std::memcpy(bad, buf, sizeof bad);
  bad[0] = 'X';
  EXPECT_FALSE(format::parse_frame_header({bad, sizeof bad}, &err));
  EXPECT_EQ(err, "bad magic");

  std::memcpy(bad, buf, sizeof bad);
  bad[40] ^= 1;
  EXPECT_FALSE(format::parse_frame_header({bad, sizeof bad}, &err));
  EXPECT_EQ(err, "header checksum mismatch");

  std::memcpy(bad, buf, sizeof bad);
  bad[4] = 7;
  reseal(bad);
  EXPECT_FALSE(format::parse_frame_header({bad, sizeof bad}, &err));
  EXPECT_EQ(err, "unsupported version 7");

  std::memcpy(bad, buf, sizeof bad);
  bad[4] = 0;
  reseal(bad);
  EXPECT_FALSE(format::parse_frame_header({bad, sizeof bad}, &err));

  std::memcpy(bad, buf, sizeof bad);
  bad[6] = 32;
  reseal(bad);
  EXPECT_FALSE(format::parse_frame_header({bad, sizeof bad}, &err));

  std::memcpy(bad, buf, sizeof bad);
  bad[15] = 0x7f;  // stored_size far beyond kMaxPayload
  reseal(bad);
  EXPECT_FALSE(format::parse_frame_header({bad, sizeof bad}, &err));

  // A longer header (a future minor layout) is accepted; the reader skips it.
  std::memcpy(bad, buf, sizeof bad);
  bad[6] = 96;
  reseal(bad);
  auto longer = format::parse_frame_header({bad, sizeof bad}, &err);
  ASSERT_TRUE(longer) << err;
  EXPECT_EQ(longer->header_size, 96u);
}

// The encoded frame for the corruption sweeps: small, with every column.
std::vector<uint8_t> small_frame() {
  BatchData d;
  d.add_location("z", "f", "g.cpp", 3);
  d.threads.push_back(ThreadInfo{1, 10, "t", 1, 1, 0});
  d.begin_run(1);
  d.add(EventKind::ZoneBegin, 100, 1);
  d.add(EventKind::Counter, 110, 1, double_bits(1.5));
  d.add(EventKind::Step, 120, 0, 9);
  d.add(EventKind::ZoneEnd, 130);
  SegmentEncoder enc;
  SessionInfo s;
  s.pid = 1;
  enc.start_file(s);
  std::vector<uint8_t> out;
  enc.encode(d.batch(), out);
  return out;
}

TEST(SegmentDecoder, EveryTruncationFailsCleanly) {
  const std::vector<uint8_t> frame = small_frame();
  ASSERT_EQ(decode_error(frame), "");
  for (size_t len = 0; len < frame.size(); ++len) {
    const std::vector<uint8_t> cut(frame.begin(), frame.begin() + static_cast<std::ptrdiff_t>(len));
    EXPECT_NE(decode_error(cut), "") << "length " << len;
  }
  // The raw FlatBuffer cut short inside a re-checksummed uncompressed frame:
  // its last bytes may be alignment padding, so a cut may still decode;
  // otherwise it must fail cleanly. Cutting into the root table always fails.
  const std::vector<uint8_t> raw = raw_payload_of(frame);
  size_t failures = 0;
  for (size_t len = 0; len < raw.size(); ++len) {
    const std::vector<uint8_t> cut(raw.begin(), raw.begin() + static_cast<std::ptrdiff_t>(len));
    DecodedSegment seg;
    if (decode_error(uncompressed_frame(cut, 4), nullptr, &seg).empty()) {
      EXPECT_EQ(seg.events.size(), 4u) << "raw length " << len;
    } else {
      ++failures;
    }
  }
  EXPECT_GE(failures, raw.size() - 8);
}

TEST(SegmentDecoder, BitFlipsGiveAnErrorOrAValidDecode) {
  const std::vector<uint8_t> frame = small_frame();
  // Flips in the stored frame are caught by the checksums.
  for (size_t i = 0; i < frame.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      std::vector<uint8_t> f = frame;
      f[i] ^= static_cast<uint8_t>(1u << bit);
      EXPECT_NE(decode_error(f), "") << "byte " << i << " bit " << bit;
    }
  }
  // Flips in the raw FlatBuffer, re-checksummed, reach the verifier and the
  // column checks: each must decode or fail cleanly (ASan/UBSan builds make
  // "cleanly" strict).
  const std::vector<uint8_t> raw = raw_payload_of(frame);
  size_t decoded = 0, failed = 0;
  for (size_t i = 0; i < raw.size(); ++i) {
    for (int bit = 0; bit < 8; ++bit) {
      std::vector<uint8_t> r = raw;
      r[i] ^= static_cast<uint8_t>(1u << bit);
      std::vector<std::string> strings;
      DecodedSegment seg;
      const std::string err = decode_error(uncompressed_frame(r, 4, format::kFrameFileStart), &strings, &seg);
      if (err.empty()) {
        ++decoded;
        EXPECT_EQ(seg.events.size(), 4u);
      } else {
        ++failed;
      }
    }
  }
  EXPECT_EQ(decoded + failed, raw.size() * 8);
  EXPECT_GT(failed, 0u);
  EXPECT_GT(decoded, 0u);  // e.g. flips inside a timestamp or a string
}

TEST(SegmentDecoder, RejectsWrongEncodingFlagsAndSizes) {
  std::vector<uint8_t> frame = small_frame();
  auto h = format::parse_frame_header(frame, nullptr);
  ASSERT_TRUE(h);
  std::span<const uint8_t> payload = std::span<const uint8_t>(frame).subspan(format::kHeaderSize);
  std::vector<std::string> strings;
  DecodedSegment seg;
  std::string err;

  format::FrameHeader both = *h;
  both.flags |= format::kFrameUncompressed;
  EXPECT_FALSE(decode_segment(both, payload, strings, seg, &err));
  EXPECT_EQ(err, "unknown payload encoding");

  format::FrameHeader neither = *h;
  neither.flags &= ~format::kFrameZstd;
  EXPECT_FALSE(decode_segment(neither, payload, strings, seg, &err));
  EXPECT_EQ(err, "unknown payload encoding");

  format::FrameHeader big = *h;
  big.raw_size = format::kMaxPayload + 1;
  EXPECT_FALSE(decode_segment(big, payload, strings, seg, &err));
  EXPECT_EQ(err, "raw size too large");

  format::FrameHeader small = *h;
  small.raw_size -= 1;
  EXPECT_FALSE(decode_segment(small, payload, strings, seg, &err));
  EXPECT_FALSE(err.empty());

  EXPECT_FALSE(decode_segment(*h, payload.first(payload.size() - 1), strings, seg, &err));
  EXPECT_EQ(err, "truncated payload");
  EXPECT_TRUE(strings.empty());

  EXPECT_TRUE(decode_segment(*h, payload, strings, seg, &err)) << err;
}

}  // namespace
}  // namespace ringprof

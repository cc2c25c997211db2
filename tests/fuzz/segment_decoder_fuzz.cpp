// libFuzzer target for the segment decoder: the input is treated as a whole
// ringprof file. Frames are parsed in sequence and each is decoded with the
// file's string table, as a reader would; after a bad frame the walk skips
// one byte and looks for the next header (the reader's resynchronisation).
// The only requirement is that nothing crashes, leaks or reads out of bounds.
//
// Checksums stop almost every mutation at the door, so inputs starting with
// "RAW!" are instead wrapped, after those 4 bytes, as the payload of a
// correctly checksummed uncompressed frame: that drives the mutations into
// the FlatBuffers verifier and the column checks.
//
// Build: cmake -DRINGPROF_BUILD_FUZZ=ON -DCMAKE_CXX_COMPILER=clang++ ...
// Run:   ./segment_decoder_fuzz -max_len=65536 corpus/
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "ringprof/format.h"
#include "ringprof/segment_codec.h"

namespace {

void decode_raw_payload(const uint8_t* data, size_t size) {
  ringprof::format::FrameHeader header;
  header.flags = ringprof::format::kFrameUncompressed | ringprof::format::kFrameFileStart;
  header.stored_size = header.raw_size = static_cast<uint32_t>(size);
  header.payload_crc32 = ringprof::format::crc32({data, size});
  // Claim the event count the payload implies, so decoding goes all the way.
  for (uint32_t count : {0u, 1u, 2u, 4u, 6u, 12u}) {
    header.event_count = count;
    std::vector<std::string> strings;
    ringprof::DecodedSegment segment;
    std::string error;
    ringprof::decode_segment(header, {data, size}, strings, segment, &error);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size >= 4 && data[0] == 'R' && data[1] == 'A' && data[2] == 'W' && data[3] == '!') {
    if (size - 4 <= ringprof::format::kMaxPayload) decode_raw_payload(data + 4, size - 4);
    return 0;
  }
  const std::span<const uint8_t> file(data, size);
  std::vector<std::string> strings;
  size_t off = 0;
  while (off < size) {
    std::string error;
    const auto header = ringprof::format::parse_frame_header(file.subspan(off), &error);
    if (!header) {
      ++off;  // resynchronise on the next valid header
      continue;
    }
    const size_t body = off + header->header_size;
    if (body > size || size - body < header->stored_size) break;  // torn last frame
    ringprof::DecodedSegment segment;
    if (ringprof::decode_segment(*header, file.subspan(body, header->stored_size), strings, segment, &error)) {
      off = body + header->stored_size;
    } else {
      ++off;
    }
  }
  return 0;
}

// ringprof/format.h — the on-disk format of ringprof files (format version 1).
//
// A ringprof file (`*.rpf`, `*.rpf.part` while it is written) is a plain
// sequence of framed segments, nothing before the first and nothing between
// them. Each frame is a 64-byte header followed by `stored_size` payload bytes.
// All integers are little-endian.
//
//   offset size field
//   0      4    magic          "RPSG" (0x52 0x50 0x53 0x47)
//   4      2    version        format version; readers accept every version <= their own
//   6      2    header_size    64 for version 1; readers skip bytes they do not know
//   8      4    flags          kFrameZstd: payload is zstd-compressed
//                              kFrameFileStart: payload carries process, clock and
//                                every string/location/thread the file uses
//                              kFrameUncompressed: written raw (crash path)
//                              kFrameCrash: payload is a crash record (below),
//                                always with kFrameUncompressed
//   12     4    stored_size    payload bytes that follow the header
//   16     4    raw_size       payload bytes after decompression
//   20     4    event_count    events in the segment
//   24     8    sequence       per process, from 0, one per segment
//   32     8    first_ns       CLOCK_MONOTONIC ns of the earliest event (0: none)
//   40     8    last_ns        CLOCK_MONOTONIC ns of the latest event
//   48     4    pid            recording process
//   52     4    payload_crc32  zlib crc32 of the stored payload bytes
//   56     4    reserved       0
//   60     4    header_crc32   zlib crc32 of bytes 0..59
//
// The payload, once decompressed, is a FlatBuffers `ringprof.fb.Segment`
// (schemas/segment.fbs). A file decodes alone: its first segment carries the
// process identity and clock calibration, and every segment carries the
// strings, locations and thread names first used in that file.
//
// Crash segments. The fatal-signal handler cannot run FlatBuffers or zstd
// (they allocate), so it writes a payload of its own, flagged kFrameCrash |
// kFrameUncompressed, that the decoder turns into an ordinary DecodedSegment.
// Little-endian, packed, no padding:
//
//   u32 magic "RPCR" (0x52 0x50 0x43 0x52)   u32 crash format version (1)
//   i32 signal   i32 si_code   u32 faulting tid   u32 faulting thread index (0: never recorded)
//   u64 fault address (0 unless a fault)   u64 CLOCK_MONOTONIC ns of the crash
//   then records to the end of the payload, each opened by a u8 tag:
//     1 thread:   u32 index, u32 tid, u8 flags (1: name is a set_thread_name()
//                 the files may not hold yet), u16 length, name bytes
//     2 location: u32 id, u16 name length, u16 function length, u16 file
//                 length, u32 line, then the name, function and file bytes
//     3 event:    u8 kind, u32 thread index, u64 ts (CLOCK_MONOTONIC ns),
//                 u32 location id (0: none), u64 value (p1)
// A crash segment names its own locations, with ids from 0x80000000 up so
// they never collide with the process's ids (dense from 1); a record
// precedes the first event that uses it. It refers to no string table and
// carries events whether or not the file ever named them. Its last event is a
// ringprof.crash Mark (value = signal | tid << 32). Sample events are left
// out (their stacks live in the drainer's tables).
//
// Ownership: one writer (the drainer's sink) appends whole frames with a
// single write; a frame is never rewritten. A reader that finds a bad magic,
// header checksum, payload checksum or a short read reports the file and the
// offset and resynchronises on the next valid header.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>

namespace ringprof::format {

inline constexpr uint32_t kMagic = 0x47535052;  // "RPSG" little-endian
inline constexpr uint16_t kVersion = 1;
inline constexpr uint16_t kHeaderSize = 64;
inline constexpr uint32_t kMaxPayload = 256u << 20;  // refuse frames claiming more

inline constexpr uint32_t kFrameZstd = 1u << 0;
inline constexpr uint32_t kFrameFileStart = 1u << 1;
inline constexpr uint32_t kFrameUncompressed = 1u << 2;
inline constexpr uint32_t kFrameCrash = 1u << 3;

// Crash payloads (layout above).
inline constexpr uint32_t kCrashMagic = 0x52435052;  // "RPCR" little-endian
inline constexpr uint32_t kCrashVersion = 1;
inline constexpr uint32_t kCrashLocationBase = 0x80000000u;
inline constexpr uint8_t kCrashTagThread = 1;
inline constexpr uint8_t kCrashTagLocation = 2;
inline constexpr uint8_t kCrashTagEvent = 3;

inline constexpr const char* kFileSuffix = ".rpf";
inline constexpr const char* kPartSuffix = ".rpf.part";

struct FrameHeader {
  uint16_t version = kVersion;
  uint16_t header_size = kHeaderSize;
  uint32_t flags = 0;
  uint32_t stored_size = 0;
  uint32_t raw_size = 0;
  uint32_t event_count = 0;
  uint64_t sequence = 0;
  uint64_t first_ns = 0;
  uint64_t last_ns = 0;
  uint32_t pid = 0;
  uint32_t payload_crc32 = 0;
};

// Writes the 64-byte header (computing header_crc32) into `out`.
void write_frame_header(const FrameHeader& h, uint8_t out[kHeaderSize]) noexcept;

// Parses a header from at least kHeaderSize bytes. On failure returns nullopt
// and sets *error to a short reason ("bad magic", "header checksum mismatch",
// "unsupported version 7", ...).
std::optional<FrameHeader> parse_frame_header(std::span<const uint8_t> bytes, std::string* error);

uint32_t crc32(std::span<const uint8_t> bytes) noexcept;

}  // namespace ringprof::format

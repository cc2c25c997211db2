// crash_segment.h (internal) — writes a crash segment (layout in
// ringprof/format.h) from inside a fatal-signal handler, and decodes one.
//
// Writing runs the encoder twice over the same source: once to learn the
// payload's size, event count, time range and crc32 (the frame header comes
// first), then again to write header and payload through a fixed buffer. No
// allocation: the scratch (location table, output buffer) is allocated with
// the sink, long before any crash.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "ringprof/crash.h"
#include "ringprof/segment_codec.h"

namespace ringprof::crash_segment {

struct Scratch {
  static constexpr size_t kLocationSlots = 16384;  // power of two
  static constexpr size_t kBufferBytes = 64 * 1024;
  struct Entry {
    const void* key;
    uint32_t id;
  };
  Entry locations[kLocationSlots];
  uint8_t buffer[kBufferBytes];
};

// Appends one crash frame to `fd`. Async-signal-safe. False when a write failed.
bool write(int fd, const CrashInfo& info, const CrashEventSource& source, uint32_t pid, uint64_t sequence,
           Scratch& scratch) noexcept;

// Fills `out` (events, threads, locations, crash) from a crash payload.
bool decode(std::span<const uint8_t> payload, DecodedSegment& out, std::string* error);

}  // namespace ringprof::crash_segment

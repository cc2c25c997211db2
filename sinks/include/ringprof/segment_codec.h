// ringprof/segment_codec.h — encode a Batch into a framed segment, and decode
// it back. The only place that knows the payload layout; the rolling-file
// sink, the memory sink, the tools and the tests all go through it.
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <unordered_map>
#include <vector>

#include "ringprof/event.h"
#include "ringprof/format.h"
#include "ringprof/gpu.h"
#include "ringprof/sink.h"

namespace ringprof {

// Per-file encoding state: which strings, locations and thread names the
// current file already holds. Call start_file() for each new file.
class SegmentEncoder {
 public:
  // kStored: payloads stored as they are (kFrameUncompressed), without
  // making a zstd context: the crash file's start frame, prepared at every
  // session start and rarely written.
  static constexpr int kStored = -1000000;
  explicit SegmentEncoder(int zstd_level = 3);
  ~SegmentEncoder();
  SegmentEncoder(const SegmentEncoder&) = delete;
  SegmentEncoder& operator=(const SegmentEncoder&) = delete;

  // Forget what the current file holds; the next segment is a file start and
  // carries `session`.
  void start_file(const SessionInfo& session);
  // Appends one frame (header + payload) for `batch` to `out`. Returns the
  // frame's size. Does not change state until it succeeds; never throws on
  // well-formed input (out of memory aside).
  size_t encode(const Batch& batch, std::vector<uint8_t>& out);
  // Undo the state change of the last encode() (its frame was not stored):
  // strings, locations and thread names it introduced count as not written.
  void rollback_last();

 private:
  struct State;
  State* state_;
};

// ---- decoding ----

struct DecodedProcess {
  uint32_t pid = 0;
  std::string hostname;
  std::vector<std::string> command_line;
  uint64_t start_monotonic_ns = 0;
  uint64_t start_realtime_ns = 0;
  std::string ringprof_version;
};

struct DecodedThread {
  uint32_t index = 0;
  uint32_t tid = 0;
  std::string name;
  bool has_name = false;  // this segment (re)states the name
  uint64_t dropped_ring = 0;
  uint64_t dropped_io = 0;
  uint64_t samples_lost = 0;
};

struct DecodedEvent {
  uint64_t ts_ns = 0;       // CLOCK_MONOTONIC ns
  EventKind kind = EventKind::None;
  uint32_t thread_index = 0;
  uint32_t loc = 0;         // location id (stack id for Sample); 0 when the kind has none
  uint64_t value = 0;       // p1 (counter double bits, flow id, step number, Alloc/Free size)
  uint64_t address = 0;     // Alloc/Free: the block's address (p0); 0 for other kinds
};

struct DecodedSegment {
  format::FrameHeader header;
  std::optional<DecodedProcess> process;    // file start only
  std::optional<ClockCalibration> clock;    // file start only
  std::vector<std::pair<uint32_t, std::string>> strings;  // (string id, text) new in this file
  std::vector<Location> locations;          // new in this file; names resolved through strings
  std::vector<DecodedThread> threads;
  std::vector<DecodedEvent> events;
  std::vector<StackTrace> stacks;           // new in this file
  std::vector<ModuleInfo> modules;          // new in this file; paths resolved through strings
  std::optional<SamplerState> sampler;      // when this segment states it (version is 0)
  std::optional<RankInfo> rank;             // when this segment states it (version is 0)
  // GPU records (ringprof/gpu.h). A record's `name` indexes gpu_names (name - 1; 0 = none).
  std::vector<GpuActivity> gpu;
  std::vector<std::string> gpu_names;       // the names this segment's records use
  std::vector<GpuDevice> gpu_devices;       // new in this file
  std::optional<GpuStats> gpu_stats;        // when this segment states them (version is 0)
  uint64_t raw_bytes = 0;                   // payload after decompression
  std::optional<CrashInfo> crash;           // crash segments only (format.h, kFrameCrash)
};

// Decodes one frame's payload (the bytes after the header). `strings_so_far`
// holds the file's string table before this segment (index = string id); the
// decoder appends this segment's new strings to it and resolves location
// names through it. Returns false with *error set on a corrupt payload
// (checksum, decompression, FlatBuffers verification, column lengths).
bool decode_segment(const format::FrameHeader& header, std::span<const uint8_t> payload,
                    std::vector<std::string>& strings_so_far, DecodedSegment& out,
                    std::string* error);

}  // namespace ringprof

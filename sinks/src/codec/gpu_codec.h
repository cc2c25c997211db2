// gpu_codec.h (internal) — the GPU parts of a segment: encode a Batch's GPU
// records, devices and counters into the tables of schemas/gpu.fbs, and decode
// them back with the same validation as the CPU columns. segment_encoder.cpp
// and segment_decoder.cpp call in here through one hook each, so the layout of
// GPU data lives in this file pair alone.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <unordered_set>
#include <vector>

#include "ringprof/gpu.h"
#include "ringprof/segment_codec.h"
#include "ringprof/sink.h"
#include "segment_generated.h"

namespace ringprof::gpu_codec {

// What the current file holds already. Reset for each new file.
struct FileState {
  std::vector<uint32_t> name_strings;  // GPU name id - 1 -> file string id (0: not in this file yet)
  std::unordered_set<uint32_t> devices_written;
  std::optional<uint32_t> stats_version;
  void reset();
};

// What one encode() added to a FileState, so a lost frame can be undone and
// the next one restates its names, devices and counters.
struct Undo {
  std::vector<uint32_t> names;    // GPU name ids given a string id by this frame
  std::vector<uint32_t> devices;
  bool stats_changed = false;
  std::optional<uint32_t> stats_before;
  void apply(FileState& file) const;
};

struct Encoded {
  flatbuffers::Offset<fb::GpuActivities> activities;
  flatbuffers::Offset<flatbuffers::Vector<flatbuffers::Offset<fb::GpuDevice>>> devices;
  flatbuffers::Offset<fb::GpuStats> stats;
};

using Intern = std::function<uint32_t(const std::string&)>;

// Reused scratch columns: steady-state encoding does not allocate.
class Encoder {
 public:
  // Builds the GPU tables of `batch` in `fbb`, interning names through
  // `intern` (the file's string table). Call before the string vector is built.
  Encoded encode(const Batch& batch, uint64_t base_ns, bool file_start, FileState& file, Undo& undo,
                 const Intern& intern, flatbuffers::FlatBufferBuilder& fbb);

 private:
  std::vector<uint8_t> kinds_, subs_, mem_kinds_, start_, duration_, names_, places_, correlation_, tids_,
      bytes_, values_, launch_;
};

using Lookup = std::function<const std::string&(uint32_t)>;

// Fills out.gpu, out.gpu_names, out.gpu_devices and out.gpu_stats from
// `seg`. String ids must be below `table_size`; `lookup` resolves them.
// False with *error set on anything malformed.
bool decode(const fb::Segment& seg, uint64_t table_size, const Lookup& lookup, DecodedSegment& out,
            std::string* error);

}  // namespace ringprof::gpu_codec

// perfetto_trace_gpu.h (internal) — the GPU part of the Perfetto trace.
//
// Tracks, children of the process track unless said otherwise: one per
// device and stream ("GPU 0 stream 7") for kernels, copies and sets; one per
// context for host waits ("CUDA sync (context 1)"); one for CUPTI's
// overhead; under each host thread's track, "CUDA API" for its runtime and
// driver calls and "NVTX" for its ranges and marks; one counter track per
// device of bytes allocated. A launch flow (id pid << 32 | correlation id)
// runs from each API call that launches work to the work it launched.
//
// GPU records arrive whole (start and end), not in time order across
// records, and ranges on one track may overlap (NVTX start/end ranges, a
// driver call inside its runtime call). Perfetto's slices on one track must
// nest, so each track is split into lanes: a record goes on the first lane
// whose last record ended at or before it starts, and a lane past the first
// is its own track named "<track> #N" beside the first. Each segment's
// records are taken in start order, so records that merely arrive out of
// order do not open lanes.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "exporters/perfetto_packets.h"
#include "ringprof/tools/time_range.h"
#include "ringprof/tools/trace_reader.h"

namespace ringprof::internal {

class PerfettoGpuWriter {
 public:
  // The track of the host thread with kernel id `tid` (0 when the files
  // name no such thread; nothing when the thread filter leaves it out, and
  // its API calls and NVTX records with it).
  using ThreadTrack = std::function<std::optional<uint64_t>(uint32_t tid)>;
  PerfettoGpuWriter(PacketWriter& w, Sequence& seq, TimeRange range, uint64_t& next_uuid, uint64_t process_uuid,
                    ThreadTrack thread_track)
      : w_(w),
        seq_(seq),
        range_(range),
        next_uuid_(next_uuid),
        process_uuid_(process_uuid),
        thread_track_(std::move(thread_track)) {}

  void begin_process(const ProcessState& p) { process_ = &p; }
  void segment(const SegmentView& view);
  uint64_t written() const { return written_; }

 private:
  struct Lane {
    uint64_t uuid;
    uint64_t last_end;
  };
  struct Track {
    uint64_t parent = 0;
    std::string name;
    std::vector<Lane> lanes;
  };
  // The lane of `track` for a record [start, end].
  uint64_t lane(Track& track, uint64_t start, uint64_t end);
  Track& track(const std::string& key, uint64_t parent, const std::string& name);
  uint64_t new_track(uint64_t parent, const std::string& name, bool bytes_counter);
  // A record as a slice: begin (with its annotations, and a flow) and end.
  void slice(uint64_t track_uuid, const std::string& name, const char* category, uint64_t start, uint64_t end,
             std::string_view annotations, Interned& interned, uint64_t flow, bool terminating);
  const std::string& kernel_name(const std::string& raw);

  PacketWriter& w_;
  Sequence& seq_;
  TimeRange range_;
  uint64_t& next_uuid_;
  uint64_t process_uuid_;
  ThreadTrack thread_track_;
  const ProcessState* process_ = nullptr;
  std::unordered_map<std::string, Track> tracks_;
  std::map<uint32_t, std::pair<uint64_t, int64_t>> allocated_;  // device -> (counter track, bytes allocated)
  std::unordered_map<std::string, std::string> demangled_;
  uint64_t written_ = 0;
  std::vector<size_t> order_;  // this segment's records in start order
};

}  // namespace ringprof::internal

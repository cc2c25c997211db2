// ringprof/tools/trace_info.h — what `ringprof info` reports: the files, the
// processes and threads in them, the time range, events by kind, drops,
// stored versus decompressed bytes, and the damage found.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ringprof/event.h"
#include "ringprof/tools/trace_reader.h"

namespace ringprof {

struct ThreadSummary {
  uint32_t index = 0;
  uint32_t tid = 0;
  std::string name;
  uint64_t events = 0;
  uint64_t dropped_ring = 0;   // events
  uint64_t drop_gaps = 0;      // gaps the ring marked (ringprof/internal/ring.h); drops at the very end are in none
  uint64_t dropped_io = 0;
  uint64_t samples = 0;        // CPU stack samples
  uint64_t samples_lost = 0;   // samples the sampler reported lost
};

// An operational mark (window edge, trigger, level change, crash, signal).
struct MarkSummary {
  uint64_t ts_ns = 0;
  uint32_t tid = 0;
  std::string name;
  uint64_t value = 0;
};

struct ProcessSummary {
  uint32_t pid = 0;
  bool start_known = false;
  uint64_t start_monotonic_ns = 0;
  uint64_t start_realtime_ns = 0;
  std::string hostname;
  std::vector<std::string> command_line;
  std::string ringprof_version;
  std::optional<RankInfo> rank;     // its place in a distributed job, when the files state it
  std::vector<std::string> files;   // in read order
  uint64_t segments = 0;
  uint64_t events = 0;
  uint64_t first_ns = 0;            // 0: no events
  uint64_t last_ns = 0;
  std::vector<ThreadSummary> threads;  // by thread index
  std::optional<SamplerState> sampler; // how stacks were sampled (the latest stated)
  std::optional<SamplerState> sampler_running;  // the latest stated while it ran (hz > 0): stop() states hz 0
  uint64_t modules = 0;                // loaded modules the files list
  uint64_t stacks = 0;                 // distinct stacks
  std::vector<MarkSummary> marks;      // in file order, the first kMaxMarks
  uint64_t marks_total = 0;
  static constexpr size_t kMaxMarks = 200;
};

struct TraceInfo {
  std::vector<FileSummary> files;
  std::vector<ProcessSummary> processes;
  std::array<uint64_t, kEventKindCount> events_by_kind{};
  uint64_t events = 0;
  uint64_t segments = 0;           // intact
  uint64_t bad_segments = 0;       // corrupt stretches and rejected payloads
  uint64_t torn_tails = 0;         // `.part` files ending inside a frame
  uint64_t truncated_files = 0;    // sealed files ending inside a frame
  uint64_t dropped_ring = 0;
  uint64_t dropped_io = 0;
  uint64_t samples = 0;
  uint64_t samples_lost = 0;
  uint64_t stored_bytes = 0;       // intact frames as on disk
  uint64_t raw_bytes = 0;          // their payloads decompressed
  uint64_t first_ns = 0;           // over every process (0: no events)
  uint64_t last_ns = 0;
  std::vector<Problem> problems;

  // GPU activity (CUPTI), when the files hold any.
  uint64_t gpu_records = 0;
  std::array<uint64_t, kGpuKindCount> gpu_by_kind{};
  std::vector<std::pair<uint32_t, GpuDevice>> gpu_devices;  // (pid, device)
  GpuStats gpu_stats;              // summed over processes (each process's latest counts)
  bool gpu_stats_seen = false;     // some file states GPU counters (GPU tracing ran)
};

TraceInfo collect_info(TraceReader& reader);
std::string format_info(const TraceInfo& info);

// "rank 3 of 8 (local rank 1), job 4242 (from RANK)"; unknown parts left out.
std::string format_rank(const RankInfo& rank);

}  // namespace ringprof

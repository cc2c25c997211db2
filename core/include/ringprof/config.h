// ringprof/config.h — recording configuration, from code or the environment.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "ringprof/ops.h"

namespace ringprof {

enum class ClockChoice : uint8_t { Auto = 0, Tsc = 1, Monotonic = 2 };

// How CPU stacks are sampled (docs/sampling.md).
enum class SamplerChoice : uint8_t {
  Auto = 0,        // perf_signal where allowed, else the timer-signal fallback
  Perf = 1,        // perf_event: the kernel's call chains, frame pointers only (off when refused)
  Timer = 2,       // the timer-signal fallback only
  PerfSignal = 3,  // perf_signal only (off when refused)
};

// The largest RINGPROF_CLOCK_SKEW_NS either way (11.6 days): far past any real
// clock error, and far from wrapping a 64-bit nanosecond time.
inline constexpr int64_t kMaxClockSkewNs = 1000000000000000;

struct Config {
  // Rolling-file sink.
  std::string dir = "ringprof";              // RINGPROF_DIR
  uint64_t max_bytes = 256ull << 20;         // RINGPROF_MAX_BYTES: all files together
  uint64_t file_bytes = 16ull << 20;         // RINGPROF_FILE_BYTES: one file
  int zstd_level = 3;                        // RINGPROF_ZSTD_LEVEL (1..19)
  std::string sink = "file";                 // RINGPROF_SINK: file | null
  uint32_t io_retry_ms = 1000;               // RINGPROF_IO_RETRY_MS: after disk trouble, refuse batches this long

  // Recording path.
  uint32_t ring_bytes = 512u << 10;          // RINGPROF_RING_BYTES: per thread, at its first event
  uint32_t ring_max_bytes = 16u << 20;       // RINGPROF_RING_MAX_BYTES: a thread whose ring overflows gets a
                                             // 4x larger one, up to this (all grown rings together: 256 MiB)
  ClockChoice clock = ClockChoice::Auto;     // RINGPROF_CLOCK: auto | tsc | monotonic

  // The host as the files state it, for the tools' alignment of a job's
  // processes: they take processes with one hostname to share CLOCK_MONOTONIC,
  // and line up hosts by their wall clocks.
  std::string hostname;                      // RINGPROF_HOSTNAME: stated instead of gethostname() ("": that one);
                                             // for containers of one job on several machines that share a hostname
  int64_t clock_skew_ns = 0;                 // RINGPROF_CLOCK_SKEW_NS: added to every CLOCK_REALTIME reading stored
                                             // (±kMaxClockSkewNs), as if the wall clock were off: rehearses the
                                             // alignment of hosts with a job on one machine

  // Drainer.
  uint32_t drain_interval_ms = 10;           // RINGPROF_DRAIN_MS: first sleep after a round that found events
                                             // (a filling ring wakes it sooner; further rounds back off up to
                                             // 500 ms; 100 ms while a sampled application runs)
  uint32_t flush_interval_ms = 500;          // RINGPROF_FLUSH_MS: longest an event waits, from when it was recorded
  uint32_t batch_events = 65536;             // RINGPROF_BATCH_EVENTS: events per segment, at most
  uint32_t ring_drain_percent = 25;          // a ring this full wakes the drainer (its wake fill)

  bool flush_at_exit = true;                 // RINGPROF_FLUSH_AT_EXIT: stop() from exit()
  uint32_t stall_ms = 10000;                 // RINGPROF_STALL_MS: stop() and flush() give up on a writer
                                             // that writes nothing this long (a dead disk)

  // GPU activity through CUPTI; used by builds with CUPTI support only (docs/gpu.md).
  bool gpu = true;                           // RINGPROF_GPU: 0 leaves CUPTI alone
  // Set by RINGPROF_GPU=1: GPU tracing was asked for, so a machine without an
  // NVIDIA driver is warned about even when the process shows no sign of CUDA
  // (by default only a process that has CUDA loaded hears of a missing driver).
  bool gpu_requested = false;
  uint64_t cupti_buffer_bytes = 4ull << 20;  // RINGPROF_CUPTI_BUFFER_SIZE: one activity buffer
  uint32_t cupti_buffers = 8;                // RINGPROF_CUPTI_BUFFERS: most buffers CUPTI may hold at once
  std::string cupti_library;                 // RINGPROF_CUPTI_LIB: libcupti to load ("" searches)
  // CPU stack sampler.
  uint32_t sample_hz = 99;                   // RINGPROF_SAMPLE_HZ: samples per CPU second per thread; 0 = off
  uint32_t detailed_sample_hz = 999;         // RINGPROF_DETAILED_SAMPLE_HZ: the rate at the detailed level; 0 = sample_hz
  SamplerChoice sampler = SamplerChoice::Auto;  // RINGPROF_SAMPLER: auto | perf_signal | perf | timer
  // Heap sampler (ringprof/heap.h): mean bytes allocated between samples, a
  // Poisson process over the bytes, at every level; 0 = off.
  uint64_t heap_interval = 512ull << 10;     // RINGPROF_HEAP_INTERVAL
  OpsConfig ops;                             // levels, schedules, crash flush, fork (ringprof/ops.h)
};

// Reads RINGPROF_* variables over the defaults. A malformed value keeps the
// default and adds a one-line warning to `warnings` (when given) or prints it
// to stderr once; it never fails.
Config config_from_env(std::vector<std::string>* warnings = nullptr);
// The same from any source of RINGPROF_* values (see SettingLookup in ops.h).
Config config_from(const SettingLookup& lookup, std::vector<std::string>* warnings = nullptr);

// Parses "64M", "1G", "4096", "512K" (binary units). Returns false when malformed.
bool parse_byte_size(const std::string& text, uint64_t* out);

namespace internal {
// An on/off setting's text: 1, true, yes, on / 0, false, no, off. False for
// anything else (the caller warns once and keeps its default).
bool parse_switch(const char* text, bool* out) noexcept;
}  // namespace internal

}  // namespace ringprof

// ringprof/sink.h — what the drainer hands to a sink.
//
// The core knows nothing of files, compression or encodings. Its drainer
// thread collects events from the rings, resolves names into process-wide
// location ids, converts timestamps to CLOCK_MONOTONIC nanoseconds and hands
// each full Batch to its writer thread, which passes it to a Sink (so reading
// the rings never waits for a write). Sink calls happen one at a time (see
// class Sink), so a sink needs no locking of its own for them. Everything a
// Batch points to stays valid only for the duration of the call.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "ringprof/config.h"
#include "ringprof/crash.h"
#include "ringprof/event.h"
#include "ringprof/gpu.h"
#include "ringprof/rank.h"

namespace ringprof {

// Which clock produced the raw timestamps.
enum class ClockSource : uint8_t { Tsc = 1, Monotonic = 2 };

// Maps raw ticks to time. monotonic_ns = monotonic_base_ns +
// (ticks - tick_base) * 1e9 / ticks_per_second; realtime = monotonic +
// (realtime_base_ns - monotonic_base_ns). Stored in every file.
struct ClockCalibration {
  ClockSource source = ClockSource::Monotonic;
  double ticks_per_second = 1e9;
  uint64_t tick_base = 0;
  uint64_t monotonic_base_ns = 0;
  uint64_t realtime_base_ns = 0;
};

// Who is recording. Stored at the start of every file.
struct SessionInfo {
  uint32_t pid = 0;
  std::string hostname;
  std::vector<std::string> command_line;
  uint64_t start_monotonic_ns = 0;
  uint64_t start_realtime_ns = 0;
  ClockCalibration clock;
  std::string ringprof_version;
};

// What a location id names. Ids are dense, starting at 1; 0 means "no name".
struct Location {
  uint32_t id = 0;
  std::string name;
  std::string function;  // empty when unknown
  std::string file;      // empty when unknown
  uint32_t line = 0;
};

// A thread as the drainer knows it.
struct ThreadInfo {
  uint32_t index = 0;         // process-unique, dense from 1, never reused
  uint32_t tid = 0;           // the kernel's thread id
  std::string name;           // current name ("" when unnamed)
  uint32_t name_version = 0;  // bumped on every rename, so a sink can re-emit
  uint64_t dropped_ring = 0;  // events dropped on a full ring since the last written batch
  uint64_t dropped_io = 0;    // events lost with earlier batches the sink failed to write
  uint64_t samples_lost = 0;  // stack samples the sampler lost for this thread since the last written batch
};

// A call stack seen by the sampler, interned by the drainer. Ids are dense per
// process, from 1; Sample events carry the id in `loc`.
struct StackTrace {
  uint32_t id = 0;
  // Leaf first: frames[0] is the sampled instruction pointer, the rest are
  // return addresses (a symbolizer looks up `address - 1` for those). A frame
  // with kInterpreterFrameTag set is an interpreter (Python) frame instead:
  // the tag over the id of the Location that names it (function, file, line).
  std::vector<uint64_t> frames;
};

// No user-space address has bit 63 set.
inline constexpr uint64_t kInterpreterFrameTag = 1ull << 63;

// A loaded ELF object (the executable, a shared library, the vdso). Ids are
// dense per process, from 1; an object stays listed after dlclose, since
// earlier samples may point into it.
struct ModuleInfo {
  uint32_t id = 0;
  std::string path;        // as the loader reports it ("" → the main program's /proc/self/exe target)
  std::string build_id;    // GNU build ID, lowercase hex; "" when the object has none
  uint64_t base = 0;       // load bias: runtime address = base + ELF virtual address
  uint64_t start = 0;      // runtime address range of its executable segment(s)
  uint64_t end = 0;
  uint64_t file_offset = 0;  // file offset of the mapping that starts at `start`
};

// How stacks are being sampled, stated once per file and again on change.
struct SamplerState {
  std::string mechanism;   // "perf_event", "timer_signal" or "off"
  std::string detail;      // why: "RINGPROF_SAMPLE_HZ=0", "perf_event_open: EACCES (perf_event_paranoid=3)", …
  uint32_t hz = 0;         // samples per second of CPU time per thread now (0 when off, or paused at level off)
  uint32_t version = 0;    // bumped on every change, so a sink knows to re-state it
};

// A contiguous run of one thread's events inside Batch::events, in the order
// the thread recorded them.
struct EventRun {
  uint32_t thread_index = 0;
  uint32_t begin = 0;
  uint32_t count = 0;
};

struct Batch {
  uint64_t sequence = 0;              // per process, from 0, one per batch
  std::span<const Event> events;      // ts in monotonic ns, loc resolved, no Continuation/ThreadName;
                                      // Alloc/Free keep their address in p0
  std::span<const EventRun> runs;     // cover `events` exactly
  std::span<const ThreadInfo> threads;  // every thread named by runs, and every thread with drops
  std::span<const Location> locations;  // every location known so far; locations[id - 1].id == id
  std::span<const StackTrace> stacks;   // every stack known so far; stacks[id - 1].id == id
  std::span<const ModuleInfo> modules;  // every module known so far; modules[id - 1].id == id
  const SamplerState* sampler = nullptr;  // null when no sampler has run in this session
  const RankInfo* rank = nullptr;         // null when the process's rank is not known
  // GPU activity (CUPTI; see ringprof/gpu.h). Empty, and gpu_stats null, when no GPU source runs.
  std::span<const GpuActivity> gpu;        // this batch's records, times within first_ns..last_ns
  std::span<const std::string> gpu_names;  // every GPU name known so far; gpu_names[id - 1]
  std::span<const GpuDevice> gpu_devices;  // every device seen so far
  const GpuStats* gpu_stats = nullptr;
  uint64_t first_ns = 0;              // earliest and latest event time (0 when empty)
  uint64_t last_ns = 0;
};

// Sets b.first_ns/last_ns to the earliest and latest event time (0 and 0 when
// there are none), whatever order the runs put the events in. For batches
// built outside the drainer (re-framed extracts, tests), which tracks its own.
inline void set_time_range(Batch& b) noexcept {
  b.first_ns = b.last_ns = 0;
  if (b.events.empty()) return;
  b.first_ns = b.last_ns = b.events.front().ts;
  for (const Event& e : b.events) {
    if (e.ts < b.first_ns) b.first_ns = e.ts;
    if (e.ts > b.last_ns) b.last_ns = e.ts;
  }
}

// Counters a sink keeps about its own trouble, reported by ringprof info.
struct SinkStats {
  uint64_t batches_written = 0;
  uint64_t batches_failed = 0;
  uint64_t bytes_written = 0;
  uint64_t files_sealed = 0;
  uint64_t files_deleted = 0;
};

// An on-demand window asked for from outside the process (`ringprof trigger`).
struct TriggerRequest {
  uint64_t steps = 0;        // close after this many step() calls (0: not by steps)
  uint64_t duration_ns = 0;  // close after this long (0: not by time)
};

// Where drained batches go. begin_session() and end_session() are called on
// the drainer thread, everything between them on the writer thread
// ("ringprof-write"); write_crash() is the one exception (see there).
class Sink {
 public:
  virtual ~Sink() = default;
  // Once, before the first write of a recording session.
  virtual void begin_session(const SessionInfo& session) = 0;
  // Stores a batch. Returns false when the batch is lost (disk trouble, say);
  // the drainer then counts its events as dropped and reports them with a
  // later batch. Must never throw, block for long or abort the process.
  virtual bool write(const Batch& batch) = 0;
  // Make what was written so far durable and visible (flush() and stop()).
  virtual void flush() {}
  // Once, after the last write: seal and close.
  virtual void end_session() = 0;
  virtual SinkStats stats() const { return {}; }

  // ---- optional: operations (ringprof/ops.h) ----

  // Asked on the writer thread about every OpsConfig::trigger_poll_ms: a
  // trigger request that arrived (the rolling-file sink reads a control file
  // in its directory). At most one per call.
  virtual bool poll_trigger(TriggerRequest*) { return false; }
  // The window a request opened, so the requester can be told its id.
  virtual void acknowledge_trigger(uint64_t /*window_id*/) {}
  // A descriptor that turns readable when a request may have arrived (the
  // rolling-file sink: an inotify watch on its directory; poll_trigger()
  // reads it empty), so an idle writer sleeps on it instead of asking
  // poll_trigger() every second. -1: none, ask on a timer. Writer thread.
  virtual int trigger_wait_fd() { return -1; }

  // Called inside a fatal-signal handler, with the writer thread held between
  // two calls (or the writer crashed itself) and the drainer parked (unless it
  // crashed, or did not reach a safe point within 1 s): store
  // what `events` holds as one final segment. Must be async-signal-safe (no
  // allocation, no lock, no stdio; write(2) into what was prepared earlier).
  // Returns false when nothing could be stored.
  virtual bool write_crash(const CrashInfo&, const CrashEventSource&) noexcept { return false; }
};

// Starts recording into a sink of the caller's (tests, benchmarks,
// embedding). Returns false, after one warning, when recording could not
// start (already on, no memory); the application carries on either way.
bool start(const Config& config, std::shared_ptr<Sink> sink);

}  // namespace ringprof

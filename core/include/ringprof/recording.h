// ringprof/recording.h — the recording API: stop and flush, zones, instants,
// counters, flows, steps and thread names. Include ringprof/ringprof.h, which
// adds start() (ringprof/session.h), the detail-level zones and memory events.
//
//   ringprof::start();                       // config from RINGPROF_* variables
//   void forward() { RINGPROF_ZONE("forward"); ... }
//   RINGPROF_COUNTER("queue_depth", q.size());
//   ringprof::step();
//   ringprof::stop();                        // optional: exit() flushes too
//
// Every call is a cheap no-op while recording is off. While it is on, an event
// costs one clock read and one 32-byte store into the calling thread's own
// ring: no lock, no system call, no allocation (after the thread's first
// event, which creates its ring), and never an exception.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ringprof/internal/emit.h"
#include "ringprof/ringprof_c.h"

namespace ringprof {

// start() and start(config) are in ringprof/session.h (they pick a sink);
// start(config, sink), for a sink of the caller's, is in ringprof/sink.h.

// Drains every ring, writes and seals everything, stops the drainer. Events
// recorded concurrently with stop() may be lost; events recorded before it
// returns are all written or counted as dropped.
void stop();
// Writes everything recorded so far and makes it visible, then returns.
void flush();
bool is_recording() noexcept;

// CUPTI, through which ringprof traces the GPU, serves one client at a time:
// a second one (torch.profiler with CUDA activities, an Nsight capture)
// replaces ringprof's buffer callbacks, swallows the records ringprof still
// had in CUPTI and turns ringprof's kinds off when it stops. Before such a
// client starts in this process, call gpu_hand_over("its name"): ringprof
// takes back its buffers, turns its GPU tracing off, warns once and marks the
// gap (mark ringprof.gpu.handed_over); after the client has stopped,
// gpu_take_back("its name") turns it on again (ringprof.gpu.taken_back).
// ringprof.torch does both around torch.profiler. Each returns false when
// there was nothing to do (no GPU tracing, or not handed over).
bool gpu_hand_over(const char* client) noexcept;
bool gpu_take_back(const char* client) noexcept;

// One thread's losses in a session, in events (see RecorderStats).
struct ThreadDrops {
  uint32_t tid = 0;
  std::string name;               // the thread's name when it last lost events
  uint64_t dropped_ring = 0;      // events lost on its full ring
  uint64_t dropped_io = 0;        // its events lost with batches the sink could not write
};

struct RecorderStats {
  uint64_t events_written = 0;    // handed to the sink and accepted
  uint64_t dropped_ring = 0;      // events lost on full rings (a refused zone begin counts 2: its end is not recorded either)
  uint64_t dropped_io = 0;        // lost with batches the sink could not write
  uint64_t batches = 0;
  uint64_t threads_seen = 0;
  uint64_t rings_live = 0;        // rings not yet reclaimed
  // CPU stack sampler (0 while it is off). After stop(), and whenever every
  // batch was written: samples_taken = samples_written + samples_lost.
  uint64_t samples_taken = 0;     // stack samples the sampler took
  uint64_t samples_written = 0;   // Sample events handed to the sink and accepted (not in events_written)
  uint64_t samples_lost = 0;      // lost: full sample rings, PERF_RECORD_LOST, stack table full, failed writes
  // Time the sample handler ran on the sampled threads (perf_signal and
  // timer_signal: unwinding, interpreter frames, the sample ring), summed;
  // signal delivery itself is the kernel's and not in it.
  uint64_t sample_handler_ns = 0;
  // Every thread that lost events this session, in the order of its first
  // loss; the sums of its columns are dropped_ring and dropped_io.
  std::vector<ThreadDrops> thread_drops;
  // ringprof's own CPU time this session: the drainer thread (reading rings)
  // and the writer thread (encoding, compressing, writing). Final after stop().
  uint64_t drainer_cpu_ns = 0;
  uint64_t writer_cpu_ns = 0;
};
RecorderStats recorder_stats();


// Zones. A zone's name must be a SourceLocation with static storage (the
// macros make one) or a run-time string (copied). zone_begin() returns false
// when the zone is not recorded (recording off, or a full ring, which counts
// the begin and its end as two dropped events): call zone_end() only after a
// zone_begin() that returned true, as Zone does.
RINGPROF_HOT bool zone_begin(const SourceLocation* loc) noexcept {
  return internal::emit(EventKind::ZoneBegin, NameRef::SourceLocation,
                      reinterpret_cast<uintptr_t>(loc), 0);
}
inline bool zone_begin(std::string_view runtime_name) noexcept {
  return internal::emit_inline(EventKind::ZoneBegin, runtime_name, 0);
}
// A zone named by a string with static storage duration and no call site:
// for names that come from a registry (the Python package's interned names,
// PyTorch's operator names). The drainer interns it by its address.
RINGPROF_HOT bool zone_begin_static(const char* static_name) noexcept {
  return internal::emit(EventKind::ZoneBegin, NameRef::StaticString, reinterpret_cast<uintptr_t>(static_name), 0);
}
RINGPROF_HOT void zone_end() noexcept { internal::emit(EventKind::ZoneEnd, NameRef::None, 0, 0); }

// Ends the zone when it leaves scope; records nothing when recording was off
// at its start.
class Zone {
 public:
  RINGPROF_HOT explicit Zone(const SourceLocation* loc) noexcept : active_(zone_begin(loc)) {}
  explicit Zone(std::string_view runtime_name) noexcept : active_(zone_begin(runtime_name)) {}
  RINGPROF_HOT ~Zone() {
    if (active_) zone_end();
  }
  Zone(const Zone&) = delete;
  Zone& operator=(const Zone&) = delete;

 private:
  bool active_;
};

// Zone arguments: a key and a value attached to the calling thread's innermost
// open zone (input shapes, a batch size, a model name). The tools show them in
// the Chrome and Perfetto traces' args and split `ringprof table
// --group-by-args` rows by them. The key must have static storage (a
// literal); the value is copied, cut to kMaxInlineName bytes, and interned
// once per distinct text by the drainer, so values with a bounded set of texts
// (shapes, types) cost one name each. Values share the drainer's budget of
// run-time names (about a million per process; past it they read "<too many
// names>"): a value unique to each call (a request id) would use it up. An argument with no zone open is kept in the files and
// ignored by the tools.
inline void zone_arg(const char* static_key, std::string_view value) noexcept {
  internal::emit_inline(EventKind::ZoneArg, value, reinterpret_cast<uintptr_t>(static_key));
}
void zone_arg(const char* static_key, int64_t value) noexcept;  // written in decimal

// Marks the innermost open zone as a collective operation: a zone argument
// with this key and the group's name as its value. The tools line up the
// clocks of a job's ranks by these zones and find the stragglers that the
// others waited for, so the zone's end must coincide across the ranks of
// `group` that take part: a synchronous collective (gloo, MPI, a barrier),
// NOT an NCCL launch, whose CPU side returns before the GPU has finished.
// `group` names the communicator, so that the tools match the calls of one
// group only (a tensor-parallel group's all-reduce with its own ranks').
inline constexpr const char* kCollectiveArgKey = "collective";
inline void mark_collective(std::string_view group = "world") noexcept { zone_arg(kCollectiveArgKey, group); }

// Instant events: a point in time on the calling thread.
inline void instant(const SourceLocation* loc) noexcept {
  internal::emit(EventKind::Instant, NameRef::SourceLocation, reinterpret_cast<uintptr_t>(loc), 0);
}
inline void instant(std::string_view runtime_name) noexcept {
  internal::emit_inline(EventKind::Instant, runtime_name, 0);
}

// Counters: a named numeric track. `static_name` must outlive recording (a
// string literal); use the string_view overload for names built at run time.
inline void counter(const char* static_name, double value) noexcept {
  internal::emit(EventKind::Counter, NameRef::StaticString, reinterpret_cast<uintptr_t>(static_name),
               double_bits(value));
}
inline void counter(std::string_view runtime_name, double value) noexcept {
  internal::emit_inline(EventKind::Counter, runtime_name, double_bits(value));
}

// Flows link an event on one thread to events on others (a request handed
// from a producer to a worker, say). Each lands inside the zone open on its
// thread at that moment. `static_name` names the arrow ("flow" when null).
inline void flow_begin(uint64_t id, const char* static_name = nullptr) noexcept {
  internal::emit(EventKind::FlowBegin, static_name ? NameRef::StaticString : NameRef::None,
               reinterpret_cast<uintptr_t>(static_name), id);
}
inline void flow_step(uint64_t id) noexcept { internal::emit(EventKind::FlowStep, NameRef::None, 0, id); }
inline void flow_end(uint64_t id) noexcept { internal::emit(EventKind::FlowEnd, NameRef::None, 0, id); }

// Async spans: an operation that begins on one thread and may end on
// another (a request handed to a worker pool, a collective whose work
// completes on the backend's thread, a future). They do not nest with the
// zones of either thread: the tools pair begin and end by `id`, show the
// span on its own track (an async slice in Chrome and Perfetto traces) and
// count it in `table` as a zone of its own. `id` must be unique among the
// process's spans open at the same time: new_async_id() gives one. Zone
// arguments recorded right after async_begin() on the same thread belong to
// the span. Returns false when nothing was recorded (then skip the end).
inline bool async_begin(uint64_t id, const char* static_name) noexcept {
  return internal::emit(EventKind::AsyncBegin, NameRef::StaticString, reinterpret_cast<uintptr_t>(static_name), id);
}
inline bool async_begin(uint64_t id, std::string_view runtime_name) noexcept {
  return internal::emit_inline(EventKind::AsyncBegin, runtime_name, id);
}
inline void async_end(uint64_t id) noexcept { internal::emit(EventKind::AsyncEnd, NameRef::None, 0, id); }
// A process-unique span id (from 1; a counter, never reused in a process).
uint64_t new_async_id() noexcept;

// Names the calling thread in the trace (the name is copied).
void set_thread_name(std::string_view name) noexcept;

// Marks an iteration boundary (a training step, a frame). step() numbers
// steps 0, 1, 2… process-wide; step(n) records the caller's own number.
uint64_t step() noexcept;
void step(uint64_t number) noexcept;  // also drives schedules (ringprof/ops.h)

}  // namespace ringprof

#define RINGPROF_CONCAT_INNER(a, b) a##b
#define RINGPROF_CONCAT(a, b) RINGPROF_CONCAT_INNER(a, b)

// A zone from here to the end of the scope. `name` must be a string literal.
#define RINGPROF_ZONE(name)                                                                  \
  static constexpr ::ringprof::SourceLocation RINGPROF_CONCAT(ringprof_loc_, __LINE__){      \
      name, __func__, __FILE__, static_cast<uint32_t>(__LINE__)};                            \
  ::ringprof::Zone RINGPROF_CONCAT(ringprof_zone_, __LINE__)(&RINGPROF_CONCAT(ringprof_loc_, __LINE__))

// An instant event with a literal name, its call site recorded.
#define RINGPROF_INSTANT(name)                                                               \
  do {                                                                                       \
    static constexpr ::ringprof::SourceLocation ringprof_instant_loc{                        \
        name, __func__, __FILE__, static_cast<uint32_t>(__LINE__)};                          \
    ::ringprof::instant(&ringprof_instant_loc);                                              \
  } while (0)

#define RINGPROF_COUNTER(name, value) ::ringprof::counter(name, static_cast<double>(value))

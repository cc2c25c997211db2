// crash_state.h (internal) — what the fatal-signal handler may look at, kept
// in fixed-size, statically allocated places so it can be read without a
// lock or an allocation:
//
//   - the live rings: an array of Ring pointers. A thread adds its ring when
//     it creates it (attach_thread); Ring::release takes it out before the
//     memory is freed, and frees nothing once a crash has begun (the process
//     is dying; a ring the handler is reading must not vanish under it). The
//     two sides order themselves with sequentially consistent operations:
//     the handler sets `crashing` before reading the array, release clears
//     its slot before checking `crashing`, so one of them always sees the other.
//   - the names set by set_thread_name(), copied per ring slot by the drainer;
//   - the clock mapping (ticks → ns), under a sequence lock the drainer bumps;
//   - the sink of the running session, the session id and the drainer's tid;
//   - the drainer's handshake: at a safe point (nothing half-built, no sink
//     write in progress) the drainer sees `crashing`, publishes its unwritten
//     batch and parks until the handler lets it go (which only happens when
//     a previous handler recovered from the signal).
#pragma once

#include <sys/types.h>

#include <atomic>
#include <cstddef>
#include <cstdint>

#include "ringprof/internal/ring.h"
#include "ringprof/sink.h"

namespace ringprof::crash {

inline constexpr size_t kMaxRings = 4096;
inline constexpr size_t kMaxThreadName = 64;

struct RingSlot {
  std::atomic<Ring*> ring{nullptr};
  std::atomic<uint32_t> name_len{0};  // 0: no rename seen by the drainer
  char name[kMaxThreadName] = {};
};

// CLOCK_MONOTONIC in milliseconds (async-signal-safe): the handler's waits
// are deadlines by the clock.
uint64_t now_ms() noexcept;

// ---- rings ----
void register_ring(Ring* r) noexcept;
// Removes `r`; false when it must not be freed (a crash is being handled).
bool unregister_ring(Ring* r) noexcept;
void note_thread_name(const Ring* r, const char* name, size_t len) noexcept;
RingSlot* ring_slots() noexcept;  // kMaxRings entries

// ---- clock ----
struct ClockMap {
  bool tsc = false;
  uint64_t tick_base = 0;
  uint64_t mono_base = 0;
  uint64_t mult = 0;  // ns per tick, 32.32 fixed point
  uint64_t to_ns(uint64_t ticks) const noexcept;
};
void publish_clock(const ClockCalibration& c) noexcept;
ClockMap read_clock() noexcept;

// ---- session ----
// start() says a session is coming: a crash before its drainer has begun
// (the first milliseconds) waits for it a little rather than lose everything.
void expect_session(bool coming = true) noexcept;
bool session_expected() noexcept;
void publish_session(Sink* sink, uint32_t session, pid_t drainer_tid) noexcept;
void clear_session() noexcept;
Sink* current_sink() noexcept;
uint32_t current_session() noexcept;
pid_t drainer_tid() noexcept;

// ---- drainer handshake ----
// Called by the drainer at safe points with its unwritten batch. Returns
// immediately when no crash is being handled. Otherwise parks until the
// handler is done and returns true when the handler stored that batch (the
// drainer must then drop it rather than write it twice).
bool park_point(const Event* events, size_t n_events, const EventRun* runs, size_t n_runs) noexcept;

struct PendingBatch {
  const Event* events = nullptr;
  size_t n_events = 0;
  const EventRun* runs = nullptr;
  size_t n_runs = 0;
};
// Handler side.
void begin_crash() noexcept;                        // sets `crashing`
bool wait_for_park(int max_ms, PendingBatch* out) noexcept;
void end_crash(bool batch_stored) noexcept;         // lets a parked drainer go
bool crashing() noexcept;

// ---- writer handshake (draining/batch_writer.h) ----
// The writer thread makes every sink call of a session. Each writer owns one
// of these and publishes it while it runs. It calls writer_begin_work()
// before touching the sink (false: the handler holds the sink or wants it,
// so it sleeps in writer_wait() and tries again) and writer_end_work()
// after. The drainer counts each job it queues in `backlog` and the writer
// counts it out once processed. The handler, once the drainer has parked (no
// job comes after that), waits for the backlog to empty, so batches already
// queued are written as usual, then asks for the sink and holds it while it
// writes the crash segment into the same file.
struct WriterHandshake {
  std::atomic<uint32_t> state{0};  // 0 idle, 1 in a sink call, 2 held by the handler
  std::atomic<bool> hold_requested{false};
  std::atomic<pid_t> tid{0};
  std::atomic<int64_t> backlog{0};
};
void publish_writer(WriterHandshake* w) noexcept;
void unpublish_writer(WriterHandshake* w) noexcept;  // only if it is still the published one
bool writer_begin_work(WriterHandshake& w) noexcept;
void writer_end_work(WriterHandshake& w) noexcept;
void writer_wait(WriterHandshake& w) noexcept;
// Handler side. The published writer's thread (0: none, or not started).
pid_t writer_tid() noexcept;
// With `queue_closed` (no job can come: the drainer parked, or it is the
// thread that crashed), first waits for the backlog to empty while the
// writer makes progress (it moved within `stall_ms`, for `max_backlog_ms` at
// most), then waits at most `stall_ms` for the writer's current call to end.
// True when the writer is held (or none is published): the sink is the
// handler's until release_writer(). False leaves the writer free to go on.
bool hold_writer(int stall_ms, int max_backlog_ms, bool queue_closed) noexcept;
void release_writer() noexcept;

// In a forked child: nothing of the parent's (rings, sink, handshake).
void reset_after_fork() noexcept;

// ---- signal handlers (crash_handler.cpp) ----
// Installs the fatal-signal handlers (once per process) and, when the
// application has none of its own, the SIGTERM/SIGINT ones.
void install_handlers(bool crash_flush, bool signal_flush) noexcept;
// SIGTERM/SIGINT seen: the drainer flushes through the normal path, then
// termination_finish() re-raises the signal with its default action.
int termination_signal() noexcept;
void termination_finish() noexcept;

}  // namespace ringprof::crash

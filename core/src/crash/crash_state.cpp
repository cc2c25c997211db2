// The fixed, statically allocated state the fatal-signal handler reads; see
// crash_state.h for who writes what and how the handler and the drainer
// agree on when the drainer's batch may be read.
#include "crash/crash_state.h"
#include "recording/clock.h"

#include <time.h>

#include <cstring>

namespace ringprof::crash {
namespace {

constinit RingSlot g_rings[kMaxRings];
constinit std::atomic<bool> g_crashing{false};

constinit std::atomic<uint32_t> g_clock_seq{0};
constinit std::atomic<uint64_t> g_clock_tsc{0}, g_clock_tick_base{0}, g_clock_mono_base{0}, g_clock_mult{0};

constinit std::atomic<Sink*> g_sink{nullptr};
constinit std::atomic<uint32_t> g_session{0};
constinit std::atomic<pid_t> g_drainer_tid{0};
constinit std::atomic<bool> g_session_expected{false};

constinit std::atomic<bool> g_parked{false};
constinit std::atomic<bool> g_batch_stored{false};
constinit std::atomic<const Event*> g_pending_events{nullptr};
constinit std::atomic<size_t> g_pending_n{0};
constinit std::atomic<const EventRun*> g_pending_runs{nullptr};
constinit std::atomic<size_t> g_pending_runs_n{0};

// The writer: idle (between sink calls), busy (in one), or held by the handler.
enum : uint32_t { kWriterIdle = 0, kWriterBusy = 1, kWriterHeld = 2 };
constinit std::atomic<WriterHandshake*> g_writer{nullptr};

void sleep_ms(int ms) noexcept {
  timespec ts{0, ms * 1000000L};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

}  // namespace

uint64_t now_ms() noexcept {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<uint64_t>(ts.tv_sec) * 1000u + static_cast<uint64_t>(ts.tv_nsec) / 1000000u;
}

RingSlot* ring_slots() noexcept { return g_rings; }

void register_ring(Ring* r) noexcept {
  for (size_t i = 0; i < kMaxRings; ++i) {
    RingSlot& s = g_rings[i];
    Ring* expected = nullptr;
    if (s.ring.load(std::memory_order_relaxed) == nullptr &&
        s.ring.compare_exchange_strong(expected, r, std::memory_order_seq_cst)) {
      s.name_len.store(0, std::memory_order_relaxed);
      // Remembered in the ring, so leaving the table costs no search of it
      // (320 KiB: a search touched every page, for rings never in it too).
      r->crash_slot = static_cast<uint32_t>(i + 1);
      return;
    }
  }
  // Full: this ring's events are written normally but missed by a crash flush.
}

bool unregister_ring(Ring* r) noexcept {
  if (r->crash_slot != 0) {
    RingSlot& s = g_rings[r->crash_slot - 1];
    if (s.ring.load(std::memory_order_relaxed) == r) s.ring.store(nullptr, std::memory_order_seq_cst);
  }
  return !g_crashing.load(std::memory_order_seq_cst);
}

void note_thread_name(const Ring* r, const char* name, size_t len) noexcept {
  if (r->crash_slot == 0) return;
  RingSlot& s = g_rings[r->crash_slot - 1];
  if (s.ring.load(std::memory_order_relaxed) != r) return;
  if (len > kMaxThreadName) len = kMaxThreadName;
  std::memcpy(s.name, name, len);
  s.name_len.store(static_cast<uint32_t>(len), std::memory_order_release);
}

uint64_t ClockMap::to_ns(uint64_t ticks) const noexcept {
  if (!tsc) return ticks;
  return map_ticks_to_ns(ticks, tick_base, mono_base, mult);
}

void publish_clock(const ClockCalibration& c) noexcept {
  g_clock_seq.fetch_add(1, std::memory_order_acq_rel);  // odd: being written
  g_clock_tsc.store(c.source == ClockSource::Tsc, std::memory_order_relaxed);
  g_clock_tick_base.store(c.tick_base, std::memory_order_relaxed);
  g_clock_mono_base.store(c.monotonic_base_ns, std::memory_order_relaxed);
  const double mult = c.ticks_per_second > 0 ? 1e9 / c.ticks_per_second * 4294967296.0 : 4294967296.0;
  g_clock_mult.store(static_cast<uint64_t>(mult), std::memory_order_relaxed);
  g_clock_seq.fetch_add(1, std::memory_order_release);
}

ClockMap read_clock() noexcept {
  ClockMap m;
  for (int attempt = 0; attempt < 1000; ++attempt) {
    const uint32_t before = g_clock_seq.load(std::memory_order_acquire);
    if (before & 1) continue;
    m.tsc = g_clock_tsc.load(std::memory_order_relaxed) != 0;
    m.tick_base = g_clock_tick_base.load(std::memory_order_relaxed);
    m.mono_base = g_clock_mono_base.load(std::memory_order_relaxed);
    m.mult = g_clock_mult.load(std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_acquire);
    if (g_clock_seq.load(std::memory_order_relaxed) == before) break;
  }
  return m;
}

void expect_session(bool coming) noexcept { g_session_expected.store(coming, std::memory_order_release); }
bool session_expected() noexcept { return g_session_expected.load(std::memory_order_acquire); }

void publish_session(Sink* sink, uint32_t session, pid_t drainer) noexcept {
  g_session_expected.store(false, std::memory_order_release);
  g_session.store(session, std::memory_order_relaxed);
  g_drainer_tid.store(drainer, std::memory_order_relaxed);
  g_sink.store(sink, std::memory_order_release);
}

void clear_session() noexcept {
  g_session_expected.store(false, std::memory_order_release);
  g_sink.store(nullptr, std::memory_order_release);
  g_session.store(0, std::memory_order_relaxed);
  g_drainer_tid.store(0, std::memory_order_relaxed);
}

Sink* current_sink() noexcept { return g_sink.load(std::memory_order_acquire); }
uint32_t current_session() noexcept { return g_session.load(std::memory_order_relaxed); }
pid_t drainer_tid() noexcept { return g_drainer_tid.load(std::memory_order_relaxed); }

bool park_point(const Event* events, size_t n_events, const EventRun* runs, size_t n_runs) noexcept {
  if (!g_crashing.load(std::memory_order_acquire)) return false;
  g_pending_events.store(events, std::memory_order_relaxed);
  g_pending_n.store(n_events, std::memory_order_relaxed);
  g_pending_runs.store(runs, std::memory_order_relaxed);
  g_pending_runs_n.store(n_runs, std::memory_order_relaxed);
  g_parked.store(true, std::memory_order_release);
  while (g_crashing.load(std::memory_order_acquire)) sleep_ms(1);
  g_parked.store(false, std::memory_order_release);
  return g_batch_stored.exchange(false, std::memory_order_acq_rel);
}

void begin_crash() noexcept {
  g_batch_stored.store(false, std::memory_order_relaxed);
  g_crashing.store(true, std::memory_order_seq_cst);
}

bool wait_for_park(int max_ms, PendingBatch* out) noexcept {
  // Deadlines by the clock, not by counting sleeps: on a loaded machine a
  // 1 ms sleep may take far longer.
  for (const uint64_t deadline = now_ms() + static_cast<uint64_t>(max_ms);;) {
    if (g_parked.load(std::memory_order_acquire)) {
      out->events = g_pending_events.load(std::memory_order_relaxed);
      out->n_events = g_pending_n.load(std::memory_order_relaxed);
      out->runs = g_pending_runs.load(std::memory_order_relaxed);
      out->n_runs = g_pending_runs_n.load(std::memory_order_relaxed);
      return true;
    }
    if (now_ms() > deadline) return false;
    sleep_ms(1);
  }
}

void end_crash(bool batch_stored) noexcept {
  g_batch_stored.store(batch_stored, std::memory_order_relaxed);
  g_crashing.store(false, std::memory_order_seq_cst);
}

void publish_writer(WriterHandshake* w) noexcept { g_writer.store(w, std::memory_order_seq_cst); }

void unpublish_writer(WriterHandshake* w) noexcept {
  WriterHandshake* expected = w;
  g_writer.compare_exchange_strong(expected, nullptr, std::memory_order_seq_cst);
}

bool writer_begin_work(WriterHandshake& w) noexcept {
  uint32_t expected = kWriterIdle;
  if (!w.state.compare_exchange_strong(expected, kWriterBusy, std::memory_order_seq_cst)) return false;
  // The handler asked for the sink: leave it alone. (It sets the request
  // before it tries to hold, so either it sees this thread busy or this
  // thread sees the request.)
  if (w.hold_requested.load(std::memory_order_seq_cst)) {
    w.state.store(kWriterIdle, std::memory_order_seq_cst);
    return false;
  }
  return true;
}

void writer_end_work(WriterHandshake& w) noexcept { w.state.store(kWriterIdle, std::memory_order_seq_cst); }

void writer_wait(WriterHandshake&) noexcept { sleep_ms(1); }

pid_t writer_tid() noexcept {
  WriterHandshake* w = g_writer.load(std::memory_order_seq_cst);
  return w ? w->tid.load(std::memory_order_relaxed) : 0;
}

bool hold_writer(int stall_ms, int max_backlog_ms, bool queue_closed) noexcept {
  WriterHandshake* w = g_writer.load(std::memory_order_seq_cst);
  if (w == nullptr) return true;
  // Queued batches first (nothing new comes once the drainer is parked), for
  // as long as the writer gets through them: a slow machine (a loaded core,
  // a sanitizer build) may need more than a fixed wait, and those batches
  // hold the events recorded just before the crash. A writer whose backlog
  // has not moved for `stall_ms`, or that still has one after
  // `max_backlog_ms`, is taken as soon as its current call ends.
  if (queue_closed) {
    const uint64_t give_up = now_ms() + static_cast<uint64_t>(max_backlog_ms);
    uint64_t last_move = now_ms();
    int64_t last = w->backlog.load(std::memory_order_seq_cst);
    while (last > 0) {
      sleep_ms(1);
      const uint64_t now = now_ms();
      const int64_t backlog = w->backlog.load(std::memory_order_seq_cst);
      if (backlog < last) last_move = now;
      last = backlog;
      if (now - last_move >= static_cast<uint64_t>(stall_ms) || now >= give_up) break;
    }
  }
  w->hold_requested.store(true, std::memory_order_seq_cst);
  for (const uint64_t deadline = now_ms() + static_cast<uint64_t>(stall_ms);;) {
    uint32_t expected = kWriterIdle;
    if (w->state.compare_exchange_strong(expected, kWriterHeld, std::memory_order_seq_cst)) return true;
    if (now_ms() > deadline) break;
    sleep_ms(1);
  }
  // Stuck in a call: the handler leaves the sink to it (and, should the
  // process go on, the writer must not find itself refused for good).
  w->hold_requested.store(false, std::memory_order_seq_cst);
  return false;
}

void release_writer() noexcept {
  WriterHandshake* w = g_writer.load(std::memory_order_seq_cst);
  if (w == nullptr) return;
  uint32_t expected = kWriterHeld;
  w->state.compare_exchange_strong(expected, kWriterIdle, std::memory_order_seq_cst);
  w->hold_requested.store(false, std::memory_order_seq_cst);
}

bool crashing() noexcept { return g_crashing.load(std::memory_order_acquire); }

void reset_after_fork() noexcept {
  for (RingSlot& s : g_rings) s.ring.store(nullptr, std::memory_order_relaxed);
  g_crashing.store(false, std::memory_order_relaxed);
  g_parked.store(false, std::memory_order_relaxed);
  g_writer.store(nullptr, std::memory_order_relaxed);
  clear_session();
}

}  // namespace ringprof::crash

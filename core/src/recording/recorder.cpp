// Recorder state: the session switch every event checks, each thread's ring,
// and start/stop/flush. Control calls serialise on one mutex; the recording
// path never takes it.
#include <pthread.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <new>
#include <vector>

#include "recording/clock.h"
#include "draining/drainer.h"
#include "draining/thread_cpu.h"
#include "draining/drainer_wake.h"
#include "crash/crash_state.h"
#include "operation/ops_hooks.h"
#include "ringprof/detail_zone.h"
#include "ringprof/internal/session_hooks.h"
#include "ringprof/memory.h"
#include "ringprof/ops.h"
#include "ringprof/rank.h"
#include "ringprof/recording.h"
#include "ringprof/sink.h"
#include "sampler/heap_sampler.h"
#include "sampler/signal_thread_sampler.h"
#include "recording/thread_index.h"

namespace ringprof {
namespace internal {

thread_local constinit ThreadSlot t_slot __attribute__((tls_model("initial-exec"))) = {nullptr, kNoSession};
thread_local constinit bool t_ringprof_thread __attribute__((tls_model("initial-exec"))) = false;
constinit std::atomic<uint32_t> g_session{0};

}  // namespace internal

namespace {


struct RecorderState {
  std::mutex control;
  Drainer* drainer = nullptr;
  bool exit_hook_installed = false;
  bool flush_at_exit = true;  // of the running session
  RecorderStats last_stats;  // of the most recent session, after stop()
  // Drainers left behind by stop() on a dead disk: still running, never
  // deleted; held here so they stay reachable (leak checkers, debuggers).
  std::vector<Drainer*> left_behind;
};

// Immortal, and re-created fresh in a forked child, where the parent's mutex
// may have been held by a thread that does not exist there.
RecorderState* g_state = nullptr;
std::once_flag g_state_once;

RecorderState& state() {
  std::call_once(g_state_once, [] { g_state = new RecorderState(); });
  return *g_state;
}

// Session ids are never reused in a process, a forked child included: a ring
// of an earlier session (or of the parent) must never pass for a current one.
constinit std::atomic<uint32_t> g_last_session{0};
constinit std::atomic<uint32_t> g_ring_capacity{16384};
constinit std::atomic<uint32_t> g_ring_wake_percent{25};
constinit std::atomic<uint32_t> g_ring_max_capacity{0};  // slots a thread's ring may grow to (Ring::grow)
constinit std::atomic<uint32_t> g_next_thread_index{1};
constinit std::atomic<uint64_t> g_step_counter{0};
constinit std::atomic<bool> g_warned_ring_alloc{false};
thread_local bool t_exiting = false;

// Retires the thread's ring when the thread ends, so the drainer can read
// what is left and reclaim it.
struct ThreadExitHook {
  ~ThreadExitHook() {
    t_exiting = true;
    if (internal::t_slot.ring) {
      internal::t_slot.ring->retire();
      Ring::release(internal::t_slot.ring);
      internal::t_slot.ring = nullptr;
    }
    internal::t_slot.session = internal::kNoSession;
  }
};
thread_local ThreadExitHook t_exit_hook;

void exit_handler() {
  RecorderState& s = state();
  bool flush;
  {
    std::lock_guard<std::mutex> lock(s.control);
    flush = s.drainer != nullptr && s.flush_at_exit;
  }
  if (flush) stop();
}

// Where a forked child builds its fresh state. The fork handler must not
// allocate: the child of a multi-threaded process may find an allocator lock
// held by a parent thread that does not exist there (glibc's malloc copes,
// sanitizer runtimes do not).
alignas(RecorderState) unsigned char g_child_state_storage[sizeof(RecorderState)];
constinit std::atomic<bool> g_queue_reset_pending{false};

void fork_child() {
  const bool parent_recording = g_state != nullptr && g_state->drainer != nullptr;
  ops::after_fork_child();  // levels, windows and the crash handler forget the parent
  // The child has no drainer thread: recording is off there until the child
  // calls start() itself, which then writes files under its own pid.
  internal::g_session.store(0, std::memory_order_relaxed);
  drainer_wake::reset_after_fork();
  // The parent's state is abandoned (its mutex may be held, never unlocked).
  g_state = new (g_child_state_storage) RecorderState();
  g_state->exit_hook_installed = true;
  // The forking thread's ring is the parent's copy, read by no drainer here;
  // forget it (it leaks) so a start() in the child gives this thread a new one.
  internal::t_slot = {nullptr, internal::kNoSession};
  // The ring queue may have been mid-operation in a parent thread: start()
  // replaces it before any thread of the child can register a ring.
  g_queue_reset_pending.store(true, std::memory_order_relaxed);
  // The parent's sampling timers do not exist here; forget their slots so a
  // sampler started by the child begins from an empty table. (The parent's
  // perf_event descriptors stay open, idle, until exec: they watch the
  // parent's threads and nobody here reads them.)
  sampler::reset_signal_slots_after_fork();
  sampler::reset_heap_after_fork();
  if (parent_recording) ops::fork_child_policy();  // RINGPROF_FORK=record: own session, own files
}

}  // namespace

uint32_t allocate_thread_index() noexcept {
  return g_next_thread_index.fetch_add(1, std::memory_order_relaxed);
}

namespace internal {

Ring* attach_thread(uint32_t session) noexcept {
  if (t_exiting) return Ring::refusing();
  // Creating and registering the ring allocates: ringprof's memory, not the
  // program's, so no memory event may come of it (ringprof/memory.h).
  struct InternalScope {
    bool was = t_ringprof_thread;
    InternalScope() { t_ringprof_thread = true; }
    ~InternalScope() { t_ringprof_thread = was; }
  } internal;
  // Pairs with the release store of g_session in start(): the clock choice
  // and ring size of this session are visible before the ring is made.
  std::atomic_thread_fence(std::memory_order_acquire);
  ThreadSlot& slot = t_slot;
  if (slot.ring) {  // a ring of an earlier session
    slot.ring->retire();
    Ring::release(slot.ring);
    slot.ring = nullptr;
  }
  slot.session = session;  // also on failure: do not retry on every event
  (void)&t_exit_hook;      // constructs the exit hook for this thread
  const auto tid = static_cast<uint32_t>(syscall(SYS_gettid));
  Ring* r = Ring::create(g_ring_capacity.load(std::memory_order_relaxed), tid,
                         g_ring_wake_percent.load(std::memory_order_relaxed));
  if (!r) {
    if (!g_warned_ring_alloc.exchange(true))
      std::fprintf(stderr, "ringprof: warning: no memory for a thread's event ring; that thread records nothing\n");
    slot.ring = Ring::refusing();
    return slot.ring;
  }
  r->thread_index = allocate_thread_index();
  r->session = session;
  r->mark_drop_gaps();
  r->allow_growth(g_ring_max_capacity.load(std::memory_order_relaxed));
  prctl(PR_GET_NAME, r->initial_name, 0, 0, 0);
  r->initial_name[sizeof r->initial_name - 1] = '\0';
  slot.ring = r;
  crash::register_ring(r);  // visible to the crash flush
  enqueue_new_ring(r);
  return r;
}

uint64_t ring_clock_ticks() noexcept { return now_ticks(g_session.load(std::memory_order_relaxed)); }

void ring_switched(Ring* from, Ring* to) noexcept {
  if (t_slot.ring == from) t_slot.ring = to;
}

bool emit_inline(EventKind kind, std::string_view name, uint64_t p1) noexcept {
  const uint32_t session = g_session.load(std::memory_order_relaxed);
  Ring* r = ring_for(session);
  if (!r) return false;
  const size_t len = name.size() < kMaxInlineName ? name.size() : kMaxInlineName;
  const uint32_t extra = continuation_slots(len);
  uint64_t first;
  if (!Ring::claim(r, 1 + extra, &first, kind == EventKind::ZoneBegin ? 2 : 1)) return false;  // as in emit()
  Event* s = r->slot_at(first);
  s->ts = now_ticks(session);
  s->kind = kind;
  s->ref = NameRef::Inline;
  s->extra = static_cast<uint16_t>(len);
  s->loc = 0;
  s->p0 = 0;
  s->p1 = p1;
  for (uint32_t k = 0; k < extra; ++k) {
    Event* c = r->slot_at(first + 1 + k);
    const size_t off = size_t{k} * sizeof(Event);
    const size_t take = len - off < sizeof(Event) ? len - off : sizeof(Event);
    std::memcpy(c, name.data() + off, take);
  }
  r->publish(first + 1 + extra);
  return true;
}

}  // namespace internal

void zone_arg(const char* static_key, int64_t value) noexcept {
  char text[24];
  const auto [end, ec] = std::to_chars(text, text + sizeof text, value);
  (void)ec;  // 24 bytes hold every int64_t
  zone_arg(static_key, std::string_view(text, static_cast<size_t>(end - text)));
}

void set_thread_name(std::string_view name) noexcept {
  internal::emit_inline(EventKind::ThreadName, name, 0);
}

uint64_t new_async_id() noexcept {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

uint64_t step() noexcept {
  const uint64_t n = g_step_counter.fetch_add(1, std::memory_order_relaxed);
  ops::on_step();  // schedules and windows: a boundary's marks come before its Step
  internal::emit(EventKind::Step, NameRef::None, 0, n);
  return n;
}

void step(uint64_t number) noexcept {
  ops::on_step();
  internal::emit(EventKind::Step, NameRef::None, 0, number);
}

bool start(const Config& config, std::shared_ptr<Sink> sink) {
  // RINGPROF_DISABLE=1: the program runs as if ringprof were not there
  // (`ringprof overhead` measures its `off` runs so), whatever its code asks.
  if (const char* off = std::getenv("RINGPROF_DISABLE"); off && *off) {
    bool disabled = false;
    if (internal::parse_switch(off, &disabled)) {
      if (disabled) return false;
    } else {
      static std::atomic<bool> warned{false};
      if (!warned.exchange(true))
        std::fprintf(stderr, "ringprof: warning: ignoring RINGPROF_DISABLE=%s (expected 1 or 0); recording\n", off);
    }
  }
  RecorderState& s = state();
  std::lock_guard<std::mutex> lock(s.control);
  if (s.drainer) {
    std::fprintf(stderr, "ringprof: warning: start() while already recording; ignored\n");
    return false;
  }
  if (!sink) {
    std::fprintf(stderr, "ringprof: warning: start() without a sink; recording stays off\n");
    return false;
  }
  if (g_queue_reset_pending.exchange(false)) reset_new_ring_queue_after_fork();
  internal::load_rank_from_environment();  // unless set_rank() spoke (ringprof/rank.h)
  if (!s.exit_hook_installed) {
    static std::once_flag atfork_once;
    std::call_once(atfork_once, [] { pthread_atfork(nullptr, nullptr, fork_child); });
    std::atexit(exit_handler);
    s.exit_hook_installed = true;
  }
  const ClockSource source = choose_clock(config.clock);
  if (config.clock == ClockChoice::Tsc && source != ClockSource::Tsc)
    std::fprintf(stderr, "ringprof: warning: RINGPROF_CLOCK=tsc but this CPU has no invariant TSC; using CLOCK_MONOTONIC\n");
  const uint32_t id = g_last_session.fetch_add(1, std::memory_order_relaxed) + 1;
  const uint32_t session = (id << 1) | (source == ClockSource::Tsc ? internal::kSessionTscBit : 0);
  // A Config built in code is not range-checked by config_from_env().
  Config safe = config;
  safe.drain_interval_ms = std::clamp<uint32_t>(safe.drain_interval_ms, 1, 1000);
  safe.flush_interval_ms = std::max<uint32_t>(safe.flush_interval_ms, 1);
  safe.batch_events = std::clamp<uint32_t>(safe.batch_events, 1024, 1u << 22);
  safe.ring_drain_percent = std::clamp<uint32_t>(safe.ring_drain_percent, 1, 100);
  safe.ring_bytes = std::clamp<uint32_t>(safe.ring_bytes, 64 * sizeof(Event), 1u << 30);
  safe.ring_max_bytes = std::min<uint32_t>(safe.ring_max_bytes, 1u << 30);  // below ring_bytes: no growth
  safe.stall_ms = std::clamp<uint32_t>(safe.stall_ms, 1, 600000);
  safe.clock_skew_ns = std::clamp<int64_t>(safe.clock_skew_ns, -kMaxClockSkewNs, kMaxClockSkewNs);
  g_ring_capacity.store(safe.ring_bytes / sizeof(Event), std::memory_order_relaxed);
  g_ring_wake_percent.store(safe.ring_drain_percent, std::memory_order_relaxed);
  g_ring_max_capacity.store(safe.ring_max_bytes / sizeof(Event), std::memory_order_relaxed);
  Drainer* d = nullptr;
  try {
    d = new Drainer(safe, std::move(sink), session, source);
  } catch (...) {
    std::fprintf(stderr, "ringprof: warning: could not start recording (out of memory)\n");
    return false;
  }
  // The level is set before the drainer runs: it tells subscribers the starting level.
  const uint32_t published = ops::session_starting(session, safe);
  const uint64_t cpu_before = internal::thread_cpu_ns();
  if (!d->start()) {
    ops::session_stopping();
    delete d;
    std::fprintf(stderr, "ringprof: warning: could not start the drainer thread; recording stays off\n");
    return false;
  }
  s.drainer = d;
  s.flush_at_exit = config.flush_at_exit;
  internal::remember_start_config(nullptr, nullptr);  // start(Config) remembers its own after this returns
  internal::g_session.store(published, std::memory_order_release);
  sampler::set_heap_interval(safe.heap_interval);
  ops::session_started(safe);
  d->note_start_cpu(internal::thread_cpu_ns() - cpu_before);
  return true;
}

namespace {
std::atomic<void (*)(const RecorderStats&)> g_stop_observer{nullptr};
}  // namespace

void internal::set_stop_observer(void (*observer)(const RecorderStats&)) noexcept {
  g_stop_observer.store(observer, std::memory_order_release);
}

void stop() {
  RecorderState& s = state();
  std::lock_guard<std::mutex> lock(s.control);
  if (!s.drainer) return;
  ops::session_stopping();  // open windows end (their marks) while recording is still on
  sampler::set_heap_interval(0);
  internal::g_session.store(0, std::memory_order_release);
  // stop() (and so exit()) waits while the writer makes progress: a dead disk
  // must not hang the application, a slow one that still takes data gets it all.
  const bool finished = s.drainer->stop();
  s.last_stats = s.drainer->stats();
  if (finished) {
    delete s.drainer;
  } else {
    try {
      s.left_behind.push_back(s.drainer);
    } catch (...) {
    }
    std::fprintf(stderr,
                 "ringprof: warning: the drainer wrote nothing for %u ms while stopping (stuck disk?); "
                 "leaving it behind, events still in memory may be lost\n",
                 s.drainer->stall_ms());
  }
  s.drainer = nullptr;
  if (auto* observer = g_stop_observer.load(std::memory_order_acquire)) observer(s.last_stats);
}

void flush() {
  RecorderState& s = state();
  std::lock_guard<std::mutex> lock(s.control);
  if (s.drainer) s.drainer->flush();
}

bool is_recording() noexcept { return internal::g_session.load(std::memory_order_relaxed) != 0; }

RecorderStats recorder_stats() {
  RecorderState& s = state();
  std::lock_guard<std::mutex> lock(s.control);
  return s.drainer ? s.drainer->stats() : s.last_stats;
}

}  // namespace ringprof

#include "draining/drainer.h"
#include "draining/thread_cpu.h"

#include <pthread.h>
#include <signal.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cstddef>
#include <chrono>
#include <concurrentqueue/concurrentqueue.h>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <utility>

#include "crash/crash_state.h"
#include "operation/detail_level.h"
#include "draining/drainer_priority.h"
#include "draining/drainer_wake.h"
#include "draining/quiet_thread.h"
#include "draining/memory_pools.h"
#include "draining/process_info.h"
#include "ringprof/internal/interpreter_frames.h"
#include "ringprof/rank.h"
#include "sampler/sampler.h"

namespace ringprof {

namespace {

// The drainer's time slice (drainer_priority.h): short enough to preempt a
// CPU hog as soon as a ring wakes it; a round rarely takes longer.
constexpr uint64_t kDrainerSliceNs = 100'000;
// Ring growth (maybe_grow): how long a ring past its wake fill must last at
// its thread's rate, and over how long that rate is measured.
constexpr uint64_t kRingCoverNs = 10'000'000;
constexpr uint64_t kRateWindowNs = 2'000'000;
using RingQueue = moodycamel::ConcurrentQueue<Ring*>;
// Immortal: threads may register a ring while the process exits, after
// function-local statics would have been destroyed.
std::atomic<RingQueue*> g_new_rings{nullptr};
std::once_flag g_new_rings_once;

RingQueue& new_rings() {
  std::call_once(g_new_rings_once, [] { g_new_rings.store(new RingQueue(), std::memory_order_release); });
  return *g_new_rings.load(std::memory_order_acquire);
}
}  // namespace

void reset_new_ring_queue_after_fork() noexcept {
  // The parent's queue may have been mid-operation in another thread at the
  // moment of fork; the child starts with an empty one (the old one leaks).
  std::call_once(g_new_rings_once, [] {});
  g_new_rings.store(new (std::nothrow) RingQueue(), std::memory_order_release);
}

void enqueue_new_ring(Ring* ring) noexcept {
  if (!new_rings().enqueue(ring)) {
    // Out of memory for the queue node: the drainer will never see this ring,
    // so drop its reference here; the thread records into a ring nobody reads
    // (and that must not grow: nobody would ever free what it grew into).
    ring->allow_growth(0);
    Ring::release(ring);
    return;
  }
  // Orders the enqueue before the read of the idle flag (the drainer's fence
  // in prepare_to_sleep is the other half): either it sees the new ring or
  // this thread sees it idle and wakes it.
  std::atomic_thread_fence(std::memory_order_seq_cst);
  drainer_wake::wake_if_idle();
}

bool dequeue_new_ring(Ring** ring) noexcept { return new_rings().try_dequeue(*ring); }

bool new_rings_waiting() noexcept { return new_rings().size_approx() != 0; }

Drainer::Drainer(const Config& config, std::shared_ptr<Sink> sink, uint32_t session, ClockSource clock)
    : config_(config), sink_(std::move(sink)), session_(session), clock_(clock, config_.clock_skew_ns),
      gpu_(config_) {
  events_.reserve(std::max<uint32_t>(config_.batch_events, 1024));
  ops_.config = config_.ops;
  BatchWriter::Callbacks callbacks;
  callbacks.flushed = [this](uint64_t ticket) {
    {
      std::lock_guard<std::mutex> lock(mutex_);
      flush_done_ = std::max(flush_done_, ticket);
    }
    flushed_.notify_all();
  };
  callbacks.io_drops = [this](const ThreadInfo& t, uint64_t io) { note_thread_drops(t, 0, io); };
  writer_ = std::make_unique<BatchWriter>(config_, *sink_, std::move(callbacks));
}

Drainer::~Drainer() {
  // The recorder deletes a drainer only after stop() returned true.
  if (thread_.joinable()) stop();
}

bool Drainer::start() {
  if (!start_quiet_thread(thread_, [this] { run(); })) return false;
  // Wait, briefly, until the sink has begun its session (directory, first
  // file, the crash file prepared), so a crash right after start() still finds
  // somewhere to write. Bounded: a slow or hung disk delays start() by at most
  // this much, never more, and recording goes on regardless.
  std::unique_lock<std::mutex> lock(mutex_);
  flushed_.wait_for(lock, std::chrono::milliseconds(500), [&] { return sink_ready_; });
  return true;
}

bool Drainer::stop() {
  std::unique_lock<std::mutex> lock(mutex_);
  stop_requested_ = true;
  drainer_wake::wake();
  if (!thread_.joinable()) return true;
  if (!wait_while_writing(lock, std::chrono::milliseconds(config_.stall_ms), [&] { return finished_; })) {
    // A sink stuck on a dead disk: leave the thread behind rather than hang
    // the application. The caller must then never delete this drainer.
    thread_.detach();
    return false;
  }
  lock.unlock();
  thread_.join();
  return true;
}

void Drainer::flush() {
  std::unique_lock<std::mutex> lock(mutex_);
  if (!thread_.joinable() || stop_requested_) return;
  const uint64_t ticket = ++flush_requested_;
  drainer_wake::wake();
  // Bounded: a sink stuck on a dead disk must not hang the application.
  wait_while_writing(lock, std::chrono::milliseconds(config_.stall_ms), [&] { return flush_done_ >= ticket; });
}

template <typename Done>
bool Drainer::wait_while_writing(std::unique_lock<std::mutex>& lock, std::chrono::milliseconds limit, Done done) {
  // The limit is for a writer that makes no progress (a dead disk), not for
  // the whole wait: a large backlog (grown rings, a slow machine, a sanitizer
  // build) on a disk that still takes data is written out to the end. It is
  // bounded all the same, since nothing new is recorded into a stopping
  // session faster than it can be written for long.
  const WriterCounters& w = writer_->counters();
  uint64_t seen = w.batches.load(std::memory_order_relaxed);
  for (;;) {
    if (flushed_.wait_for(lock, limit, done)) return true;
    const uint64_t now = w.batches.load(std::memory_order_relaxed);
    if (now == seen) return false;
    seen = now;
  }
}

RecorderStats Drainer::stats() const {
  RecorderStats s;
  const WriterCounters& w = writer_->counters();
  s.events_written = w.events_written.load(std::memory_order_relaxed);
  s.dropped_ring = dropped_ring_.load(std::memory_order_relaxed);
  s.dropped_io = w.dropped_io.load(std::memory_order_relaxed);
  s.batches = w.batches.load(std::memory_order_relaxed);
  s.threads_seen = threads_seen_.load(std::memory_order_relaxed);
  s.rings_live = rings_live_.load(std::memory_order_relaxed);
  s.samples_taken = samples_taken_.load(std::memory_order_relaxed);
  s.sample_handler_ns = sample_handler_ns_.load(std::memory_order_relaxed);
  s.samples_written = w.samples_written.load(std::memory_order_relaxed);
  s.samples_lost = samples_lost_.load(std::memory_order_relaxed) + w.samples_lost.load(std::memory_order_relaxed);
  s.drainer_cpu_ns = cpu_ns_.load(std::memory_order_relaxed);
  s.writer_cpu_ns = w.cpu_ns.load(std::memory_order_relaxed);
  std::lock_guard<std::mutex> lock(drops_mutex_);
  s.thread_drops = thread_drops_;
  return s;
}

SessionInfo Drainer::session_info() const {
  SessionInfo s;
  s.pid = static_cast<uint32_t>(getpid());
  s.hostname = config_.hostname.empty() ? host_name() : config_.hostname;  // RINGPROF_HOSTNAME
  s.command_line = command_line();
  s.start_monotonic_ns = internal::monotonic_ns();
  s.start_realtime_ns = realtime_now_ns(config_.clock_skew_ns);
  s.clock = clock_.calibration();
  s.ringprof_version = RINGPROF_VERSION;
  return s;
}

void Drainer::run() {
  prctl(PR_SET_NAME, "ringprof-drain", 0, 0, 0);
  drainer_priority::request_short_slice(kDrainerSliceNs);
  internal::t_ringprof_thread = true;  // its allocations are ringprof's own (ringprof/memory.h)
  guarded([&] { sink_->begin_session(session_info()); });
  // The sampler's first scan comes before the writer thread exists, so it
  // cannot take it for one of the application's; later scans wait until its
  // id is known (sample_round).
  guarded([&] { start_sampler(); });
  // From here on the writer makes the sink calls. Without its thread, the
  // drainer makes them itself, inline (BatchWriter::give).
  if (!writer_->start())
    std::fprintf(stderr, "ringprof: warning: could not start the writer thread; the drainer writes batches itself\n");
  // Called on this thread by ops::drainer_begin/drainer_round (level::notify_if_changed).
  guarded([&] { level_subscription_ = level::subscribe([this](Level m) { on_level(m); }); });
  guarded([&] { ops::drainer_begin(ops_, *sink_, session_, clock_.calibration()); });
  {
    // The sink has begun and the crash handler knows it; start() waits for it.
    std::lock_guard<std::mutex> lock(mutex_);
    sink_ready_ = true;
  }
  flushed_.notify_all();
  uint64_t last_refine = internal::monotonic_ns();
  for (;;) {
    // Sleep until a producer's ring passes its wake fill, a control call, a
    // level change, or the interval (which ages batches and polls the GPU),
    // unless there is work already (drainer_wake.h); when idle, until the
    // next event (may_sleep_until_event). A full writer wakes the drainer
    // when it has room again. The CPU figure is stored before the sleep,
    // which may last seconds.
    cpu_ns_.store(internal::thread_cpu_ns(), std::memory_order_relaxed);
    uint64_t sleep_for = sleep_ns();
    const bool until_event = may_sleep_until_event();
    // Only an idle back-off is woken by a CPU or heap sample (wake_if_idle):
    // one that backs off while events come would be woken by every sample
    // of every busy thread. A ring past its wake fill wakes either.
    const uint32_t seq = drainer_wake::prepare_to_sleep(
        idle_rounds_ != 0 && sleep_for > uint64_t{config_.drain_interval_ms} * 1000000ull, until_event);
    if (until_event) {
      // After prepare_to_sleep's fence: a producer that moves its limit
      // back up then sees the flag (ring.h).
      for (auto& [index, t] : threads_)
        if (t.ring) t.ring->wake_at_next_claim();
      sleep_for = kUntilEventMaxNs;
    }
    if (control_pending() || ops::drainer_level_pending(ops_) || ops::drainer_should_stop() ||
        (!writer_->full() && rings_need_draining(until_event))) {
      drainer_wake::cancel_sleep();
    } else {
      // Armed after prepare_to_sleep: an alarm that fires at once still
      // finds the drainer idle and wakes it.
      const bool alarm = arm_for_idle_sleep(&sleep_for);
      // Woken (by an event, the alarm, a control call) or not, the rounds
      // after a sleep until the next event back off again from the start: a
      // producer wakes the drainer from its slow path just before it
      // publishes. Not after a sleep the sampler capped (no alarm): that
      // one is an ordinary back-off sleep.
      if (until_event && sleep_for == kUntilEventMaxNs) idle_rounds_ = 0;
      drainer_wake::sleep(seq, sleep_for);
      if (alarm) disarm_after_sleep();
    }
    bool stopping;
    uint64_t flush_ticket;
    {
      std::lock_guard<std::mutex> lock(mutex_);
      stopping = stop_requested_ || ops::drainer_should_stop();  // SIGTERM/SIGINT: finish like stop()
      flush_ticket = flush_requested_;
    }
    const bool flushing = flush_ticket > flush_sent_;
    guarded([&] {
      if (crash::park_point(events_.data(), events_.size(), runs_.data(), runs_.size())) discard_batch();
      wait_for_writer_ = flushing;  // flush(): everything recorded so far, even past a full writer
      take_back_counts();
      const size_t threads_before = threads_.size();
      adopt_new_rings();
      const size_t events_before = events_.size();
      sample_round(false);
      heap_round(false);
      const bool window_done = ops::drainer_round(ops_, internal::monotonic_ns());
      drain_all();
      const bool found = events_.size() != events_before || threads_.size() != threads_before;
      const bool worked = found || flushing || window_done;
      idle_rounds_ = worked ? 0 : idle_rounds_ + 1;
      flow_rounds_ = found && !flushing && !window_done && !rounds_on_time() ? flow_rounds_ + 1 : 0;
      const uint64_t now = internal::monotonic_ns();
      if (gpu_.poll(flushing, now)) emit_batch(flushing);
      const bool aged = !events_.empty() && now >= batch_due_ns();
      bool handed = true;
      if (aged || flushing || window_done) handed = emit_batch(flushing);
      reclaim_rings(false);
      if (now - last_refine > 1000000000ull) {
        clock_.refine();
        ops::drainer_clock(clock_.calibration());
        last_refine = now;
      }
      if (handed && (flushing || window_done)) {
        // Behind the batch: the sink's flush, the windows' callbacks and
        // the flush() callers' wakeup (a full writer: next round).
        std::unique_ptr<WriteJob> job = writer_->take_job();
        job->flush_sink = true;
        job->window_callbacks.assign(ops_.completed, ops_.completed + ops_.n_completed);
        ops_.n_completed = 0;
        if (flushing) job->flush_ticket = flush_sent_ = flush_ticket;
        writer_->give(std::move(job));
      }
      wait_for_writer_ = false;
    });
    if (stopping) break;
  }
  // Final pass: anything committed before stop() is in the rings now. Rings
  // are drained and their drops counted before the last batch is written, so
  // the counts in the files and in recorder_stats() agree.
  guarded([&] {
    wait_for_writer_ = true;
    take_back_counts();
    adopt_new_rings();
    drain_all();
    gpu_.poll(true, internal::monotonic_ns());
    sample_round(true);
    reclaim_rings(true);
    emit_batch(true);
  });
  cpu_ns_.store(internal::thread_cpu_ns(), std::memory_order_relaxed);
  guarded([&] { writer_->stop(); });  // everything handed over is written
  if (level_subscription_) level::unsubscribe(level_subscription_);
  level_subscription_ = 0;
  guarded([&] { sink_->end_session(); });
  guarded([&] { ops::drainer_end(ops_); });
  {
    std::lock_guard<std::mutex> lock(mutex_);
    flush_done_ = flush_requested_;
    finished_ = true;
  }
  flushed_.notify_all();
}

uint64_t Drainer::sleep_ns() const noexcept {
  const uint64_t interval = uint64_t{config_.drain_interval_ms} * 1000000ull;
  // An idle process: rounds that find nothing. Each doubles the sleep up to
  // kIdleSleepMaxNs (or RINGPROF_FLUSH_MS, if shorter), so a process that
  // records nothing costs a few wake-ups a second instead of a hundred (a
  // wake-up of an idle thread costs tens of microseconds of CPU on a virtual
  // machine). A producer past its ring's wake fill, a control call, a level
  // change, a CPU sample or a new thread's ring (drainer_wake::wake_if_idle)
  // still wakes the drainer at once; events below the wake fill wait
  // that much longer. While the CPU sampler is on and the application ran
  // in the last round, until the sampler's next scan of /proc/self/task
  // (every 100 ms), which finds the threads that record nothing: a sleep
  // past it delays their first sample by as much (up to 350 ms with the
  // 250 ms cap this replaced; Python's threads announce themselves). When
  // the application did not run, longer, with the CPU alarm armed
  // (arm_for_idle_sleep) to wake the drainer if it does, or
  // kIdleSleepSampledMaxNs where it cannot be.
  // Not while the GPU is traced (CUPTI's buffers are polled) or a window is
  // open (time-bounded windows end on the drainer's clock).
  //
  // Rounds that find events back off the same way (flow_rounds_), unless the
  // sampler names Python frames (rounds_on_time): an event below the wake
  // fill then waits in its ring instead of in the batch, and the batch is due
  // RINGPROF_FLUSH_MS after its oldest event was recorded (batch_due_ns), so
  // no event waits longer than before. At 10 k zones a second that is a few
  // rounds a second instead of a hundred (docs/performance.md).
  const uint32_t rounds = idle_rounds_ != 0 ? idle_rounds_ : flow_rounds_;
  if (rounds == 0 || gpu_.active() || mode() == Level::Detailed) return interval;
  const uint64_t flush_ns = uint64_t{config_.flush_interval_ms} * 1000000ull;
  const uint64_t now = internal::monotonic_ns();
  uint64_t most = kIdleSleepMaxNs;
  if (sampler_ && sampler_->on() && !app_idle_) {
    // The application runs: wake when the next scan is due, so that a
    // thread which records nothing is sampled within 100 ms of its start.
    const uint64_t scan = sampler_->next_scan_ns();
    most = scan > now ? scan - now : 0;
  }
  uint64_t sleep = std::min({interval << std::min<uint32_t>(rounds, 6), most, flush_ns});
  if (!events_.empty()) {  // a batch waits: wake when it is due
    const uint64_t due = batch_due_ns();
    sleep = std::min(sleep, due > now ? due - now : 0);
  }
  return std::max(interval, sleep);
}

uint64_t Drainer::batch_due_ns() const noexcept {
  // From the oldest event's own time when it is older than the batch: it may
  // have waited in its ring for a backed-off round (sleep_ns).
  return std::min(batch_started_mono_, batch_first_ns_) + uint64_t{config_.flush_interval_ms} * 1000000ull;
}

bool Drainer::rounds_on_time() const noexcept {
  // The samplers name a Python frame while its code object is alive: a
  // 100 ms round was seen to lose the names of short-lived code.
  return ((sampler_ && sampler_->on()) || config_.heap_interval != 0) && internal::interpreter_frame_hooks() != nullptr;
}

template <typename F>
void Drainer::guarded(F&& f) noexcept {
  // Out of memory (or a throwing user sink) must not terminate the
  // application through this thread: warn once, skip this round, go on.
  try {
    f();
  } catch (...) {
    if (!warned_exception_) {
      std::fprintf(stderr, "ringprof: warning: the drainer hit an error (out of memory?); events may be lost\n");
      warned_exception_ = true;
    }
  }
}

void Drainer::adopt_new_rings() {
  Ring* r = nullptr;
  while (dequeue_new_ring(&r)) {
    if (r->session != session_) {
      // Registered for an earlier session that ended before we saw it.
      release_unread(r);
      continue;
    }
    // A thread the sampler already gave an index keeps it: its samples and
    // its events must land on one thread in the file.
    ThreadState* known = nullptr;
    if (auto it = index_by_tid_.find(r->tid()); it != index_by_tid_.end()) {
      ThreadState& k = threads_[it->second];
      if (!k.ring && k.sampled) known = &k;
    }
    const std::string initial(r->initial_name, strnlen(r->initial_name, sizeof r->initial_name));
    if (known) {
      // A reused state: nothing of the ring it had before carries over.
      known->ring = r;
      known->ring_grown = false;
      known->ring_dropped_seen = 0;
      known->rate_since_ns = 0;
      known->slots_read = 0;
      if (known->info.name != initial) {
        known->info.name = initial;
        ++known->info.name_version;
      }
    } else {
      ThreadState& t = threads_[r->thread_index];
      t.ring = r;
      t.info.index = r->thread_index;
      t.info.tid = r->tid();
      t.info.name = initial;
      t.info.name_version = 1;
      index_by_tid_[r->tid()] = r->thread_index;
      threads_seen_.fetch_add(1, std::memory_order_relaxed);
    }
    rings_live_.fetch_add(1, std::memory_order_relaxed);
    if (sampler_ && sampler_->watch(r->tid())) thread_for_tid(r->tid()).sampled = true;
  }
}

void Drainer::drain_all() {
  for (auto& [index, t] : threads_) {
    if (!t.ring) continue;
    const uint64_t waiting = t.ring->readable();
    const uint64_t dropped_before = t.ring_dropped_seen;
    drain_ring(t);
    account_drops(t);
    maybe_grow(t, waiting, t.ring_dropped_seen != dropped_before, internal::monotonic_ns());
    // A thread that moved to its successor: the old ring to its end, then
    // on in the new one, in this same pass (flush() counts on it).
    while (t.ring && t.ring->switched() && finish_ring(t, wait_for_writer_)) {
      drain_ring(t);
      account_drops(t);
    }
  }
}

bool Drainer::finish_ring(ThreadState& t, bool wait) {
  const bool was = wait_for_writer_;
  wait_for_writer_ = wait || was;
  drain_ring(t);
  wait_for_writer_ = was;
  account_drops(t);
  if (!wait && t.ring->readable() != 0) return false;  // a full writer: the rest next round
  // A successor the thread took holds its events from here on; one it did
  // not take is freed (withdrawn first, so it never takes it now). Or the
  // thread grew the ring itself (Ring::grow); closing the ring settles that
  // race with stop() (ring.h).
  Ring* offered = std::exchange(t.next_ring, nullptr);
  const bool taken = offered && t.ring->withdraw_successor() == nullptr;
  Ring* made = t.ring->close();
  if ((made || taken) && t.ring->readable() != 0) {
    // The thread moved between the drain above and the withdraw or close()
    // (only while stopping): what it wrote here before it left is read now.
    wait_for_writer_ = true;
    drain_ring(t);
    wait_for_writer_ = was;
    account_drops(t);
  }
  Ring* next = taken ? offered : made;
  release_ring(t.ring, t.ring_grown);
  t.ring = nullptr;
  if (offered && !taken) {
    Ring::release(offered);  // the thread's reference, never taken
    release_ring(offered, true);
  }
  if (!next) {
    t.ring_grown = false;
    rings_live_.fetch_sub(1, std::memory_order_relaxed);
    return true;
  }
  t.ring = next;
  t.ring_grown = true;
  t.ring_dropped_seen = 0;
  if (!t.info.name.empty()) crash::note_thread_name(next, t.info.name.data(), t.info.name.size());
  return true;
}

void Drainer::maybe_grow(ThreadState& t, uint64_t waiting, bool dropped, uint64_t now_ns) {
  const uint64_t cap = t.ring->capacity();
  // The fill rate, over at least kRateWindowNs: a ring must hold, past its
  // wake fill, what the thread records while a woken drainer waits for a
  // core (up to a scheduler tick or two on a busy machine).
  t.slots_read += waiting;
  bool fast = false;
  if (t.rate_since_ns == 0) {
    t.rate_since_ns = now_ns;
    t.slots_read = 0;
  } else if (now_ns - t.rate_since_ns >= kRateWindowNs) {
    const double per_ns = static_cast<double>(t.slots_read) / static_cast<double>(now_ns - t.rate_since_ns);
    const double headroom = static_cast<double>(cap) * (100 - config_.ring_drain_percent) / 100.0;
    fast = per_ns * static_cast<double>(kRingCoverNs) > headroom;
    t.rate_since_ns = now_ns;
    t.slots_read = 0;
  }
  if (!fast && !dropped && 2 * waiting < cap) return;
  const uint64_t max_slots = config_.ring_max_bytes / sizeof(Event);
  if (t.next_ring || cap == 0 || 2 * cap > max_slots || t.ring->retired()) return;
  Ring* next = t.ring->make_successor(max_slots);
  if (!next) return;
  t.next_ring = next;
  t.ring->offer_successor(next);
}

void Drainer::release_unread(Ring* r) {
  // Closed first, so its thread cannot grow it any more; then every ring the
  // thread already grew it into goes too (each a successor: budget returned).
  bool grown = false;
  while (r) {
    Ring* next = r->close();
    release_ring(r, grown);
    r = next;
    grown = true;
  }
}

void Drainer::release_ring(Ring* r, bool grown) {
  if (grown) Ring::return_growth(uint64_t{r->capacity()} * sizeof(Event));
  Ring::release(r);
}

bool Drainer::control_pending() {
  std::lock_guard<std::mutex> lock(mutex_);
  return stop_requested_ || flush_requested_ > flush_sent_;
}

bool Drainer::rings_need_draining(bool any) const {
  if (new_rings_waiting()) return true;  // a new thread's ring: adopt it now
  for (const auto& [index, t] : threads_) {
    if (!t.ring) continue;
    if (t.ring->readable() >= (any ? 1 : t.ring->wake_check_fill())) return true;
    // Moved to the larger ring it was offered (ring.h): its records go there,
    // whose limit was not lowered; its switch came before the fence of its
    // ring_refilled(), so a drainer that misses the wake sees the switch.
    if (any && t.ring->switched()) return true;
  }
  return false;
}

bool Drainer::may_sleep_until_event() const noexcept {
  // Two rounds in a row found nothing (10 and 20 ms after the last event).
  // Not while something else needs rounds on time: the GPU's buffers, an
  // open window, a batch that ages, or the sampler's scan while the
  // application runs (while it does not, the CPU alarm stands in).
  if (idle_rounds_ < 2 || gpu_.active() || mode() == Level::Detailed || !events_.empty()) return false;
  return !(sampler_ && sampler_->on()) || app_idle_;
}

void Drainer::account_drops(ThreadState& t) {
  const uint64_t d = t.ring->dropped();
  if (d != t.ring_dropped_seen) {
    t.info.dropped_ring += d - t.ring_dropped_seen;
    dropped_ring_.fetch_add(d - t.ring_dropped_seen, std::memory_order_relaxed);
    note_thread_drops(t.info, d - t.ring_dropped_seen, 0);
    t.ring_dropped_seen = d;
  }
}

void Drainer::note_thread_drops(const ThreadInfo& t, uint64_t ring, uint64_t io) {
  std::lock_guard<std::mutex> lock(drops_mutex_);
  auto [slot, added] = drops_slot_.try_emplace(t.index, thread_drops_.size());
  if (added) thread_drops_.push_back(ThreadDrops{t.tid, {}, 0, 0});
  ThreadDrops& d = thread_drops_[slot->second];
  d.name = t.name;
  d.dropped_ring += ring;
  d.dropped_io += io;
}

namespace {

// A record drain_plain() takes: one slot, named by a SourceLocation or by
// nothing (a zone's end), kept as it is but for its time and location id.
// Memory events name their pool by index (drain_ring).
constexpr bool kind_is_plain(EventKind k) noexcept {
  return kind_is_ring_record(k) && k != EventKind::Sample && k != EventKind::ZoneStack && k != EventKind::HeapAlloc;
}
struct PlainKinds {
  bool named[256];    // with NameRef::SourceLocation
  bool unnamed[256];  // with NameRef::None
};
constexpr PlainKinds plain_kinds() noexcept {
  PlainKinds p{};
  for (unsigned k = 0; k < 256; ++k) {
    const auto kind = static_cast<EventKind>(k);
    p.named[k] = kind_is_plain(kind);
    p.unnamed[k] = kind_is_plain(kind) && !kind_is_memory(kind);
  }
  return p;
}
constexpr PlainKinds kPlainKinds = plain_kinds();
// drain_plain() writes an Event as four 64-bit words: the second holds kind,
// ref, extra and loc, low byte first.
static_assert(std::endian::native == std::endian::little);
static_assert(offsetof(Event, kind) == 8 && offsetof(Event, ref) == 9 && offsetof(Event, extra) == 10 &&
              offsetof(Event, loc) == 12 && offsetof(Event, p0) == 16 && offsetof(Event, p1) == 24);

}  // namespace

uint64_t Drainer::drain_plain(const Ring& r, uint64_t i, uint64_t ready, size_t cap, EventRun& run) {
  // The bulk of every recording (zones' begins and ends), the way the
  // general loop in drain_ring() treats them, written straight into the
  // batch with its bounds in registers: that loop costs about twice as much
  // per event, in branches and in stores to members it cannot keep in
  // registers (measured in docs/performance.md).
  const size_t at = events_.size();
  const size_t room = static_cast<size_t>(std::min<uint64_t>(ready - i, cap - at));
  if (room == 0) return i;
  Event* out = events_.grow(room);  // not written yet (batch_memory.h)
  uint64_t first = batch_first_ns_, last = batch_last_ns_;
  size_t n = 0;
  // On the way out, even by an exception (a new location out of memory):
  // the batch ends at what was written, never at room it did not fill.
  struct Commit {
    Drainer& d;
    size_t at;
    const size_t& n;
    const uint64_t& first;
    const uint64_t& last;
    EventRun& run;
    ~Commit() {
      d.events_.truncate(at + n);
      d.batch_first_ns_ = first;
      d.batch_last_ns_ = last;
      run.count += static_cast<uint32_t>(n);
    }
  } commit{*this, at, n, first, last, run};
  bool other = false;  // stopped at a record drain_ring() takes itself
  while (n < room && !other) {
    uint64_t len = room - n;
    const Event* src = r.peek_run(i + n, &len);  // up to the end of the ring's memory
    Event* dst = out + n;
    size_t k = 0;
    for (; k < len; ++k) {
      const Event& e = src[k];
      const auto kind = static_cast<uint8_t>(e.kind);
      uint32_t loc;
      uint64_t p0;
      if (e.ref == NameRef::SourceLocation && kPlainKinds.named[kind]) {
        loc = locations_.for_source(reinterpret_cast<const ringprof_source_location*>(e.p0));
        p0 = e.p0;  // keeps the name reachable for the crash flush (drain_ring)
      } else if (e.ref == NameRef::None && kPlainKinds.unnamed[kind]) {
        loc = 0;
        p0 = 0;
      } else {
        other = true;
        break;
      }
      const uint64_t ts = clock_.to_ns(e.ts);
      // Four whole words into the batch. An Event built field by field on
      // the stack and copied out was read back before its narrow stores
      // could forward to the wide loads: that stall was most of this loop's
      // time.
      const uint64_t head = kind | uint64_t{static_cast<uint8_t>(e.ref)} << 8 | uint64_t{loc} << 32;  // extra = 0
      const uint64_t p1 = kind_has_value(e.kind) ? e.p1 : 0;  // producers leave it stale
      auto* slot = reinterpret_cast<unsigned char*>(dst + k);
      std::memcpy(slot, &ts, 8);
      std::memcpy(slot + 8, &head, 8);
      std::memcpy(slot + 16, &p0, 8);
      std::memcpy(slot + 24, &p1, 8);
      first = std::min(first, ts);
      last = std::max(last, ts);
    }
    n += k;
  }
  return i + n;
}

void Drainer::drain_ring(ThreadState& t) {
  Ring* r = t.ring;
  const size_t cap = std::max<uint32_t>(config_.batch_events, 1024);
  // Only what was there on entry: a thread that records faster than the
  // drainer reads must not keep it from the other rings (or from stop()).
  uint64_t budget = r->readable();
  for (;;) {
    const uint64_t ready = std::min(r->readable(), budget);
    if (ready == 0) return;
    // A full writer: leave the rest in the ring (it may drop, and count).
    if (events_.size() >= cap && !emit_batch(wait_for_writer_)) return;
    if (events_.empty()) batch_started_mono_ = internal::monotonic_ns();
    if (runs_.empty() || runs_.back().thread_index != t.info.index) {
      runs_.push_back(EventRun{t.info.index, static_cast<uint32_t>(events_.size()), 0});
    }
    EventRun& run = runs_.back();
    t.in_batch = true;
    uint64_t i = 0;
    while (i < ready && events_.size() < cap) {
      i = drain_plain(*r, i, ready, cap, run);
      if (i == ready || events_.size() == cap) break;
      // Anything else, one record at a time.
      const Event& e = r->peek(i);
      const uint64_t extra = trailing_slots(e);
      if (i + 1 + extra > ready) break;  // cannot happen: records are published whole
      Event out = e;
      bool heap_sample = false;  // a HeapAlloc: its stack id (0: the stack table is full) and interval follow
      uint32_t heap_stack = 0;
      uint64_t heap_interval = 0;
      out.ts = clock_.to_ns(e.ts);
      switch (e.ref) {
        case NameRef::SourceLocation:
          out.loc = locations_.for_source(reinterpret_cast<const ringprof_source_location*>(e.p0));
          break;
        case NameRef::StaticString:
          out.loc = locations_.for_static_string(reinterpret_cast<const char*>(e.p0));
          // The ring's own drop marks are not the application's events: they
          // stay out of events_written, so recorded = written + dropped.
          if (is_drop_mark(e)) ++unrecorded_in_batch_;
          break;
        case NameRef::Inline: {
          name_buffer_.clear();
          for (uint64_t k = 0; k < extra; ++k) {
            const char* bytes = reinterpret_cast<const char*>(&r->peek(i + 1 + k));
            const size_t take = std::min<size_t>(sizeof(Event), e.extra - k * sizeof(Event));
            name_buffer_.append(bytes, take);
          }
          if (e.kind == EventKind::ThreadName) {
            t.info.name = name_buffer_;
            ++t.info.name_version;
            crash::note_thread_name(r, name_buffer_.data(), name_buffer_.size());
          } else {
            const char* stable = nullptr;
            out.loc = locations_.for_runtime_name(name_buffer_, &stable);
            out.ref = NameRef::StaticString;  // from here on p0 points at the interned copy
            out.p0 = reinterpret_cast<uintptr_t>(stable);
            if (e.kind == EventKind::ZoneArg) {
              // The inline text is the value; the key came as a static string in p1.
              out.p1 = out.loc;
              out.loc = locations_.for_static_string(reinterpret_cast<const char*>(e.p1));
            }
          }
          break;
        }
        case NameRef::None:
          if (e.kind == EventKind::HeapAlloc) {
            if (!heap_seen_) {  // the modules its addresses lie in go out with it
              heap_seen_ = true;
              modules_.refresh();
            }
            // 0 when the stack table is full (it warned once): the sample
            // still counts, under no stack, so the totals stay unbiased.
            heap_stack = intern_heap_stack(*r, i, e.loc, &heap_interval);
            heap_sample = true;
          }
          if (e.kind == EventKind::ZoneStack) {
            out.loc = intern_zone_stack(*r, i, e.extra);
            if (out.loc == 0) {  // the stack table is full: the zone keeps no stack
              i += 1 + extra;
              continue;
            }
            break;
          }
          [[fallthrough]];
        default:
          // Memory events name their pool by index; its name is interned like
          // any static string (the pool table keeps the caller's pointer).
          out.loc = kind_is_memory(e.kind) ? locations_.for_static_string(memory_pools::name(e.extra)) : 0;
          break;
      }
      // A name stays reachable through p0 (SourceLocation or string pointer)
      // while the event waits in the batch: the crash flush cannot use the
      // registry. Sinks read loc, never p0.
      if (out.ref == NameRef::Inline || out.ref == NameRef::None) {
        out.ref = NameRef::None;
        if (!kind_is_memory(e.kind)) out.p0 = 0;  // memory events keep their address there
      }
      out.extra = 0;
      if (!kind_has_value(e.kind)) out.p1 = 0;  // producers leave it stale
      i += 1 + extra;
      if (!kind_is_ring_record(e.kind)) continue;
      events_.push_back(out);
      ++run.count;
      if (heap_sample) {  // its stack follows it directly (event.h)
        Event st{};
        st.ts = out.ts;
        st.kind = EventKind::HeapStack;
        st.loc = heap_stack;
        st.p1 = heap_interval;
        events_.push_back(st);
        ++run.count;
        ++unrecorded_in_batch_;
      }
      batch_first_ns_ = std::min(batch_first_ns_, out.ts);
      batch_last_ns_ = std::max(batch_last_ns_, out.ts);
    }
    r->consume(i);
    budget -= i;
    if (run.count == 0) runs_.pop_back();
  }
}

void Drainer::discard_batch() {
  samples_in_batch_ = 0;
  unrecorded_in_batch_ = 0;
  events_.clear();
  runs_.clear();
  batch_first_ns_ = ~0ull;
  batch_last_ns_ = 0;
  for (auto& [index, t] : threads_) t.in_batch = false;
}

void Drainer::wait_for_writer() {
  // The writer wakes the drainer (drainer_wake) once it has room. Not a
  // round's sleep: a drainer left behind at stop() waits here while the next
  // session's sleeps between rounds, and must not touch the flags that tell
  // producers to wake that one (prepare_to_wait).
  while (writer_->full()) {
    const uint32_t seq = drainer_wake::prepare_to_wait();
    if (!writer_->full()) return;
    drainer_wake::wait(seq, 10'000'000ull);
  }
}

bool Drainer::emit_batch(bool wait) {
  // A crash flush in progress takes this batch; never write it beside it.
  if (crash::park_point(events_.data(), events_.size(), runs_.data(), runs_.size())) {
    discard_batch();
    return true;
  }
  batch_threads_.clear();
  for (auto& [index, t] : threads_) {
    if (t.in_batch || t.info.dropped_ring || t.info.dropped_io || t.info.samples_lost)
      batch_threads_.push_back(t.info);
  }
  if (events_.empty() && batch_threads_.empty() && !gpu_.has_pending()) return true;
  if (writer_->full()) {
    if (!wait) return false;
    wait_for_writer();
  }
  std::sort(batch_threads_.begin(), batch_threads_.end(),
            [](const ThreadInfo& a, const ThreadInfo& b) { return a.index < b.index; });
  std::unique_ptr<WriteJob> job = writer_->take_job();
  WriteJob& j = *job;
  j.has_batch = true;
  j.sequence = sequence_++;
  const bool full = events_.size() >= std::max<uint32_t>(config_.batch_events, 1024);
  j.events.swap(events_);  // the job's emptied vector (capacity kept) becomes the next batch's
  j.runs.swap(runs_);
  j.threads = batch_threads_;
  const size_t sent[4] = {locations_sent_, stacks_sent_, modules_sent_, gpu_names_sent_};
  const std::vector<Location>& locations = locations_.all();
  j.new_locations.assign(locations.begin() + static_cast<ptrdiff_t>(locations_sent_), locations.end());
  locations_sent_ = locations.size();
  const auto stacks = stacks_.all();
  j.new_stacks.assign(stacks.begin() + static_cast<ptrdiff_t>(stacks_sent_), stacks.end());
  stacks_sent_ = stacks.size();
  const auto modules = modules_.all();
  j.new_modules.assign(modules.begin() + static_cast<ptrdiff_t>(modules_sent_), modules.end());
  modules_sent_ = modules.size();
  if (sampler_) j.sampler = sampler_->state();
  // The identity as of this batch, copied only when set_rank() moved it; the
  // encoder states it at each file start and on a new version.
  if (const uint32_t v = internal::rank_version(); v != rank_seen_) {
    RankInfo r = rank_info();
    rank_seen_ = r.version;
    rank_ = r.known() ? std::make_shared<const RankInfo>(std::move(r)) : nullptr;
  }
  j.rank = rank_;
  j.first_ns = j.events.empty() ? 0 : batch_first_ns_;
  j.last_ns = j.events.empty() ? 0 : batch_last_ns_;
  GpuRecords& gpu = gpu_.records();
  if (gpu_.active() || !gpu.pending().empty() || !gpu.devices().empty()) {
    j.gpu = gpu.pending();
    j.new_gpu_names.assign(gpu.names().begin() + static_cast<ptrdiff_t>(gpu_names_sent_), gpu.names().end());
    gpu_names_sent_ = gpu.names().size();
    j.gpu_devices = gpu.devices();
    j.gpu_stats = gpu.stats();
    if (gpu.first_ns() != ~0ull) {  // records with a time of their own
      j.first_ns = j.first_ns == 0 ? gpu.first_ns() : std::min(j.first_ns, gpu.first_ns());
      j.last_ns = std::max(j.last_ns, gpu.last_ns());
    }
  }
  j.samples = samples_in_batch_;
  j.unrecorded = unrecorded_in_batch_;
  // The counts go out with this batch; a batch the sink loses gives them
  // back (take_back_counts).
  for (const ThreadInfo& reported : batch_threads_) {
    ThreadState& t = threads_[reported.index];
    t.info.dropped_ring -= reported.dropped_ring;
    t.info.dropped_io -= reported.dropped_io;
    t.info.samples_lost -= reported.samples_lost;
  }
  gpu_.written();
  if (!writer_->give(std::move(job))) {
    // Lost before the writer saw it (counted there): the next batch carries
    // the table entries this one did.
    locations_sent_ = sent[0];
    stacks_sent_ = sent[1];
    modules_sent_ = sent[2];
    gpu_names_sent_ = sent[3];
  }
  events_.clear();
  runs_.clear();
  const size_t cap = std::max<uint32_t>(config_.batch_events, 1024);
  if (events_.capacity() < cap) events_.reserve(cap);
  if (full) advise_huge_pages(events_);  // the next one is likely to fill too (batch_memory.h)
  samples_in_batch_ = 0;
  unrecorded_in_batch_ = 0;
  for (auto& [index, t] : threads_) t.in_batch = false;
  batch_first_ns_ = ~0ull;
  batch_last_ns_ = 0;
  return true;
}

void Drainer::take_back_counts() {
  for (ThreadInfo& back : writer_->take_returned_counts()) {
    auto it = threads_.find(back.index);
    if (it == threads_.end()) {
      // The thread ended and was forgotten meanwhile: keep its counts (and
      // its name) until a batch carries them.
      ThreadState& t = threads_[back.index];
      t.info = back;
      continue;
    }
    ThreadInfo& info = it->second.info;
    info.dropped_ring += back.dropped_ring;
    info.dropped_io += back.dropped_io;
    info.samples_lost += back.samples_lost;
  }
}

void Drainer::reclaim_rings(bool all) {
  for (auto it = threads_.begin(); it != threads_.end();) {
    ThreadState& t = it->second;
    // A retired thread has made its last commit and its last drop before
    // setting the flag, so one more drain and drop count after seeing it
    // (acquire) leave nothing behind. On stop() (all), every ring goes.
    while (t.ring && (all || t.ring->retired()) && finish_ring(t, all)) {
    }
    if (!t.ring && !t.sampled && !t.in_batch && t.info.dropped_ring == 0 && t.info.dropped_io == 0 &&
        t.info.samples_lost == 0) {
      if (auto tid = index_by_tid_.find(t.info.tid); tid != index_by_tid_.end() && tid->second == it->first)
        index_by_tid_.erase(tid);
      it = threads_.erase(it);
    } else {
      ++it;
    }
  }
}

}  // namespace ringprof

// Detailed windows: torch.profiler-style schedules, the duty cycle and
// on-demand requests. See ringprof/ops.h for the semantics and level_windows.h for
// which thread runs what.
#include "operation/level_windows.h"

#include <time.h>

#include <atomic>
#include <mutex>
#include <vector>

#include "operation/detail_level.h"
#include "ringprof/detail_zone.h"
#include "ringprof/internal/session_hooks.h"
#include "ringprof/memory.h"
#include "ringprof/ops.h"
#include "ringprof/rank.h"
#include "ringprof/recording.h"
#include "ringprof/sink.h"

namespace ringprof {

ScheduleAction schedule_action(const Schedule& s, uint64_t step) noexcept {
  // torch/profiler/profiler.py, schedule(): the same arithmetic.
  if (s.active == 0) return ScheduleAction::None;
  if (step < s.skip_first) return ScheduleAction::None;
  step -= s.skip_first;
  const uint64_t cycle = uint64_t{s.wait} + s.warmup + s.active;
  if (s.repeat > 0 && step / cycle >= s.repeat) return ScheduleAction::None;
  const uint64_t m = step % cycle;
  if (m < s.wait) return ScheduleAction::None;
  if (m < uint64_t{s.wait} + s.warmup) return ScheduleAction::Warmup;
  return m < cycle - 1 ? ScheduleAction::Record : ScheduleAction::RecordAndSave;
}

namespace windows {
namespace {

constinit std::atomic<uint64_t> g_next_id{1};
uint64_t new_id() noexcept { return g_next_id.fetch_add(1, std::memory_order_relaxed); }

// Raises the detailed level for a window and records the window's opening
// marks, in the order that keeps every detailed event after them: while
// recording is on, the marks first, then the level (a thread that sees the
// raised level can only record after the marks' timestamps). From a base
// level of Off the hold must come first: it is what resumes recording, and
// marks recorded before it would be dropped.
template <class Marks>
void open_window(level::Hold h, Marks&& marks) noexcept {
  const bool recording = is_recording();
  if (!recording) level::hold(h, true);
  marks();
  if (recording) level::hold(h, true);
}

// Anything step-driven configured: the one load step() pays otherwise.
constinit std::atomic<bool> g_step_driven{false};

// Schedule (fields change only in set_schedule, rarely).
constinit std::atomic<uint32_t> g_skip_first{0}, g_wait{0}, g_warmup{0}, g_active{0}, g_repeat{0};
constinit std::atomic<uint64_t> g_sched_step{0};
constinit std::atomic<uint64_t> g_sched_window{0};
constinit std::atomic<bool> g_sched_recording{false};  // the open window got past its warmup

// Duty cycle.
constinit std::atomic<uint32_t> g_duty_steps{0};
constinit std::atomic<uint64_t> g_duty_every{0};
constinit std::atomic<uint64_t> g_duty_next_due{0};
constinit std::atomic<uint64_t> g_duty_left{0};
constinit std::atomic<uint64_t> g_duty_window{0};

// On demand. A request bounded by steps waits in g_trig_pending_* for the
// next step() call, which opens it: the window's begin mark, its countdown and
// that step's Step event are then recorded by one thread in that order, so the
// window holds exactly the steps it counts. (Opened from the requesting
// thread, a step() racing the request could land inside the window by time
// and yet miss the countdown.)
constinit std::atomic<uint64_t> g_trig_pending{0};  // window id, 0 = none
constinit std::atomic<uint64_t> g_trig_pending_steps{0};
constinit std::atomic<uint64_t> g_trig_pending_duration{0};
constinit std::atomic<uint64_t> g_trig_window{0};
constinit std::atomic<uint64_t> g_trig_left{0};
constinit std::atomic<uint64_t> g_trig_deadline{0};

// Completed window ids, handed to the drainer (multi-producer, one consumer).
constexpr size_t kDoneSlots = 64;
constinit std::atomic<uint64_t> g_done[kDoneSlots] = {};
constinit std::atomic<uint64_t> g_done_head{0};
uint64_t g_done_tail = 0;  // drainer thread only

void update_step_driven() noexcept {
  g_step_driven.store(g_active.load(std::memory_order_relaxed) != 0 ||
                          g_duty_steps.load(std::memory_order_relaxed) != 0 ||
                          g_trig_left.load(std::memory_order_relaxed) != 0 ||
                          g_trig_pending.load(std::memory_order_relaxed) != 0,
                      std::memory_order_relaxed);
}

void completed(uint64_t id, bool notify = true) noexcept {
  mark(kMarkWindowEnd, id);
  if (!notify) return;
  const uint64_t slot = g_done_head.fetch_add(1, std::memory_order_acq_rel);
  g_done[slot % kDoneSlots].store(id, std::memory_order_release);
}

Schedule load_schedule() noexcept {
  Schedule s;
  s.skip_first = g_skip_first.load(std::memory_order_relaxed);
  s.wait = g_wait.load(std::memory_order_relaxed);
  s.warmup = g_warmup.load(std::memory_order_relaxed);
  s.active = g_active.load(std::memory_order_relaxed);
  s.repeat = g_repeat.load(std::memory_order_relaxed);
  return s;
}

// A window that ends during its warmup (stop(), a new schedule) recorded no
// active step: it gets its end mark but, as in torch, no completion callback.
void close_schedule_window() noexcept {
  if (const uint64_t id = g_sched_window.exchange(0, std::memory_order_acq_rel))
    completed(id, g_sched_recording.exchange(false, std::memory_order_acq_rel));
}

void schedule_step() noexcept {
  const Schedule s = load_schedule();
  if (s.active == 0) return;
  const uint64_t k = g_sched_step.fetch_add(1, std::memory_order_relaxed);
  const ScheduleAction a = schedule_action(s, k);
  const ScheduleAction p = k == 0 ? ScheduleAction::None : schedule_action(s, k - 1);
  const bool recording = a == ScheduleAction::Record || a == ScheduleAction::RecordAndSave;
  // The previous step was the last active one (RECORD_AND_SAVE): its window
  // is complete at this boundary.
  if (p == ScheduleAction::RecordAndSave) close_schedule_window();
  if (a == ScheduleAction::Warmup && p != ScheduleAction::Warmup) {
    const uint64_t id = new_id();
    g_sched_window.store(id, std::memory_order_release);
    open_window(level::kHoldSchedule, [id] { mark(kMarkWindowWarmup, id); });
  }
  if (recording && p != ScheduleAction::Record) {
    uint64_t id = g_sched_window.load(std::memory_order_acquire);
    if (p != ScheduleAction::Warmup || id == 0) {
      id = new_id();
      g_sched_window.store(id, std::memory_order_release);
      g_sched_recording.store(true, std::memory_order_release);
      open_window(level::kHoldSchedule, [id] { mark(kMarkWindowBegin, id); });
    } else {  // after its warmup the window is at the detailed level already
      g_sched_recording.store(true, std::memory_order_release);
      mark(kMarkWindowBegin, id);
    }
  }
  if (a == ScheduleAction::None && p != ScheduleAction::None) {
    close_schedule_window();
    level::hold(level::kHoldSchedule, false);
  }
}

void close_duty_window() noexcept {
  if (const uint64_t id = g_duty_window.exchange(0, std::memory_order_acq_rel)) {
    completed(id);
    level::hold(level::kHoldDuty, false);
  }
}

void duty_step() noexcept {
  const uint32_t steps = g_duty_steps.load(std::memory_order_relaxed);
  if (steps == 0) return;
  if (g_duty_window.load(std::memory_order_acquire) != 0) {
    if (g_duty_left.fetch_sub(1, std::memory_order_relaxed) <= 1) close_duty_window();
    return;
  }
  const uint64_t now = internal::monotonic_ns();
  uint64_t due = g_duty_next_due.load(std::memory_order_relaxed);
  if (now < due) return;
  if (!g_duty_next_due.compare_exchange_strong(due, now + g_duty_every.load(std::memory_order_relaxed)))
    return;  // another stepping thread opened it
  const uint64_t id = new_id();
  g_duty_left.store(steps, std::memory_order_relaxed);
  // The hold is up before the window is visible, so a concurrent step that
  // closes it always finds the hold to release.
  open_window(level::kHoldDuty, [id] { mark(kMarkWindowBegin, id); });
  g_duty_window.store(id, std::memory_order_release);
}

void close_trigger_window() noexcept {
  if (const uint64_t id = g_trig_window.exchange(0, std::memory_order_acq_rel)) {
    g_trig_left.store(0, std::memory_order_relaxed);
    g_trig_deadline.store(0, std::memory_order_relaxed);
    update_step_driven();
    completed(id);
    level::hold(level::kHoldTrigger, false);
  }
}

// Opens trigger window `id` now on the calling thread: `steps` step() calls
// from now close it (0 = not bounded by steps), and so does `duration_ns`
// from now (0 = not bounded by time).
void open_trigger_window(uint64_t id, uint64_t steps, uint64_t duration_ns) noexcept {
  open_window(level::kHoldTrigger, [id] {
    mark(kMarkTrigger, id);
    mark(kMarkWindowBegin, id);
  });
  g_trig_deadline.store(duration_ns ? internal::monotonic_ns() + duration_ns : 0, std::memory_order_relaxed);
  g_trig_left.store(steps, std::memory_order_relaxed);
  g_trig_window.store(id, std::memory_order_release);
  update_step_driven();
}

void trigger_step() noexcept {
  if (g_trig_pending.load(std::memory_order_relaxed) != 0) {
    if (const uint64_t id = g_trig_pending.exchange(0, std::memory_order_acq_rel)) {
      // This step is the window's first: its Step event follows the begin
      // mark. A window a racing request left open ends here first.
      close_trigger_window();
      open_trigger_window(id, g_trig_pending_steps.load(std::memory_order_relaxed),
                          g_trig_pending_duration.load(std::memory_order_relaxed));
      return;
    }
  }
  if (g_trig_left.load(std::memory_order_relaxed) == 0) return;
  if (g_trig_left.fetch_sub(1, std::memory_order_relaxed) == 1) close_trigger_window();
}

std::mutex g_callbacks_mutex;
std::vector<std::pair<int, std::function<void(uint64_t)>>>* g_callbacks = nullptr;  // immortal
int g_next_callback = 1;

}  // namespace

void on_step() noexcept {
  if (!g_step_driven.load(std::memory_order_relaxed)) return;
  schedule_step();
  duty_step();
  trigger_step();
}

void session_started(const OpsConfig& cfg) {
  if (cfg.schedule.active != 0) set_schedule(cfg.schedule);
  if (cfg.duty_cycle.steps != 0) set_duty_cycle(cfg.duty_cycle);
}

void session_stopping() noexcept {
  // Every window open now ends with the recording: its end mark is the last
  // thing it records, and the completion callbacks still run. A request still
  // waiting for its first step never opened and leaves nothing.
  g_trig_pending.store(0, std::memory_order_relaxed);
  close_schedule_window();
  close_duty_window();
  close_trigger_window();
}

void reset_after_fork() noexcept {
  g_sched_window.store(0);
  g_duty_window.store(0);
  g_trig_pending.store(0);
  g_trig_window.store(0);
  g_trig_left.store(0);
  g_trig_deadline.store(0);
  g_sched_step.store(0);
  g_duty_next_due.store(0);
  g_done_head.store(0);
  g_done_tail = 0;
  for (auto& d : g_done) d.store(0);
  update_step_driven();
}

void check_deadlines(uint64_t now) noexcept {
  const uint64_t deadline = g_trig_deadline.load(std::memory_order_relaxed);
  if (deadline != 0 && now >= deadline && g_trig_window.load(std::memory_order_acquire) != 0) close_trigger_window();
}

size_t take_completed(uint64_t* ids, size_t max) noexcept {
  size_t n = 0;
  const uint64_t head = g_done_head.load(std::memory_order_acquire);
  while (g_done_tail < head && n < max) {
    const uint64_t id = g_done[g_done_tail % kDoneSlots].exchange(0, std::memory_order_acq_rel);
    if (id == 0) break;  // claimed but not stored yet: next round
    ids[n++] = id;
    ++g_done_tail;
  }
  return n;
}

void run_callbacks(uint64_t id) {
  std::vector<std::function<void(uint64_t)>> copy;
  {
    std::lock_guard<std::mutex> lock(g_callbacks_mutex);
    if (!g_callbacks) return;
    for (const auto& [cid, fn] : *g_callbacks) copy.push_back(fn);
  }
  for (const auto& fn : copy) fn(id);
}

}  // namespace windows

// ---- public API ----

void set_schedule(const Schedule& s) {
  windows::close_schedule_window();
  level::hold(level::kHoldSchedule, false);
  windows::g_active.store(0, std::memory_order_relaxed);  // no step sees a half-written schedule as active
  windows::g_skip_first.store(s.skip_first, std::memory_order_relaxed);
  windows::g_wait.store(s.wait, std::memory_order_relaxed);
  windows::g_warmup.store(s.warmup, std::memory_order_relaxed);
  windows::g_repeat.store(s.repeat, std::memory_order_relaxed);
  windows::g_sched_step.store(0, std::memory_order_relaxed);
  windows::g_active.store(s.active, std::memory_order_release);
  windows::update_step_driven();
}

void set_duty_cycle(const DutyCycle& d) {
  windows::close_duty_window();
  windows::g_duty_steps.store(0, std::memory_order_relaxed);
  windows::g_duty_every.store(d.every_ns, std::memory_order_relaxed);
  windows::g_duty_next_due.store(0, std::memory_order_relaxed);  // the first window opens at the next step
  windows::g_duty_steps.store(d.steps, std::memory_order_release);
  windows::update_step_driven();
}

uint64_t request_window(uint64_t steps, uint64_t duration_ns) noexcept {
  if (!level::session_running()) return 0;
  // A new request replaces the open window and one still waiting for a step.
  windows::g_trig_pending.store(0, std::memory_order_relaxed);
  windows::close_trigger_window();
  if (steps == 0 && duration_ns == 0) duration_ns = 10'000'000'000ull;
  const uint64_t id = windows::new_id();
  if (steps == 0) {  // bounded by time alone: it opens now
    windows::open_trigger_window(id, 0, duration_ns);
    return id;
  }
  windows::g_trig_pending_steps.store(steps, std::memory_order_relaxed);
  windows::g_trig_pending_duration.store(duration_ns, std::memory_order_relaxed);
  windows::g_trig_pending.store(id, std::memory_order_release);
  windows::update_step_driven();
  return id;
}

int on_window_complete(std::function<void(uint64_t)> fn) {
  std::lock_guard<std::mutex> lock(windows::g_callbacks_mutex);
  if (!windows::g_callbacks) windows::g_callbacks = new std::vector<std::pair<int, std::function<void(uint64_t)>>>();
  windows::g_callbacks->emplace_back(windows::g_next_callback, std::move(fn));
  return windows::g_next_callback++;
}

void remove_window_callback(int id) {
  std::lock_guard<std::mutex> lock(windows::g_callbacks_mutex);
  if (!windows::g_callbacks) return;
  for (auto it = windows::g_callbacks->begin(); it != windows::g_callbacks->end(); ++it) {
    if (it->first == id) {
      windows::g_callbacks->erase(it);
      return;
    }
  }
}

}  // namespace ringprof

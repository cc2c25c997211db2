// ringprof/ops.h — always-on operation: detail levels, schedules, the duty
// cycle, on-demand windows and operational marks.
//
// Detail levels. A process records at one of three levels, switched at run
// time without restarting anything:
//   Off        nothing is recorded (the drainer keeps running, so a trigger or
//              a schedule can still open a detailed window);
//   AlwaysOn   the cheap level: zones, counters, steps, instants, flows; the
//              sampler at its low rate, GPU kernels only when asked for;
//   Detailed   everything of AlwaysOn plus RINGPROF_ZONE_DETAIL zones, and
//              what sources that subscribe to the level add (higher sampling
//              rate, every GPU activity kind, memory events).
// The *effective* level is the base level (RINGPROF_MODE, set_mode()) raised
// to Detailed while any window is open (a schedule, the duty cycle, a trigger).
//
// Windows. A window is a stretch of detailed recording with a process-unique
// id (from 1). It is delimited in the files by Mark events (see kMark*), so
// `ringprof extract --window-id N` finds it. Schedules follow
// torch.profiler.schedule(): steps are counted from the first step() after
// the schedule was set; the first `skip_first` steps record nothing extra,
// then cycles of `wait` (nothing), `warmup` (Detailed, marked as warmup) and
// `active` (Detailed, one window per cycle; the last active step is
// torch's RECORD_AND_SAVE: the window closes at the next step()), `repeat`
// cycles (0 = forever). A step() call opens step n: marks for the boundary
// are recorded before the Step event, so the Step events between a window's
// begin and end marks are exactly its active steps.
//
// Mark events (EventKind::Mark; loc names the mark, p1 is its value):
//   ringprof.mode            the effective level changed; value = Level
//   ringprof.window.warmup   a scheduled window's warmup began; value = window id
//   ringprof.window.begin    a window's detailed recording began; value = window id
//   ringprof.window.end      a window closed; value = window id
//   ringprof.trigger         an on-demand request opened the window that follows; value = window id
//   ringprof.crash           a fatal signal; value = signal | (kernel tid << 32)
//   ringprof.signal          SIGTERM/SIGINT: files flushed before the signal is re-raised; value = signal
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "ringprof/level.h"

namespace ringprof {


inline constexpr const char* kMarkMode = "ringprof.mode";
inline constexpr const char* kMarkWindowWarmup = "ringprof.window.warmup";
inline constexpr const char* kMarkWindowBegin = "ringprof.window.begin";
inline constexpr const char* kMarkWindowEnd = "ringprof.window.end";
inline constexpr const char* kMarkTrigger = "ringprof.trigger";
inline constexpr const char* kMarkCrash = "ringprof.crash";
inline constexpr const char* kMarkSignal = "ringprof.signal";

// ---- schedules (torch.profiler.schedule semantics) ----

struct Schedule {
  uint32_t skip_first = 0;
  uint32_t wait = 0;
  uint32_t warmup = 0;
  uint32_t active = 0;   // 0: no schedule
  uint32_t repeat = 0;   // cycles; 0 = forever
};

enum class ScheduleAction : uint8_t { None, Warmup, Record, RecordAndSave };
// What torch's schedule returns for step `step` (0-based).
ScheduleAction schedule_action(const Schedule& s, uint64_t step) noexcept;

// "skip_first=10,wait=5,warmup=1,active=3,repeat=2" (any subset, any order).
bool parse_schedule(std::string_view text, Schedule* out, std::string* error);

// Installs a schedule; its step 0 is the next step() call. An active==0
// schedule removes it. A window still open is closed first.
void set_schedule(const Schedule& s);

// One detailed window of `steps` steps every `every_ns`; the first opens at
// the first step() after it is set. steps == 0 removes it.
struct DutyCycle {
  uint32_t steps = 0;
  uint64_t every_ns = 0;
};
// "steps=20,every=10m" (durations as the tools take them: 500ms, 2.5s, 10m, 1h).
bool parse_duty_cycle(std::string_view text, DutyCycle* out, std::string* error);
void set_duty_cycle(const DutyCycle& d);

// Asks for an on-demand window (what `ringprof trigger` does). With `steps`,
// it opens at the next step() call and holds that step and the next
// `steps - 1` (it closes at the `steps`-th step() call after the one that
// opened it, or `duration_ns` after opening, whichever comes first); a
// process that never calls step() never opens it. Without `steps` it opens
// now and lasts `duration_ns` (both 0 = 10 s). A new request replaces the
// window open or waiting. Returns its id, 0 when not recording.
uint64_t request_window(uint64_t steps, uint64_t duration_ns) noexcept;

// Called on the drainer thread once a window has closed and every event up to
// its end mark has been handed to the sink (so the files hold the window).
// Returns an id for remove_window_callback().
int on_window_complete(std::function<void(uint64_t window_id)> fn);
void remove_window_callback(int id);

// Called on the drainer thread when the effective level has changed, with the
// new level, soon after the change (a change wakes the drainer): what sources
// that follow the level subscribe with (the Python package's PyTorch operator
// capture). A callback must not call start/stop/flush. Returns an id
// for remove_level_callback().
int on_level_change(std::function<void(Level level)> fn);
void remove_level_callback(int id);

// Records an operational mark on the calling thread. `static_name` must have
// static storage duration.
void mark(const char* static_name, uint64_t value) noexcept;

// What forked children do (RINGPROF_FORK).
enum class ForkPolicy : uint8_t { Off = 0, Record = 1 };

// Operational settings, part of Config (RINGPROF_* variables in brackets).
struct OpsConfig {
  Level mode = Level::AlwaysOn;        // RINGPROF_MODE: always_on | detailed | off
  Schedule schedule;                   // RINGPROF_SCHEDULE
  DutyCycle duty_cycle;                // RINGPROF_DUTY_CYCLE
  ForkPolicy fork = ForkPolicy::Off;   // RINGPROF_FORK: off | record
  bool crash_flush = true;             // RINGPROF_CRASH_FLUSH: fatal signals write what the rings hold
  bool signal_flush = true;            // RINGPROF_SIGNAL_FLUSH: SIGTERM/SIGINT flush, when the app has no handler
  uint32_t trigger_poll_ms = 100;      // RINGPROF_TRIGGER_POLL_MS: how often the control file is looked for (0 = never)
};

// Reads the variables above into `ops`; malformed values keep the default and
// add a warning line (to `warnings` when given, else stderr).
void ops_config_from_env(OpsConfig& ops, std::vector<std::string>* warnings);
// Where settings come from: the value of a variable such as "RINGPROF_MODE",
// or null when it is not set. config_from_env() looks in the environment; the
// Python package looks in start()'s keywords first.
using SettingLookup = std::function<const char*(const char* name)>;
void ops_config_from(OpsConfig& ops, const SettingLookup& lookup, std::vector<std::string>* warnings);

}  // namespace ringprof

// level_windows.h (internal) — detailed windows: scheduled (torch.profiler
// semantics), duty cycle and on demand; their marks, ids and completion.
//
// Step-driven parts run inside step() on the application's thread: a few
// relaxed atomics when nothing is configured, a level change (detail_level.h)
// at a window's edges. Time-driven parts (a trigger's --seconds, the
// completion callbacks) run on the drainer thread.
#pragma once

#include <cstdint>

#include "ringprof/ops.h"

namespace ringprof::windows {

// Called by step() before its Step event, so a boundary's marks precede it.
void on_step() noexcept;

// Session hooks: install the configured schedule/duty cycle; close open
// windows (their end marks) before recording stops.
void session_started(const OpsConfig& cfg);
void session_stopping() noexcept;
void reset_after_fork() noexcept;

// Drainer thread. Closes a time-bounded window whose time is up.
void check_deadlines(uint64_t now_ns) noexcept;
// Window ids that completed since the last call (up to `max`), oldest first.
size_t take_completed(uint64_t* ids, size_t max) noexcept;
// Runs the on_window_complete callbacks for `id`.
void run_callbacks(uint64_t id);

}  // namespace ringprof::windows

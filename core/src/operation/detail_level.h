// detail_level.h (internal) — the process-wide detail level and who listens.
//
// State: a base level (RINGPROF_MODE, set_mode()) and a set of "holds", one
// bit per kind of open window (schedule, duty cycle, trigger). The effective
// level is Detailed while any hold is set, else the base level. Changes are
// serialised by a short spin (they are rare: a mode switch, a window edge);
// the recording path only ever loads `internal::g_effective_mode`.
//
// Off pauses recording without stopping it: the session switch that every
// event checks (internal::g_session) reads 0 while the drainer keeps running,
// so a trigger or a schedule can turn it back on. Each thread's ring stays
// attached; resuming stores the same session id again.
//
// Subscribers (event sources: the sampler, the GPU activity source, memory
// events) register a callback that the drainer thread calls with the new
// effective level whenever it changed since its last look (at most once per
// drainer round; a change wakes the drainer, so that is within its wake-up
// time, not a whole RINGPROF_DRAIN_MS later), and once with the current
// level when a recording session starts. A source switches its own rate or
// activity kinds there; no callback ever runs on an application thread or
// inside the level change itself.
#pragma once

#include <cstdint>
#include <functional>

#include "ringprof/ops.h"

namespace ringprof::level {

enum Hold : uint32_t { kHoldSchedule = 1u << 0, kHoldDuty = 1u << 1, kHoldTrigger = 1u << 2 };

// Sets or clears a hold (window open / closed). Records the mode mark when
// the effective level changes.
void hold(Hold h, bool on) noexcept;

// Recorder hooks. session_starting() sets the base level for the new session
// and returns the value to publish in internal::g_session (0 when it starts
// paused at Off); session_started() records the first mode mark;
// session_stopping() forgets the session so no level change revives it.
uint32_t session_starting(uint32_t session, Level base) noexcept;
void session_started() noexcept;
void session_stopping() noexcept;
// In a forked child: no session, no holds, nothing spinning.
void reset_after_fork() noexcept;

// True between session_starting() and session_stopping().
bool session_running() noexcept;

// Bumped on every change of the effective level.
uint64_t version() noexcept;

// ---- subscribers ----
using ModeCallback = std::function<void(Level)>;
int subscribe(ModeCallback cb);
void unsubscribe(int id);
// Drainer thread: calls every subscriber when the level changed since
// *seen_version (and sets it). Returns true when it called them.
bool notify_if_changed(uint64_t* seen_version);

}  // namespace ringprof::level

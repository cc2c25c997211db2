// ops_hooks.h (internal) — the few calls the recorder and the drainer make
// into the operations code (levels, windows, triggers, crash and signal
// flush, fork policy), so that their own files change by a line per hook.
#pragma once

#include <sys/types.h>

#include <cstdint>

#include "ringprof/config.h"
#include "ringprof/sink.h"

namespace ringprof::ops {

// ---- recorder (recorder.cpp) ----
// start(): returns the value to publish in internal::g_session (0 while the
// session starts at level Off); started() runs once it is published.
uint32_t session_starting(uint32_t session, const Config& config) noexcept;
void session_started(const Config& config);
// stop(): before the session switch goes to 0 (closes open windows).
void session_stopping() noexcept;
// step() and step(n), before the Step event.
void on_step() noexcept;
// The fork handler in the child: forget the parent's operations state.
void after_fork_child() noexcept;
// Then, when the parent was recording: RINGPROF_FORK=record starts the
// child's own session (new files under its own pid).
void fork_child_policy() noexcept;

// ---- drainer (drainer.cpp), all on the drainer thread ----
struct DrainerOps {
  OpsConfig config;
  uint64_t mode_version_seen = ~0ull;
  uint64_t completed[64] = {};
  size_t n_completed = 0;
};
// After begin_session: publishes the sink and clock for the crash handler,
// tells subscribers the starting level.
void drainer_begin(DrainerOps& ops, Sink& sink, uint32_t session, const ClockCalibration& clock);
// Each round, before the rings are drained: time-bounded windows, level
// subscribers. True when the batch should be written this round (a window
// completed: its callbacks, ops.completed, wait for its events to be written).
bool drainer_round(DrainerOps& ops, uint64_t now_ns);
// True when the level changed since the subscribers last heard: the drainer
// checks it after drainer_wake::prepare_to_sleep(), so a change whose wake
// came while it was busy is not slept through.
bool drainer_level_pending(const DrainerOps& ops) noexcept;
// Runs the window-complete callbacks still in ops.completed.
void drainer_after_write(DrainerOps& ops);
// On the writer thread (the sink's thread), every OpsConfig::trigger_poll_ms:
// a trigger request that arrived opens its window and is acknowledged.
void poll_trigger(Sink& sink);
// True once SIGTERM/SIGINT arrived: the drainer finishes like stop().
bool drainer_should_stop() noexcept;
// The clock mapping changed (refine()).
void drainer_clock(const ClockCalibration& clock) noexcept;
// After end_session: the crash handler forgets the sink; a pending SIGTERM
// or SIGINT is re-raised now that everything is written.
void drainer_end(DrainerOps& ops);

}  // namespace ringprof::ops

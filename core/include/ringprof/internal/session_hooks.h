// ringprof/internal/session_hooks.h — how start(config) (libringprof's sinks,
// ringprof/session.h) and the recorder (core) reach each other without the
// core naming a sink. Not public API: it may change in any release.
#pragma once

#include "ringprof/recording.h"

namespace ringprof {

struct Config;

namespace internal {
// Called at the end of every stop() with the session's final stats, under
// the recorder's lock (it must not call start/stop/flush). One observer;
// null removes it. Used by RINGPROF_STATS_FILE (sinks/src/session_start.cpp).
void set_stop_observer(void (*observer)(const RecorderStats&)) noexcept;
// start(Config) (sinks/src/session_start.cpp) remembers its Config and itself
// for RINGPROF_FORK=record, which calls restart(config) in a forked child: the
// core names no sink. Starting with a caller's sink forgets both (a child
// cannot recreate that sink).
void remember_start_config(const Config* config, bool (*restart)(const Config&)) noexcept;
}  // namespace internal

}  // namespace ringprof

// ringprof/ringprof.h — the public C++ API of ringprof, in one include.
//
//   ringprof::start();                       // config from RINGPROF_* variables
//   void forward() { RINGPROF_ZONE("forward"); ... }
//   RINGPROF_COUNTER("queue_depth", q.size());
//   ringprof::step();
//   ringprof::stop();                        // optional: exit() flushes too
//
// The parts, each of which also compiles on its own (ringprof/README.md says
// which headers are public):
//   ringprof/session.h      start() with the shipped sinks
//   ringprof/recording.h    stop/flush, zones, instants, counters, flows, steps
//   ringprof/detail_zone.h  RINGPROF_ZONE_DETAIL (ringprof/level.h: the level)
//   ringprof/memory.h       memory_pool(), memory_alloc(), memory_free()
//   ringprof/rank.h         the process's rank in a distributed job
//   ringprof/ops.h          schedules, windows, triggers, level callbacks
#pragma once

#include "ringprof/detail_zone.h"
#include "ringprof/heap.h"
#include "ringprof/memory.h"
#include "ringprof/ops.h"
#include "ringprof/rank.h"
#include "ringprof/recording.h"
#include "ringprof/session.h"

// ringprof/ringprof.h — the public C++ API of ringprof, in one include.
//
//   ringprof::start();                       // config from RINGPROF_* variables
//   void forward() { RINGPROF_ZONE("forward"); ... }
//   RINGPROF_COUNTER("queue_depth", q.size());
//   ringprof::step();
//   ringprof::stop();                        // optional: exit() flushes too
//
// The parts, each of which also compiles on its own:
//   ringprof/recording.h    start/stop, zones, instants, counters, flows, steps
//   ringprof/detail_zone.h  RINGPROF_ZONE_DETAIL and the detail-level API (ops.h)
//   ringprof/memory.h       memory_pool(), memory_alloc(), memory_free()
#pragma once

#include "ringprof/detail_zone.h"
#include "ringprof/memory.h"
#include "ringprof/rank.h"
#include "ringprof/recording.h"

// tools/testing/owned_batch.h — a Batch for tests and benchmarks that owns
// what it points to, so hand-built events, runs, threads and locations can be
// handed to a sink or an encoder. Header-only, test and benchmark use only.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <vector>

#include "ringprof/sink.h"

namespace ringprof::testing {

// Sets b.first_ns/last_ns to the earliest and latest event time (0 and 0 when
// there are none), whatever order the runs put the events in.
inline void set_time_range(Batch& b) {
  b.first_ns = b.last_ns = 0;
  if (b.events.empty()) return;
  b.first_ns = b.last_ns = b.events.front().ts;
  for (const Event& e : b.events) {
    b.first_ns = std::min(b.first_ns, e.ts);
    b.last_ns = std::max(b.last_ns, e.ts);
  }
}

struct OwnedBatch {
  std::vector<Event> events;
  std::vector<EventRun> runs;
  std::vector<ThreadInfo> threads;
  std::vector<Location> locations;
  std::vector<StackTrace> stacks;
  std::vector<ModuleInfo> modules;
  std::optional<SamplerState> sampler;
  uint64_t sequence = 0;

  // A view of this batch; valid while it lives unchanged.
  Batch batch() const {
    Batch b;
    b.sequence = sequence;
    b.events = events;
    b.runs = runs;
    b.threads = threads;
    b.locations = locations;
    b.stacks = stacks;
    b.modules = modules;
    b.sampler = sampler ? &*sampler : nullptr;
    set_time_range(b);
    return b;
  }
};

}  // namespace ringprof::testing

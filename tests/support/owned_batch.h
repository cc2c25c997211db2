// tests/support/owned_batch.h — a Batch for tests and benchmarks that owns
// what it points to, so hand-built events, runs, threads and locations can be
// handed to a sink or an encoder. Header-only, test and benchmark use only.
#pragma once

#include <cstdint>
#include <optional>
#include <vector>

#include "ringprof/sink.h"

namespace ringprof::test {

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

}  // namespace ringprof::test

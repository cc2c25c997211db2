// tests/support/service_batch.h — a realistic batch of nested zones, for the
// codec's tests and the encoder's benchmarks alike. Header-only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <random>

#include "ringprof/event.h"
#include "support/owned_batch.h"

namespace ringprof::test {

// Four threads, each a loop of request → {parse, compute → 3 × layer, serialize}
// with durations jittered around a few microseconds, as a service would show.
inline OwnedBatch service_batch(size_t n_events) {
  OwnedBatch s;
  const char* names[] = {"handle_request", "parse", "compute", "layer", "serialize"};
  for (uint32_t i = 0; i < 5; ++i) s.locations.push_back({i + 1, names[i], "run", "service.cpp", 10 * (i + 1)});
  std::mt19937_64 rng(7);
  std::uniform_int_distribution<uint64_t> jitter(800, 3000);
  const size_t per_thread = n_events / 4;
  for (uint32_t t = 0; t < 4; ++t) {
    s.threads.push_back({t + 1, 1000 + t, "worker", 1, 0, 0});
    EventRun run{t + 1, static_cast<uint32_t>(s.events.size()), 0};
    uint64_t ts = 1000000000ull + t * 333;
    auto push = [&](EventKind k, uint32_t loc) {
      Event e{};
      e.ts = ts += jitter(rng);
      e.kind = k;
      e.loc = loc;
      s.events.push_back(e);
      ++run.count;
    };
    while (run.count + 12 <= per_thread) {
      push(EventKind::ZoneBegin, 1);
      push(EventKind::ZoneBegin, 2);
      push(EventKind::ZoneEnd, 0);
      push(EventKind::ZoneBegin, 3);
      for (int l = 0; l < 3; ++l) {
        push(EventKind::ZoneBegin, 4);
        push(EventKind::ZoneEnd, 0);
      }
      push(EventKind::ZoneEnd, 0);
      push(EventKind::ZoneBegin, 5);
      push(EventKind::ZoneEnd, 0);
      push(EventKind::ZoneEnd, 0);
    }
    s.runs.push_back(run);
  }
  return s;
}

}  // namespace ringprof::test

// A sink for tests of the recording path: keeps a decoded copy of every batch
// (events, runs, thread infos, location names; stack samples, stacks, modules
// and the sampler's state) without any encoding, so core tests do not depend
// on the codec. Sample events are kept apart, in `samples`, so the tests that
// count a thread's events are not disturbed by the sampler.
#pragma once

#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "ringprof/internal/ring.h"
#include "ringprof/sink.h"

namespace ringprof::test {

struct CapturedEvent {
  Event event;
  uint32_t thread_index;
};

struct CapturedSample {
  uint64_t ts;
  uint32_t stack;  // StackTrace id
  uint32_t thread_index;
};

class CaptureSink : public Sink {
 public:
  void begin_session(const SessionInfo& s) override {
    std::lock_guard<std::mutex> lock(mutex_);
    session = s;
    began = true;
  }
  bool write(const Batch& b) override {
    std::lock_guard<std::mutex> lock(mutex_);
    if (fail_writes > 0) {
      --fail_writes;
      ++failed_batches;
      return false;
    }
    sequences.push_back(b.sequence);
    for (const EventRun& run : b.runs) {
      for (uint32_t i = 0; i < run.count; ++i) {
        const Event& e = b.events[run.begin + i];
        if (e.kind == EventKind::Sample)
          samples.push_back({e.ts, e.loc, run.thread_index});
        else
          events.push_back({e, run.thread_index});
      }
    }
    for (const ThreadInfo& t : b.threads) {
      ThreadInfo& mine = threads[t.index];
      const uint64_t ring = mine.dropped_ring + t.dropped_ring, io = mine.dropped_io + t.dropped_io;
      const uint64_t lost = mine.samples_lost + t.samples_lost;
      mine = t;
      mine.dropped_ring = ring;  // summed over batches: the batch carries deltas
      mine.dropped_io = io;
      mine.samples_lost = lost;
    }
    locations.assign(b.locations.begin(), b.locations.end());
    stacks.assign(b.stacks.begin(), b.stacks.end());
    modules.assign(b.modules.begin(), b.modules.end());
    if (b.sampler) sampler = *b.sampler;
    return true;
  }
  void end_session() override {
    std::lock_guard<std::mutex> lock(mutex_);
    ended = true;
  }

  std::string location_name(uint32_t id) const {
    return id >= 1 && id <= locations.size() ? locations[id - 1].name : std::string();
  }
  // The ring's own marks around a gap of dropped events (ringprof/internal/ring.h).
  bool is_drop_mark(const CapturedEvent& e) const {
    if (e.event.kind != EventKind::Mark) return false;
    const std::string name = location_name(e.event.loc);
    return name == kMarkDropsBegin || name == kMarkDropsEnd;
  }
  // The events the thread recorded that reached the sink (drop marks are not
  // among them).
  uint64_t count_for(uint32_t thread_index) const {
    uint64_t n = 0;
    for (const auto& e : events) n += e.thread_index == thread_index && !is_drop_mark(e);
    return n;
  }

  mutable std::mutex mutex_;
  SessionInfo session;
  bool began = false, ended = false;
  int fail_writes = 0;
  int failed_batches = 0;
  std::vector<uint64_t> sequences;
  std::vector<CapturedEvent> events;
  std::map<uint32_t, ThreadInfo> threads;  // by index, drops summed
  std::vector<Location> locations;
  std::vector<CapturedSample> samples;     // Sample events, in batch order
  std::vector<StackTrace> stacks;          // every stack known at the last batch
  std::vector<ModuleInfo> modules;         // every module known at the last batch
  std::optional<SamplerState> sampler;     // as of the last batch that carried one
};

}  // namespace ringprof::test

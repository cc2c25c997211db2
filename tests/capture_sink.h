// A sink for tests of the recording path: keeps a decoded copy of every batch
// (events, runs, thread infos, location names) without any encoding, so core
// tests do not depend on the codec.
#pragma once

#include <map>
#include <mutex>
#include <string>
#include <vector>

#include "ringprof/sink.h"

namespace ringprof::test {

struct CapturedEvent {
  Event event;
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
      for (uint32_t i = 0; i < run.count; ++i) events.push_back({b.events[run.begin + i], run.thread_index});
    }
    for (const ThreadInfo& t : b.threads) {
      ThreadInfo& mine = threads[t.index];
      const uint64_t ring = mine.dropped_ring + t.dropped_ring, io = mine.dropped_io + t.dropped_io;
      mine = t;
      mine.dropped_ring = ring;  // summed over batches: the batch carries deltas
      mine.dropped_io = io;
    }
    locations.assign(b.locations.begin(), b.locations.end());
    return true;
  }
  void end_session() override {
    std::lock_guard<std::mutex> lock(mutex_);
    ended = true;
  }

  std::string location_name(uint32_t id) const {
    return id >= 1 && id <= locations.size() ? locations[id - 1].name : std::string();
  }
  uint64_t count_for(uint32_t thread_index) const {
    uint64_t n = 0;
    for (const auto& e : events) n += e.thread_index == thread_index;
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
};

}  // namespace ringprof::test

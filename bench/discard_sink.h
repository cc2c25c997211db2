// A sink that counts what reaches it and stores nothing, so a benchmark times
// the application thread's recording path and not the file system.
#pragma once

#include <atomic>
#include <cstdint>

#include "ringprof/sink.h"

namespace ringprof::bench {

class DiscardSink : public Sink {
 public:
  void begin_session(const SessionInfo&) override {}
  bool write(const Batch& b) override {
    events += b.events.size();
    return true;
  }
  void end_session() override {}
  std::atomic<uint64_t> events{0};
};

}  // namespace ringprof::bench

// crash_source.h (internal) — the CrashEventSource the fatal-signal handler
// hands to the sink: the drainer's unwritten batch (when it parked) followed
// by the unread slots of every live ring of the session, then the crash mark.
// One static instance: only the thread that won the crash flush builds it.
#pragma once

#include "crash/crash_state.h"
#include "ringprof/crash.h"

namespace ringprof::crash {

class LiveCrashSource final : public CrashEventSource {
 public:
  // Fills the static instance: which rings, and how far each is readable
  // now (events recorded after this moment are not part of the crash).
  static LiveCrashSource& snapshot(const CrashInfo& info, const PendingBatch* pending, uint32_t session) noexcept;

  void for_each_thread(ThreadFn fn, void* ctx) const noexcept override;
  void for_each_event(EventFn fn, void* ctx) const noexcept override;
  // Marks every snapshotted slot as read.
  void consume_rings() noexcept;

 private:
  struct Snap {
    Ring* ring;
    uint64_t readable;
    const RingSlot* slot;
  };
  CrashInfo info_;
  PendingBatch pending_;
  ClockMap clock_;
  Snap rings_[kMaxRings];
  size_t n_rings_ = 0;
};

}  // namespace ringprof::crash

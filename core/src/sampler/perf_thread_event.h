// One thread's perf_event sampler: a task-clock software event with a fixed
// period (every sample stands for the same CPU time) that records the user
// call chain, plus the small mmap ring the kernel writes samples into.
//
// The application thread runs no code of ours per sample: the kernel takes
// the sample in its timer interrupt and appends it to the ring. Only the
// drainer reads the ring: it loads data_head with acquire, reads the records
// between data_tail and data_head, then stores data_tail with release to hand
// the space back. A full ring makes the kernel drop samples and later write a
// PERF_RECORD_LOST with their count, which becomes ThreadInfo::samples_lost.
// Timestamps are CLOCK_MONOTONIC (use_clockid), like drained events.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "sampler/sample_visitor.h"

namespace ringprof::sampler {

class PerfThreadEvent {
 public:
  // Opens the event for `tid` at `hz` samples per CPU second. On failure
  // returns null and sets *err to the errno (of perf_event_open or mmap).
  static std::unique_ptr<PerfThreadEvent> open(uint32_t tid, uint32_t hz, int* err);
  ~PerfThreadEvent();
  PerfThreadEvent(const PerfThreadEvent&) = delete;
  PerfThreadEvent& operator=(const PerfThreadEvent&) = delete;

  // Reads every record ready. Returns the samples read plus those the kernel
  // reported lost.
  uint64_t read(SampleVisitor& v, std::vector<unsigned char>& scratch);
  uint32_t tid() const noexcept { return tid_; }
  // Changes the sampling rate (PERF_EVENT_IOC_PERIOD) and enables the event;
  // hz == 0 disables it (paused: no samples until the next set_hz). Samples
  // already in the ring stay. False (errno set) when the kernel refuses.
  bool set_hz(uint32_t hz);

 private:
  PerfThreadEvent() = default;
  int fd_ = -1;
  uint32_t tid_ = 0;
  unsigned char* map_ = nullptr;
  size_t map_bytes_ = 0;
  unsigned char* data_ = nullptr;
  uint64_t data_size_ = 0;
  std::vector<uint64_t> frames_;
};

// Whether perf_event_open works here: probes on the calling thread. Returns 0
// or the errno of the refusal.
// The task clock's period for `hz` samples per CPU second (at least 10 µs).
uint64_t perf_period_ns(uint32_t hz);

int probe_perf_event(uint32_t hz);

}  // namespace ringprof::sampler

// The workload the trace exporters' field-by-field tests share (Chrome JSON
// and Perfetto), so both are checked against the same recording. Times are
// ns after 1 s on CLOCK_MONOTONIC (kWorkloadStart):
//   main (tid 5001): forward [1000, 4000] (model.cpp:42) containing
//     backward [2000, 2500]; flow 7 "batch" begins at 2100 inside backward;
//     counter loss = 0.5 at 3000; forward again from 8000, never closed;
//     counter loss = -1.25 at 9000 (the thread's last event).
//   loader (tid 5002): flow step at 5000, instant "checkpoint" (ckpt.cpp:7)
//     at 5500, flow end at 6000, step 3 at 7000.
// Two segments, the first ending after backward's end, so forward spans both.
#pragma once

#include <string>

#include "support/test_support.h"
#include "support/trace_builder.h"

namespace ringprof::test {

inline constexpr uint64_t kWorkloadStart = 1'000'000'000ull;

inline void write_exporter_workload(const std::string& path) {
  constexpr uint64_t T = kWorkloadStart;
  TraceBuilder b;
  const uint32_t forward = b.location("forward", "model.cpp", 42);
  const uint32_t backward = b.location("backward");
  const uint32_t loss = b.location("loss");
  const uint32_t checkpoint = b.location("checkpoint", "ckpt.cpp", 7);
  const uint32_t batch = b.location("batch");
  const uint32_t main_th = b.thread(5001, "main");
  const uint32_t loader = b.thread(5002, "loader");
  b.begin(main_th, T + 1000, forward);
  b.begin(main_th, T + 2000, backward);
  b.flow_begin(main_th, T + 2100, 7, batch);
  b.end(main_th, T + 2500);
  b.flush();
  b.counter(main_th, T + 3000, loss, 0.5);
  b.end(main_th, T + 4000);
  b.begin(main_th, T + 8000, forward);
  b.counter(main_th, T + 9000, loss, -1.25);
  b.flow_step(loader, T + 5000, 7);
  b.instant(loader, T + 5500, checkpoint);
  b.flow_end(loader, T + 6000, 7);
  b.step(loader, T + 7000, 3);
  b.flush();
  test::write_file(path, b.bytes());
}

}  // namespace ringprof::test

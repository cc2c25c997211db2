// A recording into files made in the test's own process, with nothing that
// runs on its own: no CPU sampler, no GPU, no crash or signal flush, no
// trigger polling; the drainer wakes every 2 ms. Start it with
// start(c, make_rolling_file_sink(c)) where several tests of one process
// record: start(Config) keeps an immortal copy of each Config it starts with
// (RINGPROF_FORK=record), which LeakSanitizer reports.
#pragma once

#include <string>

#include "ringprof/config.h"

namespace ringprof::test {

inline Config quiet_file_config(const std::string& dir) {
  Config c;
  c.dir = dir;
  c.sink = "file";
  c.sample_hz = 0;
  c.detailed_sample_hz = 0;
  c.gpu = false;
  c.drain_interval_ms = 2;
  c.ops.crash_flush = false;
  c.ops.signal_flush = false;
  c.ops.trigger_poll_ms = 0;
  return c;
}

}  // namespace ringprof::test

// ringprof/tools/trigger.h — asks a running process for a detailed window now
// (`ringprof trigger PID`), through the control file its drainer looks for
// (ringprof/control_file.h). No restart, no server, no signal.
#pragma once

#include <cstdint>
#include <string>

namespace ringprof {

struct TriggerOptions {
  uint32_t pid = 0;
  uint64_t steps = 0;           // close after this many step() calls
  uint64_t duration_ns = 0;     // close after this long (both 0: the process's default, 10 s)
  std::string dir;              // the process's ringprof directory ("": find it)
  uint64_t timeout_ns = 5'000'000'000ull;  // how long to wait for the answer
};

struct TriggerResult {
  bool ok = false;
  std::string error;
  std::string dir;        // where the request went
  uint64_t window_id = 0; // as the process answered
};

TriggerResult trigger_process(const TriggerOptions& options);

// The directory a process records into: the one holding the `.rpf.part` file
// it has open (/proc/PID/fd), else RINGPROF_DIR from /proc/PID/environ
// (relative to /proc/PID/cwd), else ./ringprof in its cwd. Same user or root.
bool find_ringprof_dir(uint32_t pid, std::string* dir, std::string* error);

}  // namespace ringprof

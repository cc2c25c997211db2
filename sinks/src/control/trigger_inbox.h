// trigger_inbox.h (internal) — the rolling-file sink's end of
// ringprof/control_file.h: looks for a request file in its directory, checks
// who wrote it, answers with the window id. Drainer thread only.
#pragma once

#include <cstdint>
#include <string>

#include "ringprof/sink.h"

namespace ringprof {

class TriggerInbox {
 public:
  void open(const std::string& dir, uint32_t pid);
  // A valid request that was waiting (the file is removed either way).
  bool poll(TriggerRequest* out);
  void answer(uint64_t window_id);

 private:
  std::string request_path_, answer_path_;
  bool warned_ = false;
};

}  // namespace ringprof

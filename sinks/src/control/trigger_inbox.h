// trigger_inbox.h (internal) — the rolling-file sink's end of
// ringprof/control_file.h: looks for a request file in its directory, checks
// who wrote it, answers with the window id. Writer thread only.
//
// An inotify watch on the directory (a request arrives by rename, or by a
// write that is closed) gives the writer a descriptor to sleep on, so an
// idle process looks for requests only when one may have come instead of
// every second. Where the watch cannot be made (no inotify, the directory
// missing or removed), wait_fd() is -1 and the writer asks on a timer; each
// poll() tries to make it again.
#pragma once

#include <cstdint>
#include <string>

#include "ringprof/sink.h"

namespace ringprof {

class TriggerInbox {
 public:
  TriggerInbox() = default;
  TriggerInbox(const TriggerInbox&) = delete;
  TriggerInbox& operator=(const TriggerInbox&) = delete;
  ~TriggerInbox() { close(); }

  // `watch`: make the inotify watch (an instance of the user's
  // fs.inotify.max_user_instances; none when triggers are off).
  void open(const std::string& dir, uint32_t pid, bool watch = true);
  void close();
  // A valid request that was waiting (the file is removed either way).
  bool poll(TriggerRequest* out);
  void answer(uint64_t window_id);
  // Readable when a request may have arrived; -1 while nothing is watched.
  int wait_fd() const noexcept { return watch_ >= 0 ? inotify_fd_ : -1; }

 private:
  void watch();
  void read_events();

  std::string dir_, request_path_, answer_path_;
  int inotify_fd_ = -1;
  int watch_ = -1;
  bool warned_ = false;
};

}  // namespace ringprof

// ringprof/control_file.h — how `ringprof trigger` asks a running process for
// a detailed window, with no server and no signal.
//
// The requester (same user as the process, or root) writes
// `<dir>/ringprof-<pid>.ctl`, where <dir> is the process's ringprof directory:
// created 0600 under a temporary name, then renamed into place so the process
// never reads half a request. The process's drainer looks for that name about
// every RINGPROF_TRIGGER_POLL_MS (one failed open(2) when there is none),
// accepts it only when it is a regular file (not followed if a symlink) owned
// by the process's own uid or by root and not readable or writable by group
// or others, deletes it, opens the window and answers in
// `<dir>/ringprof-<pid>.ack`. The requester checks first that it may signal
// the process at all (kill(pid, 0): the kernel's same-user-or-root rule).
//
// Request, one key=value per line (unknown keys are ignored):
//   steps=N        close after N step() calls
//   seconds=S      close after S seconds (decimal fraction allowed, ms resolution)
//   mode=detailed  the level of the window (the only one there is today)
// Answer: `window=N` (the window's id; 0 when the process is not recording).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "ringprof/sink.h"

namespace ringprof::control {

std::string request_path(const std::string& dir, uint32_t pid);
std::string answer_path(const std::string& dir, uint32_t pid);

std::string format_request(const TriggerRequest& r);
bool parse_request(std::string_view text, TriggerRequest* out);

std::string format_answer(uint64_t window_id);
bool parse_answer(std::string_view text, uint64_t* window_id);

// Writes `text` to `path` through a temporary file and a rename; mode 0600,
// O_EXCL|O_NOFOLLOW. Returns 0 or an errno.
int write_file_atomically(const std::string& path, const std::string& text);

}  // namespace ringprof::control

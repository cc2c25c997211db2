// common/small_file.h (internal) — reading a small file that someone else may
// control (a trigger's answer in a shared directory, a stats file): never
// blocks on a FIFO or a device, never follows a symbolic link, reads a
// bounded number of bytes.
#pragma once

#include <cstddef>
#include <string>

namespace ringprof::internal {

// The first `max_bytes` of the regular file at `path` (as long as it was when
// opened) in *out. False with *why set ("No such file or directory", "not a
// regular file", ...).
// `follow_links`: a symbolic link at `path` is followed (an executable found on
// PATH); by default it is refused, as a link planted in a shared directory.
bool read_small_file(const std::string& path, size_t max_bytes, std::string* out, std::string* why,
                     bool follow_links = false);

}  // namespace ringprof::internal

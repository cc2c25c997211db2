// posix_file.h — the few POSIX file operations the rolling-file sink needs,
// wrapped so that each returns an errno value (0 on success) instead of
// throwing: the sink runs on the drainer thread and must never throw.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace ringprof::posix {

// mkdir -p with mode 0755 (minus umask). Returns 0 when `dir` exists as a
// directory afterwards, else the errno of the step that failed.
int make_dirs(const std::string& dir);

// Writes all `size` bytes at the file's current offset, retrying short
// writes and EINTR. Returns 0 or an errno.
int write_all(int fd, const uint8_t* data, std::size_t size);

// rename() that refuses to replace an existing target (renameat2
// RENAME_NOREPLACE where the file system supports it), so sealing a file can
// never clobber something planted under its final name.
int rename_no_replace(const std::string& from, const std::string& to);

// The soft RLIMIT_FSIZE, or UINT64_MAX when unlimited. Writing past it
// raises SIGXFSZ, which kills the process by default.
uint64_t file_size_limit();

}  // namespace ringprof::posix

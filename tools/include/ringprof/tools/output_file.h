// ringprof/tools/output_file.h — where a tool writes its output: a file, a gzip
// file (when the name ends in ".gz"), or stdout ("-"), behind one
// std::ostream so writers do not care which. A file is written under a
// temporary name beside it (".NAME.part-PID") and renamed into place by a
// successful close(): a killed command never leaves a truncated file under
// the name asked for, and a failed write, or a destructor without close(),
// leaves the name as it was. Devices, FIFOs, symbolic links and files with
// other hard links are written in place.
#pragma once

#include <memory>
#include <ostream>
#include <string>

namespace ringprof {

class OutputFile {
 public:
  OutputFile();
  ~OutputFile();
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  // Opens `path` for writing ("-" is stdout). False with *error set.
  bool open(const std::string& path, std::string* error);
  std::ostream& stream();
  // Flushes, closes and renames the file into place; false with *error set if
  // any write failed (the temporary file is then removed).
  bool close(std::string* error);

  static bool is_gzip_path(const std::string& path);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace ringprof

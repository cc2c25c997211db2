// fleet/file_names.h (internal) — a rolling set's file names as ship and
// follow read them: "DIR/ringprof-PID-STAMP-NNNNNN.rpf" or "….rpf.part",
// one series (one process's files) numbered from 0.
#pragma once

#include <charconv>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>

namespace ringprof::internal {

struct NumberedFile {
  std::string series;  // the directory and the name up to the number: one process's files
  uint64_t number = 0;
  bool sealed = false;  // .rpf, not .rpf.part
};

// nullopt for a name of another form.
inline std::optional<NumberedFile> numbered_file(const std::string& path) {
  const std::filesystem::path fp(path);
  std::string name = fp.filename().string();
  NumberedFile n;
  const std::string part = ".rpf.part", sealed = ".rpf";
  if (name.size() > part.size() && name.compare(name.size() - part.size(), part.size(), part) == 0) {
    name.resize(name.size() - part.size());
  } else if (name.size() > sealed.size() && name.compare(name.size() - sealed.size(), sealed.size(), sealed) == 0) {
    name.resize(name.size() - sealed.size());
    n.sealed = true;
  } else {
    return std::nullopt;
  }
  const size_t dash = name.rfind('-');
  if (dash == std::string::npos || dash + 1 == name.size()) return std::nullopt;
  const char* b = name.data() + dash + 1;
  const char* e = name.data() + name.size();
  const auto [end, ec] = std::from_chars(b, e, n.number);
  if (ec != std::errc() || end != e) return std::nullopt;
  n.series = fp.parent_path().string() + "/" + name.substr(0, dash + 1);
  return n;
}

}  // namespace ringprof::internal

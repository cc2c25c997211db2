// debug_file_finder.h (internal) — where a module's ELF or debug file may be,
// given its build ID or its .gnu_debuglink. Returns candidates only: the
// symbolizer opens each and checks its build ID (or CRC) before using it.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace ringprof::internal {

class DebugFileFinder {
 public:
  // symbol_paths are searched before `system_debug_dir` (/usr/lib/debug).
  explicit DebugFileFinder(std::vector<std::string> symbol_paths, std::string system_debug_dir = "/usr/lib/debug");

  // For each symbol-path dir and then the system dir: <dir>/.build-id/xx/rest.debug
  // and <dir>/xx/rest.debug (those that exist). `build_id`: lowercase hex.
  std::vector<std::string> by_build_id_layout(const std::string& build_id) const;

  // Plain files directly in a symbol-path dir whose own build ID is `build_id`.
  // The dirs are scanned on the first call only; the result is kept.
  std::vector<std::string> by_build_id_scan(const std::string& build_id);

  // Where the debug file named `link` of the ELF file at `elf_path` may be: next
  // to it, in its .debug/ dir, under <system dir>/<its dir>, in each symbol-path dir.
  std::vector<std::string> by_debuglink(const std::string& elf_path, const std::string& link) const;

 private:
  void scan();

  std::vector<std::string> symbol_paths_;
  std::string system_debug_dir_;
  bool scanned_ = false;
  std::multimap<std::string, std::string> scanned_build_ids_;  // build ID → path
};

}  // namespace ringprof::internal

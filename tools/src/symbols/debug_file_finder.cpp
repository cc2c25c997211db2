#include "symbols/debug_file_finder.h"

#include <sys/stat.h>

#include <filesystem>

#include "symbols/elf_file.h"

namespace ringprof::internal {

namespace {

// A directory may hold anything; a bound keeps a stray --symbol-path=/ from
// opening a whole file system's worth of files.
constexpr size_t kMaxScannedFilesPerDir = 20000;

bool is_regular_file(const std::string& path) {
  struct stat st {};
  return stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

std::string dir_of(const std::string& path) {
  const size_t slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

}  // namespace

DebugFileFinder::DebugFileFinder(std::vector<std::string> symbol_paths, std::string system_debug_dir)
    : symbol_paths_(std::move(symbol_paths)), system_debug_dir_(std::move(system_debug_dir)) {}

std::vector<std::string> DebugFileFinder::by_build_id_layout(const std::string& build_id) const {
  std::vector<std::string> out;
  if (build_id.size() < 3) return out;
  const std::string rel = build_id.substr(0, 2) + "/" + build_id.substr(2) + ".debug";
  std::vector<std::string> dirs = symbol_paths_;
  if (!system_debug_dir_.empty()) dirs.push_back(system_debug_dir_);
  for (const std::string& dir : dirs) {
    for (const std::string& candidate : {dir + "/.build-id/" + rel, dir + "/" + rel}) {
      if (is_regular_file(candidate)) out.push_back(candidate);
    }
  }
  return out;
}

std::vector<std::string> DebugFileFinder::by_build_id_scan(const std::string& build_id) {
  if (!scanned_) scan();
  std::vector<std::string> out;
  auto [first, last] = scanned_build_ids_.equal_range(build_id);
  for (auto it = first; it != last; ++it) out.push_back(it->second);
  return out;
}

void DebugFileFinder::scan() {
  scanned_ = true;
  namespace fs = std::filesystem;
  for (const std::string& dir : symbol_paths_) {
    std::error_code ec;
    size_t seen = 0;
    for (fs::directory_iterator it(dir, ec), end; !ec && it != end && seen < kMaxScannedFilesPerDir; it.increment(ec)) {
      const std::string path = it->path().string();
      if (!is_regular_file(path)) continue;
      ++seen;
      std::string why;
      auto file = ElfFile::open(path, &why);
      if (file && !file->build_id().empty()) scanned_build_ids_.emplace(file->build_id(), path);
    }
  }
}

std::vector<std::string> DebugFileFinder::by_debuglink(const std::string& elf_path, const std::string& link) const {
  std::vector<std::string> out;
  if (link.empty() || link.find('/') != std::string::npos) return out;
  const std::string dir = dir_of(elf_path);
  const std::string sep = dir == "/" ? "" : "/";
  std::vector<std::string> candidates = {dir + sep + link, dir + sep + ".debug/" + link};
  if (!system_debug_dir_.empty() && !dir.empty() && dir[0] == '/') {
    candidates.push_back(system_debug_dir_ + dir + sep + link);
  }
  for (const std::string& sp : symbol_paths_) candidates.push_back(sp + "/" + link);
  for (const std::string& c : candidates) {
    if (c != elf_path && is_regular_file(c)) out.push_back(c);
  }
  return out;
}

}  // namespace ringprof::internal

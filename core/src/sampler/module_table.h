// The loaded ELF objects (the executable, shared libraries, the vdso), so a
// symbolizer can map a sampled address to a file, an offset and a build ID.
//
// The drainer calls refresh() every loop: it costs one dl_iterate_phdr step
// that reads the loader's add/remove counters, and a full scan only when they
// changed (a dlopen or dlclose). Modules keep their ids after dlclose, since
// earlier samples may point into them. Owned by the drainer thread.
#pragma once

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "ringprof/sink.h"
#include "sampler/loader_counters.h"

namespace ringprof::sampler {

class ModuleTable {
 public:
  // Rescans when the loader's counters moved since the last scan. True when
  // a module was added.
  bool refresh();
  std::span<const ModuleInfo> all() const noexcept { return modules_; }

 private:
  void scan();

  std::vector<ModuleInfo> modules_;                        // modules_[id - 1]
  std::map<std::pair<std::string, uint64_t>, uint32_t> known_;  // (path, base) → id
  LoaderCounters counters_;                                     // at the last scan (unknown before the first)
  std::string exe_path_;
};

// The GNU build ID in a PT_NOTE segment's bytes, lowercase hex; "" if none.
std::string build_id_from_notes(const unsigned char* notes, size_t size);

}  // namespace ringprof::sampler

// The loader's counts of objects loaded and unloaded (dl_phdr_info's
// dlpi_adds and dlpi_subs): they move only with a dlopen or a dlclose, so
// comparing them is how the module table and the unwind index skip a rescan.
#pragma once

#include <link.h>

#include <cstddef>

namespace ringprof::sampler {

struct LoaderCounters {
  unsigned long long adds = 0, subs = 0;
  bool known = false;  // false: this loader does not report them (always rescan)
  bool same_as(const LoaderCounters& o) const noexcept { return known && o.known && adds == o.adds && subs == o.subs; }
};

// From one entry of a dl_iterate_phdr walk (every entry holds the same);
// false where the entry is too short to have them.
bool loader_counters_of(const dl_phdr_info* info, size_t size, LoaderCounters* out) noexcept;

// One dl_iterate_phdr step: the counters now.
LoaderCounters read_loader_counters() noexcept;

}  // namespace ringprof::sampler

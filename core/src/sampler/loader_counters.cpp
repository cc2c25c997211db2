#include "sampler/loader_counters.h"

namespace ringprof::sampler {

bool loader_counters_of(const dl_phdr_info* info, size_t size, LoaderCounters* out) noexcept {
  if (size < offsetof(dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) return false;
  out->adds = info->dlpi_adds;
  out->subs = info->dlpi_subs;
  out->known = true;
  return true;
}

LoaderCounters read_loader_counters() noexcept {
  LoaderCounters c;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t size, void* arg) {
        loader_counters_of(info, size, static_cast<LoaderCounters*>(arg));
        return 1;  // the first entry is enough
      },
      &c);
  return c;
}

}  // namespace ringprof::sampler

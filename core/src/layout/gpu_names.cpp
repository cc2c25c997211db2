// The GPU activity kinds' names (ringprof/gpu.h): part of the event layout,
// linked by the format library and the tools as well as by the recorder.
#include "ringprof/gpu.h"

namespace ringprof {

const char* gpu_kind_name(GpuKind k) noexcept {
  switch (k) {
    case GpuKind::None: return "none";
    case GpuKind::Kernel: return "kernel";
    case GpuKind::Memcpy: return "memcpy";
    case GpuKind::Memset: return "memset";
    case GpuKind::RuntimeApi: return "runtime_api";
    case GpuKind::DriverApi: return "driver_api";
    case GpuKind::Sync: return "sync";
    case GpuKind::Memory: return "memory";
    case GpuKind::Overhead: return "overhead";
    case GpuKind::ExternalCorrelation: return "external_correlation";
    case GpuKind::Marker: return "marker";
  }
  return "unknown";
}

const char* gpu_copy_kind_name(GpuCopyKind k) noexcept {
  static const char* const kNames[kGpuCopyKindCount] = {"unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA",
                                                        "AtoD",    "DtoA", "DtoD", "HtoH", "PtoP"};
  const auto i = static_cast<uint8_t>(k);
  return i < kGpuCopyKindCount ? kNames[i] : "unknown";
}

}  // namespace ringprof

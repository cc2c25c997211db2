// gpu_labels.h (internal) — how the trace exporters (Chrome and Perfetto)
// name and describe GPU records, so both say the same.
#pragma once

#include <cstdint>
#include <string>

namespace ringprof::internal {

// "128x1x1".
inline std::string gpu_dims(const int32_t d[3]) {
  return std::to_string(d[0]) + "x" + std::to_string(d[1]) + "x" + std::to_string(d[2]);
}

// API calls that make the GPU work, and so start a launch flow.
inline bool gpu_api_launches_work(const std::string& name) {
  return name.find("Launch") != std::string::npos || name.find("Memcpy") != std::string::npos ||
         name.find("Memset") != std::string::npos;
}

// A host wait record's name, by its sync type.
inline const char* gpu_sync_name(uint8_t type) {
  switch (type) {
    case 1: return "cudaEventSynchronize";
    case 2: return "cudaStreamWaitEvent";
    case 3: return "cudaStreamSynchronize";
    case 4: return "cudaDeviceSynchronize";
    default: return "synchronize";
  }
}

}  // namespace ringprof::internal

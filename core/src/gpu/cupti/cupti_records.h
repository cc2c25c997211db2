// Converter: CUPTI activity records -> GpuActivity, the one place that reads
// the structs of cupti_activity.h. Runs on the drainer thread, over each
// buffer CUPTI completed (cupti_source.cpp), and in the tests over buffers of
// hand-built records.
//
// Record versions: this file reads the versions of the header it was built
// with (CUDA 13.0: CUpti_ActivityKernel10, Memcpy6, Memset4, API,
// Synchronization2, Memory4, Overhead3, ExternalCorrelation, Marker2,
// MarkerData2, Device5). cupti_source.cpp refuses a libcupti older than that
// header, since it would write older, shorter layouts.
#pragma once

#include <cupti.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "gpu/gpu_records.h"
#include "gpu/cupti/cupti_api.h"

namespace ringprof::cupti {

// API calls too frequent and too cheap to be worth a record (polling and
// getters that frameworks call thousands of times per step). Compared
// without the "_vNNNN" version and "_ptsz"/"_ptds" stream suffixes.
bool is_noisy_api(std::string_view base_name);
// "cudaLaunchKernel_v7000" -> "cudaLaunchKernel" (CUPTI's callback names carry the version).
std::string_view api_base_name(std::string_view cupti_name);

// Walks a buffer of records of this header's layouts, like
// cuptiActivityGetNextRecord: *record null gives the first, otherwise the one
// after *record; CUPTI_ERROR_MAX_LIMIT_REACHED at the end,
// CUPTI_ERROR_INVALID_KIND on a kind whose size it does not know.
CUptiResult next_record_by_header(uint8_t* buffer, size_t valid_bytes, CUpti_Activity** record);
// The size of one record of `kind` in this header (0: unknown).
size_t record_size(CUpti_ActivityKind kind);

class Converter {
 public:
  // `api` provides ActivityGetNextRecord and GetCallbackName (either may be
  // the fakes of a test). Both must outlive the converter.
  Converter(GpuRecords& out, const Api& api);

  // Every record in [buffer, buffer + valid_bytes).
  void convert_buffer(uint8_t* buffer, size_t valid_bytes);
  void convert(const CUpti_Activity* record);

 private:
  uint32_t api_name(bool runtime, uint32_t cbid);  // interned id; 0 for a noisy call

  GpuRecords& out_;
  const Api& api_;
  // cbid -> interned name + 1 (0: not looked up yet; 1: noisy, skip), per domain.
  std::vector<uint32_t> runtime_names_, driver_names_;
  uint64_t last_start_ = 0;  // of the last record converted
};

}  // namespace ringprof::cupti

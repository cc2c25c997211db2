#include "gpu/cupti/cupti_records.h"

#include <algorithm>
#include <array>
#include <cstring>

namespace ringprof::cupti {

namespace {

// Polling, getters and error queries: PyTorch alone calls these thousands of
// times per step, and none of them makes the GPU do anything.
constexpr std::array<std::string_view, 34> kNoisyApis = {
    "cudaGetDevice", "cudaSetDevice", "cudaGetDeviceCount", "cudaGetLastError", "cudaPeekAtLastError",
    "cudaStreamQuery", "cudaEventQuery", "cudaDeviceGetAttribute", "cudaGetDeviceProperties",
    "cudaPointerGetAttributes", "cudaStreamIsCapturing", "cudaStreamGetCaptureInfo", "cudaFuncGetAttributes",
    "cudaDriverGetVersion", "cudaRuntimeGetVersion", "cudaGetDriverEntryPoint", "cudaGetDriverEntryPointByVersion",
    "cudaThreadExchangeStreamCaptureMode", "cudaOccupancyMaxActiveBlocksPerMultiprocessor",
    "cuCtxGetCurrent", "cuCtxSetCurrent", "cuCtxGetDevice", "cuStreamQuery", "cuEventQuery", "cuDeviceGet",
    "cuDeviceGetCount", "cuDeviceGetAttribute", "cuDevicePrimaryCtxGetState", "cuPointerGetAttribute",
    "cuPointerGetAttributes", "cuGetProcAddress", "cuDriverGetVersion", "cuStreamIsCapturing", "cuCtxGetId",
};

std::string_view strip_suffix(std::string_view s, std::string_view suffix) {
  if (s.size() > suffix.size() && s.substr(s.size() - suffix.size()) == suffix) s.remove_suffix(suffix.size());
  return s;
}

uint64_t end_or_start(uint64_t start, uint64_t end) { return end >= start ? end : start; }

// CUPTI reports copy kinds as CUpti_ActivityMemcpyKind; ours has the same numbers.
uint8_t copy_kind(uint8_t k) { return k < kGpuCopyKindCount ? k : 0; }

uint32_t clamp_u32(int64_t v) { return v < 0 ? 0 : v > UINT32_MAX ? UINT32_MAX : static_cast<uint32_t>(v); }

}  // namespace

std::string_view api_base_name(std::string_view name) {
  // Trailing "_v" + digits.
  const size_t v = name.rfind("_v");
  if (v != std::string_view::npos && v + 2 < name.size() &&
      std::all_of(name.begin() + static_cast<std::ptrdiff_t>(v) + 2, name.end(),
                  [](char c) { return c >= '0' && c <= '9'; }))
    name = name.substr(0, v);
  return name;
}

bool is_noisy_api(std::string_view base_name) {
  base_name = strip_suffix(strip_suffix(base_name, "_ptsz"), "_ptds");
  base_name = strip_suffix(base_name, "_v2");
  return std::find(kNoisyApis.begin(), kNoisyApis.end(), base_name) != kNoisyApis.end();
}

size_t record_size(CUpti_ActivityKind kind) {
  switch (kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: return sizeof(CUpti_ActivityKernel10);
    case CUPTI_ACTIVITY_KIND_MEMCPY: return sizeof(CUpti_ActivityMemcpy6);
    case CUPTI_ACTIVITY_KIND_MEMSET: return sizeof(CUpti_ActivityMemset4);
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER:
    case CUPTI_ACTIVITY_KIND_INTERNAL_LAUNCH_API: return sizeof(CUpti_ActivityAPI);
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: return sizeof(CUpti_ActivitySynchronization2);
    case CUPTI_ACTIVITY_KIND_MEMORY2: return sizeof(CUpti_ActivityMemory4);
    case CUPTI_ACTIVITY_KIND_OVERHEAD: return sizeof(CUpti_ActivityOverhead3);
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: return sizeof(CUpti_ActivityExternalCorrelation);
    case CUPTI_ACTIVITY_KIND_MARKER: return sizeof(CUpti_ActivityMarker2);
    case CUPTI_ACTIVITY_KIND_MARKER_DATA: return sizeof(CUpti_ActivityMarkerData2);
    case CUPTI_ACTIVITY_KIND_DEVICE: return sizeof(CUpti_ActivityDevice5);
    default: return 0;
  }
}

CUptiResult next_record_by_header(uint8_t* buffer, size_t valid_bytes, CUpti_Activity** record) {
  size_t offset = 0;
  if (*record != nullptr) {
    const size_t at = static_cast<size_t>(reinterpret_cast<uint8_t*>(*record) - buffer);
    offset = at + record_size((*record)->kind);
  }
  if (offset + sizeof(CUpti_Activity) > valid_bytes) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  auto* next = reinterpret_cast<CUpti_Activity*>(buffer + offset);
  const size_t size = record_size(next->kind);
  if (size == 0) return CUPTI_ERROR_INVALID_KIND;
  if (offset + size > valid_bytes) return CUPTI_ERROR_MAX_LIMIT_REACHED;
  *record = next;
  return CUPTI_SUCCESS;
}

Converter::Converter(GpuRecords& out, const Api& api) : out_(out), api_(api) {}

void Converter::convert_buffer(uint8_t* buffer, size_t valid_bytes) {
  CUpti_Activity* record = nullptr;
  for (;;) {
    const CUptiResult r = api_.ActivityGetNextRecord(buffer, valid_bytes, &record);
    if (r == CUPTI_SUCCESS) {
      convert(record);
      continue;
    }
    // MAX_LIMIT_REACHED is the normal end; anything else leaves the rest of
    // the buffer unreadable (its records are lost, counted as unknown once).
    if (r != CUPTI_ERROR_MAX_LIMIT_REACHED) out_.count_unknown();
    return;
  }
}

uint32_t Converter::api_name(bool runtime, uint32_t cbid) {
  std::vector<uint32_t>& cache = runtime ? runtime_names_ : driver_names_;
  if (cbid > 1u << 16) return 0;  // no such callback id; do not grow the cache for it
  if (cbid >= cache.size()) cache.resize(cbid + 1, 0);
  if (cache[cbid] == 0) {
    const char* name = nullptr;
    std::string fallback;
    if (api_.GetCallbackName == nullptr ||
        api_.GetCallbackName(runtime ? CUPTI_CB_DOMAIN_RUNTIME_API : CUPTI_CB_DOMAIN_DRIVER_API, cbid, &name) !=
            CUPTI_SUCCESS ||
        name == nullptr) {
      fallback = std::string(runtime ? "cuda_runtime_" : "cuda_driver_") + std::to_string(cbid);
      name = fallback.c_str();
    }
    const std::string_view base = api_base_name(name);
    cache[cbid] = is_noisy_api(base) ? 1 : out_.intern(base) + 1;
  }
  return cache[cbid] == 1 ? 0 : cache[cbid] - 1;
}

void Converter::convert(const CUpti_Activity* record) {
  GpuActivity a;
  switch (record->kind) {
    case CUPTI_ACTIVITY_KIND_KERNEL:
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: {
      const auto* k = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
      a.kind = GpuKind::Kernel;
      a.start_ns = k->start;
      a.end_ns = end_or_start(k->start, k->end);
      a.device = k->deviceId;
      a.context = k->contextId;
      a.stream = k->streamId;
      a.correlation = k->correlationId;
      a.name = out_.intern(k->name ? std::string_view(k->name) : std::string_view("<unnamed kernel>"));
      a.grid[0] = k->gridX;
      a.grid[1] = k->gridY;
      a.grid[2] = k->gridZ;
      a.block[0] = k->blockX;
      a.block[1] = k->blockY;
      a.block[2] = k->blockZ;
      a.registers = k->registersPerThread;
      a.static_smem = clamp_u32(k->staticSharedMemory);
      a.dynamic_smem = clamp_u32(k->dynamicSharedMemory);
      a.local_mem = k->localMemoryPerThread;
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMCPY: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemcpy6*>(record);
      a.kind = GpuKind::Memcpy;
      a.sub_kind = copy_kind(m->copyKind);
      a.src_kind = m->srcKind;
      a.dst_kind = m->dstKind;
      a.bytes = m->bytes;
      a.start_ns = m->start;
      a.end_ns = end_or_start(m->start, m->end);
      a.device = m->deviceId;
      a.context = m->contextId;
      a.stream = m->streamId;
      // The runtime call's id when there is one (the outer call the user
      // made); the driver call's otherwise.
      a.correlation = m->runtimeCorrelationId ? m->runtimeCorrelationId : m->correlationId;
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMSET: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemset4*>(record);
      a.kind = GpuKind::Memset;
      a.src_kind = static_cast<uint8_t>(m->memoryKind);
      a.bytes = m->bytes;
      a.value = m->value;
      a.start_ns = m->start;
      a.end_ns = end_or_start(m->start, m->end);
      a.device = m->deviceId;
      a.context = m->contextId;
      a.stream = m->streamId;
      a.correlation = m->correlationId;
      break;
    }
    case CUPTI_ACTIVITY_KIND_RUNTIME:
    case CUPTI_ACTIVITY_KIND_DRIVER:
    case CUPTI_ACTIVITY_KIND_INTERNAL_LAUNCH_API: {
      const auto* api = reinterpret_cast<const CUpti_ActivityAPI*>(record);
      const bool runtime = record->kind == CUPTI_ACTIVITY_KIND_RUNTIME;
      if (record->kind == CUPTI_ACTIVITY_KIND_INTERNAL_LAUNCH_API) {
        a.name = out_.intern("<internal launch>");
      } else {
        a.name = api_name(runtime, api->cbid);
        if (a.name == 0) return;  // a noisy call: skipped
      }
      a.kind = runtime ? GpuKind::RuntimeApi : GpuKind::DriverApi;
      a.start_ns = api->start;
      a.end_ns = end_or_start(api->start, api->end);
      a.tid = api->threadId;
      a.correlation = api->correlationId;
      a.value = api->returnValue;
      break;
    }
    case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION: {
      const auto* s = reinterpret_cast<const CUpti_ActivitySynchronization2*>(record);
      a.kind = GpuKind::Sync;
      a.sub_kind = static_cast<uint8_t>(s->type);
      a.start_ns = s->start;
      a.end_ns = end_or_start(s->start, s->end);
      a.context = s->contextId;
      a.stream = s->streamId;
      a.correlation = s->correlationId;
      break;
    }
    case CUPTI_ACTIVITY_KIND_MEMORY2: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMemory4*>(record);
      a.kind = GpuKind::Memory;
      a.sub_kind = m->memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION ? 1
                   : m->memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE  ? 2
                                                                                             : 0;
      a.src_kind = static_cast<uint8_t>(m->memoryKind);
      a.bytes = m->bytes;
      a.value = m->address;
      a.start_ns = a.end_ns = m->timestamp;
      a.device = m->deviceId;
      a.context = m->contextId;
      a.stream = m->streamId;
      a.correlation = m->correlationId;
      break;
    }
    case CUPTI_ACTIVITY_KIND_OVERHEAD: {
      const auto* o = reinterpret_cast<const CUpti_ActivityOverhead3*>(record);
      a.kind = GpuKind::Overhead;
      a.sub_kind = static_cast<uint8_t>(o->overheadKind >> 16 ? o->overheadKind >> 16 : o->overheadKind);
      const char* what = "overhead";
      switch (o->overheadKind) {
        case CUPTI_ACTIVITY_OVERHEAD_DRIVER_COMPILER: what = "driver compiler"; break;
        case CUPTI_ACTIVITY_OVERHEAD_CUPTI_BUFFER_FLUSH: what = "CUPTI buffer flush"; break;
        case CUPTI_ACTIVITY_OVERHEAD_CUPTI_INSTRUMENTATION: what = "CUPTI instrumentation"; break;
        case CUPTI_ACTIVITY_OVERHEAD_CUPTI_RESOURCE: what = "CUPTI resource"; break;
        case CUPTI_ACTIVITY_OVERHEAD_RUNTIME_TRIGGERED_MODULE_LOADING: what = "module loading"; break;
        case CUPTI_ACTIVITY_OVERHEAD_LAZY_FUNCTION_LOADING: what = "lazy function loading"; break;
        case CUPTI_ACTIVITY_OVERHEAD_COMMAND_BUFFER_FULL: what = "command buffer full"; break;
        case CUPTI_ACTIVITY_OVERHEAD_ACTIVITY_BUFFER_REQUEST: what = "activity buffer request"; break;
        default: break;
      }
      a.name = out_.intern(what);
      a.start_ns = o->start;
      a.end_ns = end_or_start(o->start, o->end);
      a.correlation = o->correlationId;
      break;
    }
    case CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION: {
      const auto* e = reinterpret_cast<const CUpti_ActivityExternalCorrelation*>(record);
      a.kind = GpuKind::ExternalCorrelation;
      a.sub_kind = static_cast<uint8_t>(e->externalKind);
      a.value = e->externalId;
      a.correlation = e->correlationId;
      // No time of its own: it sits at the time of the record before it, so
      // the start column stays small (it does not widen a batch's range).
      a.start_ns = a.end_ns = last_start_;
      break;
    }
    case CUPTI_ACTIVITY_KIND_MARKER: {
      const auto* m = reinterpret_cast<const CUpti_ActivityMarker2*>(record);
      const uint32_t tid =
          m->objectKind == CUPTI_ACTIVITY_OBJECT_THREAD || m->objectKind == CUPTI_ACTIVITY_OBJECT_PROCESS
              ? m->objectId.pt.threadId
              : 0;
      const std::string_view name = m->name ? std::string_view(m->name) : std::string_view();
      if (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS)
        out_.mark(m->timestamp, name, tid);
      else if (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_START)
        out_.marker_start(m->id, m->timestamp, name, tid);
      else if (m->flags & CUPTI_ACTIVITY_FLAG_MARKER_END)
        out_.marker_end(m->id, m->timestamp);
      return;
    }
    case CUPTI_ACTIVITY_KIND_MARKER_DATA: {
      const auto* d = reinterpret_cast<const CUpti_ActivityMarkerData2*>(record);
      if (d->flags & CUPTI_ACTIVITY_FLAG_MARKER_COLOR_ARGB) out_.marker_color(d->id, d->color);
      return;
    }
    case CUPTI_ACTIVITY_KIND_DEVICE: {
      const auto* d = reinterpret_cast<const CUpti_ActivityDevice5*>(record);
      GpuDevice g;
      g.id = d->id;
      g.name = d->name ? d->name : "";
      g.cc_major = d->computeCapabilityMajor;
      g.cc_minor = d->computeCapabilityMinor;
      g.sm_count = d->numMultiprocessors;
      g.max_threads_per_block = d->maxThreadsPerBlock;
      g.max_warps_per_sm = d->maxWarpsPerMultiprocessor;
      g.max_blocks_per_sm = d->maxBlocksPerMultiprocessor;
      g.regs_per_sm = d->maxRegistersPerMultiprocessor;
      g.regs_per_block = d->maxRegistersPerBlock;
      g.smem_per_sm = d->maxSharedMemoryPerMultiprocessor;
      g.smem_per_block = d->maxSharedMemoryPerBlock;
      g.warp_size = d->numThreadsPerWarp ? d->numThreadsPerWarp : 32;
      g.global_memory_bytes = d->globalMemorySize;
      g.core_clock_khz = d->coreClockRate;
      out_.add_device(g);
      return;
    }
    default:
      out_.count_unknown();
      return;
  }
  last_start_ = a.start_ns;
  out_.add(a);
}

}  // namespace ringprof::cupti

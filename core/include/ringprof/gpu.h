// ringprof/gpu.h — GPU activity as the drainer hands it to a sink.
//
// GPU work is not recorded on the application's threads: CUPTI (NVIDIA's
// profiling interface) writes activity records into buffers of its own and
// hands completed buffers to ringprof, whose drainer turns each record into
// one GpuActivity and puts it in the same Batch as the CPU events. Times are
// CLOCK_MONOTONIC ns, the clock of every CPU event: CUPTI is given ringprof's
// clock through its timestamp callback, so no conversion happens here.
//
// Names (kernel, API function, NVTX range, overhead kind) are interned by the
// drainer: GpuActivity::name is an id into Batch::gpu_names (ids dense from 1,
// process-wide, 0 = none), so a name costs its bytes once per file.
//
// This header is plain data, usable without CUPTI: the file format, the
// tools and the tests see GPU records whether or not CUPTI was built in.
#pragma once

#include <cstdint>
#include <string>

namespace ringprof {

enum class GpuKind : uint8_t {
  None = 0,
  Kernel = 1,       // a kernel execution (CONCURRENT_KERNEL)
  Memcpy = 2,       // a copy: bytes, copy_kind (GpuCopyKind), src/dst memory kinds
  Memset = 3,       // bytes, value = the byte value set
  RuntimeApi = 4,   // a CUDA runtime call on a host thread (tid); value = its return code
  DriverApi = 5,    // a CUDA driver call on a host thread (tid); value = its return code
  Sync = 6,         // a host wait on the GPU; sub_kind = CUpti_ActivitySynchronizationType
  Memory = 7,       // an allocation (sub_kind 1) or free (sub_kind 2): bytes, address, memory kind
  Overhead = 8,     // time CUPTI or the driver spent on its own work (name: what)
  ExternalCorrelation = 9,  // correlation -> external id (value), sub_kind = external kind
  Marker = 10,      // an NVTX range (start..end) or mark (start == end) on a host thread (tid)
};
inline constexpr uint8_t kGpuKindCount = 11;

// CUpti_ActivityMemcpyKind, stated here so the tools need no CUPTI header.
enum class GpuCopyKind : uint8_t {
  Unknown = 0, HtoD = 1, DtoH = 2, HtoA = 3, AtoH = 4, AtoA = 5, AtoD = 6, DtoA = 7, DtoD = 8, HtoH = 9, PtoP = 10,
};
inline constexpr uint8_t kGpuCopyKindCount = 11;

// One GPU activity record. Fields a kind does not use are 0.
struct GpuActivity {
  GpuKind kind = GpuKind::None;
  uint8_t sub_kind = 0;      // Memcpy: GpuCopyKind; Sync: sync type; Memory: 1 alloc, 2 free;
                             // Overhead: overhead kind; ExternalCorrelation: external kind;
                             // Marker: 1 range, 0 instantaneous mark
  uint8_t src_kind = 0;      // Memcpy: source memory kind; Memory/Memset: the memory kind
  uint8_t dst_kind = 0;      // Memcpy: destination memory kind
  uint32_t name = 0;         // id into Batch::gpu_names (0: none)
  uint64_t start_ns = 0;     // CLOCK_MONOTONIC ns
  uint64_t end_ns = 0;       // == start_ns for point records (Memory, Marker marks)
  uint32_t device = 0;
  uint32_t context = 0;
  uint32_t stream = 0;
  uint32_t correlation = 0;  // links a kernel/copy/set/sync to the API call that caused it
  uint32_t tid = 0;          // API calls and markers: the kernel's thread id of the host thread
  uint64_t bytes = 0;        // Memcpy, Memset, Memory
  uint64_t value = 0;        // API: return code; Memset: byte value; ExternalCorrelation: external id;
                             // Memory: address; Marker: ARGB color (0: none)
  // Kernel launch configuration.
  int32_t grid[3] = {0, 0, 0};
  int32_t block[3] = {0, 0, 0};
  uint32_t registers = 0;        // per thread
  uint32_t static_smem = 0;      // bytes per block
  uint32_t dynamic_smem = 0;     // bytes per block
  uint32_t local_mem = 0;        // bytes per thread
};

// A device's properties, stated once per file: what the occupancy estimate
// and the utilisation figures need.
struct GpuDevice {
  uint32_t id = 0;
  std::string name;
  uint32_t cc_major = 0;               // compute capability
  uint32_t cc_minor = 0;
  uint32_t sm_count = 0;
  uint32_t max_threads_per_block = 0;
  uint32_t max_warps_per_sm = 0;       // threads per SM / warp size
  uint32_t max_blocks_per_sm = 0;
  uint32_t regs_per_sm = 0;
  uint32_t regs_per_block = 0;
  uint32_t smem_per_sm = 0;            // bytes usable by blocks on one SM
  uint32_t smem_per_block = 0;
  uint32_t warp_size = 32;
  uint64_t global_memory_bytes = 0;
  uint32_t core_clock_khz = 0;
};

// Counters of what the GPU source lost or saw go wrong, cumulative over the
// recording session (a file holds the latest values; readers take the maximum).
struct GpuStats {
  uint64_t records = 0;            // records converted into GpuActivity
  uint64_t dropped_records = 0;    // CUPTI dropped them (cuptiActivityGetNumDroppedRecords)
  uint64_t refused_buffers = 0;    // CUPTI asked for a buffer and the pool had none
  uint64_t clock_violations = 0;   // a kernel/copy that starts before the API call that launched it
  uint64_t unknown_records = 0;    // record kinds ringprof does not convert
  uint32_t version = 0;            // bumped on every change, so a sink knows to re-state them
};

const char* gpu_kind_name(GpuKind k) noexcept;
const char* gpu_copy_kind_name(GpuCopyKind k) noexcept;  // "HtoD", "DtoH", …

}  // namespace ringprof

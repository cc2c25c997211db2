#include "gpu/cupti/cupti_source.h"

#include <dlfcn.h>
#include <link.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <concurrentqueue/concurrentqueue.h>
#include <cstdio>
#include <cstdlib>
#include <mutex>
#include <new>
#include <vector>

#include "ringprof/recording.h"

namespace ringprof::cupti {

namespace {

// Each pool buffer starts with this header (its size), then CUPTI's bytes.
// CUPTI wants 8-byte aligned buffers; 64 keeps them cache-line aligned.
constexpr size_t kHeader = 64;

struct Completed {
  uint8_t* buffer;
  size_t valid;
};

// Process-wide and immortal: CUPTI may call back from its own threads, even
// while the process exits, after function-local statics would be destroyed.
struct State {
  std::mutex control;  // start/stop only; the callbacks never take it
  Api api;
  const Api* fake = nullptr;
  bool loaded = false;
  bool callbacks_registered = false;
  std::vector<CUpti_ActivityKind> enabled;
  std::atomic<bool> running{false};
  // Another client (torch.profiler's Kineto, say) holds CUPTI: ringprof's
  // kinds are off and its callbacks may have been replaced (hand_over()).
  std::atomic<bool> handed_over{false};
  // The process is exiting and CUPTI has handed over its last records:
  // nothing calls CUPTI again (see close_at_exit).
  std::atomic<bool> closed{false};
  Level level = Level::AlwaysOn;  // the level set_level() last asked for

  moodycamel::ConcurrentQueue<uint8_t*> free_buffers;
  moodycamel::ConcurrentQueue<Completed> completed;
  std::atomic<uint32_t> allocated{0};
  std::atomic<uint32_t> max_buffers{8};
  std::atomic<size_t> buffer_bytes{4u << 20};
  std::atomic<uint64_t> dropped{0};
  std::atomic<uint64_t> refused{0};
};

State& state() {
  static State* s = new State();
  return *s;
}

const Api& current_api() {
  State& s = state();
  return s.fake ? *s.fake : s.api;
}

template <typename F>
bool resolve(void* lib, const char* name, F& out) {
  out = reinterpret_cast<F>(dlsym(lib, name));
  return out != nullptr;
}

void warn(const std::string& why) { std::fprintf(stderr, "ringprof: warning: GPU tracing off: %s\n", why.c_str()); }

std::string result_name(const Api& api, CUptiResult r) {
  const char* s = nullptr;
  if (api.GetResultString && api.GetResultString(r, &s) == CUPTI_SUCCESS && s) return s;
  return "CUPTI error " + std::to_string(static_cast<int>(r));
}

// Whether the process has CUDA loaded: the runtime (libcudart), the driver
// library, or a framework's CUDA part (libtorch_cuda, libc10_cuda). A program
// that never touches CUDA has none of them.
bool process_uses_cuda() {
  return dl_iterate_phdr(
             [](dl_phdr_info* info, size_t, void*) -> int {
               const std::string path = info->dlpi_name ? info->dlpi_name : "";
               const std::string base = path.substr(path.find_last_of('/') + 1);
               return base.rfind("libcud", 0) == 0 || base.find("_cuda") != std::string::npos;
             },
             nullptr) != 0;
}

// The driver first: without libcuda there is nothing to trace, and CUPTI
// would only fail with an unhelpful CUPTI_ERROR_UNKNOWN. `*no_driver` tells
// that case apart: on a machine without a GPU it is the normal state.
bool check_driver(std::string* why, bool* no_driver) {
  void* cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  *no_driver = cuda == nullptr;
  if (!cuda) {
    *why = "no NVIDIA driver (libcuda.so.1 cannot be loaded); CPU recording goes on. "
           "Install the NVIDIA driver, or set RINGPROF_GPU=0 to skip GPU tracing without this warning";
    return false;
  }
  int (*driver_version)(int*) = nullptr;
  int version = 0;
  if (resolve(cuda, "cuDriverGetVersion", driver_version) && driver_version(&version) == 0 && version != 0 &&
      version < CUDA_VERSION) {
    *why = "version mismatch: the NVIDIA driver supports CUDA " + std::to_string(version / 1000) + "." +
           std::to_string(version % 1000 / 10) + " but ringprof was built with CUPTI for CUDA " +
           std::to_string(CUDA_VERSION / 1000) + "." + std::to_string(CUDA_VERSION % 1000 / 10) +
           ": update the driver, or build ringprof against the CUDA toolkit your driver supports";
    return false;
  }
  return true;  // left loaded: the application loads it anyway to use the GPU
}

bool load(const Config& config, Api& api, std::string* why) {
  std::vector<std::string> candidates;
  if (!config.cupti_library.empty()) {
    candidates.push_back(config.cupti_library);
  } else {
    candidates.push_back("libcupti.so." + std::to_string(CUDA_VERSION / 1000));
    candidates.push_back("libcupti.so");
#ifdef RINGPROF_CUPTI_BUILD_LIBRARY
    candidates.push_back(RINGPROF_CUPTI_BUILD_LIBRARY);  // the one found at build time
#endif
  }
  void* lib = nullptr;
  std::string errors;
  for (const std::string& c : candidates) {
    lib = dlopen(c.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib) break;
    const char* e = dlerror();
    errors += (errors.empty() ? "" : "; ") + std::string(e ? e : c.c_str());
  }
  if (!lib) {
    *why = "libcupti cannot be loaded (" + errors +
           "): add the CUDA toolkit's lib directory (…/extras/CUPTI/lib64 or …/lib64) to LD_LIBRARY_PATH, "
           "or set RINGPROF_CUPTI_LIB to the path of libcupti.so";
    return false;
  }
  bool ok = resolve(lib, "cuptiGetVersion", api.GetVersion) &&
            resolve(lib, "cuptiGetResultString", api.GetResultString) &&
            resolve(lib, "cuptiActivityRegisterCallbacks", api.ActivityRegisterCallbacks) &&
            resolve(lib, "cuptiActivityRegisterTimestampCallback", api.ActivityRegisterTimestampCallback) &&
            resolve(lib, "cuptiActivityEnable", api.ActivityEnable) &&
            resolve(lib, "cuptiActivityDisable", api.ActivityDisable) &&
            resolve(lib, "cuptiActivityFlushAll", api.ActivityFlushAll) &&
            resolve(lib, "cuptiActivityGetNextRecord", api.ActivityGetNextRecord) &&
            resolve(lib, "cuptiActivityGetNumDroppedRecords", api.ActivityGetNumDroppedRecords) &&
            resolve(lib, "cuptiGetCallbackName", api.GetCallbackName);
  if (!ok) {
    *why = "this libcupti lacks functions ringprof needs (too old?): use the libcupti of CUDA " +
           std::to_string(CUDA_VERSION / 1000) + " or later (RINGPROF_CUPTI_LIB)";
    return false;
  }
  resolve(lib, "cuptiActivityFlushPeriod", api.ActivityFlushPeriod);
  resolve(lib, "cuptiActivityEnableRuntimeApi", api.ActivityEnableRuntimeApi);
  resolve(lib, "cuptiActivityEnableDriverApi", api.ActivityEnableDriverApi);
  resolve(lib, "cuptiSetThreadIdType", api.SetThreadIdType);
  uint32_t version = 0;
  if (api.GetVersion(&version) == CUPTI_SUCCESS && version != 0 && version < CUPTI_API_VERSION) {
    *why = "version mismatch: libcupti has API version " + std::to_string(version) +
           ", older than the version ringprof was built with (" + std::to_string(CUPTI_API_VERSION) +
           "), so its records would be misread: set RINGPROF_CUPTI_LIB to a libcupti of CUDA " +
           std::to_string(CUDA_VERSION / 1000) + " or later";
    return false;
  }
  return true;
}

void CUPTIAPI on_buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  buffer_requested(buffer, size, max_records);
}
void CUPTIAPI on_buffer_completed(CUcontext ctx, uint32_t stream, uint8_t* buffer, size_t size, size_t valid) {
  buffer_completed(ctx, stream, buffer, size, valid);
}
uint64_t CUPTIAPI on_timestamp() { return timestamp(); }

// Polls and getters: disabled at the source where CUPTI allows it (the
// converter skips them too, for a CUPTI that does not).
void disable_noisy_apis(const Api& api) {
  auto pass = [&](CUpti_CallbackDomain domain, uint32_t count, CUptiResult (*enable)(CUpti_CallbackId, uint8_t)) {
    if (!enable) return;
    for (uint32_t cbid = 1; cbid < count; ++cbid) {
      const char* name = nullptr;
      if (api.GetCallbackName(domain, cbid, &name) != CUPTI_SUCCESS || !name) continue;
      if (is_noisy_api(api_base_name(name))) enable(cbid, 0);
    }
  };
  pass(CUPTI_CB_DOMAIN_RUNTIME_API, CUPTI_RUNTIME_TRACE_CBID_SIZE, api.ActivityEnableRuntimeApi);
  pass(CUPTI_CB_DOMAIN_DRIVER_API, CUPTI_DRIVER_TRACE_CBID_SIZE, api.ActivityEnableDriverApi);
}

// Thread ids, ringprof's clock, then ringprof's buffer callbacks: what
// start() and take_back() set before any kind is enabled.
bool register_callbacks(const Api& a);

// Enables the kinds of s.level into s.enabled: the kernel kind decides (if it
// cannot be enabled nothing useful can); an optional kind this CUPTI or
// device cannot trace is left out.
bool enable_kinds(State& s, const Api& a);

}  // namespace

std::string explain(CUptiResult r, const char* what) {
  const std::string name = result_name(current_api(), r);
  switch (r) {
    case CUPTI_ERROR_INSUFFICIENT_PRIVILEGES:
    case CUPTI_ERROR_VIRTUALIZED_DEVICE_INSUFFICIENT_PRIVILEGES:
      return name + " (" + what +
             "): the NVIDIA driver lets only administrators profile the GPU (NVreg_RestrictProfilingToAdminUsers=1). "
             "Run as root, or allow all users: echo 'options nvidia NVreg_RestrictProfilingToAdminUsers=0' | "
             "sudo tee /etc/modprobe.d/nvidia-profiling.conf, then reboot (or reload the nvidia module); "
             "in a container, also grant CAP_SYS_ADMIN";
    case CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED:
      return name + " (" + what +
             "): another CUPTI client already traces this process (Nsight Systems or Nsight Compute, "
             "torch.profiler/Kineto, a DCGM profiler, …) and CUPTI allows only one: run without it, or set "
             "RINGPROF_GPU=0 to leave the GPU to it";
    case CUPTI_ERROR_NOT_COMPATIBLE:
    case CUPTI_ERROR_CUDA_COMPILER_NOT_COMPATIBLE:
      return name + " (" + what +
             "): version mismatch between libcupti and the NVIDIA driver: install a driver for CUDA " +
             std::to_string(CUDA_VERSION / 1000) +
             " or later, or build ringprof against the CUDA toolkit your driver supports and point "
             "RINGPROF_CUPTI_LIB at that toolkit's libcupti";
    case CUPTI_ERROR_NOT_INITIALIZED:
    case CUPTI_ERROR_INVALID_DEVICE:
    case CUPTI_ERROR_UNKNOWN:
      return name + " (" + what +
             "): CUPTI could not reach a GPU: no NVIDIA device is visible, or the driver is not loaded "
             "(check nvidia-smi and CUDA_VISIBLE_DEVICES)";
    default:
      return name + " (" + what + ")";
  }
}

void use_api_for_testing(const Api* fake) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.control);
  s.fake = fake;
  s.callbacks_registered = false;
  s.closed.store(false, std::memory_order_release);  // a test's close_at_exit() ends with its fake
}

const Api& api() { return current_api(); }
uint64_t dropped_records() { return state().dropped.load(std::memory_order_relaxed); }
uint64_t refused_buffers() { return state().refused.load(std::memory_order_relaxed); }

uint64_t timestamp() { return internal::monotonic_ns(); }

void buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  State& s = state();
  *max_records = 0;  // as many as fit
  uint8_t* base = nullptr;
  if (!s.free_buffers.try_dequeue(base)) {
    // Reserve a slot in the pool before allocating, so concurrent requests
    // can never exceed the bound.
    uint32_t n = s.allocated.load(std::memory_order_relaxed);
    const uint32_t cap = s.max_buffers.load(std::memory_order_relaxed);
    while (n < cap && !s.allocated.compare_exchange_weak(n, n + 1, std::memory_order_relaxed)) {
    }
    if (n < cap) {
      const size_t bytes = s.buffer_bytes.load(std::memory_order_relaxed);
      base = static_cast<uint8_t*>(std::aligned_alloc(kHeader, kHeader + bytes));
      if (base) {
        *reinterpret_cast<size_t*>(base) = bytes;
      } else {
        s.allocated.fetch_sub(1, std::memory_order_relaxed);
      }
    }
  }
  if (!base) {
    // No room: CUPTI drops records until a buffer comes back, and counts them.
    s.refused.fetch_add(1, std::memory_order_relaxed);
    *buffer = nullptr;
    *size = 0;
    return;
  }
  *buffer = base + kHeader;
  *size = *reinterpret_cast<size_t*>(base);
}

void buffer_completed(CUcontext context, uint32_t stream, uint8_t* buffer, size_t, size_t valid) {
  State& s = state();
  const Api& a = current_api();
  size_t dropped = 0;
  if (a.ActivityGetNumDroppedRecords && a.ActivityGetNumDroppedRecords(context, stream, &dropped) == CUPTI_SUCCESS &&
      dropped)
    s.dropped.fetch_add(dropped, std::memory_order_relaxed);
  if (!buffer) return;
  if (valid == 0 || !s.completed.enqueue(Completed{buffer, valid})) s.free_buffers.enqueue(buffer - kHeader);
}

void drain_completed(Converter& converter) {
  State& s = state();
  Completed c;
  while (s.completed.try_dequeue(c)) {
    converter.convert_buffer(c.buffer, c.valid);
    s.free_buffers.enqueue(c.buffer - kHeader);
  }
}

void flush() {
  State& s = state();
  // Handed over: the buffers in CUPTI are the other client's.
  if (!s.running.load(std::memory_order_acquire) || s.handed_over.load(std::memory_order_acquire) ||
      s.closed.load(std::memory_order_acquire))
    return;
  current_api().ActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
}

namespace {

bool register_callbacks(const Api& a) {
  // System thread ids (gettid), the ids ringprof's threads carry, so API
  // calls land on the right thread's track.
  if (a.SetThreadIdType) a.SetThreadIdType(CUPTI_ACTIVITY_THREAD_ID_TYPE_SYSTEM);
  // ringprof's clock, before any kind is enabled, so every record uses it.
  CUptiResult r = a.ActivityRegisterTimestampCallback(on_timestamp);
  if (r != CUPTI_SUCCESS) {
    warn(explain(r, "cuptiActivityRegisterTimestampCallback"));
    return false;
  }
  r = a.ActivityRegisterCallbacks(on_buffer_requested, on_buffer_completed);
  if (r != CUPTI_SUCCESS) {
    warn(explain(r, "cuptiActivityRegisterCallbacks"));
    return false;
  }
  return true;
}

bool enable_kinds(State& s, const Api& a) {
  CUptiResult r = a.ActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  if (r != CUPTI_SUCCESS) {
    warn(explain(r, "cuptiActivityEnable(CONCURRENT_KERNEL)"));
    return false;
  }
  s.enabled = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL};
  if (a.ActivityEnable(CUPTI_ACTIVITY_KIND_DEVICE) == CUPTI_SUCCESS) s.enabled.push_back(CUPTI_ACTIVITY_KIND_DEVICE);
  for (CUpti_ActivityKind kind : kAlwaysOnKinds)
    if (kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL && a.ActivityEnable(kind) == CUPTI_SUCCESS)
      s.enabled.push_back(kind);
  // The detailed kinds only at Detailed (a session starts at its starting
  // level, no window open yet); set_level() follows changes.
  if (s.level == Level::Detailed)
    for (CUpti_ActivityKind kind : kDetailedKinds)
      if (a.ActivityEnable(kind) == CUPTI_SUCCESS) s.enabled.push_back(kind);
  disable_noisy_apis(a);
  return true;
}

}  // namespace

bool start(const Config& config) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.control);
  if (s.running.load()) {
    warn("CUPTI is still held by an earlier recording session that did not stop");
    return false;
  }
  std::string why;
  if (!s.fake && !s.loaded) {
    bool no_driver = false;
    if (!check_driver(&why, &no_driver) || !load(config, s.api, &why)) {
      // No driver is the normal state of a machine without a GPU: a program
      // that does not use CUDA hears nothing of it unless it asked for GPU
      // tracing (RINGPROF_GPU=1).
      if (!no_driver || config.gpu_requested || process_uses_cuda()) warn(why);
      return false;
    }
    s.loaded = true;
  }
  const Api& a = current_api();
  s.buffer_bytes.store(config.cupti_buffer_bytes / 8 * 8, std::memory_order_relaxed);
  s.max_buffers.store(config.cupti_buffers, std::memory_order_relaxed);
  s.dropped.store(0, std::memory_order_relaxed);  // the counters are per session
  s.refused.store(0, std::memory_order_relaxed);

  if (!s.callbacks_registered) {
    if (!register_callbacks(a)) return false;
    s.callbacks_registered = true;
  }
  if (a.ActivityFlushPeriod) a.ActivityFlushPeriod(config.flush_interval_ms);
  s.level = config.ops.mode;
  if (!enable_kinds(s, a)) return false;
  s.handed_over.store(false, std::memory_order_release);
  s.running.store(true, std::memory_order_release);
  if (!s.fake) {
    static std::once_flag once;
    std::call_once(once, [] { std::atexit(close_at_exit); });
  }
  return true;
}

// Seen on an H200 (CUDA 13.0, driver 580): under CUDA_INJECTION64_PATH,
// where start() runs inside cuInit, the cuptiActivityDisable of ringprof's
// exit-time stop() crashed the process (CUPTI's exit handling had run
// first; with LD_PRELOAD it had not). Registered after CUPTI initialised,
// this handler runs before CUPTI's; the drainer's last round then converts
// what it queued without calling CUPTI.
void close_at_exit() {
  State& s = state();
  std::unique_lock<std::mutex> lock(s.control, std::try_to_lock);
  if (!lock.owns_lock()) {  // a start/stop/level change in flight on another thread: leave CUPTI alone
    s.closed.store(true, std::memory_order_release);
    return;
  }
  if (s.running.load() && !s.handed_over.load()) current_api().ActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  s.closed.store(true, std::memory_order_release);
}

bool hand_over(const char* client) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.control);
  if (!s.running.load() || s.handed_over.load() || s.closed.load()) return false;
  const Api& a = current_api();
  // ringprof's partly filled buffers come back to ringprof now; left in
  // CUPTI they would complete into the other client's callback, which
  // does not know them, and their records would be lost.
  a.ActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  for (CUpti_ActivityKind kind : s.enabled) a.ActivityDisable(kind);
  s.enabled.clear();
  // The other client expects CUPTI's own timestamps (Kineto drops records
  // outside its window otherwise): ringprof's clock goes with its kinds.
  a.ActivityRegisterTimestampCallback(nullptr);
  s.handed_over.store(true, std::memory_order_release);
  std::fprintf(stderr,
               "ringprof: warning: %s takes CUPTI, which serves one client at a time: ringprof's GPU tracing "
               "pauses until it stops (the files mark the gap); CPU recording goes on\n",
               client);
  return true;
}

bool take_back(const char* client) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.control);
  if (!s.running.load() || !s.handed_over.load() || s.closed.load()) return false;
  const Api& a = current_api();
  // The other client registered its own buffer callbacks: ringprof's go
  // back in, with its clock, before any kind is enabled again.
  if (!register_callbacks(a) || !enable_kinds(s, a)) {
    warn(std::string("could not take CUPTI back after ") + client);
    s.running.store(false, std::memory_order_release);
    return false;
  }
  s.handed_over.store(false, std::memory_order_release);
  std::fprintf(stderr, "ringprof: GPU tracing resumed after %s\n", client);
  return true;
}

const CUpti_ActivityKind kAlwaysOnKinds[6] = {
    CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,  CUPTI_ACTIVITY_KIND_MEMSET,
    CUPTI_ACTIVITY_KIND_RUNTIME,           CUPTI_ACTIVITY_KIND_DRIVER,  CUPTI_ACTIVITY_KIND_DEVICE};
const CUpti_ActivityKind kDetailedKinds[6] = {
    CUPTI_ACTIVITY_KIND_SYNCHRONIZATION,        CUPTI_ACTIVITY_KIND_MEMORY2, CUPTI_ACTIVITY_KIND_OVERHEAD,
    CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION, CUPTI_ACTIVITY_KIND_MARKER,  CUPTI_ACTIVITY_KIND_MARKER_DATA};

void set_level(Level m) {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.control);
  if (!s.running.load()) return;
  s.level = m;
  if (s.handed_over.load() || s.closed.load()) return;  // take_back() enables the kinds of the level then
  const Api& a = current_api();
  auto is_enabled = [&](CUpti_ActivityKind k) {
    return std::find(s.enabled.begin(), s.enabled.end(), k) != s.enabled.end();
  };
  for (CUpti_ActivityKind kind : kDetailedKinds) {
    if (m == Level::Detailed) {
      if (!is_enabled(kind) && a.ActivityEnable(kind) == CUPTI_SUCCESS) s.enabled.push_back(kind);
    } else if (is_enabled(kind)) {
      a.ActivityDisable(kind);
      s.enabled.erase(std::find(s.enabled.begin(), s.enabled.end(), kind));
    }
  }
}

void stop() {
  State& s = state();
  std::lock_guard<std::mutex> lock(s.control);
  if (!s.running.load()) return;
  const Api& a = current_api();
  if (!s.closed.load()) {
    for (CUpti_ActivityKind kind : s.enabled) a.ActivityDisable(kind);
  }
  s.enabled.clear();
  s.handed_over.store(false, std::memory_order_release);
  s.running.store(false, std::memory_order_release);
}

}  // namespace ringprof::cupti

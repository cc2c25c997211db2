// torch_memory.cpp — c10's memory-reporting hook as ringprof memory events
// (torch_memory.h).
#include "torch_memory.h"

#include <c10/core/Allocator.h>
#include <c10/util/ThreadLocalDebugInfo.h>
#include <torch/csrc/profiler/orchestration/observer.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>

#include "ringprof/ringprof.h"

namespace ringprof::torch_operators {
namespace {

// Pool ids and counter names per device, made once per device and kept for
// the process (memory_pool() and counter() take static names).
struct DeviceNames {
  std::atomic<bool> ready{false};  // set once the fields below are
  uint16_t pool = 0;
  const char* allocated = nullptr;
  const char* reserved = nullptr;
};
constexpr int kDeviceTypes = static_cast<int>(c10::DeviceType::COMPILE_TIME_MAX_DEVICE_TYPES);
constexpr int kDevicesPerType = 64;  // device index 0..63; more share the last entry
std::mutex g_names_mu;               // taken once per device, to make its names
std::array<std::array<DeviceNames, kDevicesPerType>, kDeviceTypes> g_names{};

const DeviceNames& names_for(c10::Device device) {
  const int type = static_cast<int>(device.type());
  int index = device.has_index() ? device.index() : 0;
  if (index < 0) index = 0;
  if (index >= kDevicesPerType) index = kDevicesPerType - 1;
  DeviceNames& n = g_names[static_cast<size_t>(type < kDeviceTypes ? type : 0)][static_cast<size_t>(index)];
  if (n.ready.load(std::memory_order_acquire)) return n;
  std::lock_guard<std::mutex> lock(g_names_mu);
  if (!n.ready.load(std::memory_order_relaxed)) {
    // "torch:cpu", "torch:cuda:0": the CPU has one pool, each GPU one.
    std::string pool = "torch:" + c10::DeviceTypeName(device.type(), true);
    if (device.type() != c10::DeviceType::CPU) pool += ":" + std::to_string(index);
    // Never freed: the names must outlive every event that points at them.
    n.pool = memory_pool((new std::string(pool))->c_str());
    n.reserved = (new std::string(pool + " reserved"))->c_str();
    n.allocated = (new std::string(pool + " allocated"))->c_str();
    n.ready.store(true, std::memory_order_release);
  }
  return n;
}

// PyTorch reads whatever sits in the profiler's slot of a thread as its own
// profiler state (torch.autograd._profiler_enabled(), _profiler_type(), the
// RPC and data-pipe code that calls them): ringprof's is one, configured as
// a disabled profiler, so PyTorch's queries see "no profiler" there.
class Reporter final : public torch::profiler::impl::ProfilerStateBase {
 public:
  Reporter()
      : ProfilerStateBase(torch::profiler::impl::ProfilerConfig(torch::profiler::impl::ProfilerState::Disabled)) {}

  torch::profiler::impl::ActiveProfilerType profilerType() { return torch::profiler::impl::ActiveProfilerType::NONE; }

  // True for as long as it is installed, not only while ringprof is
  // detailed: PyTorch's CPU allocator keeps each reported block's size to
  // report its free, and forgets a block freed while reporting is off; a
  // block allocated in a window and freed after it would stay in its table.
  // No `override` on any of these: PyTorch declares one of the two
  // reportMemoryUsage signatures, and a compiler that sees override on some
  // members wants it on all.
  bool memoryProfilingEnabled() const { return true; }

  // Two signatures, so one of them overrides PyTorch's whichever it declares
  // (1.x: int64_t totals; 2.x: size_t).
  void reportMemoryUsage(void* ptr, int64_t alloc_size, int64_t total_allocated, int64_t total_reserved,
                         c10::Device device) {
    report(ptr, alloc_size, static_cast<double>(total_allocated), static_cast<double>(total_reserved), device);
  }
  void reportMemoryUsage(void* ptr, int64_t alloc_size, size_t total_allocated, size_t total_reserved,
                         c10::Device device) {
    report(ptr, alloc_size, static_cast<double>(total_allocated), static_cast<double>(total_reserved), device);
  }

 private:
  static void report(void* ptr, int64_t size, double allocated, double reserved, c10::Device device) {
    if (!detailed()) return;
    const DeviceNames& n = names_for(device);
    if (size >= 0)
      memory_alloc(ptr, static_cast<size_t>(size), n.pool);
    else
      memory_free(ptr, static_cast<size_t>(-size), n.pool);
    // The device allocators' totals. The CPU allocator's counts only the
    // blocks it saw while some profiler asked for memory: not a total.
    if (device.type() == c10::DeviceType::CPU) return;
    counter(n.allocated, allocated);
    counter(n.reserved, reserved);
  }
};

thread_local std::shared_ptr<Reporter> t_reporter;
thread_local int t_installs = 0;
// Ours, left in the thread's chain when something was above it at
// uninstall (torch.profiler started inside): found again by install().
thread_local const c10::DebugInfoBase* t_left_behind = nullptr;
// The install count while torch.profiler has the slot (yield_memory_reporting).
thread_local int t_yielded = 0;

}  // namespace

bool install_memory_reporting() {
  if (t_installs > 0) {
    ++t_installs;
    return true;
  }
  try {
    const c10::DebugInfoBase* held = c10::ThreadLocalDebugInfo::get(c10::DebugInfoKind::PROFILER_STATE);
    if (held != nullptr && held == t_left_behind) {
      t_installs = 1;  // still in place, below nothing now
      return true;
    }
    // Another profiler (torch.profiler, the autograd profiler) holds the
    // slot: its state would be popped by ours, or ours by it.
    if (held != nullptr) return false;
    auto reporter = std::make_shared<Reporter>();
    c10::ThreadLocalDebugInfo::_push(c10::DebugInfoKind::PROFILER_STATE, reporter);
    t_reporter = std::move(reporter);
    t_left_behind = nullptr;
    t_installs = 1;
    return true;
  } catch (...) {
    return false;
  }
}

bool uninstall_memory_reporting() {
  if (t_installs == 0 && t_yielded > 0) {
    --t_yielded;  // the block ends while torch.profiler runs: nothing to resume for it
    return true;
  }
  if (t_installs == 0) return true;
  if (--t_installs > 0) return true;
  // Only ours, from the top of the stack: anything pushed above it since
  // (torch.profiler, a guard) stays as it is, and so does ours below it.
  bool popped = false;
  try {
    if (t_reporter && c10::ThreadLocalDebugInfo::current() != nullptr &&
        c10::ThreadLocalDebugInfo::_peek(c10::DebugInfoKind::PROFILER_STATE).get() == t_reporter.get()) {
      c10::ThreadLocalDebugInfo::_pop(c10::DebugInfoKind::PROFILER_STATE);
      popped = true;
    }
  } catch (...) {
  }
  t_left_behind = popped ? nullptr : t_reporter.get();
  if (popped) t_reporter.reset();
  return popped;
}

bool memory_reporting_installed() { return t_installs > 0; }

bool yield_memory_reporting() {
  if (t_installs == 0 || !t_reporter) return false;
  try {
    if (c10::ThreadLocalDebugInfo::current() == nullptr ||
        c10::ThreadLocalDebugInfo::_peek(c10::DebugInfoKind::PROFILER_STATE).get() != t_reporter.get())
      return false;
    c10::ThreadLocalDebugInfo::_pop(c10::DebugInfoKind::PROFILER_STATE);
  } catch (...) {
    return false;
  }
  t_reporter.reset();
  t_yielded = t_installs;
  t_installs = 0;
  return true;
}

bool resume_memory_reporting() {
  if (t_yielded == 0) return false;
  const int count = t_yielded;
  t_yielded = 0;
  if (!install_memory_reporting()) return false;
  t_installs = count;
  return true;
}

}  // namespace ringprof::torch_operators

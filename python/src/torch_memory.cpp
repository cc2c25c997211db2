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

#include "ringprof/heap.h"
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

  // Whether PyTorch's CPU allocator reports to it (the device allocators
  // report whatever this says). True for as long as a profile_memory user
  // holds it, not only while ringprof is detailed: the CPU allocator keeps
  // each reported block's size to report its free, and forgets a block
  // freed while reporting is off; a block allocated in a window and freed
  // after it would stay in its table. For the heap profile alone, only when
  // asked (RINGPROF_TORCH_HEAP=all): that table costs a global lock per CPU
  // block, and PyTorch logs a warning when a block from before is freed.
  // No `override` on any of these: PyTorch declares one of the two
  // reportMemoryUsage signatures, and a compiler that sees override on some
  // members wants it on all.
  bool memoryProfilingEnabled() const {
    // heap_cpu only while recording: a thread that never stepped again after
    // stop() must not keep the CPU allocator's lock and table.
    return exact.load(std::memory_order_relaxed) ||
           (heap_cpu.load(std::memory_order_relaxed) && heap_sampling_interval() != 0);
  }

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

  // What the reports feed, set by the installing thread and read by every
  // thread that inherited this object (autograd's workers): exact events
  // (profile_memory blocks and windows, at the detailed level) and the
  // sampled heap profile (at every level while recording).
  std::atomic<bool> exact{false};
  std::atomic<bool> heap{false};
  std::atomic<bool> heap_cpu{false};  // the CPU allocator's blocks too

 private:
  void report(void* ptr, int64_t size, double allocated, double reserved, c10::Device device) {
    const bool want_exact = exact.load(std::memory_order_relaxed) && detailed();
    const bool want_heap = heap.load(std::memory_order_relaxed);
    if (!want_exact && !want_heap) return;
    const DeviceNames& n = names_for(device);
    const size_t bytes = static_cast<size_t>(size >= 0 ? size : -size);
    // The free before the allocator reuses the block is PyTorch's order
    // already: it reports a free before the block goes back to its cache.
    if (want_heap) {
      if (size >= 0)
        heap_alloc(ptr, bytes, n.pool);
      else
        heap_free(ptr, bytes, n.pool);
    }
    if (!want_exact) return;
    if (size >= 0)
      memory_alloc(ptr, bytes, n.pool);
    else
      memory_free(ptr, bytes, n.pool);
    // The device allocators' totals. The CPU allocator's counts only the
    // blocks it saw while some profiler asked for memory: not a total.
    if (device.type() == c10::DeviceType::CPU) return;
    counter(n.allocated, allocated);
    counter(n.reserved, reserved);
  }
};

thread_local std::shared_ptr<Reporter> t_reporter;
// Users of the reporter on this thread: profile_memory blocks and windows
// (exact, counted) and the recording session's heap sampling (one).
thread_local int t_exact = 0;
thread_local bool t_heap = false;
thread_local bool t_heap_cpu = false;
// Whether ours is in the slot (t_reporter set), and while torch.profiler
// has the slot, whether it was (yield_memory_reporting).
thread_local bool t_yielded = false;
// Ours, left in the thread's chain when something was above it at
// uninstall (torch.profiler started inside): found again by put_in_slot().
// Weak: a guard that restores the chain may free it, and another profiler's
// state may then sit at the same address.
thread_local std::weak_ptr<Reporter> t_left_behind;

int users() { return t_exact + (t_heap ? 1 : 0); }

void set_flags() {
  if (!t_reporter) return;
  t_reporter->exact.store(t_exact > 0, std::memory_order_relaxed);
  t_reporter->heap.store(t_heap, std::memory_order_relaxed);
  t_reporter->heap_cpu.store(t_heap && t_heap_cpu, std::memory_order_relaxed);
}

// Quiet for every thread that holds it (autograd's workers too).
void silence(Reporter& r) {
  r.exact.store(false, std::memory_order_relaxed);
  r.heap.store(false, std::memory_order_relaxed);
  r.heap_cpu.store(false, std::memory_order_relaxed);
}

// Ours into the thread's profiler slot; false when another profiler holds it.
bool put_in_slot() {
  if (t_reporter) return true;
  try {
    const c10::DebugInfoBase* held = c10::ThreadLocalDebugInfo::get(c10::DebugInfoKind::PROFILER_STATE);
    if (held != nullptr) {
      // Still in place and found first: ours again (the object autograd's
      // workers may hold). Anything else is another profiler's (torch.profiler,
      // the autograd profiler): its state would be popped by ours, or ours by it.
      std::shared_ptr<Reporter> left = t_left_behind.lock();
      if (!left || held != left.get()) return false;
      t_reporter = std::move(left);
      t_left_behind.reset();
      return true;
    }
    auto reporter = std::make_shared<Reporter>();
    c10::ThreadLocalDebugInfo::_push(c10::DebugInfoKind::PROFILER_STATE, reporter);
    t_reporter = std::move(reporter);
    t_left_behind.reset();
    return true;
  } catch (...) {
    return false;
  }
}

// Ours out of the slot, from the top of the stack only: anything pushed
// above it since (torch.profiler, a guard) stays as it is, and so does ours
// below it, inert (its flags cleared). False when it had to stay.
bool take_from_slot() {
  if (!t_reporter) return true;
  bool popped = false;
  try {
    if (c10::ThreadLocalDebugInfo::current() != nullptr &&
        c10::ThreadLocalDebugInfo::_peek(c10::DebugInfoKind::PROFILER_STATE).get() == t_reporter.get()) {
      c10::ThreadLocalDebugInfo::_pop(c10::DebugInfoKind::PROFILER_STATE);
      popped = true;
    }
  } catch (...) {
  }
  silence(*t_reporter);
  if (popped)
    t_left_behind.reset();
  else
    t_left_behind = t_reporter;
  t_reporter.reset();
  return popped;
}

}  // namespace

bool install_memory_reporting() {
  if (t_exact > 0) {
    ++t_exact;
    return true;
  }
  if (t_yielded || !put_in_slot()) return false;
  t_exact = 1;
  set_flags();
  return true;
}

bool uninstall_memory_reporting() {
  if (t_exact == 0) return true;
  --t_exact;
  if (t_yielded) return true;  // the block ends while torch.profiler runs: nothing to resume for it
  if (users() > 0) {
    set_flags();
    return true;
  }
  return take_from_slot();
}

bool memory_reporting_installed() { return t_exact > 0 && t_reporter != nullptr; }

bool install_heap_reporting(bool cpu) {
  if (!t_heap && !t_yielded && !put_in_slot()) return false;
  t_heap = true;
  t_heap_cpu = cpu;
  set_flags();
  return true;
}

void uninstall_heap_reporting() {
  if (!t_heap) return;
  t_heap = t_heap_cpu = false;
  if (t_yielded) return;
  if (users() > 0)
    set_flags();
  else
    take_from_slot();
}

bool heap_reporting_installed() { return t_heap && t_reporter != nullptr; }

bool yield_memory_reporting() {
  if (!t_reporter || users() == 0) return false;
  try {
    if (c10::ThreadLocalDebugInfo::current() == nullptr ||
        c10::ThreadLocalDebugInfo::_peek(c10::DebugInfoKind::PROFILER_STATE).get() != t_reporter.get())
      return false;
    c10::ThreadLocalDebugInfo::_pop(c10::DebugInfoKind::PROFILER_STATE);
  } catch (...) {
    return false;
  }
  silence(*t_reporter);  // autograd's workers may still hold it
  t_reporter.reset();
  t_yielded = true;
  return t_exact > 0;  // only a profile_memory user hears of it
}

bool resume_memory_reporting() {
  if (!t_yielded) return false;
  t_yielded = false;
  if (users() == 0) return false;
  if (!put_in_slot()) {
    // Still taken (another profiler started meanwhile): the users are gone.
    t_exact = 0;
    t_heap = t_heap_cpu = false;
    return false;
  }
  set_flags();
  return true;
}

}  // namespace ringprof::torch_operators

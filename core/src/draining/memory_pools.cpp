// The memory pool table: a fixed array of name pointers that only grows.
//
// Registration is rare (once per pool per process) and takes a mutex so two
// threads registering the same name get one index. The drainer reads without
// the lock: a slot is written before `g_count` is raised with a release
// store, so any index below the acquired count names a complete entry. The
// pointer itself is what the drainer interns (LocationRegistry's static
// strings), which is why names must have static storage.
#include "draining/memory_pools.h"

#include <atomic>
#include <cstdio>
#include <cstring>
#include <mutex>

#include "ringprof/memory.h"

namespace ringprof {
namespace {

constexpr const char* kDefaultPool = "heap";

std::atomic<const char*> g_names[kMaxMemoryPools] = {};
std::atomic<uint32_t> g_count{1};  // slot 0 is the default pool
constinit std::mutex g_register_mutex;
std::atomic<bool> g_warned_full{false};

const char* slot_name(uint32_t i) noexcept {
  if (i == 0) return kDefaultPool;
  return g_names[i].load(std::memory_order_relaxed);
}

// Index of a registered name equal to `name`, or -1.
int find(const char* name, uint32_t count) noexcept {
  for (uint32_t i = 0; i < count; ++i) {
    const char* n = slot_name(i);
    if (n == name || std::strcmp(n, name) == 0) return static_cast<int>(i);
  }
  return -1;
}

}  // namespace

uint16_t memory_pool(const char* static_name) noexcept {
  if (static_name == nullptr) return 0;
  if (int i = find(static_name, g_count.load(std::memory_order_acquire)); i >= 0) return static_cast<uint16_t>(i);
  std::lock_guard<std::mutex> lock(g_register_mutex);
  const uint32_t count = g_count.load(std::memory_order_relaxed);
  if (int i = find(static_name, count); i >= 0) return static_cast<uint16_t>(i);
  if (count >= kMaxMemoryPools) {
    if (!g_warned_full.exchange(true))
      std::fprintf(stderr, "ringprof: warning: more than %u memory pools; \"%s\" and later ones record as \"heap\"\n",
                   static_cast<unsigned>(kMaxMemoryPools), static_name);
    return 0;
  }
  g_names[count].store(static_name, std::memory_order_relaxed);
  g_count.store(count + 1, std::memory_order_release);
  return static_cast<uint16_t>(count);
}

const char* memory_pools::name(uint16_t index) noexcept {
  if (index >= g_count.load(std::memory_order_acquire)) return kDefaultPool;
  return slot_name(index);
}

}  // namespace ringprof

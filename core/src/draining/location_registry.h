// Names events by process-wide location ids. Owned by the drainer thread: the
// recording path only stores a pointer or inline bytes, and the drainer turns
// them into ids here, reading a static SourceLocation or string once.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "ringprof/ringprof_c.h"
#include "ringprof/sink.h"

namespace ringprof {

class LocationRegistry {
 public:
  // Run-time names past this many distinct ones share one "<too many names>"
  // location, so a program that builds unbounded unique names cannot grow the
  // drainer's memory without bound.
  static constexpr size_t kMaxDynamicNames = 1u << 20;

  // The drainer asks for every event: a direct-mapped cache of recent
  // pointers answers without hashing.
  uint32_t for_source(const ringprof_source_location* loc) {
    CacheEntry& c = cache_[slot(loc)];
    if (c.key == loc && c.kind == 1) return c.id;
    c = {loc, source_slow(loc), 1};
    return c.id;
  }
  uint32_t for_static_string(const char* name) {
    CacheEntry& c = cache_[slot(name)];
    if (c.key == name && c.kind == 2) return c.id;
    c = {name, static_string_slow(name), 2};
    return c.id;
  }
  uint32_t for_runtime_name(std::string_view name);
  // The same, and where the name's bytes live (NUL-terminated, stable for the
  // registry's life): the crash handler reads names through such pointers.
  uint32_t for_runtime_name(std::string_view name, const char** stable);

  // A frame of interpreted code (a Python function at one line): named by
  // its function, located by file and line. Past kMaxDynamicNames distinct
  // ones, all share "<too many interpreter frames>".
  uint32_t for_interpreter_frame(const std::string& function, const std::string& file, uint32_t line);

  const std::vector<Location>& all() const { return locations_; }

 private:
  struct CacheEntry {
    const void* key = nullptr;
    uint32_t id = 0;
    uint32_t kind = 0;  // 1 source location, 2 static string
  };
  static size_t slot(const void* p) { return (reinterpret_cast<uintptr_t>(p) >> 3) & (kCacheSize - 1); }
  static constexpr size_t kCacheSize = 4096;

  uint32_t source_slow(const ringprof_source_location* loc);
  uint32_t static_string_slow(const char* name);
  uint32_t add(std::string name, std::string function, std::string file, uint32_t line);

  std::vector<CacheEntry> cache_ = std::vector<CacheEntry>(kCacheSize);

  std::vector<Location> locations_;
  std::unordered_map<const void*, uint32_t> by_source_;
  std::unordered_map<const void*, uint32_t> by_static_string_;
  std::unordered_map<std::string, uint32_t> by_runtime_name_;
  std::unordered_map<std::string, uint32_t> by_interpreter_frame_;  // function \0 file \0 line
  uint32_t overflow_id_ = 0;
  uint32_t interpreter_overflow_id_ = 0;
};

}  // namespace ringprof

// Names events by process-wide location ids. Owned by the drainer thread: the
// recording path only stores a pointer or inline bytes, and the drainer turns
// them into ids here, reading a static SourceLocation or string once.
#pragma once

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

  uint32_t for_source(const ringprof_source_location* loc);
  uint32_t for_static_string(const char* name);
  uint32_t for_runtime_name(std::string_view name);

  const std::vector<Location>& all() const { return locations_; }

 private:
  uint32_t add(std::string name, std::string function, std::string file, uint32_t line);

  std::vector<Location> locations_;
  std::unordered_map<const void*, uint32_t> by_source_;
  std::unordered_map<const void*, uint32_t> by_static_string_;
  std::unordered_map<std::string, uint32_t> by_runtime_name_;
  uint32_t overflow_id_ = 0;
};

}  // namespace ringprof

#include "draining/location_registry.h"

namespace ringprof {

uint32_t LocationRegistry::add(std::string name, std::string function, std::string file, uint32_t line) {
  Location l;
  l.id = static_cast<uint32_t>(locations_.size() + 1);
  l.name = std::move(name);
  l.function = std::move(function);
  l.file = std::move(file);
  l.line = line;
  locations_.push_back(std::move(l));
  return locations_.back().id;
}

uint32_t LocationRegistry::source_slow(const ringprof_source_location* loc) {
  if (!loc) return 0;
  auto it = by_source_.find(loc);
  if (it != by_source_.end()) return it->second;
  const uint32_t id = add(loc->name ? loc->name : "", loc->function ? loc->function : "",
                          loc->file ? loc->file : "", loc->line);
  by_source_.emplace(loc, id);
  return id;
}

uint32_t LocationRegistry::static_string_slow(const char* name) {
  if (!name) return 0;
  auto it = by_static_string_.find(name);
  if (it != by_static_string_.end()) return it->second;
  const uint32_t id = add(name, "", "", 0);
  by_static_string_.emplace(name, id);
  return id;
}

uint32_t LocationRegistry::for_runtime_name(std::string_view name) {
  const char* ignored = nullptr;
  return for_runtime_name(name, &ignored);
}

uint32_t LocationRegistry::for_runtime_name(std::string_view name, const char** stable) {
  // Map keys are nodes that never move, so their c_str() stays put.
  auto it = by_runtime_name_.find(std::string(name));
  if (it != by_runtime_name_.end()) {
    *stable = it->first.c_str();
    return it->second;
  }
  if (by_runtime_name_.size() >= kMaxDynamicNames) {
    if (!overflow_id_) overflow_id_ = add("<too many names>", "", "", 0);
    *stable = "<too many names>";
    return overflow_id_;
  }
  const uint32_t id = add(std::string(name), "", "", 0);
  *stable = by_runtime_name_.emplace(std::string(name), id).first->first.c_str();
  return id;
}

uint32_t LocationRegistry::for_interpreter_frame(const std::string& function, const std::string& file, uint32_t line) {
  std::string key = function;
  key.push_back('\0');
  key += file;
  key.push_back('\0');
  key += std::to_string(line);
  if (auto it = by_interpreter_frame_.find(key); it != by_interpreter_frame_.end()) return it->second;
  if (by_interpreter_frame_.size() >= kMaxDynamicNames) {
    if (!interpreter_overflow_id_) interpreter_overflow_id_ = add("<too many interpreter frames>", "", "", 0);
    return interpreter_overflow_id_;
  }
  const uint32_t id = add(function, function, file, line);
  by_interpreter_frame_.emplace(std::move(key), id);
  return id;
}

}  // namespace ringprof

// ProcessState's lookups: the tables the reader fills as it goes.
#include <string>

#include "ringprof/tools/trace_reader.h"

namespace ringprof {

const Location* ProcessState::location(uint32_t id) const {
  auto it = locations.find(id);
  return it == locations.end() ? nullptr : &it->second;
}

const StackTrace* ProcessState::stack(uint32_t id) const {
  auto it = stacks.find(id);
  return it == stacks.end() ? nullptr : &it->second;
}

const ModuleInfo* ProcessState::module_for(uint64_t address) const {
  for (const auto& [id, m] : modules)
    if (address >= m.start && address < m.end) return &m;
  return nullptr;
}

const GpuDevice* ProcessState::gpu_device(uint32_t id) const {
  auto it = gpu_devices.find(id);
  return it == gpu_devices.end() ? nullptr : &it->second;
}

std::string ProcessState::location_name(uint32_t id) const {
  const Location* loc = location(id);
  if (loc && !loc->name.empty()) return loc->name;
  if (loc && !loc->function.empty()) return loc->function;
  return "<location " + std::to_string(id) + ">";
}

const ThreadState* ProcessState::thread(uint32_t thread_index) const {
  auto it = threads.find(thread_index);
  return it == threads.end() ? nullptr : &it->second;
}

uint32_t ProcessState::tid_of(uint32_t thread_index) const {
  const ThreadState* t = thread(thread_index);
  return t ? t->tid : thread_index;
}

std::string ProcessState::trace_name() const {
  if (!rank || rank->rank < 0) return display_name();
  return "rank " + std::to_string(rank->rank) + " (" + (hostname.empty() ? std::string("unknown host") : hostname) +
         ", " + std::to_string(pid) + ")";
}

std::string ProcessState::display_name() const {
  if (!command_line.empty() && !command_line[0].empty()) {
    const std::string& argv0 = command_line[0];
    const size_t slash = argv0.find_last_of('/');
    std::string base = slash == std::string::npos ? argv0 : argv0.substr(slash + 1);
    if (!base.empty()) return base;
  }
  return "pid " + std::to_string(pid);
}

}  // namespace ringprof

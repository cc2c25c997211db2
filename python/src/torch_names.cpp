// torch_names.cpp — the process-wide table behind op_name() (torch_names.h).
#include "torch_names.h"

#include <mutex>
#include <string>
#include <unordered_set>

namespace ringprof::torch_operators {

const char* intern_op_name_slow(const char* name) {
  // Never destroyed: the drainer reads these names at exit.
  static auto* mu = new std::mutex();
  static auto* names = new std::unordered_set<std::string>();
  std::lock_guard<std::mutex> lock(*mu);
  if (auto it = names->find(name); it != names->end()) return it->c_str();
  if (names->size() >= kMaxOpNames) return nullptr;
  return names->emplace(name).first->c_str();
}

}  // namespace ringprof::torch_operators

#include "symbols/demangle.h"

#include <cxxabi.h>

#include <cstdlib>

namespace ringprof::internal {

std::string demangle(const char* name) {
  if (!name) return {};
  if (name[0] != '_' || name[1] != 'Z') return name;
  int status = 0;
  char* out = abi::__cxa_demangle(name, nullptr, nullptr, &status);
  if (status != 0 || !out) {
    std::free(out);
    return name;
  }
  std::string s(out);
  std::free(out);
  return s;
}

}  // namespace ringprof::internal

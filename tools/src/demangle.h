// demangle.h (internal) — C++ symbol names as people read them. CUDA kernel
// names arrive mangled ("_Z6matmulPfS_S_i"); the tools show them demangled.
#pragma once

#include <string>

namespace ringprof::detail {

// The demangled name, or `name` itself when it is not a mangled C++ name.
std::string demangle(const std::string& name);

}  // namespace ringprof::detail

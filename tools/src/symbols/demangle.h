// demangle.h (internal) — C++ names as a person reads them: symbols from ELF
// tables and CUDA kernel names ("_Z6matmulPfS_S_i") arrive mangled.
#pragma once

#include <string>

namespace ringprof::internal {

// abi::__cxa_demangle's reading of an Itanium-mangled name ("_Z..."), with
// parameter lists and clone suffixes; any other name, or one that does not
// demangle, comes back unchanged.
std::string demangle(const char* name);
inline std::string demangle(const std::string& name) { return demangle(name.c_str()); }

}  // namespace ringprof::internal

// demangle.h (internal) — C++ names as a person reads them.
#pragma once

#include <string>

namespace ringprof::detail {

// abi::__cxa_demangle's reading of an Itanium-mangled name ("_Z..."), with
// parameter lists and clone suffixes; any other name, or one that does not
// demangle, comes back unchanged.
std::string demangle(const char* name);

}  // namespace ringprof::detail

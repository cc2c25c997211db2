// The functions of tests/symbolizer_testlib.cpp (libringprof_symtest.so).
#pragma once

namespace testlib {

// The return address of its own call: an address inside the caller.
void* return_address_here();
// Stores in *pc an address inside itself (a return address: resolve pc - 1).
int scale(int x, void** pc);
// Calls a function with internal linkage, which stores in *pc an address
// inside itself: the name only a symbol table (or MiniDebugInfo) gives.
int scale_through_hidden(int x, void** pc);

}  // namespace testlib

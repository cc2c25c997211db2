// A small shared library for the symbolizer tests: a second module with its
// own build ID and DWARF, and a file the tests strip and split. Built with -g
// by tests/CMakeLists.txt; it must not be named *_test.cpp.
#include "symbolizer_testlib.h"

namespace testlib {

__attribute__((noinline)) void* return_address_here() {
  void* ra = __builtin_return_address(0);
  asm volatile("" ::: "memory");  // keeps this a real call, not folded away
  return ra;
}

__attribute__((noinline)) int scale(int x, void** pc) {
  const int y = x * 3;
  *pc = return_address_here();  // the call whose return address the tests resolve
  return y + 1;
}

namespace {
// Not exported: a stripped copy's .dynsym does not name it, its
// MiniDebugInfo does.
__attribute__((noinline)) int hidden_scale(int x, void** pc) {
  const int y = x * 5;
  *pc = return_address_here();
  return y + 2;
}
}  // namespace

int scale_through_hidden(int x, void** pc) { return hidden_scale(x, pc) + 1; }

}  // namespace testlib

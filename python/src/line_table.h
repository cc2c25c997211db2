// line_table.h — the line of an instruction from CPython's location table.
//
// CPython 3.11 and 3.12 keep a code object's source positions in
// co_linetable, in the format Objects/locations.md describes (the same in both
// versions). The drainer names frames of code objects that may have died, so
// it cannot ask the interpreter (PyCode_Addr2Line): it copies the table's
// bytes and decodes them here, with no Python API at all.
#pragma once

#include <cstddef>
#include <cstdint>

namespace ringprof::python {

// The source line of the code unit at `unit` (instruction offset in bytes / 2),
// starting from the code object's co_firstlineno; 0 when the table gives that
// instruction no line, does not reach it, or is malformed.
uint32_t line_for_code_unit(const uint8_t* table, size_t size, int32_t first_line, uint32_t unit) noexcept;

}  // namespace ringprof::python

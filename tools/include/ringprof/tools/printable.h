// ringprof/tools/printable.h — names as text output shows them. Names come
// from the recorded program and may hold any bytes; text and CSV output (the
// tables, info, diff, findings) pass them through here.
#pragma once

#include <string>
#include <string_view>

namespace ringprof {

// `s` with every control byte (NUL, escape, a line break unless
// `keep_line_breaks`) written as \xNN: names come from the recorded
// program and may hold anything, and a raw NUL cuts C-string output short.
// Bytes from 0x80 up (UTF-8) pass unchanged.
std::string printable(std::string_view s, bool keep_line_breaks = false);

}  // namespace ringprof

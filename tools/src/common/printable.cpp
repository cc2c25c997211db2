// Names as text output shows them (ringprof/tools/printable.h).
#include "ringprof/tools/printable.h"

#include <cstdio>

namespace ringprof {

std::string printable(std::string_view s, bool keep_line_breaks) {
  std::string out;
  out.reserve(s.size());
  for (const char ch : s) {
    const auto c = static_cast<unsigned char>(ch);
    if (c >= 0x20 || (keep_line_breaks && (c == '\n' || c == '\t'))) {
      out += ch;
      continue;
    }
    char buf[5];
    std::snprintf(buf, sizeof buf, "\\x%02x", c);
    out += buf;
  }
  return out;
}

}  // namespace ringprof

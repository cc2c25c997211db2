// The detail levels' names (ringprof/ops.h): part of the event layout, since
// Mark events carry a level as their value, so the format library and the
// tools link this file without the recorder.
#include <string_view>

#include "ringprof/ops.h"

namespace ringprof {

const char* mode_name(Level m) noexcept {
  switch (m) {
    case Level::Off: return "off";
    case Level::AlwaysOn: return "always_on";
    case Level::Detailed: return "detailed";
  }
  return "unknown";
}

bool parse_mode(std::string_view text, Level* out) {
  if (text == "off")
    *out = Level::Off;
  else if (text == "always_on" || text == "always-on" || text == "on")
    *out = Level::AlwaysOn;
  else if (text == "detailed")
    *out = Level::Detailed;
  else
    return false;
  return true;
}

}  // namespace ringprof

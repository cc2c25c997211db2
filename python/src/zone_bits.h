// zone_bits.h — which open zones of a thread were recorded, so that a zone is
// ended only after a begin that was recorded (a full ring or recording off
// refuses a begin, and its end must then record nothing). Used by Python's
// Zone objects and by ringprof.torch's operator callbacks.
#pragma once

#include <cstdint>

#include "ringprof/recording.h"

namespace ringprof::python {

// Bit d says whether the entry at nesting depth d was recorded. Deeper than
// 64, a recorded begin is ended at once, so the thread's zones stay balanced.
struct ZoneBits {
  uint64_t bits = 0;
  uint32_t depth = 0;

  void push(bool recorded) {
    if (depth < 64) {
      if (recorded) bits |= (1ull << depth);
      else bits &= ~(1ull << depth);
    } else if (recorded) {
      zone_end();
    }
    ++depth;
  }
  // Whether the innermost entry was recorded (false with nothing open).
  bool pop() {
    if (depth == 0) return false;
    --depth;
    return depth < 64 && (bits >> depth & 1);
  }
};

}  // namespace ringprof::python

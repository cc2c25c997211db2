// ringprof/detail_zone.h — zones recorded only at the Detailed level.
//
//   RINGPROF_ZONE_DETAIL("attention.softmax");   // only inside detailed windows
//
// Outside a detailed window it costs one relaxed load and a predictable
// branch; inside one it is an ordinary zone. Included by ringprof.h.
#pragma once

#include "ringprof/level.h"
#include "ringprof/recording.h"

namespace ringprof {

class DetailZone {
 public:
  RINGPROF_HOT explicit DetailZone(const SourceLocation* loc) noexcept
      : active_(detailed() && zone_begin(loc)) {}
  RINGPROF_HOT ~DetailZone() {
    if (active_) zone_end();
  }
  DetailZone(const DetailZone&) = delete;
  DetailZone& operator=(const DetailZone&) = delete;

 private:
  bool active_;
};

}  // namespace ringprof

// A zone from here to the end of the scope, recorded only while the effective
// level is Detailed (checked when the scope opens). `name` must be a literal.
#define RINGPROF_ZONE_DETAIL(name)                                                              \
  static constexpr ::ringprof::SourceLocation RINGPROF_CONCAT(ringprof_dloc_, __LINE__){        \
      name, __func__, __FILE__, static_cast<uint32_t>(__LINE__)};                               \
  ::ringprof::DetailZone RINGPROF_CONCAT(ringprof_dzone_, __LINE__)(&RINGPROF_CONCAT(ringprof_dloc_, __LINE__))

// gpu_hand_over / gpu_take_back (ringprof/recording.h): CUPTI lent to another
// client and taken back, with the gap marked in the files.
#include "ringprof/ops.h"
#include "ringprof/recording.h"

#if RINGPROF_HAVE_CUPTI
#include "gpu/cupti/cupti_source.h"
#endif

namespace ringprof {

bool gpu_hand_over(const char* client) noexcept {
#if RINGPROF_HAVE_CUPTI
  try {
    if (!cupti::hand_over(client ? client : "another CUPTI client")) return false;
  } catch (...) {  // a failed allocation in the warning: the application goes on
    return false;
  }
  mark("ringprof.gpu.handed_over", 1);
  return true;
#else
  (void)client;
  return false;
#endif
}

bool gpu_take_back(const char* client) noexcept {
#if RINGPROF_HAVE_CUPTI
  try {
    if (!cupti::take_back(client ? client : "another CUPTI client")) return false;
  } catch (...) {
    return false;
  }
  mark("ringprof.gpu.taken_back", 1);
  return true;
#else
  (void)client;
  return false;
#endif
}

}  // namespace ringprof

// gpu_hand_over / gpu_take_back (ringprof/recording.h): CUPTI lent to another
// client and taken back, with the gap marked in the files.
#include "ringprof/ops.h"
#include "ringprof/recording.h"

#if RINGPROF_HAVE_CUPTI
#include "gpu/cupti/cupti_source.h"
#endif

namespace ringprof {

#if RINGPROF_HAVE_CUPTI
namespace {

// Runs one step of the CUPTI source and, when it did something, marks it.
bool lend_step(bool (*step)(const char*), const char* client, const char* mark_name) noexcept {
  try {
    if (!step(client ? client : "another CUPTI client")) return false;
  } catch (...) {  // a failed allocation in the warning: the application goes on
    return false;
  }
  mark(mark_name, 1);
  return true;
}

}  // namespace

bool gpu_hand_over(const char* client) noexcept {
  return lend_step(cupti::hand_over, client, "ringprof.gpu.handed_over");
}
bool gpu_take_back(const char* client) noexcept {
  return lend_step(cupti::take_back, client, "ringprof.gpu.taken_back");
}
#else
bool gpu_hand_over(const char*) noexcept { return false; }  // a build without CUPTI traces no GPU
bool gpu_take_back(const char*) noexcept { return false; }
#endif

}  // namespace ringprof

// The registered interpreter frame hooks (ringprof/internal/interpreter_frames.h):
// one pointer, read by sample handlers on any thread.
#include <atomic>

#include "ringprof/internal/interpreter_frames.h"

namespace ringprof::internal {

namespace {
std::atomic<const InterpreterFrameHooks*> g_hooks{nullptr};
}

void set_interpreter_frame_hooks(const InterpreterFrameHooks* hooks) noexcept {
  g_hooks.store(hooks, std::memory_order_release);
}

const InterpreterFrameHooks* interpreter_frame_hooks() noexcept { return g_hooks.load(std::memory_order_acquire); }

}  // namespace ringprof::internal

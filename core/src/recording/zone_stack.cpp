// record_zone_stack() (ringprof/internal/interpreter_frames.h): the calling
// thread's interpreter frames as a ZoneStack ring record, in the words a
// sample uses for them (stack_unwinder.h), so the drainer names and interns
// them the same way.
#include <cstring>
#include <memory>
#include <new>

#include "ringprof/internal/emit.h"
#include "ringprof/internal/interpreter_frames.h"

namespace ringprof::internal {

namespace {

// At most kMaxSampleFrames words: two per frame.
constexpr size_t kMaxFrames = kMaxSampleFrames / 2;

struct ZoneStackScratch {
  CapturedFrame frames[kMaxFrames];
  uint64_t words[kMaxSampleFrames];
  // The hooks' working memory, as the sampler gives each thread.
  alignas(16) unsigned char capture[kMaxFrames * 320];
};
thread_local std::unique_ptr<ZoneStackScratch> t_scratch;

// The thread's own frames, read where they lie (see the header).
bool read_direct(void*, uint64_t addr, void* out, size_t n) noexcept {
  if (addr == 0) return false;
  std::memcpy(out, reinterpret_cast<const void*>(static_cast<uintptr_t>(addr)), n);
  return true;
}

}  // namespace

bool record_zone_stack() noexcept {
  const InterpreterFrameHooks* h = interpreter_frame_hooks();
  if (!h || !h->capture) return false;
  const uint32_t session = g_session.load(std::memory_order_relaxed);
  Ring* r = ring_for(session);
  if (!r) return false;
  if (!t_scratch) {
    t_scratch.reset(new (std::nothrow) ZoneStackScratch);
    if (!t_scratch) return false;
  }
  ZoneStackScratch& x = *t_scratch;
  size_t frames;
  if (h->capture_self) {
    frames = h->capture_self(x.frames, kMaxFrames);
  } else {
    const MemoryReader mem{read_direct, nullptr, nullptr, x.capture, sizeof x.capture};
    frames = h->capture(mem, x.frames, kMaxFrames);
  }
  if (frames == 0) return false;
  for (size_t i = 0; i < frames; ++i) interpreter_frame_words(x.frames[i], x.words + 2 * i);
  return write_words_record(r, EventKind::ZoneStack, now_ticks(session), x.words, 2 * frames);
}

}  // namespace ringprof::internal

// The sample handler's stack walk: native frames through call-frame
// information (.eh_frame, see cfi_rules.h), frame pointers where a frame has
// none, and interpreter frames merged in where the interpreter's evaluation
// loop runs (see ringprof/internal/interpreter_frames.h).
//
// Output, leaf first, one word per native frame (the interrupted pc, then
// return addresses) and two per interpreter frame: kInterpreterFrameTag |
// code, then check << 32 | instr; the drainer turns the pair into one
// location frame. Every read of the stack goes through the StackReader, so
// a corrupt stack ends the walk instead of faulting. Async-signal-safe.
#pragma once

#include <cstddef>
#include <cstdint>

#include "ringprof/internal/interpreter_frames.h"
#include "sampler/cfi_rules.h"
#include "sampler/frame_walker.h"

namespace ringprof::sampler {

// Recently used rules, per thread (the handler's slot): a steady workload
// unwinds each frame with one lookup here instead of a table search.
struct RuleCache {
  static constexpr size_t kEntries = 256;
  struct Entry {
    uint64_t pc = 0;  // 0: empty
    FrameRule rule;
    bool known = false;  // false: no rule (frame pointers for this pc)
  };
  uint64_t generation = 0;
  Entry entries[kEntries];
};

struct UnwindInput {
  uint64_t pc = 0, sp = 0, fp = 0;
  const internal::CapturedFrame* interp = nullptr;  // innermost first
  size_t interp_count = 0;
  uint64_t eval_begin = 0, eval_end = 0;
};

struct UnwindResult {
  size_t words = 0;
  bool reached_root = false;  // the outermost frame's return address is undefined
};

UnwindResult unwind_stack(const UnwindInput& in, StackReader& stack, RuleCache* cache, uint64_t* out,
                          size_t max_words) noexcept;

}  // namespace ringprof::sampler
